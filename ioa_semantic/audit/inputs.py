"""The inputs of an audit: files, folders and standard input, cut into pieces of items.

A JSON Lines file goes to workers in blocks of whole lines, cut without looking at each
line; every other file is read whole. A :class:`Fingerprint` hashes what is read, as it is
read, for the checkpoint of a resumable run.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    pass

from .._codes import finding
from .._findings import Finding
from ..pipeline.intake import JSON_WHITESPACE, Limits, parse
from .judge import Item
from .places import Element, elements, position

AUDITED_SUFFIXES = (".json", ".jsonld", ".jsonl")


def items_of(piece: Piece) -> Iterable[Item]:
    """The items of a piece: a batch is its items; a block of lines has one per line that
    is not blank, numbered as :func:`documents` numbers them."""
    if isinstance(piece, list):
        return piece
    source, first, data = piece
    return ((source, first + offset, line, ())
            for offset, line in enumerate(data.split(b"\n")) if line.strip(JSON_WHITESPACE))


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
           fingerprint: Fingerprint | None = None, place: bool = False) -> Iterator[Piece]:
    """The registrations of ``paths`` as :func:`documents` finds them, in the pieces an audit
    judges and checkpoints: JSON Lines in blocks of whole lines, read and cut without
    looking at each line, and every other item in batches. A ``fingerprint`` hashes every
    file's bytes as they are read (for a resume to prove them the same); with ``place``, an
    array's items carry their text (see :func:`document_items`)."""
    batch: list[Item] = []
    for path in paths:
        if path == "-":
            found: Iterable[Item | Lines] = _blocks("-", stdin if stdin is not None
                                                    else sys.stdin.buffer)
        elif os.path.isdir(path):
            found = (unit for file_path in audited_files(path)
                     for unit in _file(file_path, limits, _blocks, fingerprint, place))
        else:
            found = _file(path, limits, _blocks, fingerprint, place)
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
          fingerprint: Fingerprint | None = None, place: bool = False) -> Iterator[Any]:
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
    yield from document_items(path, data, limits, place)


def document_items(path: str, data: bytes, limits: Limits | None = None,
                   place: bool = False) -> Iterator[Item]:
    """The registrations in the bytes of a ``*.json``/``*.jsonld`` file: one, or an array's.

    With ``place``, an array's items come as :class:`Element`: each with its own text, cut
    from these bytes where a position-tracking pass over them finds it, and where that text
    begins in the file (to place the item's findings; its judgement is of the node)."""
    if data.lstrip()[:1] != b"[":
        yield path, None, data, ()
        return
    # An array of registrations: read as one document, then each element on its own.
    intake = parse(data, limits, array=True)
    if not intake.ok:
        yield path, None, None, intake.findings
        return
    spans = _element_texts(data) if place else None
    for index, element in enumerate(intake.document or ()):
        if spans is not None and isinstance(element, dict) and index < len(spans):
            text, line, column = spans[index]
            yield path, index, Element(element, text, line, column), ()
            continue
        yield path, index, element if isinstance(element, dict) else None, () if isinstance(
            element, dict) else (finding("json.not-object",
                                         f"element {index} is not a registration object",
                                         f"/{index}"),)


def _element_texts(data: bytes) -> list[tuple[str, int, int]]:
    """The text of each item of the array ``data`` holds, and the line and column it begins at."""
    text = data.decode("utf-8", "replace")
    return [(text[start:end], *position(text, start)) for start, end in elements(text)]


def _lines(source: str, stream: IO[bytes]) -> Iterator[tuple[str, int | None, bytes | None,
                                                              tuple[Finding, ...]]]:
    try:
        for index, line in enumerate(stream):
            if line.strip(JSON_WHITESPACE):
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


# Registrations per batch, where they do not come in blocks of lines: 1,024 a worker task
# took the writing process's share of a 100,000 audit from 19 to 15 µs a registration
# (fewer tasks to pickle, wake and collect), measured when every item was sent on its own.
_BATCH = 1024
