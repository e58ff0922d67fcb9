"""Spans of the conventions beside GenAI's, mapped onto the GenAI attributes ``otlp.py`` reads.

Agent, model and tool spans are written by several instrumentations, each with its own
attributes: OpenInference (``openinference.span.kind`` AGENT/LLM/TOOL, ``llm.model_name``,
``tool.name``), OpenLLMetry (``traceloop.span.kind`` and ``traceloop.entity.name``), AGNTCY's
observe SDK (``ioa_observe.span.kind`` and ``ioa_observe.entity.name``), the older GenAI form
(``gen_ai.system`` and a model without ``gen_ai.operation.name``), and the A2A SDK's client
spans (no ``a2a.method.name``; the method is in the span's name). :func:`normalise` adds the
GenAI attributes such a span stands for (``gen_ai.operation.name``, ``gen_ai.agent.name``,
``gen_ai.request.model``, ``gen_ai.tool.name``, ...) before the span is read, so that one
table (``otel-genai.json``) still decides what every span is.

The mapping is data, ``ioa_semantic/data/trace/conventions.json``. A span that already carries
``gen_ai.operation.name`` is left exactly as it is: the GenAI conventions win when both are
written. A GenAI attribute already present is never overwritten. Nothing else of the span
changes; a value is copied as written, so a malformed one is reported by ``otlp.py`` as the
attribute it was mapped to.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .. import data
from .otlp import SOURCE, is_placeholder_model

_OPERATION = "gen_ai.operation.name"
_A2A_METHOD = "a2a.method.name"


@cache
def table() -> dict[str, Any]:
    value: dict[str, Any] = data.read_json("trace", "conventions.json")
    return value


def normalise(span: Any) -> Any:
    """``span`` with the GenAI attributes its convention stands for added; the span itself
    when it needs none (or is not an object with a list of attributes)."""
    # Protobuf's JSON mapping leaves an empty attribute list out.
    listed = span.get("attributes", []) if isinstance(span, dict) else None
    if not isinstance(listed, list):
        return span
    attributes: dict[str, Any] = {}
    for attribute in listed:
        if isinstance(attribute, dict) and isinstance(attribute.get("key"), str):
            attributes.setdefault(attribute["key"], attribute.get("value"))
    if _OPERATION in attributes:
        return span
    sources: dict[str, str] = {}
    added = _convention(span, attributes, sources) or _a2a(span, attributes)
    if not added:
        return span
    # Each attribute added says which one of the span it stands for (SOURCE), so that a
    # reason about its value names that one, where it stands in the span.
    return {**span, "attributes": [*listed, *(
        {"key": k, "value": value, **({SOURCE: sources[k]} if k in sources else {})}
        for k, v in added.items() for value in (v if isinstance(v, tuple) else (v,)))]}



def _convention(span: dict[str, Any], attributes: dict[str, Any],
                names: dict[str, str]) -> dict[str, Any]:
    """The GenAI attributes of the one operation the span's conventions agree on. A kind
    attribute that is not a string, or conventions that say different operations, make the
    operation unreadable: it is added as written (or once per operation), so that ``otlp.py``
    reports the span and leaves it out rather than the span passing as a mere link or as
    whichever convention comes first. ``names`` gets the span's attribute each one added
    stands for."""
    found: list[tuple[str, dict[str, Any]]] = []
    for convention in table()["conventions"]:
        written = attributes.get(convention["kind"])
        if written is None:
            continue
        requires = convention.get("requires")
        if requires and not any(name in attributes for name in requires):
            continue
        inner = written.get("stringValue") if isinstance(written, dict) else None
        if not isinstance(inner, str):
            names[_OPERATION] = convention["kind"]
            return {_OPERATION: written}
        kind = inner
        operations = {k.lower(): v for k, v in convention["operations"].items()}
        operation = operations.get(kind.strip().lower(), operations.get("*"))
        if operation is None:
            continue  # a kind the audit has no call for (a chain, a task, a retriever)
        found.append((operation, convention))
    if not found:
        return {}
    operation, convention = found[0]
    if any(other != operation for other, _ in found):
        names[_OPERATION] = convention["kind"]  # the first of the kinds that disagree
        return {_OPERATION: tuple({"stringValue": each} for each, _ in found)}
    added: dict[str, Any] = {_OPERATION: {"stringValue": operation}}
    roles = convention["attributes"]
    for target, sources in [*roles.get(operation, {}).items(), *roles.get("*", {}).items()]:
        if target in attributes or target in added:
            continue
        # The first source that says something: a placeholder ("unknown", blank) gives way to
        # a later source (an agent's entity name "" to its agent_id), and is copied only when
        # no source has more, so that it is still read as no name.
        written = [(source, {"stringValue": span["name"]} if source == "@name"
                    else attributes[source])
                   for source in sources if (source == "@name" and isinstance(
                       span.get("name"), str) and span["name"]) or source in attributes]
        if written:
            source, added[target] = next(((s, w) for s, w in written if not _placeholder(w)),
                                         written[0])
            if source != "@name":
                names[target] = source
    return added


def _placeholder(value: Any) -> bool:
    inner = value.get("stringValue") if isinstance(value, dict) else None
    return isinstance(inner, str) and is_placeholder_model(inner)


def _a2a(span: dict[str, Any], attributes: dict[str, Any]) -> dict[str, Any]:
    """The A2A method of an A2A SDK client transport span, from its name."""
    rule = table()["a2a"]
    name = span.get("name")
    if _A2A_METHOD in attributes or not isinstance(name, str) or not name.startswith(
            rule["prefix"]):
        return {}
    method = rule["methods"].get(name.rsplit(".", 1)[-1])
    return {_A2A_METHOD: {"stringValue": method}} if method else {}
