"""No call of a mas-lab run takes another's key, whatever ids its trace gives.

The fold keys a call by its id and makes keys of its own for the calls an id does not tell
apart: ``~LINE`` for a call without an id (the schema's ``call_id`` is optional on every
event), ``KEY~LINE`` for a call started or ended again under an id it has used. A trace's id
is any string: an id ``~2`` once took the key of the call without an id at line 2 and
replaced it in the fold, and a run read from ``--state`` differed from one read whole. A
call's IRI is made of its key, so two calls never share a node of the graph either (a call
started again under its id once added a second start time to the first's node).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ioa_semantic.trace.calls import id_key
from ioa_semantic.trace.events import Fold, Source, resolve, runs
from ioa_semantic.trace.privacy import Disclosure
from ioa_semantic.trace.state import STATE_VERSION, consume

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from test_trace import records, trace

RUN = {"run_id": "r1", "agent_id": "sys"}


def _events(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps({**RUN, **e}) + "\n" for e in events))
    return path


def _folded(path: Path) -> Fold:
    fold = Fold()
    consume(resolve(str(path)), fold)
    return fold


# An execution whose id spells the key of the id-less MAS call that ends at line 2.
SPELLS_IDLESS = [
    {"kind": "execution_start", "call_id": "~2", "timestamp": 1.0},
    {"kind": "mas_call_end", "timestamp": 2.0},
    {"kind": "execution_end", "call_id": "~2", "timestamp": 3.0},
]
# A tool call whose id spells the key the fold makes for id "t" started again at line 3.
SPELLS_RESTART = [
    {"kind": "tool_call_start", "call_id": "t~3", "tool_name": "x", "timestamp": 1.0},
    {"kind": "tool_call_start", "call_id": "t", "tool_name": "x", "timestamp": 1.5},
    {"kind": "tool_call_start", "call_id": "t", "tool_name": "x", "timestamp": 2.0},
    {"kind": "tool_call_end", "call_id": "t~3", "tool_name": "x", "timestamp": 3.0},
]


_LINES = st.integers(min_value=1, max_value=3)
# Ids of every shape, among them the spellings of the keys the fold makes.
_IDS = st.one_of(st.text(alphabet="~a1", min_size=1, max_size=6),
                 _LINES.map(lambda n: f"~{n}"),
                 st.tuples(st.text(alphabet="~a", min_size=1, max_size=3), _LINES).map(
                     lambda t: f"{t[0]}~{t[1]}"))


@given(st.lists(st.tuples(st.sampled_from(["id", "idless", "again"]), _IDS, _LINES),
                max_size=30))
@example([("id", "~2", 1), ("idless", "", 2)])
@example([("id", "t~3", 1), ("again", "t", 3)])
@example([("again", "a~", 1), ("again", "a", 1)])  # "a~~1" and "a~1": an odd run last
def test_no_id_key_is_a_key_the_fold_makes(calls: list[tuple[str, str, int]]) -> None:
    """Distinct calls, distinct keys: the keys as ``Fold._call_for`` makes them."""
    made: dict[str, tuple[str, str, int]] = {}
    for kind, ident, line in calls:
        call = (kind, ident if kind != "idless" else "", line if kind != "id" else 0)
        key = {"id": id_key(ident), "idless": f"~{line}",
               "again": f"{id_key(ident)}~{line}"}[kind]
        assert made.setdefault(key, call) == call, (key, made[key], call)


def test_an_id_spelling_an_idless_calls_key_does_not_replace_it(tmp_path: Path) -> None:
    fold = _folded(_events(tmp_path / "events.jsonl", SPELLS_IDLESS))
    assert sorted((c.cls, c.id, c.startLine, c.endLine) for c in fold.calls.values()) == [
        ("agent", "~2", 1, 3), ("mas", "", None, 2)]
    assert fold.problems == []


def test_an_id_spelling_a_restarted_calls_key_does_not_replace_it(tmp_path: Path) -> None:
    fold = _folded(_events(tmp_path / "events.jsonl", SPELLS_RESTART))
    assert sorted((c.id, c.startLine, c.endLine) for c in fold.calls.values()) == [
        ("t", 2, None), ("t", 3, None), ("t~3", 1, 4)]
    assert [p[0] for p in fold.problems] == ["trace.call-conflict"]


@pytest.mark.parametrize("events", [SPELLS_IDLESS, SPELLS_RESTART], ids=["idless", "restart"])
def test_a_run_resumed_from_its_state_is_the_run_read_whole(tmp_path: Path,
                                                            events: list[dict[str, Any]]) -> None:
    _events(tmp_path / "events.jsonl", events)
    whole = trace(["events.jsonl", "--format", "json"], tmp_path)
    for line in range(1, len(events)):  # the state holds the first `line` events
        _events(tmp_path / "part.jsonl", events[:line])
        state = tmp_path / f"state{line}"
        assert trace(["part.jsonl", "--state", state, "--batch-size", "1"],
                     tmp_path).returncode in (0, 1, 3)
        (tmp_path / "part.jsonl").write_text((tmp_path / "events.jsonl").read_text())
        resumed = trace(["part.jsonl", "--state", state, "--batch-size", "1", "--format",
                         "json"], tmp_path)
        assert resumed.stdout.replace(b"part.jsonl", b"events.jsonl") == whole.stdout, line


@pytest.mark.parametrize(("events", "spelled"), [(SPELLS_IDLESS, "~2"),
                                                   (SPELLS_RESTART, "t~3")],
                         ids=["idless", "restart"])
def test_a_run_is_judged_as_it_is_with_its_ids_renamed(tmp_path: Path,
                                                      events: list[dict[str, Any]],
                                                      spelled: str) -> None:
    """The id that spells a key the fold makes, renamed to a plain one: the same report."""
    renamed = [{**e, "call_id": "plain"} if e.get("call_id") == spelled else e for e in events]
    _events(tmp_path / "events.jsonl", events)
    _events(tmp_path / "renamed.jsonl", renamed)
    report = trace(["events.jsonl", "--format", "json"], tmp_path).stdout.decode()
    plain = trace(["renamed.jsonl", "--format", "json"], tmp_path).stdout.decode()
    # The id's IRI and its name in the reports (its key doubles its "~": see id_key).
    shown = report.replace(id_key(spelled), "plain").replace(spelled, "plain")
    assert shown.replace("events.jsonl", "renamed.jsonl") == plain
    assert "trace.nesting-interleaved" not in report


def test_calls_sharing_an_id_are_nodes_of_their_own(tmp_path: Path) -> None:
    """A call started again under its id is another call (``trace.call-conflict``): its
    node is its own, with its own start time, and names the id the trace gave it."""
    _events(tmp_path / "events.jsonl", [
        {"kind": "execution_start", "call_id": "a", "timestamp": 1.0},
        {"kind": "execution_end", "call_id": "a", "timestamp": 2.0},
        {"kind": "execution_start", "call_id": "a", "timestamp": 3.0},
        {"kind": "execution_end", "call_id": "a", "timestamp": 4.0}])
    trace(["events.jsonl", "--emit-kg", "kg.nt"], tmp_path)
    starts: dict[str, list[str]] = {}
    ids: dict[str, list[str]] = {}
    for line in (tmp_path / "kg.nt").read_text().splitlines():
        subject, predicate, rest = line.split(" ", 2)
        if ":call:" not in subject:
            continue
        if predicate.endswith("mas#startTime>"):
            starts.setdefault(subject, []).append(rest.split("^^")[0])
        if predicate.endswith("mas#id>"):
            ids.setdefault(subject, []).append(rest.removesuffix(" ."))
    assert sorted(starts.values()) == [['"1.0"'], ['"3.0"']]
    assert len(ids) == 2 and all(v == ['"a"'] for v in ids.values())


def test_an_id_with_a_tilde_keeps_its_name_in_reports(tmp_path: Path) -> None:
    _events(tmp_path / "events.jsonl", [
        {"kind": "execution_start", "call_id": "a~b", "timestamp": 1.0},
        {"kind": "execution_end", "call_id": "a~b", "timestamp": 2.0}])
    agents, _ = records(trace(["events.jsonl", "--format", "json"], tmp_path))
    assert agents["sys"]["provided"][0]["calls"] == [{"id": "a~b", "line": 1}]


def test_a_state_of_the_keys_before_is_refused(tmp_path: Path) -> None:
    """A state's calls are keyed as its version keyed them: one written before ids' keys
    doubled their ``~`` would resume under other keys, and is refused, not misread."""
    _events(tmp_path / "events.jsonl", SPELLS_IDLESS)
    assert STATE_VERSION >= 5
    (tmp_path / "state").write_text(json.dumps(
        {"ioa-check-trace-state": 3, "includeContent": False}) + "\n")
    proc = trace(["events.jsonl", "--state", "state"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert b"not a trace state file of this version (it is of version 3" in proc.stderr
    assert b"delete it, or give another --state, to start over" in proc.stderr
    # Of this version, with the other --include-content: said so, and what to do.
    (tmp_path / "state").write_text(json.dumps(
        {"ioa-check-trace-state": STATE_VERSION, "includeContent": True}) + "\n")
    proc = trace(["events.jsonl", "--state", "state"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert b"with --include-content off (it was written with it on): give the same" in (
        proc.stderr)


def test_a_call_started_again_pairs_with_its_own_end_and_children(tmp_path: Path) -> None:
    """Agent A's execution ``x`` ends; agent B starts ``x`` again (a conflict, reported),
    opens a tool call under ``x`` and ends ``x``. The restart is one call, started and
    ended, and the tool call's parent (once A's ended execution, the first call with the
    id, and the end a third call without a start)."""
    run = [{"kind": "mas_call_start", "call_id": "m", "timestamp": 0},
           {"kind": "execution_start", "call_id": "x", "parent_call_id": "m",
            "agent_id": "A", "timestamp": 1},
           {"kind": "execution_end", "call_id": "x", "agent_id": "A", "timestamp": 2},
           {"kind": "execution_start", "call_id": "x", "parent_call_id": "m",
            "agent_id": "B", "timestamp": 3},
           {"kind": "tool_call_start", "call_id": "t", "parent_call_id": "x",
            "agent_id": "B", "tool_name": "k", "timestamp": 4},
           {"kind": "tool_call_end", "call_id": "t", "agent_id": "B", "tool_name": "k",
            "timestamp": 5},
           {"kind": "execution_end", "call_id": "x", "agent_id": "B", "timestamp": 6},
           {"kind": "mas_call_end", "call_id": "m", "timestamp": 7}]
    fold = _folded(_events(tmp_path / "events.jsonl", run))
    assert sorted((c.key, c.agent, c.startLine, c.endLine) for c in fold.calls.values()) == [
        ("m", "sys", 1, 8), ("t", "B", 5, 6), ("x", "A", 2, 3), ("x~4", "B", 4, 7)]
    assert fold.problems == [["trace.call-conflict", 4, "x"]]
    trace(["events.jsonl", "--emit-kg", "kg.nt"], tmp_path)
    parents = {line.split(" ")[0].rsplit(":", 1)[1].rstrip(">"):
               line.split(" ")[2].rsplit(":", 1)[1].rstrip(">")
               for line in (tmp_path / "kg.nt").read_text().splitlines()
               if "trace#parentCall>" in line}
    assert parents == {"x": "m", "x~4": "m", "t": "x~4"}
    codes = [r["code"] for r in records(trace(["events.jsonl", "--format", "json"],
                                              tmp_path))[1][0]["reasons"]]
    assert codes == ["trace.call-conflict"]  # nothing incomplete, nothing ambiguous


def test_under_opaque_ids_a_calls_reference_is_its_nodes_and_no_others(tmp_path: Path) -> None:
    """``a~`` is keyed ``a~~``, the id of another call: a reference made of the id for the
    report and of the key for the node named one call in one and another in the other."""
    _events(tmp_path / "events.jsonl", [
        {"kind": "tool_call_start", "call_id": "a~", "tool_name": "x", "timestamp": 1},
        {"kind": "tool_call_end", "call_id": "a~", "tool_name": "x", "timestamp": 2},
        {"kind": "tool_call_start", "call_id": "a~~", "tool_name": "y", "timestamp": 3},
        {"kind": "tool_call_end", "call_id": "a~~", "tool_name": "y", "timestamp": 4}])
    proc = trace(["events.jsonl", "--format", "json", "--opaque-ids", "--emit-kg", "kg.nt"],
                 tmp_path)
    agents, _ = records(proc)
    [agent] = agents.values()
    named = {use["tool"]: use["calls"][0]["id"] for use in agent["consumed"]["tools"]}
    graph = (tmp_path / "kg.nt").read_text().splitlines()
    ids = {line.split(" ")[0].rsplit(":", 1)[1].rstrip(">"): line.split(" ", 2)[2]
           for line in graph if "mas#id>" in line and ":call:" in line.split(" ")[0]}
    executes = {line.split(" ")[0].rsplit(":", 1)[1].rstrip(">"): line.rsplit(":", 1)[1][:1]
                for line in graph if "mas#executesTool>" in line}
    assert len(set(named.values())) == 2
    for tool, ref in named.items():
        assert executes[ref] == tool  # the node the report names made this call
        assert ids[ref] == f'"{ref}" .'


def _parents(fold: Fold) -> dict[str, str | None]:
    """Each call's parent as the run built from ``fold`` resolves it (keys)."""
    [run] = runs(Source("events.jsonl", None, None, None), fold, Disclosure())
    return {c.key: c.parent for c in run.calls}


def test_an_execution_and_a_tool_call_sharing_an_id_each_pair_their_own_events(
        tmp_path: Path) -> None:
    """An id given to an execution and to a tool call inside it (a conflict, reported):
    each end pairs with the call of its own class, neither becomes a call without a start."""
    fold = _folded(_events(tmp_path / "events.jsonl", [
        {"kind": "mas_call_start", "call_id": "m", "timestamp": 0},
        {"kind": "execution_start", "call_id": "x", "parent_call_id": "m", "timestamp": 1},
        {"kind": "tool_call_start", "call_id": "x", "parent_call_id": "x", "tool_name": "k",
         "timestamp": 2},
        {"kind": "tool_call_end", "call_id": "x", "tool_name": "k", "timestamp": 3},
        {"kind": "execution_end", "call_id": "x", "timestamp": 4},
        {"kind": "mas_call_end", "call_id": "m", "timestamp": 5}]))
    assert sorted((c.key, c.cls, c.startLine, c.endLine) for c in fold.calls.values()) == [
        ("m", "mas", 1, 6), ("x", "agent", 2, 5), ("x~3", "tool", 3, 4)]
    assert fold.problems == [["trace.call-conflict", 3, "x"]]
    assert _parents(fold) == {"m": None, "x": "m", "x~3": "x"}


def test_a_child_is_never_under_a_call_begun_after_it(tmp_path: Path) -> None:
    """A tool call that names its parent only on its end, after the parent's id was started
    again: its parent is the id's call begun before it, not the later one."""
    fold = _folded(_events(tmp_path / "events.jsonl", [
        {"kind": "mas_call_start", "call_id": "m", "timestamp": 0},
        {"kind": "execution_start", "call_id": "x", "parent_call_id": "m", "timestamp": 1},
        {"kind": "tool_call_start", "call_id": "t", "tool_name": "k", "timestamp": 2},
        {"kind": "execution_end", "call_id": "x", "timestamp": 3},
        {"kind": "execution_start", "call_id": "x", "parent_call_id": "m", "timestamp": 4},
        {"kind": "tool_call_end", "call_id": "t", "parent_call_id": "x", "tool_name": "k",
         "timestamp": 5},
        {"kind": "execution_end", "call_id": "x", "timestamp": 6},
        {"kind": "mas_call_end", "call_id": "m", "timestamp": 7}]))
    assert _parents(fold)["t"] == "x"
