"""Reporters of an impact run (``ioa-check impact``): each flip, then the summary.

They render what :class:`~ioa_semantic.impact.Impact` yields and its summary; they decide
nothing. The ``--format`` choices are the keys of :data:`REPORTERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO, Any

from ..impact import Flip, Impact
from . import Visible, json_text
from .check import text_console


def json_lines(impact: Impact, stream: IO[str]) -> None:
    """One JSON object per flip, then ``{"summary": ...}`` (docs/impact.md)."""
    for flip in impact:
        stream.write(json_text(flip.as_dict()) + "\n")
    assert impact.summary is not None
    stream.write(json_text({"summary": impact.summary.as_dict()}) + "\n")


def _reason(reason: Mapping[str, Any]) -> str:
    return f"{reason.get('severity')} {reason.get('code')} at {reason.get('path') or '/'}"


def text(impact: Impact, stream: IO[str]) -> None:
    """For people: each flip with its reasons added and removed and its causes; the totals."""
    from rich.markup import escape

    console = Visible(text_console(stream))
    for flip in impact:
        _flip(console, flip, escape)
    summary = impact.summary
    assert summary is not None
    console.print("[bold]change:[/] " + escape("; ".join(summary.change) or "(nothing)"))
    console.print(f"{summary.decisions} decisions: {summary.rejudged} judged again "
                  f"({summary.flipped} flipped, {summary.unchanged} unchanged), "
                  f"{sum(summary.skipped.values())} skipped")
    for why, count in sorted(summary.skipped.items()):
        console.print(f"  skipped {count}: {escape(why)}")
    for why, count in sorted(summary.unjudgeable.items()):
        console.print(f"  [yellow]not judged again[/] {count}: {escape(why)}")
    for transition, count in sorted(summary.transitions.items()):
        console.print(f"  {escape(transition)}: {count}")
    for cause, count in sorted(summary.causes.items()):
        console.print(f"  caused by {escape(cause)}: {count}")


def _flip(console: Visible, flip: Flip, escape: Callable[[str], str]) -> None:
    console.print(f"[bold]{escape(flip.transition)}[/] {escape(flip.source)} "
                  f"[dim]({escape(flip.log)}, line {flip.line})[/]")
    for reason in flip.added:
        console.print(f"  [red]+[/] {escape(_reason(reason))}")
    for reason in flip.removed:
        console.print(f"  [green]-[/] {escape(_reason(reason))}")
    console.print("  caused by " + escape("; ".join(flip.causes)))


REPORTERS: dict[str, Callable[[Impact, IO[str]], None]] = {"text": text, "json": json_lines}

