"""``ioa-check audit --format html``: the page's counts are the JSON summary's, everything from
the input is escaped and shown as it is, what the page keeps is bounded and the page says what
it left out, it fetches nothing and runs only its own script (by hash), and its bytes do not
depend on the number of worker processes. The page in a real browser: test_browser_report.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic.reporters import audit_html

from support import AT, IOA_CHECK, registration_63

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import traffic

# A file name a browser would read as markup if it were not escaped (no "/" in a file name).
HOSTILE_FILE = '<img src=x onerror="window.pwned=3">.jsonl'
RLO_ID = "https://e.org/\u202eexe.txt"  # shown as https://e.org/<U+202E>exe.txt


def _variant(**members: Any) -> dict[str, Any]:
    doc = registration_63()
    for key, value in members.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def hostile_registrations() -> list[dict[str, Any]]:
    """Registrations that carry markup, quotes, entities, controls and bidirectional
    overrides into what the page shows: ids, messages, paths, remedies."""
    return [
        _variant(**{"@id": "https://e.org/cap<script>window.pwned=1</script>"}),
        _variant(**{"@id": RLO_ID, "outputs": None}),
        _variant(**{"@id": "cs:Cap\"'&amp;<b>x</b>", "inputs": ["<img src=x onerror=window.pwned=2>"]}),
        _variant(**{"<script>window.pwned=4</script>": "x", "\u0000\u0007bell": "y"}),
        _variant(**{"@id": "cs:\u0645\u0631\u062d\u0628\u0627\u200f\u2066x", "outputs": []}),
        _variant(**{"@id": "https://e.org/" + "a" * 5000 + "<"}),
        # Two valid registrations of one IRI (with a hidden character in it: a zero-width
        # joiner; an override would make it no IRI, RFC 3987 4.1) that differ: a conflict.
        _variant(**{"@id": "https://e.org/\u200dcap", "inputs": ["text/html"]}),
        _variant(**{"@id": "https://e.org/\u200dcap", "inputs": ["text/csv"]}),
    ]


def write_corpus(folder: Path, size: int = 3000, senders: int = 300) -> Path:
    """A generated directory's traffic (bench/traffic.py: about 4% invalid) and a file of
    hostile registrations beside it, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    traffic.write(folder / "traffic.jsonl", traffic.registrations(size, senders))
    with (folder / HOSTILE_FILE).open("w", encoding="utf-8") as handle:
        for doc in hostile_registrations():
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return folder


def audit(folder: Path, fmt: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([IOA_CHECK, "audit", ".", "--profile", "cs-translation", "--format",
                           fmt, "--at", AT, *extra], cwd=folder, capture_output=True, timeout=600)


def json_summary(folder: Path) -> dict[str, Any]:
    proc = audit(folder, "json", "--jobs", "1")
    assert proc.returncode == 1, proc.stderr.decode()
    summary: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return summary


def json_results(folder: Path) -> list[dict[str, Any]]:
    proc = audit(folder, "json", "--jobs", "1")
    return [row for row in map(json.loads, proc.stdout.splitlines()) if "status" in row]


class Page(HTMLParser):
    """The page read as a browser's parser reads it: every element with its attributes, the
    text of each element that has an id, each table's rows of cell texts (by the table's id),
    and whether every element that opens closes."""

    VOID = frozenset({"meta", "link", "input", "br", "img", "hr", "rect"})

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[tuple[str, str | None]] = []
        self.texts: dict[str, list[str]] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self.unbalanced: list[str] = []
        self.rows: list[dict[str, Any]] = []  # of the findings table: status, codes, cells
        self._table: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.elements.append((tag, attributes))
        if tag in self.VOID:
            return
        ident = attributes.get("id")
        self.open.append((tag, ident))
        if ident:
            self.texts[ident] = []
        if tag == "table":
            self._table.append(ident or "")
            self.tables[ident or ""] = []
        elif tag == "tr" and self._table:
            self.tables[self._table[-1]].append([])
            if attributes.get("class") == "registration":
                self.rows.append({"status": attributes["data-status"],
                                  "codes": str(attributes["data-codes"]).split(),
                                  "cells": self.tables[self._table[-1]][-1]})
        elif tag in ("td", "th") and self._table and self.tables[self._table[-1]]:
            self.tables[self._table[-1]][-1].append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if not self.open or self.open[-1][0] != tag:
            self.unbalanced.append(tag)
            return
        self.open.pop()
        if tag == "table":
            self._table.pop()

    def handle_data(self, data: str) -> None:
        for _, ident in self.open:
            if ident:
                self.texts[ident].append(data)
        if self._table and any(tag in ("td", "th") for tag, _ in self.open):
            rows = self.tables[self._table[-1]]
            if rows and rows[-1]:
                rows[-1][-1] += data

    def text(self, ident: str) -> str:
        return "".join(self.texts[ident])

    def counts(self, table: str) -> dict[str, list[str]]:
        """A table's body rows by their first cell."""
        return {row[0]: row[1:] for row in self.tables[table][1:]}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("html-corpus"))


@pytest.fixture(scope="module")
def report(corpus: Path) -> str:
    proc = audit(corpus, "html", "--output", "report.html")
    assert proc.returncode == 1 and proc.stdout == b"" and proc.stderr == b"", proc.stderr
    return (corpus / "report.html").read_text(encoding="utf-8")


def test_the_counts_are_the_json_summarys(corpus: Path, report: str) -> None:
    summary = json_summary(corpus)
    page = Page(report)
    assert json.loads(page.text("summary-data")) == summary
    counts = summary["summary"]
    shown = {tag_id: attrs.get("data-count") for tag, attrs in page.elements
             if (tag_id := attrs.get("id")) and "data-count" in attrs}
    assert shown == {"total": str(counts["total"]),
                     "status-valid": str(counts["status"]["valid"]),
                     "status-invalid": str(counts["status"]["invalid"]),
                     "status-indeterminate": str(counts["status"]["indeterminate"]),
                     "conflict-count": str(counts["conflicts"])}
    assert page.text("total") == f"{counts['total']:,}"
    assert counts["total"] == 3000 + len(hostile_registrations())
    assert 0.02 < counts["status"]["invalid"] / counts["total"] < 0.08
    # Every code of the summary has its row, with its count of reasons.
    codes_table = page.counts("codes")
    assert {code: int(row[2].replace(",", "")) for code, row in codes_table.items()} == counts["codes"]


def test_every_registration_with_a_reason_is_listed_when_no_code_is_over_the_bound(
        corpus: Path, report: str) -> None:
    results = [r for r in json_results(corpus) if r["reasons"] or r["status"] != "valid"]
    page = Page(report)
    assert max(sum(1 for r in results if code in {x["code"] for x in r["reasons"]})
               for code in {x["code"] for r in results for x in r["reasons"]}) <= audit_html.PER_CODE
    assert [(row["status"], row["codes"]) for row in page.rows] == [
        (r["status"], sorted({x["code"] for x in r["reasons"]})) for r in results]
    assert "every one" in page.text("left-out")


def test_what_comes_from_the_input_is_escaped_and_shown_as_it_is(report: str) -> None:
    page = Page(report)
    assert page.unbalanced == [] and page.open == []
    # The page's own two scripts (the summary's data and the filters) and nothing else; no
    # element from the input, no event handler attribute.
    assert [attrs.get("id") or attrs.get("type") for tag, attrs in page.elements
            if tag == "script"] == ["summary-data", None]
    assert not [tag for tag, _ in page.elements if tag in ("img", "b", "iframe", "object")]
    assert not [name for _, attrs in page.elements for name in attrs if name.startswith("on")]
    # No raw control or override reaches the page: each is shown as its code point.
    assert not re.search("[\u0000-\u0008\u202a-\u202e\u2066-\u2069\u200f]", report)
    hostile = [row for row in page.rows if HOSTILE_FILE in row["cells"][1]]
    ids = [row["cells"][3] for row in hostile]
    assert ids[:5] == [
        "https://e.org/cap<script>window.pwned=1</script>",
        "https://e.org/<U+202E>exe.txt",
        "https://example.org/onto/cs#Cap\"'&amp;<b>x</b>",
        "https://example.org/onto/cs#TechTranslation",
        "https://example.org/onto/cs#\u0645\u0631\u062d\u0628\u0627<U+200F><U+2066>x",
    ]
    long_id = ids[5]
    assert long_id == ("https://e.org/" + "a" * (audit_html.CHARS - 14)
                       + f"… ({14 + 5001 - audit_html.CHARS:,} more characters)")
    reasons = "".join(row["cells"][4] for row in hostile)
    assert "found the string '<img src=x onerror=window.pwned=2>'" in reasons
    assert "'<script>window.pwned=4</script>' is not mapped by the context" in reasons
    assert "<U+0000><U+0007>bell" in reasons
    # The conflict between the two registrations of the hidden-character IRI, named as it is.
    assert "https://e.org/<U+200D>cap" in page.text("conflicts-table")
    assert f"./{HOSTILE_FILE} line 7" in page.text("conflicts-table")


def assert_fetches_nothing(report: str) -> None:
    """A report page runs only its own script and style (allowed by their hashes in its
    Content-Security-Policy) and names no address a browser would fetch."""
    page = Page(report)
    (policy,) = [attrs["content"] for tag, attrs in page.elements
                 if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"]
    assert policy is not None
    style = re.search(r"<style>(.*?)</style>", report, re.S)
    script = re.search(r"<script>(.*?)</script>", report, re.S)
    assert style and script

    def digest(source: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"

    assert policy.startswith("default-src 'none';")
    assert f"style-src {digest(style.group(1))};" in policy
    assert f"script-src {digest(script.group(1))};" in policy
    # No address anywhere the browser would fetch: no src, no stylesheet, no remote href.
    assert not [attrs for _, attrs in page.elements if "src" in attrs]
    assert [attrs["href"] for tag, attrs in page.elements if tag == "link"] == ["data:,"]
    assert all(str(attrs["href"]).startswith("#") for tag, attrs in page.elements
               if tag == "a")
    assert "http://" not in report.replace("http://www.w3.org", "")  # no external asset


def test_the_page_fetches_nothing_and_runs_only_its_own_script_and_style(report: str) -> None:
    assert_fetches_nothing(report)


def test_what_it_made_it_with(corpus: Path, report: str) -> None:
    from ioa_semantic._version import __version__

    page = Page(report)
    assert page.text("made-inputs") == "."
    assert page.text("made-profile") == "https://example.org/profiles/cs-translation"
    assert page.text("made-revision") == "1"
    assert page.text("made-at") == AT
    assert page.text("made-version") == __version__


def test_the_bytes_are_the_same_whatever_the_number_of_workers(corpus: Path, report: str) -> None:
    proc = audit(corpus, "html", "--jobs", "2")
    assert proc.returncode == 1
    assert proc.stdout.decode() == report


def line(doc: dict[str, Any]) -> str:
    return json.dumps(doc) + "\n"


def test_the_page_keeps_the_first_of_each_code_and_says_how_many_it_left_out(tmp_path: Path) -> None:
    over = audit_html.PER_CODE + 150
    rows = [line(_variant(**{"@id": f"cs:Missing{k}", "outputs": None})) for k in range(over)]
    # Registrations with both codes are listed while either code has room.
    rows += [line(_variant(**{"@id": f"cs:Both{k}", "outputs": None, "inputs": ["x"]}))
             for k in range(3)]
    many = [f"bad{k}" for k in range(audit_html.REASONS + 5)]  # fifteen reasons of one code
    rows.append(line(_variant(**{"@id": "cs:Many", "inputs": many})))
    (tmp_path / "r.jsonl").write_text("".join(rows))
    proc = audit(tmp_path, "html")
    assert proc.returncode == 1, proc.stderr.decode()
    page = Page(proc.stdout.decode())
    codes = [row["codes"] for row in page.rows]
    assert codes == [["registration.missing"]] * audit_html.PER_CODE + [
        ["registration.media-type", "registration.missing"]] * 3 + [["registration.media-type"]]
    table = page.counts("codes")
    # registration.missing: 353 reasons in 353 registrations; 203 listed (three with a code
    # that had room), 150 left out.
    assert table["registration.missing"][2:] == ["353", "353", "203", "150"]
    assert table["registration.media-type"][2:] == ["18", "4", "4", "0"]
    assert "Left out: 150" in page.text("left-out")
    many_row = page.rows[-1]["cells"][4]
    assert many_row.count("registration.media-type") == audit_html.REASONS
    assert "and 5 more reasons" in many_row


def test_a_clean_audit_says_so(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(line(registration_63()))
    proc = audit(tmp_path, "html")
    assert proc.returncode == 0, proc.stderr.decode()
    page = Page(proc.stdout.decode())
    assert page.unbalanced == [] and page.rows == []
    assert "findings" not in page.texts and "conflicts-table" not in page.texts
    assert page.text("left-out") == "No registration carries a reason."
    assert "every one valid, no conflict" in proc.stdout.decode()


def test_the_listing_counts_each_code_and_keeps_while_one_has_room() -> None:
    from ioa_semantic._codes import finding
    from ioa_semantic.audit.judge import Result

    def result(*codes: str) -> Result:
        return Result("r.jsonl", 0, None, "invalid",
                      tuple(finding(code, "m", path="") for code in codes))

    listing = audit_html.Listing(per_code=2)
    for codes in [("json.syntax",), ("json.syntax", "registration.missing"), ("json.syntax",),
                  ("registration.missing", "json.syntax"), ("registration.missing",),
                  ("registration.missing",)]:
        listing.add(result(*codes))
    assert listing.seen == 6 and len(listing.rows) == 3
    assert listing.carrying == {"json.syntax": 4, "registration.missing": 4}
    assert listing.listed == {"json.syntax": 3, "registration.missing": 2}


def test_without_at_the_page_is_dated_now_and_a_bad_instant_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(line(registration_63()))
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--format", "html"], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    made_at = Page(proc.stdout.decode()).text("made-at")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", made_at), made_at
    for bad in ("2026-06-01T00:00:00", "yesterday"):
        proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                               "--format", "html", "--at", bad], cwd=tmp_path,
                              capture_output=True, timeout=60)
        assert proc.returncode == 2 and proc.stdout == b"", bad


def test_a_library_audit_reports_what_it_knows_of_itself(tmp_path: Path) -> None:
    import io

    from ioa_semantic import Checker
    from ioa_semantic.audit.inputs import pieces
    from ioa_semantic.audit.run import Audit
    from ioa_semantic.reporters.audit import AUDIT_REPORTERS

    (tmp_path / "r.jsonl").write_text(line(_variant(outputs=None)))
    run = Audit(Checker("cs-translation"))
    out = io.StringIO()
    AUDIT_REPORTERS["html"](run, run.batches(pieces([str(tmp_path / "r.jsonl")],
                                                    limits=run.judging.limits)), out)
    page = Page(out.getvalue())
    assert page.text("made-profile") == "https://example.org/profiles/cs-translation"
    assert "not recorded" in page.text("made-with")
    assert [row["codes"] for row in page.rows] == [["registration.missing"]]
