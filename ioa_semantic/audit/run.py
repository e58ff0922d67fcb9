"""The batch audit of capability registrations (draft 6.3), as a stream.

Inputs are files, folders (walked for ``*.json``, ``*.jsonld``, ``*.jsonl`` in sorted path
order) and ``-`` for JSON Lines on standard input. Each registration gets one result, in
input order; a line or file that cannot be read is a result of its own and the audit goes
on. Among registrations valid on their own, one capability IRI registered with different
inputs, outputs or ontology is a conflict, reported after the registrations with every
registration involved. Memory holds one record per distinct capability IRI, nothing per
valid registration beyond it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import IO, TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .._checker import Checker

from .._codes import finding
from .._exceptions import IoaSemanticError
from .._findings import Finding, Severity, Verdict, sort_key
from .._runtime import frozen
from .._status import ExitStatus
from .._vocab import IOA
from ..compiled.engine import CompiledEngine
from ..pipeline.intake import Limits, parse
from .kinds import Kinds, Unknown

AUDITED_SUFFIXES = (".json", ".jsonld", ".jsonl")


class Result(NamedTuple):
    """One registration's audit result (contract section 2)."""

    source: str
    position: int | None  # "index" in the output: a line of a JSON Lines file, or an array slot
    id: str | None
    status: str
    reasons: tuple[Finding, ...]

    @property
    def plain(self) -> bool:
        """Valid without a reason: what a batch only counts (see Judged.notable)."""
        return not self.reasons and self.status == "valid"

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "index": self.position, "id": self.id,
                "status": self.status, "reasons": [r.as_dict() for r in self.reasons]}


class Conflict(NamedTuple):
    id: str
    code: str
    registrations: tuple[tuple[str, int | None], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"conflict": {"id": self.id, "code": self.code, "registrations": [
            {"source": source, "index": index} for source, index in self.registrations]}}


_INPUTS, _OUTPUTS = IOA + "inputs", IOA + "outputs"
_ONTOLOGY_ID, _ONTOLOGY_VERSION = IOA + "ontologyId", IOA + "ontologyVersion"


def _declaration(node: dict[str, Any], default_ontology: tuple[str, str] | None) -> tuple[Any, ...]:
    """What a registration declares about its capability, in a comparable form.

    Equal declarations are one object (up to a bound): registrations of one directory
    declare the same few things, and a batch pickles each of them once, the receiving end
    unpickles one, and the conflict index holds one.
    """
    if _ONTOLOGY_ID in node or _ONTOLOGY_VERSION in node:
        ontology = tuple(_lexical(node, _ONTOLOGY_ID) + _lexical(node, _ONTOLOGY_VERSION))
    else:
        ontology = ()
    declaration = (_media(node, _INPUTS), _media(node, _OUTPUTS), ontology or default_ontology)
    found = _DECLARATIONS.get(declaration)
    if found is None:
        if len(_DECLARATIONS) < _DECLARATIONS_LIMIT:
            _DECLARATIONS[declaration] = declaration
        return declaration
    return found


_DECLARATIONS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_DECLARATIONS_LIMIT = 4096


def _lexical(node: dict[str, Any], prop: str) -> list[str]:
    return [str(v.get("@value", v.get("@id"))) for v in node.get(prop, ())]


def _media(node: dict[str, Any], prop: str) -> tuple[str, ...]:
    # Type and subtype compare case-insensitively; parameters exactly (contract).
    values = node.get(prop, ())
    if len(values) == 1:  # the common case: one media type, its key remembered
        text = values[0].get("@value")
        if type(text) is str:
            return _one_media(text)
    return tuple(sorted({_media_key(str(v.get("@value", v.get("@id")))) for v in values}))


@lru_cache(maxsize=1024)
def _one_media(value: str) -> tuple[str]:
    return (_media_key(value),)


@lru_cache(maxsize=1024)
def _media_key(value: str) -> str:
    head, sep, rest = value.partition(";")
    return head.strip().lower() + (sep + ";".join(p.strip() for p in rest.split(";")) if sep else "")


class Audit:
    """One audit run over a Checker's profile: feed documents, then read the conflicts."""

    def __init__(self, checker: Checker | None, checkpoint: Checkpoint | None = None) -> None:
        self.checker = checker
        self.checkpoint = checkpoint
        # capability IRI -> its first (IRI, declaration, (source, index)), in the order first
        # seen; an IRI seen again gets the list of every registration of it, and a set holds
        # those registered differently. Most IRIs are seen once and cost one entry.
        self._seen: dict[str, Declared] = {}
        self._again: dict[str, list[tuple[str, int | None]]] = {}
        self._conflicting: set[str] = set()
        self._conflicts: list[Conflict] | None = None
        self.total = 0
        self.statuses = {"valid": 0, "invalid": 0, "indeterminate": 0}
        self.codes: dict[str, int] = {}

    @property
    def judging(self) -> Checker:
        """The checker that judges here (a cluster's audit has none: its workers judge)."""
        if self.checker is None:
            raise TypeError("this audit judges on a cluster, not in this process")
        return self.checker

    def registration(self, data: bytes | str | dict[str, Any], source: str,
                     index: int | None) -> Result:
        return self.record(*judge(self.judging, data, source, index))

    def unreadable(self, source: str, index: int | None, reasons: Iterable[Finding]) -> Result:
        return self._count(Result(source, index, None, "invalid", tuple(reasons)))

    def record(self, result: Result, declaration: tuple[Any, ...] | None) -> Result:
        """Count a judged registration and index its declaration for conflicts."""
        if declaration is not None and result.id is not None:
            where = (result.source, result.position)
            self._index(result.id, declaration, where)
            if self.checkpoint is not None:
                self.checkpoint.indexed(result.id, declaration, where)
        return self._count(result)

    def batches(self, pieces: Iterable[Piece], jobs: int = 1,
                render: Render | None = None) -> Iterator[Judged]:
        """Every piece of the input (see :func:`pieces`) judged and recorded, in input
        order; ``jobs`` worker processes; ``render`` writes each result's line where it was
        judged.

        With a checkpoint, the pieces an interrupted run completed are read again, proven the
        same and skipped (``pieces`` cut with the checkpoint's fingerprint), and the state
        advances once each batch has been handed on (and so written).
        """
        # The checker, its compiled shapes and tables live as long as the run: frozen, the
        # collector stops walking them on every full collection (about 15% of a worker's
        # time on a large audit), and forked workers keep sharing their pages. Unfrozen when
        # the run ends, so that a library caller's process is left as it was.
        with frozen():
            yield from self._judged(pieces, jobs, render)

    def _judged(self, pieces: Iterable[Piece], jobs: int, render: Render | None) -> Iterator[Judged]:
        if self.checkpoint is not None:
            self.checkpoint.resume(self)
            pieces = self.checkpoint.remaining(pieces, self)
        kinds = kinds_for(self.judging)
        if jobs <= 1:
            judged: Iterable[Judged] = (judge_piece(self.judging, piece, render, kinds)
                                        for piece in pieces)
        else:
            judged = _in_workers(self.judging, pieces, jobs, render, kinds)
        try:
            for batch in judged:
                self.record_batch(batch)
                yield batch
                if self.checkpoint is not None:
                    self.checkpoint.advance(self)
        finally:  # done, or ended by a failure: the journal has what the state records
            if self.checkpoint is not None:
                self.checkpoint.close()

    def record_batch(self, batch: Judged) -> None:
        """Count a judged batch and index its declarations for conflicts."""
        plain = batch.size - len(batch.notable)  # valid, without a reason: counted at once
        self.total += plain
        self.statuses["valid"] += plain
        for result in batch.notable:
            self._count(result)
        seen, indexed = self._seen, self._indexed
        for entry in batch.declarations:
            if seen.setdefault(entry[0], entry) is not entry:
                indexed(entry)  # seen before: it also goes on the list of its registrations
        if self.checkpoint is not None:
            self.checkpoint.indexed_all(batch.declarations)

    def _count(self, result: Result) -> Result:
        self.total += 1
        self.statuses[result.status] += 1
        for reason in result.reasons:
            self.codes[reason.code] = self.codes.get(reason.code, 0) + 1
        return result

    def _index(self, ident: str, declaration: tuple[Any, ...],
               where: tuple[str, int | None]) -> None:
        self._indexed((ident, declaration, where))

    def _indexed(self, entry: Declared) -> None:
        first = self._seen.setdefault(entry[0], entry)
        if first is entry:
            return
        ident = entry[0]
        registrations = self._again.get(ident)
        if registrations is None:
            registrations = self._again[ident] = [first[2]]
        registrations.append(entry[2])
        if entry[1] != first[1]:
            self._conflicting.add(ident)

    def conflicts(self) -> list[Conflict]:
        """The conflicts, once every registration is in: computed (and counted in the codes)
        on the first call, the same list on every later one."""
        if self._conflicts is None:
            self._conflicts = [Conflict(ident, "registration.conflict", tuple(self._again[ident]))
                               for ident in self._seen if ident in self._conflicting]
            if self._conflicts:
                self.codes["registration.conflict"] = (
                    self.codes.get("registration.conflict", 0) + len(self._conflicts))
        return self._conflicts

    def summary(self, conflicts: int) -> dict[str, Any]:
        return {"summary": {"total": self.total, "status": dict(self.statuses),
                            "codes": dict(sorted(self.codes.items())), "conflicts": conflicts}}

    def exit_status(self) -> ExitStatus:
        return ExitStatus.of_audit(self.statuses["invalid"], self.statuses["indeterminate"],
                                   len(self.conflicts()))


Item = tuple[str, int | None, "bytes | dict[str, Any] | None", tuple[Finding, ...]]
Render = Callable[[Result], str]
# (capability IRI, declaration, (source, index)): what a valid registration declares, and where
Declared = tuple[str, tuple[Any, ...], tuple[str, int | None]]


class Judged(NamedTuple):
    """A batch of registrations judged: what the audit counts and the reporters write."""

    size: int  # registrations judged
    lines: str  # each result's line, in input order, when the batch was judged with a render
    notable: tuple[Result, ...]  # the results with a reason or not valid, in input order
    declarations: list[Declared]  # of each valid registration, for conflicts


def judge(checker: Checker, data: bytes | str | dict[str, Any], source: str,
          index: int | None, kinds: Kinds | None = None) -> tuple[Result, tuple[Any, ...] | None]:
    """One registration's result, and its declaration when it is valid (for conflicts).

    With ``kinds``, a registration of a kind already judged clean is answered from it.
    """
    unknown = None
    if kinds is not None and type(data) is bytes:
        known = kinds.judged(data)
        if isinstance(known, Unknown):
            unknown = known
        elif known is not None:
            return Result(source, index, known[0], "valid", ()), known[1]
    if unknown is None:
        baseline = checker.baseline(data, "registration")
    else:  # the compiled path has judged it: clean, or to be reported
        baseline = unknown.compiled or checker.reported(data, "registration")
    node = baseline.node
    ident = node.get("@id") if node is not None else None
    if not isinstance(ident, str):
        ident = None
    if not baseline.findings:  # the common case, answered without sorting anything
        declaration = None if node is None or ident is None else _declaration(
            node, checker.profile.single_ontology())
        if unknown is not None and declaration is not None:
            unknown.remember(declaration)
        return Result(source, index, ident, "valid", ()), declaration
    errors = [f for f in baseline.findings if f.severity is Severity.ERROR]
    if any(f.effect is Verdict.INVALID for f in errors):
        status = "invalid"
    elif errors:
        status = "indeterminate"
    else:
        status = "valid"
    declaration = None
    if status == "valid" and node is not None and ident is not None:
        declaration = _declaration(node, checker.profile.single_ontology())
    return (Result(source, index, ident, status,
                   tuple(sorted(baseline.findings, key=sort_key))), declaration)


# --- worker processes -----------------------------------------------------------------------

# Registrations per batch, where they do not come in blocks of lines: 1,024 a worker task
# took the writing process's share of a 100,000 audit from 19 to 15 µs a registration
# (fewer tasks to pickle, wake and collect), measured when every item was sent on its own.
_BATCH = 1024
_WORKER_CHECKER: Any = None
_WORKER_KINDS: Kinds | None = None


def kinds_for(checker: Checker) -> Kinds | None:
    """Registrations judged by kind under ``checker`` (its compiled engine only: the reference
    engine judges every registration in full)."""
    if not isinstance(checker.stages, CompiledEngine):
        return None
    return Kinds(checker.stages,
                 keep=frozenset({_INPUTS, _OUTPUTS, _ONTOLOGY_ID, _ONTOLOGY_VERSION}))


def judge_batch(checker: Checker, batch: Iterable[Item],
                kinds: Kinds | None = None) -> list[tuple[Result, tuple[Any, ...] | None]]:
    """A batch of items judged together: the unit of work of every audit runner.

    Local workers and a cluster's workers alike call this, so they report the same.
    """
    return list(judged_items(checker, batch, kinds))


def judged_items(checker: Checker, items: Iterable[Item],
                 kinds: Kinds | None = None) -> Iterator[tuple[Result, tuple[Any, ...] | None]]:
    for source, index, document, problems in items:
        if document is None:
            yield Result(source, index, None, "invalid", tuple(problems)), None
        else:
            yield judge(checker, document, source, index, kinds)


def judge_together(checker: Checker, batch: Iterable[Item], render: Render | None = None,
                   kinds: Kinds | None = None) -> Judged:
    """A batch judged into what the audit counts and the reporters write: where it is
    judged (a worker), so that the process writing the output handles a batch, not each
    registration in it."""
    lines: list[str] = []
    notable: list[Result] = []
    declarations: list[Declared] = []
    size = 0
    for result, declaration in judged_items(checker, batch, kinds):
        size += 1
        if render is not None:
            lines.append(render(result))
        if not result.plain:
            notable.append(result)
        if declaration is not None and result.id is not None:
            declarations.append((result.id, declaration, (result.source, result.position)))
    return Judged(size, "".join(lines), tuple(notable), declarations)


def batched(results: Iterable[Result], render: Render | None = None) -> Iterator[Judged]:
    """Results judged elsewhere (a cluster), as the reporters read them: batches. Their
    declarations stay with whoever counted them."""
    batch: list[Result] = []
    for result in results:
        batch.append(result)
        if len(batch) == _BATCH:
            yield _as_judged(batch, render)
            batch = []
    if batch:
        yield _as_judged(batch, render)


def _as_judged(batch: list[Result], render: Render | None) -> Judged:
    return Judged(len(batch), "".join(map(render, batch)) if render is not None else "",
                  tuple(r for r in batch if not r.plain), [])


def judge_piece(checker: Checker, piece: Piece, render: Render | None = None,
                kinds: Kinds | None = None) -> Judged:
    """A piece of the input judged (in a worker, where a block of lines is also split)."""
    return judge_together(checker, items_of(piece), render, kinds)


def items_of(piece: Piece) -> Iterable[Item]:
    """The items of a piece: a batch is its items; a block of lines has one per line that
    is not blank, numbered as :func:`documents` numbers them."""
    if isinstance(piece, list):
        return piece
    source, first, data = piece
    return ((source, first + offset, line, ())
            for offset, line in enumerate(data.split(b"\n")) if line.strip())


def _judge_in_worker(piece: Piece, render: Render | None) -> Judged:
    return judge_piece(_WORKER_CHECKER, piece, render, _WORKER_KINDS)


def _in_workers(checker: Checker, pieces: Iterable[Piece], jobs: int, render: Render | None,
                kinds: Kinds | None) -> Iterator[Judged]:
    """Judge pieces in forked workers that inherit the built checker, keeping input order.

    At most a few pieces per worker are in flight, so memory does not grow with the input
    (a pool's own ``imap`` would read the whole input ahead).
    """
    import multiprocessing
    from collections import deque

    global _WORKER_CHECKER, _WORKER_KINDS
    _WORKER_CHECKER, _WORKER_KINDS = checker, kinds  # each worker fills its own copy
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs) as pool:
        pending: deque[Any] = deque()
        for piece in pieces:
            pending.append(pool.apply_async(_judge_in_worker, (piece, render)))
            if len(pending) >= 4 * jobs:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def documents(paths: Iterable[str], stdin: IO[bytes] | None = None,
              limits: Limits | None = None) -> Iterator[Item]:
    """``(source, index, document, problems)`` for every registration in ``paths``.

    ``document`` is None when the line or file could not be read; ``problems`` says why.
    """
    for path in paths:
        if path == "-":
            yield from _lines("-", stdin if stdin is not None else sys.stdin.buffer)
        elif os.path.isdir(path):
            for file_path in audited_files(path):
                yield from _file(file_path, limits, _lines)
        else:
            yield from _file(path, limits, _lines)


class Lines(NamedTuple):
    """A block of whole lines of a JSON Lines input, the first of them line ``first``."""

    source: str
    first: int
    data: bytes


Piece = list[Item] | Lines


def pieces(paths: Iterable[str], stdin: IO[bytes] | None = None,
           limits: Limits | None = None,
           fingerprint: Fingerprint | None = None) -> Iterator[Piece]:
    """The registrations of ``paths`` as :func:`documents` finds them, in the pieces an audit
    judges and checkpoints: JSON Lines in blocks of whole lines, read and cut without
    looking at each line, and every other item in batches. A ``fingerprint`` hashes every
    file's bytes as they are read (for a resume to prove them the same)."""
    batch: list[Item] = []
    for path in paths:
        if path == "-":
            found: Iterable[Item | Lines] = _blocks("-", stdin if stdin is not None
                                                    else sys.stdin.buffer)
        elif os.path.isdir(path):
            found = (unit for file_path in audited_files(path)
                     for unit in _file(file_path, limits, _blocks, fingerprint))
        else:
            found = _file(path, limits, _blocks, fingerprint)
        for unit in found:
            if type(unit) is Lines:
                if batch:
                    yield batch
                    batch = []
                yield unit
            else:
                batch.append(unit)  # type: ignore[arg-type]
                if len(batch) == _BATCH:
                    yield batch
                    batch = []
    if batch:
        yield batch


def audited_files(folder: str) -> list[str]:
    """The files an audit reads under ``folder``, named and ordered as it reports them."""
    found: list[str] = []
    for parent, dirs, files in os.walk(folder):
        dirs.sort()
        found.extend(os.path.join(parent, name) for name in files
                     if name.endswith(AUDITED_SUFFIXES))
    return sorted(found)


def _file(path: str, limits: Limits | None,
          lines: Callable[[str, IO[bytes]], Iterator[Any]],
          fingerprint: Fingerprint | None = None) -> Iterator[Any]:
    """The items of one file; a JSON Lines file's as ``lines`` reads them. A ``fingerprint``
    hashes the blocks of lines as they are cut, and any other file whole."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below, also on a generator exit)
    except OSError as exc:
        if fingerprint is not None:
            fingerprint.unreadable(path)
        yield path, None, None, (finding("json.unreadable",
                                         f"{path}: cannot be read: {exc.strerror}"),)
        return
    with handle:
        if fingerprint is not None:
            fingerprint.opened(path)
        if path.endswith(".jsonl"):
            if fingerprint is None:
                yield from lines(path, handle)
                return
            for unit in lines(path, handle):
                if type(unit) is Lines:
                    fingerprint.read(unit.data)
                yield unit
            fingerprint.closed()
            return
        try:
            data = handle.read()
        except OSError as exc:
            if fingerprint is not None:
                fingerprint.closed()
            yield path, None, None, (finding("json.unreadable",
                                             f"{path}: cannot be read: {exc.strerror}"),)
            return
    if fingerprint is not None:
        fingerprint.read(data)
        fingerprint.closed()
    yield from document_items(path, data, limits)


def document_items(path: str, data: bytes, limits: Limits | None = None) -> Iterator[Item]:
    """The registrations in the bytes of a ``*.json``/``*.jsonld`` file: one, or an array's."""
    if data.lstrip()[:1] != b"[":
        yield path, None, data, ()
        return
    # An array of registrations: read as one document, then each element on its own.
    intake = parse(data, limits, array=True)
    if not intake.ok:
        yield path, None, None, intake.findings
        return
    for index, element in enumerate(intake.document or ()):
        yield path, index, element if isinstance(element, dict) else None, () if isinstance(
            element, dict) else (finding("json.not-object",
                                         f"element {index} is not a registration object",
                                         f"/{index}"),)


def _lines(source: str, stream: IO[bytes]) -> Iterator[tuple[str, int | None, bytes | None,
                                                              tuple[Finding, ...]]]:
    try:
        for index, line in enumerate(stream):
            if line.strip():
                yield source, index, line, ()
    except OSError as exc:
        yield source, None, None, (finding("json.unreadable",
                                           f"{source}: reading stopped: {exc.strerror}"),)


# Bytes of JSON Lines per piece: about 1,200 registrations of the 6.3 shape.
_BLOCK_BYTES = 512 * 1024


def _blocks(source: str, stream: IO[bytes]) -> Iterator[Lines | Item]:
    """``stream`` in blocks of whole lines (the last may lack its newline)."""
    read = getattr(stream, "read1", stream.read)  # a pipe's bytes as they come
    first = 0
    parts: list[bytes] = []  # a line longer than a block, joined once it ends
    try:
        while chunk := read(_BLOCK_BYTES):
            cut = chunk.rfind(b"\n") + 1
            if not cut:
                parts.append(chunk)
                continue
            block = b"".join([*parts, chunk[:cut]]) if parts else chunk[:cut]
            parts = [chunk[cut:]] if cut < len(chunk) else []
            yield Lines(source, first, block)
            first += block.count(b"\n")
        if parts:
            yield Lines(source, first, b"".join(parts))
    except OSError as exc:
        yield source, None, None, (finding("json.unreadable",
                                           f"{source}: reading stopped: {exc.strerror}"),)


# --- a durable cursor -----------------------------------------------------------------------


class Refused(IoaSemanticError):
    """A state that is not resumed (exit status 2): unreadable, corrupt, of another version, or
    written for files that are no longer as it records them. Nothing has been written."""


class WriteFailed(IoaSemanticError):
    """A file the audit writes (its output, a state or its journal) could not be written: the
    environment failed the run (exit status 74), not the input."""

    def __init__(self, name: str, error: OSError) -> None:
        super().__init__(f"cannot write {name}: {error.strerror or error}")
        self.name = name
        self.error = error


@contextlib.contextmanager
def writing(name: str) -> Iterator[None]:
    """An OSError while writing ``name`` as :class:`WriteFailed` naming it. A reader that went
    away stays a BrokenPipeError (the command line then ends as a shell's pipe does)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise WriteFailed(name, exc) from exc


class Output:
    """The audit's output stream, whose failures to write are :class:`WriteFailed` naming
    it (``name``); everything else is the stream's own."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self.stream = stream
        self.name = name

    def write(self, text: str) -> int:
        with writing(self.name):
            return self.stream.write(text)

    def flush(self) -> None:
        with writing(self.name):
            self.stream.flush()

    def close(self) -> None:
        with writing(self.name):
            self.stream.close()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.stream, attribute)


# An input file as read: its path, the bytes of it read (None: it could not be opened) and
# their sha256.
FileRead = tuple[str, int | None, str | None]


class Mark(NamedTuple):
    """How far the inputs were read when a piece was cut: the files read to their end, and the
    one being read (its path, the bytes of it cut so far and their running hash)."""

    finished: int
    reading: tuple[str, int, Any] | None

    def record(self) -> FileRead | None:
        return None if self.reading is None else (
            self.reading[0], self.reading[1], self.reading[2].hexdigest())


class Fingerprint:
    """What an audit has read of its input files, hashed as :func:`pieces` reads them (nothing
    is read for it alone): of a JSON Lines file, the blocks of whole lines cut so far, so that
    once a piece is judged its bytes are the prefix judged; of any other file, all of it."""

    def __init__(self) -> None:
        self.finished = 0  # files read to their end, or that could not be opened
        self.unsaved: deque[tuple[int, FileRead]] = deque()  # finished, numbered, not journaled
        self.check: Callable[[FileRead], None] | None = None  # on a resume: each file finished
        self._path: str | None = None
        self._length = 0
        self._hash = hashlib.sha256()

    def opened(self, path: str) -> None:
        self._path, self._length, self._hash = path, 0, hashlib.sha256()

    def read(self, data: bytes) -> None:
        self._length += len(data)
        self._hash.update(data)

    def closed(self) -> None:
        path, self._path = self._path, None
        assert path is not None
        self._finished((path, self._length, self._hash.hexdigest()))

    def unreadable(self, path: str) -> None:
        self._finished((path, None, None))

    def _finished(self, record: FileRead) -> None:
        if self.check is not None:
            self.check(record)
        self.unsaved.append((self.finished, record))
        self.finished += 1

    def mark(self) -> Mark:
        return Mark(self.finished, None if self._path is None else (
            self._path, self._length, self._hash.copy()))


class _Written:
    """A file's length and sha256 so far, kept up as it is written."""

    def __init__(self, length: int = 0, digest: Any = None) -> None:
        self.length = length
        self.hash = digest if digest is not None else hashlib.sha256()

    def add(self, data: bytes) -> None:
        self.length += len(data)
        self.hash.update(data)

    def as_dict(self) -> dict[str, Any]:
        return {"length": self.length, "sha256": self.hash.hexdigest()}


STATE_VERSION = 2
_READ_BYTES = 1 << 20  # what proving a written file reads at a time


class Checkpoint:
    """``--state``: resume an audit after the process was killed, losing nothing, and never
    from files that are not as the state records them.

    After every piece of the input (see :func:`pieces`) the output is flushed and synced, the
    conflict index's new entries and the input files read to their end are appended to a
    journal beside the state file and synced, and the state replaces the previous one
    atomically. The state holds how many pieces are done, the counters, and fingerprints:
    the output's and the journal's length and the sha256 of what was written of them so far
    (kept up as they are written), the number of input files finished (each in the journal
    with its path, length and sha256) and the one being read (its path, the bytes of it cut
    into pieces so far and their sha256), hashed as :class:`Fingerprint` reads them.

    A rerun proves the output and the journal (each at least as long as recorded, the recorded
    prefix hashing the same), reads the pieces already done again as the first run read them,
    proving every input file on the way, and only then truncates the output and the journal
    to the last state, replays the journal and goes on: the final output equals that of an
    uninterrupted run over the inputs as they are now, nothing missing, nothing twice. Any
    difference refuses the resume (:class:`Refused`) before anything is written.
    """

    def __init__(self, path: str, inputs: list[str], output: IO[str]) -> None:
        self.path = path
        self.journal_path = path + ".index"
        self.inputs = inputs
        self.output = output
        self.output_name = str(getattr(output, "name", "the output"))
        self.fingerprint = Fingerprint()  # pieces() hashes the inputs into it
        self.done = 0
        self._journal: IO[bytes] | None = None
        self._unjournaled: list[tuple[str, Any, tuple[str, int | None]]] = []
        self._marks: deque[Mark] = deque()  # of the pieces cut and not yet checkpointed
        self._written = _Written()  # the output's
        self._journaled = _Written()
        self._files = 0  # input files in the journal
        self._resumed: dict[str, Any] | None = None  # a state whose inputs are still to prove

    # -- resuming

    def resume(self, audit: Audit) -> int:
        """Restore an interrupted run into ``audit``, once the output and the journal are
        proven to be as the state records them; the number of pieces already done. The inputs
        are proven as :meth:`remaining` reads them again. Raises :class:`Refused`."""
        state = self._load()
        if state is None:
            self._start()
            return 0
        self._written = self._prove(self.output_name, self.output.fileno(), state["output"])
        name = f"{self.journal_path} (the journal of {self.path})"
        try:
            journal = open(self.journal_path, "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            raise self._refused(f"{name} is missing") from None
        except OSError as exc:
            raise self._refused(f"{name} cannot be read: {exc.strerror}") from None
        with journal:
            self._journaled = self._prove(name, journal.fileno(), state["journal"])
        audit.total = state["total"]
        audit.statuses = dict(state["statuses"])
        audit.codes = dict(state["codes"])
        self.done = state["pieces"]
        self._files = state["files"]
        self._resumed = state
        return self.done

    def remaining(self, pieces: Iterable[Piece], audit: Audit) -> Iterator[Piece]:
        """The pieces still to judge, each marked for its checkpoint. On a resume, the pieces
        already done are read again (as they were cut, with ``fingerprint=``
        :attr:`fingerprint`), every input file proven as the state records it and the journal
        replayed into ``audit`` before the first piece is handed on."""
        found = iter(pieces)
        if self._resumed is not None:
            self._pass_over(found, audit, self._resumed)
            self._resumed = None
        for piece in found:
            self._marks.append(self.fingerprint.mark())
            yield piece

    def _pass_over(self, found: Iterator[Piece], audit: Audit, state: dict[str, Any]) -> None:
        files = self._replayed(audit, state["journal"]["length"])
        reading = None if state["reading"] is None else tuple(state["reading"])

        def check(record: FileRead) -> None:  # each input file read to its end, in order
            wanted = next(files, None)
            if wanted is None:  # the state had read this one only so far
                raise self._refused(_difference(reading, record))
            if tuple(wanted) != record:
                raise self._refused(_difference(wanted, record))

        fingerprint = self.fingerprint
        fingerprint.check = check
        try:
            passed = 0
            while passed < self.done and next(found, None) is not None:
                passed += 1
            mark = fingerprint.mark()
        finally:
            fingerprint.check = None
        left = next(files, None)  # also the end of the replay
        if left is not None:
            raise self._refused(_difference(left, mark.record()))
        if mark.record() != reading:
            raise self._refused(_difference(reading, mark.record()))
        if passed < self.done:
            raise self._refused(f"the inputs end before the {self.done} pieces already audited")
        # Proven: the output and the journal go back to the state, where the run goes on.
        with writing(self.output_name):
            self.output.flush()
            os.ftruncate(self.output.fileno(), self._written.length)
            self.output.seek(0, os.SEEK_END)
        with writing(self.journal_path):
            self._journal = open(self.journal_path, "r+b")  # noqa: SIM115 (closed by finish)
            self._journal.truncate(self._journaled.length)
            self._journal.seek(0, os.SEEK_END)
        unsaved = fingerprint.unsaved
        while unsaved and unsaved[0][0] < self._files:  # in the journal already
            unsaved.popleft()

    def _replayed(self, audit: Audit, length: int) -> Iterator[FileRead]:
        """The journal's first ``length`` bytes (proven): the conflict index's entries replayed
        into ``audit``, the input files' yielded in the order they were read."""
        import json

        with open(self.journal_path, "rb") as journal:
            read = 0
            for entry in journal:
                read += len(entry)
                if read > length:
                    break
                value = json.loads(entry)
                if type(value) is dict:
                    yield value["file"], value["length"], value["sha256"]
                else:
                    ident, declaration, source, index = value
                    audit._index(ident, _frozen(declaration), (source, index))

    def _prove(self, name: str, descriptor: int, recorded: dict[str, Any]) -> _Written:
        """A written file (``descriptor``) as long as recorded at least, and its recorded
        prefix hashing the same: that prefix's running hash."""
        length, size = recorded["length"], os.fstat(descriptor).st_size
        if size < length:
            raise self._refused(f"{name} is {size} bytes, shorter than the {length} already "
                                "written (deleted or truncated since)")
        digest, position = hashlib.sha256(), 0
        while position < length:
            data = os.pread(descriptor, min(_READ_BYTES, length - position), position)
            if not data:
                break
            digest.update(data)
            position += len(data)
        if digest.hexdigest() != recorded["sha256"]:
            raise self._refused(f"{name}: its first {length} bytes are not those written "
                                "(changed or replaced since)")
        return _Written(length, digest)

    def _load(self) -> dict[str, Any] | None:
        import json

        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._refused(f"it cannot be read: {exc.strerror}") from None
        try:
            state = json.loads(data)
        except ValueError:
            raise self._refused("it is not JSON") from None
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION or state.get(
                "cut") != [_BLOCK_BYTES, _BATCH]:
            raise self._refused("it was written by another version of ioa-check (or is "
                                "not an audit's state)")
        missing = _state_problem(state)
        if missing:
            raise self._refused(f"it lacks {missing}")
        if state.pop("check") != _seal(state):
            raise self._refused("it is corrupt (its content does not match its checksum)")
        if state["inputs"] != self.inputs:
            raise self._refused("it was written for other inputs: "
                                + " ".join(state["inputs"]))
        return state

    def _refused(self, detail: str) -> Refused:
        return Refused(f"cannot resume from {self.path}: {detail}; delete {self.path} to start "
                       "the audit over")

    def _start(self) -> None:
        """A run from the start: the output emptied, a new journal, and the state's folder
        known to take files before anything is judged."""
        with writing(self.output_name):
            self.output.flush()
            os.ftruncate(self.output.fileno(), 0)
            self.output.seek(0)
        temporary = self.path + ".tmp"
        with writing(self.path):
            open(temporary, "wb").close()
            os.remove(temporary)
        with writing(self.journal_path):
            self._journal = open(self.journal_path, "wb")  # noqa: SIM115 (closed by finish)

    # -- checkpoints

    def indexed(self, ident: str, declaration: Any, where: tuple[str, int | None]) -> None:
        self._unjournaled.append((ident, declaration, where))

    def indexed_all(self, entries: Iterable[Declared]) -> None:
        self._unjournaled.extend(entries)

    def advance(self, audit: Audit) -> None:
        self.done += 1
        self.save(audit, self._marks.popleft())

    def save(self, audit: Audit, mark: Mark) -> None:
        """A checkpoint after the piece cut at ``mark``: the journal and the output synced, then
        the state replaced. A write that fails (:class:`WriteFailed`) leaves the last state,
        from which a rerun resumes."""
        import json

        assert self._journal is not None
        lines = [json.dumps([ident, declaration, source, index]) + "\n"
                 for ident, declaration, (source, index) in self._unjournaled]
        self._unjournaled.clear()
        unsaved = self.fingerprint.unsaved
        while unsaved and unsaved[0][0] < mark.finished:
            path, length, digest = unsaved.popleft()[1]
            lines.append(json.dumps({"file": path, "length": length, "sha256": digest}) + "\n")
        data = "".join(lines).encode()
        with writing(self.journal_path):
            self._journal.write(data)
            self._journal.flush()
            os.fsync(self._journal.fileno())
        self._journaled.add(data)
        self._files = mark.finished
        with writing(self.output_name):
            self.output.flush()
            end, descriptor = self.output.tell(), self.output.fileno()
            os.fsync(descriptor)
            while self._written.length < end:  # what was written since, hashed from the file
                written = os.pread(descriptor, min(_READ_BYTES, end - self._written.length),
                                   self._written.length)
                if not written:
                    break
                self._written.add(written)
        reading = mark.record()
        state: dict[str, Any] = {
            "version": STATE_VERSION, "cut": [_BLOCK_BYTES, _BATCH], "inputs": self.inputs,
            "pieces": self.done, "output": self._written.as_dict(),
            "journal": self._journaled.as_dict(), "files": self._files,
            "reading": None if reading is None else list(reading), "total": audit.total,
            "statuses": audit.statuses, "codes": audit.codes}
        state["check"] = _seal(state)
        temporary = self.path + ".tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(state, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(temporary)  # what it took of a full disk, freed
            raise WriteFailed(self.path, exc) from exc

    def close(self) -> None:
        """The journal closed (the run is over, or has failed)."""
        if self._journal is not None:
            self._journal.close()

    def finish(self) -> None:
        """The audit is complete and its output synced: the state and its journal are no
        longer needed."""
        with writing(self.output_name):
            self.output.flush()
            os.fsync(self.output.fileno())
        self.close()
        for path in (self.path, self.journal_path):
            with writing(path), contextlib.suppress(FileNotFoundError):
                os.remove(path)


def _difference(wanted: FileRead | tuple[Any, ...] | None, found: FileRead | None) -> str:
    """How an input file read again differs from the state's record of it (``wanted``)."""
    if wanted is None:
        return f"{found[0] if found else 'an input'}: read where the state records no file"
    path, length = wanted[0], wanted[1]
    if found is None:
        return f"{path}: no longer among the inputs where it was audited"
    if found[0] != path:
        return f"{path}: no longer where it was among the inputs ({found[0]} is there now)"
    if length is None:
        return f"{path}: could not be read when it was audited, and now can"
    if found[1] is None:
        return f"{path}: cannot be read now"
    try:
        size = os.stat(path).st_size
    except OSError:
        size = None
    if size is not None and size < length:
        return f"{path}: now {size} bytes, shorter than the {length} already audited"
    return f"{path}: changed where it was already audited (its first {length} bytes)"


def _seal(state: dict[str, Any]) -> str:
    """The checksum a state carries of the rest of itself."""
    import json

    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def _state_problem(state: dict[str, Any]) -> str | None:
    """The first field a state lacks (or holds of the wrong type), or None."""

    def count(value: Any) -> bool:
        return type(value) is int and value >= 0

    def written(value: Any) -> bool:
        return isinstance(value, dict) and count(value.get("length")) and isinstance(
            value.get("sha256"), str)

    def reading(value: Any) -> bool:
        return value is None or (isinstance(value, list) and len(value) == 3 and isinstance(
            value[0], str) and count(value[1]) and isinstance(value[2], str))

    fields: dict[str, Callable[[Any], bool]] = {
        "inputs": lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v),
        "pieces": count, "files": count, "total": count, "output": written, "journal": written,
        "reading": reading,
        "statuses": lambda v: isinstance(v, dict) and set(v) == {
            "valid", "invalid", "indeterminate"} and all(map(count, v.values())),
        "codes": lambda v: isinstance(v, dict) and all(map(count, v.values())),
        "check": lambda v: isinstance(v, str)}
    for name, valid in fields.items():
        if name not in state or not valid(state[name]):
            return f"a valid {name!r} field"
    return None


def _frozen(value: Any) -> Any:
    """A declaration read back from JSON, as the tuples it was written from."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value
