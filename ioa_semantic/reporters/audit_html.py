"""The audit as one self-contained HTML page (``ioa-check audit --format html``): the totals
by status, a chart of the most frequent codes, every code with its counts, the conflicts, a
filterable table of the registrations that carry a reason (not valid, or valid with a
warning) with their reasons and remedies, and what the audit was made with.

Made for a directory's audit of a million registrations and more. While the audit streams,
the page keeps, of the registrations that carry a reason, only the first :data:`PER_CODE` of
each code (in input order), each written out at once with at most :data:`REASONS` reasons and
remedies and every string from the input cut at :data:`CHARS` characters; of the conflicts,
the first :data:`PER_CODE`, each with at most :data:`PLACES` registrations. Memory and the
page's size are bounded by the number of codes (a registry of them), not by the input's
size; the counts are exact, and the page says of each code how many it left out.

The template, its style and its script are package data (``data/report/``): the style and the
script are inlined and allowed by their hashes in the page's Content-Security-Policy, so the
page fetches nothing and runs no script but its own. Everything from the input (ids,
sources, messages, paths, remedies' members, the inputs' names) is escaped, and the
characters that hide or reorder text (controls, bidirectional overrides and isolates, zero
width characters, tag characters) are shown as their code points (``<U+202E>``): a reader sees
what a registration holds, not what it would make the page look like.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from functools import cache
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..audit.judge import Judged, Result
    from ..audit.run import Audit, Conflict

from .. import data
from .._codes import CODES
from .._findings import Severity
from .._version import __version__
from . import declared_text, json_text

# The registrations listed per code: enough to see what goes wrong and where, few enough that
# a page of every code the registry has stays readable (and within some megabytes).
PER_CODE = 200
REASONS = 10  # reasons (and remedies) written per registration; the rest are counted
CHARS = 400  # characters kept of one string from the input; the rest are counted
PLACES = 20  # registrations named per conflict
CHART = 10  # codes in the chart

_STATUSES = ("valid", "invalid", "indeterminate")

# What would hide or reorder text where it stands: C0 controls (but tab and line feed), DEL and
# the C1 controls, the Arabic letter mark, zero width characters and directional marks,
# the line and paragraph separators, the bidirectional embeddings, overrides and isolates,
# invisible operators, the byte order mark, interlinear annotation controls, tag characters,
# and surrogates (a file name that is not UTF-8 comes as lone ones).
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e"
                     "\u2060-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]")


def _code_point(match: re.Match[str]) -> str:
    return f'<span class="cc">&lt;U+{ord(match.group()):04X}&gt;</span>'


def text(value: str, limit: int = CHARS) -> str:
    """A string from the input as HTML text: escaped, hidden characters shown, cut at
    ``limit`` characters with the rest counted."""
    cut = ""
    if len(value) > limit:
        cut = f'<span class="cut">… ({len(value) - limit:,} more characters)</span>'
        value = value[:limit]
    return _HIDDEN.sub(_code_point, html.escape(value, quote=True)) + cut


def _place(source: str, position: int | None) -> str:
    """A registration's place in its source for people, counted from 1 (the JSON output keeps
    the contract's 0-based ``index``)."""
    if position is None:
        return ""
    noun = "line" if source == "-" or source.endswith(".jsonl") else "item"
    return f"{noun} {position + 1:,}"


def _pointer(path: str) -> str:
    """A reason's path (a JSON Pointer, or an IRI): "" is the whole document."""
    return f"<code>{text(path)}</code>" if path else '<span class="muted">the whole document</span>'


def _value(key: str, value: Any) -> str:
    """A remedy's member: a path as a reason's, a string as code, anything else as its
    compact JSON."""
    if key == "path" and isinstance(value, str):
        return _pointer(value)
    if isinstance(value, str):
        return f"<code>{text(value)}</code>"
    return f"<code>{text(json_text(value, separators=(', ', ': ')))}</code>"


def _reason_items(result: Result) -> str:
    items = []
    for reason in result.reasons[:REASONS]:
        severity = "" if reason.severity is Severity.ERROR else (
            f' <span class="sev-{reason.severity}">({reason.severity})</span>')
        items.append(f"<li><code>{text(reason.code)}</code>{severity} "
                     f'<span class="muted">§{text(reason.section)} at</span> '
                     f"{_pointer(reason.path)}: {text(reason.message)}</li>")
    more = len(result.reasons) - REASONS
    if more > 0:
        items.append(f'<li class="cut">and {more:,} more reasons</li>')
    return f'<ul class="reasons">{"".join(items)}</ul>'


def _remedy_items(result: Result) -> str:
    remedies = result.remedies
    if not remedies:
        return '<span class="none">none</span>'
    items = []
    for remedy in remedies[:REASONS]:
        members = "".join(f"; {text(key)} {_value(key, value)}"
                          for key, value in remedy.as_dict().items()
                          if key not in ("action", "by", "codes"))
        items.append(f"<li><strong>{text(remedy.action)}</strong> by {text(remedy.by)} "
                     f'<span class="muted">(for {text(", ".join(remedy.codes))})</span>'
                     f"{members}</li>")
    more = len(remedies) - REASONS
    if more > 0:
        items.append(f'<li class="cut">and {more:,} more remedies</li>')
    return f'<ul class="remedies">{"".join(items)}</ul>'


def _row(result: Result, codes: Iterable[str]) -> str:
    """One registration as a table row (see the template for its attributes)."""
    status = result.status
    ident = (f"<bdi>{text(result.id)}</bdi>" if result.id is not None
             else '<span class="none">no id</span>')
    return (f'<tr class="registration" data-status="{status}" '
            f'data-codes="{html.escape(" ".join(codes))}">'
            f'<td><span class="status {status}">{status}</span></td>'
            f"<td><bdi>{text(result.source)}</bdi></td>"
            f'<td class="num">{_place(result.source, result.position)}</td>'
            f'<th scope="row">{ident}</th>'
            f"<td>{_reason_items(result)}</td><td>{_remedy_items(result)}</td></tr>\n")


class Listing:
    """The registrations with a reason, as the audit streams: every one counted under each of
    its codes, the first :data:`PER_CODE` of each code kept as its row.

    A registration is kept when one of its codes has room, and then counts as listed under
    each of its codes: a code leaves registrations out only once it has its own
    :data:`PER_CODE` listed.
    """

    def __init__(self, per_code: int = PER_CODE) -> None:
        self.per_code = per_code
        self.rows: list[str] = []
        self.carrying: dict[str, int] = {}  # registrations with a reason of the code
        self.listed: dict[str, int] = {}  # those of them kept
        self.seen = 0  # registrations with a reason (or not valid)

    def add(self, result: Result) -> None:
        self.seen += 1
        codes = sorted({reason.code for reason in result.reasons})
        carrying, listed = self.carrying, self.listed
        room = False
        for code in codes:
            carrying[code] = carrying.get(code, 0) + 1
            room = room or listed.get(code, 0) < self.per_code
        if room:
            for code in codes:
                listed[code] = listed.get(code, 0) + 1
            self.rows.append(_row(result, codes))


def audit_html(audit: Audit, batches: Iterable[Judged], stream: IO[str]) -> None:
    """The audit's page, written once every batch is in (a page's totals come first)."""
    listing = Listing()
    for batch in batches:  # only the results with a reason: the rest are counted by the audit
        for result in batch.notable:
            listing.add(result)
    conflicts = audit.conflicts()
    summary = audit.summary(len(conflicts))
    slots: dict[str, Callable[[], str | Iterable[str]]] = {
        "csp": _policy,
        "version": lambda: text(__version__),
        "title": lambda: _title(summary["summary"]),
        "lead": lambda: _lead(summary["summary"]),
        "style": lambda: _asset("audit.css"),
        "totals": lambda: _totals(summary["summary"]),
        "summary": lambda: _script_json(summary),
        "chart": lambda: _chart(summary["summary"]["codes"]),
        "codes": lambda: _codes(summary["summary"]["codes"], listing, len(conflicts)),
        "conflicts": lambda: _conflicts(conflicts),
        "left_out": lambda: _left_out(listing),
        "findings": lambda: _findings(listing),
        "made": lambda: _made(audit),
        "script": lambda: _asset("audit.js"),
    }
    for literal, slot in _template():
        stream.write(literal)
        if slot:
            filled = slots[slot]()
            if isinstance(filled, str):
                stream.write(filled)
            else:
                for piece in filled:
                    stream.write(piece)


@cache
def _template() -> tuple[tuple[str, str], ...]:
    """The template as (literal text, the slot after it) pairs; the last slot is ""."""
    parts = re.split(r"\{\{(\w+)\}\}", data.read_text("report", "audit.html"))
    parts.append("")
    return tuple((parts[i], parts[i + 1]) for i in range(0, len(parts), 2))


@cache
def _asset(name: str) -> str:
    return data.read_text("report", name)


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def _policy() -> str:
    # Nothing may be fetched (default-src 'none'); the one style and the one script run by
    # their hashes, so that nothing written into the page could run; the chart is inline SVG.
    return (f"default-src 'none'; style-src {_hash(_asset('audit.css'))}; "
            f"script-src {_hash(_asset('audit.js'))}; img-src data:; base-uri 'none'; "
            "form-action 'none'")


def _script_json(value: Any) -> str:
    # Inside a script element, "</script>" (or "<!--") would end it: JSON's own escapes keep
    # every "<", ">" and "&" out of the text.
    return (json_text(value).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026"))


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _title(summary: dict[str, Any]) -> str:
    status = summary["status"]
    return (f"Audit: {_counted(summary['total'], 'registration')}, {status['invalid']:,} "
            f"invalid, {status['indeterminate']:,} indeterminate, "
            f"{_counted(summary['conflicts'], 'conflict')}")


def _lead(summary: dict[str, Any]) -> str:
    total = summary["total"]
    status = summary["status"]
    fine = status["valid"] == total and not summary["conflicts"]
    return (f"{_counted(total, 'registration')} audited: "
            + ("every one valid, no conflict." if fine else
               f"{status['invalid']:,} invalid, {status['indeterminate']:,} indeterminate, "
               f"{_counted(summary['conflicts'], 'conflict')}."))


def _totals(summary: dict[str, Any]) -> Iterator[str]:
    def entry(ident: str, label: str, count: int, kind: str = "") -> str:
        kind = f' class="{kind}"' if kind and count else ""  # a colour for what there is
        return (f'<div{kind}><dt>{label}</dt><dd id="{ident}" data-count="{count}">'
                f"{count:,}</dd></div>\n")

    yield entry("total", "Registrations", summary["total"])
    for status in _STATUSES:
        yield entry(f"status-{status}", status.capitalize(), summary["status"][status], status)
    yield entry("conflict-count", "Conflicts", summary["conflicts"], "invalid")


def _ranked(codes: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(codes.items(), key=lambda item: (-item[1], item[0]))


def _chart(codes: dict[str, int]) -> str:
    """The most frequent codes as horizontal bars, in inline SVG (the codes table below says
    the same in numbers)."""
    top = _ranked(codes)[:CHART]
    if not top:
        return '<p class="muted">No registration carries a reason.</p>'
    row, label, bars, width = 26, 300, 380, 780
    height = row * len(top) + 8
    most = top[0][1]
    described = ", ".join(f"{code} {count:,}" for code, count in top)
    parts = [f'<svg id="codes-chart" class="chart" role="img" viewBox="0 0 {width} {height}" '
             f'aria-labelledby="codes-chart-title"><title id="codes-chart-title">The '
             f"{len(top)} most frequent codes, by reasons: {text(described, 10_000)}</title>"]
    for at, (code, count) in enumerate(top):
        y = 4 + at * row
        length = max(1.0, bars * count / most)
        parts.append(f'<text x="0" y="{y + 17}">{text(code)}</text>'
                     f'<rect class="bar" x="{label}" y="{y + 3}" width="{length:.1f}" '
                     f'height="{row - 8}"></rect>'
                     f'<text x="{label + length + 6:.1f}" y="{y + 17}">{count:,}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _codes(codes: dict[str, int], listing: Listing, conflicts: int) -> Iterator[str]:
    if not codes:
        return
    yield ('<table id="codes"><caption>Every code of the audit, most frequent first: its '
           "reasons, the registrations that carry it, how many of them the table below lists "
           "and how many it leaves out (registration.conflict counts conflicts, listed under "
           "Conflicts).</caption>\n<thead><tr><th scope=\"col\">Code</th>"
           '<th scope="col">Meaning</th><th scope="col">Section</th>'
           '<th scope="col" class="num">Reasons</th><th scope="col" class="num">Registrations'
           '</th><th scope="col" class="num">Listed</th><th scope="col" class="num">Left out'
           "</th></tr></thead>\n<tbody>\n")
    for code, count in _ranked(codes):
        entry = CODES.get(code)
        meaning, section = (entry.meaning, entry.section) if entry else ("", "")
        if code == "registration.conflict":
            carrying, listed = conflicts, min(conflicts, PER_CODE)
        else:
            carrying, listed = listing.carrying.get(code, 0), listing.listed.get(code, 0)
        yield (f'<tr><th scope="row"><code>{text(code)}</code></th><td>{text(meaning)}</td>'
               f'<td>{text(section)}</td><td class="num">{count:,}</td>'
               f'<td class="num">{carrying:,}</td><td class="num">{listed:,}</td>'
               f'<td class="num">{carrying - listed:,}</td></tr>\n')
    yield "</tbody></table>\n"


def _conflicts(conflicts: list[Conflict]) -> Iterator[str]:
    if not conflicts:
        yield '<p class="muted">No capability is registered with conflicting declarations.</p>'
        return
    shown = conflicts[:PER_CODE]
    many = len(conflicts) > 1
    yield (f"<p>{_counted(len(conflicts), 'capability IRI')} {'are each' if many else 'is'} "
           "registered with different inputs, outputs or ontology by registrations valid on "
           "their own (registration.conflict)"
           + (f"; the first {len(shown):,} are listed, {len(conflicts) - len(shown):,} left out"
              if len(shown) < len(conflicts) else "") + ".</p>\n")
    yield ('<table id="conflicts-table"><thead><tr><th scope="col">Capability</th>'
           '<th scope="col">Registered by</th><th scope="col">What differs</th></tr></thead>\n'
           '<tbody>\n')
    for conflict in shown:
        places = [f"<li><bdi>{text(source)}</bdi> {_place(source, index)}</li>"
                  for source, index in conflict.registrations[:PLACES]]
        more = len(conflict.registrations) - PLACES
        if more > 0:
            places.append(f'<li class="cut">and {more:,} more registrations</li>')
        yield (f'<tr><th scope="row"><bdi>{text(conflict.id)}</bdi></th>'
               f'<td><ul class="places">{"".join(places)}</ul></td>'
               f"<td>{_differences(conflict)}</td></tr>\n")
    yield "</tbody></table>\n"


def _differences(conflict: Conflict) -> str:
    """The members the conflict's registrations declare differently, side by side: a row per
    registration (the first PLACES), a column per member."""
    if not conflict.differences:
        return ""
    head = "".join(f'<th scope="col"><code>{text(d.member)}</code></th>'
                   for d in conflict.differences)
    rows = []
    for number, (source, index) in enumerate(conflict.registrations[:PLACES]):
        cells = "".join(f"<td><bdi>{text(declared_text(d.values[number]))}</bdi></td>"
                        for d in conflict.differences)
        rows.append(f'<tr><th scope="row"><bdi>{text(source)}</bdi> {_place(source, index)}'
                    f"</th>{cells}</tr>")
    return (f'<table class="differs"><thead><tr><th scope="col">Registration</th>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>')


def _left_out(listing: Listing) -> str:
    listed = len(listing.rows)
    left = listing.seen - listed
    if not listing.seen:
        return "No registration carries a reason."
    said = (f"{_counted(listing.seen, 'registration')} "
            f"{'carry' if listing.seen > 1 else 'carries'} a reason (not valid, or valid with a "
            f"warning); listed: {listed:,}")
    if not left:
        return said + (", every one." if listed > 1 else ".")
    return (said + f". Left out: {left:,}, since the table keeps the first {PER_CODE:,} "
            "registrations of each code, in input order (the Codes table says how many of each "
            "code it left out; the counts are exact). Every result is in "
            "<code>--format json</code>.")


def _findings(listing: Listing) -> Iterator[str]:
    if not listing.rows:
        return
    yield ('<table id="findings"><caption>Registrations that carry a reason, in input order; '
           "lines and items are counted from 1.</caption>\n<thead><tr>"
           '<th scope="col">Status</th><th scope="col">Source</th>'
           '<th scope="col" class="num">Place</th><th scope="col">Capability id</th>'
           '<th scope="col">Reasons</th><th scope="col">Remedies</th></tr></thead>\n<tbody>\n')
    yield from listing.rows
    yield "</tbody></table>\n"


def _made(audit: Audit) -> Iterator[str]:
    asked = audit.asked
    if asked is not None:
        inputs: Iterable[str] = asked.inputs
        profile: tuple[str, str] | None = asked.profile
        at = asked.at
    else:  # a caller of the library that said nothing of it: what the audit itself knows
        inputs = ()
        profile = ((audit.checker.profile.id, audit.checker.profile.revision)
                   if audit.checker is not None else None)
        at = datetime.now(UTC)
    listed = "".join(f"<li><bdi>{text(name)}</bdi></li>" for name in inputs)
    yield ("<dt>Inputs</dt><dd>" + (f'<ul id="made-inputs" class="inputs">{listed}</ul>' if listed
                                    else '<ul id="made-inputs" class="inputs"></ul>'
                                         '<span class="none">not recorded</span>') + "</dd>\n")
    ident, revision = profile if profile is not None else ("", "")
    yield f'<dt>Profile</dt><dd id="made-profile"><bdi>{text(ident)}</bdi></dd>\n'
    yield f'<dt>Revision</dt><dd id="made-revision">{text(revision)}</dd>\n'
    instant = at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    yield f'<dt>Instant</dt><dd id="made-at"><time datetime="{instant}">{instant}</time></dd>\n'
    yield f'<dt>ioa-semantic</dt><dd id="made-version">{text(__version__)}</dd>\n'
