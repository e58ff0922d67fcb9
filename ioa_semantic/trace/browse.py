"""A trace store read for the pages of ``trace serve`` while its judge writes it.

The judge (``ioa-check trace SPOOL --store DIR``, a process of its own) holds the store's
RocksDB lock for as long as it judges, and a second writer fails at once. The pages only
read, so they open the store **read-only** (:meth:`pyoxigraph.Store.read_only`), which takes
no lock: what a read-only store shows is the store as it was when it was opened, the
write-ahead log included, so a page opened after a verdict was committed shows it. They read
it between the judge's rounds only (:class:`Quiet`): a snapshot read while another process
writes the store is not safe. The reader is opened again when its snapshot is older than
``max_age`` seconds or when ``generation`` (the judge's rounds) moves, never for every
request. The store is never written from here: no verdict, no record, no checkpoint.

What a page shows is what the store holds, as it holds it: a private store's references
(``run-…``, ``call-…``, the ``agent-…`` of agents no declaration published), never an
identity it does not keep. The record of a private run names every agent by its reference;
the agents its verdict names (published by the declarations it was judged against) are
turned back into those names with the store's key, as the judge did, so that the tree and
the verdict name them alike. A run is named by its verdict node's ``runId``; a name the
store does not hold is no run (None), whatever it looks like.

A run's page is rebuilt as a :class:`~.audit.RunAudit`: its calls from its stored record
(:func:`~.store.run_from_record`), its verdict, agents, uses and reasons from its current
verdict node (the greatest sequence number), not judged again. A verdict node links the
first calls of each use only (:data:`~.store.LINKED_CALLS`); which of the run's calls are a
use's is told by grouping the record's calls as the audit groups them (with no declarations:
grouping does not judge) and matching the groups to the stored uses by agent, aspect, name
and the tool a delegation went through; a use no group matches (an agent a manifest renamed
by its ``gen_ai.agent.id``) keeps its linked calls.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from itertools import islice
from typing import Any, NamedTuple, TypeVar

import pyoxigraph as ox

from .. import data
from .._exceptions import IoaSemanticError
from .._findings import Finding, Severity, Verdict
from .audit import AgentAudit, RunAudit, Use, audit
from .calls import Call, Run
from .declarations import Declarations
from .privacy import Disclosure, Private
from .store import (
    VERDICTS,
    Pseudonymous,
    key_fingerprint,
    lexical,
    read_key,
    revealed,
    run_from_record,
    term,
)

# A run's record past this is not parsed for a page (its verdict is still shown): a page is
# not where a run of a million calls is read in full.
MAX_RECORD_CHARS = 64 << 20
# Seconds a read-only snapshot serves before it is opened again.
MAX_AGE = 2.0
# Tries at a read that a compaction under it failed, each on a new snapshot.
ATTEMPTS = 4
# Seconds a read waits for a judging round to end (Quiet) before the page says so (503).
QUIET_WAIT = 5.0
_T = TypeVar("_T")


class BrowseError(IoaSemanticError):
    """The store cannot be read just now (being made, damaged, or files moved under a
    snapshot): the service says so (503) and the reader tries again next time."""


class Quiet:
    """Reads of a store and the rounds that write it, kept apart: a read waits for no round
    to be in flight, and a round, once it asks, lets no new read begin and waits for those
    begun to end.

    A read-only snapshot of a store another process writes is not safe to read (pyoxigraph
    says so of ``Store.read_only``): the writer's compactions delete files the snapshot
    names, and a query that counts or takes a maximum over them (the list of runs) then
    grew without bound until the service died, where a plain read raised (measured on a
    store fed by bulk loads, the form every feed's writes take). So the pages of ``trace
    serve`` read only between the judge's rounds, a snapshot opened after the last
    (:attr:`generation` moves when a round ends)."""

    def __init__(self) -> None:
        self.generation = 0  # rounds ended
        self._changed = threading.Condition()
        self._readers = 0
        self._writing = False

    @contextmanager
    def reading(self, wait: float) -> Iterator[None]:
        """A read, begun within ``wait`` seconds once no round is in flight; else a
        :class:`BrowseError`."""
        with self._changed:
            if not self._changed.wait_for(lambda: not self._writing, wait):
                raise BrowseError(f"the trace store is being judged: not read within {wait:g} s "
                                  "(the pages read it between judging rounds)")
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A round: begun once the reads in progress have ended; :attr:`generation` moves
        when it ends, however it ends."""
        with self._changed:
            self._writing = True
            self._changed.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            with self._changed:
                self.generation += 1
                self._writing = False
                self._changed.notify_all()


class Summary(NamedTuple):
    """A run as the list shows it: its current verdict."""

    run: str  # the run's name in the store (a private store's reference)
    verdict: str
    sequence: int
    verdicts: int
    audited_at: str
    judged_by: str


class StoredRun(NamedTuple):
    summary: Summary
    record: str | None  # the record's JSON; None when past the bound
    record_chars: int
    verdict: dict[str, Any]  # the verdict node's reasons and agents
    key: bytes | None  # a private store's key, to show the names its verdicts show


class Reader:
    """Read-only snapshots of the store at ``path``, shared by the threads that read it."""

    def __init__(self, path: str, generation: Callable[[], int] = lambda: 0,
                 max_age: float = MAX_AGE, max_record_chars: int = MAX_RECORD_CHARS,
                 quiet: Quiet | None = None, wait: float = QUIET_WAIT) -> None:
        self.path = path
        # With ``quiet`` (the judge's), every read is made between its rounds, and a round
        # ended is a new generation.
        self.quiet = quiet
        self.wait = wait
        self.generation = generation if quiet is None else lambda: quiet.generation
        self.max_age = max_age
        self.max_record_chars = max_record_chars
        self.opened = 0  # snapshots opened, so a test can tell they are reused
        self._lock = threading.Lock()
        self._held: tuple[ox.Store, int, float] | None = None
        self._key_read: tuple[bytes | None] | None = None

    def snapshot(self) -> ox.Store | None:
        """The store as read-only, or None when there is none yet (the judge makes it)."""
        generation = self.generation()
        with self._lock:
            held = self._held
            if held is not None and held[1] == generation and (
                    time.monotonic() - held[2] < self.max_age):
                return held[0]
            if not os.path.isfile(os.path.join(self.path, "CURRENT")):
                return None
            store = ox.Store.read_only(self.path)
            self.opened += 1
            self._held = (store, generation, time.monotonic())
            return store

    def _read(self, work: Callable[[ox.Store], _T], empty: _T) -> _T:
        """``work`` on a snapshot, ``empty`` when there is no store yet. A writer that
        compacts the store deletes files a snapshot being opened (or read, for the first
        time) still names: that is tried again on a new snapshot, a few times, then a
        :class:`BrowseError`."""
        for attempt in range(ATTEMPTS):
            try:
                with self._between_rounds():
                    store = self.snapshot()
                    return empty if store is None else work(store)
            except (KeyError, IndexError):
                raise BrowseError("the trace store holds a verdict that is not one of this "
                                  "ioa-check (a property missing): it is damaged") from None
            except (OSError, RuntimeError, ValueError) as exc:
                with self._lock:
                    self._held = None
                if attempt + 1 == ATTEMPTS:
                    raise BrowseError(f"the trace store cannot be read just now: "
                                      f"{str(exc).splitlines()[0][:200]}") from None
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def _between_rounds(self) -> AbstractContextManager[None]:
        return self.quiet.reading(self.wait) if self.quiet is not None else nullcontext()

    def latest(self, limit: int, offset: int = 0) -> tuple[list[Summary], bool]:
        """The runs of greatest current verdict first: ``limit`` of them after ``offset``,
        and whether there are more."""
        def work(store: ox.Store) -> list[Summary]:
            solutions = store.query(data.query("serve_runs"))
            assert isinstance(solutions, ox.QuerySolutions)
            return [_summary(row) for row in islice(solutions, offset, offset + limit + 1)]

        none: list[Summary] = []
        out = self._read(work, none)
        return out[:limit], len(out) > limit

    def run(self, name: str) -> StoredRun | None:
        """The run the store names ``name`` (its verdicts' ``runId``), or None."""
        return self._read(lambda store: self._run(store, name), None)

    def _run(self, store: ox.Store, name: str) -> StoredRun | None:
        graph = ox.NamedNode(VERDICTS)
        found = [q.subject for q in store.quads_for_pattern(None, term("runId"),
                                                            ox.Literal(name), graph)]
        if not found:
            return None
        nodes = {}
        for node in found:
            if isinstance(node, ox.NamedNode):
                props = _props(store, node)
                nodes[int(props["sequence"][0])] = (node, props)
        if not nodes:
            return None
        sequence = max(nodes)
        node, props = nodes[sequence]
        run_iri = props["auditedRun"][0]
        summary = Summary(name, props["result"][0], sequence, len(nodes),
                          (props.get("auditedAt") or [""])[0], (props.get("judgedBy") or [""])[0])
        record: str | None = None
        chars = 0
        held = [q.object for q in store.quads_for_pattern(
            ox.NamedNode(run_iri), term("runRecord"), None, ox.NamedNode(run_iri))]
        if held:
            text = lexical(held[0])
            chars = len(text)
            record = text if chars <= self.max_record_chars else None
        else:  # a large run's record, in parts: never drawn, its length counted by the store
            answer = store.query(
                "SELECT (SUM(STRLEN(?part)) AS ?chars) WHERE { GRAPH ?run { ?node "
                f"{term('recordPart')} ?part }} }}",
                substitutions={ox.Variable("run"): ox.NamedNode(run_iri)})
            assert isinstance(answer, ox.QuerySolutions)
            for row in answer:
                chars = int(lexical(row["chars"])) if row["chars"] is not None else 0
        verdict = {"reasons": _reasons(store, props),
                   "agents": sorted((_agent(store, ox.NamedNode(a))
                                     for a in props.get("agentVerdict", [])),
                                    key=lambda a: a["agent"])}
        return StoredRun(summary, record, chars, verdict, self._key())

    def _key(self) -> bytes | None:
        """The store's key, if it has one that can be read (read once)."""
        if self._key_read is None:
            try:
                self._key_read = (read_key(self.path),)
            except IoaSemanticError:
                self._key_read = (None,)
        return self._key_read[0]


def _props(store: ox.Store, node: ox.NamedNode) -> dict[str, list[str]]:
    """A verdict graph node's properties, by local name, each value as its text."""
    out: dict[str, list[str]] = {}
    for quad in store.quads_for_pattern(node, None, None, ox.NamedNode(VERDICTS)):
        name = quad.predicate.value.rpartition("#")[2]
        value = quad.object
        if not isinstance(value, ox.Triple):
            out.setdefault(name, []).append(value.value)
    return out


def _ordered(nodes: list[str]) -> list[str]:
    """Nodes named ``…:<index>`` in their index's order (as the verdict wrote them)."""
    def index(node: str) -> int:
        tail = node.rpartition(":")[2]
        return int(tail) if tail.isdigit() else 0

    return sorted(nodes, key=index)


def _reasons(store: ox.Store, props: dict[str, list[str]]) -> list[Finding]:
    out = []
    for node in _ordered(props.get("reason", [])):
        reason = _props(store, ox.NamedNode(node))
        try:
            severity = Severity((reason.get("severity") or [""])[0])
        except ValueError:
            severity = Severity.ERROR
        out.append(Finding((reason.get("code") or [""])[0], severity,
                           (reason.get("message") or [""])[0], (reason.get("section") or [""])[0],
                           (reason.get("path") or [""])[0]))
    return out


def _agent(store: ox.Store, node: ox.NamedNode) -> dict[str, Any]:
    props = _props(store, node)
    uses = []
    for use_node in _ordered(props.get("use", [])):
        use = _props(store, ox.NamedNode(use_node))
        uses.append({"aspect": use["aspect"][0], "name": _one(use.get("name")),
                     "via": _one(use.get("via")), "result": use["result"][0],
                     "callCount": int((use.get("callCount") or ["0"])[0]),
                     "declaredBy": sorted(use.get("declaredBy", [])),
                     "calls": use.get("call", [])})
    return {"agent": props["agentId"][0], "result": props["result"][0],
            "reasons": _reasons(store, props), "uses": uses}


def _one(values: list[str] | None) -> str | None:
    return values[0] if values else None


def _summary(row: Any) -> Summary:
    return Summary(row["runId"].value, row["result"].value, int(row["sequence"].value),
                   int(row["verdicts"].value), row["auditedAt"].value, row["judgedBy"].value)


def disclosure(record: dict[str, Any]) -> Disclosure:
    """How a stored run's names are shown: as the store holds them (a private or opaque
    store's references are shown as they are, never keyed again)."""
    mode = record.get("mode")
    if isinstance(mode, str) and mode.startswith("plain"):
        return Disclosure(None)
    return Pseudonymous()


class Rebuilt(NamedTuple):
    audit: RunAudit
    disclose: Disclosure  # how its names are shown (as the store holds them)
    note: str | None  # why its calls are not drawn, when they are not


def rebuilt(stored: StoredRun) -> Rebuilt:
    """The run's audit as its page draws it: calls from the record, verdicts from the
    stored verdict node. A record past the bound, damaged or absent gives a run without
    calls, and a note that says why."""
    run: Run | None = None
    disclose: Disclosure = Pseudonymous()
    note = None
    if stored.record is not None:
        try:
            record = json.loads(stored.record)
            run = _published(run_from_record(record["run"]), record, stored)
            disclose = disclosure(record)
        except (ValueError, KeyError, TypeError, AttributeError):
            note = "its record is damaged (not a run record of this ioa-check)"
    elif stored.record_chars:
        note = (f"its record ({stored.record_chars} characters) is larger than a page reads "
                f"({MAX_RECORD_CHARS} characters)")
    else:
        note = "the store holds no record of it"
    if run is None:
        run = _bare(stored)
    groups = _groups(run, disclose)
    calls_by_iri: dict[str, Call] | None = None
    agents = []
    for agent in stored.verdict["agents"]:
        uses = []
        for use in agent["uses"]:
            calls = groups.get((agent["agent"], use["aspect"], use["name"], use["via"]))
            if calls is None:
                if calls_by_iri is None:
                    calls_by_iri = {disclose.call_iri(run.ident, c.ref): c for c in run.calls}
                calls = tuple(calls_by_iri[i] for i in use["calls"] if i in calls_by_iri)
            uses.append(Use(use["aspect"], use["name"], use["via"], calls,
                            _verdict(use["result"]), tuple(use["declaredBy"]), ()))
        agents.append(AgentAudit(agent["agent"], _verdict(agent["result"]), {}, tuple(uses),
                                 {}, {}, tuple(agent["reasons"])))
    return Rebuilt(RunAudit(run, _verdict(stored.summary.verdict), tuple(agents),
                            tuple(stored.verdict["reasons"]), ()), disclose,
                   f"its calls are not drawn: {note}" if note else None)


# A private store's reference of an agent (Disclosure's "agent-" and 20 hex digits).
_AGENT_REFERENCE = re.compile(r"agent-[0-9a-f]{20}")


def _published(run: Run, record: dict[str, Any], stored: StoredRun) -> Run:
    """A private store's run with the references of the agent names its verdict shows (the
    names its declarations published when it was judged) turned back into those names, as
    the judge did (:func:`~.store.revealed`): the calls are then drawn, and grouped, under
    the names the verdict gives. Only names the verdict holds are shown; without the
    store's key (or with another one) the record's references are shown as they are."""
    mode = record.get("mode")
    if (stored.key is None or not isinstance(mode, str) or not mode.startswith("private:")
            or mode.partition(":")[2] != key_fingerprint(stored.key)):
        return run
    names = set()
    for agent in stored.verdict["agents"]:
        names.add(agent["agent"])
        names.update(use["name"] for use in agent["uses"]
                     if use["aspect"] in ("delegations", "provided") and use["name"])
    names = {n for n in names if n != "mas" and not _AGENT_REFERENCE.fullmatch(n)}
    return revealed(run, Private(stored.key, frozenset(names)))


def _verdict(value: str) -> Verdict:
    try:
        return Verdict(value)
    except ValueError:
        return Verdict.INDETERMINATE


def _groups(run: Run, disclose: Disclosure) -> dict[tuple[str, str, str | None, str | None],
                                                   tuple[Call, ...]]:
    """The run's calls by use, as the audit groups them (nothing is judged that counts)."""
    if not run.calls:
        return {}
    grouped = audit(run, Declarations(None, None, None), disclose)
    out = {}
    for agent in grouped.agents:
        for use in agent.uses:
            name = use.name
            if name is not None and use.aspect == "tools":
                name = disclose.tool(name)
            elif name is not None and use.aspect != "models" and name != "mas":
                name = disclose.agent(name)
            via = disclose.tool(use.via) if use.via else None
            out[(disclose.agent(agent.agent), use.aspect, name, via)] = use.calls
    return out


def _bare(stored: StoredRun) -> Run:
    """A run of no calls, named as the store names it: its verdict is all a page shows."""
    return Run(source="", run_id=stored.summary.run, session_id=None, mas=None, calls=(),
               events=0, kinds={}, unknown={}, records=(), findings=(), skipped=0,
               readable=True)
