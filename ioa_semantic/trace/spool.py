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
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import threading
from typing import IO

from .._exceptions import ConfigurationError, IoaSemanticError

SPANS = "spans.binpb"
MARK = "ioa-check-trace-spool.json"
SPOOL_VERSION = 1
DEFAULT_MAX_BYTES = 1 << 30


class SpoolError(ConfigurationError):
    """A spool folder that cannot be used (not ours, unreadable): nothing was written."""


class SpoolFull(IoaSemanticError):
    """The spool cannot take the request now (it holds ``max_bytes`` already, or the disk
    refused the write): the request is not acknowledged (the client retries later)."""


class Spool:
    """The spool in ``folder`` (made if absent), at most ``max_bytes`` of spans."""

    def __init__(self, folder: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.path = os.path.join(folder, SPANS)
        self._lock = threading.Lock()
        _claim(folder)
        try:
            # O_NONBLOCK: a FIFO put there is refused below rather than waited on.
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                               | os.O_NONBLOCK, 0o600)
        except OSError as exc:
            raise SpoolError(f"spool {folder}: {SPANS} cannot be opened: {exc.strerror}") from None
        try:
            if not stat.S_ISREG(os.fstat(self._fd).st_mode):
                raise SpoolError(f"spool {folder}: {SPANS} is not a regular file")
            _cut_torn_tail(self._fd)
        except OSError as exc:
            os.close(self._fd)
            raise SpoolError(f"spool {folder}: {SPANS} cannot be read: {exc.strerror}") from None
        except SpoolError:
            os.close(self._fd)
            raise

    def append(self, message: bytes) -> None:
        """``message`` (a serialized ``ExportTraceServiceRequest``) on disk, synced; raises
        :class:`SpoolFull` when it would take the spool past its bound."""
        framed = len(message).to_bytes(4, "big") + message
        with self._lock:
            if self._fd < 0:
                raise SpoolFull("the spool is closed (the service is stopping)")
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                size = os.fstat(self._fd).st_size
                if size + len(framed) > self.max_bytes:
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

    def size(self) -> int:
        """The spool's bytes (0 once closed)."""
        fd = self._fd
        return os.fstat(fd).st_size if fd >= 0 else 0

    def close(self) -> None:
        """Closed once no append is writing (one cut off at shutdown may still be, in its
        thread); an append after it is refused, never written to a reused descriptor."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


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
