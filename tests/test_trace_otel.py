"""A run traced by the real OpenTelemetry SDK audits as its mas-lab events do.

tests/otel_agents.py traces the rail-assist system with the SDK and exports it with the SDK's
own OTLP encoder (protobuf's JSON mapping, one request a line), writes the same spans as the
Collector's OTLP/JSON document, the same run as mas-lab events, and as mas-lab's own OTel
export writes it (its span names and mas.* attributes). Each is audited by the installed
``ioa-check trace``: the verdicts, the uses behind them, the knowledge graph and what is
withheld must be the same whichever form is read.
"""

from __future__ import annotations

import base64
import json
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")
pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")

import otel_agents
from support import IOA_CHECK
from test_trace_state import kill_at_checkpoints

LAYOUTS = ("otlp.jsonl", "otlp-collector.json", "events.jsonl", "maslab-spans.jsonl")
UNDECLARED_SPAN = "00f067aa0ba9020b"
MODELLESS_SPAN = "00f067aa0ba9020c"


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run, traced afresh by the SDK (not the committed copy of the example)."""
    folder = tmp_path_factory.mktemp("rail-assist")
    otel_agents.write(str(folder))
    return folder


def trace(folder: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([IOA_CHECK, "trace", *args], cwd=folder, capture_output=True,
                          timeout=120)


def records(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    assert proc.returncode in (0, 1, 3), proc.stderr
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def per_agent(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each agent's record without what names the input (its path, the lines of its calls)."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("source", "line")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return {line["agent"]: strip(line) for line in lines if "agent" in line}


@pytest.fixture(scope="module")
def audits(traced: Path) -> dict[str, subprocess.CompletedProcess[bytes]]:
    """Each form of the run audited against its manifests: what the tests below only read."""
    return {layout: trace(traced, layout, "--manifests", "manifests", "--format", "json",
                          "--no-shapes") for layout in LAYOUTS}


def test_the_three_forms_give_the_same_verdicts_and_uses(
        audits: dict[str, subprocess.CompletedProcess[bytes]]) -> None:
    assert {layout: proc.returncode for layout, proc in audits.items()} == dict.fromkeys(
        LAYOUTS, 1)
    agents = {layout: per_agent(records(proc)) for layout, proc in audits.items()}
    assert agents["otlp.jsonl"] == agents["events.jsonl"]
    assert agents["otlp-collector.json"] == agents["events.jsonl"]
    assert agents["maslab-spans.jsonl"] == agents["events.jsonl"]
    verdicts = {name: record["verdict"] for name, record in agents["otlp.jsonl"].items()}
    assert verdicts == {"front_desk": "compatible", "booking_agent": "incompatible"}


def test_the_undeclared_tool_names_its_span_and_the_model_less_call_is_evidence(
        audits: dict[str, subprocess.CompletedProcess[bytes]]) -> None:
    otlp = per_agent(records(audits["otlp.jsonl"]))
    booking = otlp["booking_agent"]
    by_code = {r["code"]: r for r in booking["reasons"]}
    undeclared = by_code["capability.undeclared-tool"]
    assert "issue_refund" in undeclared["message"] and UNDECLARED_SPAN in undeclared["message"]
    assert undeclared["path"].endswith(f":call:{UNDECLARED_SPAN}")
    modelless = by_code["capability.model-unknown"]
    assert MODELLESS_SPAN in modelless["message"]
    models = {m["model"]: m["verdict"] for m in booking["consumed"]["models"]}
    assert models == {"claude-sonnet-4-5": "compatible", None: "indeterminate"}
    front = otlp["front_desk"]
    delegations = {(d["agent"], d["verdict"]) for d in front["consumed"]["delegations"]}
    assert delegations == {("booking_agent", "compatible")}


_SPAN_IDS = {"https://outshift-open.github.io/oxp-ontology/mas#spanId",
             "https://outshift-open.github.io/oxp-ontology/mas#parentSpanId"}


def _graph(path: Path) -> set[tuple[str, str, str]]:
    """The triples, decimals compared by value (``1796200200`` and ``1796200200.0`` are one)."""
    rdflib = pytest.importorskip("rdflib")
    graph = rdflib.Graph().parse(path)
    decimal = "http://www.w3.org/2001/XMLSchema#decimal"
    out = set()
    for s, p, o in graph:
        value = str(o)
        if isinstance(o, rdflib.Literal) and str(o.datatype) == decimal:
            value = str(Decimal(value).normalize())
        out.add((str(s), str(p), value))
    return out


def test_the_knowledge_graph_is_the_same_from_spans_and_from_events(traced: Path) -> None:
    for layout in ("otlp.jsonl", "events.jsonl"):
        proc = trace(traced, layout, "--manifests", "manifests", "--no-shapes", "--emit-kg",
                     f"{layout}.ttl")
        assert proc.returncode == 1, proc.stderr
    spans, events = _graph(traced / "otlp.jsonl.ttl"), _graph(traced / "events.jsonl.ttl")
    # But the spans' own ids: mas:spanId is "the ID of the corresponding span in OTel
    # traces, where one exists" (the ontology), which a mas-lab event is not.
    ids = {t for t in spans if t[1] in _SPAN_IDS}
    assert {t for t in spans if t not in ids} == events
    assert ids and not {t for t in events if t[1] in _SPAN_IDS}
    assert len(spans) > 200


def test_content_is_withheld_from_report_and_graph_unless_asked_for(traced: Path) -> None:
    secrets = ("Zürich", "München", "Z\\u00fcrich")
    proc = trace(traced, "otlp.jsonl", "--manifests", "manifests", "--format", "json",
                 "--no-shapes", "--emit-kg", "private.ttl")
    shown = proc.stdout.decode() + (traced / "private.ttl").read_text(encoding="utf-8")
    assert not any(secret in shown for secret in secrets)
    assert '"sha256"' in proc.stdout.decode()
    proc = trace(traced, "otlp.jsonl", "--manifests", "manifests", "--format", "json",
                 "--no-shapes", "--include-content")
    assert "Zürich" in json.dumps(records(proc), ensure_ascii=False)


def test_without_manifests_the_spans_tool_definitions_declare_the_tools(traced: Path) -> None:
    agents = per_agent(records(trace(traced, "otlp.jsonl", "--format", "json", "--no-shapes")))
    tools = {name: {t["tool"]: t["verdict"] for t in record["consumed"]["tools"]}
             for name, record in agents.items()}
    assert tools["booking_agent"] == {"reserve_seat": "compatible", "issue_refund": "incompatible"}
    assert tools["front_desk"]["search_connections"] == "compatible"
    reserve = next(t for t in agents["booking_agent"]["consumed"]["tools"]
                   if t["tool"] == "reserve_seat")
    assert reserve["declaredBy"][0].endswith("#gen_ai.tool.definitions")


def _declaring(manifests: Path, folder: Path, add: str | None = None,
               remove: str | None = None) -> Path:
    """A copy of ``manifests`` in ``folder`` where booking_agent also declares ``add`` (a tool
    manifest of its own) and front_desk no longer declares ``remove``."""
    import shutil

    import yaml

    shutil.copytree(manifests, folder)
    for agent, tool, adding in (("booking_agent", add, True), ("front_desk", remove, False)):
        if tool is None:
            continue
        path = folder / "agents" / f"{agent}.yaml"
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        ref = {"ref": f"../tools/{tool}.tool.yaml"}
        tools = document["spec"]["tools"]
        document["spec"]["tools"] = [*tools, ref] if adding else [t for t in tools if t != ref]
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        if adding:
            (folder / "tools" / f"{tool}.tool.yaml").write_text(yaml.safe_dump(
                {"apiVersion": "mas/v1", "kind": "Tool", "metadata": {"name": tool}}))
    return folder


@pytest.fixture(scope="module")
def every_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run with every model call's model recorded, in every form."""
    folder = tmp_path_factory.mktemp("every-model")
    otel_agents.write(str(folder), otel_agents.with_every_model())
    return folder


def test_the_four_forms_agree_when_everything_is_declared_and_when_one_tool_is_not(
        every_model: Path) -> None:
    """With booking_agent's refund tool declared too, every agent is compatible whichever
    form is read; with search_connections then taken out of front_desk's manifest, exactly
    front_desk is incompatible, naming the tool and its span, in every form."""
    _declaring(every_model / "manifests", every_model / "declared", add="issue_refund")
    _declaring(every_model / "manifests", every_model / "undeclared", add="issue_refund",
               remove="search_connections")
    search = otel_agents.SPAN_IDS["fd.search"]
    for manifests, status in (("declared", 0), ("undeclared", 1)):
        audits = {layout: trace(every_model, layout, "--manifests", manifests, "--format",
                                "json", "--no-shapes") for layout in LAYOUTS}
        assert {layout: proc.returncode for layout, proc in audits.items()} == dict.fromkeys(
            LAYOUTS, status), {layout: proc.stdout[-600:] for layout, proc in audits.items()}
        agents = {layout: per_agent(records(proc)) for layout, proc in audits.items()}
        for layout in LAYOUTS:
            assert agents[layout] == agents["events.jsonl"], layout
        verdicts = {name: record["verdict"] for name, record in agents["events.jsonl"].items()}
        if status == 0:
            assert verdicts == {"front_desk": "compatible", "booking_agent": "compatible"}
            continue
        assert verdicts == {"front_desk": "incompatible", "booking_agent": "compatible"}
        for layout in LAYOUTS:
            front = agents[layout]["front_desk"]
            (reason,) = [r for r in front["reasons"] if r["code"] == "capability.undeclared-tool"]
            assert "search_connections" in reason["message"] and search in reason["message"]
            assert reason["path"].endswith(f":call:{search}")


def test_the_knowledge_graph_from_mas_lab_spans_is_the_events_one_but_response_ids(
        traced: Path) -> None:
    """mas-lab's converter writes no attribute for the provider's response id; everything
    else of the graph is the same as from the events."""
    for layout in ("maslab-spans.jsonl", "events.jsonl"):
        proc = trace(traced, layout, "--manifests", "manifests", "--no-shapes", "--emit-kg",
                     f"{layout}.kg.ttl")
        assert proc.returncode == 1, proc.stderr
    spans = _graph(traced / "maslab-spans.jsonl.kg.ttl")
    events = _graph(traced / "events.jsonl.kg.ttl")
    response = "https://outshift-open.github.io/oxp-ontology/mas#responseId"
    # (and mas-lab's spans' own ids, which its events are not: see above)
    assert {t for t in spans if t[1] not in _SPAN_IDS} == {t for t in events if t[1] != response}
    assert len(events - spans) == 5


def test_mas_lab_span_content_is_withheld_unless_asked_for(traced: Path) -> None:
    secrets = ("Zürich", "München", "Z\\u00fcrich")
    proc = trace(traced, "maslab-spans.jsonl", "--manifests", "manifests", "--format", "json",
                 "--no-shapes", "--emit-kg", "maslab-private.ttl")
    shown = proc.stdout.decode() + (traced / "maslab-private.ttl").read_text(encoding="utf-8")
    assert not any(secret in shown for secret in secrets)
    assert '"sha256"' in proc.stdout.decode()
    proc = trace(traced, "maslab-spans.jsonl", "--manifests", "manifests", "--format", "json",
                 "--no-shapes", "--include-content")
    assert "Zürich" in json.dumps(records(proc), ensure_ascii=False)


def _many_traces(folder: Path, count: int) -> Path:
    """``count`` copies of the run, each under its own trace id, as OTLP lines."""
    lines = (folder / "otlp.jsonl").read_text().splitlines()
    trace_id = base64.b64encode(otel_agents.TRACE_ID.to_bytes(16, "big")).decode()
    out = []
    for n in range(count):
        other = base64.b64encode((otel_agents.TRACE_ID + n + 1).to_bytes(16, "big")).decode()
        out += [line.replace(trace_id, other) for line in lines]
    path = folder / "many.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def test_state_over_otlp_resumes_after_sigkill_to_the_same_result(traced: Path,
                                                                    tmp_path: Path) -> None:
    _many_traces(traced, 60).rename(tmp_path / "many.jsonl")
    (tmp_path / "manifests").symlink_to(traced / "manifests")
    base = ["many.jsonl", "--manifests", "manifests", "--format", "json", "--no-shapes",
            "--batch-size", "2"]
    reference = trace(tmp_path, *base)
    assert reference.returncode == 1, reference.stderr
    state = tmp_path / "state"
    # Checkpoints (of 120) before each kill.
    kills = kill_at_checkpoints([IOA_CHECK, "trace", *base, "--state", "state"], tmp_path,
                                state, (1, 20, 50, 80, 100))
    finished = trace(tmp_path, *base, "--state", "state")
    assert finished.returncode == 1
    assert finished.stdout == reference.stdout
    assert kills, "the run finished before it could be interrupted"


def test_state_over_otlp_reads_appended_requests_incrementally(traced: Path,
                                                                tmp_path: Path) -> None:
    lines = (traced / "otlp.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "manifests").symlink_to(traced / "manifests")
    (tmp_path / "live.jsonl").write_text("".join(lines[:2]))
    args = ["live.jsonl", "--manifests", "manifests", "--format", "json", "--no-shapes",
            "--state", "state"]
    trace(tmp_path, *args)
    with open(tmp_path / "live.jsonl", "a") as handle:
        handle.write("".join(lines[2:]))
    resumed = trace(tmp_path, *args)
    (tmp_path / "whole.jsonl").write_text("".join(lines))
    whole = trace(tmp_path, "whole.jsonl", "--manifests", "manifests", "--format", "json",
                  "--no-shapes")
    assert per_agent(records(resumed)) == per_agent(records(whole))
