"""What the service accepts and what a request may cost it: the media types and the limits
(the OpenAPI document and the application both read them here)."""

from __future__ import annotations

import threading
from typing import NamedTuple

# The media types of an envelope (contract 7) and of an audit's JSON Lines, either way.
CHECK_MEDIA_TYPES = ("application/ld+json", "application/json")
AUDIT_MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
AUDIT_ANSWER_TYPE = "application/x-ndjson"
# An impact request: one JSON object (service/impacts.py); its answer is JSON Lines.
IMPACT_MEDIA_TYPES = ("application/json",)
# The 12.2 fragment's extension URI (the draft calls it an example; the A2A gate's default).
EXTENSION_URI = "https://example.org/extensions/semantic-profile/v1"


class ServiceLimits(NamedTuple):
    """What one request may cost the server.

    ``max_body_bytes``: an envelope's body (above the checker's own ``--max-bytes``, which
    answers ``invalid`` with ``json.too-large`` as the command line does, so that only a body
    far over any envelope is refused at the HTTP level); ``max_audit_bytes``: an audit's
    body; ``timeout``: seconds from a check's arrival to its answer (body, wait for a thread,
    check), and again from an answer being ready (a check's, an impact run's) to the client
    having taken it (past it, the connection is closed); ``audit_timeout``: the same for a
    whole audit, its answer sent included, and for an impact run; ``threads``: checks run
    at once (each in a worker process of its own when the server can build one: see
    :mod:`.workers`); ``audits``: audits run at once (one more is refused with 503);
    ``max_buffered_bytes``: the check and impact bodies held at once, all requests together,
    with what an impact body's parse takes and the answers not yet taken by their clients
    (a body or an answer that would pass it is refused with 503; an answer larger than the
    whole bound, which no retry would fit, is sent unheld); ``header_timeout``:
    seconds to read a request's head (past it, 408 and the connection is closed);
    ``max_impact_bytes``: an impact request's body (a decision log and its objects, held
    whole: within ``max_buffered_bytes``, the cap on the bodies held at once).
    """

    max_body_bytes: int = 4 << 20
    max_audit_bytes: int = 1 << 30
    timeout: float = 30.0
    audit_timeout: float = 600.0
    threads: int = 4
    audits: int = 2
    max_buffered_bytes: int = 64 << 20
    header_timeout: float = 10.0
    max_impact_bytes: int = 16 << 20




class HeldBytes:
    """The bytes of request bodies held at once, across requests, and their cap: without one,
    many slow bodies, each within its own limit, would together fill the memory. What else
    a request holds for a while is counted here too (an answer not yet taken by its client,
    an impact request's body while it is parsed). Taken and given from any thread."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.size = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self._lock:
            if self.size + size > self.cap:
                return False
            self.size += size
            return True

    def give(self, size: int) -> None:
        with self._lock:
            self.size -= size
