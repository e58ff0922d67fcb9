"""The ``ioa-check`` command: a thin shell over :class:`~ioa_semantic.Checker`.

It parses arguments, builds one Checker, checks each envelope, hands the decisions to the
chosen reporter and returns the contract's exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import data as _resources
from .._checker import ENGINES, Checker
from .._codes import finding
from .._exceptions import ConfigurationError, ProfileError
from .._findings import Decision, ProfileRef, Verdict
from .._runtime import paused as collector_paused
from .._runtime import quick_exit
from .._status import ExitStatus
from .._version import __version__
from ..pipeline.intake import Limits
from ..reporters.audit import AUDIT_LINES, AUDIT_REPORTERS, with_progress
from ..reporters.check import REPORTERS
from ..sources.loader import ProfileUnavailable, read_artifact, read_profile, unknown_profile_terms
from .parsing import _instant, _parameter, _Parser, _positive

# The limits of one document, each an option of the check and audit commands (Limits' fields).
_LIMITS = (
    ("--max-bytes", "max_bytes", "size limit of one document in bytes (default: 1 MiB)"),
    ("--max-depth", "max_depth", "nesting depth limit of one document (default: 64)"),
    ("--max-values", "max_values",
     "limit of JSON values (members and array items) in one document (default: 16384)"),
    ("--max-contexts", "max_contexts",
     "limit of context objects in one document (default: 16)"),
    ("--max-terms", "max_terms",
     "limit of term definitions in one document's contexts (default: 1024)"),
)


def _add_limits(parser: argparse.ArgumentParser) -> None:
    defaults = Limits()
    for flag, field, help_text in _LIMITS:
        parser.add_argument(flag, type=_positive, default=getattr(defaults, field), dest=field,
                            help=help_text)


def _limits(opts: argparse.Namespace) -> Limits:
    return Limits(**{field: getattr(opts, field) for _, field, _ in _LIMITS})


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ioa-check",
        description="Judge SemanticProfile envelopes (draft-zhang-dmsc-ioa-semantic-interaction-03) "
                    "against a domain profile: compatible, incompatible, indeterminate or invalid.",
        epilog="also: ioa-check audit PATH... audits capability registrations; "
               "ioa-check lint FILE... validates profile and artifact files; "
               "ioa-check trace PATH... audits execution traces against agents' declarations. "
               "exit status: 0 compatible, 1 incompatible, 2 usage or configuration error, "
               "3 indeterminate, 4 invalid, 70 internal error, 74 the output cannot be written",
    )
    parser.add_argument("envelopes", nargs="*", metavar="ENVELOPE",
                        help="envelope file, or - for standard input")
    parser.add_argument("--profile", metavar="NAME|PATH",
                        help="installed profile name or profile file (Turtle)")
    parser.add_argument("--capability", action="append", default=[], metavar="FILE",
                        help="the receiver's own capability registration (repeatable)")
    parser.add_argument("--alignment", action="append", default=[], metavar="FILE|NAME",
                        help="an offered alignment artifact, by path or shipped name (repeatable)")
    parser.add_argument("--param", action="append", default=[], type=_parameter,
                        metavar="KEY=VALUE", help="task parameter (repeatable)")
    parser.add_argument("--at", type=_instant, metavar="TIMESTAMP",
                        help="evaluation instant, ISO-8601 with a UTC offset (default: now)")
    parser.add_argument("--allow-remote", action="append", default=[], metavar="ORIGIN",
                        help="allow remote retrieval from this origin, e.g. "
                             "https://contexts.example.org (repeatable; off by default)")
    parser.add_argument("--allow-private-addresses", action="store_true",
                        help="let allowed origins resolve to loopback or private addresses "
                             "(for services on your own network; weakens SSRF protection)")
    parser.add_argument("--format", choices=sorted(REPORTERS), default="text")
    parser.add_argument("--engine", choices=ENGINES, default="compiled",
                        help="compiled (default) or reference: pyld, the SHACL shapes in full and "
                             "the named SPARQL queries on every check; both decide the same")
    _add_limits(parser)
    parser.add_argument("--list", action="store_true",
                        help="list the shipped profiles and alignment artifacts, then exit")
    parser.add_argument("--version", action="version", version=f"ioa-check {__version__}")
    return parser


def _list() -> int:
    print("profiles:")
    for name in _resources.shipped_profiles():
        print(f"  {name}")
    print("alignment artifacts:")
    for name in _resources.shipped_alignments():
        print(f"  {name}")
    return ExitStatus.COMPATIBLE


def _read_envelope(name: str) -> bytes | Decision:
    try:
        if name == "-":
            return sys.stdin.buffer.read()
        with open(name, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return Decision(Verdict.INVALID, (finding(
            "json.unreadable", f"{name}: cannot be read: {exc.strerror}"),),
            profile=None, source=name)  # type: ignore[arg-type]


def lint(argv: Sequence[str]) -> int:
    """``ioa-check lint FILE...``: profiles (.ttl) and alignment artifacts (.json) on their own."""
    parser = _Parser(prog="ioa-check lint",
                     description="Validate profile (.ttl) and alignment artifact (.json) files.")
    parser.add_argument("files", nargs="+", metavar="FILE")
    opts = parser.parse_args(argv)
    status = ExitStatus.COMPATIBLE
    for name in opts.files:
        problems = _lint_problems(name)
        if problems:
            status = ExitStatus.INCOMPATIBLE
            for problem in problems:
                print(f"{name}: {problem}")
        else:
            print(f"{name}: ok")
    return status


def _lint_problems(path: str) -> list[str]:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return [f"cannot be read: {exc.strerror}"]
    if path.endswith(".ttl"):
        problems = [f"iop:{term} is not a profile setting any reader knows (misspelt?); it "
                    "would be ignored" for term in unknown_profile_terms(data)]
        try:
            read_profile(data, str(path))
        except ProfileError as exc:
            problems.append(str(exc).removeprefix(f"{path}: "))
        return problems
    return list(read_artifact(data, str(path), 0).problems)


def audit(argv: Sequence[str]) -> int:  # noqa: C901
    """``ioa-check audit PATH... --profile NAME|PATH``: capability registrations in bulk."""
    from ..audit.run import Audit, Checkpoint, Output, Refused, WriteFailed, pieces

    parser = _Parser(prog="ioa-check audit",
                     description="Audit capability registrations (draft 6.3): files, folders "
                                 "(*.json, *.jsonld, *.jsonl) and - for JSON Lines on stdin.",
                     epilog="exit status: 0 all valid and no conflict, 1 some invalid or a "
                            "conflict, 2 usage error (or a --state that cannot be resumed), "
                            "3 some indeterminate, 74 the output, state or journal cannot be "
                            "written (disk full)")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--profile", required=True, metavar="NAME|PATH")
    parser.add_argument("--format", choices=sorted(AUDIT_REPORTERS), default="text")
    parser.add_argument("--output", metavar="FILE", help="write the results here, not stdout")
    _add_limits(parser)
    parser.add_argument("--engine", choices=ENGINES, default="compiled")
    parser.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1,
                        help="worker processes (default: the CPU count)")
    parser.add_argument("--state", metavar="FILE",
                        help="a durable cursor: rerun with the same FILE after an interruption "
                             "to finish the audit (needs --output and --format json, and "
                             "files: not - for standard input)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on a Dask cluster: a scheduler address (tcp://host:8786), or "
                             "local:N for N worker processes on this machine (--jobs is then "
                             "ignored); needs pip install 'ioa-semantic[dask]'")
    parser.add_argument("--partition-bytes", type=_positive, metavar="N",
                        help="with --scheduler: cut JSON Lines files into ranges of about N "
                             "bytes, one task each (default: 8 MiB)")
    opts = parser.parse_args(argv)
    if opts.state and (not opts.output or opts.format != "json"):
        parser.error("--state needs --output FILE and --format json")
    if opts.state and "-" in opts.paths:
        # A resume proves the inputs the same as they were read; a pipe cannot be read again.
        parser.error("--state cannot be used with - (standard input): a resume reads its "
                     "inputs again")
    if opts.scheduler and opts.state:
        parser.error("--state cannot be used with --scheduler")
    if opts.partition_bytes and not opts.scheduler:
        parser.error("--partition-bytes needs --scheduler")
    try:
        checker = Checker(opts.profile, limits=_limits(opts),
                          engine=opts.engine)
    except ConfigurationError as exc:
        print(f"ioa-check: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    if opts.scheduler:
        # Dask is an optional extra: nothing of it is imported without --scheduler.
        try:
            from ..audit import dask as _dask
        except ModuleNotFoundError as exc:
            print(f"ioa-check: --scheduler needs Dask, and {exc.name} is not installed: "
                  "pip install 'ioa-semantic[dask]'", file=sys.stderr)
            return ExitStatus.USAGE
        try:
            return _dask.audit(opts.paths, profile=opts.profile,
                               limits=_limits(opts), engine=opts.engine,
                               scheduler=opts.scheduler, partition_bytes=opts.partition_bytes,
                               report=AUDIT_REPORTERS[opts.format],
                               render=AUDIT_LINES.get(opts.format), output=opts.output)
        except ConfigurationError as exc:
            print(f"ioa-check: {exc}", file=sys.stderr)
            return ExitStatus.USAGE
        except WriteFailed as exc:
            print(f"ioa-check: {exc}", file=sys.stderr)
            return ExitStatus.ENVIRONMENT

    try:
        # A resumable run keeps what the last run wrote; the checkpoint truncates it.
        mode = "a+" if opts.state else "w"
        opened = open(opts.output, mode, encoding="utf-8") if opts.output else None  # noqa: SIM115
    except OSError as exc:  # the environment's (a folder missing, read-only), not a usage error
        print(f"ioa-check: cannot write {opts.output}: {exc.strerror}", file=sys.stderr)
        return ExitStatus.ENVIRONMENT
    out = Output(opened or sys.stdout, opts.output or "standard output")
    try:
        checkpoint = Checkpoint(opts.state, list(opts.paths), out) if opts.state else None  # type: ignore[arg-type]
        run = Audit(checker, checkpoint)
        batches = run.batches(pieces(opts.paths, limits=checker.limits,
                                     fingerprint=checkpoint.fingerprint if checkpoint else None),
                              jobs=opts.jobs, render=AUDIT_LINES.get(opts.format))
        AUDIT_REPORTERS[opts.format](run, with_progress(batches, sys.stderr), out)  # type: ignore[arg-type]
        status = run.exit_status()
        if checkpoint is not None:
            checkpoint.finish()
        if opened is not None:
            out.close()
        else:
            out.flush()
        return status
    except Refused as exc:
        print(f"ioa-check: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    except WriteFailed as exc:  # the state stays as the last checkpoint left it: rerun to resume
        if opened is None:
            return _unwritable_stdout(exc.error)
        print(f"ioa-check: {exc}", file=sys.stderr)
        return ExitStatus.ENVIRONMENT
    finally:
        if opened is not None and not opened.closed:
            with contextlib.suppress(OSError):  # a write failed already, and was reported
                opened.close()


def _trace(argv: Sequence[str]) -> int:
    from .trace import trace  # the trace extra stays out of every other command

    return trace(argv)


# The commands besides checking envelopes, by the first argument that names them.
SUBCOMMANDS = {"lint": lint, "audit": audit, "trace": _trace}


def run(argv: Sequence[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    parser = build_parser()
    opts = parser.parse_args(argv)
    if opts.list:
        return _list()
    if not opts.envelopes:
        parser.error("at least one ENVELOPE (or -) is required")
    misplaced = [name for name in opts.envelopes if name in SUBCOMMANDS and not os.path.exists(name)]
    if misplaced:
        # "ioa-check --profile X audit F" would check a file named "audit": options follow
        # the subcommand, and a file of that name that does not exist is that mistake.
        parser.error(f"{misplaced[0]!r} is a subcommand: write it first, then its options "
                     f"(ioa-check {misplaced[0]} ... --profile NAME)")
    if not opts.profile:
        parser.error("--profile is required")
    keys = [k for k, _ in opts.param]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        parser.error(f"--param {', '.join(repeated)} given more than once")
    try:
        with collector_paused():  # building a Checker allocates what lives on: see _runtime
            checker = Checker(opts.profile, capabilities=opts.capability,
                              alignments=opts.alignment,
                              limits=_limits(opts),
                              allow_remote=opts.allow_remote, engine=opts.engine,
                              allow_private_addresses=opts.allow_private_addresses)
    except ProfileUnavailable as exc:
        # Unavailable is not absent (rule 12): each envelope is indeterminate, not a usage error.
        unavailable = [Decision(Verdict.INDETERMINATE, (finding(exc.code, str(exc), exc.url),),
                                profile=ProfileRef(exc.url, ""), source=name)
                       for name in opts.envelopes]
        return _report(REPORTERS[opts.format], unavailable) or ExitStatus.INDETERMINATE
    except ConfigurationError as exc:
        print(f"ioa-check: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    params = dict(opts.param)
    decisions = []
    for name in opts.envelopes:
        data = _read_envelope(name)
        if isinstance(data, Decision):
            decisions.append(data._replace(profile=checker.profile_ref))
            continue
        decisions.append(checker.check(data, params=params, at=opts.at, source=name))
    return _report(REPORTERS[opts.format], decisions) or max(
        ExitStatus.of(d.verdict) for d in decisions)


def _report(reporter: Any, decisions: list[Decision]) -> ExitStatus | None:
    """``decisions`` written to stdout and flushed; ENVIRONMENT, said on stderr, when stdout
    cannot be written (a full disk, /dev/full). A reader that went away is BrokenPipeError,
    for :func:`main`."""
    try:
        reporter(decisions, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        return _unwritable_stdout(exc)
    return None


def _unwritable_stdout(exc: OSError) -> ExitStatus:
    print(f"ioa-check: cannot write standard output: {exc.strerror or exc}", file=sys.stderr)
    # What is left in its buffer would fail again when the interpreter flushes it at exit.
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return ExitStatus.ENVIRONMENT


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): nothing is wrong with the input or the tool.
        # Python would still complain while flushing stdout at exit, so point it at devnull.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for a process ended by SIGPIPE
    except Exception:  # a bug: say so, and put no verdict on stdout
        print("ioa-check: internal error (a bug; please report it with this trace):",
              file=sys.stderr)
        import traceback

        traceback.print_exc(file=sys.stderr)
        return ExitStatus.INTERNAL


def entry() -> None:
    """The ``ioa-check`` command: :func:`main`, then a quick exit after a plain check.

    A check holds nothing that needs releasing once its output is written, and tearing the
    interpreter down (every module, the profile's store) costs a one-envelope run more
    than anything else it does after its output (see _runtime), so the process ends as
    soon as its output is flushed. The subcommands (audit with its workers, lint, trace)
    exit the usual way.
    """
    argv = sys.argv[1:]
    status = main(argv)
    if argv and argv[0] in SUBCOMMANDS:
        sys.exit(status)
    quick_exit(status, _unwritable_stdout)

