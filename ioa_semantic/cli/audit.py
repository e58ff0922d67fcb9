"""``ioa-check audit PATH... --profile NAME|PATH``: capability registrations in bulk."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import stat
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from .._checker import ENGINES, Checker
from .._codes import DOCS_URL
from .._exceptions import STANDARD_OUTPUT, ConfigurationError
from .._files import NotOurs, Replacement, claim, is_stream, one_file, writing
from .._status import ExitStatus
from .parsing import (
    _instant,
    _positive,
    add_limits,
    add_shape_timeout,
    limits_of,
)

if TYPE_CHECKING:
    from ..audit.judge import Judged
    from ..audit.run import Asked, Audit

DESCRIPTION = ("Audit capability registrations (draft 6.3): files, folders (*.json, *.jsonld, "
               "*.jsonl) and - for JSON Lines on stdin.")
EPILOG = ("--output replaces only an audit report, --state only an audit state, never "
          "another file, and never through a symbolic link. exit status: 0 all valid and no "
          "conflict, 1 some invalid or a conflict, 2 usage error (or a --state that cannot be "
          "resumed, or an --output or --state path holding a file that is not ours), 3 some "
          "indeterminate, 74 the output, state or journal cannot be written (disk full)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # The reporters are imported where this command is built or run, never by the others:
    # a check's cold start does not pay for the audit's reports.
    from ..reporters.audit import AUDIT_REPORTERS

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


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The audit, reported; the exit status. The errors of the tool (a profile, a state or a
    file that is not ours: usage; an output that cannot be written: environment) are
    raised, for cli.main to say."""
    from ..audit.checkpoint import Checkpoint, Output, Refused
    from ..audit.inputs import pieces
    from ..audit.run import Asked, Audit
    from ..reporters.audit import AUDIT_LINES, AUDIT_PLACED, is_report, with_progress

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
    checker = Checker(opts.profile, limits=limits_of(opts),
                      engine=opts.engine, shape_timeout=opts.shape_timeout)
    asked = Asked(tuple(opts.paths), (checker.profile.id, checker.profile.revision),
                  (opts.at or datetime.now(UTC)).astimezone(UTC), opts.docs_url)
    _claim(opts)
    if opts.scheduler:
        return _on_cluster(opts, asked)

    replacement: Replacement | None = None
    made = bool(opts.output and opts.state and not os.path.lexists(opts.output))
    # backslashreplace: a file name that is not UTF-8 is named in escapes, never as bytes.
    # An output that cannot be opened is the environment's (a folder missing, read-only),
    # not a usage error.
    with writing(opts.output or STANDARD_OUTPUT):
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
    out = Output(opened or sys.stdout, opts.output or STANDARD_OUTPUT)
    try:
        # A state that cannot be resumed is Refused (usage); one that cannot be written is
        # WriteFailed, and stays as the last checkpoint left it: rerun to resume.
        checkpoint = Checkpoint(opts.state, list(opts.paths), out,  # type: ignore[arg-type]
                                is_report) if opts.state else None
        run = Audit(checker, checkpoint, asked)
        place = opts.format in AUDIT_PLACED
        batches = run.batches(pieces(opts.paths, limits=checker.limits,
                                     fingerprint=checkpoint.fingerprint if checkpoint else None,
                                     place=place),
                              jobs=opts.jobs, render=AUDIT_LINES.get(opts.format), place=place)
        _reporter(opts.format)(run, with_progress(batches, sys.stderr), out)  # type: ignore[arg-type]
        status = status_of(run)
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
    except Refused:
        if made and opened is not None and not opened.closed and not opened.tell():
            # Nothing is written when a resume is refused: not even the empty output that
            # opening it made.
            opened.close()
            with contextlib.suppress(OSError):
                os.unlink(opts.output)
        raise
    finally:
        if opened is not None and not opened.closed:
            with contextlib.suppress(OSError):  # a write failed already, and was reported
                opened.close()
        if replacement is not None:
            replacement.discard()  # once committed, there is nothing left to remove


def status_of(run: Audit) -> ExitStatus:
    """An audit's exit status, once every registration is in (contract 2): 1 for any
    invalid registration or conflict, else 3 for any indeterminate one, else 0."""
    return ExitStatus.of_audit(run.statuses["invalid"], run.statuses["indeterminate"],
                               len(run.conflicts()))


# What an audit's exit status says (contract 2, "Exit status"), for a report that states it.
_STATUS_SAYS = {ExitStatus.COMPATIBLE: "every registration valid, no conflict",
                ExitStatus.INCOMPATIBLE: "some registration invalid, or a conflict",
                ExitStatus.INDETERMINATE: "some registration indeterminate, none invalid, "
                                          "no conflict"}


def invocation_of(run: Audit) -> dict[str, Any]:
    """An audit's SARIF invocation, with its exit status. The report is written whole only
    when the audit ran to its end: the execution succeeded, whatever it found (the exit
    status says that)."""
    status = status_of(run)
    return {"executionSuccessful": True, "exitCode": int(status),
            "exitCodeDescription": _STATUS_SAYS[status]}


def _reporter(fmt: str) -> Callable[[Audit, Iterable[Judged], IO[str]], None]:
    """The reporter of ``--format fmt``; one that states the invocation is given the
    command's (invocation_of)."""
    from ..reporters.audit import AUDIT_INVOKED, AUDIT_REPORTERS

    invoked = AUDIT_INVOKED.get(fmt)
    if invoked is None:
        return AUDIT_REPORTERS[fmt]
    return lambda run, batches, stream: invoked(run, batches, stream, invocation_of)


def _on_cluster(opts: argparse.Namespace, asked: Asked) -> int:
    """``--scheduler``: the audit judged on a Dask cluster, reported as the local one; the
    exit status. A cluster that goes away is ClusterStopped (70, no verdict)."""
    # Dask is an optional extra: nothing of it is imported without --scheduler.
    try:
        from ..audit import dask as _dask
    except ModuleNotFoundError as exc:
        raise ConfigurationError(f"--scheduler needs Dask, and {exc.name} is not installed: "
                                 "pip install 'ioa-semantic[dask]'") from exc
    from ..audit.checkpoint import Output
    from ..audit.workers import batched
    from ..reporters.audit import AUDIT_LINES, AUDIT_PLACED

    setup = _dask.setup_of(opts.profile, limits_of(opts), opts.engine)
    render = AUDIT_LINES.get(opts.format)
    with _dask.connected(opts.scheduler) as cluster:
        name = opts.output or STANDARD_OUTPUT
        replacement = None
        with writing(name):
            # A file is written beside the output and renamed over it once the report is
            # complete: a lost cluster leaves the previous file in place, never a torn one.
            replacement = Replacement(opts.output) if opts.output else None
        stream: IO[str] = io.TextIOWrapper(replacement.stream, encoding="utf-8") if (
            replacement is not None) else sys.stdout
        out = Output(stream, name)  # a full disk is WriteFailed naming the file (exit 74)
        try:
            progress = _dask.Progress(sys.stderr)
            run = _dask.ClusterAudit(
                cluster.client, setup, opts.partition_bytes or _dask.DEFAULT_PARTITION_BYTES,
                on_partition=progress.partition_done if progress.bar else None, asked=asked,
                place=opts.format in AUDIT_PLACED)
            _reporter(opts.format)(run, batched(progress.track(run.results_of(opts.paths)),
                                                render),
                                   out)  # type: ignore[arg-type]  # Output writes as a stream does
            if replacement is not None:
                out.flush()
                with writing(name):
                    replacement.commit()
            return status_of(run)
        finally:
            if replacement is not None:
                with contextlib.suppress(OSError):
                    stream.close()
                replacement.discard()  # once committed, there is nothing left to remove


def _docs_url(text: str) -> str:
    """A documentation site's base URL, ending in ``/`` (the codes page is under it)."""
    if not text.startswith(("https://", "http://")):
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return text if text.endswith("/") else text + "/"


def _read_while_written(opts: argparse.Namespace) -> None:
    """Refuse a report the audit would read while it writes it: an input named as the
    output, or standard output redirected to one; with --state (the report grows in place)
    an output the walk of a folder input would meet. The audit would read its own lines, and
    never end (a resumed report is kept, not emptied)."""
    from ..audit.inputs import AUDITED_SUFFIXES

    inputs = [path for path in opts.paths if path != "-"]
    if opts.output:
        written, name = opts.output, f"--output {opts.output}"
    else:
        try:
            if not stat.S_ISREG(os.fstat(1).st_mode):
                return
            written = os.readlink("/proc/self/fd/1")  # where the shell sent it (Linux)
        except OSError:
            return
        name = "standard output"
    for path in inputs:
        if one_file(written, path):
            raise NotOurs(f"{name} is also an input of the audit ({path}): give the report "
                          "its own path")
        if (os.path.isdir(path) and written.endswith(AUDITED_SUFFIXES)
                and (opts.state or not opts.output) and _within(written, path)):
            raise NotOurs(f"{name} is in the folder {path} the audit reads, and would be read "
                          "as it is written: give the report a path outside it")


def _within(path: str, folder: str) -> bool:
    """Whether ``path`` lies in ``folder`` or below it (links resolved)."""
    inside, top = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([inside, top]) == top


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
    _read_while_written(opts)
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
