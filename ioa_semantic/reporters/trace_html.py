"""``ioa-check trace --format html``: one self-contained page, each run's calls as a picture.

Per run: its verdict and agents; then its calls as a tree (each call under its caller, as the
trace nests them) beside a timeline (each call's bar from its start to its end within the
run), every call of a use no declaration admits marked *undeclared*, every call of a use
left open marked *unknown*, and each agent's uses with their verdicts below. Rendered by
Jinja2 with autoescaping on (names come from traces, and traces come from anyone), and what a
name could hide or reorder (control characters, bidirectional overrides and isolates,
zero-width characters) is shown as its code point (``<U+202E>``), as the text report does;
nothing is fetched, no script runs.

The tree is drawn flat (a depth for each row, computed by a walk with a stack of its own),
so a trace nested thousands deep is not a recursion; at most :data:`MAX_CALLS` calls of a
run are drawn, and the page says how many more there are.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import IO, Any

from .._findings import Verdict
from ..trace.audit import RunAudit
from ..trace.calls import Call
from ..trace.privacy import Disclosure

MAX_CALLS = 5000
_CLASS_NAMES = {"mas": "MAS call", "agent": "agent call", "llm": "model call",
                "tool": "tool call", "processing": "processing"}


def _environment() -> Any:
    from jinja2 import Environment, FunctionLoader, select_autoescape

    from ..data import read_text
    from . import visible

    # Every value the template writes passes through visible() before it is escaped: a tool
    # named with a right-to-left override would otherwise reverse what the row shows.
    # The templates are the package's (data/report), the style they share included by name.
    return Environment(loader=FunctionLoader(lambda name: read_text("report", name)),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       trim_blocks=True, lstrip_blocks=True,
                       finalize=lambda v: visible(v) if isinstance(v, str) else v)


def page(runs: list[dict[str, Any]], stream: IO[str]) -> None:
    """The page of ``runs`` (each :func:`~.trace.html_run`'s) on ``stream``."""
    template = _environment().get_template("trace.html")
    verdicts = [r["verdict"] for r in runs]
    stream.write(template.render(runs=runs, counts={v: verdicts.count(v) for v in
                                                    dict.fromkeys(verdicts)}))


def runs_page(runs: list[dict[str, Any]], number: int, previous: str | None,
              following: str | None, stream: IO[str]) -> None:
    """``trace serve``'s list of judged runs (``/runs``): one page of ``runs`` (each with
    its ``href``), and links to the pages before and after it."""
    template = _environment().get_template("runs.html")
    stream.write(template.render(runs=runs, page=number, previous=previous, next=following))


def calls_view(run: RunAudit, disclose: Disclosure) -> tuple[list[dict[str, Any]], int]:
    """The rows of ``run``'s call tree and timeline, and how many calls are not drawn."""
    marks: dict[str, str] = {}
    for agent in run.agents:
        for use in agent.uses:
            mark = {Verdict.INCOMPATIBLE: "undeclared",
                    Verdict.INDETERMINATE: "unknown"}.get(use.verdict)
            for call in use.calls:
                if mark == "undeclared" or (mark and call.key not in marks):
                    marks[call.key] = mark
    return _rows(run.run.calls, marks, disclose)


def _rows(calls: tuple[Call, ...], marks: dict[str, str],
          disclose: Disclosure) -> tuple[list[dict[str, Any]], int]:
    """The calls in tree order (each after its caller, siblings as they started), each with
    its depth, its place on the timeline (percentages of the run) and its mark."""
    by_key = {c.key: c for c in calls}
    children: dict[str | None, list[Call]] = {}
    for call in calls:
        parent = call.parent if call.parent in by_key and call.parent != call.key else None
        children.setdefault(parent, []).append(call)
    for members in children.values():
        members.sort(key=lambda c: (_number(c.start) is None, _number(c.start) or 0,
                                    c.first_line, c.key))
    times = [t for c in calls for t in (_number(c.start), _number(c.end)) if t is not None]
    first, last = (min(times), max(times)) if times else (Decimal(0), Decimal(0))
    span = (last - first) or Decimal(1)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    # Roots first; then calls whose parents loop, which no root reaches.
    stack = [(c, 0) for c in reversed(children.get(None, []))]
    pending = [c for c in reversed(calls)]
    while (stack or pending) and len(rows) < MAX_CALLS:
        if not stack:
            call = pending.pop()
            if call.key in seen:
                continue
            stack.append((call, 0))
        call, depth = stack.pop()
        if call.key in seen:
            continue
        seen.add(call.key)
        rows.append(_row(call, depth, marks, disclose, first, span))
        stack.extend((c, depth + 1) for c in reversed(children.get(call.key, [])))
    return rows, len(calls) - len(rows)


def _row(call: Call, depth: int, marks: dict[str, str], disclose: Disclosure,
         first: Decimal, span: Decimal) -> dict[str, Any]:
    start, end = _number(call.start), _number(call.end)
    bar = None
    if start is not None:
        offset = (start - first) / span * 100
        width = ((end if end is not None and end >= start else start) - start) / span * 100
        bar = {"left": f"{offset:.2f}", "width": f"{max(width, Decimal('0.4')):.2f}"}
    if call.cls == "agent":
        name = disclose.agent(call.target) if call.target else "(unnamed agent)"
    elif call.cls == "tool":
        name = disclose.tool(call.target) if call.target else "(unnamed tool)"
    elif call.cls == "llm":
        name = call.target or "(model not recorded)"
    else:
        name = call.target or call.label or ""
    return {"depth": min(depth, 40), "cls": call.cls, "kind": _CLASS_NAMES.get(call.cls, call.cls),
            "name": name, "id": disclose.call_name(call.id, call.key) if call.id else None,
            "mark": marks.get(call.key), "bar": bar,
            "duration": f"{(end - start) * 1000:.0f} ms" if start is not None and end is not None
            and end >= start else None}


def _number(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None
