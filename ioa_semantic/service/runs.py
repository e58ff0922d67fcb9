"""``trace serve``'s pages for people: the judged runs, and each run's HTML report.

``GET /runs`` lists the runs of the store, the latest judged first, :data:`PER_PAGE` a page
(``?page=N``), each with its current verdict and a link to its page; as JSON with
``?format=json`` or an ``Accept`` that asks for JSON and not HTML. ``GET /runs/{run}`` is
that run's report, the page ``trace --format html`` draws, rebuilt from the store
(:mod:`..trace.browse`): its calls from its stored record, its current verdict's uses and
reasons. A run is named as the store names it (a private store's reference ``run-…``); a
name the store does not hold is 404, whatever it looks like (``..``, a path, an id the
private store only holds keyed).

The store is read read-only while the judge writes it (:class:`~..trace.browse.Reader`). Each
read and its rendering run in a worker thread, at most :data:`MAX_READS` at once (more is 503
with ``Retry-After``), and a request waits at most ``read_timeout`` seconds for it (then 503;
the thread finishes on its own and frees its place). How a page is drawn is handed in by the
command line (:class:`Renderers`): the service imports no reporter.

The pages run no script and fetch nothing: every answer says so in its
``Content-Security-Policy``, and ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..trace.browse import BrowseError, Reader, Rebuilt, Summary, rebuilt
from .problems import PROBLEM_MEDIA_TYPE
from .problems import body as problem_body

PER_PAGE = 50
MAX_PAGE = 100_000
MAX_READS = 2
READ_TIMEOUT = 30.0
MAX_QUERY = 2048  # bytes of a query string; these pages take two short parameters
MAX_NAME = 1024  # characters of a run's name in a path: no store names a run longer
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_T = TypeVar("_T")


class Renderers(NamedTuple):
    """How the pages are drawn (the reporters', given by the command line)."""

    runs: Callable[[list[dict[str, Any]], int, str | None, str | None], str]
    run: Callable[[Rebuilt], str]


class _Full(Exception):
    """As many store reads run as may."""


class RunPages:
    """The routes of one store's pages."""

    def __init__(self, reader: Reader, render: Renderers, *, per_page: int = PER_PAGE,
                 read_timeout: float = READ_TIMEOUT, max_reads: int = MAX_READS,
                 retry_after: int = 5) -> None:
        self.reader = reader
        self.render = render
        self.per_page = per_page
        self.read_timeout = read_timeout
        self.retry_after = retry_after
        self._reads = threading.BoundedSemaphore(max_reads)

    async def _read(self, work: Callable[[], _T]) -> _T | Response:
        """``work`` (a read of the store) off the event loop, or the 503 that says why the
        store was not read."""
        try:
            return await self._off_loop(work)
        except _Full:
            return self._unavailable("the store is being read for as many pages as may be")
        except TimeoutError:
            return self._unavailable(f"the store was not read within {self.read_timeout:g} s")
        except BrowseError as exc:
            return self._unavailable(str(exc))

    async def _off_loop(self, work: Callable[[], _T]) -> _T:
        """``work`` in a worker thread, holding one of the reads' places until it ends."""
        if not self._reads.acquire(blocking=False):
            raise _Full

        def held() -> _T:
            try:
                return work()
            finally:
                self._reads.release()

        try:
            future = asyncio.get_running_loop().run_in_executor(None, held)
        except BaseException:
            self._reads.release()
            raise
        # Shielded: a request that stops waiting leaves the read to end on its own (and free
        # its place), never a read cancelled before it began, whose place nothing would free.
        async with asyncio.timeout(self.read_timeout):
            return await asyncio.shield(future)

    def _unavailable(self, why: str) -> Response:
        return _text(503, f"{why}: retry later", {"Retry-After": str(self.retry_after)})

    async def runs(self, request: Request) -> Response:
        refused = _query_refused(request, ("page", "format"))
        if refused is not None:
            return refused
        raw = request.query_params.get("page", "1")
        if not raw.isdigit() or len(raw) > 6 or not 1 <= int(raw) <= MAX_PAGE:
            return _text(400, f"page must be a whole number from 1 to {MAX_PAGE}",
                         kind="bad-query")
        number = int(raw)
        wanted = request.query_params.get("format")
        if wanted not in (None, "html", "json"):
            return _text(400, "format must be html or json", kind="bad-query")
        as_json = wanted == "json" or (wanted is None and _asks_json(request))
        base = str(request.scope.get("root_path", "")) + "/runs"

        def href(n: int | None) -> str | None:
            if n is None:
                return None
            return base + (f"?page={n}" if not as_json else f"?page={n}&format=json")

        def read() -> tuple[list[dict[str, Any]], str | None, str | None, str | None]:
            summaries, more = self.reader.latest(self.per_page, (number - 1) * self.per_page)
            rows = [_row(s, base) for s in summaries]
            previous = href(number - 1 if number > 1 else None)
            following = href(number + 1 if more else None)
            page = None if as_json else self.render.runs(rows, number, previous, following)
            return rows, previous, following, page

        answer = await self._read(read)
        if isinstance(answer, Response):
            return answer
        rows, previous, following, page = answer
        if page is None:
            return JSONResponse({"runs": rows, "page": number, "previous": previous,
                                 "next": following}, headers=HEADERS)
        return HTMLResponse(page, headers=HEADERS)

    async def run(self, request: Request) -> Response:
        refused = _query_refused(request, ("format",))
        if refused is not None:
            return refused
        if request.query_params.get("format") not in (None, "html"):
            return _text(400, "a run's page is HTML only (format=html); /runs?format=json "
                              "lists the runs", kind="bad-query")
        name = request.path_params["run"]
        if len(name) > MAX_NAME or not name.isprintable():
            return _text(404, "no such run in the store")

        def read() -> str | None:
            stored = self.reader.run(name)
            return None if stored is None else self.render.run(rebuilt(stored))

        page = await self._read(read)
        if isinstance(page, Response):
            return page
        if page is None:
            return _text(404, "no such run in the store")
        return HTMLResponse(page, headers=HEADERS)


def _row(summary: Summary, base: str) -> dict[str, Any]:
    return {"run": summary.run, "verdict": summary.verdict, "sequence": summary.sequence,
            "verdicts": summary.verdicts, "auditedAt": summary.audited_at,
            "judgedBy": summary.judged_by, "href": f"{base}/{quote(summary.run, safe='')}"}


def _asks_json(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return "application/json" in accept and "text/html" not in accept


def _query_refused(request: Request, names: tuple[str, ...]) -> Response | None:
    """The answer to a query the page does not take: too long (414), or naming a parameter
    it does not take or one twice (400, as ``ioa-check serve`` refuses them)."""
    query = request.scope.get("query_string", b"")
    if len(query) > MAX_QUERY:
        return _text(414, f"the query string is longer than {MAX_QUERY} bytes")
    given = [name for name, _ in request.query_params.multi_items()]
    for name in given:
        if name not in names:
            return _text(400, f"unknown query parameter {name!r} (this page takes "
                              f"{', '.join(names)})", kind="bad-query")
        if given.count(name) > 1:
            return _text(400, f"the query parameter {name!r} is given more than once",
                         kind="bad-query")
    return None


def _text(status: int, message: str, headers: dict[str, str] | None = None,
          kind: str | None = None) -> Response:
    """An error as ``ioa-check serve`` answers one: problem details, ``error`` the message."""
    return error(status, message, {**HEADERS, **(headers or {})}, kind)


def error(status: int, message: str, headers: dict[str, str] | None = None,
          kind: str | None = None) -> Response:
    """An error answer of the service's own (not OTLP's): RFC 9457 problem details in JSON,
    whose ``error`` member is the message (:mod:`.problems`)."""
    return JSONResponse(problem_body(kind or str(status), message), status_code=status,
                        headers=headers, media_type=PROBLEM_MEDIA_TYPE)
