"""Work under a deadline that really stops it: a call run in a worker process, killed when
its time is up (issue 35).

pySHACL's evaluation of a profile's shapes (SHACL-SPARQL joins, Core constraints over many
values) and of SHACL's own shapes in lint can run for minutes on input the sender or the
profile's author chose, and neither pySHACL nor rdflib's SPARQL engine can be interrupted
from outside: a thread left running would hold its core and its memory. So that work runs
in a worker process, one call at a time; past the deadline the worker is killed (its memory
and its core are free at once) and the next call starts another. Idle workers are kept for
the next call, so an ordinary evaluation costs its pickling and one round trip.

A worker is a fresh interpreter (``python -c``), never a ``fork``: a service calls from
threads, and a forked copy of a threaded process can deadlock; nor a ``multiprocessing``
spawn, which would run the caller's ``__main__`` script again in the worker. A new worker
takes its imports' time to start (outside any deadline). A worker evaluates ``sh:pattern``
with RE2, as the compiled checks do (:func:`prepare_worker`): pySHACL's own ``re`` would
backtrack.
"""

import atexit
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from .._exceptions import IoaSemanticError
from .._runtime import Lock, local

# The bound on one evaluation of a profile's pySHACL shapes, or of lint's SHACL shapes for
# SHACL (seconds), unless the Checker is given another (shape_timeout, --shape-timeout):
# past it the worker is killed and the check is indeterminate (constraint.shape-unevaluable,
# naming the shapes and the bound).
SHAPE_TIMEOUT = 5.0
# A worker that is not ready (its imports done) within this long is a tool failure, not a
# deadline of the check's: a machine under load can take seconds to start a process.
_START_DEADLINE = 120.0
# Idle workers kept for the next calls (a service's concurrent checks each take one).
_KEEP_IDLE = 4


class DeadlineExceeded(IoaSemanticError):
    """The call did not finish within its deadline; its worker was killed."""


class WorkerFailed(IoaSemanticError):
    """The worker stopped without an answer (it crashed, or ran out of memory)."""


class _Worker:
    """A worker process (a fresh interpreter running :func:`_main`) and its two pipes."""

    def __init__(self, module: str) -> None:
        to_worker, from_us = os.pipe()
        from_worker, to_us = os.pipe()
        # The parent's sys.path, so that the worker imports this very package.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        # Imported when a worker starts: subprocess brings locale, signal, selectors into a
        # check's start, and most checks start no worker.
        import subprocess

        self.process = subprocess.Popen(
            [sys.executable, "-c", "from ioa_semantic.pipeline.bounded import _main; "
             f"_main({to_worker}, {to_us}, {module!r})"],
            pass_fds=(to_worker, to_us), env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_worker)
        os.close(to_us)
        self.owner = os.getpid()
        self.prepared: set[str] = set()
        # Imported when a worker starts, not with the package: multiprocessing brings socket,
        # shutil, bz2 and lzma with it, into every check's start, most of which start none.
        from multiprocessing.connection import Connection

        self.send, self.receive = Connection(from_us, readable=False), Connection(from_worker,
                                                                                  writable=False)
        if not self.receive.poll(_START_DEADLINE):
            self.kill()
            raise WorkerFailed(f"the shapes worker did not start within {_START_DEADLINE:g} s")
        try:
            self.receive.recv()
        except (EOFError, OSError) as exc:
            self.kill()
            raise WorkerFailed("the shapes worker could not start") from exc

    def call(self, function: Callable[..., Any], args: tuple[Any, ...],
             deadline: float) -> tuple[bool, Any]:
        """``(True, value)``, or ``(False, the error the function raised)``."""
        try:
            self.send.send((function, args))
            if not self.receive.poll(deadline):
                raise DeadlineExceeded(f"not finished within {deadline:g} s")
            answer: tuple[bool, Any] = self.receive.recv()
        except (EOFError, OSError) as exc:
            raise WorkerFailed(f"the shapes worker stopped ({self.process.poll()})") from exc
        return answer

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.close()

    def close(self) -> None:
        self.send.close()
        self.receive.close()


_IDLE: list[_Worker] = []
_IDLE_LOCK = Lock()
# Counted so that tests can tell a kept worker from a new one (operations, not time).
started = 0


def run(function: Callable[..., Any], args: tuple[Any, ...], deadline: float, *,
        prepare: tuple[Callable[..., Any], tuple[Any, ...], str] | None = None) -> Any:
    """``function(*args)`` in a worker process, its answer back; ``function`` is a module's
    (pickled by name) and ``args`` pickle. ``prepare`` is ``(function, args, key)``: work a
    worker does once for each key before its first such call (reading a profile's shapes),
    under the start's generous bound rather than ``deadline``. Raises
    :class:`DeadlineExceeded` past ``deadline`` seconds (the worker is killed),
    :class:`WorkerFailed`, or the :class:`IoaSemanticError` the function raised."""
    worker = _idle_worker() or _new_worker(function.__module__)
    try:
        if prepare is not None and prepare[2] not in worker.prepared:
            ok, value = worker.call(prepare[0], prepare[1], _START_DEADLINE)
            if ok:
                worker.prepared.add(prepare[2])
        if prepare is None or prepare[2] in worker.prepared:
            ok, value = worker.call(function, args, deadline)
    except BaseException as exc:
        # Past the deadline, the worker stopped, or this thread interrupted with a call in
        # flight (whose answer would be read by the next call): the worker goes.
        worker.kill()
        if isinstance(exc, DeadlineExceeded):
            _STOPS.count = stops() + 1
        raise
    _keep(worker)
    if not ok:
        raise value
    return value


class _Stops(local):
    # A thread that never had a call stopped reads the class's count: no exception raised
    # and caught on every check (getattr with a default on a missing attribute).
    count = 0


_STOPS = _Stops()


def stops() -> int:
    """How many calls of this thread were stopped at their deadline. A result cut short by
    a deadline depends on the machine's load, not only on its input: a caller that caches
    results by input (the Checker's decision cache) compares this before and after."""
    return _STOPS.count


def _idle_worker() -> "_Worker | None":
    with _IDLE_LOCK:
        while _IDLE:
            worker = _IDLE.pop()
            if worker.owner == os.getpid():
                if worker.process.poll() is not None:
                    worker.close()  # ended while idle (killed from outside): not reused
                    continue
                return worker
            # A copy of a worker from before this process forked: its pipes are the
            # parent's, so it is left alone (neither used nor killed).
    return None


def _new_worker(module: str) -> "_Worker":
    global started
    worker = _Worker(module)
    with _IDLE_LOCK:
        started += 1
    return worker


def _keep(worker: _Worker) -> None:
    with _IDLE_LOCK:
        if len(_IDLE) < _KEEP_IDLE:
            _IDLE.append(worker)
            return
    worker.kill()


@atexit.register
def _close_idle() -> None:
    """At exit, the idle workers see their pipe close and end by themselves."""
    with _IDLE_LOCK:
        workers = [w for w in _IDLE if w.owner == os.getpid()]
        _IDLE.clear()
    for worker in workers:
        worker.close()
        import subprocess  # imported already: the worker was started with it

        try:
            worker.process.wait(5)
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()


def _main(receive_fd: int, send_fd: int, module: str) -> None:
    """A worker's loop: one call at a time, its value or its project error sent back (any
    other exception is the tool's, sent as a :class:`WorkerFailed`); it ends when the
    parent closes its pipe (or exits). ``module`` (the first call's function's) is imported
    before the worker says it is ready, so that no call's deadline pays for it."""
    from multiprocessing.connection import Connection

    receive, connection = Connection(receive_fd, writable=False), Connection(
        send_fd, readable=False)
    _end_with_parent(os.getppid())
    importlib.import_module(module)
    prepare_worker()
    connection.send(True)
    while True:
        try:
            function, args = receive.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[bool, Any] = (True, function(*args))
        except IoaSemanticError as exc:
            answer = (False, exc)
        except Exception as exc:
            answer = (False, WorkerFailed(f"{type(exc).__name__}: {exc}"))
        connection.send(answer)


def _end_with_parent(parent: int) -> None:
    """A worker ends as soon as its parent does, even in the middle of a call: a parent
    killed outright (a service's check worker stopped at its --timeout, say) would otherwise
    leave it computing, holding a core, until the call ends by itself, minutes later. The
    watch is a thread reading the parent's id (a kill of the parent makes init or a
    subreaper the parent): Python switches threads even while pySHACL computes."""
    import threading  # only here: a check that starts no thread does not import it (_runtime)
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


# How often a worker looks whether its parent is still there (seconds).
_PARENT_POLL = 0.5


def prepare_worker() -> None:
    """pySHACL, in a worker: ``sh:pattern`` (with ``sh:flags`` as XPath reads them) compiled
    by :func:`~ioa_semantic.pipeline.shapes.xpath_regex`, RE2, never by Python's ``re``.
    pySHACL reads the flags ``i`` and ``m`` only and would backtrack on ``^(a+)+$``."""
    from pyshacl.constraints.core import string_based_constraints as strings

    from .shapes import PatternNotTranslated, xpath_regex

    component = strings.PatternConstraintComponent
    if getattr(component, "_ioa_re2", False):
        return
    original = component.__init__

    class _Deferred:
        """pySHACL's ``re`` while its constructor runs: patterns are compiled below."""

        I, M = 2, 8  # noqa: E741 - re's names, which pySHACL reads

        @staticmethod
        def compile(pattern: str, flags: int = 0) -> None:
            return None

    strings.re = _Deferred  # type: ignore[assignment,attr-defined]

    def init(self: Any, shape: Any) -> None:
        original(self, shape)
        flags = "" if self.flags is None else str(self.flags)
        try:
            self.compiled_cache = {p: xpath_regex(str(p), flags) for p in self.string_rules}
        except PatternNotTranslated as exc:
            from pyshacl.errors import ConstraintLoadError

            raise ConstraintLoadError(  # type: ignore[no-untyped-call]
                str(exc), "https://www.w3.org/TR/shacl/#PatternConstraintComponent") from exc

    component.__init__ = init  # type: ignore[method-assign]
    component._ioa_re2 = True  # type: ignore[attr-defined]
