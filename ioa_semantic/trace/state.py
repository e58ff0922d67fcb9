"""Consuming trace streams in batches, with a durable cursor (``--state``).

An input's events are read in batches of lines. Without a state file the batches simply feed
the fold. With one, the file is a consumer cursor written as append-only checkpoints: after a
batch is *completely* folded, one line is appended and synced, recording the input, the
greatest line number processed, the byte offset after it, the SHA-256 of the stream up to that
offset, and what the batch changed in the fold (the calls it touched, the counters, the new
findings). The cursor never moves before its batch is done, so a process killed in the middle
of a batch (or failing in it) replays that batch from the last checkpoint on the next run:
nothing is skipped and nothing is counted twice. A torn last line (killed while writing) is
ignored and cut off. A rerun folds the checkpoints back, checks that the stream still begins
with the bytes already consumed (an input that was rewritten, not appended to, is an error),
and reads on from the offset, so appended events are consumed incrementally.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from typing import IO, Any

from mypy_extensions import mypyc_attr

from .._exceptions import ConfigurationError, WriteFailed
from .._files import claim, first_line
from . import checkpoints, formats
from .events import DEFAULT_MAX_LINE_BYTES, Fold, Line, Source, decode, lines, parse
from .spool import readable_size

STATE_VERSION = 6  # 2: checkpoints write only the counters and open calls a batch changed;
# 3: calls without ids pair per agent and class, and the interval tree of the events is kept;
# 4: an id's key doubles its "~" (calls.id_key) and a conflict names the call by its key
# 5: a start naming its own call as its parent is not placed by the order of events (its
#    parents are checked for loops), and a JSON array of events is refused, not folded
# 6: each checkpoint carries its check, chained from the header (an edited one is refused)
DEFAULT_BATCH = 1000


class StateError(ConfigurationError):
    """The state file cannot be used for these inputs (exit status 2)."""


_MARK = b'{"ioa-check-trace-state"'  # how every state file begins (its header's first key)


def is_state(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is a trace state file: its first line is a
    header of any version, or the start of one that a killed run left torn."""
    line = first_line(head)
    return line.startswith(_MARK) or (b"\n" not in head and _MARK.startswith(line))


class _Hashing:
    """A binary reader that hashes what it hands out, so a checkpoint can name the prefix."""

    def __init__(self, handle: IO[bytes], hasher: Any, limit: int | None = None) -> None:
        self.handle = handle
        self.hasher = hasher
        self.before_last = hasher  # the hash before a line without its newline
        self.limit = limit  # read no further (a spool may be appending past it)

    def readline(self, size: int = -1) -> bytes:
        data = self.handle.readline(size)
        if data and not data.endswith(b"\n"):
            self.before_last = self.hasher.copy()
        self.hasher.update(data)
        return data

    def read(self, size: int = -1) -> bytes:
        if self.limit is not None:
            left = max(0, self.limit - self.handle.tell())
            size = left if size < 0 else min(size, left)
        data = self.handle.read(size)
        self.hasher.update(data)
        return data

    def tell(self) -> int:
        return self.handle.tell()


# A store's StoreCursor (trace/store.py, interpreted) is a Cursor.
@mypyc_attr(allow_interpreted_subclasses=True)
class Cursor:
    """The checkpoints of one state file: read once, then appended to."""

    def __init__(self, path: str, include_content: bool) -> None:
        self.path = path
        self.include_content = include_content
        self.positions: dict[str, dict[str, Any]] = {}  # input -> last checkpoint
        self.deltas: dict[str, list[dict[str, Any]]] = {}
        self._handle: IO[bytes] | None = None
        self._previous = b""  # what the next checkpoint's check is chained to (see _sealed)

    def open(self) -> None:
        header = {"ioa-check-trace-state": STATE_VERSION, "includeContent": self.include_content}
        # A file that is not a state (a manifest, a key) is refused before it is opened for
        # writing: what follows cuts off whatever does not read as checkpoints.
        claim(self.path, is_state, "a trace state file", "--state", streams=False)
        try:
            handle = open(self.path, "r+b")  # noqa: SIM115 (kept open for appending)
        except FileNotFoundError:
            try:
                handle = open(self.path, "w+b")  # noqa: SIM115
            except OSError as exc:
                # Its folder is missing or read-only: the environment failed (74), not the
                # tool (a traceback) nor the input.
                raise WriteFailed(self.path, exc) from None
        except OSError as exc:
            raise StateError(f"--state {self.path} cannot be opened: {exc.strerror}") from None
        valid_end = 0
        first = True
        for line in lines(handle, max_bytes=1 << 40):
            value, problem = decode(line, 1 << 40)
            if problem is not None or value is None or not line.data.endswith(b"\n"):
                break  # a torn checkpoint: everything from here on is discarded
            if first:
                if value != header:
                    handle.close()
                    raise StateError(self._refusal(value))
                first = False
                self._previous = line.data
            else:
                checked = _unsealed(self._previous, line.data)
                if checked is None or not isinstance(value, dict) or (
                        value.pop("check", None) != checked.decode()):
                    wrong: str | None = "its check is not that of its content"
                else:
                    wrong = checkpoints.problem(value)
                    self._previous = checked
                if wrong is not None:
                    handle.close()
                    raise StateError(
                        f"{self.path}: the checkpoint at its line {line.seq} is damaged (not "
                        f"as ioa-check writes it: {wrong}); remove the state to start over")
                self.positions[value["input"]] = value
                self.deltas.setdefault(value["input"], []).append(value["delta"])
            valid_end = line.end
        try:
            handle.seek(valid_end)
            handle.truncate()
            if first:
                self._previous = json.dumps(header).encode() + b"\n"
                handle.write(self._previous)
                self._sync(handle)
        except OSError as exc:
            with contextlib.suppress(OSError):  # closing flushes the same failed write again
                handle.close()
            raise WriteFailed(self.path, exc) from None
        self._handle = handle

    def _refusal(self, header: Any) -> str:
        """Why the state file's header is not this one's, and what to do."""
        version = header.get("ioa-check-trace-state") if isinstance(header, dict) else None
        if version != STATE_VERSION:
            return (f"--state {self.path} is not a trace state file of this version (it is of "
                    f"version {version!r}, this ioa-check writes {STATE_VERSION}, and keys "
                    "calls otherwise): delete it, or give another --state, to start over (its "
                    "inputs are then read again from their start)")
        written = header.get("includeContent")
        said = f" (it was written with it {'on' if written else 'off'})" if isinstance(
            written, bool) else ""
        return (f"--state {self.path} is not a trace state file of this version with "
                f"--include-content {'on' if self.include_content else 'off'}{said}: give the "
                "same --include-content as before, or another --state")

    def restore(self, source: Source, fold: Fold) -> tuple[int, int, Any]:
        """Fold the checkpoints of ``source`` back; the line number, offset and prefix hasher."""
        position = self.positions.get(source.key)
        if position is None:
            return 0, 0, hashlib.sha256()
        for delta in self.deltas[source.key]:
            try:
                fold.restore(delta)
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                # Written by this program as JSON of the fold; anything else was edited or
                # damaged, and is refused rather than half read.
                raise self.damaged(source, exc) from None
        if not fold.names_known():
            raise self.damaged(source, KeyError("a call the fold names"))
        hasher = self.same_prefix(source, position["offset"], position["sha256"])
        return position["seq"], position["offset"], hasher

    def same_prefix(self, source: Source, offset: int, sha256: str) -> Any:
        """The SHA-256 of the first ``offset`` bytes of ``source``'s stream, which must be
        ``sha256`` (the input was appended to, not rewritten), as a hasher to go on with."""
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
            raise StateError(f"{source.given}: cannot be read again: {exc.strerror}") from None
        if remaining or hasher.hexdigest() != sha256:
            raise self.rewritten(source, offset)
        return hasher

    def damaged(self, source: Source, exc: Exception) -> ConfigurationError:
        """The error for a checkpoint of ``source`` that is not one this program writes."""
        return StateError(
            f"{self.path}: a checkpoint of {source.given} is damaged (not as ioa-check writes "
            f"it: {type(exc).__name__}); remove the state to start over")

    def rewritten(self, source: Source, offset: int) -> ConfigurationError:
        """The error for an input that no longer begins with what was consumed of it."""
        return StateError(
            f"{source.given} no longer begins with the {offset} bytes the state "
            f"{self.path} consumed (rewritten, not appended to); remove the state to start over")

    def checkpoint(self, source: Source, seq: int, offset: int, sha256: str,
                   delta: dict[str, Any]) -> None:
        assert self._handle is not None
        entry = {"input": source.key, "seq": seq, "offset": offset, "sha256": sha256,
                 "delta": delta}
        # Key order is kept: reports list members in the order the fold made them.
        line, check = _sealed(self._previous, _line(entry))
        try:
            self._handle.write(line)
            self._sync(self._handle)
        except OSError as exc:  # the disk filled up, or the device failed, under the run
            raise WriteFailed(self.path, exc) from None
        self._previous = check

    @staticmethod
    def _sync(handle: IO[bytes]) -> None:
        handle.flush()
        os.fsync(handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            handle, self._handle = self._handle, None
            try:
                handle.close()
            except OSError as exc:  # what a failed checkpoint left buffered, written again
                raise WriteFailed(self.path, exc) from None


# The input read between two calls of ``consume``'s ``on_batch`` at most (a line or a message
# more): the memory bound is read that often (trace/memory.py), one read of /proc a time.
NOTICE_BYTES = 4 << 20


def consume(source: Source, fold: Fold, cursor: Cursor | None = None, batch: int = DEFAULT_BATCH,
            max_bytes: int = DEFAULT_MAX_LINE_BYTES,
            on_batch: Callable[[int], None] | None = None) -> None:
    """Fold every line of ``source`` not yet consumed, a batch at a time. ``on_batch`` is
    called with the last line's number after each batch, and after every :data:`NOTICE_BYTES`
    read within one (no checkpoint there): its caller holds the memory bound, which lines of
    a few MiB each would pass long before a batch of them ends."""
    assert source.stream is not None
    seq, offset, hasher = cursor.restore(source, fold) if cursor else (0, 0, hashlib.sha256())
    with open(source.stream, "rb") as raw:
        # The Collector's protobuf is checkpointed as lines are, a message for a line (a
        # Collector appends messages, each after its length). Spans pretty-printed (Jaeger,
        # the console exporter) are one document or a stream nothing appends to as a unit:
        # read whole on each run, never checkpointed; a span read again is a repeat.
        shape = formats.sniff(raw)
        if shape == "protobuf":
            limit = readable_size(raw)
            raw.seek(offset)
            _messages(source, _Hashing(raw, hasher, limit), fold, cursor, seq, batch,
                      max_bytes, on_batch)
            return
        if shape is not None and offset == 0:
            _foreign(shape, raw, fold, max_bytes, on_batch)
            return
        # A .json file is one document unless its first line is a whole object: the
        # Collector's file exporter writes one request per line whatever the file is called.
        # Once consumed, a .json file read on only as lines appended to it.
        if source.stream.endswith(".json") and offset == 0 and not _first_line_object(
                raw, max_bytes):
            whole = _whole_document(raw, fold, max_bytes)
            # A document that does not parse may be one an exporter is still writing: it is
            # read for this report, never consumed, so the next run reads it whole.
            if cursor is not None and whole:
                hasher.update(_read_all(source.stream))
                cursor.checkpoint(source, 1, os.path.getsize(source.stream),
                                  hasher.hexdigest(), fold.delta())
            return
        raw.seek(offset)
        reader = _Hashing(raw, hasher)
        pending: Line | None = None
        count = 0
        noticed = offset
        for line in lines(reader, seq, max_bytes):  # type: ignore[arg-type]
            if cursor is not None and not line.data.endswith(b"\n") and (
                    len(line.data) <= max_bytes):
                # The last line without its newline: an exporter may be writing it now. It is
                # read for this report, but the cursor stays before it, so the next run
                # reads it whole.
                if pending is not None:
                    cursor.checkpoint(source, pending.seq, pending.end,
                                      reader.before_last.hexdigest(), fold.delta())
                fold.line(line, max_bytes)
                return
            fold.line(line, max_bytes)
            pending = line
            count += 1
            if count == batch:
                _advance(source, fold, cursor, pending, hasher)
                if on_batch is not None:
                    on_batch(pending.seq)
                pending, count, noticed = None, 0, line.end
            elif on_batch is not None and line.end - noticed >= NOTICE_BYTES:
                on_batch(line.seq)
                noticed = line.end
        if pending is not None:
            _advance(source, fold, cursor, pending, hasher)


def _messages(source: Source, reader: _Hashing, fold: Fold, cursor: Cursor | None, seq: int,
              batch: int, max_bytes: int, on_batch: Callable[[int], None] | None) -> None:
    """The Collector's protobuf messages not yet consumed, checkpointed a batch at a time
    (a message's number stands for a line's)."""
    count, number = 0, seq
    noticed = reader.tell()
    # The position and digest after the last message read whole: a message cut short is
    # never consumed.
    after: tuple[int, str] | None = None
    messages = formats.protobuf(reader, max_bytes, seq)
    try:
        for number, request in enumerate(messages, seq + 1):
            fold.value(number, request)
            after = (reader.tell(), reader.hasher.hexdigest())
            count += 1
            if count == batch:
                if cursor is not None:
                    cursor.checkpoint(source, number, *after, fold.delta())
                else:
                    fold.forget_changes()
                if on_batch is not None:
                    on_batch(number)
                count, noticed = 0, reader.tell()
            elif on_batch is not None and reader.tell() - noticed >= NOTICE_BYTES:
                on_batch(number)
                noticed = reader.tell()
    except formats.MessageCutShort as cut:
        if cursor is None:
            raise
        # As a last line without its newline under --state: the messages before it are read
        # and consumed, and the next run reads it once the Collector has written it (the
        # problem is this report's, never consumed with them).
        if count and after is not None:
            cursor.checkpoint(source, number, *after, fold.delta())
        fold.problems.append(["json.syntax", cut.number, str(cut)])
        return
    if count and cursor is not None and after is not None:
        cursor.checkpoint(source, number, *after, fold.delta())


def _foreign(shape: str, handle: IO[bytes], fold: Fold, max_bytes: int,
             on_batch: Callable[[int], None] | None = None) -> None:
    """A file of pretty-printed JSON values (``on_batch`` told every :data:`NOTICE_BYTES`)."""
    if shape == "compressed":
        raise formats.compressed()
    if shape == "bare-protobuf":
        raise formats.bare_protobuf()
    text: list[int] = []  # the first and last line of text between values
    noticed = 0
    for line, piece in formats.values(handle, max_bytes):
        if on_batch is not None and handle.tell() - noticed >= NOTICE_BYTES:
            on_batch(line)
            noticed = handle.tell()
        if piece == b"":
            text = [text[0] if text else line, line]
            continue
        if text:
            _text_between(fold, text)
            text = []
        if piece is None:
            fold.problems.append(["json.syntax", line, "not a JSON value (or longer than "
                                  "--max-line-bytes); the rest of the file is not read"])
            return
        value, problem = parse(piece, max_bytes)
        if problem is not None:
            fold.problems.append([problem[0], line, problem[1]])
        elif isinstance(value, dict):
            fold.value(line, value)
        elif isinstance(value, list):
            fold.array(line, value)
        else:
            fold.problems.append(["json.not-object", line, "not an object"])
    if text:
        _text_between(fold, text)


def _text_between(fold: Fold, lines: list[int]) -> None:
    """One problem for lines of text between the values (a program's log lines printed
    among the console exporter's spans), never one a line."""
    first, last = lines
    more = f" (to line {last})" if last > first else ""
    fold.problems.append(["json.syntax", first, f"text between the JSON values{more}, not "
                          "JSON: a program's output among the spans?"])


def _advance(source: Source, fold: Fold, cursor: Cursor | None, line: Line, hasher: Any) -> None:
    if cursor is not None:
        cursor.checkpoint(source, line.seq, line.end, hasher.hexdigest(), fold.delta())
    else:
        fold.forget_changes()


def _first_line_object(handle: IO[bytes], max_bytes: int) -> bool:
    first = handle.readline(max_bytes + 1)
    handle.seek(0)
    value, problem = parse(first, max_bytes) if first.strip() else (None, None)
    return problem is None and isinstance(value, dict)


def _read_all(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _whole_document(handle: IO[bytes], fold: Fold, max_bytes: int) -> bool:
    """A ``.json`` input as one document: one trace record, event or OTLP request, or an
    array of records or requests (an array's events are refused: Fold.array); whether it was
    one (a blank or unparsable file is not)."""
    value, problem = parse(handle.read(max_bytes + 1), max_bytes)
    if problem is not None:
        fold.problems.append([problem[0], 1, problem[1]])
        return False
    if value is None:
        return False
    if isinstance(value, list):
        fold.array(1, value)
    elif isinstance(value, dict):
        fold.value(1, value)
    else:
        fold.problems.append(["json.not-object", 1, "not an object (a record or an event)"])
    return True


# A checkpoint line ends with its check: ``,"check":"<sha256 hex>"}``.
_CHECK = b',"check":"'
_SEAL_BYTES = len(_CHECK) + 64 + 3  # the check member, its closing quote, brace and newline


def _sealed(previous: bytes, line: bytes) -> tuple[bytes, bytes]:
    """A checkpoint's ``line`` with its check appended, and the check: the sha256 of the
    check before it (the header line, for the first) and of the line as written without it.
    Chained, a checkpoint edited, moved or left out is found (:func:`_unsealed`); the last
    ones cut off is a state a kill left earlier, which resumes from there."""
    check = hashlib.sha256(previous + line).hexdigest().encode()
    return line[:-2] + _CHECK + check + b'"}\n', check


def _unsealed(previous: bytes, data: bytes) -> bytes | None:
    """The check of a checkpoint line (``data``) that carries its own, chained to
    ``previous``; None for any other line."""
    if len(data) < _SEAL_BYTES or not data.endswith(b'"}\n') or (
            data[-_SEAL_BYTES:-_SEAL_BYTES + len(_CHECK)] != _CHECK):
        return None
    check = data[-67:-3]
    line = data[:-_SEAL_BYTES] + b"}\n"
    return check if hashlib.sha256(previous + line).hexdigest().encode() == check else None


def _line(entry: Any) -> bytes:
    """One state line, UTF-8: a lone surrogate (a byte of a file name that is not UTF-8)
    written as its JSON escape, which reads back to the same name."""
    text = json.dumps(entry, ensure_ascii=False)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(entry, ensure_ascii=True).encode() + b"\n"
