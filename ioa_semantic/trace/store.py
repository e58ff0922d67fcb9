"""The durable trace knowledge graph: runs accumulate in an on-disk Oxigraph store.

``ioa-check trace PATH... --store DIR`` keeps, in one persistent store that every consumer
reads (the canonical trace ontology's "one durable graph"):

* **one named graph per run**, named by the run's IRI (``urn:ioa-trace:run:<run>``, which is
  also its ``mas:Session`` node): the run's knowledge graph exactly as ``--emit-kg`` builds it,
  and the run record, what the audit needs of the run (its calls after privacy: digests and
  counts, text only in a plain store loaded with ``--include-content``), so that the run can
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
graph, record and verdict are derived from the checkpoints, its record and verdict written in
one transaction once its graph is (a graph without its record, which a write cut short
leaves, is dropped and written again; new small runs are written many at a time, their
verdicts in the order of their numbers: :class:`_Batch`), so a rerun rebuilds whatever the
crash left unwritten. RocksDB's lock file makes a second writer fail at once; that is
:class:`StoreUnavailable` (exit status 74), never a wait.

**On a SPARQL 1.1 server** (``--store URL``, :class:`RemoteTraceStore`, its protocol client
and turns in :mod:`.remote`) the same graphs are kept for many feeders at once: each write
is one update request, and the reads and writes that record a run are made under a turn
claimed in the store, so that verdict numbers stay unique and no run is recorded twice. A
private remote store's key is in a file of the user's (``--store-key``), never on the server.

**Private by default** (the canonical trace ontology's "Identity and privacy"): a new store
gets a key of its own, 32 random bytes in ``DIR/ioa-check-trace-store.key`` (mode 0600,
outside the graph), and everything stored that identifies a run, a person or a machine is a
reference keyed with it (:class:`~.privacy.Private`): run, session and call ids, input and
declaration file paths, response ids, digests of free text, consumer keys, and agent and MAS
names that the declarations do not publish. The store's mode (``private:<fingerprint of the
key>``) and version are in the graph ``urn:ioa-trace:store``, so a replaced key is told and
refused. Runs are judged for the store as it keeps them (:meth:`Feed.judged`): the run with
its references (:func:`private_runs`), the declarations with their paths keyed
(:func:`opaque_declarations`), so that the verdict's reasons name nothing the graph does not.
Checkpoints of a private store hold positions and keyed prefix digests without the fold
(which names agents and calls), so an interrupted input is read again from its start.

``--store-plain-ids`` makes a store that keeps identities as the trace has them (mode
``plain``); the two modes never mix. Stores of version 1 (before stores were private) are
read as they were; a plain one is fed only with ``--store-plain-ids``, one made with
``--opaque-ids`` (references under a key of the user's) is no longer fed, and its runs are
judged again under that key (:func:`opaque_declarations`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import itertools
import json
import os
import secrets
import signal
import stat
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import quote

import pyoxigraph as ox

from .._exceptions import ConfigurationError
from .._findings import Finding, Severity, Verdict
from .._version import __version__
from .audit import AgentAudit, RunAudit, Use
from .audit import audit as judge
from .calls import Call, Digest, Run
from .declarations import Declarations
from .events import Fold, Source
from .graph import IOAT, MAS, quad_chunks
from .nquads import Chunk
from .privacy import DELEGATION_PREFIX, IRI_BASE, Disclosure, Private, literal_text
from .remote import SparqlServer, Turn, data_block
from .remote import shown as server_name
from .state import Cursor

# Re-exported: callers name them as the store's, wherever they are defined.
from .store_errors import QueryRefused
from .store_errors import RunsNarrowed as RunsNarrowed
from .store_errors import StoreError as StoreError
from .store_errors import StoreKeyError as StoreKeyError
from .store_errors import StoreUnavailable as StoreUnavailable

# 2: private by default, the mode recorded when the store is made. 1: plain, or references
# under a key of the user's (--opaque-ids), the mode recorded by the first feed.
STORE_VERSION = 2
READ_VERSIONS = (1, 2)
PRIVATE, PLAIN = "private", "plain"
# The store's key: in the store's folder, outside the graph, readable by its owner only.
KEY_FILE = "ioa-check-trace-store.key"
KEY_BYTES = 32
# The key is written here first, then linked to its name: a creation cut short never leaves
# a key file of fewer bytes.
_PARTIAL_KEY = f".{KEY_FILE}.partial"
DEFAULT_CONSUMER = "ioa-check-trace"
# The calls a verdict's use links to (the run's graph holds them all).
LINKED_CALLS = 5

# A run's graph past this many quads is written in transactions of this size (the run's
# record and verdict, the mark of a complete graph, last): one transaction holds its writes
# in memory, six index entries a quad.
CHUNK_QUADS = 20_000
# A run's record (its JSON, ``ioat:runRecord``) past this many characters is stored in parts
# of about this size (``ioat:recordPart`` of ``RUN:record:N``, their number
# ``ioat:runRecordParts``), each made, written and let go in turn with the graph's chunks: a
# long run's record is hundreds of megabytes, and held whole it was copied five times over
# on its way to the store. Small, because the store's compaction holds a block of each file
# it merges, and a value is a block of its own when larger than one: parts of 4 MiB made a
# million-event run's feed hold 300 MiB more while the store merged its files at the end.
RECORD_PART_CHARS = 64 << 10
# The parts are loaded this many at a time (4 MiB): a bulk load each would leave the store
# thousands of small files to merge.
RECORD_LOAD_PARTS = 64
# On a SPARQL server, where the merging is the server's and every part is a request of its
# own when the record is read back, the parts are of 4 Mi characters, one to an update.
REMOTE_RECORD_PART_CHARS = 4 << 20
# The store's memory tables are written to its files after this many quads: RocksDB keeps
# them until they fill, one table per index, and a long feed would hold gigabytes.
FLUSH_QUADS = 60_000
# A feed that wrote this many quads compacts the store when it ends (TraceStore.finish).
COMPACT_QUADS = 1_000_000
# The graphs of new small runs are gathered and written together (:class:`_Batch`): a batch
# is written once it would pass CHUNK_QUADS quads or this many bytes of N-Quads (a run of few
# quads may have a record of 64 KiB).
BATCH_BYTES = 8 << 20
# A batch's graphs are bulk loaded when they are at least this share of CHUNK_QUADS (2,000
# quads), and committed with the batch's marks in one transaction when fewer: a bulk load
# costs about 12 ms whatever its size, a transaction 11 to 15 µs a quad (measured, a store
# of 50,000 quads: 1,000 quads took 18 ms bulk loaded, 13 ms in a transaction; 5,000, 36 ms
# and 73 ms), and the new runs that come between runs taking another path are written a
# few at a time.
BULK_SHARE = 10

# Whether Oxigraph checks a chunk's IRIs again as it loads it: no (``lenient``). Every term
# of a chunk was made by Oxigraph (``NamedNode``, ``Quad``) or spelled from such terms and
# from literals escaped as the grammar asks (nquads.py; tests/test_trace_nquads.py holds the
# text to Oxigraph's own terms, and a lenient load to a checked one), so the check would be
# the second of the same IRIs, a sixth of the loader's time (measured on a day's OTLP
# traces). The text is still parsed whole.
RECHECK_IRIS = False

VERDICTS = f"{IRI_BASE}verdicts"
STORE_GRAPH = f"{IRI_BASE}store"
# A test hook: the process kills itself with SIGKILL right after committing this many
# transactions, so the crash tests interrupt a real run at exact points between batches.
KILL_AFTER_ENV = "IOA_CHECK_TEST_KILL_AFTER_TRANSACTIONS"
# A test hook: a run's record is stored in parts of this many characters (RECORD_PART_CHARS
# otherwise), so that the crash tests cut a write among the parts of a small run's record.
PART_CHARS_ENV = "IOA_CHECK_TEST_RECORD_PART_CHARS"
# A test hook: the parts are loaded this many at a time (RECORD_LOAD_PARTS otherwise).
LOAD_PARTS_ENV = "IOA_CHECK_TEST_RECORD_LOAD_PARTS"
# A test hook: a batch of new runs is written once it would pass this many quads (CHUNK_QUADS
# otherwise), so that the crash tests cut a feed of a few dozen small runs among its batches.
BATCH_QUADS_ENV = "IOA_CHECK_TEST_BATCH_QUADS"
# A test hook: once the store is open (its lock taken), the process creates this file and
# waits until it is removed (at most a minute), so that a test can run a second process
# against a store a first one certainly holds.
HOLD_ENV = "IOA_CHECK_TEST_HOLD_STORE"

_XSD = "http://www.w3.org/2001/XMLSchema#"
_RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


def term(local: str) -> ox.NamedNode:
    """A term of the provisional trace vocabulary (``ioat:``)."""
    return ox.NamedNode(IOAT + local)


def lexical(value: Any) -> str:
    """A term's text: an IRI, a literal's lexical form."""
    return str(value.value) if hasattr(value, "value") else str(value)


def _text(value: str) -> ox.Literal:
    return ox.Literal(literal_text(value))


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
    """An opened store: every write goes through :meth:`commit`, one transaction each.

    ``create`` is the mode a store made here is made in (:data:`PRIVATE`, ``plain`` or
    ``plain+content``); None opens an existing store only. A store's mode is ``private:<key
    fingerprint>`` or ``plain[+content]`` (version 2); a store of version 1 holds ``plain``,
    ``opaque:<fingerprint>`` (with ``+content``), or no mode at all when it is older than the
    mode (its records say theirs)."""

    # How a run's record is cut into parts, and how many parts go to the store at a time.
    record_part_chars = RECORD_PART_CHARS
    record_load_parts = RECORD_LOAD_PARTS
    # Whether a feed gathers its new small runs and writes them together (:class:`_Batch`).
    gathers_runs = True

    def __init__(self, path: str, create: str | None = None) -> None:
        self.path = path
        self._key: bytes | None = None
        self.store = self._connect(create)
        self.transactions = 0
        self.largest = 0  # the most quads one transaction wrote (tests hold it to CHUNK_QUADS)
        self.written = 0
        self._unflushed = 0
        hook = os.environ.get(KILL_AFTER_ENV, "")
        self._kill_after = int(hook) if hook.isdigit() else None
        self._next_verdict: int | None = None
        graph = ox.NamedNode(STORE_GRAPH)
        versions = [lexical(q.object) for q in self.store.quads_for_pattern(
            graph, term("storeVersion"), None, graph)]
        if not versions and create is not None and self._empty():
            self._make(create)
        elif not versions:
            # Another feeder of a shared store may have made it since it was read.
            versions = [lexical(q.object) for q in self.store.quads_for_pattern(
                graph, term("storeVersion"), None, graph)]
            if not versions:
                raise StoreError(f"{self.path} is not a trace store of ioa-check (it has no "
                                 "store version)")
        elif len(versions) != 1 or versions[0] not in map(str, READ_VERSIONS):
            raise StoreError(f"{self.path} is a trace store of version {', '.join(versions)}; "
                             f"this ioa-check reads versions {', '.join(map(str, READ_VERSIONS))}")
        self.version = int(lexical(next(iter(self.store.quads_for_pattern(
            graph, term("storeVersion"), None, graph))).object))
        modes = [lexical(q.object) for q in self.store.quads_for_pattern(
            graph, term("mode"), None, graph)]
        if len(modes) > 1 or (self.version > 1 and not modes):
            raise StoreError(f"{self.path} is damaged: it records {len(modes)} modes, not one")
        self.mode: str | None = modes[0] if modes else None

    # What differs between the embedded store and a remote one (:mod:`.remote`): how it is
    # reached, where a private store's key is, and how a write is kept to one writer.

    def _connect(self, create: str | None) -> Any:
        store = _open(self.path, create)
        _hold()
        return store

    def _empty(self) -> bool:
        return not any(True for _ in self.store.quads_for_pattern(None, None, None))

    @property
    def key_location(self) -> str:
        """The file a private store's key is in."""
        return key_path(self.path)

    def _read_key(self) -> bytes:
        return read_key(self.path)

    def _new_key(self) -> bytes:
        """A new private store's key (or the one a creation cut short left)."""
        key = read_key(self.path) if os.path.lexists(key_path(self.path)) else _create_key(
            self.path)
        with contextlib.suppress(FileNotFoundError):  # a creation cut short left it
            os.unlink(os.path.join(self.path, _PARTIAL_KEY))
        return key

    def _plain_allowed(self) -> None:
        if os.path.lexists(key_path(self.path)):
            raise StoreError(_KEY_WITHOUT_STORE.format(path=self.path))

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """Held around the reads and writes that record one run: the embedded store's lock
        makes this process its only writer already."""
        return contextlib.nullcontext()

    def _make(self, mode: str) -> None:
        """A new store: its key (a private one), then its version and mode in one transaction,
        under the lock. A key file already there (a creation cut short after writing it, or
        put there for the store to use) is used if it is a key this store can keep."""
        if mode == PRIVATE:
            key = self._new_key()
            mode = f"{PRIVATE}:{key_fingerprint(key)}"
            self._key = key
        else:
            self._plain_allowed()
        graph = ox.NamedNode(STORE_GRAPH)
        self.commit([ox.Quad(graph, term("storeVersion"), _integer(STORE_VERSION), graph),
                     ox.Quad(graph, term("mode"), _text(mode), graph)])

    @property
    def private(self) -> bool:
        return self.mode is not None and self.mode.startswith(f"{PRIVATE}:")

    def key(self) -> bytes:
        """A private store's key, read from its file and held to the fingerprint its mode
        records (a replaced key is refused, never used: its references would join nothing)."""
        if self._key is None:
            assert self.mode is not None and self.private
            key = self._read_key()
            if key_fingerprint(key) != self.mode.partition(":")[2]:
                raise StoreKeyError(
                    f"{self.key_location} is not the key the store {self.path} was made with "
                    "(it was replaced): its references cannot be made with another key; put "
                    "the store's own key file back (nothing was written)")
            self._key = key
        return self._key

    def admit(self, wanted: str) -> None:
        """Refuse a feed in another mode than the store's (:data:`PRIVATE` or
        ``plain[+content]``), before anything is read or written: references beside raw
        identities undo the keying, and two content settings would rewrite each other's
        records on every feed. A private store's key is checked here."""
        if self.version == 1:
            self._admit_legacy(wanted)
        elif self.private:
            if wanted != PRIVATE:
                raise StoreError(
                    f"{self.path} is a private store (its identities are references keyed with "
                    f"its own key, {KEY_FILE}): feed it without --store-plain-ids, or feed "
                    "another store")
            self.key()
        elif wanted == PRIVATE:
            raise StoreError(
                f"{self.path} keeps identities as the traces have them (it was made with "
                "--store-plain-ids): give --store-plain-ids to feed it, or feed another store "
                "(private by default)")
        elif wanted != self.mode:
            raise StoreError(
                f"{self.path} holds runs disclosed as {self.mode}; this feed is {wanted}: give "
                "the same --include-content as the store was made with, or use another store")

    def _admit_legacy(self, wanted: str) -> None:
        """A store of version 1: a plain one is fed as before, with --store-plain-ids only;
        one made with --opaque-ids (references under a key of the user's) no longer."""
        held = [self.mode] if self.mode is not None else self._record_modes()
        if any(m.startswith("opaque:") for m in held):
            raise StoreError(
                f"{self.path} was made with --opaque-ids by an ioa-check of before stores were "
                "private by default (store version 1): it is no longer fed; `trace query` "
                "reads it and `trace reaudit --opaque-key FILE` judges its runs again; feed a "
                "new store, private by default, with a key of its own")
        if wanted == PRIVATE:
            raise StoreError(
                f"{self.path} keeps identities as the traces have them (a store of version 1, "
                "made before stores were private by default): give --store-plain-ids to go on "
                "feeding it as it is, or feed a new store (private by default)")
        graph = ox.NamedNode(STORE_GRAPH)
        if self.mode is None:
            if held:
                return  # a store of before the mode was kept: its records say theirs
            self.commit([ox.Quad(graph, term("mode"), _text(wanted), graph)])
            self.mode = wanted
        elif self.mode != wanted:
            raise StoreError(
                f"{self.path} holds runs disclosed as {self.mode}; this feed is {wanted}: give "
                "the same --include-content as the store was made with, or use another store")

    def _record_modes(self) -> list[str]:
        """The modes the run records of a version 1 store without a mode name."""
        modes = []
        for _, text in self.stored_runs():
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                mode = json.loads(text).get("mode")
                if isinstance(mode, str):
                    modes.append(mode)
        return modes

    def commit(self, quads: list[ox.Quad] | Chunk) -> None:
        """Add ``quads`` in one transaction: all of them are written, or none."""
        try:
            if isinstance(quads, Chunk):
                self.store.load(quads.data, format=ox.RdfFormat.N_QUADS, lenient=not RECHECK_IRIS)
            else:
                self.store.extend(quads)
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None
        self._committed(len(quads))

    def load(self, quads: Chunk) -> None:
        """Add a chunk of a large run's graph: by Oxigraph's bulk loader, which writes without
        a transaction (faster, and its memory does not grow with the chunk). A chunk cut short
        is part of a graph without its record, dropped and written again by the next feed
        (:func:`record_run`)."""
        try:
            self.store.bulk_load(quads.data, format=ox.RdfFormat.N_QUADS, lenient=not RECHECK_IRIS)
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None
        # The bulk loader writes the store's files itself, past its memory tables: nothing of
        # it waits to be flushed. Counted, it flushed a long run's store every few chunks
        # (a quarter of a 360,000-event feed's time, measured), for nothing.
        self._committed(len(quads), buffered=False)

    def drop(self, graph: str) -> None:
        """Remove the named graph ``graph`` (what a cut-short write left of it, or a run's
        graph about to be written again), in one transaction."""
        try:
            self.store.update(f"DROP SILENT GRAPH <{graph}>")
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None
        self._committed(0)

    def replace(self, graph: str, quads: list[ox.Quad] | Chunk) -> None:
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
        self._committed(len(quads))

    def flush(self) -> None:
        """Write what the transactions left in memory to the store's files, so that the next
        opener does not replay the write-ahead log (a second or more on a large store)."""
        self._unflushed = 0
        try:
            self.store.flush()
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None
        forget_info_log(self.path)  # a log RocksDB rolled over since it was opened

    def finish(self) -> None:
        """The end of a feed: :meth:`flush`, and a feed that wrote much (a long run, a day of
        runs) compacted, so that its many small files and the versions its transactions
        replaced are merged (RocksDB's compaction, ``Store.optimize``: about a second for
        100 MB on the machine of docs/performance.md; a small feed leaves it to a larger)."""
        self.flush()
        if self.written >= COMPACT_QUADS:
            self.compact()

    def compact(self) -> None:
        try:
            self.store.optimize()
        except OSError as exc:
            raise StoreUnavailable(f"the trace store {self.path} cannot be written: {exc}") from None

    def _committed(self, quads: int, buffered: bool = True) -> None:
        """``quads`` written; ``buffered``: by a transaction, into the memory tables
        :data:`FLUSH_QUADS` bounds."""
        self.transactions += 1
        self.written += quads
        self.largest = max(self.largest, quads)
        if buffered:
            self._unflushed += quads
        if self._unflushed >= FLUSH_QUADS:
            self._unflushed = 0
            self.flush()
        if self._kill_after is not None and self.transactions >= self._kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    def holds(self, graph: str) -> bool:
        """Whether the named graph ``graph`` has a quad."""
        name = ox.NamedNode(graph)
        return any(True for _ in self.store.quads_for_pattern(None, None, None, name))

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

    def record_digests(self, graph: str) -> list[str]:
        """The digests stored with the run record of the run graph ``graph`` (one, unless the
        store was damaged)."""
        return [lexical(o) for o in self.objects(graph, "recordSha256", graph)]

    def stored_runs(self) -> Iterator[tuple[str, str]]:
        """Each stored run's graph name and record (JSON), in graph-name order."""
        found = [(lexical(q.graph_name), lexical(q.object)) for q in self.store.quads_for_pattern(
            None, term("runRecord"), None, None) if isinstance(q.graph_name, ox.NamedNode)]
        for quad in self.store.quads_for_pattern(None, term("runRecordParts"), None, None):
            if isinstance(quad.graph_name, ox.NamedNode):
                text = self.record_text(quad.graph_name.value)
                if text is not None:
                    found.append((quad.graph_name.value, text))
        yield from sorted(found)

    def record_text(self, iri: str) -> str | None:
        """The record of the run ``iri``: its one literal, or its parts joined (a large run's);
        None when the store holds no whole record of it."""
        held = self.objects(iri, "runRecord", iri)
        if held:
            return str(held[0].value)
        count = self.objects(iri, "runRecordParts", iri)
        if not count:
            return None
        parts = []
        for index in range(int(lexical(count[0]))):
            part = self.objects(record_part(iri, index), "recordPart", iri)
            if not part:
                return None  # a damaged record: told as none (the next feed writes it again)
            parts.append(str(part[0].value))
        return "".join(parts)

    def query(self, text: str, substitutions: dict[str, str] | None = None) -> Any:
        bound: dict[ox.Variable, Any] = {ox.Variable(k): ox.Literal(v)
                                         for k, v in (substitutions or {}).items()}
        return self.store.query(text, substitutions=bound or None)


class RemoteTraceStore(TraceStore):
    """A trace store on a SPARQL 1.1 server: :class:`~.store.TraceStore`'s interface, its
    graphs on the server. A private one's key is in ``key_file`` (``--store-key``), never on
    the server."""

    record_part_chars = REMOTE_RECORD_PART_CHARS
    record_load_parts = 1
    # Not on a server: a run is recorded under a turn of its own (:meth:`writing`), its
    # verdict numbered under it, and a batch's verdicts written after their turns were given
    # back could take numbers another feeder took since. A server has no bulk loader either.
    gathers_runs = False

    def __init__(self, url: str, create: str | None = None,
                 key_file: str | None = None) -> None:
        self.url = url
        self.key_file = key_file
        self._turn: Turn | None = None
        super().__init__(server_name(url), create)

    def _connect(self, create: str | None) -> SparqlServer:
        server = SparqlServer(self.url)
        _hold()  # the tests' hook: two feeders started, then let go at once
        return server

    def _empty(self) -> bool:
        server: SparqlServer = self.store
        return server.empty()

    @property
    def key_location(self) -> str:
        if self.key_file is None:
            return "--store-key"
        return self.key_file

    def _read_key(self) -> bytes:
        if self.key_file is None:
            raise StoreKeyError(
                f"{self.path} is a private store: give its key file with --store-key FILE "
                "(the key that made it; it is never kept on the server)")
        return read_key(self.path, self.key_file)

    def _new_key(self) -> bytes:
        if self.key_file is None:
            raise StoreKeyError(
                f"{self.path} would be made a private store: give --store-key FILE, where its "
                "new key is written (mode 0600) or an existing key of "
                f"{KEY_FILE}'s form is read; or --store-plain-ids")
        if os.path.lexists(self.key_file):
            return read_key(self.path, self.key_file)
        return _create_key(os.path.dirname(os.path.abspath(self.key_file)), self.key_file)

    def _plain_allowed(self) -> None:
        if self.key_file is not None:
            raise StoreError("--store-key goes with a private store, not --store-plain-ids")

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        if self._turn is not None:  # already held: one turn covers the nested writes
            yield
            return
        turn = Turn(self.store)
        turn.take()
        self._turn = turn
        self._next_verdict = None  # read again under the turn: others wrote since
        try:
            yield
        finally:
            self._turn = None
            turn.give_back()

    def _fence(self) -> str:
        return self._turn.fence() if self._turn is not None else ""

    def commit(self, quads: list[ox.Quad] | Chunk) -> None:
        block = data_block(quads)
        if self._turn is None:
            self.store.update(f"INSERT DATA {{ {block} }}")
        else:
            self.store.update(f"INSERT {{ {block} }} WHERE {{ {self._fence()} }}")
        self._committed(len(quads))

    def replace(self, graph: str, quads: list[ox.Quad] | Chunk) -> None:
        name = str(ox.NamedNode(graph))
        fence = self._fence()
        self.store.update(
            f"DELETE {{ GRAPH {name} {{ ?s ?p ?o }} }} WHERE {{ {fence} GRAPH {name} "
            f"{{ ?s ?p ?o }} }} ; INSERT {{ {data_block(quads)} }} WHERE {{ {fence} }}")
        self._committed(len(quads))

    def load(self, quads: Chunk) -> None:
        self.commit(quads)  # a server has no bulk loader: one update a chunk

    def drop(self, graph: str) -> None:
        name = str(ox.NamedNode(graph))
        fence = self._fence()
        self.store.update(f"DELETE {{ GRAPH {name} {{ ?s ?p ?o }} }} WHERE {{ {fence} GRAPH "
                          f"{name} {{ ?s ?p ?o }} }}")
        self._committed(0)

    def holds(self, graph: str) -> bool:
        rows = self.store.select(
            f"SELECT ?s WHERE {{ GRAPH {ox.NamedNode(graph)} {{ ?s ?p ?o }} }} LIMIT 1")
        return bool(rows)

    def flush(self) -> None:
        """Each update is durable when the server answers it."""

    def compact(self) -> None:
        """A server compacts its store as it sees fit."""

    def stored_runs(self) -> Iterator[tuple[str, str]]:
        """As on a folder, but the graph names first, then each record in an answer of its
        own: all records in one answer would pass the answer cap on a large store."""
        record, parts = term("runRecord"), term("runRecordParts")
        names = sorted(lexical(row["g"]) for row in self.store.select(
            f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ {{ ?s {record} ?record }} UNION "
            f"{{ ?s {parts} ?parts }} }} }}")
            if isinstance(row.get("g"), ox.NamedNode))
        for name in names:
            text = self.record_text(name)
            if text is not None:
                yield name, text

    def next_verdict(self) -> int:
        """The next verdict number: read under the turn (other feeders write between turns),
        then counted on while the turn lasts."""
        if self._next_verdict is None:
            rows = self.store.select(
                f"SELECT (MAX(?n) AS ?last) WHERE {{ GRAPH <{VERDICTS}> "
                f"{{ ?v <{term('sequence').value}> ?n }} }}")
            value = rows[0].get("last") if rows else None
            self._next_verdict = (int(lexical(value)) if value is not None else 0) + 1
        number = self._next_verdict
        self._next_verdict += 1
        return number

    def current_audit_key(self, run_iri: str) -> str | None:
        rows = self.store.select(
            f"SELECT ?key WHERE {{ GRAPH <{VERDICTS}> {{ ?v <{term('auditedRun').value}> "
            f"{ox.NamedNode(run_iri)} ; <{term('sequence').value}> ?n ; "
            f"<{term('auditKey').value}> ?key }} }} ORDER BY DESC(?n) LIMIT 1")
        return lexical(rows[0]["key"]) if rows and "key" in rows[0] else None

    def query(self, text: str, substitutions: dict[str, str] | None = None) -> Any:
        """``text`` on the server, each parameter bound by a ``VALUES`` block after the
        query, which binds what the query selects: a parameter it does not select would be
        ignored there, so it is refused (pyoxigraph binds it inside, on a folder)."""
        bound = {ox.Variable(k): ox.Literal(v) for k, v in (substitutions or {}).items()}
        try:
            result = self.store.query(text, bound or None)
        except QueryRefused as exc:  # the query asked: told as a folder's store tells it
            raise SyntaxError(str(exc)) from None
        if bound:
            selected = {v.value for v in result.variables} if isinstance(
                result, ox.QuerySolutions) else set()
            unselected = sorted(set(substitutions or ()) - selected)
            if unselected:
                raise ValueError(
                    f"on a store on a SPARQL server, a --param binds a variable the query "
                    f"selects; it does not select {', '.join('?' + n for n in unselected)}")
        return result


def is_remote(location: str) -> bool:
    """Whether ``--store`` names a SPARQL 1.1 server (an ``http://`` or ``https://`` URL)
    rather than a folder."""
    return location.lower().startswith(("http://", "https://"))


def open_store(location: str, create: str | None = None,
               key_file: str | None = None) -> TraceStore:
    """The store ``--store`` names: an embedded one in a folder, or one on a SPARQL 1.1
    server (:class:`~.remote.RemoteTraceStore`), whose private key is in ``key_file``."""
    if is_remote(location):
        return RemoteTraceStore(location, create, key_file)
    if key_file is not None:
        raise StoreError("--store-key is for a store on a SPARQL server: an embedded store "
                         f"keeps its key in its folder ({KEY_FILE})")
    return TraceStore(location, create)


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


def _open(path: str, create: str | None) -> ox.Store:
    if os.path.lexists(path) and not os.path.isdir(path):
        raise StoreError(f"{path} is not a folder, so it cannot be a trace store")
    current = os.path.isfile(os.path.join(path, "CURRENT"))
    if create is None and not current:
        raise StoreError(f"{path} is not a trace store (no store there)")
    if not current:
        _new_folder(path, create == PRIVATE)
    else:
        _held_to_be_ours(path)
    try:
        store = ox.Store(path)
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
    forget_info_log(path)
    forget_abandoned_loads(path)
    return store


def _held_to_be_ours(path: str) -> None:
    """A folder with a ``CURRENT`` file is read first, read-only, which writes nothing in it
    (RocksDB's read-only open takes no lock and rotates no log): opened for writing, RocksDB
    rewrites its manifest and log, and the store's open removes its info logs and abandoned
    chunks, so a folder that is not a store of ioa-check (another program's Oxigraph store,
    any folder holding a file of that name) is refused before, byte for byte as it was."""
    graph = ox.NamedNode(STORE_GRAPH)
    try:
        found = ox.Store.read_only(path)
    except (RuntimeError, OSError) as exc:
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        try:
            names = set(os.listdir(path))
        except OSError as listing:  # a folder that may be searched but not listed
            raise StoreUnavailable(f"the trace store {path} cannot be opened: {why} "
                                   f"({listing.strerror})") from None
        if names & {"IDENTITY", "OPTIONS", "LOCK"} or any(
                n.startswith(("MANIFEST-", "OPTIONS-"))
                or (n.endswith((".sst", ".log")) and n[:-4].isdigit()) for n in names):
            # RocksDB's own files: a store, damaged (or of a format this one cannot read).
            raise StoreUnavailable(f"the trace store {path} cannot be opened, it is damaged: "
                                   f"{why} (nothing in it was changed)") from None
        raise StoreError(f"{path} is not a trace store (it cannot be read as one: {why}); "
                         "nothing in it was changed") from None
    try:
        versions = [lexical(q.object) for q in found.quads_for_pattern(
            graph, term("storeVersion"), None, graph)]
        held = versions or not any(True for _ in found.quads_for_pattern(None, None, None))
    finally:
        del found
    if not held:  # an empty store is a creation cut short, which the open goes on with
        raise StoreError(f"{path} is not a trace store of ioa-check (it has no store version); "
                         "nothing in it was changed")


def forget_info_log(path: str) -> None:
    """Remove RocksDB's info log from the store's folder (``LOG``, ``LOG.old.*``): each open
    writes one (about 140 KiB, up to a thousand kept) naming the folder's path and the
    machine's host name, which a private store must not hold, and RocksDB never reads them.
    The one this process writes goes on into the unlinked file, so nothing of it stays."""
    with contextlib.suppress(OSError):
        for name in os.listdir(path):
            if name == "LOG" or name.startswith("LOG.old."):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(path, name))


def forget_abandoned_loads(path: str) -> None:
    """Remove the chunks a bulk load left in the store's folder when its process was killed.

    Oxigraph's bulk loader writes each chunk to an SST file of its own in the store's folder,
    ``bulk-<a random number>.sst`` (pyoxigraph 0.5), then has RocksDB take it in under a name
    of RocksDB's; a process killed between the two leaves the file (10 MiB a kill, seen
    here), which nothing reads or removes. Only a process holding the store's lock writes
    one, and this one holds it now (it opened the store to write, before any load of its
    own): every such file is an abandoned one. Anything else in the folder is left alone."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(path):
            name = entry.name
            if (name.startswith("bulk-") and name.endswith(".sst") and name[5:-4].isascii()
                    and name[5:-4].isdigit() and entry.is_file(follow_symlinks=False)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


_KEY_WITHOUT_STORE = (
    "{path} holds a store key but no store (a private store's creation was cut short): "
    "feed it without --store-plain-ids, or remove the folder to make a plain store there")


def _new_folder(path: str, private: bool) -> None:
    """The folder a new store is made in: created readable by its owner only, or an empty one
    (a store writes a dozen files into its folder: never into one that holds others). A
    store's own key file may be there already (a creation cut short after writing it)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        held = set(os.listdir(path))
    except OSError as exc:
        raise StoreUnavailable(f"the trace store {path} cannot be made: {exc.strerror}") from None
    if held - {KEY_FILE, _PARTIAL_KEY}:
        raise StoreError(f"{path} is a folder that holds other files, not a trace store")
    if KEY_FILE in held and not private:
        raise StoreError(_KEY_WITHOUT_STORE.format(path=path))
    if KEY_FILE in held:
        read_key(path)  # held to the rules before the store writes anything beside it


def key_path(path: str) -> str:
    """The key file of the store at ``path``."""
    return os.path.join(path, KEY_FILE)


def read_key(path: str, where: str | None = None) -> bytes:
    """The key of the store at ``path`` (in ``where``, by default its folder's key file): a
    regular file of its own (not a link), owned by this user and readable by its owner only,
    of :data:`KEY_BYTES` bytes; anything else is a :class:`StoreKeyError` naming what to do."""
    where = where or key_path(path)
    try:
        # O_NONBLOCK: a FIFO put in its place is refused below, not waited on.
        handle = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise StoreKeyError(
            f"{where}, the key of the private store {path}, is missing: its references cannot "
            "be made without it; put the store's own key file back (nothing was written)"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreKeyError(
                f"{where} is a symbolic link: a store's key is a file of its own in the store's "
                "folder; put the key file itself there (nothing was written)") from None
        raise StoreUnavailable(f"{where} cannot be read: {exc.strerror}") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise StoreKeyError(f"{where} is not a regular file, so it is not the store's key")
        if info.st_uid != os.geteuid():
            raise StoreKeyError(f"{where} belongs to another user: a store's key is its "
                                "owner's (nothing was written)")
        if info.st_mode & 0o077:
            raise StoreKeyError(
                f"{where} can be read or written by others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}): the key is what keeps the store's "
                f"references private; make it its owner's only (chmod 600 {where})")
        data = os.read(handle, KEY_BYTES + 1)
    except OSError as exc:
        raise StoreUnavailable(f"{where} cannot be read: {exc.strerror}") from None
    finally:
        os.close(handle)
    if len(data) != KEY_BYTES:
        raise StoreKeyError(
            f"{where} holds {len(data) if len(data) <= KEY_BYTES else 'more than ' + str(KEY_BYTES)}"
            f" bytes, not the {KEY_BYTES} of a store's key (truncated or replaced): put the "
            "store's own key file back (nothing was written)")
    return data


def _create_key(path: str, where: str | None = None) -> bytes:
    """A new store's key (in ``where``, by default its folder's key file): 32 random bytes,
    written and synced under another name, linked to its own (never over a file there) and
    the folder synced, so that the store never records the fingerprint of a key its folder
    could lose in a crash."""
    where = where or key_path(path)
    folder_path = os.path.dirname(os.path.abspath(where))
    partial = os.path.join(folder_path, f".{os.path.basename(where)}.partial")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)  # a creation cut short left it; it was never used
        handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(handle, os.urandom(KEY_BYTES))
            os.fsync(handle)
        finally:
            os.close(handle)
        try:
            os.link(partial, where)
        except FileExistsError:
            pass  # read and held to the rules below, whoever wrote it
        finally:
            os.unlink(partial)
        folder = os.open(folder_path, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError as exc:
        raise StoreUnavailable(f"the key of the trace store {path} cannot be written: "
                               f"{exc.strerror}") from None
    return read_key(path, where)


# --- what the audit needs of a run ------------------------------------------------------------


def run_record(run: Run, calls: Any = None) -> dict[str, Any]:
    """``run`` as plain JSON: every field of the run and of its calls, findings as dicts
    (``calls``, when given, stands for the calls)."""
    out: dict[str, Any] = {}
    for field, value in run._asdict().items():
        if field == "calls":
            out[field] = [call_record(call) for call in value] if calls is None else calls
        elif field == "findings":
            out[field] = [_finding_json(f) for f in value]
        else:
            out[field] = value
    return out


def call_record(call: Call) -> dict[str, Any]:
    """``call`` as plain JSON, as a run's record holds it (its digests as objects)."""
    out = call._asdict()
    for side in ("input", "output"):
        digest = out[side]
        if digest is not None:
            out[side] = digest.as_json()
    return out


def record_pieces(mode: str, run: Run, identity: bool = False,
                  calls: Iterable[Call] | None = None) -> Iterator[str]:
    """The text of the record ``{"mode": mode, "run": run_record(run)}`` (``json.dumps``,
    UTF-8 kept, keys in the run's order) a call at a time, never whole; ``identity``: without
    the run's source (:func:`record_digest`'s text); ``calls``: the run's calls, where its
    own are not (:class:`_RecordCalls`). The calls go where a random marker stands in the
    rest of the record, so no text of the run can be taken for it."""
    marker = f"calls-{secrets.token_hex(16)}"
    head = run_record(run, marker)
    if identity:
        del head["source"]
    before, after = json.dumps({"mode": mode, "run": head}, ensure_ascii=False).split(
        f'"{marker}"')
    yield before + "["
    for index, call in enumerate(run.calls if calls is None else calls):
        yield (", " if index else "") + json.dumps(call_record(call), ensure_ascii=False)
    yield "]" + after


def pieces_digest(pieces: Iterable[str]) -> str:
    """:func:`record_digest` of a record given as :func:`record_pieces` (``identity``)."""
    hasher = hashlib.sha256()
    for piece in pieces:
        hasher.update(piece.encode("utf-8", "surrogatepass"))
    return hasher.hexdigest()


class _RecordParts:
    """The parts of a run's record, each about ``size`` characters, made as they are taken;
    :attr:`count` says how many were made."""

    def __init__(self, pieces: Iterator[str], size: int) -> None:
        self.pieces = pieces
        self.size = size
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        limit = _test_hook(PART_CHARS_ENV, self.size)
        part: list[str] = []
        size = 0
        for piece in self.pieces:
            part.append(piece)
            size += len(piece)
            if size >= limit:
                self.count += 1
                yield "".join(part)
                part, size = [], 0
        if part:
            self.count += 1
            yield "".join(part)


def _test_hook(name: str, default: int) -> int:
    """A size a test sets through the environment variable ``name``, else ``default``."""
    hook = os.environ.get(name, "")
    return int(hook) if hook.isdigit() and int(hook) > 0 else default


def record_part(iri: str, index: int) -> str:
    """The node of a run's record's ``index``-th part, in the run's graph."""
    return f"{iri}:record:{index}"


def run_from_record(record: dict[str, Any]) -> Run:
    fields: dict[str, Any] = {}
    for field in Run._fields:
        value: Any = record.get(field)
        if field == "calls":
            value = tuple(Call(**{**call, "ambiguous": tuple(call.get("ambiguous") or ()),
                                  "candidates": _keys(call.get("candidates")),
                                  "input": _digest(call.get("input")),
                                  "output": _digest(call.get("output"))})
                          for call in value)
        elif field == "findings":
            value = tuple(_finding_of(f) for f in value)
        elif field == "records":
            value = tuple(value)
        fields[field] = value
    return Run(**fields)


def _digest(value: Any) -> Digest | None:
    return Digest.of(value) if value is not None else None


def _keys(value: list[str] | None) -> tuple[str, ...] | None:
    return tuple(value) if value is not None else None


def _finding_json(finding: Finding) -> dict[str, Any]:
    return {**finding.as_dict(), "effect": str(finding.effect) if finding.effect else None}


def _finding_of(value: dict[str, Any]) -> Finding:
    return Finding(value["code"], Severity(value["severity"]), value["message"],
                   value["section"], value["path"], Verdict(value["effect"]) if value.get(
                       "effect") else None)


def private_runs(runs: list[Run], disclose: Private) -> list[Run]:
    """Each of ``runs`` as a private store keeps it: every identity the reference ``disclose``
    gives it (agents the declarations publish, tools and models stay), digests of free text
    keyed, no text. ``runs`` were built from inputs named by their references
    (:meth:`Feed.source`), so that their sources and findings name none of their paths.

    ``runs`` is emptied: each run is taken out of it and its calls turned one at a time, each
    let go as its copy is made, so that a long run is not held twice (the caller holds the
    runs in ``runs`` only)."""
    out = []
    runs.reverse()  # taken from the end, in the order given
    while runs:
        out.append(_private_run(runs, disclose))
    return out


def _private_run(runs: list[Run], disclose: Private) -> Run:
    """The last of ``runs``, taken out of it, as :func:`private_runs` keeps it."""
    run, calls = _taken(runs)
    for index, call in enumerate(calls):
        calls[index] = _private_call(call, disclose)
    return _private_head(run, disclose)._replace(calls=tuple(calls))


def _taken(runs: list[Run]) -> tuple[Run, list[Call]]:
    """The last of ``runs``, taken out of it, without its calls, and its calls in a list to
    be turned in place: the run's tuple of calls let go, each call is held by the list alone.
    (Taken out here: an argument is held by its caller until the call returns.)"""
    run = runs.pop()
    calls: list[Call] = list(run.calls)
    return run._replace(calls=()), calls


def _private_head(run: Run, disclose: Private) -> Run:
    """``run`` but its calls as a private store keeps it (:func:`private_runs`)."""
    records = tuple({**r, "outcome": disclose.call(r["outcome"]), "trace": disclose.run(
        r["trace"])} for r in run.records)
    return run._replace(
        run_id=disclose.run(run.run_id) if run.run_id else None,
        session_id=disclose.run(run.session_id) if run.session_id else None,
        records=records, mas=disclose.mas(run.mas) if run.mas else None,
        definitions={disclose.agent(agent): {disclose.tool(tool): disclose.call(span)
                                             for tool, span in tools.items()}
                     for agent, tools in run.definitions.items()})


def _keyed_digest(value: Digest | None, disclose: Private) -> Digest | None:
    return None if value is None else value._replace(sha256=disclose.text(value.sha256))


def _private_call(call: Call, disclose: Private) -> Call:
    """``call`` as a private store keeps it (:func:`private_runs`). The agent an OTLP span
    names beside its agent span (its own ``gen_ai.agent.name``) is an agent name like any
    other; its ``gen_ai.agent.id`` (a framework's instance id) is keyed as one too, whatever
    the declarations give: a run's record does not change with them, and a stored run is
    matched on the references of the ids they give (:func:`opaque_declarations`)."""
    target = call.target
    if target:
        target = disclose.agent(target) if call.cls == "agent" else disclose.tool(target) if (
            call.cls == "tool") else target
    return call._replace(
        key=disclose.call(call.key), id=disclose.call_name(call.id, call.key) if call.id else "",
        agent=disclose.agent(call.agent) if call.agent else call.agent, target=target,
        own_agent=disclose.agent(call.own_agent) if call.own_agent else call.own_agent,
        agent_id=disclose.keyed("agent", call.agent_id) if call.agent_id else call.agent_id,
        parent=disclose.call(call.parent) if call.parent else call.parent,
        parent_id=disclose.parent_name(call.parent_id, call.parent) if call.parent_id else None,
        candidates=tuple(disclose.call(k) for k in call.candidates) if (
            call.candidates is not None) else None,
        response_id=disclose.response(call.response_id) if call.response_id else None,
        input=_keyed_digest(call.input, disclose), output=_keyed_digest(call.output, disclose),
        content=None)


def revealed(run: Run, disclose: Private) -> Run:
    """A run a private store holds, with the references of the agent and MAS names that
    ``disclose``'s declarations publish turned back into those names: a reaudit judges it
    against them as a feed under them would have (an agent undeclared when the run was
    stored, declared now, is matched to its declaration)."""
    shown = _Revealing(disclose)
    return shown.run(run, tuple(shown.call(call) for call in run.calls))


class _Revealing:
    """:func:`revealed`'s turning, a call at a time, and back (:meth:`keyed`)."""

    def __init__(self, disclose: Private) -> None:
        self.agents = {disclose.keyed("agent", name): name for name in disclose.agents}
        self.systems = {disclose.keyed("mas", name): name
                        for name in disclose.systems | disclose.agents}
        self.references = {name: reference for reference, name in self.agents.items()}

    def call(self, call: Call) -> Call:
        # A call that names nothing published since it was stored is the record's own: a
        # feed's run, revealed as it is recorded, holds its calls once.
        return _turned_call(call, self.agents)

    def keyed(self, call: Call) -> Call:
        """The call :meth:`call` turned, as it was (see :class:`_RecordCalls`)."""
        return _turned_call(call, self.references)

    def run(self, run: Run, calls: tuple[Call, ...]) -> Run:
        agents = self.agents
        return run._replace(
            calls=calls, mas=self.systems.get(run.mas, run.mas) if run.mas else run.mas,
            definitions={_turned(name, agents) or name: {
                _turned_tool(t, agents) or t: span for t, span in tools.items()}
                for name, tools in run.definitions.items()})


def _turned_call(call: Call, names: dict[str, str]) -> Call:
    """``call`` with its agent, target and own agent (an OTLP span's ``gen_ai.agent.name``
    beside its agent span) turned through ``names``; itself where none is."""
    named = _turned(call.agent, names)
    target = _turned_target(call, names)
    own = _turned(call.own_agent, names)
    if named == call.agent and target == call.target and own == call.own_agent:
        return call
    return call._replace(agent=named, target=target, own_agent=own)


def _turned(value: str | None, names: dict[str, str]) -> str | None:
    return names.get(value, value) if value else value


def _turned_tool(value: str | None, names: dict[str, str]) -> str | None:
    if value and value.startswith(DELEGATION_PREFIX):
        return DELEGATION_PREFIX + (_turned(value[len(DELEGATION_PREFIX):], names) or "")
    return value


def _turned_target(call: Call, names: dict[str, str]) -> str | None:
    return _turned(call.target, names) if call.cls == "agent" else _turned_tool(
        call.target, names) if call.cls == "tool" else call.target


class _RecordCalls:
    """The calls of a private store's record of a run, made from the run as it is judged
    (:func:`revealed`'s) a call at a time as they are read, each the very call the record
    held: a long run's calls are held once to the end of its writing, not once for its
    record and once for its verdict (issue 37). A call that turning back would not give
    again (a published name that spells another name's reference: never by chance, the
    references being keyed) is kept as it was, by its place."""

    def __init__(self, shown: tuple[Call, ...], revealing: _Revealing,
                 kept: dict[int, Call]) -> None:
        self.shown = shown
        self.revealing = revealing
        self.kept = kept

    def __len__(self) -> int:
        return len(self.shown)

    def __iter__(self) -> Iterator[Call]:
        keyed, kept = self.revealing.keyed, self.kept
        for index, call in enumerate(self.shown):
            yield kept[index] if kept and index in kept else keyed(call)


def _judged_privately(runs: list[Run], keys: Private,
                      disclose: Private) -> tuple[list[Run], list[Run], list[_RecordCalls]]:
    """``runs`` as a private store keeps them (:func:`private_runs`) and as they are judged
    (:func:`revealed` through ``disclose``): the runs shown, the records' runs (their calls
    left out) and the records' calls. Each call is turned to its reference and back in one
    step, so that neither the plain run, nor the record's calls, is held beside the run
    shown; ``runs`` is emptied."""
    revealing = _Revealing(disclose)
    shown_runs: list[Run] = []
    heads: list[Run] = []
    calls_of: list[_RecordCalls] = []
    runs.reverse()  # taken from the end, in the order given
    while runs:
        run, calls = _taken(runs)
        kept: dict[int, Call] = {}
        for index, call in enumerate(calls):
            stored = _private_call(call, keys)
            shown = calls[index] = revealing.call(stored)
            back = revealing.keyed(shown)
            if back is not stored and back != stored:
                kept[index] = stored
        head = _private_head(run, keys)
        shown_calls = tuple(calls)
        del calls
        heads.append(head)
        shown_runs.append(revealing.run(head, shown_calls))
        calls_of.append(_RecordCalls(shown_calls, revealing, kept))
    return shown_runs, heads, calls_of


def published(declarations: Declarations) -> tuple[frozenset[str], frozenset[str]]:
    """The agent names and the MAS names ``declarations`` publish: manifests' agents, their
    workflow's entry and delegates, the bindings' agents; the MAS of mas.yaml. An agent known
    only by its manifest's path (a manifest with no name) publishes no name."""
    agents: set[str] = set()
    systems: set[str] = set()
    manifests = declarations.manifests
    if manifests is not None:
        for name, declaration in manifests.agents.items():
            if name != declaration.source:
                agents.add(name)
            agents.update(declaration.delegates_to or ())
        if manifests.entry:
            agents.add(manifests.entry)
        agents.update(manifests.entries)
        if manifests.mas:
            systems.add(manifests.mas)
    if declarations.bindings is not None:
        agents.update(declarations.bindings.agents)
    return frozenset(agents), frozenset(systems)


def opaque_declarations(declarations: Declarations, disclose: Disclosure) -> Declarations:
    """``declarations`` with the names a stored run is matched on (agents, delegation tools,
    the files that declare them) replaced by the references ``disclose`` gives them: a
    private store's (:class:`~.privacy.Private`: the names the declarations publish stay,
    the files are keyed, the agent ids mas.yaml gives matched by their references too: see
    :func:`_stored_ids`), or, for a store of version 1 made with ``--opaque-ids``, the user's
    key's (every name keyed), so that a run is judged as it was when it was loaded. Findings
    were worded through ``disclose`` when the declarations were read."""
    manifests = declarations.manifests
    if manifests is not None:
        def path(value: str | None) -> str | None:
            return disclose.path(value) if value else value

        agents = {disclose.agent(name): declaration._replace(
            agent=disclose.agent(declaration.agent), source=path(declaration.source),
            ids=_stored_ids(declaration.ids, disclose),
            tools={disclose.tool(t): disclose.path(p) for t, p in declaration.tools.items()},
            tool_descriptions={disclose.tool(t): d
                               for t, d in declaration.tool_descriptions.items()},
            delegates_to=None if declaration.delegates_to is None else frozenset(
                disclose.agent(a) for a in declaration.delegates_to))
            for name, declaration in manifests.agents.items()}
        manifests = manifests._replace(
            mas_source=path(manifests.mas_source), agents=agents,
            entry=disclose.agent(manifests.entry) if manifests.entry else None,
            entries=frozenset(disclose.agent(a) for a in manifests.entries))
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


def _stored_ids(ids: frozenset[str], disclose: Disclosure) -> frozenset[str]:
    """The ``gen_ai.agent.id`` values an agent's mas.yaml entry gives, as a private store's
    run is matched on them: each id's reference (a record holds the references of the ids
    its spans carry, :func:`_private_call`, whatever the declarations give), and the id as
    it is (the record of a run stored before ids were keyed holds them so). A reference is
    never an id by chance: only a manifest written with the store's key can spell one, as it
    can spell an agent's (see :class:`_RecordCalls`). Another disclosure's: as they are."""
    if not ids or not isinstance(disclose, Private):
        return ids
    return ids | {disclose.keyed("agent", ident) for ident in ids}


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
    # A profile given as a file is named as the other files are (its path names a user).
    shown = disclose.path(profile) if profile and os.path.isfile(profile) else profile
    return Basis(tuple(files), shown, disclose.path(manifests) if manifests else None,
                 revision, _sha256(json.dumps([contents, profile if not (
                     profile and os.path.isfile(profile)) else "file"]).encode()))


# --- the cursor ---------------------------------------------------------------------------------


class StoreCursor(Cursor):
    """The consumer cursor of ``--store``: :class:`~.state.Cursor`'s interface (so
    :func:`~.state.consume` drives it unchanged), its checkpoints nodes of the store.

    Under a :class:`~.privacy.Private` disclosure the consumer key, the inputs' paths and the
    prefix digests are keyed references, and no checkpoint holds the fold (it names agents
    and calls as the trace does): an input is then read again from its start, after its
    prefix is checked."""

    def __init__(self, store: TraceStore, consumer: str, disclose: Disclosure,
                 mode: str) -> None:
        super().__init__(store.path, disclose.include_content)
        self.store = store
        self.consumer = consumer
        self.disclose = disclose
        self.private = isinstance(disclose, Private)
        self.mode = mode
        # The consumer as the store names it (a team or a host often names a consumer).
        self.shown = disclose.consumer(consumer) if isinstance(disclose, Private) else consumer
        self.graph = consumer_graph(self.shown)

    def open(self) -> None:
        """Nothing to read ahead: each input's checkpoints are read when it is restored."""

    def close(self) -> None:
        """The store outlives the cursor: the runs are recorded after the last input."""

    def _input(self, source: Source) -> str:
        return self.disclose.path(source.key)

    def _prefix(self, sha256: str) -> str:
        """A prefix digest as stored: keyed in a private store (the digest of a small input
        confirms a guess of its text)."""
        return self.disclose.keyed("prefix", sha256) if isinstance(
            self.disclose, Private) else sha256

    def _node(self, stored: str, seq: int) -> str:
        return f"{self.graph}:input:{_sha256(stored.encode('utf-8', 'surrogatepass'))[:16]}:line:{seq}"

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
                "--consumer, or the same --include-content as before")
        self.positions.pop(source.key, None)
        self.deltas.pop(source.key, None)
        if checkpoints and all("delta" in c for c in checkpoints):
            last = checkpoints[-1]
            self.positions[source.key] = {"seq": int(last["line"]), "offset": int(last["offset"]),
                                          "sha256": last["prefixSha256"]}
            self.deltas[source.key] = [json.loads(c["delta"]) for c in checkpoints]
        elif checkpoints:
            # Without the fold the input is read again from its start, its checkpoints
            # written again, the very same nodes: it must still begin with what was
            # consumed, or they would be written over.
            self.same_prefix(source, int(checkpoints[-1]["offset"]),
                             checkpoints[-1]["prefixSha256"])
        return super().restore(source, fold)

    def same_prefix(self, source: Source, offset: int, sha256: str) -> Any:
        if not self.private:
            return super().same_prefix(source, offset, sha256)
        # The stored digest is keyed: the input's prefix is hashed here and keyed to compare.
        assert source.stream is not None
        hasher = hashlib.sha256()
        remaining = offset
        try:
            with open(source.stream, "rb") as handle:
                while remaining:
                    chunk = handle.read(min(remaining, 1 << 20))
                    if not chunk:
                        break
                    hasher.update(chunk)
                    remaining -= len(chunk)
        except OSError as exc:
            raise StoreError(f"{source.given}: cannot be read again: {exc.strerror}") from None
        if remaining or self._prefix(hasher.hexdigest()) != sha256:
            raise self.rewritten(source, offset)
        return hasher

    def damaged(self, source: Source, exc: Exception) -> ConfigurationError:
        return StoreError(
            f"{self.path}: a checkpoint of {source.given} by consumer {self.consumer!r} is "
            f"damaged (not as ioa-check writes it: {type(exc).__name__}): feed it under "
            "another --consumer")

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
            ("consumer", _text(self.shown)), ("input", _text(stored)),
            ("line", _integer(seq)), ("offset", _integer(offset)),
            ("prefixSha256", _text(self._prefix(sha256))), ("mode", _text(self.mode))]
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
    joined = "\0".join((run_iri, record_sha256, grounds.sha256, __version__))
    return _sha256(joined.encode("utf-8", "surrogatepass"))


# --- feeding ----------------------------------------------------------------------------------


class Judged(NamedTuple):
    """Runs judged as a store keeps them: the audits (of each run as the store shows it), the
    runs as their records hold them, the declarations as the store matches them, and the
    disclosure the store's graph and verdicts are written through."""

    audits: list[RunAudit]
    records: list[Run]
    declarations: Declarations
    disclose: Disclosure
    # A private store's: each record's calls, made as they are written (its run's are left
    # out of ``records``); None where ``records`` hold their calls.
    record_calls: list[_RecordCalls] | None = None


class Feed:
    """``ioa-check trace ... --store DIR``: the store, its cursor, and recording the runs.

    ``plain`` (``--store-plain-ids``) makes or feeds a store that keeps identities as the
    traces have them; otherwise the store is private (made with a key of its own, or fed under
    the key it was made with). Any other mode is refused before anything is read."""

    def __init__(self, path: str, consumer: str, plain: bool = False,
                 include_content: bool = False, trajectory: bool = False,
                 key_file: str | None = None) -> None:
        if not consumer:
            raise StoreError("--consumer must not be empty")
        wanted = (PLAIN + ("+content" if include_content else "")) if plain else PRIVATE
        self.store = open_store(path, create=wanted, key_file=key_file)
        self.store.admit(wanted)
        self.consumer = consumer
        self.trajectory = trajectory
        self.include_content = include_content
        self.private = self.store.private
        self.mode = self.store.mode if self.private and self.store.mode else wanted
        # How runs are read for the store: in a private one, every identity keyed, whatever
        # the declarations publish, so that a run's record does not change with them.
        self.keys: Disclosure = Private(self.store.key()) if self.private else Disclosure(
            None, include_content)
        self.cursor = StoreCursor(self.store, consumer, self.keys, self.mode)

    def disclosure(self, declarations: Declarations) -> Disclosure:
        """How the declarations are read for the store, and runs judged against them shown:
        under the store's key with the names ``declarations`` publish readable (a private
        store), or as they are."""
        if not self.private:
            return self.keys
        agents, systems = published(declarations)
        return Private(self.store.key(), agents, systems)

    def source(self, source: Source, disclose: Disclosure) -> Source:
        """``source`` named as the store names it: a run built from it then names no path in
        its source or its findings."""
        return source._replace(given=disclose.path(source.given)) if self.private else source

    def judged(self, runs: list[Run], declarations: Declarations,
               disclose: Disclosure) -> Judged:
        """``runs`` (built through :attr:`keys`, from inputs named by :meth:`source`) judged
        against ``declarations`` (read through ``disclose``, :meth:`disclosure`'s) as the
        store keeps them. In a private store a run's record holds references only
        (:func:`private_runs`); it is shown, and judged, with the names ``disclose`` publishes
        (:func:`revealed`), against the declarations with their paths keyed, so that every
        reason of a stored verdict names what the store may hold, nothing else; ``runs`` is
        emptied then, each run let go as its record is made."""
        if not isinstance(disclose, Private):
            return Judged([judge(run, declarations, disclose) for run in runs], runs,
                          declarations, disclose)
        assert isinstance(self.keys, Private)
        kept = opaque_declarations(declarations, disclose)
        shown_runs, records, calls = _judged_privately(runs, self.keys, disclose)
        shown = Pseudonymous()
        audits = []
        shown_runs.reverse()
        while shown_runs:  # each run held by its audit only
            audits.append(judge(shown_runs.pop(), kept, shown))
        return Judged(audits, records, kept, shown, calls)

    def record(self, judged: Judged, grounds: Basis, at: datetime | None,
               names: list[str] | None = None) -> int:
        """Each run's graph, record and verdict: the new small runs gathered and written a
        batch at a time (:class:`_Batch`), any other one in a transaction of its own (a large
        one in several); a run stored with the same record whose current verdict was judged
        against the same declarations is left as it is. The number of verdicts written.
        ``names`` name the runs to the user (their ids as the traces have them) where one
        cannot be recorded."""
        instant = instant_literal(at)
        written = 0
        narrowed: list[str] = []
        batch = _Batch(self.store) if self.store.gathers_runs else None
        for index, (audit, recorded) in enumerate(zip(judged.audits, judged.records,
                                                      strict=True)):
            run = audit.run
            if not run.readable or not (run.calls or run.records):
                continue
            try:
                written += record_run(self.store, audit, judged.declarations, judged.disclose,
                                      grounds, instant, "trace", self.cursor.shown, self.mode,
                                      recorded=recorded, trajectory=self.trajectory,
                                      recorded_calls=judged.record_calls[index] if (
                                          judged.record_calls is not None) else None,
                                      batch=batch)
            except _Narrowed:
                narrowed.append(names[index] if names else run.ident)
        if batch is not None:
            batch.write()
        self.store.finish()
        if narrowed:
            raise RunsNarrowed(
                f"{self.store.path} already holds run{'s' if len(narrowed) > 1 else ''} "
                f"{', '.join(narrowed)} with calls these inputs do not have (a trace whose "
                "spans are in several files, fed one file at a time, or another run under the "
                "same id): not recorded, so that nothing stored is lost; feed every input of "
                "the run in one invocation (the other runs were recorded)", narrowed)
        return written


class _Narrowed(Exception):
    """A run would replace a stored one and lose some of its calls."""


def _identity(record: dict[str, Any]) -> str:
    """A run record without the spelling of its inputs' paths: what makes two records of one
    run the same (``run``, ``./run`` and an absolute path name one input)."""
    run = {k: v for k, v in record["run"].items() if k != "source"}
    return json.dumps({**record, "run": run}, ensure_ascii=False)


def record_digest(record: dict[str, Any]) -> str:
    """The digest a run record is stored with (``ioat:recordSha256``), of its identity."""
    return _sha256(_identity(record).encode("utf-8", "surrogatepass"))


def _keeps_every_call(store: TraceStore, iri: str, after: set[str],
                      kept: str | None = None) -> None:
    """A stored run is replaced only by one that holds every call it held (events appended
    to its input; ``after``: the new run's call keys): never by part of it. ``kept``: the
    record a replacement cut short kept."""
    held = kept if kept is not None else store.record_text(iri)
    if held is None:
        return
    try:
        before = {c["key"] for c in json.loads(held)["run"]["calls"]}
    except (ValueError, KeyError, TypeError):
        return  # a damaged record: the new one replaces it
    del held
    if not before <= after:
        raise _Narrowed


def record_run(store: TraceStore, audit: RunAudit, declarations: Declarations,
               disclose: Disclosure, grounds: Basis, instant: ox.Literal, judged_by: str,
               consumer: str | None, mode: str, stored_record: str | None = None,
               recorded: Run | None = None, trajectory: bool = False,
               recorded_calls: Iterable[Call] | None = None, batch: _Batch | None = None
               ) -> int:
    """Record ``audit`` (and, unless it is already there, its run's graph and record). The
    run is as the store shows it (:meth:`Feed.judged`), ``disclose`` shows it as it is, and
    ``recorded`` is the run as its record holds it (by default the run judged; its calls
    ``recorded_calls`` where given, each time they are read). A run's
    graph, once stored with its trajectory, keeps it; asked for, the trajectory is added to
    a stored run's graph that lacks it. ``batch``: where a new small run is gathered, to be
    written with others (:class:`_Batch`); what it holds is written before anything else."""
    with store.writing():
        return _record_run(store, audit, declarations, disclose, grounds, instant, judged_by,
                           consumer, mode, stored_record, recorded, trajectory, recorded_calls,
                           batch)


def _record_run(store: TraceStore, audit: RunAudit, declarations: Declarations,
                disclose: Disclosure, grounds: Basis, instant: ox.Literal, judged_by: str,
                consumer: str | None, mode: str, stored_record: str | None,
                recorded: Run | None, trajectory: bool,
                recorded_calls: Iterable[Call] | None, batch: _Batch | None) -> int:
    run = audit.run
    iri = disclose.run_iri(run.ident)
    if batch is not None and iri in batch:
        # The run gathered already (two inputs of a run without calls): read as stored.
        batch.write()
    kept_run = recorded or run
    kept_calls = kept_run.calls if recorded_calls is None else recorded_calls
    if stored_record is None:
        # Key order is kept (not sorted): reports list members in the order the fold made them.
        digest = pieces_digest(record_pieces(mode, kept_run, identity=True, calls=kept_calls))
    else:
        value = json.loads(stored_record)
        digest = record_digest(value)
        del value
    key = audit_key(iri, digest, grounds)
    present = [o.value for o in store.objects(iri, "recordSha256", iri)]
    # What a replacement cut short kept of the graph it dropped (_replacing): the run the
    # store held, until a graph of it is whole again.
    kept = None if present else _kept(store, iri)
    if stored_record is None and ((present and present != [digest]) or kept is not None):
        # The run's keys made only here: held through a long run's writing, they weighed
        # tens of bytes a call at its peak.
        _keeps_every_call(store, iri, {call.key for call in kept_calls},
                          kept[0] if kept is not None else None)
    traced = (bool(present) and _has_trajectory(store, iri)) or bool(kept and kept[1])
    rebuild = present != [digest] or (trajectory and not traced)
    verdict: list[ox.Quad] = []
    if present != [digest] or store.current_audit_key(iri) != key:
        verdict = verdict_quads(store.next_verdict(), audit, disclose, digest, key, grounds,
                                instant, judged_by, consumer)
    written = 1 if verdict else 0
    if not rebuild:
        if verdict:
            if batch is not None:
                batch.write()  # the verdicts numbered before this one, first
            store.commit(verdict)
        return written  # judged so already, and that is the run's current verdict
    graph = ox.NamedNode(iri)
    parts = _RecordParts(iter((stored_record,)) if stored_record is not None
                         else record_pieces(mode, kept_run, calls=kept_calls),
                         store.record_part_chars)
    texts = iter(parts)
    first = next(texts)
    second = next(texts, None)
    # A record of one part is written whole with the marks; a larger one in parts, after the
    # graph's chunks, each let go once written.
    whole = first if second is None else None

    def marks() -> list[ox.Quad]:
        """The record (whole, or the number of its parts) and its digest: written last."""
        held = (ox.Quad(graph, term("runRecord"), _text(whole), graph) if whole is not None
                else ox.Quad(graph, term("runRecordParts"), _integer(parts.count), graph))
        return [*verdict, held, ox.Quad(graph, term("recordSha256"), _text(digest), graph)]

    chunks: Iterator[Chunk] = quad_chunks(run, declarations, disclose, iri,
                                          trajectory or traced, CHUNK_QUADS)
    if second is not None:
        chunks = itertools.chain(chunks, _part_chunks(
            iri, itertools.chain((first, second), texts), store.record_load_parts))
    del first, second
    _write_graph(store, iri, chunks, marks, bool(present), kept, traced, batch)
    return written


def _part_chunks(iri: str, texts: Iterator[str], per_chunk: int) -> Iterator[Chunk]:
    """The quads of a run's record's parts (``texts``, in order), ``per_chunk`` a chunk."""
    limit = _test_hook(LOAD_PARTS_ENV, per_chunk)
    graph = ox.NamedNode(iri)
    quads: list[ox.Quad] = []
    for index, text in enumerate(texts):
        quads.append(ox.Quad(ox.NamedNode(record_part(iri, index)), term("recordPart"),
                             _text(text), graph))
        if len(quads) == limit:
            yield Chunk.of(quads)
            quads = []
    if quads:
        yield Chunk.of(quads)


def _write_graph(store: TraceStore, iri: str, chunks: Iterator[Chunk],
                 last: Callable[[], list[ox.Quad]], present: bool,
                 kept: tuple[str, bool] | None, traced: bool,
                 batch: _Batch | None = None) -> None:
    """The run ``iri``'s graph (``chunks``) written, then ``last()`` (its verdict and record,
    the mark of a whole graph, made once the chunks are); ``present``: the store holds a
    whole graph of it, ``kept``: what a replacement cut short kept of one (:func:`_kept`),
    ``traced``: with its trajectory. A small graph new to the store goes to ``batch`` when
    one is given; before any other write, what ``batch`` holds is written."""
    first = next(chunks)
    after = next(chunks, None)
    if after is None:  # the whole graph at once, as most runs are
        # The run grew, or gains its trajectory, or a write of it was cut short: its graph is
        # made again. (A run the batch holds was written before it was judged again.)
        remade = present or store.holds(iri)
        if batch is not None and not remade and kept is None:
            batch.add(iri, first, Chunk.of(last()))
            return
        if batch is not None:
            batch.write()
        whole = Chunk.of(last()) + first
        if remade:
            store.replace(iri, whole)
        else:
            store.commit(whole)
        if kept is not None:
            store.drop(_replacing(iri))
        return
    if batch is not None:
        batch.write()
    # A large graph, a transaction a chunk. Its record, the mark that it is complete, comes
    # last with its verdict: a write cut short leaves a graph without a record, which the next
    # feed drops and writes again (the inputs' checkpoints come before the runs' graphs). A
    # stored graph it replaces is dropped first: what the next feeds must still know of it
    # (its record, which calls a replacement must keep; its trajectory, which it keeps) is
    # written aside in the same transaction, and let go in the last one.
    if present or kept is not None:
        old = kept[0] if kept is not None else store.record_text(iri)
        assert old is not None  # present: the graph is whole, its record with it
        aside = ox.NamedNode(_replacing(iri))
        store.replace(iri, [ox.Quad(aside, term("replacedRecord"), _text(old), aside),
                            ox.Quad(aside, term("replacedTraced"), ox.Literal(
                                "true" if traced else "false"), aside)])
        del old
    else:
        store.drop(iri)
    # The first two chunks, taken to know the graph is large, are let go once loaded as the
    # others are: held here to the end, they were 8 MiB of a long run's peak.
    taken = [after, first]
    del first, after
    _load_all(store, itertools.chain(_each_let_go(taken), chunks))
    if present or kept is not None:
        store.replace(_replacing(iri), last())
    else:
        store.commit(last())


class _Batch:
    """New small runs gathered to be written together: one transaction a run cost a feed of
    many small runs (an OTLP file of a day's traces) half its time, in the store's memory
    tables, where the bulk loader writes a chunk of many runs' graphs at a fraction of that.

    A run is gathered when its graph is small (one chunk), new (no record of it, no quad in
    its graph, nothing a replacement kept of it) and not another run's: its graph and its
    marks (verdict, record and digest, :func:`_write_graph`'s ``last()``). :meth:`write`
    loads the gathered graphs in one bulk load, then commits all their marks in one
    transaction, in the order the runs came: the large runs' protocol, for many runs at
    once. A write cut short leaves graphs without records, which the next feed drops and
    writes again (:func:`_write_graph`: ``store.holds``), and none of the batch's verdicts,
    which numbers them again in the same order. Any other write of a run (a verdict alone, a
    graph replaced, a large one) writes the batch first, so that verdicts are committed in
    the order of their numbers: whatever a crash leaves, the numbers stored are 1..N and
    the next feed goes on from N + 1, as when it was not cut short.

    A batch is written before it would pass :data:`CHUNK_QUADS` quads or
    :data:`BATCH_BYTES`, and is let go once written. Graphs of fewer quads than a
    :data:`BULK_SHARE` of that are committed with their marks in one transaction instead
    (a bulk load of a run's few hundred quads cost five times a transaction's time)."""

    def __init__(self, store: TraceStore) -> None:
        self.store = store
        self.quads = _test_hook(BATCH_QUADS_ENV, CHUNK_QUADS)
        self.bulk = self.quads // BULK_SHARE
        self.runs: set[str] = set()
        self.graphs: list[Chunk] = []
        self.marks: list[Chunk] = []
        self.held = 0  # quads
        self.size = 0  # bytes

    def __contains__(self, iri: str) -> bool:
        return iri in self.runs

    def add(self, iri: str, graph: Chunk, marks: Chunk) -> None:
        """The run ``iri``'s ``graph`` and its ``marks``, gathered (the batch written first
        when they would make it pass its bounds)."""
        count = len(graph) + len(marks)
        size = len(graph.data) + len(marks.data)
        if self.runs and (self.held + count > self.quads or self.size + size > BATCH_BYTES):
            self.write()
        self.runs.add(iri)
        self.graphs.append(graph)
        self.marks.append(marks)
        self.held += count
        self.size += size

    def write(self) -> None:
        """The gathered graphs loaded, then their marks committed (or, few, both in one
        transaction); the batch emptied."""
        if not self.runs:
            return
        graphs = _joined(self.graphs)
        marks = _joined(self.marks)
        self.runs.clear()
        self.held = self.size = 0
        if len(graphs) < self.bulk:
            self.store.commit(marks + graphs)
            return
        self.store.load(graphs)
        del graphs
        self.store.commit(marks)


def _joined(chunks: list[Chunk]) -> Chunk:
    """The chunks of ``chunks`` as one, in order; ``chunks`` emptied."""
    joined = Chunk(b"".join(chunk.data for chunk in chunks), sum(map(len, chunks)))
    chunks.clear()
    return joined


def _each_let_go(chunks: list[Chunk]) -> Iterator[Chunk]:
    """The chunks of ``chunks`` from its end, each out of the list once taken."""
    while chunks:
        yield chunks.pop()


def _load_all(store: TraceStore, chunks: Iterator[Chunk]) -> None:
    """Each of ``chunks`` loaded into ``store`` in order, by a thread of its own while the next
    is built: the store's bulk loader parses and writes without holding the interpreter, so
    building the graph (Python) and writing it (Rust) take both cores. At most one chunk waits
    between them; the thread ends (joined) before this returns, whatever happened, and a
    chunk that failed to load stops the writing and is raised here."""
    import queue
    import threading

    from .memory import give_back

    handoff: queue.Queue[Chunk | None] = queue.Queue(maxsize=1)
    failed: list[BaseException] = []

    def write() -> None:
        while (chunk := handoff.get()) is not None:
            if failed:
                continue  # nothing after a chunk that failed: the feed's end is told
            try:
                store.load(chunk)
            except BaseException as exc:  # raised again by the thread building the chunks
                failed.append(exc)
            chunk = None  # loaded: not held while the next is awaited
            give_back()  # what the loader's threads freed, while the run is still held

    writer = threading.Thread(target=write, name="ioa-check-trace-store-writer", daemon=True)
    writer.start()
    try:
        for chunk in chunks:
            if failed:
                break
            handoff.put(chunk)
    finally:
        handoff.put(None)
        writer.join()
    if failed:
        raise failed[0]


def _replacing(iri: str) -> str:
    """The named graph holding what a replacement of the run ``iri``'s graph keeps of it
    (outside the runs' names: it is no run's graph)."""
    return f"{IRI_BASE}replacing:{iri.removeprefix(IRI_BASE)}"


def _kept(store: TraceStore, iri: str) -> tuple[str, bool] | None:
    """The record of the graph a replacement cut short dropped, and whether it held the
    trajectory; None when none was cut short."""
    aside = _replacing(iri)
    record = store.objects(aside, "replacedRecord", aside)
    if not record:
        return None
    traced = store.objects(aside, "replacedTraced", aside)
    return record[0].value, bool(traced) and traced[0].value == "true"


def _has_trajectory(store: TraceStore, iri: str) -> bool:
    """Whether the run's stored graph holds its trajectory (its session's Transition)."""
    session = ox.NamedNode(iri)
    return any(True for _ in store.store.quads_for_pattern(
        session, ox.NamedNode(MAS + "correspondsToTransition"), None, session))
