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
import gc
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import IO, Any, NamedTuple

from ._baseline import Kinds, Unknown
from ._codes import finding
from ._findings import Finding, Severity, Verdict, sort_key
from ._intake import Limits, parse

AUDITED_SUFFIXES = (".json", ".jsonld", ".jsonl")
IOA = "https://example.org/ioa/semantic#"


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

    def __init__(self, checker: Any, checkpoint: Checkpoint | None = None) -> None:
        self.checker = checker
        self.checkpoint = checkpoint
        # capability IRI -> its first (IRI, declaration, (source, index)), in the order first
        # seen; an IRI seen again gets the list of every registration of it, and a set holds
        # those registered differently. Most IRIs are seen once and cost one entry.
        self._seen: dict[str, Declared] = {}
        self._again: dict[str, list[tuple[str, int | None]]] = {}
        self._conflicting: set[str] = set()
        self.total = 0
        self.statuses = {"valid": 0, "invalid": 0, "indeterminate": 0}
        self.codes: dict[str, int] = {}

    def registration(self, data: bytes | str | dict[str, Any], source: str,
                     index: int | None) -> Result:
        return self.record(*judge(self.checker, data, source, index))

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

        With a checkpoint, the pieces an interrupted run completed are skipped, and the state
        advances once each batch has been handed on (and so written).
        """
        # The checker, its compiled shapes and tables live as long as the run: frozen, the
        # collector stops walking them on every full collection (about 15% of a worker's
        # time on a large audit), and forked workers keep sharing their pages.
        gc.freeze()
        if self.checkpoint is not None:
            skip = self.checkpoint.resume(self)
            pieces = (piece for position, piece in enumerate(pieces) if position >= skip)
        kinds = kinds_for(self.checker)
        if jobs <= 1:
            judged: Iterable[Judged] = (judge_piece(self.checker, piece, render, kinds)
                                        for piece in pieces)
        else:
            judged = _in_workers(self.checker, pieces, jobs, render, kinds)
        for batch in judged:
            self.record_batch(batch)
            yield batch
            if self.checkpoint is not None:
                self.checkpoint.advance(self)

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
        found = [Conflict(ident, "registration.conflict", tuple(self._again[ident]))
                 for ident in self._seen if ident in self._conflicting]
        for _ in found:
            self.codes["registration.conflict"] = self.codes.get("registration.conflict", 0) + 1
        return found

    def summary(self, conflicts: int) -> dict[str, Any]:
        return {"summary": {"total": self.total, "status": dict(self.statuses),
                            "codes": dict(sorted(self.codes.items())), "conflicts": conflicts}}

    def exit_status(self, conflicts: int) -> int:
        if self.statuses["invalid"] or conflicts:
            return 1
        return 3 if self.statuses["indeterminate"] else 0


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


def judge(checker: Any, data: bytes | str | dict[str, Any], source: str,
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


def kinds_for(checker: Any) -> Kinds | None:
    """Registrations judged by kind under ``checker`` (its compiled engine only: the reference
    engine judges every registration in full)."""
    if checker.engine != "compiled":
        return None
    return Kinds(checker._baseline_options,
                 keep=frozenset({_INPUTS, _OUTPUTS, _ONTOLOGY_ID, _ONTOLOGY_VERSION}))


def judge_batch(checker: Any, batch: Iterable[Item],
                kinds: Kinds | None = None) -> list[tuple[Result, tuple[Any, ...] | None]]:
    """A batch of items judged together: the unit of work of every audit runner.

    Local workers and a cluster's workers alike call this, so they report the same.
    """
    return list(judged_items(checker, batch, kinds))


def judged_items(checker: Any, items: Iterable[Item],
                 kinds: Kinds | None = None) -> Iterator[tuple[Result, tuple[Any, ...] | None]]:
    for source, index, document, problems in items:
        if document is None:
            yield Result(source, index, None, "invalid", tuple(problems)), None
        else:
            yield judge(checker, document, source, index, kinds)


def judge_together(checker: Any, batch: Iterable[Item], render: Render | None = None,
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


def judge_piece(checker: Any, piece: Piece, render: Render | None = None,
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


def _in_workers(checker: Any, pieces: Iterable[Piece], jobs: int, render: Render | None,
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
           limits: Limits | None = None) -> Iterator[Piece]:
    """The registrations of ``paths`` as :func:`documents` finds them, in the pieces an audit
    judges and checkpoints: JSON Lines in blocks of whole lines, read and cut without
    looking at each line, and every other item in batches."""
    batch: list[Item] = []
    for path in paths:
        if path == "-":
            found: Iterable[Item | Lines] = _blocks("-", stdin if stdin is not None
                                                    else sys.stdin.buffer)
        elif os.path.isdir(path):
            found = (unit for file_path in audited_files(path)
                     for unit in _file(file_path, limits, _blocks))
        else:
            found = _file(path, limits, _blocks)
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
          lines: Callable[[str, IO[bytes]], Iterator[Any]]) -> Iterator[Any]:
    """The items of one file; a JSON Lines file's as ``lines`` reads them."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below, also on a generator exit)
    except OSError as exc:
        yield path, None, None, (finding("json.unreadable",
                                         f"{path}: cannot be read: {exc.strerror}"),)
        return
    with handle:
        if path.endswith(".jsonl"):
            yield from lines(path, handle)
            return
        try:
            data = handle.read()
        except OSError as exc:
            yield path, None, None, (finding("json.unreadable",
                                             f"{path}: cannot be read: {exc.strerror}"),)
            return
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


class Checkpoint:
    """``--state``: resume an audit after the process was killed, losing nothing.

    After every piece of the input (see :func:`pieces`) the output is flushed and synced, the
    conflict index's new entries are appended to a journal beside the state file and synced,
    and the state (how many pieces are done, the output's and the journal's lengths, the
    counters) replaces the previous one atomically. A rerun truncates the output and the
    journal to the last state, replays the journal and skips the pieces already done (the
    same inputs cut the same way), so the final output equals that of an uninterrupted run:
    nothing missing, nothing twice. The journal keeps checkpoints cheap: each writes only
    what is new since the last.
    """

    def __init__(self, path: str, inputs: list[str], output: IO[str]) -> None:
        self.path = path
        self.journal_path = path + ".index"
        self.inputs = inputs
        self.output = output
        self.done = 0
        self._journal: IO[str] | None = None
        self._unjournaled: list[tuple[str, Any, tuple[str, int | None]]] = []

    def resume(self, audit: Audit) -> int:
        """Restore an interrupted run into ``audit``; the number of pieces already done."""
        import json

        try:
            with open(self.path, encoding="utf-8") as handle:
                state = json.load(handle)
        except FileNotFoundError:
            state = None
        # A state written for other inputs, or by a version that cut them otherwise, is
        # started over.
        if state is None or state.get("inputs") != self.inputs or state.get(
                "block") != _BLOCK_BYTES or "pieces" not in state:
            self.output.seek(0)
            self.output.truncate()
            self._journal = open(self.journal_path, "w", encoding="utf-8")  # noqa: SIM115
            return 0
        self.output.seek(state["output"])
        self.output.truncate()
        with open(self.journal_path, "r+", encoding="utf-8") as journal:
            journal.truncate(state["journal"])
        with open(self.journal_path, encoding="utf-8") as journal:
            for entry in journal:
                ident, declaration, source, index = json.loads(entry)
                audit._index(ident, _frozen(declaration), (source, index))
        audit.total = state["total"]
        audit.statuses = dict(state["statuses"])
        audit.codes = dict(state["codes"])
        self._journal = open(self.journal_path, "a", encoding="utf-8")  # noqa: SIM115
        self.done = state["pieces"]
        return int(self.done)

    def indexed(self, ident: str, declaration: Any, where: tuple[str, int | None]) -> None:
        self._unjournaled.append((ident, declaration, where))

    def indexed_all(self, entries: Iterable[Declared]) -> None:
        self._unjournaled.extend(entries)

    def advance(self, audit: Audit) -> None:
        self.done += 1
        self.save(audit)

    def save(self, audit: Audit) -> None:
        import json

        assert self._journal is not None
        for ident, declaration, (source, index) in self._unjournaled:
            self._journal.write(json.dumps([ident, declaration, source, index]) + "\n")
        self._unjournaled.clear()
        for stream in (self._journal, self.output):
            stream.flush()
            os.fsync(stream.fileno())
        state = {"inputs": self.inputs, "block": _BLOCK_BYTES, "pieces": self.done,
                 "output": self.output.tell(),
                 "journal": self._journal.tell(), "total": audit.total,
                 "statuses": audit.statuses, "codes": audit.codes}
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)

    def finish(self) -> None:
        """The audit is complete: the state and its journal are no longer needed."""
        if self._journal is not None:
            self._journal.close()
        for path in (self.path, self.journal_path):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def _frozen(value: Any) -> Any:
    """A declaration read back from JSON, as the tuples it was written from."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value
