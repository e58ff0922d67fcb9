"""Every trick the package plays on the interpreter for speed, in one place.

Each is here because it was measured to matter (``bench/bench_startup.py`` measures each
again; the figures and their date are in ``docs/performance.md``), and each leaves the
process as it found it, except :func:`quick_exit`, which only the command line calls:

* :class:`paused`: the cyclic collector off while the package is imported and a Checker is
  built (both only allocate what lives as long as the process; the collector's passes over
  it find nothing);
* :func:`frozen`: what an audit's Checker holds, or a trace's calls read so far, moved out
  of the collector's reach for the run (``gc.freeze``), and back when the run ends;
* :func:`quick_exit`: the ``ioa-check`` process ends once its output is flushed, without
  tearing down every module;
* :func:`terminal_columns`: the terminal's width without importing ``shutil`` (argparse
  asks for it on every parse);
* :func:`orjson_module`: orjson imported on first use, not with the package.

This module imports nothing of the package, so that the package's own imports can run
inside :class:`paused`.
"""

import gc
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType, TracebackType
from typing import NoReturn


class paused:
    """Disable the collector for a ``with`` block, then restore whatever state it was in."""

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._was_enabled:
            gc.enable()


@contextmanager
def frozen() -> Iterator[Callable[[], None]]:
    """Everything alive now is left out of the collector's passes until the block ends
    (unless something froze it before, which is then left as it was). The block is given
    ``gc.freeze``: what it made since that will live as long as the block (a trace's fold,
    batch after batch) is left out too."""
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        yield gc.freeze
    finally:
        if not frozen_before:
            gc.unfreeze()


def quick_exit(status: int, unwritable: Callable[[OSError], int]) -> NoReturn:
    """End the process with ``status`` once stdout and stderr are flushed, without the
    interpreter's teardown. A reader gone away is status 141, as a shell reports SIGPIPE;
    another failed flush is what ``unwritable`` makes of it."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        status = 141
    except OSError as exc:
        status = unwritable(exc)
    os._exit(status)


def terminal_columns() -> int:
    """What ``shutil.get_terminal_size().columns`` says, without importing shutil (whose
    imports, zlib, bz2 and lzma, cost a cold check more than parsing its envelope)."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


_ORJSON: ModuleType | None = None
_ORJSON_LOCK = threading.Lock()


def orjson_module() -> ModuleType:
    """orjson, imported on first use: its import (mostly the dataclasses and inspect modules
    it loads) is a sixth of a one-envelope command's whole run, which reads its one document
    with the stdlib instead."""
    global _ORJSON
    if _ORJSON is None:
        with _ORJSON_LOCK:
            import orjson

            _ORJSON = orjson
    return _ORJSON


def orjson_if_loaded() -> ModuleType | None:
    """orjson if some document already needed it, else None. A look into ``sys.modules``
    could find it half initialized by another thread's import; this hands it out only once
    :func:`orjson_module` returned it."""
    return _ORJSON
