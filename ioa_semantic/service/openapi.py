"""The service's OpenAPI 3.1 document (``GET /openapi.json``), written out by hand.

It is the service's contract for programs in other languages: each route, its method, its
query parameters and every status it answers (tests/test_service.py holds the running
server to it). A check result's schema is the shipped ``output.schema.json``, the same one
that describes ``ioa-check --format json``.
"""

from __future__ import annotations

from typing import Any

from .. import data as _resources
from .._version import __version__
from . import problems
from .api_page import ASSETS
from .limits import (
    AUDIT_ANSWER_TYPE,
    AUDIT_MEDIA_TYPES,
    CHECK_MEDIA_TYPES,
    IMPACT_MEDIA_TYPES,
    ServiceLimits,
)
from .problems import PROBLEM_MEDIA_TYPE

_JSON = "application/json"


def _error(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}}


def _components(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """A shipped JSON Schema as components: ``name`` for the schema itself, and each of its
    ``$defs`` under its own name, capitalised, with the references to them rewritten.

    The shipped schema names itself (``$id``), so that its ``#/$defs/...`` references are
    relative to it: legal in OpenAPI 3.1, but refused by the tools that validate the
    document or generate clients from it (openapi-spec-validator resolves them against the
    document). Here the schema has no ``$id`` and every reference is the document's own.
    """
    definitions = schema.get("$defs", {})
    renamed = {f"#/$defs/{key}": f"#/components/schemas/{key[:1].upper()}{key[1:]}"
               for key in definitions}

    def rewritten(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: (renamed[value] if key == "$ref" and value in renamed
                          else rewritten(value))
                    for key, value in node.items()}
        if isinstance(node, list):
            return [rewritten(item) for item in node]
        return node

    top = {key: value for key, value in schema.items()
           if key not in ("$defs", "$id", "$schema")}
    top["description"] = (f"{schema.get('description', schema.get('title', name))} "
                          f"(the package's output.schema.json, {schema.get('$id')})").strip()
    components = {name: rewritten(top)}
    for key, definition in definitions.items():
        components[renamed[f"#/$defs/{key}"].rpartition("/")[2]] = rewritten(definition)
    return components


_IMPACT_REQUEST: dict[str, Any] = {
    "type": "object", "required": ["log", "change"], "additionalProperties": False,
    "description": "a decision log and the change to judge it under (docs/serve.md, "
                   "\"Impact\")",
    "properties": {
        "log": {"type": "string",
                "description": "the decision log's lines (ioa-decision-log/1), as they are "
                               "in the file"},
        "objects": {"type": "object",
                    "description": "what the lines name by sha256 (envelopes, registrations, "
                                   "artifacts: LOG.objects), each its bytes in base64",
                    "propertyNames": {"pattern": "^[0-9a-f]{64}$"},
                    "additionalProperties": {"type": "string",
                                             "contentEncoding": "base64"}},
        "change": {
            "type": "object", "additionalProperties": False,
            "description": "at least one of its members (an array a non-empty one)",
            # What read_request refuses as a change that names nothing.
            "anyOf": [{"required": ["profile"]}, {"required": ["at"]},
                      {"required": ["artifacts"], "properties": {"artifacts": {"minItems": 1}}},
                      {"required": ["withdraw"], "properties": {"withdraw": {"minItems": 1}}}],
            "properties": {
                "profile": {"type": "string",
                            "description": "a new or revised profile (Turtle), as --profile: "
                                           "it may name no shape file and enable no "
                                           "retrieval"},
                "artifacts": {"type": "array", "items": {"oneOf": [
                    {"type": "object", "description": "an alignment artifact"},
                    {"type": "string", "description": "a shipped artifact's name"}]},
                    "description": "artifacts added, as --artifact"},
                "withdraw": {"type": "array", "items": {"type": "string"},
                             "description": "artifactIds withdrawn, as --withdraw"},
                "at": {"type": "string", "format": "date-time",
                       "description": "another instant, as --at"},
            },
        },
    },
}


def document(limits: ServiceLimits) -> dict[str, Any]:
    """The OpenAPI document of a service run with ``limits``."""
    bad_query = _error("an unknown or malformed query parameter, or a header that takes one "
                       "value (Host, Content-Type, Content-Length, ...) given more than once")
    unknown_route = _error("no such route")
    internal = _error("an internal error (a bug; its trace is on the server's stderr)")
    late_head = _error("the request head did not arrive within "
                       f"{limits.header_timeout:g} s (the connection is closed)")
    binary = {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}
    no_query = {"400": bad_query, "404": unknown_route, "405": _error("method not allowed"),
                "408": late_head, "500": internal}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ioa-check serve",
            "version": __version__,
            "summary": "SemanticProfile envelopes and capability registrations judged "
                       "(draft-zhang-dmsc-ioa-semantic-interaction-03)",
            "description": (
                "The validation service of ioa-semantic. It binds to loopback by default and "
                "has no authentication of its own. Every error answer is RFC 9457 problem "
                "details (application/problem+json: type, title, status, detail, and error, "
                "the same as detail); every fault a client causes is a 4xx. An interactive "
                "page of this document is at /docs."),
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "paths": {
            "/v1/check": {"post": {
                "operationId": "check",
                "summary": "Judge one envelope: the object `ioa-check - --format json` prints",
                "parameters": [
                    {"name": "param", "in": "query", "required": False, "style": "form",
                     "explode": True,
                     "description": "a task parameter KEY=VALUE, as --param (repeatable; "
                                    "the same key twice is refused)",
                     "schema": {"type": "array", "items": {"type": "string",
                                                           "pattern": "^[^=]+=.*$"}}},
                    {"name": "at", "in": "query", "required": False,
                     "description": "the evaluation instant, ISO-8601 with a UTC offset, as "
                                    "--at (default: now)",
                     "schema": {"type": "string", "format": "date-time"}},
                ],
                "requestBody": {
                    "required": True,
                    "description": "one envelope, its exact bytes (at most "
                                   f"{limits.max_body_bytes} bytes)",
                    "content": {media: binary for media in CHECK_MEDIA_TYPES},
                },
                "responses": {
                    "200": {"description": "the check result, for every envelope (invalid "
                                           "ones included); one line, ending in a newline",
                            "content": {_JSON: {"schema": {
                                "$ref": "#/components/schemas/CheckResult"}}}},
                    "400": bad_query,
                    "404": unknown_route,
                    "405": _error("method not allowed"),
                    "408": _error("the request head did not arrive within "
                                  f"{limits.header_timeout:g} s, or its body within the time "
                                  f"bound ({limits.timeout:g} s)"),
                    "413": _error(f"the body is over {limits.max_body_bytes} bytes"),
                    "415": _error("the Content-Type is not one of "
                                  + ", ".join(CHECK_MEDIA_TYPES)
                                  + ", or a Content-Encoding header names a coding other "
                                  "than identity"),
                    "500": internal,
                    "503": _error("the check did not finish within the time bound "
                                  f"({limits.timeout:g} s: it was stopped), or its body would "
                                  "take the check bodies the server holds at once past "
                                  f"{limits.max_buffered_bytes} bytes; Retry-After says when "
                                  "to try again"),
                },
            }},
            "/v1/audit": {"post": {
                "operationId": "audit",
                "summary": "Audit registrations: the JSON Lines `ioa-check audit - --format "
                           "json` prints, streamed",
                "requestBody": {
                    "required": True,
                    "description": "JSON Lines, one registration per line (at most "
                                   f"{limits.max_audit_bytes} bytes)",
                    "content": {media: binary for media in AUDIT_MEDIA_TYPES},
                },
                "responses": {
                    "200": {"description": (
                        "one line per registration, one per conflict, then the summary, "
                        "streamed (chunked) as they are judged. A fault once the answer has "
                        "started cuts it: an answer without its summary line is incomplete"),
                        "content": {AUDIT_ANSWER_TYPE: {"schema": {"type": "string"}}}},
                    "400": bad_query,
                    "404": unknown_route,
                    "405": _error("method not allowed"),
                    "408": late_head,
                    "413": _error(f"the body is over {limits.max_audit_bytes} bytes"),
                    "415": _error("the Content-Type is not one of "
                                  + ", ".join(AUDIT_MEDIA_TYPES)
                                  + ", or a Content-Encoding header names a coding other "
                                  "than identity"),
                    "500": internal,
                    "503": _error(f"as many audits as the server runs at once ({limits.audits}) "
                                  "are running, or the audit did not start answering within "
                                  f"the time bound ({limits.audit_timeout:g} s)"),
                },
            }},
            "/v1/impact": {"post": {
                "operationId": "impact",
                "summary": "Judge again the decisions of an uploaded decision log that a "
                           "change touches: the JSON Lines `ioa-check impact LOG --format "
                           "json` prints",
                "requestBody": {
                    "required": True,
                    "description": "the log, the objects its lines name and the change (at "
                                   f"most {limits.max_impact_bytes} bytes)",
                    "content": {media: {"schema": {
                        "$ref": "#/components/schemas/ImpactRequest"}}
                        for media in IMPACT_MEDIA_TYPES},
                },
                "responses": {
                    "200": {"description": (
                        "one line per decision whose verdict or reasons change, then the "
                        "summary line, as `ioa-check impact --format json` prints them (the "
                        "log named `log`, the change's profile `profile.ttl`, its artifacts "
                        "`artifact-N.json`)"),
                        "content": {AUDIT_ANSWER_TYPE: {"schema": {"type": "string"}}}},
                    "400": bad_query,
                    "404": unknown_route,
                    "405": _error("method not allowed"),
                    "408": _error("the request head did not arrive within "
                                  f"{limits.header_timeout:g} s, or its body within the time "
                                  f"bound ({limits.audit_timeout:g} s)"),
                    "413": _error(f"the body is over {limits.max_impact_bytes} bytes"),
                    "415": _error("the Content-Type is not one of "
                                  + ", ".join(IMPACT_MEDIA_TYPES)
                                  + ", or a Content-Encoding header names a coding other "
                                  "than identity"),
                    "422": _error(problems.PROBLEMS["bad-impact-request"].when),
                    "500": internal,
                    "503": _error(f"as many audits and impact runs as the server runs at once "
                                  f"({limits.audits}) are running, the body would take the "
                                  "bodies the server holds at once past "
                                  f"{limits.max_buffered_bytes} bytes, or the run did not "
                                  f"finish within the time bound ({limits.audit_timeout:g} s)"),
                },
            }},
            "/v1/profile": {"get": {
                "operationId": "profile",
                "summary": "The profile checks are made under, its 12.2 extension fragment "
                           "and the offered artifacts' validity limits",
                "responses": {"200": {"description": "the profile",
                                      "content": {_JSON: {"schema": {
                                          "$ref": "#/components/schemas/Profile"}}}},
                              **no_query},
            }},
            "/healthz": {"get": {
                "operationId": "health",
                "summary": "200 while the service answers",
                "responses": {"200": {"description": "serving", "content": {_JSON: {"schema": {
                    "type": "object", "properties": {"status": {"const": "ok"}}}}}},
                              **no_query},
            }},
            "/": {"get": {
                "operationId": "page",
                "summary": "A page where a person checks an envelope",
                "responses": {"200": {"description": "the page (self-contained HTML)",
                                      "content": {"text/html": {"schema": {"type": "string"}}}},
                              **no_query},
            }},
            "/docs": {"get": {
                "operationId": "apiPage",
                "summary": "This document as an interactive page (Swagger UI, served by the "
                           "service: the page fetches nothing from elsewhere)",
                "responses": {"200": {"description": "the page",
                                      "content": {"text/html": {"schema": {"type": "string"}}}},
                              **no_query,
                              "404": _error("no such route, or the serve extra's swagger-ui-py "
                                            "is not installed")},
            }},
            "/docs/{asset}": {"get": {
                "operationId": "apiPageAsset",
                "summary": "A file the API page links",
                "parameters": [{"name": "asset", "in": "path", "required": True,
                                "schema": {"type": "string", "enum": sorted(ASSETS)}}],
                "responses": {"200": {"description": "the file",
                                      "content": {media.partition(";")[0]: {"schema": {
                                          "type": "string"}}
                                                  for media in sorted(set(ASSETS.values()))}},
                              **no_query,
                              "404": _error("no such asset, or the serve extra's swagger-ui-py "
                                            "is not installed")},
            }},
            "/openapi.json": {"get": {
                "operationId": "openapi",
                "summary": "This document",
                "responses": {"200": {"description": "the OpenAPI document",
                                      "content": {_JSON: {"schema": {"type": "object"}}}},
                              **no_query},
            }},
        },
        "components": {"schemas": {
            "Problem": problems.schema(),
            "ImpactRequest": _IMPACT_REQUEST,
            **_components(_resources.read_json("", "output.schema.json"), "CheckResult"),
            "Profile": {
                "type": "object", "required": ["id", "revision", "accepted", "extension"],
                "properties": {
                    "id": {"type": "string"}, "revision": {"type": "string"},
                    "accepted": {"type": "array", "items": {
                        "type": "object", "required": ["ontologyId", "ontologyVersion"],
                        "properties": {"ontologyId": {"type": "string"},
                                       "ontologyVersion": {"type": "string"}}}},
                    "extension": {"type": "object",
                                  "description": "the A2A extension fragment of draft 12.2"},
                    "artifacts": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"artifactId": {"type": ["string", "null"]},
                                       "revision": {"type": ["string", "null"]},
                                       "validFrom": {"type": ["string", "null"]},
                                       "validUntil": {"type": ["string", "null"]},
                                       "proofCreated": {"type": ["string", "null"]},
                                       "proofExpires": {"type": ["string", "null"]}}}},
                    "version": {"type": "string", "description": "ioa-semantic's version"},
                },
            },
        }},
    }
