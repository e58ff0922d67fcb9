"""The conflict index of an audit: every distinct capability IRI with its first declaration
and where it was registered, held in as few bytes as the contract's one record per IRI
allows, and the IRIs registered again, differently or not.

An audit of a directory meets millions of capability IRIs, nearly all of them once, and
about as many declarations (senders combine their media types). Each IRI is held as a
20-byte BLAKE2b digest of its text mapped to its first declaration and where it was first
registered: one integer of the declaration's number (the first :data:`DECLARATIONS_NUMBERED`
distinct declarations are numbered, each digest held once), the source's number (sources
are held once each) and the index, 32 bytes; past those numbers, 32 bytes of the
declaration's 20-byte digest and the place packed (an index of 1,000,000 IRIs: 125 -> 81
bytes an IRI, measured). A collision of either digest would take about 2**80 tries.
An IRI met again keeps its text (the index of distinct IRIs the contract allows), and each
registration after its first is written to a temporary file, not held: its IRI's and its
declaration's digests and its place, 52 bytes on disk, so that memory does not grow with the
registrations of IRIs registered again and again (a directory's senders repeat theirs on
every registration). Once every registration is in, the file is read once for the IRIs
registered with differing declarations, whose conflict's report names every registration of
them (nothing of it is read when there is no conflict). To say what differs, the index also
keeps the distinct declarations themselves, up to :data:`DECLARATIONS_KEPT` of them: an
audit's registrations declare few distinct things, and past the bound (a directory whose
senders each declare their own) a conflict's report says of a registration whose
declaration was first seen then that it was not kept.
"""

from __future__ import annotations

import hashlib
import struct
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

from .._exceptions import WriteFailed

Where = tuple[str, "int | None"]
# (capability IRI, declaration, where): what a valid registration declares, and where
Declared = tuple[str, tuple[Any, ...], Where]
# (capability IRI, its digest, its declaration's digest, where): as the index takes it
Digested = tuple[str, bytes, bytes, Where]

_DIGEST = 20
# Distinct declarations kept to say what differs in a conflict (a few hundred bytes each).
DECLARATIONS_KEPT = 1 << 16
_PLACE = struct.Struct("<IQ")  # source number, index + 1 (0: none)
# A registration after its IRI's first, as the index writes it aside: the IRI's digest, the
# declaration's digest, the source's number and index + 1 (0: none).
_REPEAT = struct.Struct(f"<{_DIGEST}s{_DIGEST}sIQ")
_U32, _U64 = (1 << 32) - 1, (1 << 64) - 1
# The repeats gathered before they are written (a write per megabyte, not per registration).
_REPEATS_BUFFERED = 1 << 20
# Declarations and sources numbered within an IRI's integer entry (16 bits each).
DECLARATIONS_NUMBERED = 1 << 16
_SOURCES_NUMBERED = 1 << 16


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=_DIGEST).digest()


def ident_digest(ident: str) -> bytes:
    """The digest a capability IRI is indexed by."""
    return _digest(ident)


def digested(declarations: Iterable[Declared]
             ) -> tuple[list[Digested], dict[bytes, tuple[Any, ...]]]:
    """A batch's declarations as :meth:`ConflictIndex.add_batch` takes them: each with its
    IRI's and its declaration's digests, and each distinct declaration once, by digest, in
    the order first met. Done where the batch is judged (a worker), so that the writing
    process, which indexes every registration of the audit, neither digests nor receives a
    declaration more than once a batch."""
    entries: list[Digested] = []
    declared: dict[bytes, tuple[Any, ...]] = {}
    for ident, declaration, where in declarations:
        digest = declaration_digest(declaration)
        if digest not in declared:
            declared[digest] = declaration
        entries.append((ident, ident_digest(ident), digest, where))
    return entries, declared


def declaration_digest(declaration: tuple[Any, ...]) -> bytes:
    """A declaration's digest: of its parts' digests (its inputs, its outputs, its ontology),
    each the digest of the part's ``repr``, which spells tuples of strings (and None) one way
    only. A directory's registrations combine a few parts in many ways (of 100,000 from 5,000
    senders, half declare a combination of their own): a part is digested once and
    remembered, and a declaration costs three lookups and the digest of 60 bytes, not its
    whole text written and digested again."""
    if type(declaration) is not tuple or len(declaration) != 3:
        # None the judge makes, nor a state replays (its journal's entries are read by their
        # form): any other caller's still gets a digest, not an error.
        return _digest(repr(declaration))
    inputs, outputs, ontology = declaration
    return hashlib.blake2b(_part_digest(inputs) + _part_digest(outputs) + _part_digest(ontology),
                           digest_size=_DIGEST).digest()


def _part_digest(part: Any) -> bytes:
    global _part_bytes
    found = _PART_DIGESTS.get(part)
    if found is None:
        text = repr(part)
        found = _digest(text)
        if len(text) <= _REMEMBERED_CHARS:
            # Weighed as held: the text's characters at up to 4 bytes each, an object for
            # each of the part's strings and tuples (an ontology's are nested), and the entry
            # (a part of fifty one-letter media types is short as text and weighs mostly its
            # strings).
            weight = 4 * len(text) + 64 * _objects(part) + 200
            if _part_bytes + weight > PART_DIGESTS_BYTES:
                _PART_DIGESTS.clear()  # forgotten at once: the senders of the moment
                _part_bytes = 0
            _PART_DIGESTS[part] = found
            _part_bytes += weight
    return found


def _objects(part: Any) -> int:
    """The objects a part holds: itself, and each string or tuple within it."""
    return 1 + sum(map(_objects, part)) if type(part) is tuple else 1


# The digests of distinct parts met lately, each up to _REMEMBERED_CHARS long as written:
# at most PART_DIGESTS_BYTES as they are weighed (a generous count of what Python holds for
# them), whatever the registrations hold.
PART_DIGESTS_BYTES = 8 << 20
_REMEMBERED_CHARS = 512
_PART_DIGESTS: dict[Any, bytes] = {}
_part_bytes = 0


class ConflictIndex:
    """Capability IRIs in the order first registered, each with its first declaration and
    registration; the IRIs registered more than once with all their registrations, and
    which of them were registered with declarations that differ."""

    def __init__(self) -> None:
        # IRI digest -> declaration digest + place, or (declaration digest, where)
        self._first: dict[bytes, Any] = {}
        self._sources: list[str] = []
        self._source_numbers: dict[str, int] = {}
        # digest -> IRI, for an IRI registered more than once; its registrations after the
        # first are in _repeats (see _REPEAT)
        self._again: dict[bytes, str] = {}
        self._repeats: Any = None  # the temporary file, made at the first repeat
        self._pending = bytearray()  # repeats not yet written to it
        self._places: list[Where] = []  # places past what a record holds (see add_digested)
        self._conflicting: set[bytes] = set()
        self._declared: dict[bytes, tuple[Any, ...]] = {}  # digest -> declaration, bounded
        # The first DECLARATIONS_NUMBERED distinct declarations' digests, numbered
        self._numbers: dict[bytes, int] = {}
        self._numbered: list[bytes] = []

    def __len__(self) -> int:
        return len(self._first)

    def add(self, ident: str, declaration: tuple[Any, ...], where: Where) -> None:
        """One valid registration of ``ident`` declaring ``declaration``, at ``where``."""
        declared = declaration_digest(declaration)
        self.keep(declared, declaration)
        self.add_digested(ident, ident_digest(ident), declared, where)

    def add_batch(self, declarations: list[Digested],
                  declared: dict[bytes, tuple[Any, ...]]) -> None:
        """A batch's valid registrations as :func:`digested` gives them (judged elsewhere:
        a worker digests them, so that the process that indexes them only looks up)."""
        for digest, declaration in declared.items():
            self.keep(digest, declaration)
        for ident, key, digest, where in declarations:
            self.add_digested(ident, key, digest, where)

    def keep(self, declared: bytes, declaration: tuple[Any, ...]) -> None:
        """Keep ``declaration`` (of digest ``declared``) to say what differs, within the
        bound; a registration's is kept before the registration is added."""
        if declared not in self._declared and len(self._declared) < DECLARATIONS_KEPT:
            self._declared[declared] = declaration

    def add_digested(self, ident: str, key: bytes, declared: bytes, where: Where) -> None:
        """:meth:`add` of a registration whose IRI's digest (``key``, :func:`ident_digest`)
        and declaration's digest (``declared``) are known; its declaration already kept."""
        first = self._first.get(key)
        if first is None:
            self._first[key] = self._packed(declared, where)
            return
        if key not in self._again:
            self._again[key] = ident
        source, index = where
        number, position = self._source_number(source), 0 if index is None else index + 1
        if number > _U32 or position >= _U64:
            # Past 2**32 sources or 2**64 - 2 lines: the place kept as it is, and the record
            # says where (never met in a real audit, and never a wrong place if it is).
            number, position = len(self._places), _U64
            self._places.append(where)
        self._pending += _REPEAT.pack(key, declared, number, position)
        if len(self._pending) >= _REPEATS_BUFFERED:
            self._write_repeats()
        if key not in self._conflicting and declared != self._unpacked(first)[0]:
            self._conflicting.add(key)

    def close(self) -> None:
        """Let the registrations written aside go (the index answers no conflict after)."""
        if self._repeats is not None:
            self._repeats.close()
            self._repeats = None
        self._pending.clear()
        self._conflicting.clear()

    def __del__(self) -> None:
        # An index let go (an audit done) closes its file: the operating system frees it
        # (it has no name), and nothing warns of a file left open.
        if self._repeats is not None:
            self._repeats.close()

    def _write_repeats(self) -> None:
        try:
            if self._repeats is None:
                # Unnamed, in the temporary folder: removed when closed or when the process
                # ends, and never among the user's files. Unbuffered: what is pending is
                # buffered here, and closing it has nothing left to write (and fail).
                self._repeats = tempfile.TemporaryFile(  # noqa: SIM115 (kept open across calls)
                    prefix="ioa-audit-repeats-", buffering=0)
            with memoryview(self._pending) as pending:
                written = 0
                while written < len(pending):
                    written += self._repeats.write(pending[written:])
        except OSError as exc:  # the temporary folder full: the environment's failure
            raise WriteFailed(f"the audit's file of repeated registrations in "
                              f"{tempfile.gettempdir()} (TMPDIR)", exc) from None
        self._pending.clear()

    def conflicts(self) -> Iterator[tuple[str, tuple[Where, ...], tuple[Any, ...]]]:
        """Each IRI registered with differing declarations, every registration of it and
        each one's declaration (None where it was not kept), in the order the IRIs were
        first registered."""
        if not self._conflicting:
            return
        found: dict[bytes, tuple[list[Where], list[bytes]]] = {}
        for key in self._first:
            if key in self._conflicting:
                first_declared, first_where = self._unpacked(self._first[key])
                found[key] = ([first_where], [first_declared])
        for key, declared, number, position in self._read_repeats():
            held = found.get(key)
            if held is not None:
                held[0].append(self._places[number] if position == _U64 else (
                    self._sources[number], None if position == 0 else position - 1))
                held[1].append(declared)
        for key, (registrations, digests) in found.items():
            yield (self._again[key], tuple(registrations),
                   tuple(map(self._declared.get, digests)))

    def _read_repeats(self) -> Iterator[tuple[bytes, bytes, int, int]]:
        """The registrations written aside, in the order they were added."""
        if self._repeats is not None:
            self._write_repeats()
            self._repeats.seek(0)
            size = _REPEAT.size * (_REPEATS_BUFFERED // _REPEAT.size)
            rest = b""  # a record a read cut (a raw read may return less than asked)
            while chunk := self._repeats.read(size):
                chunk = rest + chunk
                whole = len(chunk) - len(chunk) % _REPEAT.size
                yield from _REPEAT.iter_unpack(chunk[:whole])
                rest = chunk[whole:]
            self._repeats.seek(0, 2)  # further repeats are appended
        else:
            yield from _REPEAT.iter_unpack(bytes(self._pending))

    def _source_number(self, source: str) -> int:
        number = self._source_numbers.get(source)
        if number is None:
            number = self._source_numbers[source] = len(self._sources)
            self._sources.append(source)
        return number

    def _packed(self, declared: bytes, where: Where) -> Any:
        source, index = where
        number = self._source_number(source)
        position = 0 if index is None else index + 1
        declaration = self._numbers.get(declared)
        if declaration is None and len(self._numbered) < DECLARATIONS_NUMBERED:
            declaration = self._numbers[declared] = len(self._numbered)
            self._numbered.append(declared)
        if declaration is not None and number < _SOURCES_NUMBERED and position >= 0:
            # One integer (32 bytes while the index is under 2**28), where 32 bytes of
            # digest and place took 72 (their object's header and the allocator's rounding).
            return (position << 32) | (number << 16) | declaration
        try:
            return declared + _PLACE.pack(number, position)
        except struct.error:  # past 2**32 sources or 2**64 lines: kept as it is
            return (declared, where)

    def _unpacked(self, entry: Any) -> tuple[bytes, Where]:
        if type(entry) is int:
            position = entry >> 32
            return self._numbered[entry & 0xFFFF], (
                self._sources[(entry >> 16) & 0xFFFF], None if position == 0 else position - 1)
        if type(entry) is tuple:
            return entry
        number, position = _PLACE.unpack_from(entry, _DIGEST)
        return entry[:_DIGEST], (self._sources[number], None if position == 0 else position - 1)
