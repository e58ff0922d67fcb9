"""``ioa-check trace serve``: OTLP/HTTP trace ingestion, judged into a store as runs complete.

``POST /v1/traces`` takes an ``ExportTraceServiceRequest`` as the OTLP/HTTP specification
says: binary protobuf (``application/x-protobuf``) or JSON (``application/json``, ids in
hexadecimal), optionally gzip-compressed (``Content-Encoding: gzip``). A request is
acknowledged (``200``, an empty ``ExportTraceServiceResponse`` in the request's encoding)
only once it is in the spool on disk (:mod:`..trace.spool`); spans whose trace or span id is
not one (a trace id of 16 bytes, a span id of 8, not all zero) are rejected and the rest kept,
answered ``200`` with ``partial_success`` (``rejected_spans`` and why), as the specification
has it; a request that cannot be parsed
(JSON read strictly: a member named twice is refused, never one of its values kept) is
``400`` with a ``google.rpc.Status`` (nothing is kept: the specification's "bad data, do
not retry"); a full spool is ``503`` with ``Retry-After`` (the exporters retry then); a body
past the bound, or a request larger than the whole spool, is ``413``; another media type or coding ``415``.

What a request holds is bounded, whatever is sent: its body's bytes, and what decompressing
and parsing it may hold (estimated before either runs: protobuf's messages counted in its
wire format, making none; JSON's from its bytes), are held against ``max_buffered`` until it
is answered. One that would pass what the others leave is ``503`` with ``Retry-After``, one
that would pass the whole bound, or holds more than ``max_spans`` spans, ``413``; memory
refused to the process anyway is ``503``, never a ``500``.

A judge thread runs ``ioa-check trace SPOOL --store STORE --complete-only`` as a process of
its own, at start (what was acknowledged before a crash is judged first) and then every
``judge_every`` seconds while the spool grows or runs wait to complete: each run is judged
once complete (its root span ended, or quiet for ``quiet_period``), with the store's
checkpoints, so a judge killed half way judges again from the last one. A process is what
stops: at shutdown the judge in flight is given ``shutdown_timeout`` seconds, then killed.

``GET /runs`` and ``GET /runs/{run}`` are the store's pages for people (:mod:`.runs`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from typing import IO, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..trace.browse import Quiet
from ..trace.otlp import scopes_of
from ..trace.spool import Segment, Spool, SpoolFull
from .limits import HeldBytes
from .runs import RunPages, error

PROTOBUF, JSON = "application/x-protobuf", "application/json"
DEFAULT_MAX_BODY = 16 << 20
DEFAULT_BODY_TIMEOUT = 30.0
# Body bytes all requests being read may hold at once: a flood of slow bodies is refused
# (503) before it holds the memory.
DEFAULT_MAX_BUFFERED = 256 << 20
# Spans one request may hold (413 past it; counted in the wire format before any is made): a
# bound on what a request of empty spans makes (16 MiB held 8 million), far past a batch (an
# SDK's holds 512 spans, the Collector's batch processor 8,192 by default).
DEFAULT_MAX_SPANS = 100_000
# How long a judged segment of the spool is kept after its last span came, for late spans of
# its runs (each joins its run, judged again whole); a span later still is told as late.
DEFAULT_RETAIN = 300.0
# Where each judging round writes the runs it left to complete (ioa-check trace --waiting-list).
WAITING_LIST = "waiting.json"
# google.rpc.Code INVALID_ARGUMENT, the code of a request that cannot be parsed.
_INVALID_ARGUMENT = 3


class Judge:
    """The judge thread: ``command`` (``ioa-check trace`` but its inputs) run as a process on
    the spool's segments whenever there may be runs to judge.

    A round reads the segments not yet settled (appended to since a round read them, or
    holding spans of a run that waits to complete) and the settled ones that hold spans of
    the same traces (a late span joins its run, which is judged again whole). After a round
    that judged everything it read (a verdict status, nothing refused), those segments
    settle, the active one is closed (new spans go to the next), and a settled segment
    nothing was appended to for ``retain`` seconds leaves the spool: its runs are in the
    store, and a span of them later still is told in the log as late. So a round reads what
    came since the last, not the feed's history, and the spool drains. A round refused by
    ``--max-memory`` has the segment it names judged on its own, then set aside (kept,
    listed, never read again) if that is refused too: the rounds after judge the rest."""

    def __init__(self, command: Sequence[str], spool: Spool, every: float, log: IO[str],
                 shutdown_timeout: float = 10.0, retain: float = DEFAULT_RETAIN,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.command = list(command)
        self.spool = spool
        self.every = every
        self.log = log
        self.shutdown_timeout = shutdown_timeout
        self.retain = retain
        self.clock = clock
        self.rounds = 0  # judging processes run, for /healthz
        self.last_status: int | None = None
        self.round_started: float | None = None  # the round in flight's start, for /healthz
        # What the last round could not judge within --max-memory, for /healthz.
        self.refused: str | None = None
        # Segments a round could not judge within --max-memory: one named by a refusal is
        # judged on its own next (_alone), and set aside if it cannot be judged so either
        # (_aside, with the reason): kept in the spool, never read again by this service,
        # listed in /healthz, so that the rounds after judge the rest.
        self._refusing: list[Segment] = []  # the segments the last round's refusal named
        self._alone: list[Segment] = []
        self._tried_alone: set[Segment] = set()
        self._aside: dict[Segment, str] = {}
        self._reasons: dict[Segment, str] = {}  # why a refusal named each
        self.late = 0  # runs whose spans came after they were judged and left the spool
        self.retired = 0  # segments that left the spool
        self.waiting_list = os.path.join(spool.folder, WAITING_LIST)
        # What the service knows of each segment: its spans' trace ids, when it was last
        # appended to (this clock), and its size when a round settled it.
        self._traces: dict[Segment, set[str]] = {}
        self._appended: dict[Segment, float] = {}
        self._settled: dict[Segment, int] = {}
        self._waiting: set[str] = set()  # trace ids of runs the last round left to complete
        # Trace ids the last round read part of (spans appended after it chose its segments,
        # without the retained segments of their traces): judged again whole by the next.
        self._rejudge: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        # The store's pages read it between rounds only (trace.browse.Quiet: a snapshot read
        # while the judging process writes the store is not safe).
        self.quiet = Quiet()
        self._thread = threading.Thread(target=self._loop, name="trace-judge", daemon=True)

    @property
    def judged_size(self) -> int:
        """The bytes of the spool's segments that are settled."""
        with self._lock:
            settled = dict(self._settled)
        return sum(size for segment, size in settled.items()
                   if self.spool.segment_size(segment) == size)

    def start(self) -> None:
        self._thread.start()

    def set_aside_list(self) -> list[dict[str, Any]]:
        """The segments set aside, for /healthz: each one's name, size and reason."""
        with self._lock:
            aside = sorted(self._aside.items())
        return [{"segment": os.path.basename(segment.path),
                 "bytes": self.spool.segment_size(segment), "reason": reason}
                for segment, reason in aside]

    def appended(self, segment: Segment, traces: set[str]) -> None:
        """A message with spans of ``traces`` was appended to ``segment``."""
        with self._lock:
            self._traces.setdefault(segment, set()).update(traces)
            self._appended[segment] = self.clock()
        self._wake.set()

    def _loop(self) -> None:
        self._known()
        while not self._stop.is_set():
            inputs = self._inputs()
            if inputs:
                self._round(inputs)
            self._retire()
            self._wake.wait(self.every)
            self._wake.clear()

    def _known(self) -> None:
        """The trace ids of the segments the spool held at start (a restart's): read once."""
        now = self.clock()
        for segment in self.spool.segments():
            traces = _trace_ids(segment.path, self.spool.segment_size(segment))
            with self._lock:
                self._traces.setdefault(segment, set()).update(traces)
                self._appended.setdefault(segment, now)

    def _inputs(self) -> list[tuple[Segment, int]]:
        """The segments the next round reads, each with its size now; none when every
        segment is settled."""
        sizes = {s: self.spool.segment_size(s) for s in self.spool.segments()}
        with self._lock:
            for segment in self._aside:
                sizes.pop(segment, None)
            while self._alone:  # a segment a refused round named: judged on its own first
                segment = self._alone[0]
                if sizes.get(segment):
                    self._tried_alone.add(segment)
                    return [(segment, sizes[segment])]
                self._alone.pop(0)
            open_ = [s for s, size in sizes.items() if size and (
                self._settled.get(s) != size or self._traces.get(s, set()) & self._waiting)]
            wanted = set().union(*(self._traces.get(s, set()) for s in open_))
            related = [s for s, size in sizes.items() if size and s not in open_
                       and self._traces.get(s, set()) & wanted]
        return [(s, sizes[s]) for s in sorted([*open_, *related])]

    def _round(self, inputs: list[tuple[Segment, int]]) -> None:
        started = self.round_started = time.monotonic()
        try:
            if self._judge(inputs, started):
                if self._alone and inputs == [(self._alone[0], inputs[0][1])]:
                    self._alone.pop(0)
                self._settle(inputs)
            elif self.refused is not None:
                self._refused(inputs)
        finally:
            self.round_started = None

    def _judge(self, inputs: list[tuple[Segment, int]], started: float) -> bool:
        """One judging process over ``inputs``; whether it judged everything it read."""
        # The judging process ends with this one, however this one ends (cli/trace.py).
        environment = {**os.environ, "IOA_CHECK_TRACE_SERVE_PID": str(os.getpid())}
        command = [*self.command, "--waiting-list", self.waiting_list,
                   *(os.path.abspath(segment.path) for segment, _ in inputs)]
        with self.quiet.writing():
            try:
                self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.PIPE, env=environment)
            except OSError as exc:
                # Out of processes or descriptors for now: said, and tried again next round
                # (the thread ending here would stop all judging while /healthz says ok).
                self.last_status = None
                self.log.write(f"ioa-check trace serve: the judging process cannot start: "
                               f"{exc.strerror or exc}\n")
                self.log.flush()
                return False
            _, err = self._process.communicate()
            status = self._process.returncode
            self._process = None
        if self._stop.is_set() and status < 0:
            return False  # killed at shutdown: the next start judges again from the checkpoint
        self.rounds += 1
        self.last_status = status
        text = err.decode("utf-8", "replace")
        # Verdicts (0, 1, 3) are the store's to keep; anything else is the operator's to see.
        if status not in (0, 1, 3):
            self.log.write(f"ioa-check trace serve: judging the spool failed (exit status "
                           f"{status}): {text.strip()}\n")
            self.log.flush()
            return False
        self.refused = None
        self._refusing = []
        rejudge: set[str] = set()
        for line in text.splitlines():
            if "--max-memory" in line:  # the spool was not judged: the operator's to see
                self.refused = line.removeprefix("ioa-check trace: ")
                self.log.write(f"ioa-check trace serve: {self.refused}\n")
                # The judge names the input it could not read within the bound by its path.
                for segment, _ in inputs:
                    named = os.path.abspath(segment.path) + ": "
                    if self.refused.startswith(named):
                        self._refusing.append(segment)
                        self._reasons[segment] = self.refused.removeprefix(named)
            elif "late spans of run" in line:
                late = re.search(r"late spans of run (\S+):", line)
                if late is not None and self._held_elsewhere(late.group(1), inputs):
                    # Not late: spans appended after the round chose its segments (the
                    # judging process reads a file to its end), read without the retained
                    # segment holding the trace's other spans. The next round reads both.
                    rejudge.add(late.group(1))
                    continue
                self.late += 1
                self.log.write(f"ioa-check trace serve: {line.removeprefix('ioa-check trace: ')}\n")
        waiting = _waiting(self.waiting_list)
        with self._lock:
            self._waiting = waiting
            self._rejudge = rejudge
        read = sum(size for _, size in inputs)
        self.log.write(f"ioa-check trace serve: judged {len(inputs)} segment"
                       f"{'s' if len(inputs) != 1 else ''} of the spool ({read} bytes) in "
                       f"{time.monotonic() - started:.1f} s (exit status {status})"
                       f"{f'; {len(waiting)} runs wait to complete' if waiting else ''}\n")
        self.log.flush()
        return self.refused is None

    def _refused(self, inputs: list[tuple[Segment, int]]) -> None:
        """A round refused by --max-memory: each segment its refusal named (all it read when
        it named none) is judged on its own next, or set aside if it was read so already;
        the active one is closed, so that what comes next is judged apart from it."""
        named = self._refusing or [segment for segment, _ in inputs]
        alone = len(inputs) == 1
        for segment in named:
            if alone or segment in self._tried_alone:
                reason = self._reasons.get(segment) or self.refused or ""
                with self._lock:
                    self._aside[segment] = reason
                    if segment in self._alone:
                        self._alone.remove(segment)
                self.log.write(
                    f"ioa-check trace serve: {os.path.basename(segment.path)} "
                    f"({self.spool.segment_size(segment)} bytes) set aside, unjudged: "
                    f"{reason}; it stays in the spool (a service started with a larger "
                    f"--max-memory judges it), and the rounds after judge the rest\n")
            elif segment not in self._alone:
                self._alone.append(segment)
        self.log.flush()
        if any(segment == self.spool.active for segment in named):
            self.spool.rotate()

    def _held_elsewhere(self, trace: str, inputs: list[tuple[Segment, int]]) -> bool:
        """Whether a segment of the spool that a round did not read holds spans of ``trace``."""
        chosen = {segment for segment, _ in inputs}
        others = [s for s in self.spool.segments() if s not in chosen]
        with self._lock:
            return any(trace in self._traces.get(s, ()) for s in others)

    def _settle(self, inputs: list[tuple[Segment, int]]) -> None:
        """The segments a round judged whole, settled (but those holding a trace to judge
        again whole); the active one closed if it was read."""
        with self._lock:
            for segment, size in inputs:
                if not self._traces.get(segment, set()) & self._rejudge:
                    self._settled[segment] = size
        if any(segment == self.spool.active for segment, _ in inputs):
            self.spool.rotate()

    def _retire(self) -> None:
        """Settled segments quiet for :attr:`retain` seconds, holding no waiting run, removed."""
        now = self.clock()
        active = self.spool.active
        for segment in self.spool.segments():
            # Asked outside the judge's lock: an append holds the spool's while it tells the
            # judge (appended), so the judge's is never held waiting for the spool's.
            size = self.spool.segment_size(segment)
            with self._lock:
                settled = (segment != active
                           and self._settled.get(segment) == size
                           and not self._traces.get(segment, set()) & (
                               self._waiting | self._rejudge)
                           and now - self._appended.get(segment, now) >= self.retain)
            if not settled:
                continue
            if self.spool.retire(segment):
                self.retired += 1
                with self._lock:
                    for known in (self._traces, self._appended, self._settled):
                        known.pop(segment, None)

    def stop(self) -> None:
        """Stop judging: the round in flight has ``shutdown_timeout`` seconds, then is killed
        (the store's checkpoints make that safe)."""
        self._stop.set()
        self._wake.set()
        process = self._process
        if process is not None:
            try:
                process.wait(self.shutdown_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
        self._thread.join(self.shutdown_timeout + 5)


def _waiting(path: str) -> set[str]:
    """The trace ids a judging round's --waiting-list names (none if it wrote none)."""
    try:
        with open(path, "rb") as handle:
            value = json.loads(handle.read())
    except (OSError, ValueError):
        return set()
    runs = value.get("runs") if isinstance(value, dict) else None
    return {r for r in runs if isinstance(r, str)} if isinstance(runs, list) else set()


def _trace_ids(path: str, size: int) -> set[str]:
    """The trace ids (hexadecimal) of the spans in a spool segment's first ``size`` bytes."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    found: set[str] = set()
    try:
        with open(path, "rb") as handle:
            while handle.tell() + 4 <= size:
                length = int.from_bytes(handle.read(4), "big")
                message = ExportTraceServiceRequest()
                try:
                    message.ParseFromString(handle.read(length))
                except DecodeError:
                    continue  # the judge says what is wrong with it
                found |= _message_traces(message)
    except OSError:
        pass  # a segment that cannot be read: the judge says so
    return found


def _message_traces(message: Any) -> set[str]:
    return {span.trace_id.hex() for resource in message.resource_spans
            for scope in resource.scope_spans for span in scope.spans}


class Ingest:
    """The routes of one spool."""

    def __init__(self, spool: Spool, judge: Judge | None, max_body: int = DEFAULT_MAX_BODY,
                 retry_after: int = 5, body_timeout: float = DEFAULT_BODY_TIMEOUT,
                 max_buffered: int = DEFAULT_MAX_BUFFERED,
                 max_spans: int = DEFAULT_MAX_SPANS) -> None:
        self.spool = spool
        self.judge = judge
        self.max_body = max_body
        self.retry_after = retry_after
        self.body_timeout = body_timeout
        self.max_spans = max_spans
        # Held by the requests being read, decompressed and parsed, all together: a body's
        # bytes from their arrival, and what its decompression and its parse are expected
        # to hold until the request ends.
        self.bodies = HeldBytes(max_buffered)
        self.accepted = 0  # requests kept, for /healthz

    async def _read(self, request: Request, held: _Held) -> bytes | None:
        """The body, or None past :attr:`max_body`; :class:`_Busy` when holding it would take
        what requests hold past the cap (:attr:`bodies`). Its bytes stay in ``held``."""
        cap = self.max_body
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            return None
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            if not held.take(len(chunk)):
                raise _Busy
            size += len(chunk)
            if size > cap:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    async def healthz(self, request: Request) -> Response:
        judge = self.judge
        return JSONResponse({"status": "ok", "accepted": self.accepted,
                             "spooledBytes": self.spool.size(),
                             "bufferedBytes": self.bodies.size,
                             "judgedBytes": judge.judged_size if judge else None,
                             "judged": judge.rounds if judge else None,
                             "lastJudgeStatus": judge.last_status if judge else None,
                             "judgingFor": _since(judge.round_started if judge else None),
                             "judgingRefused": judge.refused if judge else None,
                             "setAside": judge.set_aside_list() if judge else None,
                             "segments": len(self.spool.segments()),
                             "retiredSegments": judge.retired if judge else None,
                             "lateRuns": judge.late if judge else None})

    async def traces(self, request: Request) -> Response:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media not in (PROTOBUF, JSON):
            return _status(JSON, 415, f"Content-Type {media or '(none)'} is not "
                                      f"{PROTOBUF} or {JSON}")
        codings = [c.strip().lower() for header in request.headers.getlist("content-encoding")
                   for c in header.split(",") if c.strip()]
        if any(c not in ("gzip", "identity") for c in codings) or codings.count("gzip") > 1:
            return _status(media, 415, "Content-Encoding may be gzip or identity only")
        held = _Held(self.bodies)
        try:
            return await self._export(request, media, "gzip" in codings, held)
        except _Busy:
            return _status(media, 503, "the service holds as much of the requests being read "
                                       "as it may (--max-buffered-bytes): retry later",
                           {"Retry-After": str(self.retry_after), "Connection": "close"})
        except MemoryError:
            # The process was refused memory (a limit set on it below what it may hold): the
            # request is not kept, and may be sent again.
            return _status(media, 503, "the service is short of memory: retry later",
                           {"Retry-After": str(self.retry_after), "Connection": "close"})
        except _TooLarge as exc:
            return _status(media, 413, str(exc))
        except ClientDisconnect:
            # The client went away with its body half sent (an exporter's timeout): nothing
            # was kept, and nobody reads an answer; said without a traceback.
            return Response(status_code=400)
        finally:
            held.release()

    async def _export(self, request: Request, media: str, gzipped: bool,
                      held: _Held) -> Response:
        from starlette.concurrency import run_in_threadpool

        try:
            async with asyncio.timeout(self.body_timeout):
                body = await self._read(request, held)
        except TimeoutError:
            return _status(media, 408, f"the request body did not arrive within "
                                       f"{self.body_timeout:g} s", {"Connection": "close"})
        if body is None:
            return _status(media, 413, f"the request body exceeds {self.max_body} bytes")
        data: bytes | bytearray = body
        if gzipped:
            # What decompressing holds, taken as it grows (a reservation of max_body for
            # each request refused bursts of small ones); then the compressed bytes let go.
            try:
                inflated = await run_in_threadpool(_gunzip, body, self.max_body,
                                                   lambda size: self._hold(held, size))
            except ValueError as exc:
                return _status(media, 400, str(exc))
            if inflated is None:
                return _status(media, 413, f"the request body exceeds {self.max_body} bytes "
                                           "once decompressed")
            given = len(body)
            del body
            data = inflated
            held.give(given)
        try:
            # Off the event loop: a walk of 16 MiB of protobuf takes a third of a second.
            cost = await run_in_threadpool(_cost, data, media, self.max_spans,
                                           self.bodies.cap)
            # What the parse may hold besides the body, held until the request ends: a
            # parse that would take what all requests hold past the bound waits (503).
            self._hold(held, cost - len(data))
            # Off the event loop: 16 MiB of JSON takes seconds to parse, and /healthz and the
            # other requests' deadlines would wait on it.
            message, rejected, traces = await run_in_threadpool(_parse, data, media,
                                                                self.max_spans)
        except ValueError as exc:
            return _status(media, 400, str(exc))
        del data
        if len(message) + 4 > self.spool.max_bytes:
            # Never to be kept, however long the client waits: not 503 and Retry-After.
            return _status(media, 413, f"the request is larger than the spool may hold "
                                       f"({self.spool.max_bytes} bytes)")
        if message:
            try:
                # The judge is told the traces with the append, under the spool's lock: a
                # round begun once the bytes are there knows them (told after, a round in
                # between read a late span without its run's retained segment).
                judge = self.judge
                await run_in_threadpool(self.spool.append, message, None if judge is None
                                        else lambda segment: judge.appended(segment, traces))
            except SpoolFull as exc:
                return _status(media, 503, f"{exc}: retry later",
                               {"Retry-After": str(self.retry_after)})
            self.accepted += 1
        return _success(media, rejected)

    def _hold(self, held: _Held, size: int) -> None:
        """``size`` more bytes held for the request; :class:`_TooLarge` when they exceed the
        whole bound (never to be held), :class:`_Busy` when other requests hold the rest."""
        if held.size + size > self.bodies.cap:
            raise _TooLarge(f"reading the request would hold {held.size + size} bytes, more "
                            f"than the service may hold for the requests being read "
                            f"(--max-buffered-bytes {self.bodies.cap})")
        if not held.take(size):
            raise _Busy


class _Held:
    """What one request holds of the service's bound (:attr:`Ingest.bodies`), let go all at
    once when it ends."""

    def __init__(self, bodies: HeldBytes) -> None:
        self.bodies = bodies
        self.size = 0

    def take(self, size: int) -> bool:
        if not self.bodies.take(size):
            return False
        self.size += size
        return True

    def give(self, size: int) -> None:
        size = min(size, self.size)
        self.bodies.give(size)
        self.size -= size

    def release(self) -> None:
        self.give(self.size)


def _success(media: str, rejected: int) -> Response:
    """An ``ExportTraceServiceResponse``: empty, or with ``partial_success`` naming how many
    spans were rejected."""
    if not rejected:
        if media == PROTOBUF:
            return Response(b"", media_type=PROTOBUF)
        return JSONResponse({})
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(
        rejected_spans=rejected, error_message=f"{rejected} span{'s' if rejected != 1 else ''} "
        "rejected: a trace id must be 16 bytes, a span id 8 (a parent's 8 or none), not all "
        "zero"))
    if media == PROTOBUF:
        return Response(response.SerializeToString(), media_type=PROTOBUF)
    return JSONResponse(json_format.MessageToDict(response))


def _since(started: float | None) -> float | None:
    """Seconds since ``started`` (a round that hangs shows as one that only grows)."""
    return None if started is None else round(time.monotonic() - started, 1)


def _status(media: str, status: int, message: str,
            headers: dict[str, str] | None = None) -> Response:
    """An error as OTLP/HTTP answers it: a ``google.rpc.Status`` in the request's encoding."""
    code = _INVALID_ARGUMENT if status == 400 else 0
    if media == PROTOBUF:
        text = message.encode("utf-8")
        body = (b"\x08" + _varint(code) if code else b"") + b"\x12" + _varint(len(text)) + text
        return Response(body, status_code=status, media_type=PROTOBUF, headers=headers)
    return JSONResponse({"code": code, "message": message}, status_code=status,
                        headers=headers)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


class _Busy(Exception):
    """The bodies being read hold the service's bound on buffered bytes."""


class _TooLarge(Exception):
    """A request the service will never take whole (413): more spans than it takes in one,
    or more than it may hold to read it."""


# gzip members one body may hold: each costs a decompressor of its own (a body of 16 MiB of
# empty members held 800,000), and no exporter sends more than one.
MAX_GZIP_MEMBERS = 1024
# The compressed bytes given a decompressor at once: what it copies (unused_data) when a
# member ends within them, and what the next member is given again, is at most this, so a
# body's members cost at most their number times this, never the body's rest each.
_GZIP_CHUNK = 1 << 12


def _gunzip(body: bytes, cap: int,
            grow: Callable[[int], None] | None = None) -> bytearray | None:
    """``body`` decompressed, or None when it would exceed ``cap`` bytes; ValueError when it
    is not whole gzip members, or more than :data:`MAX_GZIP_MEMBERS`. gzip allows several
    members one after another (``cat a.gz b.gz``): each is read, none dropped after it was
    acknowledged. Linear in the body: its bytes are given in chunks, each read once.
    ``grow`` is told of each growth of the output before the next (it may raise, to stop)."""
    out = bytearray()
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    members = 1
    view = memoryview(body)
    for at in range(0, len(body), _GZIP_CHUNK):
        data: bytes | memoryview = view[at:at + _GZIP_CHUNK]
        while data:
            if inflate.eof:  # the rest is another member
                members += 1
                if members > MAX_GZIP_MEMBERS:
                    raise ValueError(f"the gzip body has more than {MAX_GZIP_MEMBERS} members")
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                # Never past cap (and one byte, to tell): the rest stays in unconsumed_tail.
                more = inflate.decompress(data, cap + 1 - len(out))
            except zlib.error:
                raise ValueError("the body is not gzip (Content-Encoding: gzip)") from None
            if grow is not None and more:
                grow(len(more))
            out += more
            if len(out) > cap or inflate.unconsumed_tail:
                return None
            data = inflate.unused_data if inflate.eof else b""
    if not inflate.eof:
        raise ValueError("the gzip body is cut short")
    return out


# What parsing a request may hold, besides its bytes, in bytes: measured with the protobuf
# runtime (upb) and CPython, each rounded up. A span parsed from protobuf held 176 bytes
# (216 once its ids were checked), its trace id's text 100 more; any other message (an
# attribute, its value, an event, a link) at most 87. Four times the body: the body, its
# text (JSON) or a copy of the bytes decompressed, the message serialized again, and what
# the parse copies of its strings.
_SPAN_COST = 384
_MESSAGE_COST = 96
_BYTES_COST = 4
# For JSON, counted from the bytes, each character an upper bound on what it opens: a "{" a
# dict and the message it may become (a span: 290 bytes for "{}" parsed), a "[" a list, two
# '"' a string object, a "," one more member or item (a pointer, a dict's entry, a number
# object: a number whose text is kept, intake.ExactNumber, 96 bytes for "1.10,").
_JSON_COSTS = ((b"{", 320), (b"[", 80), (b'"', 48), (b",", 96))


def _cost(data: bytes | bytearray, media: str, max_spans: int, bound: int) -> int:
    """What parsing ``data`` may hold, in bytes, all told (an upper bound); :class:`_TooLarge`
    past ``max_spans`` spans (protobuf: counted before any is made) or ``bound`` bytes,
    ValueError for protobuf that is not an ``ExportTraceServiceRequest``."""
    cost = _BYTES_COST * len(data)
    if media == PROTOBUF:
        cost += _weigh(data, max_spans, bound - cost)
    else:
        cost += sum(data.count(mark) * each for mark, each in _JSON_COSTS)
    if cost > bound:
        raise _TooLarge(f"reading the request would hold about {cost} bytes, more than the "
                        f"service may hold for the requests being read "
                        f"(--max-buffered-bytes {bound})")
    return cost


_INVALID_PROTOBUF = "the body is not an ExportTraceServiceRequest in protobuf"
# Levels of messages in messages the walk follows: the protobuf runtime's own bound (upb's
# decoder refuses deeper messages), so a request the walk refuses, the parse would too.
_MAX_NESTING = 100


def _weigh(data: bytes | bytearray, max_spans: int, bound: int) -> int:
    """What the messages of ``data`` (an ``ExportTraceServiceRequest``) hold once parsed: its
    wire format walked, each length-delimited field that is a message (by the schema) counted,
    none made. :class:`_TooLarge` as soon as the spans pass ``max_spans`` or the weight
    ``bound``; ValueError where the bytes are not the message."""
    root, span = _schema()
    spans = messages = 0
    stack: list[tuple[dict[int, Any], int, int]] = []
    fields, at, end = root, 0, len(data)
    while True:
        if at >= end:
            if at > end:
                raise ValueError(_INVALID_PROTOBUF)
            if not stack:
                return spans * _SPAN_COST + messages * _MESSAGE_COST
            fields, at, end = stack.pop()
            continue
        key = data[at]
        at += 1
        if key >= 0x80:
            key, at = _varint_at(data, at - 1, end)
        wire = key & 7
        if wire == 2:
            size, at = _varint_at(data, at, end)
            child = fields.get(key >> 3)
            if child is None:
                at += size  # a string, bytes or packed scalars: past the end is caught above
                continue
            if at + size > end or len(stack) >= _MAX_NESTING:
                raise ValueError(_INVALID_PROTOBUF)
            if child is span:
                spans += 1
                if spans > max_spans:
                    raise _TooLarge(f"the request holds more than {max_spans} spans")
            else:
                messages += 1
            if spans * _SPAN_COST + messages * _MESSAGE_COST > bound:
                raise _TooLarge(f"reading the request would hold more than the service may "
                                f"hold for the requests being read ({bound} bytes more)")
            stack.append((fields, at + size, end))
            fields, end = child, at + size
        elif wire == 0:
            _, at = _varint_at(data, at, end)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:  # groups (no OTLP message has one) and wire types that do not exist
            raise ValueError(_INVALID_PROTOBUF)


def _varint_at(data: bytes | bytearray, at: int, end: int) -> tuple[int, int]:
    """The varint at ``at`` and the offset after it; ValueError past ``end`` or 10 bytes."""
    value = shift = 0
    while at < end and shift < 70:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
    raise ValueError(_INVALID_PROTOBUF)


_SCHEMA: list[tuple[dict[int, Any], dict[int, Any]]] = []


def _schema() -> tuple[dict[int, Any], dict[int, Any]]:
    """The ``ExportTraceServiceRequest``'s messages as the walk reads them: for each, its
    fields that are messages by number, each the same for its message; and the Span's."""
    if not _SCHEMA:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        built: dict[str, dict[int, Any]] = {}

        def fields(descriptor: Any) -> dict[int, Any]:
            found = built.get(descriptor.full_name)
            if found is None:
                found = built[descriptor.full_name] = {}
                for field in descriptor.fields:
                    if field.message_type is not None:
                        found[field.number] = fields(field.message_type)
            return found

        root = fields(ExportTraceServiceRequest.DESCRIPTOR)
        _SCHEMA.append((root, built["opentelemetry.proto.trace.v1.Span"]))
    return _SCHEMA[0]


def _parse(body: bytes | bytearray, media: str,
           max_spans: int = DEFAULT_MAX_SPANS) -> tuple[bytes, int, set[str]]:
    """The request as protobuf bytes to spool (empty when it holds no spans), how many of its
    spans were rejected and the trace ids of those kept; ValueError naming what is wrong,
    :class:`_TooLarge` past ``max_spans`` spans. JSON is read strictly (as the audit reads
    it: a member named twice, which one reader takes the first of and another the last, is
    refused). What is spooled is the message serialized again, its unknown fields dropped:
    the spool's reader takes a message that does not begin with its spans for garbage, and
    one such request would stop the judging of all after it."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from ..trace.events import parse

    message = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            message.ParseFromString(body)
        except DecodeError as exc:
            if "alloc failed" in str(exc):  # upb's arena refused memory: no fault of the body
                raise MemoryError(str(exc)) from None
            raise ValueError(_INVALID_PROTOBUF) from None
        return _kept(message)
    document, problem = parse(body if isinstance(body, bytes) else bytes(body), len(body))
    if problem is not None:
        raise ValueError(f"the body is not JSON ({problem[0]}): {problem[1]}")
    if not isinstance(document, dict):
        raise ValueError("the body is not a JSON object (an ExportTraceServiceRequest)")
    if _json_spans(document) > max_spans:
        raise _TooLarge(f"the request holds more than {max_spans} spans")
    try:
        json_format.ParseDict(_hex_ids(document), message, ignore_unknown_fields=True,
                              max_recursion_depth=64)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"the body is not an ExportTraceServiceRequest: {exc}") from None
    return _kept(message)


def _json_spans(document: dict[str, Any]) -> int:
    """The spans of an OTLP/JSON request (the items of its scopes' span lists)."""
    return sum(len(_list(scope.get("spans")))
               for resource in _list(document.get("resourceSpans")) if isinstance(resource, dict)
               for scope in _list(scopes_of(resource)[1]) if isinstance(scope, dict))


def _kept(message: Any) -> tuple[bytes, int, set[str]]:
    """``message`` without its unknown fields and its spans whose ids are not ids, serialized
    (empty when no span is left), how many spans were rejected, and the trace ids (in
    hexadecimal) of the spans kept."""
    message.DiscardUnknownFields()
    rejected = 0
    for resource in message.resource_spans:
        for scope in resource.scope_spans:
            bad = [i for i, span in enumerate(scope.spans) if not _ids_valid(span)]
            for index in reversed(bad):
                del scope.spans[index]
            rejected += len(bad)
    spans = any(scope.spans for resource in message.resource_spans
                for scope in resource.scope_spans)
    return (bytes(message.SerializeToString()) if spans else b""), rejected, _message_traces(
        message)


def _ids_valid(span: Any) -> bool:
    """The specification's ids: a trace id of 16 bytes and a span id of 8, neither all zero;
    a parent's span id and each link's likewise (a parent's may be absent)."""
    def valid(value: bytes, size: int) -> bool:
        return len(value) == size and any(value)

    return (valid(span.trace_id, 16) and valid(span.span_id, 8)
            and (not span.parent_span_id or valid(span.parent_span_id, 8))
            and all(valid(link.trace_id, 16) and valid(link.span_id, 8)
                    for link in span.links))


_ID_MEMBERS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(document: dict[str, Any]) -> dict[str, Any]:
    """OTLP/JSON writes trace and span ids in hexadecimal where protobuf's JSON mapping has
    base64: each id is turned into what the mapping reads (base64 ids are read as they are;
    an id that is neither is made one that :func:`_ids_valid` rejects, with its span); a
    resource's scopes under OTLP 0.x's member are moved to ``scopeSpans``."""
    for resource in _list(document.get("resourceSpans")):
        if not isinstance(resource, dict):
            continue
        member, scopes = scopes_of(resource)
        if member != "scopeSpans":  # OTLP 0.x's scopes, read as the file reader reads them
            resource["scopeSpans"] = resource.pop(member)
        for scope in _list(scopes):
            for span in _list(scope.get("spans") if isinstance(scope, dict) else None):
                if not isinstance(span, dict):
                    continue
                _convert(span)
                for link in _list(span.get("links")):
                    if isinstance(link, dict):
                        _convert(link)
    return document


# What an id that is neither hexadecimal nor base64 is given: one byte, no id, so that its
# span is rejected (partial success) rather than the whole request refused.
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_NO_ID = base64.b64encode(b"\x00").decode("ascii")


def _convert(holder: dict[str, Any]) -> None:
    for member in _ID_MEMBERS:
        value = holder.get(member)
        if not isinstance(value, str) or not value:
            continue
        try:
            holder[member] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            continue
        except ValueError:
            pass
        # base64, as protobuf's own JSON mapping writes ids, is read as it is.
        if not _BASE64.fullmatch(value) or len(value.rstrip("=")) % 4 == 1:
            holder[member] = _NO_ID


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def create_app(spool: Spool, judge: Judge | None, *, max_body: int = DEFAULT_MAX_BODY,
               retry_after: int = 5, body_timeout: float = DEFAULT_BODY_TIMEOUT,
               max_buffered: int = DEFAULT_MAX_BUFFERED, max_spans: int = DEFAULT_MAX_SPANS,
               pages: RunPages | None = None) -> Starlette:
    """The service's routes; with ``pages``, the store's pages for people too
    (:mod:`.runs`: ``GET /runs`` and ``GET /runs/{run}``)."""
    ingest = Ingest(spool, judge, max_body, retry_after, body_timeout, max_buffered,
                    max_spans)
    routes = [Route("/v1/traces", ingest.traces, methods=["POST"]),
              Route("/healthz", ingest.healthz, methods=["GET"])]
    if pages is not None:
        # {run:path}: a plain store's run may be named with a "/" (sent as %2F).
        routes += [Route("/runs", pages.runs, methods=["GET"]),
                   Route("/runs/{run:path}", pages.run, methods=["GET"])]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
    # As the validation service: a trailing slash is an unknown route (404), never a redirect
    # to a URL built from the client's Host header.
    app.router.redirect_slashes = False
    return app


async def _http_error(request: Request, exc: Exception) -> Response:
    """404 and 405 as ``ioa-check serve`` answers them: problem details in JSON."""
    assert isinstance(exc, HTTPException)
    messages = {404: f"no route {request.url.path!r}",
                405: f"{request.method} is not allowed here"}
    return error(exc.status_code, messages.get(exc.status_code, exc.detail),
                 dict(exc.headers or {}))


def judge_command(store: str, quiet_period: float,
                  declarations: Sequence[str], max_body: int = DEFAULT_MAX_BODY,
                  max_memory: int | None = None) -> list[str]:
    """The ``ioa-check trace`` command line that judges segments of a spool (given after it,
    by :class:`Judge`) into ``store``. Its ``--max-line-bytes`` is the largest body the
    service keeps: a message it acknowledged but the judge would not read would stop the
    judging of every message after it."""
    return [sys.executable, "-m", "ioa_semantic", "trace", "--store", store,
            "--complete-only", "--quiet-period", repr(quiet_period), "--no-shapes",
            "--max-line-bytes", str(max_body), "--format", "json", *declarations,
            *(["--max-memory", str(max_memory)] if max_memory is not None else [])]
