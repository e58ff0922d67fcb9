"""The inputs of an audit: files, folders and standard input, cut into pieces of items.

A JSON Lines file goes to workers in blocks of whole lines, cut without looking at each
line; every other file is read whole. Nothing is held past the intake's byte limit: a line
longer than it is counted to its end and let go, a longer file read no further. A folder is
walked following its links, each real folder once; what cannot be read there (a folder, a
file that is not a regular one) is a result of its own. A :class:`Fingerprint` hashes what
is read, as it is read, for the checkpoint of a resumable run.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol, cast

if TYPE_CHECKING:
    pass

from .._codes import finding
from .._findings import Finding
from ..pipeline.intake import JSON_WHITESPACE, Limits, parse, too_large
from .judge import Item
from .places import Element, elements, position

AUDITED_SUFFIXES = (".json", ".jsonld", ".jsonl")


def items_of(piece: Piece) -> Iterable[Item]:
    """The items of a piece: a batch is its items; a block of lines has one per line that
    is not blank, numbered as :func:`documents` numbers them (a first line over the byte
    limit, not held, by the findings the block carries for it: see :class:`Lines`)."""
    if isinstance(piece, list):
        return piece
    source, first, data, head = piece
    lines = ((source, index, line, ())
             for index, line in enumerate(data.split(b"\n"), first if head is None else first + 1)
             if line.strip(JSON_WHITESPACE))
    if not head:  # none, or a blank line over the limit
        return lines
    return itertools.chain(((source, first, None, head),), lines)


def documents(paths: Iterable[str], stdin: IO[bytes] | None = None,
              limits: Limits | None = None) -> Iterator[Item]:
    """``(source, index, document, problems)`` for every registration in ``paths``.

    ``document`` is None when the line or file could not be read; ``problems`` says why.
    """
    for path in paths:
        if path == "-":
            yield from _lines("-", stdin if stdin is not None else standard_input(), limits)
        elif os.path.isdir(path):
            for file_path, problem in walk(path):
                if problem is not None:
                    yield file_path, None, None, (problem,)
                else:
                    yield from _file(file_path, limits, _lines, walked=True)
        else:
            yield from _file(path, limits, _lines)


class Lines(NamedTuple):
    """A block of whole lines of a JSON Lines input, the first of them line ``first``.

    ``head``, when not None, stands for line ``first``, longer than the byte limit and not
    held: ``data`` holds the lines after it, and ``head`` the findings of its result (none
    for a blank line)."""

    source: str
    first: int
    data: bytes
    head: tuple[Finding, ...] | None = None


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
            found: Iterable[Item | Lines] = blocks("-", stdin if stdin is not None
                                                   else standard_input(), limits)
        elif os.path.isdir(path):
            found = (unit for file_path, problem in walk(path)
                     for unit in (_file(file_path, limits, blocks, fingerprint, place, True)
                                  if problem is None else
                                  _unread(file_path, problem, fingerprint)))
        else:
            found = _file(path, limits, blocks, fingerprint, place)
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
    """The files an audit opens under ``folder``, named and ordered as it reports them (see
    :func:`walk`; the folders it cannot list and the files it does not open are left out)."""
    return [path for path, problem in walk(folder) if problem is None]


def walk(folder: str) -> list[tuple[str, Finding | None]]:
    """What an audit finds under ``folder``, in sorted path order: every ``*.json``,
    ``*.jsonld`` and ``*.jsonl`` file, with None (to open; one that cannot be, a link to
    nothing or any link denied, which may lead to a folder, says why when it is opened), and
    what is not to be opened, each with its finding (``json.unreadable``): a folder that
    cannot be listed, such a file that is not a regular one (a named pipe, a socket, a
    device).

    Links are followed, to folders as to files; each real folder (by device and inode) is
    walked once, under its own path when the walk meets it, else under the first link to it
    in sorted order (links are followed once the real folders they stand among are walked),
    so a cycle of links ends and no folder is read twice."""
    found: list[tuple[str, Finding | None]] = []
    seen: set[tuple[int, int]] = set()
    with_links = [folder]  # folders to walk, each with the real folders under it
    while with_links:
        links: list[str] = []  # links to folders met: walked after the real folders
        for top in with_links:
            try:
                info = os.stat(top)
            except OSError as exc:
                found.append((top, _unreadable(top, "the folder cannot be read", exc)))
                continue
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            folders = [top]
            while folders:
                _walk_one(folders.pop(), found, seen, folders, links)
        with_links = sorted(links)
    found.sort(key=lambda entry: entry[0])
    return found


def _walk_one(parent: str, found: list[tuple[str, Finding | None]],
              seen: set[tuple[int, int]], folders: list[str], links: list[str]) -> None:
    """The entries of the folder ``parent`` into ``found``; its real folders not seen yet
    into ``folders``, its links to folders into ``links``."""
    try:
        with os.scandir(parent) as listing:
            entries = list(listing)
    except OSError as exc:
        found.append((parent, _unreadable(parent, "the folder cannot be read", exc)))
        return
    for entry in entries:
        path = os.path.join(parent, entry.name)
        audited = entry.name.endswith(AUDITED_SUFFIXES)
        try:
            if entry.is_symlink():
                mode = entry.stat().st_mode  # followed
                if stat.S_ISDIR(mode):
                    links.append(path)
                    continue
            elif entry.is_dir(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                if (info.st_dev, info.st_ino) not in seen:
                    seen.add((info.st_dev, info.st_ino))
                    folders.append(path)
                continue
            elif not audited:
                continue
            elif entry.is_file(follow_symlinks=False):
                found.append((path, None))
                continue
            else:
                mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            if exc.errno == errno.ENOENT and not entry.is_symlink():
                continue  # gone since it was listed
            if audited or exc.errno == errno.EACCES:  # a link denied may lead to a folder
                found.append((path, None))  # opening it says why it cannot be read
            continue
        if not audited:
            continue
        found.append((path, None if stat.S_ISREG(mode) else _not_regular(path, mode)))


def _unreadable(path: str, what: str, exc: OSError) -> Finding:
    return finding("json.unreadable", f"{path}: {what}: {exc.strerror or exc}")


_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a folder"))


def _not_regular(path: str, mode: int) -> Finding:
    kind = next((name for test, name in _KINDS if test(mode)), "of another kind")
    return finding("json.unreadable",
                   f"{path}: cannot be read: not a regular file ({kind}), so it was not opened")


def _unread(path: str, problem: Finding, fingerprint: Fingerprint | None) -> Iterator[Item]:
    """What the walk could not read: one result, which a resume proves as an unreadable file."""
    if fingerprint is not None:
        fingerprint.unreadable(path)
    yield path, None, None, (problem,)


def _nonblocking(path: str, flags: int) -> int:
    # A named pipe opens at once, not when a writer comes: it is then told and not read.
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


def _file(path: str, limits: Limits | None,
          lines: Callable[[str, IO[bytes], Limits | None, Callable[[bytes], None] | None],
                          Iterator[Any]],
          fingerprint: Fingerprint | None = None, place: bool = False,
          walked: bool = False) -> Iterator[Any]:
    """The items of one file; a JSON Lines file's as ``lines`` reads them. A ``fingerprint``
    hashes the blocks of lines as they are cut (and a line over the limit as it is passed
    over), and any other file as far as it is read. A file the walk found (``walked``) is
    read only if it is a regular file when opened; a path named as an input may be a pipe
    (``<(...)``) or a device, read within the same bounds."""
    try:
        handle = open(path, "rb", opener=_nonblocking if walked else None)  # noqa: SIM115 (closed below, also on a generator exit)
    except OSError as exc:
        yield from _unread(path, _unreadable(path, "cannot be read", exc), fingerprint)
        return
    limit = (limits or _LIMITS).max_bytes
    with handle:
        if walked:
            mode = os.fstat(handle.fileno()).st_mode
            if not stat.S_ISREG(mode):  # replaced since the walk listed it
                yield from _unread(path, _not_regular(path, mode), fingerprint)
                return
        if fingerprint is not None:
            fingerprint.opened(path)
        if path.endswith(".jsonl"):
            if fingerprint is None:
                yield from lines(path, handle, limits, None)
                return
            for unit in lines(path, handle, limits, fingerprint.read):
                if type(unit) is Lines:
                    fingerprint.read(unit.data)
                yield unit
            fingerprint.closed()
            return
        try:
            data, size = _head(handle, limit)
        except OSError as exc:
            if fingerprint is not None:
                fingerprint.closed()
            yield path, None, None, (_unreadable(path, "cannot be read", exc),)
            return
    if fingerprint is not None:
        fingerprint.read(data)
        if size > len(data):
            # Over the limit, judged by its size: its bytes past those read are counted, for
            # a resume to prove the size the result names (and the bytes read the same).
            fingerprint.count(size - len(data))
        fingerprint.closed()
    if len(data) > limit:
        yield path, None, None, (too_large(None if size < 0 else size, limit),)
        return
    yield from document_items(path, data, limits, place)


def _head(handle: IO[bytes], limit: int) -> tuple[bytes, int]:
    """A file's bytes, read to one past ``limit`` at most (which says it is over), and its
    size (-1 for a stream over the limit: not known without reading it all)."""
    data = handle.read(limit + 1)
    if len(data) <= limit:
        return data, len(data)
    info = os.fstat(handle.fileno())
    return data, info.st_size if stat.S_ISREG(info.st_mode) and info.st_size >= len(data) else -1


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


_LIMITS = Limits()


def _lines(source: str, stream: IO[bytes], limits: Limits | None = None,
           hashed: Callable[[bytes], None] | None = None,
           ) -> Iterator[tuple[str, int | None, bytes | None, tuple[Finding, ...]]]:
    """Each line of ``stream`` that is not blank, without its line break, as :func:`items_of`
    has it. A line is read up to the byte limit: one longer is passed over to its end, its
    bytes counted, its result the intake's (``hashed``: as for :func:`blocks`, unused here)."""
    limit = (limits or _LIMITS).max_bytes
    index = 0
    try:
        while line := stream.readline(limit + 1):
            if len(line) > limit and not line.endswith(b"\n"):  # more than the limit
                size, blank = len(line), not line.strip(JSON_WHITESPACE)
                while more := stream.readline(_BLOCK_BYTES):
                    ended = more.endswith(b"\n")
                    size += len(more) - ended
                    blank = blank and not more.strip(JSON_WHITESPACE)
                    if ended:
                        break
                if not blank:
                    yield source, index, None, (too_large(size, limit),)
            elif line.strip(JSON_WHITESPACE):
                yield source, index, line[:-1] if line.endswith(b"\n") else line, ()
            index += 1
    except OSError as exc:
        yield source, None, None, (finding("json.unreadable",
                                           f"{source}: reading stopped: {exc.strerror}"),)


# Bytes of JSON Lines per piece: about 1,200 registrations of the 6.3 shape.
_BLOCK_BYTES = 512 * 1024


class _Closed:
    """Standard input of a process started without one (``<&-``, some service managers):
    read as a closed stream reads, so that ``-`` is a result that says so."""

    def read(self, size: int = -1, /) -> bytes:
        raise OSError(errno.EBADF, "standard input is closed")

    read1 = readline = read


def standard_input() -> IO[bytes]:
    """The process's standard input, in bytes (a closed one reads as :class:`_Closed`)."""
    return sys.stdin.buffer if sys.stdin is not None else cast("IO[bytes]", _Closed())


class Readable(Protocol):
    """What :func:`blocks` reads: a binary stream's ``read`` (a file, a pipe, a byte range)."""

    def read(self, size: int = -1, /) -> bytes: ...


def blocks(source: str, stream: Readable, limits: Limits | None = None,
            hashed: Callable[[bytes], None] | None = None) -> Iterator[Lines | Item]:
    """``stream`` in blocks of whole lines (the last may lack its newline), cut where they
    would be cut whatever the limit. A line is held up to the byte limit: one found longer
    is passed over to its end, its bytes counted and given to ``hashed`` (the bytes of a
    block are hashed by the caller, as it takes the block), and the block that ends where
    its line ends carries its result (:attr:`Lines.head`)."""
    limit = (limits or _LIMITS).max_bytes
    read = getattr(stream, "read1", stream.read)  # a pipe's bytes as they come
    first = 0
    parts: list[bytes] = []  # a line longer than a block, joined once it ends
    held = 0  # the bytes of parts
    over = -1  # the bytes so far of a line over the limit, passed over; -1: none
    blank = True  # whether that line is only JSON's whitespace so far
    try:
        while chunk := read(_BLOCK_BYTES):
            cut = chunk.rfind(b"\n") + 1
            if over >= 0:
                end = chunk.find(b"\n") if cut else len(chunk)
                over += end
                blank = blank and not chunk[:end].strip(JSON_WHITESPACE)
                if hashed is not None:
                    hashed(chunk[:end + 1])
                if not cut:
                    continue
                data = chunk[end + 1:cut]
                yield Lines(source, first, data, () if blank else (too_large(over, limit),))
                first += 1 + data.count(b"\n")
                parts = [chunk[cut:]] if cut < len(chunk) else []
                held, over = len(chunk) - cut, -1
                continue
            if not cut:
                parts.append(chunk)
                held += len(chunk)
                if held > limit:  # over the limit however it ends: let go, counted
                    blank = not any(part.strip(JSON_WHITESPACE) for part in parts)
                    if hashed is not None:
                        for part in parts:
                            hashed(part)
                    over, parts, held = held, [], 0
                continue
            block = b"".join([*parts, chunk[:cut]]) if parts else chunk[:cut]
            parts = [chunk[cut:]] if cut < len(chunk) else []
            held = len(chunk) - cut
            yield Lines(source, first, block)
            first += block.count(b"\n")
        if over >= 0:
            yield Lines(source, first, b"", () if blank else (too_large(over, limit),))
        elif parts:
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

    def count(self, length: int) -> None:
        """Bytes of a file over the byte limit that were not read: its result names only its
        size, which they make up, as the bytes read make up the rest of its record."""
        self._length += length

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
