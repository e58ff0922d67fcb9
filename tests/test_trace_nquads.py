"""The store's graph as N-Quads text (trace/nquads.py, graph.quad_chunks) is the graph the
reference builder makes (graph.build, rdflib: what --emit-kg writes and the shapes check):
for generated runs whose names, ids and payloads hold every character the N-Quads grammar
treats apart, with and without the trajectory, plain and keyed, the quads parsed back from
the text are exactly the reference graph's triples. A literal spelled by :func:`string`
parses back to its text, whatever the text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import pyoxigraph
from test_trace import MANIFESTS, TRACES

from ioa_semantic.trace.declarations import Declarations, read_manifests
from ioa_semantic.trace.events import Fold, Source, build
from ioa_semantic.trace.graph import build as build_graph
from ioa_semantic.trace.graph import quad_chunks, quads
from ioa_semantic.trace.nquads import Chunk, string
from ioa_semantic.trace.privacy import Disclosure, literal_text
from ioa_semantic.trace.store import RECHECK_IRIS

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

SOURCE = Source("generated.jsonl", "generated.jsonl", None, None)
# The characters N-Quads escapes or may refuse raw, and some it takes raw.
SPECIAL = st.sampled_from(['"', "\\", "\n", "\r", "\t", "\x00", "\x7f", "\u2028", "é", "🙂",
                           ">", "<", " ", "^", "@", "#", "%", "x", "_"])
NAMES = st.one_of(st.sampled_from(["moderator", "schedule_agent", ""]),
                  st.lists(SPECIAL, min_size=1, max_size=6).map("".join))
TEXT = st.one_of(st.text(max_size=12), NAMES)


@st.composite
def runs(draw: Any) -> list[dict[str, Any]]:
    """A run of nested calls: each opened and (mostly) closed, named with hostile names."""
    events: list[dict[str, Any]] = []
    open_calls: list[tuple[str, str, str]] = []
    clock = 1_700_000_000.0
    for number in range(draw(st.integers(1, 12))):
        clock += draw(st.sampled_from([0.001, 0.5, 3.25]))
        if open_calls and draw(st.booleans()):
            kind, call, agent = open_calls.pop()
            events.append({"kind": f"{kind}_end", "call_id": call, "agent_id": agent,
                           "timestamp": clock, "output": draw(TEXT),
                           "status": draw(st.sampled_from(["ok", "error", "\"x\""]))})
            continue
        kind = draw(st.sampled_from(["execution", "llm_call", "tool_call", "processing_call"]))
        call = f"{draw(NAMES)}{number}"
        agent = draw(NAMES)
        event: dict[str, Any] = {"kind": f"{kind}_start", "call_id": call, "agent_id": agent,
                                 "timestamp": clock, "input": draw(TEXT)}
        if open_calls:
            event["parent_call_id"] = open_calls[-1][1]
        if kind == "tool_call":
            event["tool_name"] = draw(NAMES)
        elif kind == "llm_call":
            event["model"] = draw(NAMES)
            event["usage"] = {"prompt_tokens": draw(st.integers(0, 99))}
            event["temperature"] = draw(st.sampled_from([0.0, 0.7, 1e300]))
        elif kind == "processing_call":
            event["processing_type"] = draw(NAMES)
            event["processing_name"] = draw(TEXT)
        events.append(event)
        open_calls.append((kind, call, agent))
    return events


def _reference(run: Any, declarations: Declarations, disclose: Disclosure,
               trajectory: bool) -> set[tuple[str, str, str]]:
    """The rdflib graph's triples, as Oxigraph reads its N-Triples."""
    graph = build_graph(run, declarations, disclose, trajectory)
    text = graph.serialize(format="nt", encoding="utf-8")
    return {(str(t.subject), str(t.predicate), str(t.object))
            for t in pyoxigraph.parse(text, format=pyoxigraph.RdfFormat.N_TRIPLES)}


_DECLARED: list[Declarations] = []


def _declarations() -> Declarations:
    if not _DECLARED:
        _DECLARED.append(Declarations(read_manifests(str(MANIFESTS), Disclosure()), None, None))
    return _DECLARED[0]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.booleans(), st.sampled_from(["plain", "content", "keyed"]), st.booleans())
def test_the_stored_text_is_the_reference_graph(events: list[dict[str, Any]], trajectory: bool,
                                                mode: str, declared: bool) -> None:
    disclose = (Disclosure.opaque(b"k" * 32, False) if mode == "keyed"
                else Disclosure(None, mode == "content"))
    fold = Fold(include_content=mode == "content")
    for seq, event in enumerate(events, 1):
        fold.value(seq, json.loads(json.dumps(event)))
    run = build(SOURCE, fold, disclose)
    declarations = _declarations() if declared else Declarations(None, None, None)
    expected = _reference(run, declarations, disclose, trajectory)
    stored = quads(run, declarations, disclose, "urn:g", trajectory)
    assert {q.graph_name for q in stored} <= {pyoxigraph.NamedNode("urn:g")}
    assert {(str(q.subject), str(q.predicate), str(q.object)) for q in stored} == expected
    # In small chunks too: each chunk is text that parses on its own.
    chunked = [q for c in quad_chunks(run, declarations, disclose, "urn:g", trajectory, 3)
               for q in c]
    assert set(chunked) == set(stored)
    # As a store loads it, without checking its IRIs again (store.RECHECK_IRIS): what a store
    # checking them keeps (a store keeps a number as its value: "500.0" is read back "500").
    checked, loaded = pyoxigraph.Store(), pyoxigraph.Store()
    for chunk in quad_chunks(run, declarations, disclose, "urn:g", trajectory, 3):
        checked.load(chunk.data, format=pyoxigraph.RdfFormat.N_QUADS)
        loaded.load(chunk.data, format=pyoxigraph.RdfFormat.N_QUADS, lenient=not RECHECK_IRIS)
    assert set(loaded) == set(checked)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                      blacklist_categories=())))
def test_a_literal_parses_back_to_its_text(text: str) -> None:
    """Any text, lone surrogates included (written as their escape, as literal_text does)."""
    shown = literal_text(text)
    line = f"<urn:s> <urn:p> {string(shown)} <urn:g> .\n"
    [quad] = list(Chunk.lines([line]))
    assert quad.object == pyoxigraph.Literal(shown)


def test_a_chunk_of_terms_reads_back_as_those_terms() -> None:
    graph = pyoxigraph.NamedNode("urn:g")
    made = [pyoxigraph.Quad(pyoxigraph.NamedNode("urn:s"), pyoxigraph.NamedNode("urn:p"),
                            pyoxigraph.Literal(value), graph)
            for value in ('a "b" \\ c\n\r\t', "é🙂", "")]
    chunk = Chunk.of(made)
    assert len(chunk) == 3 and list(chunk) == made
    assert list(chunk + Chunk.of(made[:1])) == [*made, made[0]]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet="AZaz09_.~-", max_size=20),
                 st.text(st.characters(blacklist_categories=()), max_size=20)))
def test_a_names_part_of_an_iri_is_its_percent_encoding(name: str) -> None:
    # The unreserved names skip quote(): the part must be what quote() gives, every time.
    from urllib.parse import quote

    from ioa_semantic.trace.privacy import iri_part

    assert iri_part(name) == quote(name.encode("utf-8", "surrogatepass"), safe="")
