"""The audit's two streams across the thread boundary: the request body read by the audit's
thread as a file, and the audit's JSON Lines handed back to the event loop in chunks.

An audit is one long call (:meth:`Audit.batches` through the JSON Lines reporter) that reads
a file and writes to a stream, as the command line does with standard input and output; the
service runs that same call on a thread of its own. :class:`Body` is its standard input:
each read asks the event loop for the next piece of the request body. :class:`Output` is its
standard output: whole chunks go to the loop through a queue, at most a few of them in
flight, so that a client that reads slowly holds the audit back instead of filling memory.
Neither stream holds more than a chunk or two of the body or the results at any time.

A client may also send its whole body before it reads any of the answer (most HTTP clients
do: requests, httpx, Java's HttpClient by default). Holding the audit back then would stop
it reading the body too, and both sides would wait for ever; so while the body is still
coming in, a chunk for which no credit is free goes to a temporary file instead (on disk,
never in memory), and is sent from there in its turn. Once the body is in, the client is
reading (or gone) and the audit simply waits for credits.

Either side can stop the other: ``stopped`` set (the time bound passed, the client went
away, the answer could not be sent) makes the audit's next read or write raise, and the
loop side wakes at once.
"""

from __future__ import annotations

import asyncio
import errno
import io
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from typing import Any, NamedTuple

# Bytes of the audit's output gathered before they are handed to the loop: large enough that
# a large audit costs few hand-overs, small enough to be sent as soon as a batch is judged.
CHUNK_BYTES = 64 * 1024
# Chunks handed over and not yet sent: with CHUNK_BYTES, what a slow reader can make the
# service hold of an audit's answer.
IN_FLIGHT = 4
# The end of the output, on the queue after the last chunk.
END = object()


class Spilled(NamedTuple):
    """A chunk of the output written to the temporary file: where, and how long."""

    offset: int
    length: int


class _Stopped(Exception):  # private: raised and caught inside the service, never a caller
    """The audit was stopped from the loop side: nothing more is read or written."""


class Body(io.RawIOBase):
    """The request body as a file for the audit's thread, read from the loop chunk by chunk.

    ``read1`` (what :func:`ioa_semantic.audit.inputs.pieces` calls) returns the next chunk
    the client sent. Reading fails with an OSError, which the audit reports as a line of its
    own (``json.unreadable``, "reading stopped: ...") as it does for standard input, when the
    body passes ``cap`` bytes, when it is not complete by ``deadline`` (the loop's clock), or
    when the client goes away.
    """

    def __init__(self, chunks: AsyncIterator[bytes], loop: asyncio.AbstractEventLoop, *,
                 cap: int, deadline: float, timeout: float, stopped: threading.Event) -> None:
        super().__init__()
        self._chunks = chunks
        self._loop = loop
        self._cap = cap
        self._deadline = deadline
        self._timeout = timeout
        self._stopped = stopped
        self._rest = b""
        self._pending: Future[bytes] | None = None
        self.size = 0
        self.ended = False
        self.over_cap = False

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        if not self._rest:
            if self.ended:
                return b""
            self._pending = asyncio.run_coroutine_threadsafe(self._next(), self._loop)
            try:
                self._rest = self._pending.result()
            finally:
                self._pending = None
        if size < 0 or size >= len(self._rest):
            data, self._rest = self._rest, b""
        else:
            data, self._rest = self._rest[:size], self._rest[size:]
        return data

    def read(self, size: int = -1) -> bytes:
        return self.read1(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read1(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def cancel(self) -> None:
        """Wake a read waiting on the loop (called on the loop's thread when stopping)."""
        pending = self._pending
        if pending is not None:
            pending.cancel()

    async def _next(self) -> bytes:
        from starlette.requests import ClientDisconnect

        if self._stopped.is_set():
            raise OSError(errno.ECANCELED, "the audit was stopped")
        while True:
            try:
                async with asyncio.timeout_at(self._deadline):
                    chunk = await anext(self._chunks, b"")
            except TimeoutError:
                raise OSError(errno.ETIMEDOUT, "the body did not arrive within the server's "
                                               f"time bound of {self._timeout:g} s") from None
            except ClientDisconnect:
                raise OSError(errno.ECONNRESET, "the client went away") from None
            if not chunk:
                # Starlette's stream ends with an empty chunk; an empty chunk before that
                # is not the end, and the audit's reader would take it for one.
                self.ended = True
                return b""
            self.size += len(chunk)
            if self.size > self._cap:
                self.over_cap = True
                raise OSError(errno.EFBIG, f"the body passed the server's limit of {self._cap} "
                                           "bytes")
            return chunk


class Output(io.TextIOBase):
    """The audit's JSON Lines as the reporter writes them, handed to the loop in chunks:
    bytes, or a :class:`Spilled` chunk to read with :meth:`spilled` (while ``receiving()``,
    the body still coming in, and no credit is free)."""

    def __init__(self, queue: asyncio.Queue[Any], loop: asyncio.AbstractEventLoop,
                 stopped: threading.Event, receiving: Callable[[], bool]) -> None:
        super().__init__()
        self._queue = queue
        self._loop = loop
        self._stopped = stopped
        self._receiving = receiving
        self._parts: list[str] = []
        self._size = 0
        self._spill: Any = None  # the temporary file, made on the first chunk it takes
        self._spilled = 0
        # One credit per chunk handed over; the loop gives it back once the chunk is sent.
        self.credit = threading.Semaphore(IN_FLIGHT)

    def spilled(self, chunk: Spilled) -> bytes:
        """A spilled chunk's bytes (on the loop's side; the file is only appended to)."""
        return os.pread(self._spill.fileno(), chunk.length, chunk.offset)

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
        super().close()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self._stopped.is_set():
            raise _Stopped
        self._parts.append(text)
        self._size += len(text)
        if self._size >= CHUNK_BYTES:
            self._hand_over()
        return len(text)

    def flush(self) -> None:
        if self._parts:
            self._hand_over()

    def finish(self, error: BaseException | None = None) -> None:
        """The end of the output (or the error that ended it), after every chunk."""
        self._loop.call_soon_threadsafe(self._queue.put_nowait, END if error is None else error)

    def _hand_over(self) -> None:
        data = "".join(self._parts).encode("utf-8")
        self._parts, self._size = [], 0
        # Waits for a credit, looking up now and then in case the loop side stopped, unless
        # the body is still coming in (see the module's docstring).
        while not self.credit.acquire(timeout=0.1):
            if self._stopped.is_set():
                raise _Stopped
            if self._receiving():
                self._to_file(data)
                return
        self._loop.call_soon_threadsafe(self._queue.put_nowait, data)

    def _to_file(self, data: bytes) -> None:
        if self._spill is None:
            self._spill = tempfile.TemporaryFile(prefix="ioa-audit-")  # noqa: SIM115 (closed by close)
        os.pwrite(self._spill.fileno(), data, self._spilled)
        chunk = Spilled(self._spilled, len(data))
        self._spilled += len(data)
        self._loop.call_soon_threadsafe(self._queue.put_nowait, chunk)
