"""The spool of a live trace feed (``ioa-check trace serve``): what was acknowledged, kept.

An OTLP/HTTP request is acknowledged only once its spans are on disk: each request's
``ExportTraceServiceRequest`` is appended to ``spans.binpb`` in the spool folder after its
length (4 bytes, big-endian), exactly as the OpenTelemetry Collector's file exporter writes
``format: proto`` (``ExportTraceServiceRequest`` and ``TracesData`` are one message on the
wire), and the file is synced before the answer. The spool is then judged by ``ioa-check
trace`` as any Collector file, its cursor in the store: a process killed after an
acknowledgement loses nothing, and one killed while judging judges again from the store's
last checkpoint, duplicating nothing.

Appends hold an exclusive ``flock`` on the file while they write; a reader takes the shared
lock only to learn the file's size and reads no further (:func:`readable_size`), so it never
meets half a message.

A writer killed within an append (a SIGKILL, a power cut) leaves a torn frame at the end of
the file, never acknowledged: each start cuts it off (:func:`_cut_torn_tail`), as a write
the disk refuses half way is undone at once, so a message appended later is never read as
the rest of the torn one. A reader never consumes a message cut short, so nothing it
consumed is cut.

A folder is a spool when it holds :data:`MARK`; a folder that exists, holds other files and
no mark is someone's, and is refused (nothing is written to it). The mark and the spans file
must be regular files, not symbolic links: a FIFO would hold the start forever.

The spans are kept in segments: ``spans.binpb``, then ``spans.1.binpb``, ``spans.2.binpb``
and so on, appended to the last (the active one) only. The service starts a new segment
(:meth:`Spool.rotate`) once what it holds was judged, and removes a judged segment
(:meth:`Spool.retire`) once its runs are in the store and the late spans it waits for can no
longer come: so a feed that runs for days reads, each round, what arrived since the last
round and not its whole history, and its spool does not fill. A segment's name is never used
twice (the active one, the highest, is never removed): the store's cursor knows each by its
path, and a new file under a consumed name would read as that file rewritten.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import threading
from collections.abc import Callable
from typing import IO, NamedTuple

from .._exceptions import ConfigurationError, IoaSemanticError

SPANS = "spans.binpb"  # the first segment; the n-th after it is spans.<n>.binpb
_SEGMENT = re.compile(r"spans\.([1-9][0-9]{0,17})\.binpb")
MARK = "ioa-check-trace-spool.json"
SPOOL_VERSION = 1
DEFAULT_MAX_BYTES = 1 << 30


class SpoolError(ConfigurationError):
    """A spool folder that cannot be used (not ours, unreadable): nothing was written."""


class SpoolFull(IoaSemanticError):
    """The spool cannot take the request now (it holds ``max_bytes`` already, or the disk
    refused the write): the request is not acknowledged (the client retries later)."""


class Segment(NamedTuple):
    """One file of the spool: its number (0 for :data:`SPANS`) and path."""

    number: int
    path: str


def segment_name(number: int) -> str:
    return SPANS if number == 0 else f"spans.{number}.binpb"


class Spool:
    """The spool in ``folder`` (made if absent), at most ``max_bytes`` of spans in all its
    segments."""

    def __init__(self, folder: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        _claim(folder)
        found = _segments(folder)
        # The bytes of the closed segments (the active one's is its file's size).
        self._closed: dict[Segment, int] = {}
        for segment in found[:-1]:
            self._closed[segment] = _regular_size(folder, segment.path)
        self.active = found[-1] if found else Segment(0, os.path.join(folder, SPANS))
        self._fd = _open_segment(folder, self.active.path)

    @property
    def path(self) -> str:
        """The active segment's path."""
        return self.active.path

    def segments(self) -> list[Segment]:
        """Every segment, oldest first, the active one last."""
        with self._lock:
            return [*sorted(self._closed), self.active]

    def append(self, message: bytes,
               written: Callable[[Segment], None] | None = None) -> Segment:
        """``message`` (a serialized ``ExportTraceServiceRequest``) on disk, synced, in the
        segment returned; raises :class:`SpoolFull` when it would take the spool past its
        bound. ``written`` is told the segment before any other thread can learn the
        segment's new size: a judge that sees the bytes knows what they hold (their traces),
        and never reads them without the other segments of those traces."""
        framed = len(message).to_bytes(4, "big") + message
        with self._lock:
            if self._fd < 0:
                raise SpoolFull("the spool is closed (the service is stopping)")
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                size = os.fstat(self._fd).st_size
                if sum(self._closed.values()) + size + len(framed) > self.max_bytes:
                    raise SpoolFull(f"the spool holds {self.max_bytes} bytes of spans already")
                try:
                    view = memoryview(framed)
                    while view:
                        view = view[os.write(self._fd, view):]
                    os.fsync(self._fd)
                except OSError as exc:
                    # Half a message would make the next one unreadable: undone, unacknowledged.
                    os.ftruncate(self._fd, size)
                    raise SpoolFull(f"the spool cannot be written: {exc.strerror}") from None
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            if written is not None:
                written(self.active)
            return self.active

    def size(self) -> int:
        """The spool's bytes, all segments (0 once closed)."""
        with self._lock:
            fd = self._fd
            return sum(self._closed.values()) + os.fstat(fd).st_size if fd >= 0 else 0

    def segment_size(self, segment: Segment) -> int:
        """The bytes of ``segment`` (0 for one removed)."""
        with self._lock:
            if segment == self.active:
                return os.fstat(self._fd).st_size if self._fd >= 0 else 0
            return self._closed.get(segment, 0)

    def rotate(self) -> Segment | None:
        """Close the active segment and start the next, unless the active one is empty; the
        segment closed, or None."""
        with self._lock:
            if self._fd < 0 or os.fstat(self._fd).st_size == 0:
                return None
            closed = self.active
            following = Segment(closed.number + 1,
                                os.path.join(self.folder, segment_name(closed.number + 1)))
            try:
                fd = _open_segment(self.folder, following.path, new=True)
            except SpoolError:
                return None  # the disk refuses a new file now: appends go on where they were
            self._closed[closed] = os.fstat(self._fd).st_size
            os.close(self._fd)
            self._fd, self.active = fd, following
            return closed

    def retire(self, segment: Segment) -> bool:
        """Remove the closed ``segment`` (its runs are in the store); whether it left. The
        active segment is never removed."""
        with self._lock:
            if segment == self.active or segment not in self._closed:
                return False
            try:
                os.unlink(segment.path)
            except FileNotFoundError:
                pass
            except OSError:
                return False  # kept, and counted, until a later round can remove it
            del self._closed[segment]
            return True

    def close(self) -> None:
        """Closed once no append is writing (one cut off at shutdown may still be, in its
        thread); an append after it is refused, never written to a reused descriptor."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _segments(folder: str) -> list[Segment]:
    """The segments in ``folder``, oldest first."""
    found = []
    for name in os.listdir(folder):
        match = _SEGMENT.fullmatch(name)
        if match is not None or name == SPANS:
            found.append(Segment(int(match.group(1)) if match else 0, os.path.join(folder, name)))
    return sorted(found)


def _regular_size(folder: str, path: str) -> int:
    """The size of a closed segment, which must be a regular file (not a link, not a FIFO)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise SpoolError(f"spool {folder}: {os.path.basename(path)} cannot be read: "
                         f"{exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpoolError(f"spool {folder}: {os.path.basename(path)} is not a regular file")
    return info.st_size


def _open_segment(folder: str, path: str, new: bool = False) -> int:
    """The active segment opened for appending (made if absent; ``new``: it must not exist),
    a torn frame at its end cut off."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        # O_NONBLOCK: a FIFO put there is refused below rather than waited on.
        fd = os.open(path, flags | (os.O_EXCL if new else 0), 0o600)
    except OSError as exc:
        raise SpoolError(f"spool {folder}: {os.path.basename(path)} cannot be opened: "
                         f"{exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SpoolError(f"spool {folder}: {os.path.basename(path)} is not a regular file")
        _cut_torn_tail(fd)
    except OSError as exc:
        os.close(fd)
        raise SpoolError(f"spool {folder}: {os.path.basename(path)} cannot be read: "
                         f"{exc.strerror}") from None
    except SpoolError:
        os.close(fd)
        raise
    return fd


def _claim(folder: str) -> None:
    """Make ``folder`` a spool, or check that it is one."""
    mark = os.path.join(folder, MARK)
    try:
        os.makedirs(folder, exist_ok=True)
        if os.path.islink(folder) or not os.path.isdir(folder):
            raise SpoolError(f"spool {folder} is not a folder")
        if os.path.lexists(mark):
            header = json.loads(_read_mark(folder, mark) or b"null")
            if not (isinstance(header, dict)
                    and header.get("ioa-check-trace-spool") == SPOOL_VERSION):
                raise SpoolError(f"spool {folder}: {MARK} is not a spool mark of version "
                                 f"{SPOOL_VERSION}")
            return
        if os.listdir(folder):
            raise SpoolError(f"spool {folder} holds files and is no spool (no {MARK}): "
                             "choose an empty or new folder (nothing was written)")
        with open(mark, "x", encoding="utf-8") as out:
            out.write(json.dumps({"ioa-check-trace-spool": SPOOL_VERSION}) + "\n")
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not JSON"
        raise SpoolError(f"spool {folder} cannot be used: {reason}") from None


def _read_mark(folder: str, mark: str) -> bytes:
    """The mark's first bytes; SpoolError when it is no regular file (a link, a FIFO)."""
    if os.path.islink(mark):
        raise SpoolError(f"spool {folder}: {MARK} is a symbolic link, not a spool mark")
    fd = os.open(mark, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SpoolError(f"spool {folder}: {MARK} is not a regular file")
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _cut_torn_tail(fd: int) -> None:
    """Cut off a frame that ends past the end of the file (a writer killed within an
    append), under the exclusive lock. Reads each frame's length only: one ``pread`` a
    message, at each start."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        size, at = os.fstat(fd).st_size, 0
        while at < size:
            head = os.pread(fd, 4, at)
            if len(head) < 4 or at + 4 + int.from_bytes(head, "big") > size:
                os.ftruncate(fd, at)
                return
            at += 4 + int.from_bytes(head, "big")
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def readable_size(handle: IO[bytes]) -> int:
    """The size of a file that a spool may be appending to, learnt under the shared lock: a
    reader that reads no further never meets half a message. A file nothing locks (a
    Collector's) is not waited for."""
    fd = handle.fileno()
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        return os.fstat(fd).st_size
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
