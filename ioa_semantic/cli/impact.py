"""``ioa-check impact LOG... [--profile FILE] [--artifact FILE] [--withdraw ID] [--at T]``:
which logged decisions a change would flip, and why (issue 40, draft S5); with
``--audit-report REPORT --registrations PATH --audited-profile NAME|PATH`` instead of logs,
which registrations an audit judged (and their conflicts)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .._exceptions import STANDARD_OUTPUT, ConfigurationError
from .._files import writing
from .._status import ExitStatus
from .parsing import _instant, _positive, add_limits, limits_of, say

if TYPE_CHECKING:
    from ..audit.judge import Judged
    from ..audit.run import Audit
    from ..impact import Change, ImpactRun

DESCRIPTION = ("Judge again the decisions of a decision log (ioa-check check --log), or the "
               "registrations of an audit (its --format json output and its inputs), that a "
               "change can touch: a new or revised profile, artifacts added or withdrawn, "
               "another instant, registrations added. Reports each decision or registration "
               "whose verdict or reasons change, and how many were skipped and why.")
EPILOG = ("exit status: 0 nothing flips, 1 some decision or registration flips (or a "
          "conflict appears, goes or changes), 2 usage or configuration error, 3 nothing flips "
          "but some decision or registration was not judged again or not read (a damaged "
          "log), 70 internal error, 74 the output cannot be written")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Imported where this command is built or run, never by the others' cold start.
    from ..reporters.impact import REPORTERS

    parser.add_argument("logs", nargs="*", metavar="LOG",
                        help="a decision log (its rotated segments LOG.1, LOG.2, ... are read "
                             "first); none with --audit-report")
    parser.add_argument("--audit-report", metavar="REPORT",
                        help="instead of logs: an audit's output (ioa-check audit --format "
                             "json), whose registrations are judged again")
    parser.add_argument("--registrations", action="append", default=[], metavar="PATH",
                        help="with --audit-report: the files and folders the audit read, as "
                             "it was given them (repeatable)")
    parser.add_argument("--audited-profile", metavar="NAME|PATH",
                        help="with --audit-report: the profile the audit was made with")
    parser.add_argument("--add-registrations", action="append", default=[], metavar="PATH",
                        help="with --audit-report: registrations added to those audited, a "
                             "file or folder as the audit takes them (repeatable)")
    parser.add_argument("--jobs", type=_positive, default=1, metavar="N",
                        help="with --audit-report: worker processes judging the registrations "
                             "(default 1)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="judge the touched decisions (with --audit-report: the "
                             "registrations) on a Dask cluster, as ioa-check audit --scheduler "
                             "does (tcp://host:8786, or local:N)")
    parser.add_argument("--profile", metavar="NAME|PATH",
                        help="the new or revised profile: it replaces the profile of the same "
                             "id in the decisions judged under it")
    parser.add_argument("--artifact", action="append", default=[], metavar="FILE|NAME",
                        help="an alignment artifact added to what was offered (repeatable)")
    parser.add_argument("--withdraw", action="append", default=[], metavar="ARTIFACT-ID",
                        help="an artifactId withdrawn from what was offered (repeatable)")
    parser.add_argument("--at", type=_instant, metavar="TIMESTAMP",
                        help="judge at this instant instead of each decision's own")
    # With --audit-report: the limits the audit was made with (a log records its own).
    add_limits(parser)
    parser.add_argument("--format", choices=sorted(REPORTERS), default="text",
                        help="text (default), json (one line per flip, then a summary), sarif "
                             "(SARIF 2.1.0: one result per flip, at its line of the log) or "
                             "html (one self-contained page: totals, transition matrix, a "
                             "filterable table of the flips)")


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The impact reported; 1 when some decision or registration flips, else 3 when some
    was not judged again or not read."""
    from ..impact import Change, Impact, RegistrationImpact
    from ..pipeline.intake import Limits

    change = Change(opts.profile, tuple(opts.artifact), tuple(opts.withdraw), opts.at)
    if change == Change() and not opts.add_registrations:
        parser.error("name a change: --profile, --artifact, --withdraw, --at or "
                     "--add-registrations")
    if opts.audit_report is None:
        if not opts.logs:
            parser.error("name a decision log, or an audit's report with --audit-report")
        audit_only = [name for name, given in (
            ("--registrations", opts.registrations), ("--audited-profile", opts.audited_profile),
            ("--add-registrations", opts.add_registrations), ("--jobs", opts.jobs != 1),
            ("the limits (--max-bytes, ...)", limits_of(opts) != Limits())) if given]
        if audit_only:
            parser.error(f"{audit_only[0]} needs --audit-report")
        if opts.scheduler:
            return _logs_on_cluster(opts.logs, opts.scheduler, change, opts.format)
        impact: ImpactRun = Impact(opts.logs, change)
        return _reported(impact, opts.format)
    if opts.logs:
        parser.error("name decision logs or --audit-report, not both")
    if not opts.registrations or not opts.audited_profile:
        parser.error("--audit-report needs --registrations (the audit's inputs) and "
                     "--audited-profile (the profile it was made with)")
    if opts.scheduler and opts.add_registrations:
        parser.error("--add-registrations cannot be used with --scheduler (registrations "
                     "added are judged here)")
    if opts.scheduler:
        return _on_cluster(opts, change)
    from ..impact.registrations import local_judging

    return _reported(RegistrationImpact(
        opts.audit_report, opts.registrations, opts.audited_profile, change,
        opts.add_registrations, limits=limits_of(opts), judging=local_judging(opts.jobs)),
        opts.format)


def _on_cluster(opts: argparse.Namespace, change: Change) -> int:
    """The registrations judged on a Dask cluster (as ``ioa-check audit --scheduler``); the
    report and the exit status are the local run's."""
    from ..impact import RegistrationImpact

    try:
        from ..audit import dask as _dask
    except ModuleNotFoundError as exc:
        raise ConfigurationError(f"--scheduler needs Dask, and {exc.name} is not installed: "
                                 "pip install 'ioa-semantic[dask]'") from exc
    from ..audit.workers import batched

    with _dask.connected(opts.scheduler) as cluster:
        def audit_on(profile: str) -> Audit:
            return _dask.ClusterAudit(cluster.client, _dask.setup_of(profile, limits_of(opts),
                                                                     "compiled"))

        def judging(run: Audit, paths: Sequence[str]) -> Iterable[Judged]:
            assert isinstance(run, _dask.ClusterAudit)
            return batched(run.results_of(paths))

        return _reported(RegistrationImpact(
            opts.audit_report, opts.registrations, opts.audited_profile, change,
            judging=judging, cluster=audit_on), opts.format)


def _logs_on_cluster(logs: Sequence[str], scheduler: str, change: Change, fmt: str) -> int:
    """A log's touched decisions judged on a Dask cluster; the report and the exit status
    are the local run's."""
    from ..impact import Impact

    try:
        from ..audit import dask as _dask
        from ..impact import cluster as _cluster
    except ModuleNotFoundError as exc:
        raise ConfigurationError(f"--scheduler needs Dask, and {exc.name} is not installed: "
                                 "pip install 'ioa-semantic[dask]'") from exc
    with _dask.connected(scheduler) as cluster:
        return _reported(Impact(logs, change, judging=_cluster.judging(cluster.client, change)),
                         fmt)


def _reported(impact: ImpactRun, fmt: str) -> int:
    """``impact`` written in ``fmt`` to standard output; 1 when something flips, 3 when
    something was not judged again or not read, else 0."""
    from ..reporters.impact import REPORTERS

    with writing(STANDARD_OUTPUT):
        REPORTERS[fmt](impact, sys.stdout)
        sys.stdout.flush()
    assert impact.summary is not None
    for warning in impact.summary.warnings:
        # A warning names the log as it was given: what a terminal would obey in it is shown.
        say("ioa-check impact", f"warning: {warning}")
    if impact.summary.flipped or impact.summary.conflicts:
        return ExitStatus.INCOMPATIBLE
    # A decision or registration the change touches and that could not be judged again, or
    # one that a damaged log kept from being read, may flip: "nothing flips" is not
    # established (S4).
    if impact.summary.unjudgeable or impact.summary.warnings:
        return ExitStatus.INDETERMINATE
    return ExitStatus.COMPATIBLE
