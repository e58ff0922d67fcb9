"""``ioa-check [check] ENVELOPE... --profile NAME|PATH``: envelopes judged, one decision each."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from typing import IO

from .. import data as _resources
from .._checker import ENGINES, Checker, DecisionRecorder
from .._codes import finding
from .._exceptions import STANDARD_OUTPUT
from .._files import TooLarge, Unreadable, read_bounded, writing
from .._findings import Decision, Finding, ProfileRef, Verdict
from .._runtime import paused as collector_paused
from .._status import ExitStatus
from ..pipeline import remedies
from ..pipeline.intake import too_large
from ..reporters.check import REPORTERS
from ..sources.loader import ProfileUnavailable
from .parsing import (
    _instant,
    _parameter,
    _size,
    add_checker_arguments,
    limits_of,
)

DESCRIPTION = ("Judge SemanticProfile envelopes (draft-zhang-dmsc-ioa-semantic-interaction-03) "
               "against a domain profile: compatible, incompatible, indeterminate or invalid.")
EPILOG = ("exit status: 0 compatible, 1 incompatible, 2 usage or configuration error, "
          "3 indeterminate, 4 invalid, 70 internal error, 74 the output cannot be written")
# The other commands' names: an envelope of one of these names that does not exist is a
# subcommand written after an option (see run).
COMMANDS = ("audit", "lint", "trace", "sign", "keygen", "serve", "impact")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("envelopes", nargs="*", metavar="ENVELOPE",
                        help="envelope file, or - for standard input")
    add_checker_arguments(parser, ENGINES)
    parser.add_argument("--param", action="append", default=[], type=_parameter,
                        metavar="KEY=VALUE", help="task parameter (repeatable)")
    parser.add_argument("--at", type=_instant, metavar="TIMESTAMP",
                        help="evaluation instant, ISO-8601 with a UTC offset (default: now)")
    parser.add_argument("--format", choices=sorted(REPORTERS), default="text",
                        help="text (default) or json (one line per envelope, contract 2)")
    parser.add_argument("--log", metavar="PATH",
                        help="append each decision to this decision log (JSON Lines; the "
                             "envelopes kept in PATH.objects), for ioa-check impact")
    parser.add_argument("--log-max-bytes", type=_size, default="64MiB", metavar="SIZE",
                        help="rotate the decision log past this size (default 64MiB)")
    parser.add_argument("--list", action="store_true",
                        help="list the shipped profiles and alignment artifacts, then exit")


def _list() -> int:
    print("profiles:")
    for name in _resources.shipped_profiles():
        print(f"  {name}")
    print("alignment artifacts:")
    for name in _resources.shipped_alignments():
        print(f"  {name}")
    return ExitStatus.COMPATIBLE


def _read_envelope(name: str, limit: int) -> bytes | tuple[Finding, ...]:
    """The envelope's bytes, at most ``limit`` + 1 of them read (a pipe, a process
    substitution or standard input as well as a file); or, for an envelope that cannot be
    read or is over ``limit``, why (its decision is invalid, and the others are still
    checked)."""
    try:
        return read_bounded(0 if name == "-" else name, limit, "for an envelope (--max-bytes)",
                            streams=True)
    except TooLarge as exc:
        return (too_large(exc.size, exc.limit),)  # as the intake says it
    except Unreadable as exc:
        return (finding("json.unreadable", f"{name}: {exc}"),)


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The envelopes checked and reported; the exit status."""
    if opts.list:
        return _list()
    if not opts.envelopes:
        parser.error("at least one ENVELOPE (or -) is required")
    misplaced = [name for name in opts.envelopes if name in COMMANDS and not os.path.exists(name)]
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
        # Building a Checker allocates what lives on: see _runtime.
        with collector_paused(settle=True):
            checker = Checker(opts.profile, capabilities=opts.capability,
                              alignments=opts.alignment,
                              limits=limits_of(opts),
                              allow_remote=opts.allow_remote, engine=opts.engine,
                              allow_private_addresses=opts.allow_private_addresses,
                              shape_timeout=opts.shape_timeout,
                              recorder=_recorder(opts))
    except ProfileUnavailable as exc:
        # Unavailable is not absent (rule 12): each envelope is indeterminate, not a usage error.
        # The profile (or a shape file it pins) is the receiver's own: so is the remedy.
        reasons = (finding(exc.code, str(exc), exc.url, subject=remedies.receivers(exc.url)),)
        named = ProfileRef(*exc.profile) if exc.profile else ProfileRef(exc.url, "")
        unavailable = [Decision(Verdict.INDETERMINATE, reasons, profile=named,
                                source=name,
                                remedies=remedies.for_decision(Verdict.INDETERMINATE, reasons))
                       for name in opts.envelopes]
        _report(REPORTERS[opts.format], unavailable)
        return ExitStatus.INDETERMINATE
    # Any other ConfigurationError is the usage status, said by cli.main.
    params = dict(opts.param)
    decisions = []
    for name in opts.envelopes:
        data = _read_envelope(name, checker.limits.max_bytes)
        decisions.append(checker.check(data, params=params, at=opts.at, source=name)
                         if isinstance(data, bytes) else
                         checker.unread(data, params=params, at=opts.at, source=name))
    _report(REPORTERS[opts.format], decisions)
    return max(ExitStatus.of(d.verdict) for d in decisions)


def _recorder(opts: argparse.Namespace) -> DecisionRecorder | None:
    """The decision log ``--log`` names, or None. Imported only then: a check without a log
    pays nothing for it."""
    if not opts.log:
        return None
    from ..impact.log import DecisionLog

    return DecisionLog(opts.log, max_bytes=opts.log_max_bytes)


def _report(reporter: Callable[[Iterable[Decision], IO[str]], None],
            decisions: list[Decision]) -> None:
    """``decisions`` written to stdout and flushed. Raises :class:`WriteFailed` when stdout
    cannot be written (a full disk, /dev/full); a reader that went away is BrokenPipeError,
    for :func:`main`."""
    with writing(STANDARD_OUTPUT):
        reporter(decisions, sys.stdout)
        sys.stdout.flush()
