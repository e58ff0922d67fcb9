"""The batch audit on a Dask distributed cluster: ``ioa-check audit PATH... --scheduler ADDRESS``.

For directories that outgrow one machine. The client lists the inputs through fsspec, Dask's
file-system layer (a path is a local folder or file, or any URL fsspec reads), and cuts them
into partitions: a ``*.json``/``*.jsonld`` file whole, a JSON Lines file in byte ranges cut
at line boundaries, standard input in chunks the client reads. Each worker process builds
the checker once, cuts its partitions into lines as the local audit cuts its blocks
(``items_of``) and judges them with the local audit's own ``judge_batch``. The
client takes the results back partition by partition in input order, with a bounded number
of partitions in flight, and hands them to the same reporters. The declarations of valid
registrations stay on the cluster, where a Dask group-by on capability IRI finds the
conflicts; only the conflicting groups come back. The command line writes the output and
derives the exit status as for the local audit; a cluster that goes away is
:class:`ClusterStopped`.

Importing this module imports Dask; the command line imports it only for ``--scheduler``.
"""

# distributed's Client, LocalCluster and dask.bag are only partly annotated.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import itertools
import logging
import operator
import os
import pickle
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from typing import IO, Any, NamedTuple

import dask.bag
import dask.config
import fsspec
from distributed import Client, Future, KilledWorker, LocalCluster
from distributed.comm.addressing import get_address_host_port, parse_address
from distributed.comm.core import CommClosedError
from fsspec.utils import seek_delimiter

from .._checker import Checker
from .._codes import finding
from .._exceptions import ClusterStopped, ConfigurationError
from ..pipeline.intake import Limits, too_large
from ..sources.loader import read_profile, resolve_profile
from .inputs import (
    AUDITED_SUFFIXES,
    Lines,
    blocks,
    document_items,
    items_of,
    standard_input,
    walk,
)
from .judge import Item, Result
from .kinds import Kinds
from .run import Asked, Audit, Conflict, differences
from .workers import judge_batch, kinds_for

# About 20,000 registrations of 400 bytes: seconds of work for a worker, so the task overhead
# (milliseconds) is noise, and small enough that the workers stay evenly busy.
DEFAULT_PARTITION_BYTES = 8 << 20
_BATCH = 256


class Partition(NamedTuple):
    """One task's share of the input."""

    seq: int  # position in input order
    source: str  # the name results carry, as the local audit names it
    url: str  # what a worker opens: an absolute local path or an fsspec URL
    lines: bool  # JSON Lines (a byte range) or a whole *.json/*.jsonld file
    start: int = 0  # byte offset; 0 starts a file, so its line numbers start again
    length: int | None = None  # nominal bytes from ``start``; None: to the end of the file
    data: bytes | None = None  # standard input, read by the client
    problem: str | None = None  # why the client could not open it (reported, not judged)
    # Standard input's line before ``data``, over the byte limit and not held: its findings
    # (see Lines.head)
    head: tuple[Any, ...] | None = None


class Setup(NamedTuple):
    """What a worker builds its checker from; hashable, so it keys the worker's cache."""

    profile_source: str
    profile: bytes
    limits: Limits
    engine: str


# (capability IRI, first declaration, another differs?, [(partition seq, position), ...]), a
# position followed by its declaration where that is not the first one
Record = tuple[str, tuple[Any, ...], bool, list[tuple[Any, ...]]]
# A partition's records for one hash bucket of capability IRIs, pickled: what the group-by
# moves. As bytes they take a seventh of the memory they take as objects (about 70 bytes a
# record, not 500) while they wait on the workers, and move without being walked again.
Bucket = tuple[int, bytes]


# --- the client: connecting -----------------------------------------------------------------


# The schemes whose addresses are a host and a port (distributed's tcp, tls and websockets).
_HOST_AND_PORT = frozenset({"tcp", "tls", "ws", "wss"})


class Cluster:
    """A client connected to a scheduler, or to a LocalCluster started for ``local:N``."""

    def __init__(self, address: str) -> None:
        timeout = dask.config.get("distributed.comm.timeouts.connect")
        self.local: LocalCluster | None = None
        if address.startswith("local:"):
            workers = address.removeprefix("local:")
            if not workers.isdigit() or int(workers) < 1:
                raise ConfigurationError(f"--scheduler {address}: local:N needs a positive number "
                                         "of worker processes")
            # One thread per process: judging is Python code, which holds the GIL.
            # The scheduler always serves HTTP; any free port, so no clash with another's.
            self.local = LocalCluster(n_workers=int(workers), threads_per_worker=1,
                                      processes=True, dashboard_address=":0",
                                      silence_logs=logging.ERROR)
            self.client = Client(self.local, timeout=timeout, set_as_default=False)
            return
        try:
            # An address Dask cannot read is refused before a Client is made: a half-made one
            # spends twice the connect timeout closing itself on the way out, with a traceback.
            if parse_address(address)[0] in _HOST_AND_PORT:
                get_address_host_port(address)
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConfigurationError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except OSError as exc:  # TimeoutError included
            self.close(lost=True)
            if isinstance(exc, TimeoutError):
                raise ConfigurationError(f"the Dask scheduler at {address} has no workers "
                                         f"(waited {timeout})") from exc
            raise ConfigurationError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc

    def close(self, lost: bool = False) -> None:
        if lost:
            # The client's own account of its failed reconnection, a traceback, would follow
            # the one-line message already given.
            logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
        self.client.close()
        if self.local is not None:
            self.local.close()


# --- the client: partitions -----------------------------------------------------------------


def partitions(paths: Iterable[str], partition_bytes: int,
               stdin: IO[bytes] | None = None, limits: Limits | None = None) -> Iterator[Partition]:
    """Every partition of ``paths``, in input order (numbered from 0); standard input's
    lines are held up to ``limits``' byte limit, as the workers hold a file's."""
    counter = itertools.count()
    for path in paths:
        if path == "-":
            found: Iterable[Partition] = _stdin(stdin if stdin is not None else standard_input(),
                                                 partition_bytes, limits)
        else:
            found = (part for source, url, problem in _files(path)
                     for part in ((Partition(0, source, url, source.endswith(".jsonl"),
                                             problem=problem),) if problem is not None
                                  else _file_partitions(source, url, partition_bytes)))
        for part in found:
            yield part._replace(seq=next(counter))


def _files(path: str) -> list[tuple[str, str, str | None]]:
    """``(source, url, problem)`` of every audited file ``path`` names, in the local audit's
    order; ``problem`` says why the walk did not open one (a folder it cannot read, a file
    that is not a regular one: reported as the local audit reports it, never left out)."""
    if "://" not in path:
        # A local path is walked as the local audit walks it, so sources are named alike;
        # workers open the absolute path (on a real cluster, a shared file system).
        if os.path.isdir(path):
            return [(name, os.path.abspath(name), None if problem is None else problem.message)
                    for name, problem in walk(path)]
        return [(path, os.path.abspath(path), None)]
    try:
        fs, root = fsspec.core.url_to_fs(path)
        if fs.isdir(root):
            return [(name, name, None) for name in sorted(fs.unstrip_protocol(found)
                                                          for found in fs.find(root))
                    if name.endswith(AUDITED_SUFFIXES)]
    except (OSError, ValueError, ImportError):
        pass  # opening it names the problem, as for any unreadable file
    return [(path, path, None)]


def _file_partitions(source: str, url: str, partition_bytes: int) -> Iterator[Partition]:
    if not source.endswith(".jsonl"):
        yield Partition(0, source, url, lines=False)
        return
    try:
        with fsspec.open(url, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
    except Exception as exc:  # any file system's failure: the file is unreadable, as locally
        yield Partition(0, source, url, lines=True, problem=_cannot_read(source, exc))
        return
    starts = range(0, size, partition_bytes)
    for start in starts:
        # The last range reads to the end, whatever the size was when it was listed.
        yield Partition(0, source, url, True, start,
                        None if start == starts[-1] else partition_bytes)


def _stdin(stream: IO[bytes], partition_bytes: int,
           limits: Limits | None = None) -> Iterator[Partition]:
    """Standard input in partitions of whole lines, about ``partition_bytes`` each, read as
    the local audit reads it (:func:`~.inputs.blocks`): a line over the byte limit is passed
    over, never held, and starts a partition that carries its findings (``head``)."""
    start = 0
    parts: list[bytes] = []
    held = 0
    head: tuple[Any, ...] | None = None
    for piece in blocks("-", stream, limits):
        if not isinstance(piece, Lines):  # reading stopped: what was read is judged first
            if parts or head is not None:
                yield Partition(0, "-", "", True, start, held, data=b"".join(parts), head=head)
            yield Partition(0, "-", "", True, start + held, problem=piece[3][0].message)
            return
        if piece.head is not None or held >= partition_bytes:
            if parts or head is not None:
                yield Partition(0, "-", "", True, start, held, data=b"".join(parts), head=head)
            start, parts, held, head = start + held, [], 0, piece.head
        parts.append(piece.data)
        held += len(piece.data)
    if parts or head is not None:
        yield Partition(0, "-", "", True, start, held, data=b"".join(parts), head=head)


def _cannot_read(source: str, exc: BaseException) -> str:
    # Worded as the local audit words it; not every file system's error has a strerror.
    why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"{source}: cannot be read: {why}"


# --- a worker -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _checker(setup: Setup) -> Checker:
    """The worker's checker: built for its first partition, kept for the others."""

    def build() -> Checker:
        return Checker(read_profile(setup.profile, setup.profile_source),
                       limits=setup.limits, engine=setup.engine)

    # Built on a thread of its own: a worker's profiler holds on to the frames of the threads
    # running tasks, and may so release a frame's pyoxigraph query results on its own thread,
    # which pyoxigraph refuses with a traceback on stderr.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ioa-checker") as builder:
        return builder.submit(build).result()


@functools.lru_cache(maxsize=4)
def _kinds(setup: Setup) -> Kinds | None:
    """The worker's registrations judged by kind, shared by its threads (every answer a kind
    gives is sound on its own, so threads racing on what it remembers change no result)."""
    return kinds_for(_checker(setup))


def read_partition(part: Partition, limits: Limits | None = None,
                   place: bool = False) -> tuple[list[Item], int]:
    """A partition's items, JSON Lines positions counted from its first line, and how many
    lines it spans (so the client can number the next partition's); with ``place``, an
    array's items with their text (see :func:`document_items`)."""
    if part.problem is not None:
        return [(part.source, None, None, (finding("json.unreadable", part.problem),))], 0
    limit = (limits or Limits()).max_bytes
    try:
        if part.lines and part.data is None:
            return _lines_read(part, limits)
        block, size = _block(part, limit)
    except Exception as exc:  # any file system's failure: this partition is unreadable
        where = part.source if part.start == 0 and part.length is None else (
            f"{part.source} (bytes from {part.start})")
        return [(part.source, None, None, (finding("json.unreadable", _cannot_read(where, exc)),))], 0
    if not part.lines:
        if len(block) > limit:  # read no further than the local audit reads it
            return [(part.source, None, None, (too_large(size, limit),))], 0
        return list(document_items(part.source, block, limits, place)), 0
    # Standard input's lines, cut as the local audit cuts its blocks (items_of): a line's
    # text ends before its line break, so a json.syntax message gives the position the local
    # audit gives.
    return list(items_of(Lines(part.source, 0, block, part.head))), (
        _line_count(block) + (part.head is not None))


def _lines_read(part: Partition, limits: Limits | None) -> tuple[list[Item], int]:
    """A byte range of a JSON Lines file read as the local audit reads a file: in blocks,
    each line held up to the byte limit (one longer is passed over to its end and reported,
    never held), so a worker's memory is bounded whatever the file holds."""
    with fsspec.open(part.url, "rb") as handle:
        region = _Region(handle, part.start, part.length)
        items: list[Item] = []
        for piece in blocks(part.source, region, limits):
            if type(piece) is Lines:
                items.extend(items_of(piece))
            else:
                items.append(piece)  # type: ignore[arg-type]
        return items, region.lines


class _Region:
    """The lines of an open file that a partition's byte range spans, as a stream: from the
    first line that starts after ``start`` (or at 0) to the end of the line in which
    ``start + length`` falls (None: to the end of the file), as fsspec's ``read_block`` cuts
    ranges, but read in pieces rather than whole (a line may be longer than memory); counts
    the lines it gives."""

    def __init__(self, handle: IO[bytes], start: int, length: int | None) -> None:
        handle.seek(start)
        seek_delimiter(handle, b"\n", 1 << 16)
        begin = handle.tell()
        self._left: int | None = None
        if length is not None:
            handle.seek(start + length)
            seek_delimiter(handle, b"\n", 1 << 16)
            self._left = handle.tell() - begin
        handle.seek(begin)
        self._handle = handle
        self._newlines = 0
        self._last = b""

    def read(self, size: int = -1) -> bytes:
        if self._left is not None:
            size = self._left if size < 0 else min(size, self._left)
            if size == 0:
                return b""
        chunk: bytes = self._handle.read(size)
        if self._left is not None:
            self._left -= len(chunk)
        if chunk:
            self._newlines += chunk.count(b"\n")
            self._last = chunk[-1:]
        return chunk

    @property
    def lines(self) -> int:
        """The lines given so far (a last one without its line break counted)."""
        return self._newlines + (self._last not in (b"", b"\n"))


def _counted(part: Partition) -> int:
    """The lines a partition spans, counted without holding them (its results lost)."""
    if not part.lines:
        return 0
    if part.data is not None:
        return _line_count(part.data) + (part.head is not None)
    with fsspec.open(part.url, "rb") as handle:
        region = _Region(handle, part.start, part.length)
        while region.read(1 << 20):
            pass
        return region.lines


def _block(part: Partition, limit: int) -> tuple[bytes, int | None]:
    """A whole file's bytes (or standard input's, read by the client), and for a file read
    past ``limit`` (no more than one byte past it) its size where the file system says it
    (else None)."""
    if part.data is not None:
        return part.data, None
    with fsspec.open(part.url, "rb") as handle:
        block: bytes = handle.read(limit + 1)
        size = getattr(handle, "size", None) if len(block) > limit else None
    return block, size if isinstance(size, int) and size > limit else None


def _line_count(block: bytes) -> int:
    return block.count(b"\n") + (1 if block and not block.endswith(b"\n") else 0)


def judge_partition(part: Partition, setup: Setup, buckets: int,
                    place: bool = False) -> tuple[tuple[list[Result], int], list[Bucket]]:
    """A worker's task: ``((results, lines spanned), records by bucket)``; with ``place``,
    each reason placed in the text judged (a JSON Lines record's lines count from its own,
    so the client's renumbering of positions leaves them right).

    The records gather the partition's valid registrations by capability IRI (one record per
    IRI and partition), and the records by a stable hash of the IRI into ``buckets``.
    """
    checker = _checker(setup)
    items, lines = read_partition(part, checker.limits, place)
    results: list[Result] = []
    firsts: dict[str, tuple[Any, ...]] = {}
    # (seq, position) of each registration; with its declaration where it is not the first's
    registrations: dict[str, list[tuple[Any, ...]]] = {}
    differing: set[str] = set()
    kinds = _kinds(setup)
    for start in range(0, len(items), _BATCH):
        for result, declaration in _judged(checker, items[start:start + _BATCH], part, kinds,
                                           place):
            results.append(result)
            if declaration is None or result.id is None:
                continue
            key: tuple[Any, ...] = (part.seq, -1 if result.position is None else result.position)
            if firsts.setdefault(result.id, declaration) != declaration:
                differing.add(result.id)
                key = (*key, declaration)
            registrations.setdefault(result.id, []).append(key)
    by_bucket: dict[int, list[Record]] = {}
    for iri, first in firsts.items():
        by_bucket.setdefault(_bucket_of(iri, buckets), []).append(
            (iri, first, iri in differing, registrations[iri]))
    return (results, lines), [(bucket, pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL))
                              for bucket, records in by_bucket.items()]


def _bucket_of(iri: str, buckets: int) -> int:
    # Python's hash() of a str differs between processes; crc32 is the same everywhere.
    return zlib.crc32(iri.encode()) % buckets


def _judged(checker: Checker, batch: list[Item], part: Partition, kinds: Kinds | None = None,
            place: bool = False) -> list[tuple[Result, tuple[Any, ...] | None]]:
    try:
        return judge_batch(checker, batch, kinds, place)
    except Exception:
        # Judging does not raise on any input; if it does, a registration met a bug. Only that
        # one is reported (naming the partition), and the partition is not retried forever.
        pairs: list[tuple[Result, tuple[Any, ...] | None]] = []
        for item in batch:
            try:
                pairs.extend(judge_batch(checker, [item], kinds, place))
            except Exception as exc:
                reason = finding("json.unreadable", f"could not be audited in partition {part.seq} "
                                 f"({part.source} from byte {part.start}): {type(exc).__name__}: "
                                 f"{exc} (an internal error; please report it)")
                pairs.append((Result(item[0], item[1], None, "invalid", (reason,)), None))
        return pairs


def _bucket(pair: Bucket) -> int:
    return pair[0]


def _conflicting_in(groups: Iterable[tuple[int, list[Bucket]]]) -> list[Any]:
    """``[(iri, registrations, declarations)]`` for every capability IRI of these buckets
    whose records, from every partition, do not all declare the same: its registrations in
    input order, each one's declaration beside it."""
    found: list[tuple[str, list[tuple[int, int]], list[tuple[Any, ...]]]] = []
    for _, parts in groups:
        firsts: dict[str, tuple[Any, ...]] = {}
        registrations: dict[str, list[tuple[tuple[int, int], tuple[Any, ...]]]] = {}
        differing: set[str] = set()
        for iri, declaration, differs, keys in itertools.chain.from_iterable(
                pickle.loads(records) for _, records in parts):
            if differs or firsts.setdefault(iri, declaration) != declaration:
                differing.add(iri)
            # A registration's own declaration, where it is not its partition's first.
            registrations.setdefault(iri, []).extend(
                ((key[0], key[1]), key[2] if len(key) > 2 else declaration) for key in keys)
        for iri in differing:
            ordered = sorted(registrations[iri], key=lambda pair: pair[0])
            found.append((iri, [key for key, _ in ordered], [d for _, d in ordered]))
    return found


# --- the client: the audit ------------------------------------------------------------------


class ClusterAudit(Audit):
    """The audit, judged on a cluster: the reporters read it as they read a local one."""

    def __init__(self, client: Client, setup: Setup, partition_bytes: int = DEFAULT_PARTITION_BYTES,
                 on_partition: Callable[[Any], None] | None = None, asked: Asked | None = None,
                 place: bool = False) -> None:
        super().__init__(None, asked=asked)
        self.place = place
        self.client = client
        self.setup = setup
        self.partition_bytes = partition_bytes
        self.on_partition = on_partition
        self.run_id = uuid.uuid4().hex[:12]
        # Two buckets of capability IRIs per worker thread at the start spread the group-by.
        self.buckets = max(2, 2 * sum(client.nthreads().values()))
        self._submitted: list[Future[Any]] = []  # every partition's records
        self._records: list[Future[Any]] = []  # those of the partitions judged
        self._grouping: Future[Any] | None = None
        # partition seq -> (source, lines before it in its file; None for a whole file)
        self._places: dict[int, tuple[str, int | None]] = {}
        self._lines_before = 0
        self._found: list[Conflict] | None = None

    def results_of(self, paths: Iterable[str], stdin: IO[bytes] | None = None) -> Iterator[Result]:
        """Every registration's result, in input order, counted as they pass."""
        # Enough partitions in flight to keep every worker busy while the client writes, few
        # enough that results the client has not taken yet do not pile up on the workers.
        in_flight = max(4, 2 * sum(self.client.nthreads().values()))
        window: deque[tuple[Partition, Future[Any], Future[Any]]] = deque()
        for part in partitions(paths, self.partition_bytes, stdin, self.setup.limits):
            window.append(self._submit(part))
            if len(window) >= in_flight:
                yield from self._collect(*window.popleft())
        # Everything is submitted: the group-by starts while the last partitions finish.
        self._grouping = self._group_by(self._submitted)
        while window:
            yield from self._collect(*window.popleft())

    def _submit(self, part: Partition, attempt: str = "") -> tuple[Partition, Future[Any], Future[Any]]:
        key = f"ioa-audit-{self.run_id}-{part.seq}{attempt}"
        judged = self.client.submit(judge_partition, part, self.setup, self.buckets,
                                    self.place, key=f"{key}-judge")
        results = self.client.submit(operator.getitem, judged, 0, key=f"{key}-results")
        records = self.client.submit(operator.getitem, judged, 1, key=f"{key}-records")
        if not attempt:
            self._submitted.append(records)
        if self.on_partition is not None:
            results.add_done_callback(self.on_partition)
        return part, results, records

    def _collect(self, part: Partition, pending: Future[Any], records: Future[Any]) -> Iterator[Result]:
        try:
            results, lines = pending.result()
        except KilledWorker:
            # Dask gave up on it after worker processes died running it. A worker runs more
            # than the task that ended it, so this one may be innocent: once more, then
            # report it and go on; it is not retried forever.
            _, pending, records = self._submit(part, attempt="-again")
            try:
                results, lines = pending.result()
            except KilledWorker as exc:
                results = [Result(part.source, None, None, "invalid", (finding(
                    "json.unreadable", f"{part.source} (bytes from {part.start}): partition "
                    f"{part.seq} could not be audited: it ended worker processes ({exc})"),))]
                try:  # its lines still count for the numbering of the next partition's
                    lines = _counted(part)
                except Exception:
                    lines = 0
            else:
                self._submitted[part.seq] = records
                self._records.append(records)
        else:
            self._records.append(records)
        if part.start == 0:
            self._lines_before = 0
        offset = self._lines_before if part.lines else None
        self._places[part.seq] = (part.source, offset)
        self._lines_before += lines
        for result in results:
            if offset and result.position is not None:
                result = result._replace(position=result.position + offset)
            self.record(result, None)
            yield result

    def conflicts(self) -> list[Conflict]:
        """As the local audit's: computed and counted in the codes on the first call only (a
        report that asks again, the SARIF's exit status, counts each conflict once)."""
        if self._found is None:
            self._found = self._conflicts_on_cluster()
            for _ in self._found:
                self.codes["registration.conflict"] = (
                    self.codes.get("registration.conflict", 0) + 1)
        return list(self._found)

    def _group_by(self, records: list[Future[Any]]) -> Future[Any] | None:
        """The conflicting capability IRIs among ``records``, found on the cluster."""
        if not records:
            return None
        # The group-by on capability IRI runs on hash buckets of IRIs, a partition's records
        # for a bucket moving as one element: distributed serialises the elements of a list
        # one by one, which for a record each is slower than judging it. A task
        # shuffle costs about n * sqrt(n) tasks for n partitions; coalescing the partitions
        # to one per bucket first keeps it to one stage for up to 16 worker threads.
        groups = (dask.bag.from_delayed(records)
                  .repartition(npartitions=min(len(records), self.buckets))
                  .groupby(_bucket, shuffle="tasks")
                  .map_partitions(_conflicting_in))
        future: Future[Any] = self.client.compute(groups)
        return future

    def _conflicts_on_cluster(self) -> list[Conflict]:
        found: list[tuple[str, list[tuple[int, int]], list[tuple[Any, ...]]]] = []
        try:
            if self._grouping is not None:
                found = self._grouping.result()
        except KilledWorker:
            # A partition Dask gave up on has no records: group those of the others.
            grouping = self._group_by(self._records)
            found = grouping.result() if grouping is not None else []
        self._grouping = None
        self._submitted, self._records = [], []
        found.sort(key=lambda conflict: conflict[1][0])  # by the IRI's first registration
        return [Conflict(iri, "registration.conflict", tuple(self._place(key) for key in keys),
                         differences(declared))
                for iri, keys, declared in found]

    def _place(self, key: tuple[int, int]) -> tuple[str, int | None]:
        seq, position = key
        source, offset = self._places[seq]
        if offset is not None:
            return source, offset + position
        return source, None if position == -1 else position


# --- progress -------------------------------------------------------------------------------


class Progress:
    """Partitions finished on the cluster (from the scheduler's task completions) and
    registrations written, on stderr when it is a terminal; nothing otherwise."""

    def __init__(self, stream: IO[str]) -> None:
        self.bar: Any = None
        if not stream.isatty():
            return
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                            TextColumn("{task.completed}"), TimeElapsedColumn(),
                            console=Console(file=stream), transient=True)
        self.partitions = self.bar.add_task("partitions judged on the cluster", total=None)
        self.written = self.bar.add_task("registrations written", total=None)

    def partition_done(self, _: Any) -> None:
        self.bar.advance(self.partitions)

    def track(self, results: Iterable[Result]) -> Iterator[Result]:
        if self.bar is None:
            yield from results
            return
        with self.bar:
            for result in results:
                self.bar.advance(self.written)
                yield result


# --- the command line's entry -----------------------------------------------------------


def setup_of(profile: str, limits: Limits, engine: str) -> Setup:
    """What the workers build their checker from: the profile named (read here, on the
    client, so that workers need no access to it), the limits and the engine.
    Raises :class:`ConfigurationError` for a profile that cannot be had."""
    source, data = resolve_profile(profile)
    return Setup(source, data, limits, engine)


@contextlib.contextmanager
def connected(scheduler: str) -> Iterator[Cluster]:
    """A cluster to audit on, closed on leaving. A cluster that goes away meanwhile (the
    scheduler lost, the connection closed) is :class:`ClusterStopped`: no verdict, no bug.
    Raises :class:`ConfigurationError` for a scheduler that cannot be reached."""
    cluster = Cluster(scheduler)
    lost = False
    try:
        yield cluster
    except (CommClosedError, TimeoutError, CancelledError) as exc:
        lost = True
        raise ClusterStopped(f"the audit on the Dask cluster stopped: {type(exc).__name__}: "
                             f"{exc}") from exc
    finally:
        cluster.close(lost)
