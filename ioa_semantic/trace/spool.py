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

A folder is a spool when it holds :data:`MARK`; a folder that exists, holds other files and
no mark is someone's, and is refused (nothing is written to it).
"""

from __future__ import annotations

import fcntl
import json
import os
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
    """The spool holds ``max_bytes`` already: the request is not acknowledged (the client
    retries later)."""


class Spool:
    """The spool in ``folder`` (made if absent), at most ``max_bytes`` of spans."""

    def __init__(self, folder: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.path = os.path.join(folder, SPANS)
        self._lock = threading.Lock()
        _claim(folder)
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW,
                               0o600)
        except OSError as exc:
            raise SpoolError(f"spool {folder}: {SPANS} cannot be opened: {exc.strerror}") from None

    def append(self, message: bytes) -> None:
        """``message`` (a serialized ``ExportTraceServiceRequest``) on disk, synced; raises
        :class:`SpoolFull` when it would take the spool past its bound."""
        framed = len(message).to_bytes(4, "big") + message
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                if os.fstat(self._fd).st_size + len(framed) > self.max_bytes:
                    raise SpoolFull(f"the spool holds {self.max_bytes} bytes of spans already")
                view = memoryview(framed)
                while view:
                    view = view[os.write(self._fd, view):]
                os.fsync(self._fd)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def close(self) -> None:
        os.close(self._fd)


def _claim(folder: str) -> None:
    """Make ``folder`` a spool, or check that it is one."""
    mark = os.path.join(folder, MARK)
    try:
        os.makedirs(folder, exist_ok=True)
        if os.path.islink(folder) or not os.path.isdir(folder):
            raise SpoolError(f"spool {folder} is not a folder")
        if os.path.lexists(mark):
            with open(mark, "rb") as handle:
                header = json.loads(handle.read(4096) or b"null")
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
