"""Reporters of an impact run (``ioa-check impact``): each flip, then the summary, as text,
JSON Lines, SARIF 2.1.0 or one HTML page (:mod:`.impact_html`, imported only for it).

They render what :class:`~ioa_semantic.impact.Impact` yields and its summary; they decide
nothing. The ``--format`` choices are the keys of :data:`REPORTERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO, Any

from ..impact import AnyFlip, ImpactRun
from . import Visible, json_text
from .lines import text_console


def json_lines(impact: ImpactRun, stream: IO[str]) -> None:
    """One JSON object per flip, then ``{"summary": ...}`` (docs/impact.md)."""
    for flip in impact:
        stream.write(json_text(flip.as_dict()) + "\n")
    assert impact.summary is not None
    stream.write(json_text({"summary": impact.summary.as_dict()}) + "\n")


def _reason(reason: Mapping[str, Any]) -> str:
    return f"{reason.get('severity')} {reason.get('code')} at {reason.get('path') or '/'}"


def text(impact: ImpactRun, stream: IO[str]) -> None:
    """For people: each flip with its reasons added and removed and its causes; the totals."""
    from rich.markup import escape

    console = Visible(text_console(stream))
    for flip in impact:
        _flip(console, flip, escape)
    summary = impact.summary
    assert summary is not None
    console.print("[bold]change:[/] " + escape("; ".join(summary.change) or "(nothing)"))
    console.print(f"{summary.decisions} {summary.subject}s: {summary.rejudged} judged again "
                  f"({summary.flipped} flipped, {summary.unchanged} unchanged), "
                  f"{sum(summary.skipped.values())} skipped"
                  + (f"; {summary.conflicts} conflict{'' if summary.conflicts == 1 else 's'} "
                     "changed" if summary.conflicts else ""))
    for why, count in sorted(summary.skipped.items()):
        console.print(f"  skipped {count}: {escape(why)}")
    for why, count in sorted(summary.unjudgeable.items()):
        console.print(f"  [yellow]not judged again[/] {count}: {escape(why)}")
    for transition, count in sorted(summary.transitions.items()):
        console.print(f"  {escape(transition)}: {count}")
    for cause, count in sorted(summary.causes.items()):
        console.print(f"  caused by {escape(cause)}: {count}")


def _flip(console: Visible, flip: AnyFlip, escape: Callable[[str], str]) -> None:
    console.print_lines([
        f"[bold]{escape(flip.transition)}[/] {escape(flip.source)} "
        f"[dim]({escape(flip.log)}, line {flip.line})[/]",
        *(f"  [red]+[/] {escape(_reason(reason))}" for reason in flip.added),
        *(f"  [green]-[/] {escape(_reason(reason))}" for reason in flip.removed),
        "  caused by " + escape("; ".join(flip.causes))])


# --- SARIF (ioa-check impact --format sarif) ---------------------------------------------------

# The rule of a flip that adds no reason (it only removes some): no reason code fired.
REMOVED_ONLY = "impact.reasons-removed"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_SEVERITY_ORDER = ("error", "warning", "info")


def _rule_of(flip: AnyFlip) -> str:
    """A flip's rule: the most severe reason code it adds (the first of them in the order
    they are added), or :data:`REMOVED_ONLY`."""
    for severity in _SEVERITY_ORDER:
        for reason in flip.added:
            if reason.get("severity") == severity:
                return str(reason.get("code"))
    return str(flip.added[0].get("code")) if flip.added else REMOVED_ONLY


def _flip_message(flip: AnyFlip) -> str:
    """A flip in a sentence: the verdicts before and after, the reasons added and removed,
    and the cause."""
    text = (f"{flip.source}: {flip.before['verdict']} \u2192 {flip.after['verdict']}")
    if flip.added:
        text += "; adds " + ", ".join(_reason(r) for r in flip.added)
    if flip.removed:
        text += "; removes " + ", ".join(_reason(r) for r in flip.removed)
    return text + "; caused by " + "; ".join(flip.causes) + "."


def sarif(impact: ImpactRun, stream: IO[str]) -> None:
    """SARIF 2.1.0, streamed: one result per flip (its rule the most severe reason code it
    adds), located at the decision's line in the log; then the rules that fired and the
    summary as the run's properties. docs/impact.md, "SARIF"."""
    from .._codes import CODES, DOCS_URL
    from .._version import __version__
    from .audit import artifact_uri

    stream.write('{"$schema": "https://json.schemastore.org/sarif-2.1.0.json", '
                 '"version": "2.1.0", "properties": {"producer": "ioa-check impact"}, '
                 '"runs": [{"results": [')
    fired: dict[str, int] = {}  # rule id -> its ruleIndex, in the order rules first fired
    first = True
    for flip in impact:
        rule = _rule_of(flip)
        severities = {str(r.get("severity")) for r in flip.added}
        level = next((_SARIF_LEVEL[s] for s in _SEVERITY_ORDER if s in severities), "note")
        item: dict[str, Any] = {
            "ruleId": rule, "ruleIndex": fired.setdefault(rule, len(fired)), "level": level,
            "message": {"text": _flip_message(flip)},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(flip.log)},
                "region": {"startLine": flip.line, "startColumn": 1}},
                "logicalLocations": [{"fullyQualifiedName": flip.source,
                                      "kind": "resource"}]}],
            # The flip as --format json has it, but the verdicts' whole reasons (the added
            # and removed are what changed).
            "properties": {**{k: v for k, v in flip.as_dict().items()
                              if k not in ("before", "after")},
                           "before": flip.before["verdict"], "after": flip.after["verdict"],
                           "addedCodes": sorted({str(r.get("code")) for r in flip.added})}}
        stream.write(("" if first else ",\n") + json_text(item))
        first = False
    rules = []
    for rule in fired:
        if rule in CODES:
            rules.append({"id": rule, "shortDescription": {"text": CODES[rule].meaning},
                          "helpUri": f"{DOCS_URL}codes/#{rule}",
                          "properties": {"draftSection": CODES[rule].section,
                                         "family": CODES[rule].family}})
        else:
            rules.append({"id": rule, "shortDescription": {
                "text": "the change removes reasons of a decision and adds none"},
                "helpUri": f"{DOCS_URL}impact/"})
    tool = {"driver": {"name": "ioa-check", "version": __version__,
                       "informationUri": "https://datatracker.ietf.org/doc/draft-zhang-dmsc-ioa-semantic-interaction/",
                       "rules": rules}}
    assert impact.summary is not None
    stream.write('], "tool": ' + json_text(tool) + ', "columnKind": "utf16CodeUnits", '
                 '"properties": ' + json_text({"summary": impact.summary.as_dict()}) + "}]}\n")


def html(impact: ImpactRun, stream: IO[str]) -> None:
    """One self-contained HTML page (see :mod:`.impact_html`, imported only for it)."""
    from .impact_html import impact_html

    impact_html(impact, stream)


REPORTERS: dict[str, Callable[[ImpactRun, IO[str]], None]] = {
    "text": text, "json": json_lines, "sarif": sarif, "html": html}

