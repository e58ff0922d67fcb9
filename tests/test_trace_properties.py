"""Properties of the trace stages on generated streams.

No stream makes a stage raise, and every graph is valid RDF; a stream with a line that could
not be used is never ``compatible``; and folding a stream in two parts with a checkpoint
between them (the ``--state`` path: delta written as JSON, read back, folded on) gives the
same run as folding it at once, wherever the split falls.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from test_trace import MANIFESTS, TRACES

from ioa_semantic._findings import Verdict
from ioa_semantic.trace.audit import audit
from ioa_semantic.trace.declarations import Declarations, read_manifests
from ioa_semantic.trace.events import Fold, Line, Source, build
from ioa_semantic.trace.privacy import Disclosure

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

KINDS = ["mas_call", "execution", "llm_call", "tool_call", "processing_call"]
NAMES = st.sampled_from(["moderator", "schedule_agent", "intruder", ""])
IDS = st.sampled_from(["", "c1", "c2", "c3", "moderator-u1-exec"])


@st.composite
def events(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from([f"{k}_{p}" for k in KINDS for p in ("start", "end")]
                                + ["context_assembled", "brand_new_kind", "llm_call_middle"]))
    event: dict[str, Any] = {"kind": kind, "agent_id": draw(NAMES), "call_id": draw(IDS),
                             "timestamp": draw(st.one_of(st.floats(0, 2e9), st.none(),
                                                         st.text(max_size=3)))}
    for member, values in (("parent_call_id", IDS),
                           ("tool_name", st.sampled_from(["lookup_schedule", "book_hotel"])),
                           ("model", st.sampled_from(["azure/gpt-4o", "other", ""])),
                           ("processing_type", st.sampled_from(["context_assembly", "wait"])),
                           ("input", st.text(max_size=8)),
                           ("usage", st.dictionaries(st.sampled_from(
                               ["prompt_tokens", "completion_tokens", "total_tokens"]),
                               st.one_of(st.integers(-2, 50), st.text(max_size=2)))),
                           ("status", st.sampled_from(["ok", "error", "weird"]))):
        if draw(st.booleans()):
            event[member] = draw(values)
    return event


LINES = st.lists(st.one_of(events().map(lambda e: json.dumps(e).encode()),
                           st.binary(max_size=20), st.just(b"[1]"), st.just(b"{}")),
                 max_size=25)

_DECLARATIONS: list[Declarations] = []


def declarations() -> Declarations:
    if not _DECLARATIONS:
        _DECLARATIONS.append(Declarations(read_manifests(str(MANIFESTS), Disclosure()), None,
                                          None))
    return _DECLARATIONS[0]


def _fold(lines: list[bytes], fold: Fold, start: int = 0) -> None:
    offset = 0
    for seq, data in enumerate(lines, start + 1):
        offset += len(data) + 1
        fold.line(Line(seq, offset, data + b"\n"))


SOURCE = Source("generated.jsonl", "generated.jsonl", None, None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES)
def test_no_stream_raises_and_unused_lines_are_never_compatible(lines: list[bytes]) -> None:
    fold = Fold()
    _fold(lines, fold)
    run = build(SOURCE, fold, Disclosure())
    result = audit(run, declarations(), Disclosure())
    if run.skipped:
        assert result.verdict is not Verdict.COMPATIBLE
    if not run.calls:
        assert result.verdict is not Verdict.COMPATIBLE


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES, st.integers(0, 25))
def test_a_checkpoint_anywhere_gives_the_uninterrupted_run(lines: list[bytes], split: int) -> None:
    whole = Fold()
    _fold(lines, whole)
    first = Fold()
    _fold(lines[:split], first)
    resumed = Fold()
    resumed.restore(json.loads(json.dumps(first.delta())))
    _fold(lines[split:], resumed, start=min(split, len(lines)))
    expected = build(SOURCE, whole, Disclosure())
    run = build(SOURCE, resumed, Disclosure())
    assert run == expected
    assert audit(run, declarations(), Disclosure()) == audit(
        expected, declarations(), Disclosure())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES)
def test_every_graph_serializes_to_turtle_oxigraph_loads(lines: list[bytes]) -> None:
    """IRIs are minted from whatever identifiers a trace holds; each must stay a valid IRI."""
    import pyoxigraph

    from ioa_semantic.trace.graph import build as build_graph

    fold = Fold()
    _fold(lines, fold)
    graph = build_graph(build(SOURCE, fold, Disclosure()), declarations(), Disclosure())
    store = pyoxigraph.Store()
    store.load(graph.serialize(format="turtle").encode(), pyoxigraph.RdfFormat.TURTLE)
    assert len(store) == len(graph)
