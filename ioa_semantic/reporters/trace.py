"""Trace audits rendered for programs (JSON Lines) or people (text).

Reporters only read :class:`~ioa_semantic.trace.audit.RunAudit` values. JSON Lines: for each
run, one line per agent, then the run's summary line. Identities go through the
:class:`~ioa_semantic.trace.privacy.Disclosure`; content appears only when it was asked for.
The ``--format`` choices of ``ioa-check trace`` are the keys of :data:`REPORTERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import IO, Any

from .._findings import Severity, Verdict
from .._visible import has_lone_surrogate
from ..trace.audit import AgentAudit, RunAudit, Use
from ..trace.calls import Call
from ..trace.graph import ShapeReport
from ..trace.privacy import Disclosure
from . import Visible, json_text

# What json.dumps(..., ensure_ascii=False) writes a string as (the C encoder where built).
_encode_string: Callable[[str], str] = encode_basestring


def _counted(number: int, plural: str) -> str:
    """``number`` of what ``plural`` names ("events", "spans", "agents"): one in the singular."""
    return f"{number} {plural.removesuffix('s') if number == 1 else plural}"


def _call(call: Call, disclose: Disclosure) -> dict[str, Any]:
    out: dict[str, Any] = {"id": disclose.call_name(call.id, call.key) if call.id else None,
                           "line": call.first_line}
    for side in ("input", "output"):
        digest = getattr(call, side)
        if digest is not None:
            out[side] = digest.as_json()
    if disclose.include_content and call.content:
        out["content"] = call.content
    return out


def _call_text(call: Call, disclose: Disclosure) -> str:
    """``json_text(_call(call, disclose))``, written without the dict and the encoder's
    machinery where the call holds only names, numbers and digests (a long run's report
    writes one an event: they were a sixth of its time). Its content, when shown, is any
    JSON, and goes through json_text."""
    if disclose.include_content and call.content:
        return json_text(_call(call, disclose))
    ident = disclose.call_name(call.id, call.key) if call.id else None
    text = f'{{"id": {_scalar(ident)}, "line": {_scalar(call.first_line)}'
    for side, digest in (("input", call.input), ("output", call.output)):
        if digest is not None:
            text += (f', "{side}": {{"sha256": {_scalar(digest.sha256)}, '
                     f'"chars": {_scalar(digest.chars)}}}')
    return text + "}"


def _scalar(value: Any) -> str:
    """``json_text(value)`` for one value of a call's record: text, a whole number and null
    written directly, as json.dumps writes them (``ensure_ascii=False``: json's own string
    encoder, then a lone surrogate escaped as json_text does); anything else by json_text."""
    kind = type(value)
    if kind is str:
        text: str = _encode_string(value)
        return json_text(value) if has_lone_surrogate(text) else text
    if kind is int:
        return int.__repr__(value)
    return "null" if value is None else json_text(value)


def _use(use: Use, disclose: Disclosure) -> dict[str, Any]:
    """A use as the report gives it, but its calls (:func:`_write_uses` writes them)."""
    out: dict[str, Any] = {}
    if use.aspect == "tools":
        out["tool"] = disclose.tool(use.name) if use.name else None
    elif use.aspect == "models":
        out["model"] = use.name
    elif use.aspect == "delegations":
        out["agent"] = disclose.agent(use.name) if use.name else None
        out["via"] = disclose.tool(use.via) if use.via else None
    else:
        out["caller"] = (use.name if use.name is None or use.name == "mas"
                         else disclose.agent(use.name))
        out["via"] = disclose.tool(use.via) if use.via else None
    out["verdict"] = str(use.verdict)
    out["declaredBy"] = list(use.declared_by)
    return out


# A use's calls are written this many at a time: a long run's agent makes hundreds of
# thousands of calls, and its record, made whole before it was written, weighed about 1 KB a
# call (a third of a million-event feed's peak, issue 37).
_CALLS_A_WRITE = 1024


def _write_uses(stream: IO[str], uses: list[Use], disclose: Disclosure) -> None:
    """``uses`` as a JSON array, each with its ``calls`` last, written as they are made: the
    text json.dumps makes of the whole (``, `` and ``: `` between members)."""
    stream.write("[")
    for index, use in enumerate(uses):
        head = json_text(_use(use, disclose))
        stream.write(f"{', ' if index else ''}{head[:-1]}, \"calls\": [")
        for start in range(0, len(use.calls), _CALLS_A_WRITE):
            stream.write((", " if start else "") + ", ".join(
                _call_text(call, disclose) for call in use.calls[start:start + _CALLS_A_WRITE]))
        stream.write("]}")
    stream.write("]")


def write_agent_record(stream: IO[str], run: RunAudit, agent: AgentAudit,
                       disclose: Disclosure) -> None:
    """An agent's line of the JSON report (docs/trace.md, "Reports"), written as it is made."""
    stream.write(json_text({
        "source": disclose.path(run.run.source),
        "run": disclose.run(run.run.ident),
        "agent": disclose.agent(agent.agent),
        "verdict": str(agent.verdict),
        "aspects": {k: str(v) for k, v in agent.aspects.items()},
    })[:-1] + ', "consumed": {')
    for index, aspect in enumerate(("tools", "models", "delegations")):
        stream.write(f'{", " if index else ""}"{aspect}": ')
        _write_uses(stream, [u for u in agent.uses if u.aspect == aspect], disclose)
    stream.write(f', "processing": {json_text(agent.processing)}}}, "provided": ')
    _write_uses(stream, [u for u in agent.uses if u.aspect == "provided"], disclose)
    stream.write(f', "unused": {json_text(agent.unused)}, "reasons": '
                 f'{json_text([r.as_dict() for r in agent.reasons])}}}\n')


def summary_record(run: RunAudit, shapes: ShapeReport | None,
                   disclose: Disclosure) -> dict[str, Any]:
    calls: dict[str, int] = {}
    for call in run.run.calls:
        calls[call.cls] = calls.get(call.cls, 0) + 1
    summary: dict[str, Any] = {
        "source": disclose.path(run.run.source),
        "run": disclose.run(run.run.ident) if run.run.readable else None,
        "verdict": str(run.verdict),
        "agents": {disclose.agent(a.agent): str(a.verdict) for a in run.agents},
        "events": run.run.events,
        "unknownKinds": run.run.unknown,
        "skippedLines": run.run.skipped,
        "calls": dict(sorted(calls.items())),
        "records": len(run.run.records),
        "declaredUnused": {"agents": [disclose.agent(a) for a in run.unused_agents]},
        "reasons": [r.as_dict() for r in run.reasons],
        "authorization": "not-evaluated",
    }
    if shapes is not None:
        summary["shapes"] = {"results": shapes.results, "reported": len(shapes.findings),
                             "filtered": shapes.filtered,
                             "findings": [f.as_dict() for f in shapes.findings]}
    return {"summary": summary}


def json_lines(audits: Iterable[tuple[RunAudit, ShapeReport | None]], stream: IO[str],
               disclose: Disclosure) -> None:
    for run, shapes in audits:
        for agent in run.agents:
            write_agent_record(stream, run, agent, disclose)
        stream.write(json_text(summary_record(run, shapes, disclose)) + "\n")


_STYLE = {Verdict.COMPATIBLE: "bold green", Verdict.INCOMPATIBLE: "bold red",
          Verdict.INDETERMINATE: "bold yellow", Verdict.INVALID: "bold magenta"}
_MARK = {Severity.ERROR: "[red]error[/]", Severity.WARNING: "[yellow]warning[/]",
         Severity.INFO: "[dim]info[/]"}


def text(audits: Iterable[tuple[RunAudit, ShapeReport | None]], stream: IO[str],
         disclose: Disclosure) -> None:
    from rich.markup import escape

    from .lines import text_console

    console = Visible(text_console(stream))

    def verdict(v: Verdict) -> str:
        return f"[{_STYLE[v]}]{v}[/]"

    for run, shapes in audits:
        record = summary_record(run, shapes, disclose)["summary"]
        console.print(f"[{_STYLE[run.verdict]}]{str(run.verdict).upper()}[/] "
                      f"{escape(record['source'])}  [dim]run {escape(str(record['run']))}, "
                      f"{_counted(run.run.events, run.run.unit)}, "
                      f"{_counted(len(run.agents), 'agents')}[/]")
        for agent in run.agents:
            console.print(f"  agent {escape(disclose.agent(agent.agent))}: {verdict(agent.verdict)}")
            for use in agent.uses:
                item = _use(use, disclose)
                if use.aspect == "tools":
                    what = f"tool {item['tool'] or '(unnamed)'}"
                elif use.aspect == "models":
                    what = f"model {item['model'] or '(not recorded)'}"
                elif use.aspect == "delegations":
                    what = f"delegates to {item['agent'] or '(unknown)'}" + (
                        f" via {item['via']}" if item["via"] else "")
                else:
                    what = f"called by {item['caller'] or '(unknown)'}" + (
                        f" via {item['via']}" if item["via"] else "")
                by = f"  [dim]declared by {escape(', '.join(use.declared_by))}[/]" if (
                    use.declared_by) else ""
                console.print(f"    {use.aspect:<11} {verdict(use.verdict)}  {escape(what)} "
                              f"x{len(use.calls)}{by}")
            if agent.processing:
                counted = ", ".join(f"{k} x{v}" for k, v in agent.processing.items())
                console.print(f"    [dim]processing  {escape(counted)} (not judged)[/]")
            for reason in agent.reasons:
                console.print(f"    {_MARK[reason.severity]} {escape(reason.code)}: "
                              f"{escape(reason.message)}")
        for reason in run.reasons:
            console.print(f"  {_MARK[reason.severity]} {escape(reason.code)}: {escape(reason.message)}")
        if shapes is not None:
            filtered = ", ".join(f"{k} {v}" for k, v in shapes.filtered.items() if v) or "none"
            quiet = [r for r in shapes.findings if r.severity is Severity.INFO]
            console.print(f"  [dim]shapes: {shapes.results} results; not counted, as no graph "
                          f"built from traces can meet their rules: {filtered}; {len(quiet)} "
                          "rules of SHACL Warning or Info severity broken (listed by --format "
                          "json)[/]")
            for reason in shapes.findings:
                if reason.severity is not Severity.INFO:
                    console.print(f"    {_MARK[reason.severity]} {escape(reason.code)}: "
                                  f"{escape(reason.message)}")
        if run.run.unknown:
            unknown = ", ".join(f"{k} x{v}" for k, v in run.run.unknown.items())
            console.print(f"  [dim]unknown event kinds (counted, not used): {escape(unknown)}[/]")
        console.print("  [dim]authorization not evaluated[/]")


def html(audits: Iterable[tuple[RunAudit, ShapeReport | None]], stream: IO[str],
         disclose: Disclosure) -> None:
    """One self-contained page: each run's calls as a tree and a timeline, undeclared uses
    marked, with the verdicts (:mod:`.trace_html`, imported only for it)."""
    from .trace_html import page

    page([html_run(run, shapes, disclose) for run, shapes in audits], stream)


def html_run(run: RunAudit, shapes: ShapeReport | None, disclose: Disclosure,
             note: str | None = None) -> dict[str, Any]:
    """What the HTML page shows of one run; ``note`` says what it cannot show (a stored run
    whose calls are not drawn, on ``trace serve``'s pages)."""
    from .trace_html import calls_view

    summary = summary_record(run, shapes, disclose)["summary"]
    rows, left = calls_view(run, disclose)
    return {
        "source": summary["source"], "run": summary["run"], "verdict": summary["verdict"],
        "unit": run.run.unit, "events": run.run.events, "rows": rows, "left": left,
        "reasons": summary["reasons"], "note": note,
        "agents": [{"name": disclose.agent(a.agent), "verdict": str(a.verdict),
                    "uses": [_use_row(u, disclose) for u in a.uses],
                    "reasons": [r.as_dict() for r in a.reasons]} for a in run.agents]}


def _use_row(use: Use, disclose: Disclosure) -> dict[str, Any]:
    item = _use(use, disclose)
    name = item.get("tool") or item.get("model") or item.get("agent") or item.get("caller")
    return {"aspect": use.aspect, "name": name or "(not recorded)", "via": item.get("via"),
            "verdict": item["verdict"], "calls": len(use.calls),
            "declaredBy": item["declaredBy"]}


REPORTERS: dict[str, Callable[[Iterable[tuple[RunAudit, ShapeReport | None]], IO[str],
                               Disclosure], None]] = {
    "html": html,
    "text": text,
    "json": json_lines,
}
