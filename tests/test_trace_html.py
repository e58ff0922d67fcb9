"""``ioa-check trace --format html`` (issue 37, item 5): each run's calls as a tree and a
timeline, undeclared uses marked, with the verdicts; names from traces escaped; a trace
nested thousands deep drawn without recursion."""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2", reason="the trace extra is not installed")

from test_trace_otel_layouts import WEATHER, agent, chat, manifests, otlp, tool

from support import IOA_CHECK, ROOT

EXAMPLE = ROOT / "examples" / "trace" / "otel"


class Rows(HTMLParser):
    """The call rows of a page: their classes and their text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[list[str], str]] = []
        self.scripts = 0
        self._row: list[str] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "script":
            self.scripts += 1
        if tag == "tr" and "call" in classes:
            self._row, self._text = classes, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row is not None:
            self.rows.append((self._row, " ".join("".join(self._text).split())))
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row is not None:
            self._text.append(data)


def page(*args: str) -> tuple[int, str, Rows]:
    proc = subprocess.run([IOA_CHECK, "trace", *args, "--no-shapes", "--format", "html"],
                          capture_output=True, text=True, timeout=120)
    rows = Rows()
    rows.feed(proc.stdout)
    return proc.returncode, proc.stdout, rows


def test_the_example_page_draws_every_call_and_marks_the_undeclared_one() -> None:
    status, text, rows = page(str(EXAMPLE / "otlp.jsonl"), "--manifests",
                              str(EXAMPLE / "manifests"))
    assert status == 1 and text.startswith("<!DOCTYPE html>")
    assert len(rows.rows) == 12 and rows.scripts == 0  # 13 spans, one of them HTTP only
    undeclared = [t for c, t in rows.rows if "undeclared" in c]
    assert len(undeclared) == 1 and "issue_refund" in undeclared[0]
    # The tree: the delegated agent's calls come after it, its own calls indented deeper.
    names = [t for _, t in rows.rows]
    assert names.index(next(n for n in names if "booking_agent" in n)) < names.index(
        undeclared[0])
    assert 'class="verdict incompatible"' in text


def test_names_from_traces_are_escaped(tmp_path: Path) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    root = agent(WEATHER, 0, 50, chat("gpt-4o-mini", 1, 10), tool(hostile, 11, 20))
    path = tmp_path / "run.jsonl"
    path.write_text(otlp(root))
    declared = manifests(tmp_path, {WEATHER: []}, {WEATHER: "gpt-4o-mini"}, {}, entry=WEATHER)
    status, text, rows = page(str(path), "--manifests", str(declared))
    assert status == 1
    assert hostile not in text and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in text
    assert any("undeclared" in c and "<img" in t for c, t in rows.rows)


def test_a_trace_nested_thousands_deep_is_drawn(tmp_path: Path) -> None:
    """3,000 tool spans, each under the one before (written as OTLP JSON directly: the SDK
    helpers here emit recursively)."""
    def span(n: int, parent: int | None, operation: str, name: str) -> dict[str, Any]:
        attributes = [{"key": "gen_ai.operation.name", "value": {"stringValue": operation}},
                      {"key": "gen_ai.tool.name" if operation == "execute_tool" else
                       "gen_ai.agent.name", "value": {"stringValue": name}}]
        return {"traceId": "ab" * 16, "spanId": f"{n + 1:016x}",
                **({"parentSpanId": f"{parent + 1:016x}"} if parent is not None else {}),
                "name": f"{operation} {name}", "kind": 1,
                "startTimeUnixNano": str(1_796_200_200 * 10**9 + n),
                "endTimeUnixNano": str(1_796_200_300 * 10**9 - n), "attributes": attributes}

    spans = [span(0, None, "invoke_agent", WEATHER)]
    spans += [span(n, n - 1, "execute_tool", f"step{n}") for n in range(1, 3001)]
    request = {"resourceSpans": [{"resource": {"attributes": []},
                                  "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(request))
    status, _, rows = page(str(path))
    assert status in (1, 3) and len(rows.rows) == 3001
