"""The HTTP/1.1 protocol the service runs under uvicorn: h11's, with a bound on reading a head.

uvicorn cuts off a connection that is idle between requests (``timeout_keep_alive``), but
not one that is slowly sending a request's head: any byte that arrives unsets its idle timer,
and nothing sets one when a connection opens. A client that trickles header lines, a byte at
a time, would hold its connection (and what uvicorn keeps of it) for ever. Here a timer runs
from the moment a head is awaited (the connection opened, or the first byte of a later
request arrived on it) until the head is complete; when it fires first, the client gets
``408`` and the connection is closed. The body has its own bound (the route's, ``--timeout``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .problems import PROBLEM_MEDIA_TYPE, encoded

# A 408 written as is: the head never arrived, so h11 has no request to answer.
_LATE_BODY = encoded("late-request",
                     "the request head did not arrive within the server's time bound")
_LATE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: " + PROBLEM_MEDIA_TYPE.encode()
         + b"\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
         % (len(_LATE_BODY), _LATE_BODY))


class ServeConfig(uvicorn.Config):
    """uvicorn's configuration with the bound on reading a request's head (seconds); it is
    what a worker process is handed, so the bound travels with it."""

    def __init__(self, app: Any, *, header_timeout: float, **options: Any) -> None:
        super().__init__(app, http=HeadBoundProtocol, **options)
        self.header_timeout = header_timeout


class HeadBoundProtocol(H11Protocol):
    """h11's protocol, a request's head held to ``config.header_timeout`` seconds."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._head_timeout = float(getattr(config, "header_timeout", 10.0))
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._await_head()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # An idle connection is uvicorn's keep-alive timer's; a head already begun (sent
        # along with the previous request) is this one's.
        if self.conn.trailing_data[0]:
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A head h11 refuses (malformed, two Host fields, two Content-Length fields that
        differ, ...) is answered as every other fault is: problem details."""
        body = encoded("bad-request-head",
                       f"the request is not valid HTTP/1.1 ({msg.rstrip('.')})")
        event = h11.Response(status_code=400, reason=b"Bad Request", headers=[
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()), (b"connection", b"close"),
            (b"content-length", str(len(body)).encode())])
        for part in (event, h11.Data(data=body), h11.EndOfMessage()):
            output = self.conn.send(part)
            if output:
                self.transport.write(output)
        self.transport.close()

    def _await_head(self) -> None:
        """The timer runs while a head is awaited (once armed, more bytes do not reset it)."""
        if self._head_timer is None and self.conn.their_state is h11.IDLE \
                and not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self._head_timeout, self._head_late)

    def _head_arrived(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(_LATE)
            self.transport.close()
