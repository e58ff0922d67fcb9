"""``ioa-check serve --profile NAME|PATH``: the validation service over HTTP (contract 7).

One Checker is built at start, as ``ioa-check`` builds it for a check; the service answers
what the command line would print. Starlette and uvicorn are the serve extra, imported only
when the command runs (a missing one is said, exit 2). The address bound is said on stderr
(``listening on http://HOST:PORT``) before the first request is served, so that a caller
that asked for ``--port 0`` reads the port there.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from .._checker import ENGINES, Checker, DecisionRecorder
from .._exceptions import ConfigurationError, EnvironmentFailure
from .._runtime import paused as collector_paused
from .._status import ExitStatus
from ..reporters.check import REPORTERS
from .parsing import _instant, _parameter, _positive, _size, add_checker_arguments, limits_of

if TYPE_CHECKING:
    import socket

    from starlette.applications import Starlette

    from ..impact import Impact
    from ..service.limits import ServiceLimits

DESCRIPTION = ("Serve checks over HTTP (contract 7): POST /v1/check (one envelope), POST "
               "/v1/audit (JSON Lines of registrations), POST /v1/impact (a decision log and a "
               "change, judged as ioa-check impact judges them), GET /v1/profile, GET /healthz, "
               "GET /openapi.json (OpenAPI 3.1), an interactive page of it at /docs, and a "
               "page for people at /. Every error answer is RFC 9457 problem details "
               "(application/problem+json), with the error member of old. No CORS header "
               "unless --cors-origin names origins. Binds to loopback by default; it has no "
               "authentication of its own.")
EPILOG = ("exit status: 0 stopped (SIGTERM or SIGINT: requests in flight are answered if they "
          "finish within --shutdown-timeout, then whatever still runs is stopped), 2 usage or "
          "configuration error, or the serve extra is missing, 74 the address "
          "cannot be bound")
_EXTRA = "pip install 'ioa-semantic[serve]'"
# The command line of a service run in worker processes, for each worker to build its own
# Checker and application from (see worker_app).
_WORKER_ARGV = "IOA_CHECK_SERVE_ARGV"


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number


def _port(value: str) -> int:
    if not value.isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port (0 to 65535; 0: any free one)")
    return int(value)


def _origin(value: str) -> str:
    """An origin as a browser sends it (RFC 6454: scheme, host, and a port other than the
    scheme's default), from what the operator wrote."""
    parts = urllib.parse.urlsplit(value.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (parts.scheme not in ("http", "https") or not parts.hostname or port == -1
            or parts.username is not None or parts.password is not None
            or parts.path not in ("", "/") or parts.query or parts.fragment):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an origin: SCHEME://HOST[:PORT], the scheme http or https, no "
            "path (any origin, '*', is not offered: name each one)")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..service.limits import ServiceLimits

    defaults = ServiceLimits()
    add_checker_arguments(parser, ENGINES, profile_required=True)
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default: 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=_port, default=8080,
                        help="the port to listen on (default: 8080; 0: a free one, said on "
                             "stderr)")
    parser.add_argument("--max-body-bytes", type=_positive, default=defaults.max_body_bytes,
                        metavar="N",
                        help="largest body of POST /v1/check, refused with 413 above it "
                             f"(default: {defaults.max_body_bytes}; an envelope over "
                             "--max-bytes but within it is checked: invalid, json.too-large)")
    parser.add_argument("--max-audit-bytes", type=_positive, default=defaults.max_audit_bytes,
                        metavar="N",
                        help=f"largest body of POST /v1/audit (default: {defaults.max_audit_bytes})")
    parser.add_argument("--max-impact-bytes", type=_positive,
                        default=defaults.max_impact_bytes, metavar="N",
                        help="largest body of POST /v1/impact, a decision log with its objects "
                             "and a change, held whole (default: "
                             f"{defaults.max_impact_bytes})")
    parser.add_argument("--timeout", type=_seconds, default=defaults.timeout, metavar="SECONDS",
                        help="time bound of a check, from its arrival to its answer: past it, "
                             f"503 (default: {defaults.timeout:g})")
    parser.add_argument("--audit-timeout", type=_seconds, default=defaults.audit_timeout,
                        metavar="SECONDS",
                        help=f"time bound of an audit (default: {defaults.audit_timeout:g})")
    parser.add_argument("--threads", type=_positive, default=defaults.threads, metavar="N",
                        help="checks run at once, each in a worker process of its own that "
                             "is killed and replaced when its check passes --timeout "
                             f"(default: {defaults.threads})")
    parser.add_argument("--max-buffered-bytes", type=_positive,
                        default=defaults.max_buffered_bytes, metavar="N",
                        help="check bodies held at once, all requests together: a body that "
                             "would pass it is refused with 503 (default: "
                             f"{defaults.max_buffered_bytes})")
    parser.add_argument("--header-timeout", type=_seconds, default=defaults.header_timeout,
                        metavar="SECONDS",
                        help="time to read a request's head: past it, 408 and the connection "
                             f"is closed (default: {defaults.header_timeout:g})")
    parser.add_argument("--shutdown-timeout", type=_seconds, default=5.0, metavar="SECONDS",
                        help="on SIGTERM or SIGINT, how long requests in flight may take to "
                             "be answered before whatever runs is stopped (default: 5)")
    parser.add_argument("--audits", type=_positive, default=defaults.audits, metavar="N",
                        help="audits run at once; one more is refused with 503 (default: "
                             f"{defaults.audits})")
    parser.add_argument("--cors-origin", type=_origin, action="append", default=[],
                        metavar="ORIGIN",
                        help="an origin (SCHEME://HOST[:PORT]) whose browser applications may "
                             "call the service and read its answers (CORS; repeatable; "
                             "default: none, and no CORS header is sent)")
    parser.add_argument("--log", metavar="PATH",
                        help="append each check's decision to this decision log (JSON Lines; "
                             "the envelopes kept in PATH.objects), for ioa-check impact; every "
                             "worker appends to it")
    parser.add_argument("--log-max-bytes", type=_size, default="64MiB", metavar="SIZE",
                        help="rotate the decision log past this size (default 64MiB)")
    parser.add_argument("--workers", type=_positive, default=1, metavar="N",
                        help="worker processes, each with its own Checker, --threads and "
                             "--audits, sharing the socket (default: 1, this process)")


def _refusing(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A command-line option type as the service calls it: what it refuses, as ValueError
    with the sentence the command line prints."""

    def parse_value(value: str) -> Any:
        try:
            return parse(value)
        except argparse.ArgumentTypeError as exc:
            raise ValueError(str(exc)) from None

    return parse_value


def build_app(checker: Checker, limits: ServiceLimits | None = None,
              argv: list[str] | None = None, cors_origins: Sequence[str] = ()) -> Starlette:
    """The service of ``checker``, answering in the command line's own words (its JSON
    reporters; its --param and --at parsers). With ``argv`` (the options ``checker`` was
    built from, as :func:`_argv_of` gives them), its checks run in worker processes, each
    building its own Checker from them; without, on threads of this process.
    ``cors_origins``: the origins CORS admits (``--cors-origin``)."""
    from ..service.app import Wire, create_app

    instant: Callable[[str], datetime] = _refusing(_instant)
    from ..reporters.audit import AUDIT_LINES, AUDIT_REPORTERS  # the service's, not a check's

    wire = Wire(decisions=REPORTERS["json"], audit=AUDIT_REPORTERS["json"],
                audit_line=AUDIT_LINES["json"], instant=instant,
                parameter=_refusing(_parameter), impact=_impact_lines)
    build = partial(_worker_checker, argv) if argv is not None else None
    return create_app(checker, wire, limits=limits, build=build, cors_origins=cors_origins)


def _impact_lines(impact: Impact, stream: IO[str]) -> None:
    """``/v1/impact``'s answer, as ``impact --format json`` prints it (the impact stage is
    imported by the first request that asks for one, as by ``check --log``)."""
    from ..reporters.impact import json_lines

    json_lines(impact, stream)


def _worker_checker(argv: list[str]) -> Checker:
    """A check worker's Checker, from the server's options (in the worker process)."""
    parser = argparse.ArgumentParser(prog="ioa-check serve")
    add_arguments(parser)
    return _checker(parser.parse_args(argv))


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (the first address the host resolves to)."""
    import socket

    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _checker(opts: argparse.Namespace) -> Checker:
    with collector_paused():  # see _runtime: what a Checker allocates lives on
        return Checker(opts.profile, capabilities=opts.capability, alignments=opts.alignment,
                       limits=limits_of(opts), allow_remote=opts.allow_remote,
                       engine=opts.engine, allow_private_addresses=opts.allow_private_addresses,
                       shape_timeout=opts.shape_timeout,
                       recorder=_recorder(opts))


def _recorder(opts: argparse.Namespace) -> DecisionRecorder | None:
    """The decision log ``--log`` names (each worker process opens its own), or None."""
    if not opts.log:
        return None
    from ..impact.log import DecisionLog

    return DecisionLog(opts.log, max_bytes=opts.log_max_bytes)


def _limits(opts: argparse.Namespace) -> ServiceLimits:
    from ..service.limits import ServiceLimits

    return ServiceLimits(max_body_bytes=opts.max_body_bytes,
                         max_audit_bytes=opts.max_audit_bytes, timeout=opts.timeout,
                         audit_timeout=opts.audit_timeout, threads=opts.threads,
                         audits=opts.audits, max_buffered_bytes=opts.max_buffered_bytes,
                         header_timeout=opts.header_timeout,
                         max_impact_bytes=opts.max_impact_bytes)


# The options a worker is given again, as parsed (paths made absolute: see _argv_of).
_VALUED = ("engine", "max_bytes", "max_depth", "max_values", "max_contexts", "max_terms",
           "max_body_bytes", "max_audit_bytes", "timeout", "audit_timeout", "threads", "audits",
           "max_buffered_bytes", "header_timeout", "shutdown_timeout", "shape_timeout",
           "max_impact_bytes")


def _argv_of(opts: argparse.Namespace, absolute: bool = True) -> list[str]:
    """The service's options as a command line for its workers: every value as parsed, and
    every path absolute (a worker need not start in this process's folder), or, for the
    check workers (which do, and whose answers name the paths as they were given), as is."""
    made = _absolute if absolute else str
    argv = ["--profile", made(opts.profile)]
    for path in opts.capability:
        argv += ["--capability", os.path.abspath(path) if absolute else path]
    for item in opts.alignment:
        argv += ["--alignment", made(item)]
    for origin in opts.allow_remote:
        argv += ["--allow-remote", origin]
    for origin in opts.cors_origin:
        argv += ["--cors-origin", origin]
    if opts.allow_private_addresses:
        argv.append("--allow-private-addresses")
    if opts.log:
        # Absolute whatever the worker's folder: every worker appends to the one log.
        argv += ["--log", os.path.abspath(opts.log), "--log-max-bytes", str(opts.log_max_bytes)]
    for name in _VALUED:
        argv += ["--" + name.replace("_", "-"), str(getattr(opts, name))]
    return argv


def _absolute(value: str) -> str:
    """A path made absolute; a shipped name, or a URL, as it is."""
    return os.path.abspath(value) if os.path.exists(value) else value


def worker_app() -> Starlette:
    """A worker process's application (``--workers N``), built from the command line the
    parent put in the environment (the parent built a Checker from it already: it holds)."""
    parser = argparse.ArgumentParser(prog="ioa-check serve")
    add_arguments(parser)
    argv = json.loads(os.environ[_WORKER_ARGV])
    opts = parser.parse_args(argv)
    return build_app(_checker(opts), _limits(opts), argv, opts.cors_origin)


def _stopped(signum: int, frame: Any) -> None:
    """What SIGTERM and SIGINT do once uvicorn has shut down: nothing more (uvicorn sends a
    captured signal again after its graceful shutdown, which would end the process with the
    signal's status instead of 0)."""


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        import uvicorn

        from ..service.app import create_app  # noqa: F401 (Starlette is there, or not)
    except ModuleNotFoundError as exc:
        raise ConfigurationError(f"serve needs the serve extra, and {exc.name} is not "
                                 f"installed: {_EXTRA}") from exc
    # A ConfigurationError (an unavailable remote profile included: no service) is the usage
    # status, said by cli.main.
    checker = _checker(opts)
    limits = _limits(opts)
    import socket  # here, not with the command line: a check imports every command's module

    try:
        sock = _bind(opts.host, opts.port)
    except socket.gaierror as exc:
        raise ConfigurationError(f"--host {opts.host}: {exc.strerror}") from exc
    except OSError as exc:
        raise EnvironmentFailure(f"cannot listen on {opts.host}:{opts.port}: "
                                 f"{exc.strerror or exc}") from exc
    from ..service.protocol import ServeConfig

    options: dict[str, Any] = {
        "log_level": "warning", "access_log": False, "lifespan": "on", "server_header": False,
        "header_timeout": limits.header_timeout,
        # Requests in flight at SIGTERM are answered if they are within this; then what
        # still runs is stopped (the check workers are killed).
        "timeout_graceful_shutdown": math.ceil(opts.shutdown_timeout)}
    workers = f"; {opts.workers} workers" if opts.workers > 1 else ""
    profile = checker.profile
    started = f"ioa-check serve: listening on {_url(sock)} (profile {profile.id} revision " \
              f"{profile.revision}{workers}; no authentication)"
    try:
        if opts.workers > 1:
            # Each worker builds its own Checker from the same command line (a spawned process
            # shares nothing with this one); this process only supervises them, and sends
            # them SIGTERM (each answers what it has in flight) when it gets SIGTERM.
            from uvicorn.supervisors import Multiprocess

            del checker
            os.environ[_WORKER_ARGV] = json.dumps(_argv_of(opts))
            config = ServeConfig(f"{__name__}:worker_app", factory=True,
                                 workers=opts.workers, **options)
            print(started, file=sys.stderr, flush=True)
            Multiprocess(config, sockets=[sock]).run()
        else:
            argv = _argv_of(opts, absolute=False)
            server = uvicorn.Server(ServeConfig(build_app(checker, limits, argv,
                                                          opts.cors_origin), **options))
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, _stopped)
            print(started, file=sys.stderr, flush=True)
            server.run(sockets=[sock])
            if not server.started:
                print("ioa-check: the service did not start (see above)", file=sys.stderr)
                return ExitStatus.INTERNAL
    finally:
        sock.close()
    print("ioa-check serve: stopped", file=sys.stderr, flush=True)
    if _threads_left(deadline=time.monotonic() + 1.0):
        # An audit's thread still at work (a thread cannot be killed): the interpreter would
        # wait for it at exit, for as long as it runs, so the process ends here without it.
        sys.stdout.flush()
        os._exit(ExitStatus.COMPATIBLE)
    return ExitStatus.COMPATIBLE


def _threads_left(deadline: float) -> bool:
    """Whether a thread other than this one is still running at ``deadline``."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    return any(t.is_alive() and not t.daemon and t is not threading.current_thread()
               for t in threading.enumerate())
