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

The page is rendered by Jinja2 with autoescaping on, from templates that are package data
(``data/report/audit*.html``; a row of the registrations' table is rendered as it is kept), as
the trace report is. Its style and its script are package data too: they are inlined and
allowed by their hashes in the page's Content-Security-Policy, so the page fetches nothing and
runs no script but its own. Everything from the input (ids, sources, messages, paths,
remedies' members, the inputs' names) is escaped (the templates' ``text`` filter), and the
characters that hide or reorder text (controls, bidirectional overrides and isolates, zero
width characters, tag characters) are shown as their code points (``<U+202E>``): a reader sees
what a registration holds, not what it would make the page look like.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import cache
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..audit.judge import Judged, Result
    from ..audit.run import Audit

from .. import data
from .._codes import CODES
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


def _row(result: Result, codes: list[str]) -> Any:
    """One registration as a table row (see audit-row.html), rendered as it is kept."""
    from markupsafe import Markup

    return Markup(_environment().get_template("audit-row.html").render(result=result,
                                                                        codes=codes))


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
    from markupsafe import Markup

    listing = Listing()
    for batch in batches:  # only the results with a reason: the rest are counted by the audit
        for result in batch.notable:
            listing.add(result)
    conflicts = audit.conflicts()
    summary = audit.summary(len(conflicts))
    counts = summary["summary"]
    template = _environment().get_template("audit.html")
    # The style, the script and the policy are the package's own; the summary is JSON made
    # safe inside a script element. Everything else is escaped as the template writes it.
    stream.writelines(template.generate(
        csp=Markup(_policy()), version=__version__, title=_title(counts), lead=_lead(counts),
        style=Markup(_asset("audit.css")), script=Markup(_asset("audit.js")),
        totals=_totals(counts), summary_json=Markup(_script_json(summary)),
        chart=_chart(counts["codes"]), codes=_codes(counts["codes"], listing, len(conflicts)),
        conflicts=conflicts, listing=listing, made=_made(audit)))


@cache
def _environment() -> Any:
    """The report's templates (data/report), autoescaped, with the filters that write a
    string from the input (``text``), a count (``number``, ``counted``), a remedy's member
    (``compact_json``) and what a registration declares of a member (``declared``, a
    conflict's), and a registration's place (``place``)."""
    from jinja2 import Environment, FunctionLoader, select_autoescape
    from markupsafe import Markup

    environment = Environment(
        loader=FunctionLoader(lambda name: data.read_text("report", name)),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    environment.filters.update(
        text=lambda value, limit=CHARS: Markup(text(value, limit)),
        number=lambda count: f"{count:,}", counted=_counted,
        declared=lambda value: Markup(text(declared_text(value))),
        compact_json=lambda value: json_text(value, separators=(", ", ": ")))
    environment.globals.update(place=_place, REASONS=REASONS, PLACES=PLACES,
                               PER_CODE=PER_CODE)
    return environment


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


def _totals(summary: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    """(element id, label, count, the status whose colour it takes when not 0)."""
    return [("total", "Registrations", summary["total"], ""),
            *((f"status-{status}", status.capitalize(), summary["status"][status], status)
              for status in _STATUSES),
            ("conflict-count", "Conflicts", summary["conflicts"], "invalid")]


def _ranked(codes: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(codes.items(), key=lambda item: (-item[1], item[0]))


def _chart(codes: dict[str, int]) -> dict[str, Any] | None:
    """The most frequent codes' bars (see audit-chart.html): each (code, count, top, length),
    in a picture of ``width`` by ``height``; None when no code was found."""
    top = _ranked(codes)[:CHART]
    if not top:
        return None
    row, label, bars, width = 26, 300, 380, 780
    most = top[0][1]
    return {"row": row, "label": label, "width": width, "height": row * len(top) + 8,
            "described": ", ".join(f"{code} {count:,}" for code, count in top),
            "bars": [(code, count, 4 + at * row, max(1.0, bars * count / most))
                     for at, (code, count) in enumerate(top)]}


def _codes(codes: dict[str, int], listing: Listing,
           conflicts: int) -> list[tuple[str, str, str, int, int, int]]:
    """Every code, most frequent first: (code, meaning, section, reasons, registrations that
    carry it, those listed)."""
    rows = []
    for code, count in _ranked(codes):
        entry = CODES.get(code)
        meaning, section = (entry.meaning, entry.section) if entry else ("", "")
        if code == "registration.conflict":
            carrying, listed = conflicts, min(conflicts, PER_CODE)
        else:
            carrying, listed = listing.carrying.get(code, 0), listing.listed.get(code, 0)
        rows.append((code, meaning, section, count, carrying, listed))
    return rows


def _made(audit: Audit) -> dict[str, Any]:
    """What the audit was made with: its inputs, profile and revision, and instant."""
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
    ident, revision = profile if profile is not None else ("", "")
    return {"inputs": tuple(inputs), "profile": ident, "revision": revision,
            "at": at.astimezone(UTC).isoformat().replace("+00:00", "Z")}
