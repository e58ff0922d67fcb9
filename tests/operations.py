"""Work counted, not timed: the measure the cost tests hold to a growth bound.

A wall clock says how busy the machine is as much as how much work the code did, so a bound
on elapsed time fails on a loaded machine (issue 35: 5.58 s against 5.43 s). What the code
does is counted instead, and the count is the same on an idle machine and a busy one:

* every line of Python executed (``sys.settrace``'s ``line`` events): a Python loop over the
  input, however it is written;
* every call, of a Python function or of a builtin or C function (``sys.setprofile``'s
  ``call`` and ``c_call`` events): the calls into the parser, the regex engine, the store.

What this cannot see is work done *inside* one C call: a backtracking regex or a list
membership test (``x in items``) costs one event however long it runs. Such bounds are held
by other means (a hang guard far above any honest figure, bench/ for the figures); the
tests that use this module say which.

``operations`` traces the calling thread only; the checks it measures run in it.

Nor can it see the work of a module compiled to native code (the compiled build, issue 39):
a compiled function's lines and calls raise no events. A bound on growth is held where the
work is Python's, in the pure build (:data:`counted`; CI runs these tests on its pure install
too), and the compiled build answers as the pure one does (the equivalence tests).
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Collection, Iterator
from types import FrameType
from typing import Any

import pytest


def operations(action: Callable[[], object], skip: Collection[str] = ()) -> int:
    """The lines executed and the functions called while ``action()`` runs; the lines of
    the source files ``skip`` names are not counted (work that is not the project's)."""
    count = 0

    def line(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1  # 'line', 'return', 'exception' of a traced frame: each is a step
        return line

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1  # a Python frame starts; its lines are traced by ``line``
        return None if frame.f_code.co_filename in skip else line

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "c_call":  # Python calls are counted by ``call``
            count += 1

    if sys.gettrace() is not None or sys.getprofile() is not None:
        raise RuntimeError("operations() needs the tracer to itself (a debugger or coverage "
                           "is running)")
    sys.settrace(call)
    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


def _pure() -> bool:
    from ioa_semantic import build_kind

    return build_kind() == "pure"


# A growth test whose work is in modules the compiled build compiles: run where they are
# Python, whose work the tracer sees.
counted = pytest.mark.skipif(not _pure(), reason="the work is in compiled modules, which the "
                             "tracer does not see; the pure build's run holds this bound")


# A test that patches a function or method of a module the compiled build compiles, to see it
# called: compiled, its callers call it directly (and its classes take no patch), so it holds
# where those modules are Python; the compiled build answers as the pure one does.
patched = pytest.mark.skipif(not _pure(), reason="it patches what the compiled build "
                             "compiles, whose callers there do not see the patch; the pure "
                             "build's run holds it")


def n_log_n_ratio(small: int, large: int) -> float:
    """How much n log n grows from ``small`` to ``large``."""
    return large * math.log2(max(large, 2)) / (small * math.log2(max(small, 2)))


def growth(measure: Callable[[int], int], small: int, large: int, base: int = 1) -> float:
    """``measure(large)`` against ``measure(small)``, each less ``measure(base)``: the work
    that grows with n, without what every run does whatever its size (which would hide a
    superlinear stage at small sizes)."""
    fixed = measure(base)
    return (measure(large) - fixed) / max(1, measure(small) - fixed)


@contextlib.contextmanager
def caches_off() -> Iterator[None]:
    """The process-wide context caches held empty: a context the last test (or the last size)
    left cached would make a size cheap for what came before it, and the count would depend
    on the order of the tests rather than on the input."""
    from ioa_semantic.compiled.engine import cache_bytes

    before = cache_bytes()
    cache_bytes(0, 0, 0)
    try:
        yield
    finally:
        cache_bytes(**before)
