"""The durable trace knowledge graph: runs accumulate in an on-disk Oxigraph store.

``ioa-check trace PATH... --store DIR`` keeps, in one persistent store that every consumer
reads (the canonical trace ontology's "one durable graph"):

* **one named graph per run**, named by the run's IRI (``urn:ioa-trace:run:<run>``, which is
  also its ``mas:Session`` node): the run's knowledge graph exactly as ``--emit-kg`` builds it,
  and the run record, what the audit needs of the run (its calls after privacy: digests and
  counts, text only when the run was loaded with ``--include-content``), so that the run can
  be judged again without reading its events (``trace reaudit``);
* **verdict nodes** in the graph ``urn:ioa-trace:verdicts``, append-only: which run (and which
  record of it, by digest) was judged, against which manifests, registrations and bindings
  (each file with its SHA-256), when, by what (``trace`` or ``reaudit``), with which result,
  reasons and per-agent uses. Each has a store-wide sequence number; a run's current verdict
  is its greatest;
* **the cursor**, per consumer key, in the graph ``urn:ioa-trace:consumer:<key>``: one
  immutable checkpoint node per batch, addressed by its input and line number, written in the
  same transaction as the batch it covers (the batch's part of the fold). The position of an
  input is its greatest checkpoint, so a replayed batch rewrites the very same node and
  nothing can move the cursor back. No cursor is written to a local file.

A crash loses nothing: a batch is in the store with its checkpoint or not at all, and a run's
graph, record and verdict are derived from the checkpoints and written in one transaction, so
a rerun rebuilds whatever the crash left unwritten. RocksDB's lock file makes a second writer
fail at once; that is :class:`StoreUnavailable` (exit status 74), never a wait.

With ``--opaque-ids`` (which needs a stable key here: references made with a random key would
never join across runs) everything stored carries keyed references only: the run record is
pseudonymized with the same key the graph and the reasons are, inputs are named by ``file-…``
references, and checkpoints hold positions without the fold (which names agents and calls),
so an interrupted input is read again from its start. A reaudit matches such a run to
declarations pseudonymized with the same key (:func:`opaque_declarations`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import quote

import pyoxigraph as ox

from .._exceptions import ConfigurationError, IoaSemanticError
from .._findings import Finding, Severity, Verdict
from .._version import __version__
from .audit import AgentAudit, RunAudit, Use
from .declarations import Declarations
from .events import Call, Fold, Run, Source
from .graph import IOAT, MAS, quads
from .privacy import IRI_BASE, Disclosure
from .state import Cursor

STORE_VERSION = 1
DEFAULT_CONSUMER = "ioa-check-trace"
# The calls a verdict's use links to (the run's graph holds them all).
LINKED_CALLS = 5

VERDICTS = f"{IRI_BASE}verdicts"
STORE_GRAPH = f"{IRI_BASE}store"
# A test hook: the process kills itself with SIGKILL right after committing this many
# transactions, so the crash tests interrupt a real run at exact points between batches.
KILL_AFTER_ENV = "IOA_CHECK_TEST_KILL_AFTER_TRANSACTIONS"
# A test hook: once the store is open (its lock taken), the process creates this file and
# waits until it is removed (at most a minute), so that a test can run a second process
# against a store a first one certainly holds.
HOLD_ENV = "IOA_CHECK_TEST_HOLD_STORE"

_XSD = "http://www.w3.org/2001/XMLSchema#"
_RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


class StoreError(ConfigurationError):
    """The store cannot be used as asked: not a trace store, another mode, a rewritten input
    (exit status 2)."""


class StoreUnavailable(IoaSemanticError):
    """The store cannot be opened or written: another process holds it, the folder is not
    writable, the disk is full (exit status 74, the environment's)."""


def term(local: str) -> ox.NamedNode:
    """A term of the provisional trace vocabulary (``ioat:``)."""
    return ox.NamedNode(IOAT + local)


def lexical(value: Any) -> str:
    """A term's text: an IRI, a literal's lexical form."""
    return str(value.value) if hasattr(value, "value") else str(value)


def _text(value: str) -> ox.Literal:
    return ox.Literal(value)


def _integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=ox.NamedNode(_XSD + "integer"))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def consumer_graph(consumer: str) -> str:
    return f"{IRI_BASE}consumer:{quote(consumer, safe='')}"


def instant_literal(at: datetime | None) -> ox.Literal:
    """The audit instant as ``xsd:dateTime`` in UTC (now, unless pinned with ``--at``)."""
    moment = (at or datetime.now(UTC)).astimezone(UTC)
    return ox.Literal(moment.strftime("%Y-%m-%dT%H:%M:%S") + (
        f".{moment.microsecond:06d}" if moment.microsecond else "") + "Z",
        datatype=ox.NamedNode(_XSD + "dateTime"))


# --- the store itself ------------------------------------------------------------------------


class TraceStore:
    """An opened store: every write goes through :meth:`commit`, one transaction each."""

    def __init__(self, path: str, create: bool = True) -> None:
        self.path = path
        self.store = _open(path, create)
        _hold()
        self.transactions = 0
        hook = os.environ.get(KILL_AFTER_ENV, "")
        self._kill_after = int(hook) if hook.isdigit() else None
        self._next_verdict: int | None = None
        marker = ox.Quad(ox.NamedNode(STORE_GRAPH), term("storeVersion"),
                         _integer(STORE_VERSION), ox.NamedNode(STORE_GRAPH))
        versions = [lexical(q.object) for q in self.store.quads_for_pattern(
            ox.NamedNode(STORE_GRAPH), term("storeVersion"), None, ox.NamedNode(STORE_GRAPH))]
        if not versions:
            if not create or any(True for _ in self.store.quads_for_pattern(None, None, None)):
                raise StoreError(f"{path} is not a trace store of ioa-check (it has no "
                                 "store version)")
            self.commit([marker])
        elif versions != [str(STORE_VERSION)]:
            raise StoreError(f"{path} is a trace store of version {', '.join(versions)}; this "
                             f"ioa-check reads version {STORE_VERSION}")

    def keep_mode(self, mode: str) -> None:
        """One disclosure per store: the first feed's (plain or under one opaque key, with or
        without trace text). References under two keys never join, raw identities beside
        keyed ones undo the keying, and two content settings would rewrite each other's
        records on every feed."""
        graph = ox.NamedNode(STORE_GRAPH)
        held = [lexical(q.object) for q in self.store.quads_for_pattern(
            graph, term("mode"), None, graph)]
        if not held:
            if any(True for _ in self.store.quads_for_pattern(None, term("runRecord"), None)):
                return  # a store of before the mode was kept: its records say theirs
            self.commit([ox.Quad(graph, term("mode"), _text(mode), graph)])
        elif held != [mode]:
            raise StoreError(
                f"{self.path} holds runs disclosed as {held[0]}; this feed is {mode}: give the "
                "same --include-content, --opaque-ids and key as the store was made with, or "
                "use another store")

    def commit(self, quads: Iterable[ox.Quad]) -> None:
        """Add ``quads`` in one transaction: all of them are written, or none."""
        try:
            self.store.extend(quads)
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None
        self._committed()

    def replace(self, graph: str, quads: list[ox.Quad]) -> None:
        """Drop the named graph ``graph`` and add ``quads``, in one transaction."""
        by_graph: dict[str, list[str]] = {}
        for quad in quads:
            name = quad.graph_name
            assert isinstance(name, ox.NamedNode)
            by_graph.setdefault(name.value, []).append(
                f"{ox.Triple(quad.subject, quad.predicate, quad.object)} .")
        body = " ".join(f"GRAPH <{name}> {{ {' '.join(triples)} }}"
                        for name, triples in by_graph.items())
        try:
            self.store.update(f"DROP SILENT GRAPH <{graph}> ; INSERT DATA {{ {body} }}")
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None
        self._committed()

    def flush(self) -> None:
        """Write what the transactions left in memory to the store's files, so that the next
        opener does not replay the write-ahead log (a second or more on a large store)."""
        try:
            self.store.flush()
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None

    def _committed(self) -> None:
        self.transactions += 1
        if self._kill_after is not None and self.transactions >= self._kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    def objects(self, subject: str, predicate: str, graph: str) -> list[Any]:
        return [q.object for q in self.store.quads_for_pattern(
            ox.NamedNode(subject), term(predicate), None, ox.NamedNode(graph))]

    def next_verdict(self) -> int:
        """The next verdict's sequence number: one more than the greatest (the lock makes this
        process the only writer)."""
        if self._next_verdict is None:
            greatest = 0
            for quad in self.store.quads_for_pattern(None, term("sequence"), None,
                                                     ox.NamedNode(VERDICTS)):
                greatest = max(greatest, int(lexical(quad.object)))
            self._next_verdict = greatest + 1
        number = self._next_verdict
        self._next_verdict += 1
        return number

    def current_audit_key(self, run_iri: str) -> str | None:
        """The audit key of the run's current verdict (its greatest), if it has one."""
        graph = ox.NamedNode(VERDICTS)
        best: tuple[int, str] | None = None
        for quad in self.store.quads_for_pattern(None, term("auditedRun"), ox.NamedNode(run_iri),
                                                 graph):
            verdict = quad.subject
            number = next(self.store.quads_for_pattern(verdict, term("sequence"), None, graph))
            key = next(self.store.quads_for_pattern(verdict, term("auditKey"), None, graph))
            candidate = (int(lexical(number.object)), lexical(key.object))
            if best is None or candidate > best:
                best = candidate
        return best[1] if best else None

    def stored_runs(self) -> Iterator[tuple[str, str]]:
        """Each stored run's graph name and record (JSON), in graph-name order."""
        found = [(lexical(q.graph_name), lexical(q.object)) for q in self.store.quads_for_pattern(
            None, term("runRecord"), None, None) if isinstance(q.graph_name, ox.NamedNode)]
        yield from sorted(found)

    def query(self, text: str, substitutions: dict[str, str] | None = None) -> Any:
        bound: dict[ox.Variable, Any] = {ox.Variable(k): ox.Literal(v)
                                         for k, v in (substitutions or {}).items()}
        return self.store.query(text, substitutions=bound or None)


def _hold() -> None:
    flag = os.environ.get(HOLD_ENV)
    if not flag:
        return
    import time

    with open(flag, "w", encoding="utf-8"):
        pass
    deadline = time.monotonic() + 60
    while os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.01)


def _open(path: str, create: bool) -> ox.Store:
    if os.path.exists(path) and not os.path.isdir(path):
        raise StoreError(f"{path} is not a folder, so it cannot be a trace store")
    if not create and not os.path.isfile(os.path.join(path, "CURRENT")):
        raise StoreError(f"{path} is not a trace store (no store there)")
    if create and os.path.isdir(path) and os.listdir(path) and not os.path.isfile(
            os.path.join(path, "CURRENT")):
        # A store writes a dozen files into its folder: never into one that holds others.
        raise StoreError(f"{path} is a folder that holds other files, not a trace store")
    try:
        return ox.Store(path)
    except RuntimeError as exc:  # RocksDB's "Corruption: ...": a damaged store
        raise StoreUnavailable(f"the trace store {path} cannot be opened, it is damaged: "
                               f"{str(exc).splitlines()[0][:200]}") from None
    except OSError as exc:
        if "lock" in str(exc).lower():
            raise StoreUnavailable(
                f"the trace store {path} is held by another process (its lock, {path}/LOCK, is "
                "taken); nothing was read or written: run again when that process is done"
            ) from None
        raise StoreUnavailable(f"the trace store {path} cannot be opened: {exc}") from None


# --- what the audit needs of a run ------------------------------------------------------------


def run_record(run: Run) -> dict[str, Any]:
    """``run`` as plain JSON: every field of the run and of its calls, findings as dicts."""
    out: dict[str, Any] = {}
    for field, value in run._asdict().items():
        if field == "calls":
            out[field] = [call._asdict() for call in value]
        elif field == "findings":
            out[field] = [_finding_json(f) for f in value]
        else:
            out[field] = value
    return out


def run_from_record(record: dict[str, Any]) -> Run:
    fields: dict[str, Any] = {}
    for field in Run._fields:
        value: Any = record.get(field)
        if field == "calls":
            value = tuple(Call(**{**call, "ambiguous": tuple(call.get("ambiguous") or ()),
                                  "candidates": _keys(call.get("candidates"))})
                          for call in value)
        elif field == "findings":
            value = tuple(_finding_of(f) for f in value)
        elif field == "records":
            value = tuple(value)
        fields[field] = value
    return Run(**fields)


def _keys(value: list[str] | None) -> tuple[str, ...] | None:
    return tuple(value) if value is not None else None


def _finding_json(finding: Finding) -> dict[str, Any]:
    return {**finding.as_dict(), "effect": str(finding.effect) if finding.effect else None}


def _finding_of(value: dict[str, Any]) -> Finding:
    return Finding(value["code"], Severity(value["severity"]), value["message"],
                   value["section"], value["path"], Verdict(value["effect"]) if value.get(
                       "effect") else None)


def opaque_run(run: Run, disclose: Disclosure) -> Run:
    """``run`` with every identity replaced by the reference ``disclose`` gives it (what the
    store keeps under ``--opaque-ids``); tool and model names stay, as in the graph."""

    def call_ref(value: str | None) -> str | None:
        return disclose.call(value) if value else value

    calls = tuple(call._replace(
        key=disclose.call(call.key), id=disclose.call(call.id) if call.id else "",
        agent=disclose.agent(call.agent) if call.agent else call.agent,
        target=(disclose.agent(call.target) if call.cls == "agent" else disclose.tool(
            call.target) if call.cls == "tool" else call.target) if call.target else call.target,
        parent=call_ref(call.parent), parent_id=call_ref(call.parent_id),
        candidates=tuple(disclose.call(k) for k in call.candidates) if (
            call.candidates is not None) else None,
        response_id=None) for call in run.calls)
    records = tuple({**r, "outcome": disclose.call(r["outcome"]), "trace": disclose.run(
        r["trace"])} for r in run.records)
    return run._replace(
        source=disclose.path(run.source),
        run_id=disclose.run(run.run_id) if run.run_id else None,
        session_id=disclose.run(run.session_id) if run.session_id else None,
        calls=calls, records=records, mas=disclose.mas(run.mas) if run.mas else None,
        definitions={disclose.agent(agent): {disclose.tool(tool): disclose.call(span)
                                             for tool, span in tools.items()}
                     for agent, tools in run.definitions.items()})


def opaque_declarations(declarations: Declarations, disclose: Disclosure) -> Declarations:
    """``declarations`` with the names a stored opaque run is matched on (agents, delegation
    tools, the files that declare them) replaced by the references ``disclose`` gives them,
    so that a run stored under ``--opaque-ids`` is judged as it was when it was loaded.
    Findings were worded through ``disclose`` when the declarations were read."""
    manifests = declarations.manifests
    if manifests is not None:
        def path(value: str | None) -> str | None:
            return disclose.path(value) if value else value

        agents = {disclose.agent(name): declaration._replace(
            agent=disclose.agent(declaration.agent), source=path(declaration.source),
            tools={disclose.tool(t): disclose.path(p) for t, p in declaration.tools.items()},
            tool_descriptions={disclose.tool(t): d
                               for t, d in declaration.tool_descriptions.items()},
            delegates_to=None if declaration.delegates_to is None else frozenset(
                disclose.agent(a) for a in declaration.delegates_to))
            for name, declaration in manifests.agents.items()}
        manifests = manifests._replace(
            mas_source=path(manifests.mas_source), agents=agents,
            entry=disclose.agent(manifests.entry) if manifests.entry else None)
    bindings = declarations.bindings
    if bindings is not None:
        bindings = bindings._replace(
            source=disclose.path(bindings.source),
            agents={disclose.agent(a): v for a, v in bindings.agents.items()},
            tools={disclose.tool(t): v for t, v in bindings.tools.items()})
    registrations = declarations.registrations
    if registrations is not None:
        registrations = registrations._replace(iris={
            iri: tuple(disclose.path(s) for s in sources)
            for iri, sources in registrations.iris.items()})
    return Declarations(manifests, bindings, registrations)


class Pseudonymous(Disclosure):
    """The disclosure of data already pseudonymized: references are shown as they are (a
    second keyed pass would make other ones), and it is opaque (descriptions stay out)."""

    def __init__(self, include_content: bool = False) -> None:
        super().__init__(b"already pseudonymized", include_content)

    def _ref(self, kind: str, value: str) -> str:
        return value


def key_fingerprint(key: bytes) -> str:
    """Which key made a store's references, without the key: a keyed digest of a constant."""
    return hmac.new(key, b"ioa-check trace store key", hashlib.sha256).hexdigest()[:16]


def mode_of(disclose: Disclosure) -> str:
    """How what is stored was disclosed: ``plain`` or ``opaque:<key fingerprint>``, with
    ``+content`` when trace text was kept."""
    mode = f"opaque:{key_fingerprint(disclose.key)}" if disclose.key is not None else "plain"
    return mode + ("+content" if disclose.include_content else "")


# --- what a verdict was judged against --------------------------------------------------------


class Basis(NamedTuple):
    """The declaration files a verdict was judged against, each with its digest."""

    files: tuple[tuple[str, str, str | None], ...]  # (role, file as shown, sha256 or None)
    profile: str | None
    manifests: str | None  # the --manifests given, as shown
    manifests_sha256: str | None  # the manifest revision: a digest of its files' digests
    sha256: str  # every file and the profile


def _file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return _sha256(handle.read())
    except OSError:
        return None


def _walk(path: str) -> list[str]:
    if not os.path.isdir(path):
        return [path]
    return sorted(os.path.join(folder, name) for folder, _, names in os.walk(path)
                  for name in names)


def basis(declarations: Declarations, disclose: Disclosure, manifests: str | None,
          registrations: list[str], bindings: str | None, profile: str | None) -> Basis:
    files: list[tuple[str, str, str | None]] = []
    read = declarations.manifests
    paths: set[str] = set()
    if read is not None:
        paths = {p for p in [read.mas_source] if p}
        for declaration in read.agents.values():
            if declaration.source:
                paths.add(declaration.source)
            paths.update(declaration.tools.values())
    digests = {p: _file_digest(p) for p in paths}  # each manifest file read once
    files.extend(("manifest", disclose.path(p), digests[p]) for p in sorted(paths))
    for given in registrations:
        files.extend(("registrations", disclose.path(p), _file_digest(p)) for p in _walk(given))
    if bindings:
        files.append(("bindings", disclose.path(bindings), _file_digest(bindings)))
    if profile and os.path.isfile(profile):
        # A profile file is judged by its bytes, as the other files are (a shipped profile's
        # name stands for the bytes of this ioa-check, which the audit key names).
        files.append(("profile", disclose.path(profile), _file_digest(profile)))
    files.sort()
    # Files are named from the --manifests folder (others by their real path), so that ``man``
    # and ``./man/``, or another working folder, name the same files.
    root = os.path.realpath(manifests) if manifests else None
    if root is not None and not os.path.isdir(root):
        root = os.path.dirname(root)

    def named(path: str) -> str:
        real = os.path.realpath(path)
        return os.path.relpath(real, root) if root is not None and path in paths else real

    revision = None
    if read is not None and manifests:
        # The revision is the manifests' bytes (a file that cannot be read, by its name).
        revision = _sha256(json.dumps(sorted((named(p), digests[p]) for p in paths)).encode())
    # What the verdict is judged against, by content: the files' digests under their roles
    # (a file that cannot be read by its name from the folder given), never the spelling of
    # their paths.
    contents = sorted(
        [("manifest", digests[p] or f"unreadable:{named(p)}") for p in paths]
        + [(role, digest or f"unreadable:{shown}") for role, shown, digest in files
           if role != "manifest"])
    return Basis(tuple(files), profile, disclose.path(manifests) if manifests else None,
                 revision, _sha256(json.dumps([contents, profile if not (
                     profile and os.path.isfile(profile)) else "file"]).encode()))


# --- the cursor ---------------------------------------------------------------------------------


class StoreCursor(Cursor):
    """The consumer cursor of ``--store``: :class:`~.state.Cursor`'s interface (so
    :func:`~.state.consume` drives it unchanged), its checkpoints nodes of the store."""

    def __init__(self, store: TraceStore, consumer: str, disclose: Disclosure) -> None:
        super().__init__(store.path, disclose.include_content)
        self.store = store
        self.consumer = consumer
        self.disclose = disclose
        self.mode = mode_of(disclose)
        self.graph = consumer_graph(consumer)

    def open(self) -> None:
        """Nothing to read ahead: each input's checkpoints are read when it is restored."""

    def close(self) -> None:
        """The store outlives the cursor: the runs are recorded after the last input."""

    def _input(self, source: Source) -> str:
        return self.disclose.path(source.key)

    def _node(self, stored: str, seq: int) -> str:
        return f"{self.graph}:input:{_sha256(stored.encode())[:16]}:line:{seq}"

    def restore(self, source: Source, fold: Fold) -> tuple[int, int, Any]:
        stored = self._input(source)
        graph = ox.NamedNode(self.graph)
        checkpoints: list[dict[str, Any]] = []
        for quad in self.store.store.quads_for_pattern(None, term("input"), _text(stored), graph):
            values = {q.predicate.value.removeprefix(IOAT): lexical(q.object)
                      for q in self.store.store.quads_for_pattern(quad.subject, None, None, graph)}
            checkpoints.append(values)
        checkpoints.sort(key=lambda c: int(c["line"]))
        other = sorted({c["mode"] for c in checkpoints} - {self.mode})
        if other:
            raise StoreError(
                f"{source.given} was consumed into {self.path} by consumer {self.consumer!r} "
                f"in another mode ({', '.join(other)}; this run is {self.mode}): use another "
                "--consumer, or the same --include-content, --opaque-ids and key")
        self.positions.pop(source.key, None)
        self.deltas.pop(source.key, None)
        if checkpoints and all("delta" in c for c in checkpoints):
            last = checkpoints[-1]
            self.positions[source.key] = {"seq": int(last["line"]), "offset": int(last["offset"]),
                                          "sha256": last["prefixSha256"]}
            self.deltas[source.key] = [json.loads(c["delta"]) for c in checkpoints]
        elif checkpoints:
            # Without the fold (opaque references only) the input is read again from its
            # start, its checkpoints written again, the very same nodes: it must still begin
            # with what was consumed, or they would be written over.
            self.same_prefix(source, int(checkpoints[-1]["offset"]),
                             checkpoints[-1]["prefixSha256"])
        return super().restore(source, fold)

    def rewritten(self, source: Source, offset: int) -> ConfigurationError:
        return StoreError(
            f"{source.given} no longer begins with the {offset} bytes consumer "
            f"{self.consumer!r} consumed into {self.path} (rewritten, not appended to): "
            "feed it under another --consumer")

    def checkpoint(self, source: Source, seq: int, offset: int, sha256: str,
                   delta: dict[str, Any]) -> None:
        stored = self._input(source)
        node = ox.NamedNode(self._node(stored, seq))
        graph = ox.NamedNode(self.graph)
        values: list[tuple[str, ox.Literal]] = [
            ("consumer", _text(self.consumer)), ("input", _text(stored)),
            ("line", _integer(seq)), ("offset", _integer(offset)),
            ("prefixSha256", _text(sha256)), ("mode", _text(self.mode))]
        if self.disclose.key is None:
            # Key order is kept: reports list members in the order the fold made them.
            values.append(("delta", _text(json.dumps(delta, ensure_ascii=False))))
        batch = [ox.Quad(node, _RDF_TYPE, term("Checkpoint"), graph)]
        batch.extend(ox.Quad(node, term(p), v, graph) for p, v in values)
        self.store.commit(batch)


# --- verdicts ---------------------------------------------------------------------------------


def _use_name(use: Use, disclose: Disclosure) -> str | None:
    if use.name is None:
        return None
    if use.aspect == "tools":
        return disclose.tool(use.name)
    if use.aspect == "models" or use.name == "mas":
        return use.name
    return disclose.agent(use.name)


class _Writer:
    """The quads of one verdict node and the nodes hanging from it, named under its IRI."""

    def __init__(self, iri: str) -> None:
        self.iri = iri
        self.graph = ox.NamedNode(VERDICTS)
        self.quads: list[ox.Quad] = []

    def add(self, subject: str, prop: str, value: Any) -> None:
        if isinstance(value, str):
            value = _text(value)
        elif isinstance(value, int):
            value = _integer(value)
        self.quads.append(ox.Quad(ox.NamedNode(subject), term(prop), value, self.graph))

    def link(self, subject: str, prop: str, target: str) -> None:
        self.quads.append(ox.Quad(ox.NamedNode(subject), term(prop), ox.NamedNode(target),
                                  self.graph))

    def reason(self, owner: str, index: int, reason: Finding) -> None:
        node = f"{owner}:reason:{index}"
        self.link(owner, "reason", node)
        for prop, value in reason.as_dict().items():
            self.add(node, prop, value)


def verdict_quads(number: int, audit: RunAudit, disclose: Disclosure, record_sha256: str,
                  audit_key: str, grounds: Basis, at: ox.Literal, judged_by: str,
                  consumer: str | None) -> list[ox.Quad]:
    run = audit.run
    iri = f"{IRI_BASE}verdict:{number}"
    out = _Writer(iri)
    out.quads.append(ox.Quad(ox.NamedNode(iri), _RDF_TYPE, term("Verdict"), out.graph))
    out.add(iri, "sequence", number)
    out.link(iri, "auditedRun", disclose.run_iri(run.ident))
    out.add(iri, "runId", disclose.run(run.ident))
    out.add(iri, "source", disclose.path(run.source))
    out.add(iri, "recordSha256", record_sha256)
    out.add(iri, "auditKey", audit_key)
    out.add(iri, "auditedAt", at)
    out.add(iri, "judgedBy", judged_by)
    out.add(iri, "ioaCheckVersion", __version__)
    if consumer is not None:
        out.add(iri, "consumer", consumer)
    out.add(iri, "result", str(audit.verdict))
    out.add(iri, "declarationsSha256", grounds.sha256)
    if grounds.manifests_sha256 is not None:
        out.add(iri, "manifestsSha256", grounds.manifests_sha256)
    if grounds.manifests is not None:
        out.add(iri, "manifests", grounds.manifests)
    if grounds.profile is not None:
        out.add(iri, "profile", grounds.profile)
    for index, (role, shown, digest) in enumerate(grounds.files):
        node = f"{iri}:file:{index}"
        out.link(iri, "basis", node)
        out.add(node, "role", role)
        out.add(node, "file", shown)
        if digest is not None:
            out.add(node, "sha256", digest)
    for index, reason in enumerate(audit.reasons):
        out.reason(iri, index, reason)
    for agent in audit.agents:
        _agent_quads(out, iri, agent, run, disclose)
    return out.quads


def _agent_quads(out: _Writer, iri: str, agent: AgentAudit, run: Run,
                 disclose: Disclosure) -> None:
    """An agent's verdict within a run's: its result, reasons and judged uses."""
    ref = disclose.agent(agent.agent)
    node = f"{iri}:agent:{quote(ref, safe='')}"
    out.link(iri, "agentVerdict", node)
    out.link(node, "agent", disclose.agent_iri(agent.agent))
    out.add(node, "agentId", ref)
    out.add(node, "result", str(agent.verdict))
    for index, reason in enumerate(agent.reasons):
        out.reason(node, index, reason)
    for index, use in enumerate(agent.uses):
        use_node = f"{node}:use:{index}"
        out.link(node, "use", use_node)
        out.add(use_node, "aspect", use.aspect)
        name = _use_name(use, disclose)
        if name is not None:
            out.add(use_node, "name", name)
        if use.via is not None:
            out.add(use_node, "via", disclose.tool(use.via))
        out.add(use_node, "result", str(use.verdict))
        out.add(use_node, "callCount", len(use.calls))
        codes = sorted({r.code for r in use.reasons})
        for code in codes:
            out.add(use_node, "code", code)
        # All codes in one literal too, so a query can report them without multiplying
        # its rows by them.
        out.add(use_node, "codes", " ".join(codes))
        for by in use.declared_by:
            out.add(use_node, "declaredBy", by)
        # The first calls only (the count is above): a verdict's size is then its uses', not
        # its run's, so a run fed again as it grows adds a verdict of constant size each time.
        for call in use.calls[:LINKED_CALLS]:
            out.link(use_node, "call", disclose.call_iri(run.ident, call.ref))


def audit_key(run_iri: str, record_sha256: str, grounds: Basis) -> str:
    """What makes two verdicts the same judgment: the run's record, the declarations and the
    ioa-check that judged (another version may judge otherwise)."""
    return _sha256("\0".join((run_iri, record_sha256, grounds.sha256, __version__)).encode())


# --- feeding ----------------------------------------------------------------------------------


class Feed:
    """``ioa-check trace ... --store DIR``: the store, its cursor, and recording the runs."""

    def __init__(self, path: str, consumer: str, disclose: Disclosure,
                 stable_key: bool = True, trajectory: bool = False) -> None:
        if disclose.key is not None and not stable_key:
            raise StoreError("--store with --opaque-ids needs a key that lasts (--opaque-key "
                             "FILE or $IOA_CHECK_OPAQUE_KEY): references made with a random key "
                             "would never join the runs already stored")
        if not consumer:
            raise StoreError("--consumer must not be empty")
        self.store = TraceStore(path)
        self.disclose = disclose
        self.consumer = consumer
        self.trajectory = trajectory
        self.store.keep_mode(mode_of(disclose))
        self.cursor = StoreCursor(self.store, consumer, disclose)

    def record(self, audits: list[RunAudit], declarations: Declarations, grounds: Basis,
               at: datetime | None) -> int:
        """Each run's graph, record and verdict, one transaction a run; a run stored with the
        same record whose current verdict was judged against the same declarations is left as
        it is. The number of verdicts written."""
        instant = instant_literal(at)
        written = 0
        narrowed: list[str] = []
        for audit in audits:
            run = audit.run
            if not run.readable or not (run.calls or run.records):
                continue
            try:
                written += record_run(self.store, audit, declarations, self.disclose, grounds,
                                      instant, "trace", self.consumer,
                                      trajectory=self.trajectory)
            except _Narrowed:
                narrowed.append(self.disclose.run(run.ident))
        self.store.flush()
        if narrowed:
            raise StoreError(
                f"{self.store.path} already holds run{'s' if len(narrowed) > 1 else ''} "
                f"{', '.join(narrowed)} with calls these inputs do not have (a trace whose "
                "spans are in several files, fed one file at a time, or another run under the "
                "same id): not recorded, so that nothing stored is lost; feed every input of "
                "the run in one invocation (the other runs were recorded)")
        return written


class _Narrowed(Exception):
    """A run would replace a stored one and lose some of its calls."""


def _identity(record: dict[str, Any]) -> str:
    """A run record without the spelling of its inputs' paths: what makes two records of one
    run the same (``run``, ``./run`` and an absolute path name one input)."""
    run = {k: v for k, v in record["run"].items() if k != "source"}
    return json.dumps({**record, "run": run}, ensure_ascii=False)


def _keeps_every_call(store: TraceStore, iri: str, calls: list[dict[str, Any]]) -> None:
    """A stored run is replaced only by one that holds every call it held (events appended
    to its input): never by part of it."""
    held = store.objects(iri, "runRecord", iri)
    if not held:
        return
    try:
        before = {c["key"] for c in json.loads(held[0].value)["run"]["calls"]}
    except (ValueError, KeyError, TypeError):
        return  # a damaged record: the new one replaces it
    after = {c["key"] for c in calls}
    if not before <= after:
        raise _Narrowed


def record_run(store: TraceStore, audit: RunAudit, declarations: Declarations,
               disclose: Disclosure, grounds: Basis, instant: ox.Literal, judged_by: str,
               consumer: str | None, stored_record: str | None = None,
               trajectory: bool = False) -> int:
    """Record ``audit`` (and, unless it is already there, its run's graph and record). A
    run's graph, once stored with its trajectory, keeps it; asked for, the trajectory is
    added to a stored run's graph that lacks it."""
    run = audit.run
    iri = disclose.run_iri(run.ident)
    if stored_record is None:
        kept = opaque_run(run, disclose) if disclose.key is not None else run
        value: dict[str, Any] = {"mode": mode_of(disclose), "run": run_record(kept)}
        # Key order is kept (not sorted): reports list members in the order the fold made them.
        record = json.dumps(value, ensure_ascii=False)
    else:
        record = stored_record
        value = json.loads(record)
    digest = _sha256(_identity(value).encode())
    key = audit_key(iri, digest, grounds)
    present = [o.value for o in store.objects(iri, "recordSha256", iri)]
    if present and present != [digest] and stored_record is None:
        _keeps_every_call(store, iri, value["run"]["calls"])
    traced = bool(present) and _has_trajectory(store, iri)
    rebuild = present != [digest] or (trajectory and not traced)
    batch = []
    written = 0
    if present != [digest] or store.current_audit_key(iri) != key:
        batch = verdict_quads(store.next_verdict(), audit, disclose, digest, key, grounds,
                              instant, judged_by, consumer)
        written = 1
    if not rebuild:
        if batch:
            store.commit(batch)
        return written  # judged so already, and that is the run's current verdict
    graph = ox.NamedNode(iri)
    batch.extend(quads(run, declarations, disclose, iri, trajectory or traced))
    batch.append(ox.Quad(graph, term("runRecord"), _text(record), graph))
    batch.append(ox.Quad(graph, term("recordSha256"), _text(digest), graph))
    if present:
        store.replace(iri, batch)  # the run grew, or gains its trajectory: graph rebuilt
    else:
        store.commit(batch)
    return written


def _has_trajectory(store: TraceStore, iri: str) -> bool:
    """Whether the run's stored graph holds its trajectory (its session's Transition)."""
    session = ox.NamedNode(iri)
    return any(True for _ in store.store.quads_for_pattern(
        session, ox.NamedNode(MAS + "correspondsToTransition"), None, session))
