"""The service's Starlette application: routes, limits, the access log.

Every route answers JSON (the page at ``/`` and the API page at ``/docs`` excepted), and
every error answer is RFC 9457 problem details (``application/problem+json``, see
:mod:`.problems`; its ``error`` member is the ``{"error": "..."}`` of old). A fault the
client can cause is a 4xx: 400 an unknown or malformed query parameter or a
single-valued header given more than once, 404 and 405, 408 a body that did not arrive
within the time bound, 413 a body over the limit, 415 an unsupported media type or any
content coding. A check that does not finish within the time bound is 503 (the check is
stopped: its worker process is killed and replaced, see :mod:`.workers`), and so is a body
(or an answer) that would take the bytes held at once past their cap, and an audit refused
because as many audits as the server runs at once are running. An answer a client does not
take in time (an audit's within its time bound, a check's or an impact run's within
``--timeout`` of being ready) is cut: its connection is closed. A bug is 500, with its
traceback on stderr, never in the answer.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import re
import sys
import threading
import traceback
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast
from urllib.parse import unquote_to_bytes, urlsplit

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import data as _resources
from .._codes import FIXES, RECEIVER_FIXES
from .._version import __version__
from .._visible import visible_lines
from ..audit.inputs import pieces
from ..audit.run import Audit
from . import api_page, openapi, problems
from .api_page import ApiPage
from .limits import (
    AUDIT_ANSWER_TYPE,
    AUDIT_MEDIA_TYPES,
    CHECK_MEDIA_TYPES,
    EXTENSION_URI,
    IMPACT_MEDIA_TYPES,
    HeldBytes,
    ServiceLimits,
)
from .streams import END, Body, Output, Spilled, _Stopped
from .workers import Build, Checks, CheckThreads, CheckWorkers, Job, WorkerBug, WorkerLost

if TYPE_CHECKING:
    from .._checker import Checker
    from .._findings import Decision
    from ..audit.judge import Judged, Result
    from ..impact import Impact
    from .impacts import ImpactRequest

class Wire(NamedTuple):
    """How the service writes answers and reads query values: the command line's own.

    ``decisions`` writes check results as ``--format json`` does; ``audit`` and
    ``audit_line`` write an audit as ``audit --format json`` does; ``instant`` and
    ``parameter`` read ``at`` and ``param`` as ``--at`` and ``--param`` are read, and raise
    ValueError (with the sentence the command line would print) for what they refuse;
    ``impact`` writes an impact run as ``impact --format json`` does (without it,
    ``/v1/impact`` answers 404).
    """

    decisions: Callable[[Iterable[Decision], IO[str]], None]
    audit: Callable[[Audit, Iterable[Judged], IO[str]], None]
    audit_line: Callable[[Result], str]
    instant: Callable[[str], datetime]
    parameter: Callable[[str], tuple[str, str]]
    impact: Callable[[Impact, IO[str]], None] | None = None


def answer(value: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON answer on one line, ending with a newline (as every JSON line the command line
    prints does, so that answers read well in a terminal and concatenate as JSON Lines)."""
    return Response(json.dumps(value, ensure_ascii=False).encode("utf-8") + b"\n",
                    status_code=status, headers=headers, media_type="application/json")


def problem(kind: str, detail: str, headers: Mapping[str, str] | None = None,
            **members: Any) -> Response:
    """An error answer: the problem details of ``kind`` (a key of :data:`.problems.PROBLEMS`)
    for ``detail``, with extension ``members`` (RFC 9457)."""
    status = problems.PROBLEMS[kind].status if kind in problems.PROBLEMS else int(kind)
    return Response(problems.encoded(kind, detail, **members), status_code=status,
                    headers=headers, media_type=problems.PROBLEM_MEDIA_TYPE)


class _Refused(Exception):
    """A request refused before it reached the checker: its answer."""

    def __init__(self, response: Response) -> None:
        self.response = response


class Service:
    """One Checker served: the routes' handlers and what they share."""

    def __init__(self, checker: Checker, wire: Wire, limits: ServiceLimits,
                 build: Build | None) -> None:
        self.checker = checker
        self.wire = wire
        self.limits = limits
        self.checks: Checks = (CheckWorkers(build, wire.decisions, limits.threads)
                               if build is not None
                               else CheckThreads(checker, wire.decisions, limits.threads))
        self.bodies = HeldBytes(limits.max_buffered_bytes)
        self.audit_threads = ThreadPoolExecutor(max_workers=limits.audits,
                                                thread_name_prefix="audit")
        self._audits = 0
        self._audits_lock = threading.Lock()
        self.profile = profile_document(checker)
        self.openapi = json.dumps(openapi.document(limits), indent=1).encode() + b"\n"
        self.page, self.page_policy = page(self.profile, limits, checker.remote_artifacts)
        self.api_page = ApiPage()

    def close(self) -> None:
        # The server is stopping: what still runs is stopped (the workers are killed), or,
        # for an audit's thread, let go (the command line ends the process without it).
        self.checks.close()
        self.audit_threads.shutdown(wait=False, cancel_futures=True)

    # --- the routes ------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        _query(request, ())
        return Response(self.page, media_type="text/html; charset=utf-8", headers={
            "Content-Security-Policy": self.page_policy, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"})

    async def healthz(self, request: Request) -> Response:
        _query(request, ())
        return answer({"status": "ok"})

    async def profile_info(self, request: Request) -> Response:
        _query(request, ())
        return answer(self.profile)

    async def openapi_json(self, request: Request) -> Response:
        _query(request, ())
        return Response(self.openapi, media_type="application/json")

    async def api_docs(self, request: Request) -> Response:
        _query(request, ())
        if not self.api_page.available:
            return problem("404", api_page.MISSING)
        return Response(self.api_page.html, media_type="text/html; charset=utf-8", headers={
            "Content-Security-Policy": api_page.POLICY, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"})

    async def api_asset(self, request: Request) -> Response:
        _query(request, ())
        name = request.path_params["asset"]
        found = self.api_page.asset(name)
        if found is None:
            return problem("404", api_page.MISSING if not self.api_page.available
                           else f"the API page has no asset {name!r}")
        content, media_type = found
        return Response(content, media_type=media_type, headers={
            "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"})

    async def check(self, request: Request) -> Response:
        deadline = _deadline(request, self.limits.timeout)
        _media_type(request, CHECK_MEDIA_TYPES)
        params, at = self._check_query(request)
        held: list[int] = []
        try:
            body = await _body(request, self.limits.max_body_bytes, deadline,
                               self.limits.timeout, self.bodies, held)
            try:
                answered = await self.checks.run(Job(body, params, at), deadline)
            except TimeoutError:
                return problem("check-timed-out", "the check did not finish within the "
                               f"server's time bound of {self.limits.timeout:g} s",
                               {"Retry-After": "1"})
            except WorkerLost as exc:
                return problem("check-lost", f"the check could not be finished: {exc}",
                               {"Retry-After": "1"})
            except WorkerBug as exc:
                print("ioa-check serve: internal error in a check (a bug; please report it "
                      f"with this trace):\n{visible_lines(str(exc))}", file=sys.stderr)
                return problem("500", "internal error")
        finally:
            self.bodies.give(sum(held))
        request.state.verdict = answered.verdict
        return self._held_answer(answered.body, "application/json")

    def _held_answer(self, content: bytes, media_type: str) -> Response:
        """``content`` answered, held against --max-buffered-bytes until the client has
        taken it (503 when it cannot be for now), cut if the client has not within --timeout.
        An answer larger than the whole bound could never be held: it is sent unheld (still
        cut past --timeout), never refused with a 503 that no retry would get past."""
        held = len(content) if len(content) <= self.bodies.cap else 0
        if held and not self.bodies.take(held):
            return problem("busy", "the server holds as many request bodies and answers as it "
                                   f"may ({self.bodies.cap} bytes): try again later",
                           {"Retry-After": "1"})
        return _HeldAnswer(content, media_type, self.bodies, self.limits.timeout, held)

    def _check_query(self, request: Request) -> tuple[dict[str, str], datetime | None]:
        items = _query(request, ("param", "at"))
        params: dict[str, str] = {}
        at: datetime | None = None
        for name, value in items:
            try:
                if name == "at":
                    if at is not None:
                        raise ValueError("at is given more than once")
                    at = self.wire.instant(value)
                    continue
                key, val = self.wire.parameter(value)
            except ValueError as exc:
                raise _Refused(problem("bad-query", f"query parameter {name}: {exc}")) from None
            if key in params:
                raise _Refused(problem("bad-query", f"query parameter param: {key} is given "
                                                    "more than once"))
            params[key] = val
        return params, at

    async def audit(self, request: Request) -> Response:
        deadline = _deadline(request, self.limits.audit_timeout)
        _media_type(request, AUDIT_MEDIA_TYPES)
        _query(request, ())
        _declared_length(request, self.limits.max_audit_bytes)
        with self._audits_lock:
            if self._audits >= self.limits.audits:
                return problem("busy", f"the server runs {self.limits.audits} audit(s) at "
                                       "once, and as many are running: try again later",
                               {"Retry-After": "5"})
            self._audits += 1
        return _AuditAnswer(self, request, deadline)

    async def impact(self, request: Request) -> Response:
        """An uploaded log and change judged (:mod:`.impacts`), answered at once: the JSON
        Lines ``ioa-check impact --format json`` prints. It runs on an audit's thread and
        counts as one of the audits run at once."""
        from . import impacts  # the impact stage: only for a request that asks for it

        if self.wire.impact is None:
            return problem("404", f"no route {request.url.path!r} (see /openapi.json)")
        deadline = _deadline(request, self.limits.audit_timeout)
        _media_type(request, IMPACT_MEDIA_TYPES)
        _query(request, ())
        held: list[int] = []
        try:
            body = await _body(request, self.limits.max_impact_bytes, deadline,
                               self.limits.audit_timeout, self.bodies, held)
            # Parsed on a thread (a large body would hold the event loop, and every request,
            # for seconds), what the parse costs held against --max-buffered-bytes meanwhile.
            try:
                asked = await asyncio.get_running_loop().run_in_executor(
                    None, _parsed, body, self.wire.instant, self.bodies)
            except impacts.ImpactRefused as exc:
                return problem("bad-impact-request", str(exc))
        finally:
            self.bodies.give(sum(held))
        del body
        with self._audits_lock:
            if self._audits >= self.limits.audits:
                return problem("busy", f"the server runs {self.limits.audits} audit(s) or "
                                       "impact run(s) at once, and as many are running: try "
                                       "again later", {"Retry-After": "5"})
            self._audits += 1
        stopped = threading.Event()
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(self.audit_threads, partial(
            impacts.run, asked, self.wire.impact, shape_timeout=self.checker.shape_timeout,
            stopped=stopped, limits=self.checker.limits._asdict()))
        try:
            async with asyncio.timeout_at(deadline):
                answered = await asyncio.shield(job)
        except impacts.ImpactRefused as exc:
            self.audit_ended()
            return problem("bad-impact-request", str(exc))
        except TimeoutError:
            # The run stops at the next decision it reads (its folder removed then), and counts
            # until then.
            stopped.set()
            job.add_done_callback(self._impact_ended)
            return problem("impact-timed-out", "the impact run did not finish within the "
                           f"server's time bound of {self.limits.audit_timeout:g} s")
        except BaseException:  # a bug in the run, or this request cancelled
            stopped.set()
            job.add_done_callback(self._impact_ended)
            raise
        self.audit_ended()
        return self._held_answer(answered, AUDIT_ANSWER_TYPE)

    def _impact_ended(self, job: asyncio.Future[bytes]) -> None:
        if not job.cancelled():
            job.exception()  # retrieved: a stopped run's end is no error of anyone's
        self.audit_ended()

    def audit_ended(self) -> None:
        with self._audits_lock:
            self._audits -= 1

    def run_audit(self, body: Body, output: Output) -> None:
        """The audit of ``body`` written to ``output``, as ``ioa-check audit - --format json``
        does it (on the audit's thread)."""
        try:
            run = Audit(self.checker)
            batches = run.batches(pieces(["-"], stdin=cast(IO[bytes], body),
                                         limits=self.checker.limits),
                                  jobs=1, render=self.wire.audit_line)
            self.wire.audit(run, batches, cast(IO[str], output))
            output.flush()
        except _Stopped:
            output.finish()
        except BaseException as exc:  # ends the answer (a bug, or a stop that woke a read)
            output.finish(exc)
        else:
            output.finish()


def _parsed(body: bytes, instant: Callable[[str], datetime],
            bodies: HeldBytes) -> ImpactRequest:
    """The impact request ``body`` holds, read on a thread while what its parse would cost
    (:func:`.impacts.parse_cost`) is held against ``bodies``: 413 when that is more than
    ``bodies`` may ever hold with the body, 503 when it is more than they may hold now."""
    from .impacts import parse_cost, read_request

    cost = parse_cost(body)
    if cost + len(body) > bodies.cap:
        raise _Refused(problem("body-too-large", f"the request body of {len(body)} bytes "
                               f"would take some {cost} bytes more to read (its JSON has that "
                               "many strings, objects and arrays): over the server's limit of "
                               f"{bodies.cap} bytes held at once", maxBytes=bodies.cap))
    if not bodies.take(cost):
        raise _Refused(problem("busy", "the server holds as many request bodies as it may "
                               f"({bodies.cap} bytes): try again later", {"Retry-After": "1"}))
    try:
        return read_request(body, instant)
    finally:
        bodies.give(cost)


class _AuditAnswer(Response):
    """The audit's answer, streamed as it is judged (chunked).

    The status line waits for the audit's first chunk of output, so a body refused before
    any result was written still gets its 413 (or 503). Once the answer has started, a fault
    can no longer change its status: the answer is cut (the connection closes without the
    chunked encoding's last chunk), and a client knows an audit is whole by its last line,
    the summary.
    """

    def __init__(self, service: Service, request: Request, deadline: float) -> None:
        super().__init__(status_code=200, media_type=AUDIT_ANSWER_TYPE)
        # Chunked: no Content-Length (Starlette's would say 0, for the empty body given here).
        self.raw_headers = [(b"content-type", AUDIT_ANSWER_TYPE.encode())]
        self._service = service
        self._request = request
        self._deadline = deadline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        service, limits = self._service, self._service.limits
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stopped = threading.Event()
        body = Body(self._request.stream(), loop, cap=limits.max_audit_bytes,
                    deadline=self._deadline, timeout=limits.audit_timeout, stopped=stopped)
        output = Output(queue, loop, stopped, receiving=lambda: not body.ended)
        job = loop.run_in_executor(service.audit_threads, service.run_audit, body, output)
        self._send, self._started = send, False
        self._watcher: asyncio.Task[None] | None = None
        complete = False
        try:
            complete = await self._stream(scope, receive, queue, body, output, stopped)
        finally:
            if self._started and not complete:
                scope.setdefault("state", {})["verdict"] = "cut"  # the access log says so
            stopped.set()
            body.cancel()
            with contextlib.suppress(BaseException):
                await job  # the thread sees ``stopped`` at its next read or write
            if self._watcher is not None:
                self._watcher.cancel()
            output.close()
            service.audit_ended()

    async def _stream(self, scope: Scope, receive: Receive, queue: asyncio.Queue[Any],
                      body: Body, output: Output, stopped: threading.Event) -> bool:
        """Every chunk of the audit's output sent, then the end of the answer; False when
        the answer was refused or cut short."""
        limits = self._service.limits
        while True:
            try:
                async with asyncio.timeout_at(self._deadline):
                    item = await queue.get()
            except TimeoutError:
                if not self._started:
                    await problem("audit-timed-out", "the audit did not finish within the "
                                  f"server's time bound of {limits.audit_timeout:g} s")(
                        scope, receive, self._send)
                else:
                    await _cut(scope)
                return False
            if item is END:
                break
            if isinstance(item, BaseException):
                if stopped.is_set():
                    return False  # stopped from here: answered already, or nobody listens
                raise item
            # Sending is held to the deadline too: a client that stops reading would
            # otherwise hold the audit (and its place among --audits) for as long as it likes.
            try:
                async with asyncio.timeout_at(self._deadline):
                    if not await self._begin(scope, receive, body):
                        return False
                    data = output.spilled(item) if isinstance(item, Spilled) else item
                    await self._send({"type": "http.response.body", "body": data,
                                      "more_body": True})
            except TimeoutError:
                await _cut(scope)
                return False
            if not isinstance(item, Spilled):
                output.credit.release()
            if body.ended and self._watcher is None:
                # The body is in: from now on receive() says only that the client left.
                self._watcher = asyncio.create_task(_disconnected(receive, stopped, queue))
        try:
            async with asyncio.timeout_at(self._deadline):
                if not await self._begin(scope, receive, body):
                    return False
                await self._send({"type": "http.response.body", "body": b"",
                                  "more_body": False})
        except TimeoutError:
            await _cut(scope)
            return False
        return True

    async def _begin(self, scope: Scope, receive: Receive, body: Body) -> bool:
        """The status line, once: 200, or 413 for a body that passed its limit before the
        audit wrote anything (False: refused)."""
        if self._started:
            return True
        if body.over_cap:
            await _too_large(self._service.limits.max_audit_bytes)(scope, receive, self._send)
            return False
        self._started = True
        await self._send({"type": "http.response.start", "status": 200,
                          "headers": self.raw_headers})
        return True


async def _disconnected(receive: Receive, stopped: threading.Event,
                        queue: asyncio.Queue[Any]) -> None:
    message = await receive()
    if message["type"] == "http.disconnect":
        stopped.set()
        queue.put_nowait(_Stopped())


async def _cut(scope: Scope) -> None:
    """The connection closed at once, what is buffered for it dropped (an answer the client
    does not take within its bound): a close would wait for the client to read it."""
    abort = scope.get("ioa.abort")
    if abort is not None:
        abort()
        await asyncio.sleep(0)  # the server learns the connection is lost (before it asks)


def _abort_of(send: Send) -> Callable[[], None] | None:
    """What closes the connection of uvicorn's ``send`` (its transport's ``abort``); None
    under a server that does not say (the connection is then closed when it can be)."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    abort = getattr(transport, "abort", None)
    return abort if callable(abort) else None


# The pieces a held answer is sent in: the server writes one while the client takes the last.
ANSWER_PIECE = 64 * 1024


class _HeldAnswer(Response):
    """An answer held against the bytes the server holds at once (``bodies``) until the
    client has taken it. It is sent in pieces, each written once the client has taken the
    one before, so that the answer stays here, counted, rather than in the connection's
    buffer; one the client has not taken within ``bound`` seconds of it being ready has its
    connection closed (the answer is cut, the access log says ``cut``), and its bytes are
    given back either way."""

    def __init__(self, content: bytes, media_type: str, bodies: HeldBytes, bound: float,
                 held: int) -> None:
        super().__init__(content, media_type=media_type)
        self._bodies = bodies
        self._held = held  # what it was counted for (none, for one past the whole bound)
        self._bound = bound

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            deadline = asyncio.get_running_loop().time() + self._bound
            try:
                async with asyncio.timeout_at(deadline):
                    await send({"type": "http.response.start", "status": self.status_code,
                                "headers": self.raw_headers})
                    content = memoryview(self.body)
                    for start in range(0, len(content), ANSWER_PIECE):
                        await send({"type": "http.response.body", "more_body": True,
                                    "body": bytes(content[start:start + ANSWER_PIECE])})
                    # The last send waits until the connection's buffer has drained.
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            except TimeoutError:
                scope.setdefault("state", {})["verdict"] = "cut"
                await _cut(scope)
        finally:
            self.body = b""
            self._bodies.give(self._held)


def _too_large(cap: int) -> Response:
    return problem("body-too-large", f"the request body is over the server's limit of {cap} "
                   "bytes", {"Connection": "close"}, maxBytes=cap)


# --- what every request is held to --------------------------------------------------------


def _deadline(request: Request, bound: float) -> float:
    """The loop's time by which this request must be answered: ``bound`` seconds from its
    arrival (the access log notes when it arrived)."""
    arrived = request.scope.get("ioa.arrived", asyncio.get_running_loop().time())
    return float(arrived) + bound


def _query(request: Request, names: tuple[str, ...]) -> list[tuple[str, str]]:
    """The query's items; an unknown name, or a name or value that is not UTF-8 once its
    percent-escapes are read, is refused (400)."""
    items = _query_items(request.scope.get("query_string", b""))
    for name, _ in items:
        if name not in names:
            known = f" (this route takes {', '.join(names)})" if names else \
                " (this route takes none)"
            raise _Refused(problem("bad-query", f"unknown query parameter {name!r}{known}"))
    return items


def _query_items(query: bytes) -> list[tuple[str, str]]:
    """The query string's items, read as Starlette reads them (``&`` between items, ``+`` a
    space, a name without ``=`` an empty value), but strictly: Starlette's ``query_params``
    puts U+FFFD in place of bytes that are not UTF-8, and the route would judge that
    character as if the client had sent it. Such bytes are refused (400), in the words the
    command line refuses them in (``--param``)."""
    items = []
    for piece in query.split(b"&"):
        if not piece:
            continue
        raw_name, _, raw_value = piece.partition(b"=")
        name = _query_text(raw_name, None)
        items.append((name, _query_text(raw_value, name)))
    return items


def _query_text(raw: bytes, name: str | None) -> str:
    try:
        return unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError:
        shown = _printable(raw.decode("latin-1"))[:80]
        what = f"query parameter {name}: its value" if name is not None else \
            f"the query parameter name {shown!r}"
        raise _Refused(problem("bad-query", f"{what} is not text: its bytes are not UTF-8 "
                                            "(once its percent-escapes are read)")) from None


def _media_type(request: Request, accepted: tuple[str, ...]) -> None:
    given = request.headers.get("content-type", "")
    media = given.partition(";")[0].strip().lower()
    if media not in accepted:
        said = f"{media!r} is not accepted" if media else "no Content-Type is given"
        raise _Refused(problem("unsupported-media-type", f"{said}: send {' or '.join(accepted)}",
                               accepted=list(accepted)))
    # The body is judged as its bytes: a compressed one would be judged as its compression.
    # Content-Encoding is a list (RFC 9110 8.4), and may be split over several fields: every
    # coding of every field is read, and only identity is accepted.
    for field in request.headers.getlist("content-encoding"):
        for coding in field.split(","):
            coding = coding.strip().lower()
            if coding not in ("identity", ""):
                raise _Refused(problem("unsupported-content-coding", f"Content-Encoding "
                                       f"{coding!r} is not accepted: send the body as it is"))


# The request fields RFC 9110 defines as one value, not a list (its ``#`` rule), which a
# request may carry: a second one is ambiguous (which one did a proxy in front read?), so it
# is refused, as RFC 9112 6.3 and 3.2 ask for Content-Length and Host.
SINGLE_FIELDS = ("host", "content-length", "content-type", "content-location", "content-range",
                 "authorization", "proxy-authorization", "date", "from", "if-modified-since",
                 "if-unmodified-since", "if-range", "max-forwards", "range", "referer",
                 "user-agent")


def _single_fields(scope: Scope) -> None:
    seen: set[bytes] = set()
    for name, _ in scope["headers"]:
        name = name.lower()
        if name in seen and name.decode("latin-1") in SINGLE_FIELDS:
            raise _Refused(problem("bad-request-head", f"the header {name.decode('latin-1')} "
                                   "is given more than once", {"Connection": "close"}))
        seen.add(name)
    if b"transfer-encoding" in seen and b"content-length" in seen:
        # Two framings: h11 reads the chunks, a proxy in front may have read the length and
        # take what follows for another request (smuggling). RFC 9112 6.1: refuse, and close.
        raise _Refused(problem("bad-request-head", "the request has both Transfer-Encoding "
                               "and Content-Length: send one", {"Connection": "close"}))


def _declared_length(request: Request, cap: int) -> None:
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > cap:
        raise _Refused(_too_large(cap))


async def _body(request: Request, cap: int, deadline: float, bound: float, bodies: HeldBytes,
                held: list[int]) -> bytes:
    """The whole body, read as it streams in: refused (413) once it passes ``cap``, having
    read at most the chunk that passed it; 503 when it would take the bodies held at once
    past their cap; 408 when it has not arrived by ``deadline``. What it holds is added to
    ``held`` (for the caller to give back)."""
    _declared_length(request, cap)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout_at(deadline):
            async for chunk in request.stream():
                size += len(chunk)
                if size > cap:
                    raise _Refused(_too_large(cap))
                if not bodies.take(len(chunk)):
                    raise _Refused(problem("busy", "the server holds as many request bodies "
                                           f"as it may ({bodies.cap} bytes): try again later",
                                           {"Retry-After": "1", "Connection": "close"}))
                held.append(len(chunk))
                chunks.append(chunk)
    except TimeoutError:
        raise _Refused(problem("late-request", "the request body did not arrive within the "
                               f"server's time bound of {bound:g} s",
                               {"Connection": "close"})) from None
    return b"".join(chunks)


# --- the access log and the answers to faults ---------------------------------------------


class AccessLog:
    """One line per request on ``stream``: method, path, status, verdict (``-`` when there
    is none; ``cut`` for an audit's answer that was cut short), milliseconds. Never the
    query (it may hold task parameters) nor the body.

    It is the outermost layer, so that every request has its line, a CORS preflight
    included; :class:`Faults`, inside it, answers what the handlers refuse.
    """

    def __init__(self, app: ASGIApp, stream: IO[str]) -> None:
        self.app = app
        self.stream = stream
        self.lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        scope["ioa.arrived"] = loop.time()
        scope.setdefault("state", {})
        status: list[int] = []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.write(scope, status[0] if status else None,
                       scope["state"].get("verdict"), loop.time() - scope["ioa.arrived"])

    def write(self, scope: Scope, status: int | None, verdict: str | None,
              elapsed: float) -> None:
        raw = scope.get("raw_path") or scope["path"].encode()
        path = _printable(raw.decode("latin-1").partition("?")[0])
        line = (f"{_printable(scope['method'])} {path} {status if status else '-'} "
                f"{verdict or '-'} {elapsed * 1000:.1f} ms\n")
        with self.lock:
            try:
                self.stream.write(line)
                self.stream.flush()
            except OSError:
                pass  # a log that cannot be written does not fail the request


def _printable(text: str) -> str:
    # The path is the client's: no control character of it reaches the log.
    return "".join(c if c.isprintable() and c != " " else f"%{ord(c):02X}" for c in text)


class Faults:
    """What the handlers refuse (:class:`_Refused`) answered, and what escapes them (a bug:
    500, its traceback on stderr), as problem details; a request whose head the service
    refuses (:func:`_single_fields`) is refused here. It sits inside the CORS layer, so that
    a browser application on a named origin reads these answers too.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started: list[bool] = []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(True)
            await send(message)

        try:
            _single_fields(scope)
            await self.app(scope, receive, sending)
        except _Refused as refused:
            if not started:
                await refused.response(scope, receive, sending)
        except ClientDisconnect:
            pass  # nobody to answer; the access line says so
        except asyncio.CancelledError:
            # uvicorn cancels what is still running past --shutdown-timeout: the request is
            # answered (its check's worker is killed), and the request ends here.
            if not started:
                await problem("stopping", "the server is stopping: try again later",
                              {"Retry-After": "1", "Connection": "close"})(scope, receive,
                                                                            sending)
        except Exception:
            # The trace may quote a request's text (an exception's message): shown, never
            # obeyed by the terminal or the log viewer reading it.
            print("ioa-check serve: internal error (a bug; please report it with this trace):\n"
                  + visible_lines(traceback.format_exc()), file=sys.stderr, end="")
            if not started:
                await problem("500", "internal error")(scope, receive, sending)


class NamedOrigins(CORSMiddleware):
    """Starlette's CORS, for the origins the operator names (``--cors-origin``): a browser
    application there may call every route and read every answer, error answers included
    (``Retry-After`` is exposed). A preflight it refuses is answered as problem details, with
    no CORS header, so the browser refuses the call."""

    def __init__(self, app: ASGIApp, origins: Sequence[str]) -> None:
        super().__init__(app, allow_origins=list(origins), allow_methods=["GET", "POST"],
                         allow_headers=["Content-Type"], expose_headers=["Retry-After"],
                         max_age=600)

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code == 200:
            return response
        refused = bytes(response.body).decode().removeprefix("Disallowed CORS ")
        return problem("cors-refused", f"the CORS preflight is refused ({refused} not "
                                       "allowed): this service admits the origins its "
                                       "--cors-origin options name, the methods GET and POST, "
                                       "and the request header Content-Type",
                       {"Vary": "Origin"})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    allowed = dict(exc.headers or {})
    messages = {404: f"no route {request.url.path!r} (see /openapi.json)",
                405: f"{request.method} is not allowed here"}
    return problem(str(exc.status_code), messages.get(exc.status_code, exc.detail), allowed)


# --- what the service says of itself ------------------------------------------------------


def profile_document(checker: Checker) -> dict[str, Any]:
    """``GET /v1/profile``: the profile, the 12.2 extension fragment, the offered artifacts."""
    profile = checker.profile
    pairs = sorted(profile.accepted)
    return {
        "id": profile.id,
        "revision": profile.revision,
        "accepted": [{"ontologyId": o, "ontologyVersion": v} for o, v in pairs],
        # Draft 12.2, as ioa_semantic.a2a.profile_extension builds it (parallel lists).
        "extension": {"capabilities": {"extensions": [{
            "uri": EXTENSION_URI, "required": False,
            "params": {"ontologyIds": [o for o, _ in pairs],
                       "ontologyVersions": [v for _, v in pairs]}}]}},
        # What the page warns of: the offered artifacts' validity limits.
        "artifacts": [{"artifactId": a.id or None, "revision": a.revision or None,
                       **a.limits()} for a in checker.artifacts],
        "version": __version__,
    }


_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.S)


def _shareable(url: str) -> bool:
    """Whether an offered URL may be shown to whoever opens the page: not one that carries
    credentials (user information) or a query (a signed URL's token, say). One that does is
    left out: its reasons' fix is the receiver's only where a retry remedy says so."""
    parts = urlsplit(url)
    return not (parts.username or parts.password or parts.query or parts.fragment
                or "@" in parts.netloc)


def page(profile: dict[str, Any], limits: ServiceLimits,
         offered: Sequence[str] = ()) -> tuple[bytes, str]:
    """The page at ``/`` with what it shows of the service filled in, and the Content
    Security Policy that lets exactly its own inline script and style run (and fetch only
    from this server). ``offered``: the URLs of the artifacts the service offers (--alignment)."""
    text = _resources.read_text("web", "index.html")
    # The fixes as the text report gives them (fix_for): receiverFixes for a reason about a
    # URL the receiver names itself (one it offers; or the answer has a retry by the receiver
    # at that URL). A policy's refusal is told by the URL alone: its remedy, allow-retrieval,
    # is the receiver's whoever named the URL.
    # The sample envelope is package data (the draft's 6.2 example), sent inside the page:
    # what a person starts from names no file of the server.
    facts = {"profile": profile, "fixes": FIXES, "receiverFixes": RECEIVER_FIXES,
             "offeredUrls": [url for url in offered if _shareable(url)],
             "maxBodyBytes": limits.max_body_bytes,
             "sample": {"name": "draft 6.2 example",
                        "text": _resources.read_text("web", "sample-envelope.jsonld")}}
    # Inside <script type="application/json">: nothing of the data may close the element.
    encoded = json.dumps(facts, ensure_ascii=False).replace("<", "\\u003c").replace(
        ">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("__SERVICE_FACTS__", encoded, 1)
    hashes: dict[str, list[str]] = {"script": [], "style": []}
    for kind, content in _INLINE.findall(text):
        digest = hashlib.sha256(content.encode("utf-8")).digest()
        hashes[kind].append(f"'sha256-{base64.b64encode(digest).decode()}'")
    policy = ("default-src 'none'; "
              f"script-src {' '.join(hashes['script'])}; style-src {' '.join(hashes['style'])}; "
              "connect-src 'self'; img-src data:; form-action 'none'; base-uri 'none'; "
              "frame-ancestors 'none'")
    return text.encode("utf-8"), policy


# --- the application ----------------------------------------------------------------------


class _Application(Starlette):
    """Starlette, with what closes a request's connection in its scope (``ioa.abort``, see
    :func:`_cut`): only the server's own ``send`` knows it, and Starlette's outermost layer
    hands the routes another."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope["ioa.abort"] = _abort_of(send)
        await super().__call__(scope, receive, send)


def create_app(checker: Checker, wire: Wire, *, limits: ServiceLimits | None = None,
               log: IO[str] | None = None, build: Build | None = None,
               cors_origins: Sequence[str] = ()) -> Starlette:
    """The service of ``checker`` as a Starlette application (contract 7).

    ``build`` makes a Checker like ``checker`` in a worker process (picklable: a function at
    a module's top level, or a partial of one); with it, checks run in ``limits.threads``
    worker processes that are killed at the time bound (:mod:`.workers`); without it, on as
    many threads of this process. Audits run on ``checker``, on threads. ``log`` receives
    the access log (default: stderr). ``cors_origins``: the origins whose browser
    applications may call the service (CORS; none by default: no CORS header). The workers
    start with the application's lifespan, and are killed when it ends.
    """
    service = Service(checker, wire, limits or ServiceLimits(), build)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await service.checks.start()
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, service.close)

    routes = [
        Route("/", service.index, methods=["GET"]),
        Route("/healthz", service.healthz, methods=["GET"]),
        Route("/openapi.json", service.openapi_json, methods=["GET"]),
        Route("/docs", service.api_docs, methods=["GET"]),
        Route("/docs/{asset}", service.api_asset, methods=["GET"]),
        Route("/v1/profile", service.profile_info, methods=["GET"]),
        Route("/v1/check", service.check, methods=["POST"]),
        Route("/v1/audit", service.audit, methods=["POST"]),
        Route("/v1/impact", service.impact, methods=["POST"]),
    ]
    app = _Application(routes=routes, lifespan=lifespan,
                       exception_handlers={HTTPException: _http_error})
    # A path the service does not serve is a 404 problem, "/v1/check/" too: Starlette's
    # answer to a trailing slash is a redirect to an absolute URL it builds from the Host
    # header (a client's word, which a cache in front would keep), which the OpenAPI
    # document does not list and which is no problem document.
    app.router.redirect_slashes = False
    # From the inside out: faults answered, then CORS (so that it sees those answers), then
    # the access log (so that a preflight has its line too).
    app.add_middleware(Faults)
    if cors_origins:
        app.add_middleware(NamedOrigins, origins=cors_origins)
    app.add_middleware(AccessLog, stream=log or sys.stderr)
    app.state.service = service
    return app
