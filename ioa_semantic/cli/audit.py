"""``ioa-check audit PATH... --profile NAME|PATH``: capability registrations in bulk."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from datetime import UTC, datetime

from .._checker import ENGINES, Checker
from .._exceptions import ConfigurationError
from .._files import NotOurs, Replacement, claim, is_stream, one_file
from .._status import ExitStatus
from ..audit.run import DOCS_URL
from ..reporters.audit import AUDIT_LINES, AUDIT_PLACED, AUDIT_REPORTERS, with_progress
from .parsing import (
    _instant,
    _positive,
    add_limits,
    add_shape_timeout,
    limits_of,
    unwritable_stdout,
)

DESCRIPTION = ("Audit capability registrations (draft 6.3): files, folders (*.json, *.jsonld, "
               "*.jsonl) and - for JSON Lines on stdin.")
EPILOG = ("--output replaces only an audit report, --state only an audit state, never "
          "another file, and never through a symbolic link. exit status: 0 all valid and no "
          "conflict, 1 some invalid or a conflict, 2 usage error (or a --state that cannot be "
          "resumed, or an --output or --state path holding a file that is not ours), 3 some "
          "indeterminate, 74 the output, state or journal cannot be written (disk full)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a registration file, a folder of them, a JSON Lines file, or - "
                             "for JSON Lines on standard input")
    parser.add_argument("--profile", required=True, metavar="NAME|PATH",
                        help="installed profile name or profile file (Turtle)")
    parser.add_argument("--format", choices=sorted(AUDIT_REPORTERS), default="text",
                        help="text (default), json (JSON Lines, one line per registration and "
                             "conflict, then a summary), sarif, or html (one self-contained "
                             "page: totals, codes, conflicts, a table of what is not valid)")
    parser.add_argument("--output", metavar="FILE", help="write the results here, not stdout")
    parser.add_argument("--at", type=_instant, metavar="TIMESTAMP",
                        help="the instant of the audit, which the html report states (ISO-8601 "
                             "with a UTC offset; default: now); no registration's judgement "
                             "depends on it")
    parser.add_argument("--docs-url", type=_docs_url, default=DOCS_URL, metavar="URL",
                        help="the documentation site the sarif report's rules link to (their "
                             f"code on its codes/ page; default: {DOCS_URL})")
    add_limits(parser)
    add_shape_timeout(parser)
    parser.add_argument("--engine", choices=ENGINES, default="compiled",
                        help="compiled (default) or reference; both judge the same")
    parser.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1, metavar="N",
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


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:  # noqa: C901
    """The audit, reported; the exit status."""
    from ..audit.checkpoint import Checkpoint, Output, Refused, WriteFailed, writing
    from ..audit.inputs import pieces
    from ..audit.run import Asked, Audit

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
        checker = Checker(opts.profile, limits=limits_of(opts),
                          engine=opts.engine, shape_timeout=opts.shape_timeout)
    except ConfigurationError as exc:
        print(f"ioa-check: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    asked = Asked(tuple(opts.paths), (checker.profile.id, checker.profile.revision),
                  (opts.at or datetime.now(UTC)).astimezone(UTC), opts.docs_url)
    try:
        _claim(opts)
    except NotOurs as exc:
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
                               limits=limits_of(opts), engine=opts.engine,
                               scheduler=opts.scheduler, partition_bytes=opts.partition_bytes,
                               report=AUDIT_REPORTERS[opts.format],
                               render=AUDIT_LINES.get(opts.format), output=opts.output,
                               asked=asked, place=opts.format in AUDIT_PLACED)
        except ConfigurationError as exc:
            print(f"ioa-check: {exc}", file=sys.stderr)
            return ExitStatus.USAGE
        except WriteFailed as exc:
            print(f"ioa-check: {exc}", file=sys.stderr)
            return ExitStatus.ENVIRONMENT

    replacement: Replacement | None = None
    try:
        # backslashreplace: a file name that is not UTF-8 is named in escapes, never as bytes.
        if opts.output and opts.state:
            # A resumable run keeps what the last run wrote; the checkpoint truncates it.
            opened = open(opts.output, "a+", encoding="utf-8",  # noqa: SIM115
                          errors="backslashreplace")
        elif opts.output:
            # Written beside it and renamed over it once complete: an audit that fails or is
            # killed leaves the previous file in place, never a torn one.
            replacement = Replacement(opts.output)
            opened = io.TextIOWrapper(replacement.stream, encoding="utf-8",
                                      errors="backslashreplace")
        else:
            opened = None
    except OSError as exc:  # the environment's (a folder missing, read-only), not a usage error
        print(f"ioa-check: cannot write {opts.output}: {exc.strerror or exc}", file=sys.stderr)
        return ExitStatus.ENVIRONMENT
    out = Output(opened or sys.stdout, opts.output or "standard output")
    try:
        checkpoint = Checkpoint(opts.state, list(opts.paths), out) if opts.state else None  # type: ignore[arg-type]
        run = Audit(checker, checkpoint, asked)
        place = opts.format in AUDIT_PLACED
        batches = run.batches(pieces(opts.paths, limits=checker.limits,
                                     fingerprint=checkpoint.fingerprint if checkpoint else None,
                                     place=place),
                              jobs=opts.jobs, render=AUDIT_LINES.get(opts.format), place=place)
        AUDIT_REPORTERS[opts.format](run, with_progress(batches, sys.stderr), out)  # type: ignore[arg-type]
        status = run.exit_status()
        if checkpoint is not None:
            checkpoint.finish()
        if replacement is not None:
            out.flush()
            with writing(opts.output):
                replacement.commit()
        elif opened is not None:
            out.close()
        else:
            out.flush()
        return status
    except Refused as exc:
        print(f"ioa-check: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    except WriteFailed as exc:  # the state stays as the last checkpoint left it: rerun to resume
        if opened is None:
            return unwritable_stdout(exc.error)
        print(f"ioa-check: {exc}", file=sys.stderr)
        return ExitStatus.ENVIRONMENT
    finally:
        if opened is not None and not opened.closed:
            with contextlib.suppress(OSError):  # a write failed already, and was reported
                opened.close()
        if replacement is not None:
            replacement.discard()  # once committed, there is nothing left to remove


def _docs_url(text: str) -> str:
    """A documentation site's base URL, ending in ``/`` (the codes page is under it)."""
    if not text.startswith(("https://", "http://")):
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return text if text.endswith("/") else text + "/"


def _claim(opts: argparse.Namespace) -> None:
    """The files the audit writes, claimed before anything is read (see _files.claim): the
    output is replaced only if it is an audit report, and a new run's journal only if it is
    a journal; an existing state is the resume's to prove, with the output it records."""
    from ..audit.checkpoint import is_journal
    from ..reporters.audit import is_report

    resumed = False
    if opts.state:
        # What a state holds is the resume's to prove (it refuses anything else, a folder
        # included, naming what differs, before writing): only a link is refused here.
        resumed = os.path.lexists(opts.state)
        if os.path.islink(opts.state):
            claim(opts.state, lambda head: True, "an audit state of ioa-check", "--state",
                  streams=False)
        if not resumed:  # a resume proves the journal; a new run starts one
            claim(opts.state + ".index", is_journal,
                  f"the journal of an audit state ({opts.state})", "--state", streams=False)
    if opts.output and opts.state and any(
            one_file(opts.output, kept) for kept in (opts.state, opts.state + ".index")):
        # The state and its journal are removed once the audit is complete: the report
        # would go with them.
        raise NotOurs(f"--output {opts.output} is the file --state {opts.state} keeps (the "
                      "state or its journal): give the report its own path")
    if opts.output and opts.state and is_stream(opts.output):
        # A resume re-reads its output and cuts it back to the last checkpoint: a pipe or a
        # device holds nothing to read back.
        raise NotOurs(f"--output {opts.output} is a stream (a device or a named pipe), and "
                      "--state needs a file it can read back and resume (nothing was written)")
    if opts.output:
        # A resume proves its output against the state (byte for byte): only its kind of file
        # is held here, for a link or a folder to be refused all the same.
        claim(opts.output, (lambda head: True) if resumed else is_report,
              "an audit report of ioa-check", "--output")
