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
    from ..audit.places import Place
    from ..audit.run import Audit, Conflict

from .._findings import Finding, Remedy, Severity
from . import Visible, declared_text, json_text, visible
from .lines import text_console


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

    # A file name, an @id or a message quoting the input may hold what a terminal obeys (an
    # escape sequence): every line is shown through Visible. Lone surrogates (a file name's
    # undecodable bytes) are left to the stream's backslashreplace, as the check's report.
    console = Visible(text_console(stream), surrogates=False)
    examples: dict[str, str] = {}
    for result in (result for batch in batches for result in batch.notable):
        where = _place(result.source, result.position)
        for reason in result.reasons:
            examples.setdefault(reason.code, where)
        if result.status == "valid":
            continue
        style = "magenta" if result.status == "invalid" else "yellow"
        # A registration whose id could not be read (not JSON, no @id) is named by its place
        # alone, with nothing after it.
        named = f"{where} {result.id}" if result.id else where
        console.print(f"[bold {style}]{result.status.upper()}[/] {escape(named)}")
        for reason in result.reasons:
            console.print(f"  {escape(reason.code)} [dim](section {reason.section}, at "
                          f"{escape(reason.path or '/')})[/] {escape(reason.message)}")
    conflicts = audit.conflicts()
    for conflict in conflicts:
        places = ", ".join(_place(s, i) for s, i in conflict.registrations)
        console.print(f"[bold red]CONFLICT[/] {escape(conflict.id)} registered differently by "
                      f"{escape(places)}")
        for member, values in _side_by_side(conflict):
            console.print(f"  {escape(member)}: {escape(values)}")
    summary = audit.summary(len(conflicts))["summary"]
    status = summary["status"]
    console.print(f"{_counted(summary['total'], 'registration')}: {status['valid']} valid, "
                  f"{status['invalid']} invalid, {status['indeterminate']} indeterminate; "
                  f"{_counted(summary['conflicts'], 'conflict')}")
    top = sorted(summary["codes"].items(), key=lambda item: (-item[1], item[0]))[:10]
    for code, count in top:
        example = examples.get(code, "")
        console.print(f"  {count:6d} {escape(code)}" + (f"  e.g. {escape(example)}" if example else ""))


def _side_by_side(conflict: Conflict) -> Iterator[tuple[str, str]]:
    """Each member the conflict's registrations declare differently, with what each one
    declares, in the order of the registrations."""
    for difference in conflict.differences:
        yield difference.member, " | ".join(
            f"{_place(source, index)} {declared_text(value)}"
            for (source, index), value in zip(conflict.registrations, difference.values,
                                              strict=True))


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

# The reporters that locate each reason in the text it was judged from (the audit then
# places them where it judges, see audit/places.py).
AUDIT_PLACED = frozenset({"sarif"})

# The start of a SARIF report of ioa-check: what is_report recognizes (its rules and tool
# come after the results, once the rules that fired are known).
_SARIF_HEAD = ('{"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", '
               '"properties": {"producer": "ioa-check"}, "runs": [{"results": [')


# An audit's SARIF invocation (exitCode and the like), made once every registration is in:
# the command line's to make, for a reporter never names an exit status (cli/audit.py).
Invocation = Callable[["Audit"], dict[str, Any]]


def audit_sarif(audit: Audit, batches: Iterable[Judged], stream: IO[str],
                invocation: Invocation | None = None) -> None:
    """SARIF 2.1.0, streamed: one result per reason of a registration that is not valid, and
    one per conflict, located in the file (line and column of the member the reason's path
    names); then the rules that fired, each with its page of the docs, and the invocation
    that ``invocation`` makes of the audit (none without it). docs/audit.md, "SARIF"."""
    from .._codes import CODES
    from .._version import __version__
    from ..audit.run import DOCS_URL

    docs = audit.asked.docs if audit.asked is not None else DOCS_URL
    stream.write(_SARIF_HEAD)
    fired: dict[str, int] = {}  # code -> its ruleIndex, in the order codes first fired
    first = True

    def emit(item: dict[str, Any]) -> None:
        nonlocal first
        stream.write(("" if first else ",\n") + json_text(item))
        first = False

    for result in (result for batch in batches for result in batch.notable):
        answered = {code: [r for r in result.remedies if code in r.codes]
                    for code in {reason.code for reason in result.reasons}}
        places = dict(result.places or ())
        for reason in result.reasons:
            # A path the text does not hold (an IRI, a member missing): the registration's start.
            place = places.get(reason.path) or places.get("")
            remedies = answered[reason.code]
            # SARIF's fixes are replacements of artifact content: a reason whose member must
            # have a value the receiver defines is one (_fix); any other remedy says what
            # must change, not to what, and stays advice, in the message.
            fix = _fix(reason, result.source, result.position, places)
            advice = [r for r in remedies if fix is None or not _answered_by_fix(r, reason)]
            # A message is for people (a code-scanning page shows it): what the input could
            # hide there (a bidi override reordering an IRI, a line feed) is shown as code
            # points, as in the text report; the properties keep the data as it was.
            text = visible(reason.message.rstrip(".") + "." + "".join(
                f" Remedy: {_advice(r)}." for r in advice))
            item: dict[str, Any] = {
                "ruleId": reason.code, "ruleIndex": fired.setdefault(reason.code, len(fired)),
                "level": _SARIF_LEVEL[reason.severity], "message": {"text": text},
                "locations": [_location(result.source, result.position, place, reason.path)]}
            if fix is not None:
                item["fixes"] = [fix]
            item["properties"] = {"status": result.status, "id": result.id,
                                  "index": result.position, "draftSection": reason.section,
                                  "remedies": [r.as_dict() for r in remedies]}
            emit(item)
    conflicts = audit.conflicts()
    for conflict in conflicts:
        emit({"ruleId": conflict.code,
              "ruleIndex": fired.setdefault(conflict.code, len(fired)), "level": "error",
              "message": {"text": visible(
                  f"{conflict.id} is registered with different inputs, outputs or ontology"
                  + "".join(f"; {member}: {values}"
                            for member, values in _side_by_side(conflict)) + ".")},
              "locations": [_location(s, i, None, "") for s, i in conflict.registrations],
              "properties": {"differences": conflict.as_dict()["conflict"]["differences"]}})
    rules = [{"id": code, "shortDescription": {"text": CODES[code].meaning},
              "helpUri": f"{docs}codes/#{code}",
              "properties": {"draftSection": CODES[code].section,
                             "family": CODES[code].family}}
             for code in fired]
    tool = {"driver": {"name": "ioa-check", "version": __version__,
                       "informationUri": "https://datatracker.ietf.org/doc/draft-zhang-dmsc-ioa-semantic-interaction/",
                       "rules": rules}}
    invocations = ("" if invocation is None
                   else ', "invocations": ' + json_text([invocation(audit)]))
    stream.write('], "tool": ' + json_text(tool) + invocations
                 + ', "columnKind": "utf16CodeUnits", "properties": '
                 + json_text(audit.summary(len(conflicts))) + "}]}\n")


def _location(source: str, position: int | None, place: Place | None,
              pointer: str) -> dict[str, Any]:
    """A reason's location: its file, and the line and column of the member its path names
    (a JSON Lines record's place counts lines from the record's own; unplaced, the
    registration's start: its line of a JSON Lines file, else the file's first)."""
    record = position if position is not None and _is_lines(source) else None
    if place is None:
        region = {"startLine": 1 if record is None else record + 1, "startColumn": 1}
    else:
        region = {"startLine": place.line + (0 if record is None else record),
                  "startColumn": place.column}
    where: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(source)},
                                                  "region": region}}
    if pointer:
        where["logicalLocations"] = [{"fullyQualifiedName": pointer}]
    return where


def artifact_uri(source: str) -> str:
    """A source (a path as found, or ``-``) as SARIF's ``artifactLocation.uri``, a URI
    reference (RFC 3986): a relative path percent-encoded but for its slashes (a space, a
    ``#``, a ``%``, a ``:`` that would read as a scheme, a backslash, a character beyond
    ASCII: as its UTF-8 bytes, a file name's undecodable byte as itself), an absolute path
    as a ``file:`` URI. docs/audit.md, "SARIF"."""
    import os
    from pathlib import Path
    from urllib.parse import quote

    if source == "-":
        return source  # standard input: a valid reference, and what the JSON lines say
    path = Path(source)
    if path.is_absolute():
        # as_uri percent-encodes as quote does (by os.fsencode's bytes).
        return path.as_uri()
    # os.fsencode: a lone surrogate (PEP 383) goes back to the byte it stands for.
    return quote(os.fsencode(path.as_posix() if os.sep == "\\" else source), safe="/")


def _is_lines(source: str) -> bool:
    return source == "-" or source.endswith(".jsonl")


def _fix(reason: Finding, source: str, position: int | None,
         places: dict[str, Place]) -> dict[str, Any] | None:
    """The SARIF fix of a reason whose correction is textual: a baseline term defined
    otherwise in the sender's context (``jsonld.term-redefinition``) gets the baseline's
    definition, IRIs in full, as the member's value; None for every other reason, and where
    the text does not hold the member."""
    if reason.code != "jsonld.term-redefinition":
        return None
    from ..pipeline.contexts import baseline_definition  # the reporter's only use of it

    place = places.get(reason.path)
    term = reason.path.rpartition("/")[2].replace("~1", "/").replace("~0", "~")
    value = baseline_definition(term)
    if place is None or value is None:
        return None
    shift = position if position is not None and _is_lines(source) else 0
    region = {"startLine": place.value_line + shift, "startColumn": place.value_column,
              "endLine": place.end_line + shift, "endColumn": place.end_column}
    return {"description": {"text": f"define {term!r} as the baseline 6.1 context does"},
            "artifactChanges": [{"artifactLocation": {"uri": artifact_uri(source)}, "replacements": [
                {"deletedRegion": region,
                 "insertedContent": {"text": json.dumps(value, ensure_ascii=False)}}]}]}


def _answered_by_fix(remedy: Remedy, reason: Finding) -> bool:
    """Whether ``remedy`` is the correction a fix of ``reason`` writes out."""
    return remedy.action == "correct-input" and remedy.as_dict().get("path") == reason.path


def _advice(remedy: Remedy) -> str:
    """A remedy in a sentence: its action, who can act, and its members."""
    members = {k: v for k, v in remedy.as_dict().items() if k not in ("action", "by", "codes")}
    detail = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False)}" for k, v in members.items())
    return f"{remedy.action} (by the {remedy.by}{'; ' + detail if detail else ''})"


AUDIT_REPORTERS["sarif"] = audit_sarif

# The reporters that state the command's invocation (SARIF's ``invocations``), with the
# Invocation the command line gives them.
AUDIT_INVOKED: dict[str, Callable[[Audit, Iterable[Judged], IO[str], Invocation], None]] = {
    "sarif": audit_sarif,
}


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
        # This version's head, or an earlier one's (its tool first).
        return line.startswith(_SARIF_HEAD.encode()) or (
            b'"driver": {"name": "ioa-check"' in head)
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
