"""Where the service's checks run: worker processes that can be stopped.

A check is CPU work in pure Python (JSON-LD expansion, rdflib, pySHACL, Python's ``re``), and
a thread doing it holds the GIL: one pathological check on a thread (a catastrophic
``sh:pattern`` in a profile's shapes, say) would starve the event loop, so that ``/healthz``
goes silent and SIGTERM is not handled, and it cannot be stopped at its time bound, so that
``--threads`` of them would leave no thread for any later check. So each check runs in a
worker process of its own, which keeps a Checker warm (built once, when the worker starts,
from the same options as the server's): the event loop only hands the worker the body and
waits on a pipe, and a check past its time bound is *stopped*: its worker is killed (SIGKILL)
and a fresh one takes its place, while the request is answered 503 at once.

:class:`CheckWorkers` is that pool; :class:`CheckThreads` keeps the former way (a thread
pool in this process) for an application built without a way to build a Checker in a worker
(:func:`~ioa_semantic.service.app.create_app` called with no ``build``), where a check past
its bound is abandoned, not stopped. Both answer :meth:`run` with the check's verdict and
the bytes of its JSON answer, rendered off the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from multiprocessing.connection import Connection
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol

from .._exceptions import IoaSemanticError
from .._runtime import die_with

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from .._checker import Checker
    from .._findings import Decision

# How a worker builds its Checker, and how a decision is written: both picklable (functions
# at a module's top level, or partials of them), since a worker is a spawned process.
Build = Callable[[], "Checker"]
Render = Callable[[Iterable["Decision"], IO[str]], None]


class Job(NamedTuple):
    """One check, as sent to a worker."""

    body: bytes
    params: dict[str, str]
    at: datetime | None


class Answered(NamedTuple):
    """A check's verdict and its answer, the JSON the command line would print."""

    verdict: str
    body: bytes


class WorkerBug(IoaSemanticError):
    """A check raised in its worker (a bug): the worker's traceback, for stderr."""


class WorkerLost(IoaSemanticError):
    """A worker ended while it held a check (killed from outside, out of memory)."""


class Checks(Protocol):
    """Where checks run."""

    async def start(self) -> None: ...

    async def run(self, job: Job, deadline: float) -> Answered:
        """The check's answer; TimeoutError when it is not done by ``deadline`` (the
        loop's clock), waiting for a worker included."""
        ...

    def close(self) -> None: ...


def _judge(checker: Checker, render: Render, job: Job) -> Answered:
    decision = checker.check(job.body, params=job.params, at=job.at, source="-")
    out = io.StringIO()
    render([decision], out)
    return Answered(str(decision.verdict), out.getvalue().encode("utf-8"))


def _serve(conn: Connection, build: Build, render: Render, server: int) -> None:
    """A worker process's life: build the Checker, then judge what the pipe brings."""
    die_with(server)
    # Ctrl-C reaches the whole process group; the server decides when its workers end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        checker = build()
    except BaseException:
        conn.send(("bug", traceback.format_exc()))
        return
    try:
        conn.send(("ready", None))
        while True:
            job = conn.recv()
            try:
                answer: tuple[str, Any] = ("ok", _judge(checker, render, job))
            except Exception:
                answer = ("bug", traceback.format_exc())
            conn.send(answer)
    except (EOFError, OSError):
        return  # the server closed its end of the pipe: it is stopping


class _Worker:
    """One worker process and the server's end of its pipe."""

    def __init__(self, context: Any, build: Build, render: Render) -> None:
        self.conn, theirs = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=_serve, args=(theirs, build, render, os.getpid()), name="ioa-check-worker",
            daemon=True)
        self.process.start()
        theirs.close()

    def ready(self) -> None:
        """Blocks until the worker's Checker is built (on a thread of the pool below)."""
        kind, value = self._receive()
        if kind != "ready":
            raise WorkerBug(value)

    def call(self, job: Job) -> Answered:
        """Blocks for the job's answer (on a thread: the loop only awaits it)."""
        try:
            self.conn.send(job)
        except OSError:  # the worker ended since it was last seen alive (killed from outside)
            raise self._lost() from None
        kind, value = self._receive()
        if kind == "bug":
            raise WorkerBug(value)
        answered: Answered = value
        return answered

    def _receive(self) -> tuple[str, Any]:
        try:
            message: tuple[str, Any] = self.conn.recv()
        except (EOFError, OSError):
            raise self._lost() from None
        return message

    def _lost(self) -> WorkerLost:
        self.process.join(1)  # its exit status, which a kill has just set
        return WorkerLost(f"the worker process ended (exit status {self.process.exitcode})")

    def reap(self) -> None:
        """Killed (SIGKILL: a check in C code does not see SIGTERM) and waited for; on a
        thread, once no thread is receiving on its pipe."""
        with contextlib.suppress(Exception):
            self.process.kill()
        self.process.join()
        self.conn.close()


class CheckWorkers:
    """``size`` worker processes, each judging one check at a time."""

    def __init__(self, build: Build, render: Render, size: int) -> None:
        # Spawned, not forked: the server's process has threads (a fork would copy their
        # locks in whatever state they are in) and an event loop.
        self._context = multiprocessing.get_context("spawn")
        self._build = build
        self._render = render
        self._size = size
        # The blocking ends of the pipes (start, send, receive) wait here, never on the loop;
        # a thread is freed when its worker answers or is killed.
        self._threads = ThreadPoolExecutor(max_workers=2 * size, thread_name_prefix="worker")
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: set[_Worker] = set()
        self._replacing: set[asyncio.Task[None]] = set()
        self._closed = False

    async def start(self) -> None:
        self._idle = asyncio.Queue()
        await asyncio.gather(*(self._add() for _ in range(self._size)))

    async def _add(self) -> None:
        loop = asyncio.get_running_loop()
        worker = await loop.run_in_executor(self._threads, _Worker, self._context, self._build,
                                            self._render)
        self._all.add(worker)
        try:
            await loop.run_in_executor(self._threads, worker.ready)
        except BaseException:
            self._all.discard(worker)
            await loop.run_in_executor(self._threads, worker.reap)
            raise
        assert self._idle is not None
        self._idle.put_nowait(worker)

    async def run(self, job: Job, deadline: float) -> Answered:
        assert self._idle is not None, "start() first"
        async with asyncio.timeout_at(deadline):
            worker = await self._idle.get()
            while not worker.process.is_alive():
                # Ended while idle (killed from outside, the OOM killer): another takes its
                # place, and the check waits for the next worker.
                self._start_replacing(worker, None, again=True)
                worker = await self._idle.get()
        call = asyncio.wrap_future(self._threads.submit(worker.call, job))
        try:
            async with asyncio.timeout_at(deadline):
                answered = await asyncio.shield(call)
        except BaseException as exc:
            # Past its bound, a bug, a lost worker or a cancelled request: the worker may
            # still be at the check, so it is stopped and another takes its place (unless
            # the request was cancelled: only a server that is stopping does that).
            self._start_replacing(worker, call, again=not isinstance(exc, asyncio.CancelledError))
            raise
        self._idle.put_nowait(worker)
        return answered

    def _start_replacing(self, worker: _Worker, call: asyncio.Future[Answered] | None, *,
                         again: bool) -> None:
        task = asyncio.create_task(self._replace(worker, call, again))
        self._replacing.add(task)
        task.add_done_callback(self._replaced)

    async def _replace(self, worker: _Worker, call: asyncio.Future[Answered] | None,
                       again: bool) -> None:
        with contextlib.suppress(Exception):
            worker.process.kill()
        if call is not None:
            with contextlib.suppress(BaseException):
                await call  # its thread sees the pipe close, and is free
        self._all.discard(worker)
        await asyncio.get_running_loop().run_in_executor(self._threads, worker.reap)
        if again and not self._closed:
            await self._add()

    def _replaced(self, task: asyncio.Task[None]) -> None:
        self._replacing.discard(task)
        if not task.cancelled() and task.exception() is not None and not self._closed:
            # The server goes on with one worker fewer; the others still answer.
            print(f"ioa-check serve: a check worker could not be started again: "
                  f"{task.exception()}", file=sys.stderr)

    def close(self) -> None:
        """Every worker killed, whatever it runs (the server is stopping; on a thread)."""
        self._closed = True
        for worker in list(self._all):
            with contextlib.suppress(Exception):
                worker.process.kill()
        for worker in list(self._all):
            worker.process.join(5)
        self._threads.shutdown(wait=False, cancel_futures=True)


class CheckThreads:
    """Checks on a thread pool of this process (no worker can be built): a check past its
    bound is abandoned (its thread finishes it and the answer is dropped)."""

    def __init__(self, checker: Checker, render: Render, size: int) -> None:
        self._checker = checker
        self._render = render
        self._threads = ThreadPoolExecutor(max_workers=size, thread_name_prefix="check")

    async def start(self) -> None:
        pass

    async def run(self, job: Job, deadline: float) -> Answered:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(deadline):
            return await loop.run_in_executor(self._threads, _judge, self._checker,
                                              self._render, job)

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
