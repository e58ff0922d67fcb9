"""``ioa-check trace``: execution traces audited against what agents declare.

A thin shell over the trace stages: read the declarations, consume each input (with the
``--state`` cursor when asked), build and check the knowledge graph, audit, report, and
return the exit status. Everything of the trace extra (rdflib, pyshacl, PyYAML,
oxp-ontology) is imported here and below only, so ``import ioa_semantic`` and envelope checks
never pay for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, cast

from .._status import ExitStatus
from .parsing import _instant, _positive, _positive_seconds, _size, say

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..reporters.progress import Reading
    from ..trace.audit import RunAudit
    from ..trace.calls import Call, Run
    from ..trace.declarations import Declarations
    from ..trace.events import Fold, Source
    from ..trace.graph import ShapeReport
    from ..trace.memory import Budget
    from ..trace.privacy import Disclosure
    from ..trace.state import Cursor
    from ..trace.store import Feed

    # What consuming the inputs leaves: an input that cannot be read (its problem), or an
    # input and its fold; runs are built of either through a disclosure (the report's, and a
    # private store's own), so that no path reaches a report the disclosure withholds it from.
    Consumed = list[Source | tuple[Source, Fold]]

# Calls of a run the SHACL check takes on: pyshacl costs 15-25 ms a call on this 2-core
# machine (docs: README, Limits and guarantees), and a larger run would pass the 2 s bound.
DEFAULT_MAX_SHAPE_CALLS = 48
# Calls --emit-kg builds a graph of: rdflib costs about 30 µs a triple, 7 s and 310 MiB for
# 10,000 events (about 5,000 calls), so a graph of more would pass those bounds.
DEFAULT_MAX_KG_CALLS = 1000
# What a call weighs against --max-kg-calls with its trajectory: 2.8 times the triples of a
# call without it on generated runs of 50 to 1,000 calls (tests/test_trace_trajectory.py).
TRAJECTORY_WEIGHT = 3
# How long a trace whose root span is still open must have been quiet to be judged under
# --complete-only: agents' turns wait on models for tens of seconds at most.
DEFAULT_QUIET_PERIOD = 300.0
# As trace/memory.py's (spelled here so that the parser imports nothing of the trace audit;
# tests/test_trace_memory.py holds them equal).
DEFAULT_MAX_MEMORY = 512 << 20
# The fewest bytes an --opaque-key (or $IOA_CHECK_OPAQUE_KEY) may have: 128 bits, which no
# one tries every one of (a one-byte key was found from a report in 256 tries).
MIN_OPAQUE_KEY = 16
_EXTRA = ("rdflib", "pyshacl", "yaml", "oxp_ontology")


DESCRIPTION = ("Audit execution traces (mas-lab run folders, events.jsonl files, trace outcome "
               "records, OpenTelemetry OTLP JSON files of GenAI or mas-lab spans) against "
               "what agents declare: manifests (models, tools, delegates_to) "
               "and IoA capability registrations through a bindings file.")
EPILOG = ("--state, --emit-kg and --store replace only what ioa-check wrote there (a state, "
          "a graph, a store), never another file, and never through a symbolic link. "
          "exit status: 0 compatible, 1 incompatible, 2 usage error (or a path holding a file "
          "that is not ours), 3 indeterminate, 4 an "
          "input unreadable, 70 internal error, 74 the --store cannot be opened or written "
          "(another process holds it) or --emit-kg cannot be written. The history of a "
          "--store: ioa-check trace query DIR "
          "NAME, ioa-check trace reaudit DIR; live OTLP/HTTP ingestion: ioa-check trace serve "
          "(each with --help); a trace in a folder named query, reaudit or serve is given as "
          "./query")
# The choices of --format and --emit-kg, spelled here so that building the command line's
# parser imports nothing of the trace audit (tests/test_cli.py holds them to the reporters'
# and the graph writer's own).
FORMATS = ("html", "json", "text")
GRAPH_SUFFIXES = (".json", ".jsonld", ".nt", ".ttl")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a run folder, an events.jsonl file, a trace-record file or an "
                             "OTLP JSON file (one request per line, or one document); the "
                             "format is read from the file's content")
    parser.add_argument("--manifests", metavar="DIR",
                        help="mas-lab manifests: a folder with mas.yaml (or agent manifests), "
                             "or one manifest file")
    parser.add_argument("--registrations", action="append", default=[], metavar="PATH",
                        help="IoA capability registrations, as for `ioa-check audit` "
                             "(repeatable; needs --profile and --bindings)")
    parser.add_argument("--bindings", metavar="FILE",
                        help="JSON (or YAML) binding agent and tool names to capability IRIs")
    parser.add_argument("--profile", metavar="NAME|PATH",
                        help="the profile the registrations are judged under")
    parser.add_argument("--emit-kg", metavar="FILE",
                        help="write the knowledge graph: " + ", ".join(GRAPH_SUFFIXES))
    parser.add_argument("--trajectory", action="store_true",
                        help="build the trajectory into the knowledge graph (the SHACL check's, "
                             "--emit-kg's and --store's): a Transition and an input and an "
                             "output State for each call and the session, and how data flowed "
                             "between them (digests and counts; text only with "
                             "--include-content)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (default), json (JSON Lines: one line per agent, then "
                             "the run's summary) or html (one page: each run's calls as a "
                             "tree and a timeline, undeclared uses marked)")
    parser.add_argument("--include-content", action="store_true",
                        help="copy prompts, inputs and outputs into the report "
                             "(default: digests and character counts only)")
    parser.add_argument("--opaque-ids", action="store_true",
                        help="replace agent, run and call identifiers in the report and the "
                             "emitted graph by keyed opaque references (a --store is private "
                             "whatever this says)")
    parser.add_argument("--opaque-key", metavar="FILE",
                        help="the key for --opaque-ids, at least 16 bytes (make one with "
                             "head -c 32 /dev/urandom; default: $IOA_CHECK_OPAQUE_KEY, else a "
                             "random key, so references hold within one invocation only)")
    parser.add_argument("--no-shapes", action="store_true",
                        help="skip the SHACL check of the graph (it dominates the run time of "
                             "large traces); the summary then has no shapes member")
    parser.add_argument("--max-shape-calls", type=_positive, default=DEFAULT_MAX_SHAPE_CALLS,
                        metavar="N",
                        help="the SHACL check takes on at most N calls in all, over the runs "
                             f"of one invocation in order (default: {DEFAULT_MAX_SHAPE_CALLS}); "
                             "pyshacl's cost per call would take more past the 2 s bound, and "
                             "the summary of a run past it says the check was not run")
    parser.add_argument("--max-kg-calls", type=_positive, default=DEFAULT_MAX_KG_CALLS,
                        metavar="N",
                        help="--emit-kg builds the graph of at most N calls (default: "
                             f"{DEFAULT_MAX_KG_CALLS}; with --trajectory a call counts "
                             f"{TRAJECTORY_WEIGHT} times); rdflib's cost per triple would take "
                             "a larger one past the 2 s and 300 MiB bounds")
    parser.add_argument("--state", metavar="FILE",
                        help="a durable consumer cursor: checkpoints appended after each batch; "
                             "a rerun resumes where the last completed batch ended")
    parser.add_argument("--store", metavar="DIR|URL",
                        help="a durable trace knowledge graph (an Oxigraph store, created if "
                             "absent): each run's graph, record and verdict are added to it, "
                             "and the consumer cursor lives in it (not with --state); private: "
                             "run ids, call ids, paths and undeclared agents are stored as "
                             "references keyed with the store's own key (DIR/"
                             "ioa-check-trace-store.key, made with the store). An http:// or "
                             "https:// URL is a store on a SPARQL 1.1 server many feeders "
                             "share (URL/query and URL/update)")
    parser.add_argument("--store-key", metavar="FILE",
                        help="the key of a private --store URL (on a SPARQL server the key "
                             "cannot live with the store): read, or made (mode 0600) with a "
                             "new store")
    parser.add_argument("--store-plain-ids", action="store_true",
                        help="make (or feed) a --store that keeps run ids, call ids, paths and "
                             "agent names as the traces have them; a store keeps the mode it "
                             "was made in")
    parser.add_argument("--consumer", metavar="KEY",
                        help="the --store cursor's consumer key (default: ioa-check-trace)")
    parser.add_argument("--at", type=_instant, metavar="TIMESTAMP",
                        help="the audit instant the --store's verdicts record (ISO-8601 with "
                             "a UTC offset; default: now)")
    parser.add_argument("--complete-only", action="store_true",
                        help="judge (report, store) only the runs that are complete: an "
                             "OpenTelemetry trace once its root span has ended or none of its "
                             "spans is newer than --quiet-period; the others wait in --state "
                             "or --store for a later invocation (a live feed: trace serve)")
    parser.add_argument("--quiet-period", type=_positive_seconds, default=DEFAULT_QUIET_PERIOD,
                        metavar="SECONDS",
                        help="with --complete-only, how long after its latest span an "
                             "OpenTelemetry trace whose root span is open counts as complete, "
                             "measured against --at or the clock (default: "
                             f"{DEFAULT_QUIET_PERIOD:g})")
    parser.add_argument("--waiting-list", metavar="FILE",
                        help="with --complete-only, write the ids of the runs not complete "
                             "yet to FILE (JSON; trace serve keeps their spans for them)")
    parser.add_argument("--max-memory", type=_size, default=DEFAULT_MAX_MEMORY, metavar="SIZE",
                        help="the most memory the invocation may hold (bytes, or with KiB, "
                             "MiB or GiB; default: 512MiB): an input whose run cannot be "
                             "judged (and stored) within it is not, and its run gets the "
                             "reason trace.memory-bound naming the bound")
    parser.add_argument("--batch-size", type=_positive, default=1000, metavar="N",
                        help="events per batch, and so per checkpoint (default: 1000)")
    parser.add_argument("--max-line-bytes", type=_positive, default=16 << 20, metavar="N",
                        help="longest event line read (default: 16 MiB)")


def _say(line: str) -> None:
    say("ioa-check trace", line)  # a trace file, a run, shown as cli.main shows errors


def extra_missing() -> bool:
    """Whether a module of the trace extra is not installed; if so, it is said on stderr
    (``ioa-check trace`` and its history commands exit 2 then). Found, not imported: pySHACL
    and rdflib take a third of a second to import, and a feed without shapes or a graph
    file uses neither."""
    import importlib.util

    for module in _EXTRA:
        if importlib.util.find_spec(module) is None:
            print(f"ioa-check trace: needs the trace extra ({module} is not installed): "
                  "pip install 'ioa-semantic[trace]'", file=sys.stderr)
            return True
    return False


def extra_unimportable() -> bool:
    """Whether a module of the trace extra, found installed (:func:`extra_missing`), fails to
    import (a broken install: a library or a dependency of its own missing); if so, it is
    said on stderr. Asked once an import failed: up front the modules are only found, and a
    broken one would otherwise end a command in a traceback (exit 70) where the extra's
    absence is a usage error (2)."""
    import importlib

    for module in _EXTRA:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            _say(f"needs the trace extra ({module} is installed but cannot be imported: "
                 f"{reason}): pip install 'ioa-semantic[trace]'")
            return True
    return False


# Set by trace serve for its judging process: the process ends with the service, however
# the service ends (a SIGKILL included), rather than judging on unwatched.
PARENT_ENV = "IOA_CHECK_TRACE_SERVE_PID"


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``ioa-check trace PATH...``; the contract's exit status."""
    parent = os.environ.get(PARENT_ENV, "")
    if parent.isdigit():
        import signal

        from .._runtime import die_with

        die_with(int(parent))
        # Ctrl-C at the service reaches its whole process group: the service decides when
        # its judge ends (at its shutdown timeout), not the keyboard mid-round.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if extra_missing():
        return 2

    _check_options(opts, parser)
    # What fails is raised, and said by main as this command: a configuration's error (2),
    # the store's or the disk's (74).
    if opts.emit_kg:
        from .._files import claim
        from ..trace.graph import is_graph

        # Refused before any work: a graph is written only where none is, or over one.
        claim(opts.emit_kg, is_graph, "a knowledge graph ioa-check wrote", "--emit-kg")
    from .._runtime import frozen

    # A long run's calls, read batch by batch, live to the end: each batch's are left out of
    # the collector's passes (``settle``), which otherwise walk them all again and again (a
    # sixth of a 120,000-event run's time; docs/performance.md).
    try:
        with frozen() as settle:
            return _run(opts, settle)
    except ImportError:
        if extra_unimportable():
            return 2
        raise


def _check_options(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """The options that go together, and those that do not: a usage error (exit 2) else."""
    from .._files import is_stream, one_file

    if opts.emit_kg and os.path.splitext(opts.emit_kg)[1].lower() not in GRAPH_SUFFIXES:
        parser.error(f"--emit-kg {opts.emit_kg}: the suffix must be one of "
                     + ", ".join(GRAPH_SUFFIXES))
    if opts.registrations and not (opts.profile and opts.bindings):
        parser.error("--registrations needs --profile (to judge them) and --bindings (to relate "
                     "agent and tool names to capability IRIs)")
    if opts.opaque_key and not opts.opaque_ids:
        parser.error("--opaque-key goes with --opaque-ids")
    if opts.store == "":
        parser.error("--store: the store's path is empty")
    if opts.store and opts.state:
        parser.error("--store keeps the cursor in the store: --state is for runs without one")
    # Two outputs in one file would write over each other (the graph over the state just
    # written, and the run could not be resumed; the waiting list lost): refused before any
    # work. A stream (/dev/null) stores nothing to lose.
    outputs = [(option, path) for option, path in (
        ("--state", opts.state), ("--emit-kg", opts.emit_kg),
        ("--waiting-list", opts.waiting_list), ("--store-key", opts.store_key))
        if path and not is_stream(path)]
    for index, (option, path) in enumerate(outputs):
        for other, other_path in outputs[index + 1:]:
            if one_file(path, other_path):
                parser.error(f"{option} {path} and {other} {other_path} name one file: "
                             "give each its own")
    if (opts.consumer is not None or opts.store_plain_ids or opts.store_key) and not opts.store:
        parser.error("--consumer, --store-plain-ids and --store-key go with --store")
    if opts.at is not None and not (opts.store or opts.complete_only):
        parser.error("--at goes with --store (the verdicts' instant) or --complete-only (the "
                     "instant the quiet period is measured to)")
    if opts.quiet_period != DEFAULT_QUIET_PERIOD and not opts.complete_only:
        parser.error("--quiet-period goes with --complete-only")
    if opts.waiting_list and not opts.complete_only:
        parser.error("--waiting-list goes with --complete-only")
    if opts.trajectory and opts.no_shapes and not (opts.emit_kg or opts.store):
        parser.error("--trajectory builds the trajectory into the knowledge graph: it goes "
                     "with the SHACL check (without --no-shapes), --emit-kg or --store")


def _disclosure(opts: argparse.Namespace) -> Disclosure:
    from ..trace.privacy import Disclosure

    if not opts.opaque_ids:
        return Disclosure(None, opts.include_content)
    return Disclosure.opaque(opaque_key(opts.opaque_key), opts.include_content)


def opaque_key(path: str | None) -> bytes | None:
    """The key of ``--opaque-key path``, else of ``$IOA_CHECK_OPAQUE_KEY``, else None: a
    regular file's bytes (at most a key file's limit), at least :data:`MIN_OPAQUE_KEY` of
    them. Raises ConfigurationError."""
    from .._exceptions import ConfigurationError
    from .._files import KEY_BYTES, Unreadable, read_bounded

    key: bytes | None = None
    given = ""
    if path:
        try:
            key = read_bounded(path, KEY_BYTES, "for a key file")
        except Unreadable as exc:
            raise ConfigurationError(f"--opaque-key {path} {exc}") from None
        given = f"--opaque-key {path}"
    elif os.environb.get(b"IOA_CHECK_OPAQUE_KEY"):
        # The key's bytes as the environment holds them (random bytes are no UTF-8).
        key = os.environb[b"IOA_CHECK_OPAQUE_KEY"]
        given = "$IOA_CHECK_OPAQUE_KEY"
    if key is not None and len(key) < MIN_OPAQUE_KEY:
        # A reference is an HMAC of the identifier under the key: a short key is found by
        # trying every one against a report, and with it every identifier behind it.
        raise ConfigurationError(
            f"{given} has {len(key)} byte{'s' if len(key) != 1 else ''}: an opaque key needs "
            f"at least {MIN_OPAQUE_KEY} (a shorter one is guessed from a report); make one "
            "with head -c 32 /dev/urandom > KEYFILE and give --opaque-key KEYFILE")
    return key


def _declarations(opts: argparse.Namespace, disclose: Disclosure) -> Declarations:
    """The declarations given, their findings worded through ``disclose``."""
    from ..trace.declarations import (
        Declarations,
        read_bindings,
        read_manifests,
        read_registrations,
    )

    return Declarations(
        manifests=read_manifests(opts.manifests, disclose) if opts.manifests else None,
        bindings=read_bindings(opts.bindings) if opts.bindings else None,
        registrations=read_registrations(opts.registrations, opts.profile, disclose)
        if opts.registrations else None)


def _consume(opts: argparse.Namespace, cursor: Cursor | None,
             settle: Callable[[], None]) -> Consumed:
    from ..reporters.progress import reading
    from ..trace.events import resolve
    from ..trace.memory import Budget, return_large_buffers
    from ..trace.state import StateError

    return_large_buffers()  # before the budget reads the memory it starts from
    sources = [resolve(path) for path in opts.paths]
    keys = [s.key for s in sources if s.problem is None]
    if len(keys) != len(set(keys)):
        raise StateError("the same trace is given twice")
    consumed: Consumed = []
    try:
        if cursor is not None:
            cursor.open()
        budget = Budget(opts.max_memory, storing=bool(opts.store), report=opts.format,
                        trajectory=opts.trajectory)
        with reading(sys.stderr, len(sources)) as shown:
            _each(sources, opts, cursor, consumed, shown, budget, settle)
    finally:
        if cursor is not None:
            cursor.close()
    return consumed


def _each(sources: list[Source], opts: argparse.Namespace, cursor: Cursor | None,
          consumed: Consumed, shown: Reading, budget: Budget,
          settle: Callable[[], None]) -> None:
    """Each input consumed into ``consumed``, its progress ``shown``, within ``budget``;
    what each batch read left out of the collector's passes (``settle``)."""
    from .._codes import finding
    from ..trace.events import Fold
    from ..trace.formats import FormatUnreadable
    from ..trace.memory import MemoryBound
    from ..trace.state import consume

    # The formats of the inputs read so far and of the one being read: the bound projects the
    # later stages of mas-lab events alone as theirs (their folds are spent as their runs are
    # built), of any other mix as the spans'.
    formats: set[str | None] = set()
    reading: list[Fold] = []

    def projected() -> str | None:
        return "events" if formats | {reading[0].format} == {"events"} else None

    def batch(line: int) -> None:
        shown.read(line)
        budget.check(f"line {line}", projected())
        settle()

    spans_bounded = False  # an input of spans (or of nothing yet) was not read whole
    for index, source in enumerate(sources):
        shown.input(index)
        if source.problem is not None:
            consumed.append(source)
            continue
        fold = Fold(opts.include_content)
        reading[:] = [fold]
        try:
            consume(source, fold, cursor, opts.batch_size, opts.max_line_bytes,
                    on_batch=batch)
            budget.check(f"the end of the input ({fold.events} events)", projected())
            if fold.format is not None:  # an empty input weighs nothing later
                formats.add(fold.format)
        except MemoryBound as exc:
            spans_bounded = spans_bounded or fold.format != "events"
            # What was read is let go: the run is not judged on part of it.
            del fold
            reading.clear()
            # Said on stderr too: a feed's operator (trace serve's log) sees it without the
            # report.
            _say(f"{source.given}: {exc}")
            consumed.append(source._replace(problem=finding("trace.memory-bound", str(exc))))
            continue
        except OSError as exc:
            consumed.append(source._replace(problem=finding(
                "json.unreadable", f"cannot be read: {exc.strerror}")))
            continue
        except FormatUnreadable as exc:  # one reason for the file, naming its format
            consumed.append(source._replace(problem=finding("json.unreadable", str(exc))))
            continue
        consumed.append((source, fold))
    if spans_bounded:
        _spans_bounded(consumed, opts.max_memory)


def _spans_bounded(consumed: Consumed, limit: int) -> None:
    """The OTLP inputs of ``consumed`` left unjudged: one trace's spans may be in several
    files, read together (events.otlp_runs), and an input of spans was not read whole, so a
    trace of these could be judged on part of its spans. What they were read to is in their
    cursor (--state, --store): a larger bound judges them whole."""
    from .._codes import finding
    from ..trace.events import Source
    from ..trace.memory import mebibytes

    for index, item in enumerate(consumed):
        if isinstance(item, Source):  # a NamedTuple: told from a pair by its class
            continue
        source, fold = item
        if fold.format == "otlp":
            consumed[index] = source._replace(problem=finding("trace.memory-bound", (
                f"not judged: another input of spans was not read within --max-memory "
                f"{mebibytes(limit)}, and a trace's spans may be in both; nothing of this one "
                "was judged or stored (raise --max-memory, or give the inputs apart)")))


def _runs(consumed: Consumed,
          wordings: list[tuple[Disclosure, Callable[[Source, Disclosure], Source] | None]],
          ) -> list[list[Run]]:
    """The runs of what was consumed, one list a wording: worded through its disclosure,
    each input named by its function where it has one (a private store names an input by
    its reference). The runs of one input hold its calls once, whatever the wordings; its
    fold is spent (events.build_worded)."""
    from ..trace.events import Source, build_worded, otlp_runs, unreadable

    worded: list[list[Run]] = [[] for _ in wordings]
    # OTLP inputs are read together: one trace's spans may be in several files.
    spans: list[tuple[Source, Fold]] = []
    spans_at = 0  # their runs take the place of the first OTLP input
    for item in consumed:
        if isinstance(item, Source):  # a NamedTuple: told from a pair by its class
            for runs, (disclose, _) in zip(worded, wordings, strict=True):
                runs.append(unreadable(item, disclose))
            continue
        source, fold = item
        if fold.format == "otlp":
            if not spans:
                spans_at = len(worded[0])
            spans.append((source, fold))
            continue
        built = build_worded(fold, [(named(source, disclose) if named else source, disclose)
                                    for disclose, named in wordings])
        for runs, run in zip(worded, built, strict=True):
            runs.append(run)
    if not spans:
        return worded
    # A trace's calls do not depend on the wording either: the first wording's are shared.
    shared: dict[str | None, tuple[Call, ...]] | None = None
    for runs, (disclose, named) in zip(worded, wordings, strict=True):
        made = otlp_runs([(named(source, disclose) if named else source, fold)
                          for source, fold in spans], disclose, shared)
        if shared is None:
            shared = {r.run_id: r.calls for r in made}
        runs[spans_at:spans_at] = made
    return worded


def _complete(runs: list[Run], opts: argparse.Namespace, at: datetime,
              say: bool = True) -> list[Run]:
    """The runs to judge now: every run, or under --complete-only those complete at ``at``;
    how many wait is said on stderr (they are judged by a later invocation, from --state or
    --store), and which in --waiting-list."""
    if not opts.complete_only:
        return runs
    from decimal import Decimal

    now = Decimal(str(at.timestamp()))
    quiet = Decimal(str(opts.quiet_period))
    judged = [r for r in runs if not r.readable or r.root_ended or r.last_instant is None
              or now - Decimal(r.last_instant) >= quiet]
    waiting = len(runs) - len(judged)
    if waiting and say:
        print(f"ioa-check trace: {waiting} run{'s' if waiting != 1 else ''} not complete yet "
              f"(root span open, a span within the last {opts.quiet_period:g} s): judged by a "
              "later invocation", file=sys.stderr)
    if say and opts.waiting_list:
        complete = {id(r) for r in judged}
        _write_waiting(opts.waiting_list, [r.ident for r in runs if id(r) not in complete])
    return judged


WAITING_MARK = "ioa-check-trace-waiting"


def is_waiting_list(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is a --waiting-list this command wrote."""
    return head.startswith(b'{"' + WAITING_MARK.encode() + b'"')


def _write_waiting(path: str, idents: list[str]) -> None:
    """The runs not complete yet, by id, as a live feed's spool keeps their spans for them
    (trace serve); replaced whole, never written through a link or over another file."""
    import json

    from .._files import claim, write_file

    claim(path, is_waiting_list, "a waiting list ioa-check wrote", "--waiting-list")
    write_file(path, json.dumps({WAITING_MARK: 1, "runs": sorted(idents)}).encode() + b"\n")


def _run(opts: argparse.Namespace, settle: Callable[[], None]) -> int:
    from .._findings import Verdict
    from ..reporters.trace import REPORTERS
    from ..trace.state import Cursor

    disclose = _disclosure(opts)
    declarations = _declarations(opts, disclose)
    cursor = Cursor(opts.state, opts.include_content) if opts.state else None
    feed = _feed(opts) if opts.store else None
    if feed is not None:
        cursor = feed.cursor
    consumed = _consume(opts, cursor, settle)
    # One reading of the clock an invocation: the report's runs and the store's (a private
    # store's runs are built again) wait, or not, alike.
    at = opts.at or datetime.now(UTC)
    # The runs as a store that does not show identities as the report does keeps them are
    # built with the report's, so that the folds (most of what reading held) are let go
    # before the runs are judged and recorded.
    wordings: list[tuple[Disclosure, Callable[[Source, Disclosure], Source] | None]] = [
        (disclose, None)]
    if feed is not None and (feed.private or disclose.key is not None):
        wordings.append((feed.keys, feed.source))
    all_runs, *stored = _runs(consumed, wordings)
    consumed.clear()
    runs = _complete(all_runs, opts, at)
    kept_runs = _complete(stored[0], opts, at, say=False) if stored else None
    del stored
    del all_runs  # the runs --complete-only has not kept are let go
    settle()
    _distinct(runs)
    calls = sum(len(run.calls) for run in runs)
    # A call's trajectory (three nodes, about thirty triples) nearly triples its part of the
    # graph: with it, a call weighs as three against the bound.
    weight = TRAJECTORY_WEIGHT if opts.trajectory else 1
    if opts.emit_kg and calls * weight > opts.max_kg_calls:
        # Refused before rdflib builds anything: its graph costs about 30 µs a triple, and a
        # larger one would pass the 2 s and 300 MiB bounds of a run.
        counted = f" (with their trajectory, as large as {calls * weight} calls' without)" if (
            opts.trajectory) else ""
        print(f"ioa-check trace: --emit-kg would build a graph of {calls} calls{counted}, more "
              f"than --max-kg-calls {opts.max_kg_calls}; raise it to build the graph anyway",
              file=sys.stderr)
        return 2
    results = _judged(runs, opts, declarations, disclose)
    verdicts: list[Verdict] = [r.verdict for r, _ in results]
    if feed is None:
        REPORTERS[opts.format](results, sys.stdout, disclose)
    elif kept_runs is None:  # the store takes the report's audits
        audits = [r for r, _ in results]
        _record(feed, opts, declarations, disclose, [a.run.ident for a in audits], audits=audits)
        REPORTERS[opts.format](results, sys.stdout, disclose)
    else:
        # The report is shown once the runs are recorded, as above, but made now and held
        # (on disk past a few MiB): its runs and audits, let go, leave their room to the
        # store's own copies of them, which a long run's feed held beside them at its peak.
        from ..reporters.held import HeldReport

        names = [r.run.ident for r, _ in results]
        with HeldReport(sys.stdout) as report:
            REPORTERS[opts.format](results, cast("IO[str]", report), disclose)
            del results, runs
            settle()
            _record(feed, opts, declarations, disclose, names, kept_runs=kept_runs)
            report.show()
    # Under --complete-only every run may still wait: nothing judged, nothing found (0).
    return max((ExitStatus.of(v) for v in verdicts), default=ExitStatus.COMPATIBLE)


def _distinct(runs: list[Run]) -> None:
    """Refused: two inputs of one run (its calls would be one node each in the graph: the
    same run, or a copy)."""
    from ..trace.state import StateError

    seen: dict[str, str] = {}
    for run in runs:
        if not run.calls:
            continue
        if run.ident in seen:
            raise StateError(f"{seen[run.ident]} and {run.source} are the same run "
                             f"({run.ident}); audit them separately")
        seen[run.ident] = run.source


def _judged(runs: list[Run], opts: argparse.Namespace, declarations: Declarations,
            disclose: Disclosure) -> list[tuple[RunAudit, ShapeReport | None]]:
    """Each run's audit and, where asked for and within --max-shape-calls, its graph's shapes;
    the graphs written to --emit-kg."""
    from .._exceptions import WriteFailed
    from ..trace.audit import audit
    from ..trace.graph import build as build_graph
    from ..trace.graph import check, emit, shapes_not_run

    results: list[tuple[RunAudit, ShapeReport | None]] = []
    graphs = []
    shape_budget = opts.max_shape_calls
    for run in runs:
        shapes = None
        # The graph is built only where it is used: it is most of a run's time and memory
        # without the shapes, and kept only to be emitted.
        shaped = run.readable and not opts.no_shapes
        # The bound is the invocation's, not each run's: an OTLP file holds as many runs as
        # trace ids, and each would pass its own bound.
        if shaped and len(run.calls) > shape_budget:
            shaped, shapes = False, shapes_not_run(len(run.calls), opts.max_shape_calls,
                                                   shape_budget, opts.trajectory)
        elif shaped:
            shape_budget -= len(run.calls)
        if opts.emit_kg or shaped:
            graph = build_graph(run, declarations, disclose, opts.trajectory)
            if shaped:
                shapes = check(graph, opts.trajectory)
            if opts.emit_kg:
                graphs.append(graph)
        results.append((audit(run, declarations, disclose), shapes))
    if opts.emit_kg:
        try:
            emit(graphs, opts.emit_kg)
        except OSError as exc:  # the environment's (a folder missing, a full disk): 74
            raise WriteFailed(opts.emit_kg, exc) from None
    return results


def _feed(opts: argparse.Namespace) -> Feed:
    """The ``--store`` being fed (its lock taken), with the cursor of ``--consumer``."""
    from ..trace.store import DEFAULT_CONSUMER, Feed

    return Feed(opts.store, opts.consumer if opts.consumer is not None else DEFAULT_CONSUMER,
                opts.store_plain_ids, opts.include_content, opts.trajectory, opts.store_key)


def _record(feed: Feed, opts: argparse.Namespace, declarations: Declarations,
            disclose: Disclosure, names: list[str], audits: list[RunAudit] | None = None,
            kept_runs: list[Run] | None = None) -> None:
    """The runs (their ids as the traces have them: ``names``) recorded as the store keeps
    them. A store that shows identities as the report does takes the report's ``audits``;
    otherwise the declarations are read again and the runs were built again (``kept_runs``)
    through the store's disclosure, so that nothing the report names and the store does not
    (a path in a finding, an agent in a reason) reaches the store."""
    from ..trace.store import Judged, RunsNarrowed, basis

    kept = feed.disclosure(declarations)
    if audits is not None:
        judged = Judged(audits, [a.run for a in audits], declarations, kept)
        read = declarations
    else:
        assert kept_runs is not None
        read = _declarations(opts, kept)
        # A private store's runs are taken out of kept_runs as their records are made.
        judged = feed.judged(kept_runs, read, kept)
    grounds = basis(read, kept, opts.manifests, opts.registrations, opts.bindings,
                    opts.profile)
    try:
        feed.record(judged, grounds, opts.at, names)
    except RunsNarrowed as exc:
        # Only trace serve's judge feeds a spool whose segments leave it: for any other feed
        # (--complete-only included) an input without some of a stored run's calls is the
        # operator's error (docs/trace.md), never told as late spans.
        if not (opts.complete_only and os.environ.get(PARENT_ENV, "").isdigit()):
            raise
        # A live feed (trace serve): spans of a run judged and recorded whole, whose spans
        # have left the spool since (older than its --retain): the stored run stays as
        # judged; the operator sees them in the service's log.
        for name in exc.runs:
            _say(f"late spans of run {name}: it was judged and recorded before they came, "
                 "and its spans have left the spool; not recorded (the store keeps the run "
                 "as judged)")
