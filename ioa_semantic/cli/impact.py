"""``ioa-check impact LOG... [--profile FILE] [--artifact FILE] [--withdraw ID] [--at T]``:
which logged decisions a change would flip, and why (issue 40, draft S5)."""

from __future__ import annotations

import argparse
import sys

from .._exceptions import STANDARD_OUTPUT
from .._files import writing
from .._status import ExitStatus
from .parsing import _instant

DESCRIPTION = ("Judge again the decisions of a decision log (ioa-check check --log) that a "
               "change can touch: a new or revised profile, artifacts added or withdrawn, "
               "another instant. Reports each decision whose verdict or reasons change, and "
               "how many were skipped and why.")
EPILOG = ("exit status: 0 nothing flips, 1 some decision flips, 2 usage or configuration "
          "error, 3 nothing flips but some decision was not judged again or not read (the log "
          "is damaged), 70 internal error, 74 the output cannot be written")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Imported where this command is built or run, never by the others' cold start.
    from ..reporters.impact import REPORTERS

    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="a decision log (its rotated segments LOG.1, LOG.2, ... are read "
                             "first)")
    parser.add_argument("--profile", metavar="NAME|PATH",
                        help="the new or revised profile: it replaces the profile of the same "
                             "id in the decisions judged under it")
    parser.add_argument("--artifact", action="append", default=[], metavar="FILE|NAME",
                        help="an alignment artifact added to what was offered (repeatable)")
    parser.add_argument("--withdraw", action="append", default=[], metavar="ARTIFACT-ID",
                        help="an artifactId withdrawn from what was offered (repeatable)")
    parser.add_argument("--at", type=_instant, metavar="TIMESTAMP",
                        help="judge at this instant instead of each decision's own")
    parser.add_argument("--format", choices=sorted(REPORTERS), default="text",
                        help="text (default), json (one line per flip, then a summary), sarif "
                             "(SARIF 2.1.0: one result per flip, at its line of the log) or "
                             "html (one self-contained page: totals, transition matrix, a "
                             "filterable table of the flips)")


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The impact reported; 1 when some decision flips, else 3 when some decision was not
    judged again or not read."""
    from ..impact import Change, Impact
    from ..reporters.impact import REPORTERS

    change = Change(opts.profile, tuple(opts.artifact), tuple(opts.withdraw), opts.at)
    if change == Change():
        parser.error("name a change: --profile, --artifact, --withdraw or --at")
    impact = Impact(opts.logs, change)
    with writing(STANDARD_OUTPUT):
        REPORTERS[opts.format](impact, sys.stdout)
        sys.stdout.flush()
    assert impact.summary is not None
    for warning in impact.summary.warnings:
        print(f"ioa-check impact: warning: {warning}", file=sys.stderr)
    if impact.summary.flipped:
        return ExitStatus.INCOMPATIBLE
    # A decision the change touches and that could not be judged again, or one that a damaged
    # log kept from being read, may flip: "nothing flips" is not established (S4).
    if impact.summary.unjudgeable or impact.summary.warnings:
        return ExitStatus.INDETERMINATE
    return ExitStatus.COMPATIBLE
