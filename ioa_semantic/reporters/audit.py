"""Reporters of an audit: JSON Lines (contract 2), text, SARIF, HTML; and a progress display.

The ``--format`` choices of ``ioa-check audit`` are the keys of :data:`AUDIT_REPORTERS`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from json.encoder import encode_basestring
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..audit.judge import Judged, Result
    from ..audit.run import Audit

from .._findings import Severity
from . import json_text
from .check import text_console


def result_line(result: Result) -> str:
    """A registration's result as its JSON line (what ``json.dumps`` of its dict writes)."""
    if result.reasons:
        return json_text(result.as_dict()) + "\n"
    # Nearly every line of a large audit is a registration without reasons; spelling it
    # directly, with json's own string encoder, costs the writer a fifth of building a dict
    # and encoding it (the tests hold the two to the same text).
    index = "null" if result.position is None else str(result.position)
    ident = "null" if result.id is None else encode_basestring(result.id)
    return (f'{{"source": {_encoded(result.source)}, "index": {index}, '
            f'"id": {ident}, "status": "{result.status}", "reasons": [], "remedies": []}}\n')


@lru_cache(maxsize=64)
def _encoded(source: str) -> str:
    return encode_basestring(source)  # one source for thousands of lines


def audit_json_lines(audit: Audit, batches: Iterable[Judged], stream: IO[str]) -> None:
    """One JSON line per registration, one per conflict, then the summary (contract 2).

    The batches come with their lines written (see AUDIT_LINES) where they were judged.
    """
    for batch in batches:
        stream.write(batch.lines)
    conflicts = audit.conflicts()
    for conflict in conflicts:
        stream.write(json_text(conflict.as_dict()) + "\n")
    stream.write(json_text(audit.summary(len(conflicts))) + "\n")


def audit_text(audit: Audit, batches: Iterable[Judged], stream: IO[str]) -> None:
    """For people: every registration that is not valid, the conflicts, then the counts."""
    from rich.markup import escape

    console = text_console(stream)
    examples: dict[str, str] = {}
    for result in (result for batch in batches for result in batch.notable):
        where = _place(result.source, result.position)
        for reason in result.reasons:
            examples.setdefault(reason.code, where)
        if result.status == "valid":
            continue
        style = "magenta" if result.status == "invalid" else "yellow"
        console.print(f"[bold {style}]{result.status.upper()}[/] {escape(where)} "
                      f"{escape(result.id or '')}")
        for reason in result.reasons:
            console.print(f"  {escape(reason.code)} [dim](section {reason.section}, at "
                          f"{escape(reason.path or '/')})[/] {escape(reason.message)}")
    conflicts = audit.conflicts()
    for conflict in conflicts:
        places = ", ".join(_place(s, i) for s, i in conflict.registrations)
        console.print(f"[bold red]CONFLICT[/] {escape(conflict.id)} registered differently by "
                      f"{escape(places)}")
    summary = audit.summary(len(conflicts))["summary"]
    status = summary["status"]
    console.print(f"{_counted(summary['total'], 'registration')}: {status['valid']} valid, "
                  f"{status['invalid']} invalid, {status['indeterminate']} indeterminate; "
                  f"{_counted(summary['conflicts'], 'conflict')}")
    top = sorted(summary["codes"].items(), key=lambda item: (-item[1], item[0]))[:10]
    for code, count in top:
        example = examples.get(code, "")
        console.print(f"  {count:6d} {escape(code)}" + (f"  e.g. {escape(example)}" if example else ""))


def _place(source: str, position: int | None) -> str:
    """Where a registration stands, for people: lines and array items counted from 1 (the
    JSON output keeps the contract's 0-based ``index``)."""
    if position is None:
        return source
    if source == "-" or source.endswith(".jsonl"):
        return f"{source}:{position + 1}"
    return f"{source}, item {position + 1}"


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


AUDIT_REPORTERS: dict[str, Callable[[Audit, Iterable[Judged], IO[str]], None]] = {
    "text": audit_text,
    "json": audit_json_lines,
}


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def audit_sarif(audit: Audit, batches: Iterable[Judged], stream: IO[str]) -> None:
    """SARIF 2.1.0, streamed: one result per reason of a registration that is not valid, and
    one per conflict, located in the file (and line, for JSON Lines) it came from."""
    from .._codes import CODES
    from .._version import __version__

    rules = [{"id": code, "shortDescription": {"text": entry.meaning},
              "properties": {"draftSection": entry.section, "family": entry.family}}
             for code, entry in sorted(CODES.items())]
    head = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0"}
    tool = {"driver": {"name": "ioa-check", "version": __version__,
                       "informationUri": "https://datatracker.ietf.org/doc/draft-zhang-dmsc-ioa-semantic-interaction/",
                       "rules": rules}}
    stream.write(json.dumps(head)[:-1] + ', "runs": [{"tool": ' + json.dumps(tool)
                 + ', "results": [')
    first = True

    def emit(item: dict[str, Any]) -> None:
        nonlocal first
        stream.write(("" if first else ",\n") + json_text(item))
        first = False

    def location(source: str, position: int | None, pointer: str) -> dict[str, Any]:
        physical: dict[str, Any] = {"artifactLocation": {"uri": source}}
        if position is not None and source.endswith(".jsonl"):
            physical["region"] = {"startLine": position + 1}
        where: dict[str, Any] = {"physicalLocation": physical}
        if pointer:
            where["logicalLocations"] = [{"fullyQualifiedName": pointer}]
        return where

    for result in (result for batch in batches for result in batch.notable):
        # SARIF's fixes are replacements of artifact content, which a remedy does not know
        # (it says what must change, not to what): remedies go in the result's properties.
        answered = {code: [r.as_dict() for r in result.remedies if code in r.codes]
                    for code in {reason.code for reason in result.reasons}}
        for reason in result.reasons:
            emit({"ruleId": reason.code, "level": _SARIF_LEVEL[reason.severity],
                  "message": {"text": reason.message},
                  "locations": [location(result.source, result.position, reason.path)],
                  "properties": {"status": result.status, "id": result.id,
                                 "index": result.position, "draftSection": reason.section,
                                 "remedies": answered[reason.code]}})
    conflicts = audit.conflicts()
    for conflict in conflicts:
        emit({"ruleId": conflict.code, "level": "error",
              "message": {"text": f"{conflict.id} is registered with different inputs, outputs "
                                  "or ontology"},
              "locations": [location(s, i, "") for s, i in conflict.registrations]})
    summary = audit.summary(len(conflicts))
    stream.write('], "properties": ' + json.dumps(summary) + "}]}\n")


AUDIT_REPORTERS["sarif"] = audit_sarif


def audit_html(audit: Audit, batches: Iterable[Judged], stream: IO[str]) -> None:
    """One self-contained HTML page (see :mod:`.audit_html`, imported only for it)."""
    from .audit_html import audit_html as report

    report(audit, batches, stream)


AUDIT_REPORTERS["html"] = audit_html

# What a reporter needs written per registration, where the registration is judged: the
# JSON Lines reporter writes nothing else, and a worker writing a batch's lines spares the
# one process that writes the output a third of its work per registration.
AUDIT_LINES: dict[str, Callable[[Result], str]] = {"json": result_line}


_TEXT_FIRST = re.compile(rb"(INVALID|INDETERMINATE|CONFLICT) |\d+ registrations?: \d+ valid, ")


def is_report(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is an audit report, of any ``--format``, so
    that ``--output`` may replace it: a JSON Lines report's first line (a registration's
    result, a conflict or the summary), SARIF with ioa-check as its tool, the HTML page's
    generator, or the text report's first line (a status in capitals or the counts)."""
    line = head.split(b"\n", 1)[0]
    if line.startswith(b'{"$schema": "https://json.schemastore.org/sarif-2.1.0.json"'):
        return b'"driver": {"name": "ioa-check"' in head
    if line.startswith(b"<!DOCTYPE html>"):
        return b'<meta name="generator" content="ioa-check ' in head
    if line.startswith(b"{"):
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past what json reads
            return False
        return isinstance(value, dict) and (set(value) in ({"summary"}, {"conflict"}) or {
            "source", "index", "id", "status", "reasons"} <= set(value))
    return _TEXT_FIRST.match(line) is not None


def with_progress(batches: Iterable[Judged], stream: IO[str]) -> Iterator[Judged]:
    """A running count on ``stream`` when it is a terminal; the batches pass through as they are."""
    if not stream.isatty():
        yield from batches
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    # On ``stream`` itself: rich's default console is stdout, where the results go.
    with Progress(SpinnerColumn(), TextColumn("{task.completed} registrations audited"),
                  TimeElapsedColumn(), console=Console(file=stream), transient=True) as progress:
        task = progress.add_task("audit", total=None)
        for batch in batches:
            progress.advance(task, batch.size)
            yield batch
