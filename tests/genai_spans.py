"""OTLP JSON requests written by hand from attribute specifications, for the trace tests
whose instrumentation cannot run here (see each test's docstring for the specification)."""

from __future__ import annotations

import json
from typing import Any

TRACE = "5b8efff798038103d269b633813fc60c"
EPOCH_NS = 1_796_200_200 * 10**9


def value(plain: Any) -> dict[str, Any]:
    """A plain value as an OTLP AnyValue."""
    if isinstance(plain, bool):
        return {"boolValue": plain}
    if isinstance(plain, int):
        return {"intValue": str(plain)}
    if isinstance(plain, float):
        return {"doubleValue": plain}
    if isinstance(plain, list):
        return {"arrayValue": {"values": [value(v) for v in plain]}}
    return {"stringValue": plain}


def span(number: int, parent: int | None, name: str, attributes: dict[str, Any],
         start_ms: int, end_ms: int, kind: int = 1) -> dict[str, Any]:
    """Span ``number`` of the one trace (ids ``0000000000000001``...), OTLP JSON encoding."""
    out: dict[str, Any] = {
        "traceId": TRACE, "spanId": f"{number:016x}", "name": name, "kind": kind,
        "startTimeUnixNano": str(EPOCH_NS + start_ms * 10**6),
        "endTimeUnixNano": str(EPOCH_NS + end_ms * 10**6),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
        "status": {"code": 1}}
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def span_id(number: int) -> str:
    return f"{number:016x}"


def request_line(spans: list[dict[str, Any]], service: str = "demo") -> str:
    """One ExportTraceServiceRequest holding ``spans``, as one JSON line."""
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": value(service)}]},
        "scopeSpans": [{"scope": {"name": "demo"}, "spans": spans}]}]}) + "\n"


def write_manifests(folder: Any, mas: str, agents: dict[str, tuple[list[str], list[str]]],
                    workflow: dict[str, Any]) -> Any:
    """mas-lab manifests under ``folder``: ``agents`` maps each agent to (its models, its
    tools); ``workflow`` is ``spec.workflow``. The folder's path."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents").mkdir(exist_ok=True)
    (folder / "tools").mkdir(exist_ok=True)
    mas_doc = {"apiVersion": "mas/v1", "kind": "MAS", "metadata": {"name": mas},
               "spec": {"agency": {"agents": [{"id": a, "ref": f"agents/{a}.yaml"}
                                              for a in agents]},
                        "workflow": workflow}}
    (folder / "mas.yaml").write_text(yaml.safe_dump(mas_doc, sort_keys=False), encoding="utf-8")
    for agent, (models, tools) in agents.items():
        doc = {"apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": agent},
               "spec": {"models": [{"model": m} for m in models],
                        "tools": [{"ref": f"../tools/{t}.tool.yaml"} for t in tools]}}
        (folder / "agents" / f"{agent}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False),
                                                          encoding="utf-8")
        for tool in tools:
            tool_doc = {"apiVersion": "mas/v1", "kind": "Tool",
                        "metadata": {"name": tool, "description": tool},
                        "spec": {"description": tool, "parameters": []}}
            (folder / "tools" / f"{tool}.tool.yaml").write_text(
                yaml.safe_dump(tool_doc, sort_keys=False), encoding="utf-8")
    return folder
