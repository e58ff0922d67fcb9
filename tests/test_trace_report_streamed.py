"""The JSON trace report is written as it is made: an agent's line, whose calls a long run
counts by the hundred thousand, is never held whole (issue 37: it weighed about 1 KB a call,
a third of a million-event feed's peak). Its text is the one json.dumps makes of the whole
record, byte for byte."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path
from typing import IO, Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import trace_runs

from ioa_semantic.reporters import json_text
from ioa_semantic.reporters import trace as reporter
from ioa_semantic.trace.audit import audit
from ioa_semantic.trace.calls import Call, Digest
from ioa_semantic.trace.declarations import Declarations, read_manifests
from ioa_semantic.trace.events import Fold, build, resolve
from ioa_semantic.trace.privacy import Disclosure
from ioa_semantic.trace.state import consume

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "trace"


def whole_record(run: Any, agent: Any, disclose: Disclosure) -> dict[str, Any]:
    """The agent's record made whole, as the report made it before it was streamed."""
    def use(u: Any) -> dict[str, Any]:
        out = reporter._use(u, disclose)
        out["calls"] = [reporter._call(c, disclose) for c in u.calls]
        return out

    return {
        "source": disclose.path(run.run.source), "run": disclose.run(run.run.ident),
        "agent": disclose.agent(agent.agent), "verdict": str(agent.verdict),
        "aspects": {k: str(v) for k, v in agent.aspects.items()},
        "consumed": {aspect: [use(u) for u in agent.uses if u.aspect == aspect]
                     for aspect in ("tools", "models", "delegations")}
        | {"processing": agent.processing},
        "provided": [use(u) for u in agent.uses if u.aspect == "provided"],
        "unused": agent.unused, "reasons": [r.as_dict() for r in agent.reasons],
    }


def judged(path: Path, disclose: Disclosure, manifests: Path | None = None) -> list[Any]:
    source, fold = resolve(str(path)), Fold(disclose.include_content)
    consume(source, fold)
    declarations = Declarations(read_manifests(str(manifests), disclose) if manifests else None,
                                None, None)
    return [audit(build(source, fold, disclose), declarations, disclose)]


def long_run(folder: Path, calls: int, agent: str = "finder") -> Path:
    """A run of one agent making ``calls`` tool calls (a name a person may give, with a
    quote, a newline and a line separator among them)."""
    lines = []
    for n in range(calls):
        tool = ("search", 'q"uote\nd', "caf\u00e9 \u2028", "x" * 3)[n % 4] if n < 8 else (
            "search")
        for kind in ("tool_call_start", "tool_call_end"):
            lines.append(json.dumps({"kind": kind, "agent_id": agent, "call_id": f"c{n}",
                                     "run_id": "r", "tool_name": tool, "timestamp": n,
                                     "arguments": {"n": n}, "output": f"out {n}"}))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("content", [False, True], ids=["digests", "content"])
def test_each_agents_line_is_the_whole_records_json(tmp_path: Path, content: bool) -> None:
    disclose = Disclosure(None, content)
    manifests = trace_runs.write_manifests(tmp_path / "manifests")
    audits = [*judged(EXAMPLES / "mas-lab" / "run", disclose),
              *judged(long_run(tmp_path / "long", 2 * reporter._CALLS_A_WRITE + 16), disclose,
                      manifests),
              *judged(long_run(tmp_path / "none", 0), disclose)]
    written = io.StringIO()
    reporter.json_lines([(a, None) for a in audits], written, disclose)
    expected = "".join(
        "".join(json_text(whole_record(a, agent, disclose)) + "\n" for agent in a.agents)
        + json_text(reporter.summary_record(a, None, disclose)) + "\n" for a in audits)
    assert written.getvalue() == expected
    # Long enough to be written in several pieces, and holding what a person may name.
    assert max(len(u.calls) for a in audits for g in a.agents for u in g.uses) > (
        2 * reporter._CALLS_A_WRITE)
    assert "caf\u00e9" in written.getvalue() and '\\"uote\\n' in written.getvalue()


class _Sink(io.TextIOBase):
    """A stream that keeps nothing of what it is given."""

    def write(self, text: str) -> int:
        return len(text)


def _held_writing(path: Path) -> int:
    (judgement,) = judged(path, Disclosure(None))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        reporter.json_lines([(judgement, None)], cast("IO[str]", _Sink()), Disclosure(None))
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_an_agents_line_is_written_in_memory_that_does_not_grow_with_its_calls(
        tmp_path: Path) -> None:
    small = _held_writing(long_run(tmp_path / "small", 4 * reporter._CALLS_A_WRITE))
    large = _held_writing(long_run(tmp_path / "large", 16 * reporter._CALLS_A_WRITE))
    # Made whole, the record of four times the calls held about four times as much (350 KB a
    # thousand calls); written a piece at a time, about the same.
    assert large < small * 1.5, (small, large)


_NAMES = st.one_of(st.text(), st.just(""), st.text(alphabet="\ud800\udcff\x00\n\"\\\u2028é😀a"))
_DIGESTS = st.one_of(
    st.none(),
    st.builds(Digest, st.one_of(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
                                _NAMES),
              st.one_of(st.integers(0, 1 << 70), st.floats(allow_nan=False), st.booleans())))


@given(key=_NAMES, ident=_NAMES, first_line=st.one_of(st.integers(0, 1 << 40), st.none()),
       given_input=_DIGESTS, given_output=_DIGESTS, keyed=st.booleans(),
       content=st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _NAMES, max_size=2)),
       include_content=st.booleans())
def test_a_calls_text_is_the_one_json_text_makes_of_its_record(
        key: str, ident: str, first_line: int | None, given_input: Digest | None,
        given_output: Digest | None, keyed: bool, content: dict[str, Any] | None,
        include_content: bool) -> None:
    """The report writes a call's record without json.dumps; the text is the same, for any
    ids (lone surrogates, controls, quotes), digests (also as a hand-edited record holds
    them) and content."""
    call = Call(key, ident, "tool", None, None, None, None, None, None,
                cast(int, first_line), None, None, {}, None, None, None, given_input,
                given_output, content, ())
    disclose = Disclosure(b"k" * 32 if keyed else None, include_content)
    assert reporter._call_text(call, disclose) == json_text(reporter._call(call, disclose))
