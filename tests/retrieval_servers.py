"""Loopback servers for the retrieval tests.

Real sockets on 127.0.0.1, HTTP or HTTPS, each in its own thread. Every handler's work is
bounded in count and in time, and leaving the ``with`` block joins every handler thread and
closes every socket, so a test can read what the server saw (requests, connections, whether
the client hung up early) after the fact and no ResourceWarning is left behind.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

# How long any server socket waits on a silent peer before the handler gives up: a hang
# guard, long enough that a client starved of the CPU on a loaded machine is still served.
SOCKET_TIMEOUT = 60.0
# How long a handler that holds a response back (``stall``, ``late``, ``drip``) holds it at
# most when the server is not closed first: a hang guard, never what a test waits for. A test
# that needs a response to be slow gets one that is certainly slow, however slow the client.
HOLD = 600.0


@dataclass(frozen=True)
class Reply:
    """A complete response: status, media type, body and any extra headers."""

    body: bytes = b""
    status: int = 200
    content_type: str = "application/ld+json"
    headers: tuple[tuple[str, str], ...] = ()


Route = Reply | Callable[["_Handler"], None]


class LoopbackServer:
    """An HTTP(S) server on 127.0.0.1 serving ``routes`` (path -> reply or handler function)."""

    def __init__(self, routes: Mapping[str, Route], tls: ssl.SSLContext | None = None) -> None:
        self.routes = dict(routes)
        self.tls = tls
        self.requests: list[str] = []
        self.events: list[str] = []
        self.connections = 0
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._server = _Server(self)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=f"loopback server {self.port}", daemon=True)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def origin(self, host: str = "ctx.test") -> str:
        return f"{self.scheme}://{host}:{self.port}"

    def url(self, path: str, host: str = "ctx.test") -> str:
        return f"{self.origin(host)}{path}"

    def note(self, event: str) -> None:
        with self._lock:
            self.events.append(event)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.closing.set()
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()  # joins every handler thread


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, owner: LoopbackServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        with self.owner._lock:
            self.owner.connections += 1
        sock.settimeout(SOCKET_TIMEOUT)
        if self.owner.tls is not None:
            # The handshake happens in the handler's thread, so a slow client cannot stall
            # the accept loop.
            sock = self.owner.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up or fails the TLS handshake is what several tests do on purpose.
        self.owner.note("handler error")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        super().setup()

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.partition("?")[0]
        with owner._lock:
            owner.requests.append(path)
        route = owner.routes.get(path, Reply(b"not found", status=404, content_type="text/plain"))
        self.close_connection = True
        if isinstance(route, Reply):
            self.reply(route)
        else:
            route(self)

    def reply(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Connection", "close")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body)

    def start_unbounded(self, content_type: str = "application/ld+json") -> None:
        """Headers of a body that ends when the connection does."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status=status, content_type="text/plain", headers=(("Location", location),))


def endless(chunk_size: int = 64 * 1024, max_chunks: int = 1024) -> Callable[[_Handler], None]:
    """A JSON body that never ends (up to 64 MiB); notes whether the client hung up first."""

    def serve(handler: _Handler) -> None:
        handler.start_unbounded()
        chunk = b" " * chunk_size
        try:
            handler.wfile.write(b'{"@context": {}, "padding": "')
            for _ in range(max_chunks):
                handler.wfile.write(chunk)
        except OSError:
            handler.server.owner.note("client hung up")
            return
        handler.server.owner.note("body completed")

    return serve


def drip(interval: float = 0.05, max_bytes: int = int(HOLD / 0.05)) -> Callable[[_Handler], None]:
    """A body sent one byte per ``interval`` (bounded), until the client hangs up or the
    server closes."""

    def serve(handler: _Handler) -> None:
        handler.start_unbounded()
        owner = handler.server.owner
        try:
            for _ in range(max_bytes):
                handler.wfile.write(b" ")
                if owner.closing.wait(interval):
                    return
        except OSError:
            owner.note("client hung up")
            return
        owner.note("body completed")

    return serve


def late(delay: float = HOLD, reply: Reply = Reply(b"{}")) -> Callable[[_Handler], None]:
    """Nothing for ``delay`` seconds (or until the server closes), then ``reply``."""

    def serve(handler: _Handler) -> None:
        owner = handler.server.owner
        if owner.closing.wait(delay):
            return
        try:
            handler.reply(reply)
        except OSError:
            owner.note("client hung up")

    return serve


def stall(handler: _Handler) -> None:
    """Headers, then nothing until the server closes."""
    handler.start_unbounded()
    handler.server.owner.closing.wait(HOLD)


class Sentinel:
    """A listening socket that nobody serves: a connection attempt would wait in its backlog.

    ``pending()`` counts the connections that reached it; it is exact (no race with an accept
    loop), because the kernel queues every completed handshake until ``accept`` takes it.
    """

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]

    def pending(self) -> int:
        self._socket.setblocking(False)
        count = 0
        while True:
            try:
                connection, _ = self._socket.accept()
            except BlockingIOError:
                return count
            connection.close()
            count += 1

    def __enter__(self) -> Sentinel:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._socket.close()


class Stopwatch:
    """Elapsed wall time of a ``with`` block."""

    def __enter__(self) -> Stopwatch:
        self._start = time.monotonic()
        self.elapsed = 0.0
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.elapsed = time.monotonic() - self._start
