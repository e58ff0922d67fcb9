"""Every trick the package plays on the interpreter for speed, in one place.

Each is here because it was measured to matter (``bench/bench_startup.py`` measures each
again; the figures and their date are in ``docs/performance.md``), and each leaves the
process as it found it, except :func:`quick_exit` and :func:`own_process`, which only the
command line calls:

* :class:`paused`: the cyclic collector off while the package is imported and a Checker is
  built (both only allocate what lives as long as the process; the collector's passes over
  it find nothing), and, in a process the command line owns (:func:`own_process`), what
  they allocated then left out of the collector's passes for good;
* :func:`frozen`: what an audit's Checker holds, or a trace's calls read so far, moved out
  of the collector's reach for the run (``gc.freeze``), and the collector run less often,
  both undone when the run ends;
* :func:`quick_exit`: the ``ioa-check`` process ends once its output is flushed, without
  tearing down every module;
* :func:`terminal_columns`: the terminal's width without importing ``shutil`` (argparse
  asks for it on every parse);
* :func:`orjson_module`: orjson imported on first use, not with the package;
* :func:`sha256`: a process's first few small digests made without importing hashlib;
* :data:`Lock` and :data:`local`: threading's lock and thread-local data without importing
  threading;
* :func:`untranslated_argparse`: argparse's messages taken as written, without asking
  gettext for a translation of each (which imports locale).

This module imports nothing of the package, so that the package's own imports can run
inside :class:`paused`.
"""

import _thread
import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from hashlib import _Hash


# threading's Lock and local are these (threading.local is _thread._local, threading.Lock
# is _thread.allocate_lock). Taken from _thread, a check does not import threading, whose
# import (the main thread's object, its shutdown hooks, weak sets) is about a millisecond
# of a cold check; what starts a thread imports threading then.
Lock = _thread.allocate_lock
local = _thread._local


# Whether the process is the command line's (see own_process).
_OWNED = False


def own_process() -> None:
    """Say that the process is the ``ioa-check`` command's, which ends it once its output is
    flushed (:func:`quick_exit`): what a ``paused(settle=True)`` block allocated then lives
    until the process ends. Only ``cli.main.entry`` says it; a library's caller keeps the
    collector as it was."""
    global _OWNED
    _OWNED = True


class paused:
    """Disable the collector for a ``with`` block, then restore whatever state it was in.

    With ``settle``, in a process the command line owns (:func:`own_process`), everything
    alive at the block's end (the modules it imported, the Checker it built) is moved out of
    the collector's reach first (``gc.freeze``): the collector's first pass after the block
    would otherwise walk all of it, finding nothing (a millisecond and a half of a cold
    check, for the modules). Elsewhere ``settle`` changes nothing."""

    __slots__ = ("_settle", "_was_enabled")

    def __init__(self, *, settle: bool = False) -> None:
        self._settle = settle

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._settle and _OWNED:
            gc.freeze()
        if self._was_enabled:
            gc.enable()


# The collector's thresholds in a long run (see frozen): its youngest generation collected
# after 100,000 allocations rather than 700, the older ones seldom.
LONG_RUN_THRESHOLDS = (100_000, 50, 100)


# The long runs under way in this process (see frozen), and what the first of them found.
_LONG_RUNS_LOCK = _thread.allocate_lock()
_long_runs = 0
_found: tuple[tuple[int, ...], bool] = ((), False)  # the thresholds; whether frozen before


@contextmanager
def frozen() -> Iterator[Callable[[], None]]:
    """Everything alive now is left out of the collector's passes until the block ends
    (unless something froze it before, which is then left as it was). The block is given
    ``gc.freeze``: what it made since that will live as long as the block (a trace's fold,
    batch after batch) is left out too.

    The collector also runs less often in the block (:data:`LONG_RUN_THRESHOLDS`, never
    lowering a threshold the process set). An audit or a trace allocates containers by the
    million, nearly all freed by their counts, not by the collector: at the default
    thresholds its passes were a twelfth of an audit's time (a sampling profile of 100,000
    registrations from 5,000 senders), and at these 5 to 9% less CPU is spent
    (docs/performance.md). What a reference cycle holds waits at most that many allocations
    longer.

    Blocks may overlap (a service runs two audits at once, on threads or interleaved): the
    first to begin saves what it found, the last to end restores it, so none ends another's
    raised thresholds or unfreezes what it still holds."""
    global _long_runs, _found
    with _LONG_RUNS_LOCK:
        if not _long_runs:
            thresholds = gc.get_threshold()
            _found = (thresholds, gc.get_freeze_count() > 0)
            gc.set_threshold(*(max(now, long) for now, long in zip(
                thresholds, LONG_RUN_THRESHOLDS, strict=True)))
        _long_runs += 1
        gc.freeze()
    try:
        yield gc.freeze
    finally:
        with _LONG_RUNS_LOCK:
            _long_runs -= 1
            if not _long_runs:
                gc.set_threshold(*_found[0])
                if not _found[1]:
                    gc.unfreeze()


def die_with(parent: int) -> None:
    """On Linux, this process (a worker) is killed when its parent ends, however it ends
    (SIGKILL, the system out of memory, included): a worker would otherwise outlive it, asleep
    on a pipe it holds both ends of. (The kernel watches the parent's thread that started the
    worker.) ``parent`` is the process id the worker was started by: one that ended before
    this took effect ends the worker at once."""
    if not sys.platform.startswith("linux"):
        return  # elsewhere, a worker waiting on its pipe still ends with its parent
    import ctypes

    pr_set_pdeathsig, sigkill = 1, 9
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, sigkill)
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(0)


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


def untranslated_argparse() -> None:
    """argparse's messages as written. argparse asks gettext for each message it builds a
    parser with, and each ask looks for a catalogue in the environment's languages, the
    first importing locale: about a millisecond of a cold check, for nothing, since
    CPython ships no catalogue of argparse's messages (their domain is gettext's default,
    "messages"). Only the command line calls it, for a process it owns."""
    import argparse

    argparse._ = lambda message: message  # type: ignore[attr-defined]
    argparse.ngettext = (  # type: ignore[attr-defined]
        lambda singular, plural, count: singular if count == 1 else plural)


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
_ORJSON_LOCK = Lock()


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


# The interpreter's own SHA-256, which random.py reaches the same way for the same reason:
# hashlib's import loads and initializes OpenSSL, about 2.5 ms, a twentieth of a cold check.
def _interpreters_sha256() -> Callable[[bytes], Any] | None:
    found: Callable[[bytes], Any]
    try:
        if sys.version_info >= (3, 12):
            import _sha2

            found = _sha2.sha256
        else:
            import _sha256

            found = _sha256.sha256
    except ImportError:  # an interpreter built without it: hashlib's is then the only one
        return None
    return found


_BUILTIN_SHA256 = _interpreters_sha256()
# How many digests a process makes with it, and of how many bytes at most: OpenSSL's is the
# faster past a few hundred bytes (5 times at 2 kB), so a process that goes on digesting
# (checks after the first, an audit) imports hashlib once, and a large input goes to it at
# once. A cold check makes a handful, all small (its profile, its envelope).
BUILTIN_DIGESTS = 32
BUILTIN_BYTES = 16 << 10
_builtin_left = BUILTIN_DIGESTS
_HASHLIB_SHA256: "Callable[[bytes], _Hash] | None" = None


def sha256(data: bytes) -> "_Hash":
    """``hashlib.sha256(data)``: the same digest, from the interpreter's own SHA-256 for the
    process's first :data:`BUILTIN_DIGESTS` inputs of at most :data:`BUILTIN_BYTES` bytes,
    from hashlib's (OpenSSL's) for every other."""
    global _builtin_left, _HASHLIB_SHA256
    if _BUILTIN_SHA256 is not None and _builtin_left > 0 and len(data) <= BUILTIN_BYTES:
        # Threads may race on the count: at worst a few more digests are the builtin's, the
        # same digests.
        _builtin_left -= 1
        digest: _Hash = _BUILTIN_SHA256(data)
        return digest
    if _HASHLIB_SHA256 is None:
        import hashlib

        _HASHLIB_SHA256 = hashlib.sha256
    return _HASHLIB_SHA256(data)
