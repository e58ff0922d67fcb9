"""``ioa-check trace query`` and ``ioa-check trace reaudit``: the history of a trace store.

``ioa-check trace PATH...`` audits traces; these two read what ``--store DIR`` accumulated.
``query DIR NAME`` runs a shipped history query (``--list`` names them) or ``--sparql FILE``
one of the user's own, printing JSON Lines (one object per row) or a table. ``reaudit DIR``
judges the stored runs again against the declarations given, from their stored records, and
appends the new verdicts. The main command line hands a ``trace`` command line whose first
word is ``query`` or ``reaudit`` here; a trace in a folder of that name is given as
``./query``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import IO, Any

from .._nearest import did_you_mean
from .._status import ExitStatus
from .parsing import _instant, _parameter, _Parser, _positive
from .trace import extra_missing, extra_unimportable

# The bounds of a --sparql query (those of ioa_semantic.trace.history, which this module does
# not import before the trace extra is known to be installed; tests/test_review_store.py
# checks that the two agree).
TIMEOUT = 30.0
MAX_ROWS = 100_000

SUBCOMMANDS = ("query", "reaudit")
FORMATS = ("json", "table")


def wants(argv: Sequence[str]) -> bool:
    """Whether a ``trace`` command line (after the word ``trace``) is one of these."""
    return bool(argv) and argv[0] in SUBCOMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ioa-check trace",
                     description="The history of a trace store (ioa-check trace ... --store DIR).")
    commands = parser.add_subparsers(dest="history", metavar="query|reaudit", required=True)
    query = commands.add_parser(
        "query", prog="ioa-check trace query",
        description="Run a named history query (or --sparql FILE) on a trace store.",
        epilog="exit status: 0 the query ran, 2 usage error (an unknown query, a missing "
               "parameter, malformed SPARQL, a --sparql query that names SERVICE or exceeds "
               "--timeout or --max-rows), 74 the store cannot be opened (another process "
               "holds it)")
    query.add_argument("store", metavar="DIR|URL", nargs="?",
                       help="the trace store (a folder, or the URL of a SPARQL 1.1 server)")
    query.add_argument("--store-key", metavar="FILE",
                       help="the key of a private store on a SPARQL server (for run ids)")
    query.add_argument("name", metavar="NAME", nargs="?",
                       help="a shipped query (--list names them)")
    query.add_argument("--sparql", metavar="FILE", help="a SPARQL query of your own")
    query.add_argument("--param", action="append", type=_parameter, default=[],
                       metavar="NAME=VALUE", help="bind a query variable to a literal "
                                                  "(repeatable)")
    query.add_argument("--format", choices=FORMATS, default="json",
                       help="json (JSON Lines, one object per row; default) or table")
    query.add_argument("--list", action="store_true", help="list the shipped queries")
    query.add_argument("--timeout", type=_seconds, default=TIMEOUT, metavar="SECONDS",
                       help="end a --sparql query still running after this long (default: "
                            f"{TIMEOUT:g})")
    query.add_argument("--max-rows", type=_positive, default=MAX_ROWS, metavar="N",
                       help="end a --sparql query with more rows than this (default: "
                            f"{MAX_ROWS})")
    query.set_defaults(run=_query, parser=query)
    reaudit = commands.add_parser(
        "reaudit", prog="ioa-check trace reaudit",
        description="Judge the stored runs again against new declarations, without reading "
                    "their event files; the new verdicts are recorded beside the old.",
        epilog="exit status: as ioa-check trace (0 compatible, 1 incompatible, 3 "
               "indeterminate, 2 usage error, 70 internal error, 74 the store cannot be "
               "opened or written)")
    reaudit.add_argument("store", metavar="DIR|URL",
                         help="the trace store (a folder, or the URL of a SPARQL 1.1 server)")
    reaudit.add_argument("--store-key", metavar="FILE",
                         help="the key of a private store on a SPARQL server")
    reaudit.add_argument("--manifests", metavar="DIR", help="as for ioa-check trace")
    reaudit.add_argument("--registrations", action="append", default=[], metavar="PATH",
                         help="as for ioa-check trace (repeatable; needs --profile and "
                              "--bindings)")
    reaudit.add_argument("--bindings", metavar="FILE", help="as for ioa-check trace")
    reaudit.add_argument("--profile", metavar="NAME|PATH", help="as for ioa-check trace")
    reaudit.add_argument("--run", action="append", dest="runs", metavar="RUN",
                         help="only this run (its id as the trace has it, or its reference "
                              "in a private store; repeatable; default: every stored run)")
    reaudit.add_argument("--opaque-key", metavar="FILE",
                         help="for a store made with --opaque-ids before stores were private "
                              "(version 1): the key its runs were stored with (default: "
                              "$IOA_CHECK_OPAQUE_KEY); their declarations are matched through "
                              "it. A private store uses its own key")
    reaudit.add_argument("--at", type=_instant, metavar="TIMESTAMP",
                         help="the audit instant the new verdicts record (default: now)")
    reaudit.add_argument("--format", choices=("json", "text"), default="text",
                         help="as for ioa-check trace")
    reaudit.set_defaults(run=_reaudit, parser=reaudit)
    return parser


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < 1e9:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return seconds


def run(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(list(argv))
    if extra_missing():
        return ExitStatus.USAGE
    # Errors (a configuration's: 2; the store's: 74) are main's to say, as this command.
    try:
        status: int = opts.run(opts, opts.parser)
    except ImportError:
        if extra_unimportable():
            return ExitStatus.USAGE
        raise
    return status


# --- query --------------------------------------------------------------------------------------


def _query(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .._exceptions import ConfigurationError
    from ..trace.history import (
        QueryError,
        ask,
        ask_bounded,
        named_queries,
        parameters,
        run_parameters,
        times,
    )
    from ..trace.store import open_store

    shipped = named_queries()
    if opts.list:
        for query in shipped.values():
            needs = "".join(f" --param {p}=..." for p in query.parameters)
            print(f"{query.name}{needs}: {query.summary}")
        return ExitStatus.COMPATIBLE
    if opts.store is None or (opts.name is None) == (opts.sparql is None):
        parser.error("trace query needs DIR and either NAME or --sparql FILE (--list names "
                     "the shipped queries)")
    if opts.sparql is not None:
        try:
            with open(opts.sparql, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"--sparql {opts.sparql} cannot be read: {exc}") from None
        required, runs = parameters(text), run_parameters(text)
    elif opts.name in shipped:
        query = shipped[opts.name]
        text, required, runs = query.text, query.parameters, query.runs
    else:
        raise QueryError(f"no shipped query {opts.name!r}"
                         f"{did_you_mean(opts.name, shipped)}; the shipped ones: "
                         + ", ".join(shipped))
    given = dict(opts.param)
    if len(given) != len(opts.param):
        parser.error("--param names one variable twice")
    if opts.sparql is not None:  # the user's own: bounded, and run where it can be stopped
        answer = ask_bounded(opts.store, text, given, required, opts.timeout,
                             opts.max_rows, runs, opts.store_key)
    else:
        answer = ask(open_store(opts.store, key_file=opts.store_key), text, given, required,
                     runs=runs)
    if opts.format == "json":
        for row in answer.rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        _table(answer.variables, answer.rows, sys.stdout, times(text))
    return ExitStatus.COMPATIBLE


def _table(variables: Sequence[str], rows: list[dict[str, Any]], stream: IO[str],
           instants: frozenset[str] = frozenset()) -> None:
    """The rows as a table for people (reporters/table.py), the query's times (``#time``)
    as ISO-8601."""
    from ..reporters.table import write_table
    from ..trace.history import iso_instant

    def shown(name: str, value: Any) -> Any:
        if name not in instants:
            return value
        instant = iso_instant(value)
        return value if instant is None else instant

    write_table(variables, [{v: shown(v, row[v]) for v in variables} for row in rows], stream)


# --- reaudit ------------------------------------------------------------------------------------


def _reaudit(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .._findings import Verdict
    from ..reporters.trace import REPORTERS
    from ..trace.declarations import (
        Declarations,
        read_bindings,
        read_manifests,
        read_registrations,
    )
    from ..trace.history import reaudit
    from ..trace.privacy import Disclosure
    from ..trace.store import Basis, basis, open_store

    if opts.registrations and not (opts.profile and opts.bindings):
        parser.error("--registrations needs --profile (to judge them) and --bindings (to relate "
                     "agent and tool names to capability IRIs)")

    def grounds(disclose: Disclosure) -> tuple[Declarations, Basis]:
        """The declarations given, their findings worded through ``disclose``."""
        declarations = Declarations(
            manifests=read_manifests(opts.manifests, disclose) if opts.manifests else None,
            bindings=read_bindings(opts.bindings) if opts.bindings else None,
            registrations=read_registrations(opts.registrations, opts.profile, disclose)
            if opts.registrations else None)
        return declarations, basis(declarations, disclose, opts.manifests, opts.registrations,
                                   opts.bindings, opts.profile)

    store = open_store(opts.store, key_file=opts.store_key)
    judged = reaudit(store, grounds, opts.at, opts.runs, _key(opts.opaque_key))
    start = 0
    for index in range(1, len(judged) + 1):  # runs shown alike are reported together
        if index == len(judged) or judged[index].disclose is not judged[start].disclose:
            REPORTERS[opts.format]([(j.audit, None) for j in judged[start:index]], sys.stdout,
                                   judged[start].disclose)
            start = index
    verdicts: list[Verdict] = [j.audit.verdict for j in judged]
    return max((ExitStatus.of(v) for v in verdicts), default=ExitStatus.COMPATIBLE)


def _key(path: str | None) -> bytes | None:
    """The --opaque-key of a reaudit, else $IOA_CHECK_OPAQUE_KEY, else none: read and held to
    the rules of the trace's own (cli.trace.opaque_key)."""
    from .trace import opaque_key

    return opaque_key(path)
