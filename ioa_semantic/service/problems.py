"""The service's error answers as RFC 9457 problem details (``application/problem+json``).

Every error answer names a problem type from :data:`PROBLEMS`: ``type`` (a URI that
identifies it; ``about:blank`` where the HTTP status says all, as RFC 9457 4.2.1 has it),
``title`` (the same for every occurrence of the type), ``status``, and ``detail`` (this
occurrence, in a sentence). ``error`` repeats ``detail``: the service answered
``{"error": ...}`` before it answered problem details (contract 7), and clients read it.
The OpenAPI document lists the types each route can answer (:mod:`.openapi`), and
docs/serve.md each type; this module has no dependency beyond the standard library, so
that the HTTP protocol (:mod:`.protocol`) writes its raw answers with it too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, NamedTuple

PROBLEM_MEDIA_TYPE = "application/problem+json"
# The namespace of the project's own identifiers (as its schemas' and vocabularies' are):
# an identifier, which docs/serve.md documents; clients compare it, never fetch it.
PROBLEM_BASE = "https://ioa-semantic.org/problems/"


class ProblemType(NamedTuple):
    """A kind of error answer: its status, its title, and when it is answered (for the
    OpenAPI document and the docs)."""

    name: str  # the last segment of its type URI; "" for about:blank
    status: int
    title: str
    when: str

    @property
    def uri(self) -> str:
        return PROBLEM_BASE + self.name if self.name else "about:blank"


def _types(*types: ProblemType) -> dict[str, ProblemType]:
    return {t.name or str(t.status): t for t in types}


# Keyed by name (an about:blank type by its status).
PROBLEMS = _types(
    ProblemType("bad-query", 400, "Query parameter refused",
                "an unknown query parameter, or a value --param or --at would refuse"),
    ProblemType("bad-request-head", 400, "Request head refused",
                "a header that takes one value (Host, Content-Type, Content-Length, ...) "
                "given more than once, both Transfer-Encoding and Content-Length, or a head "
                "that is not valid HTTP/1.1 (the connection is closed)"),
    ProblemType("cors-refused", 400, "CORS preflight refused",
                "a CORS preflight from an origin --cors-origin does not name, or for a method "
                "or a header the service does not take"),
    ProblemType("", 404, "Not Found", "no such route"),
    ProblemType("bad-impact-request", 422, "Impact request refused",
                "a /v1/impact body that is not the JSON object it takes (a member unknown, "
                "missing or of the wrong kind, an object whose bytes do not have its sha256, "
                "no change named), a profile or artifact of the change that cannot be read, "
                "or one that would make the service read a file or retrieve (a profile "
                "naming shape files or enabling retrieval, an artifact named otherwise than "
                "by a shipped name)"),
    ProblemType("", 405, "Method Not Allowed", "the route does not take this method (Allow "
                                               "says which it takes)"),
    ProblemType("late-request", 408, "Request did not arrive in time",
                "the request head did not arrive within --header-timeout, or its body within "
                "the route's time bound (the connection is closed)"),
    ProblemType("body-too-large", 413, "Request body over the limit",
                "the body is over --max-body-bytes (a check), --max-audit-bytes (an audit) or "
                "--max-impact-bytes (an impact run); maxBytes says the limit"),
    ProblemType("unsupported-media-type", 415, "Media type not accepted",
                "the Content-Type is not one the route takes; accepted lists those it takes"),
    ProblemType("unsupported-content-coding", 415, "Content coding not accepted",
                "a Content-Encoding header names a coding other than identity (the body is "
                "judged as the bytes sent)"),
    ProblemType("", 500, "Internal Server Error",
                "a bug: its trace is on the server's stderr, never in the answer"),
    ProblemType("check-timed-out", 503, "Check not finished in time",
                "the check did not finish within --timeout: it was stopped (Retry-After)"),
    ProblemType("check-lost", 503, "Check not finished",
                "the worker process running the check ended (Retry-After)"),
    ProblemType("audit-timed-out", 503, "Audit not started in time",
                "the audit wrote nothing within --audit-timeout"),
    ProblemType("impact-timed-out", 503, "Impact run not finished in time",
                "the impact run did not finish within --audit-timeout (it is stopped)"),
    ProblemType("busy", 503, "Server busy",
                "as many audits and impact runs as --audits allows are running, or the body "
                "would take the request bodies held at once (checks', impact runs') past "
                "--max-buffered-bytes (Retry-After)"),
    ProblemType("stopping", 503, "Server stopping",
                "the server is stopping and the request was not finished within "
                "--shutdown-timeout (Retry-After)"),
)


def body(kind: str, detail: str, **members: Any) -> dict[str, Any]:
    """The problem details object of ``kind`` (a key of :data:`PROBLEMS`, or any other HTTP
    status as a string) for ``detail``, with extension ``members``."""
    problem = PROBLEMS.get(kind) or _plain(int(kind))
    return {"type": problem.uri, "title": problem.title, "status": problem.status,
            "detail": detail, **members, "error": detail}


def _plain(status: int) -> ProblemType:
    """An HTTP status the service does not answer of its own (one Starlette raises): the
    status says all."""
    return ProblemType("", status, HTTPStatus(status).phrase, "")


def encoded(kind: str, detail: str, **members: Any) -> bytes:
    """The problem details as an answer's bytes: one line, ending with a newline (as the
    service's JSON answers are)."""
    return json.dumps(body(kind, detail, **members), ensure_ascii=False).encode("utf-8") + b"\n"


def schema() -> dict[str, Any]:
    """The JSON Schema of a problem details object as the service writes it."""
    return {
        "type": "object",
        "description": "RFC 9457 problem details; `error` repeats `detail` (the member the "
                       "service's errors had before they were problem details)",
        "required": ["type", "title", "status", "detail", "error"],
        "properties": {
            "type": {"type": "string", "format": "uri-reference",
                     "enum": sorted({p.uri for p in PROBLEMS.values()})},
            "title": {"type": "string"},
            "status": {"type": "integer", "minimum": 400, "maximum": 599},
            "detail": {"type": "string"},
            "instance": {"type": "string", "format": "uri-reference"},
            "error": {"type": "string", "description": "the same as detail"},
            "maxBytes": {"type": "integer", "description": "body-too-large: the limit"},
            "accepted": {"type": "array", "items": {"type": "string"},
                         "description": "unsupported-media-type: the media types taken"},
        },
    }


def statuses(kinds: Mapping[str, ProblemType] | None = None) -> dict[int, list[ProblemType]]:
    """The problem types by status."""
    found: dict[int, list[ProblemType]] = {}
    for problem in (kinds or PROBLEMS).values():
        found.setdefault(problem.status, []).append(problem)
    return found
