"""``ioa-check trace serve``: receive OTLP/HTTP traces live and judge them into a store.

The main command line hands a ``trace`` command line whose first word is ``serve`` here (a
trace in a folder of that name is given as ``./serve``). What the service does is
:mod:`ioa_semantic.service.traces`'s; this module reads the command line, opens the spool,
listens, and maps what fails to an exit status.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from .._status import ExitStatus
from .parsing import _non_negative_seconds, _Parser, _positive, _positive_seconds, _size
from .serve import _bind, _port, _stopped, _url
from .trace import DEFAULT_MAX_MEMORY, DEFAULT_QUIET_PERIOD, extra_missing

DEFAULT_JUDGE_EVERY = 5.0
# As service/traces.py's (spelled here so that the parser imports nothing of the service;
# tests/test_trace_serve.py holds them equal).
DEFAULT_RETAIN = 300.0


def wants(argv: Sequence[str]) -> bool:
    """Whether a ``trace`` command line (after the word ``trace``) is this one."""
    return bool(argv) and argv[0] == "serve"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ioa-check trace serve",
        description="Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, protobuf "
                    "or JSON, gzip or not), keep each acknowledged request in a spool on "
                    "disk, and judge the runs into a trace store as they complete.",
        epilog="exit status: 0 stopped (SIGTERM or SIGINT), 2 usage error (a spool or store "
               "folder that is not one), 74 cannot listen")
    parser.add_argument("--spool", required=True, metavar="DIR",
                        help="where acknowledged requests are kept (made if absent; a folder "
                             "that holds other files is refused)")
    parser.add_argument("--store", required=True, metavar="DIR|URL",
                        help="the trace store the runs are judged into (as trace --store)")
    parser.add_argument("--store-key", metavar="FILE",
                        help="the key of a private store on a SPARQL server (as trace)")
    for flag, what in (("--manifests", "DIR"), ("--bindings", "FILE"),
                       ("--profile", "NAME|PATH")):
        parser.add_argument(flag, metavar=what, help="as for ioa-check trace")
    parser.add_argument("--registrations", action="append", default=[], metavar="PATH",
                        help="as for ioa-check trace (repeatable)")
    parser.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    parser.add_argument("--port", type=_port, default=4318,
                        help="default: 4318, OTLP/HTTP's (0: any free port)")
    parser.add_argument("--max-memory", type=_size, default=DEFAULT_MAX_MEMORY, metavar="SIZE",
                        help="the judge's --max-memory, as for ioa-check trace (default: "
                             "512MiB); a round reads what came since the last (and the spans "
                             "of the runs that wait to complete), and what it cannot judge "
                             "within the bound stays in the spool, with the reason "
                             "trace.memory-bound in the service's log")
    parser.add_argument("--quiet-period", type=_positive_seconds, default=DEFAULT_QUIET_PERIOD,
                        metavar="SECONDS",
                        help="a trace whose root span is still open is judged once none of "
                             "its spans is newer than this (default: "
                             f"{DEFAULT_QUIET_PERIOD:g})")
    parser.add_argument("--retain", type=_non_negative_seconds, default=DEFAULT_RETAIN,
                        metavar="SECONDS",
                        help="how long judged spans stay in the spool after the last span of "
                             "their segment came, so that a late span joins its run (judged "
                             "again whole); a span later still is told in the log as late and "
                             f"not recorded (default: {DEFAULT_RETAIN:g})")
    parser.add_argument("--judge-every", type=_positive_seconds, default=DEFAULT_JUDGE_EVERY,
                        metavar="SECONDS",
                        help="how often the spool is judged while it grows or runs wait "
                             f"(default: {DEFAULT_JUDGE_EVERY:g})")
    parser.add_argument("--max-spool-bytes", type=_positive, default=1 << 30, metavar="N",
                        help="past this, requests are refused with 503 and Retry-After "
                             "(default: 1 GiB)")
    parser.add_argument("--max-body-bytes", type=_positive, default=16 << 20, metavar="N",
                        help="the largest request body, decompressed (default: 16 MiB)")
    parser.add_argument("--body-timeout", type=_positive_seconds, default=30.0,
                        metavar="SECONDS",
                        help="a request whose body has not arrived within this is answered "
                             "408 (default: 30)")
    parser.add_argument("--max-buffered-bytes", type=_positive, default=256 << 20, metavar="N",
                        help="bytes all requests may hold at once, their bodies and what "
                             "decompressing and parsing them will hold (estimated first); past "
                             "it, 503 with Retry-After, and 413 for a request that alone would "
                             "pass it (default: 256 MiB)")
    parser.add_argument("--header-timeout", type=_positive_seconds, default=10.0,
                        metavar="SECONDS", help="as for ioa-check serve (default: 10)")
    parser.add_argument("--shutdown-timeout", type=_positive_seconds, default=10.0,
                        metavar="SECONDS",
                        help="at SIGTERM, how long requests in flight and a judging round "
                             "are given before they are stopped (default: 10)")
    return parser


def run(argv: Sequence[str]) -> int:
    opts = build_parser().parse_args(list(argv)[1:])
    if extra_missing() or _extra_unimportable():
        return ExitStatus.USAGE
    try:
        import uvicorn  # noqa: F401 (the serve extra)
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: F401
    except ModuleNotFoundError as exc:
        print(f"ioa-check trace serve: needs the serve and otlp extras, and {exc.name} is "
              "not installed: pip install 'ioa-semantic[trace,serve,otlp]'", file=sys.stderr)
        return ExitStatus.USAGE
    from ..trace.spool import Spool

    spool = Spool(opts.spool, opts.max_spool_bytes)  # a SpoolError is main's to say (2)
    try:
        return _serve(opts, spool)
    finally:
        spool.close()


def _extra_unimportable() -> bool:
    """Whether the trace extra, found installed, fails to import (said on stderr): a service
    is started once and its judge runs round after round, so a broken install is said here,
    before anything listens, not by every round. Asked of a process of its own, as the judge
    would import it: the service never uses the extra itself, and would hold it (some 30
    MiB) to its end."""
    import subprocess

    script = ("import sys\nfrom ioa_semantic.cli.trace import extra_unimportable\n"
              "sys.exit(1 if extra_unimportable() else 0)\n")
    return subprocess.run([sys.executable, "-c", script], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, check=False).returncode != 0


def _declarations(opts: argparse.Namespace) -> list[str]:
    """The declaration options for the judge, as absolute paths (it runs elsewhere)."""
    out: list[str] = []
    for flag, value in (("--manifests", opts.manifests), ("--bindings", opts.bindings)):
        if value:
            out += [flag, os.path.abspath(value)]
    if opts.profile:
        given = opts.profile
        out += ["--profile", os.path.abspath(given) if os.path.exists(given) else given]
    for path in opts.registrations:
        out += ["--registrations", os.path.abspath(path)]
    if opts.store_key:
        out += ["--store-key", os.path.abspath(opts.store_key)]
    return out


def _pages(store: str, judge: Any, retry_after: int) -> Any:
    """The store's pages (GET /runs, /runs/{run}), drawn by the trace reporters."""
    from io import StringIO

    from ..reporters.trace import html_run
    from ..reporters.trace_html import page, runs_page
    from ..service.runs import Renderers, RunPages
    from ..trace.browse import Reader, Rebuilt

    def runs(rows: list[dict[str, Any]], number: int, previous: str | None,
             following: str | None) -> str:
        out = StringIO()
        runs_page(rows, number, previous, following, out)
        return out.getvalue()

    def run(stored: Rebuilt) -> str:
        out = StringIO()
        page([html_run(stored.audit, None, stored.disclose, stored.note)], out)
        return out.getvalue()

    reader = Reader(os.path.abspath(store), quiet=judge.quiet)
    return RunPages(reader, Renderers(runs, run), retry_after=retry_after)


def _shown(store: str) -> str:
    """The store as the log names it: a URL without its credentials."""
    from ..trace.store import is_remote

    if not is_remote(store):
        return store
    from ..trace.remote import shown

    return shown(store)


def _serve(opts: argparse.Namespace, spool: Any) -> int:
    import uvicorn

    from .._exceptions import EnvironmentFailure
    from ..service.protocol import ServeConfig
    from ..service.traces import Judge, create_app, judge_command

    try:
        sock = _bind(opts.host, opts.port)
    except OSError as exc:
        raise EnvironmentFailure(f"cannot listen on {opts.host}:{opts.port}: "
                                 f"{exc.strerror or exc}") from None
    from ..trace.store import is_remote

    where = opts.store if is_remote(opts.store) else os.path.abspath(opts.store)
    command = judge_command(where, opts.quiet_period, _declarations(opts),
                            opts.max_body_bytes, opts.max_memory)
    judge = Judge(command, spool, opts.judge_every, sys.stderr, opts.shutdown_timeout,
                  opts.retain)
    app = create_app(spool, judge, max_body=opts.max_body_bytes,
                     retry_after=math.ceil(opts.judge_every), body_timeout=opts.body_timeout,
                     max_buffered=opts.max_buffered_bytes,
                     # The pages open an embedded store read-only; a SPARQL server's URL has no
                     # folder to open.
                     pages=None if is_remote(opts.store) else _pages(
                         opts.store, judge, math.ceil(opts.judge_every)))
    server = uvicorn.Server(ServeConfig(
        app, log_level="warning", access_log=False, lifespan="off", server_header=False,
        header_timeout=opts.header_timeout,
        timeout_graceful_shutdown=math.ceil(opts.shutdown_timeout)))
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stopped)
    print(f"ioa-check trace serve: listening on {_url(sock)}/v1/traces (spool {opts.spool}, "
          f"store {_shown(opts.store)}"
          f"{'' if is_remote(opts.store) else f'; the judged runs at {_url(sock)}/runs'}; "
          "no authentication)", file=sys.stderr, flush=True)
    judge.start()
    try:
        server.run(sockets=[sock])
    finally:
        judge.stop()
        sock.close()
    print("ioa-check trace serve: stopped", file=sys.stderr, flush=True)
    return ExitStatus.COMPATIBLE
