"""An audit's conflicts say what differs: the members the registrations of one capability IRI
declare differently, side by side, with each registration's value, in every format (text,
JSON, HTML, SARIF), through the installed command (docs/audit.md, "Conflicts")."""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from support import IOA_CHECK, registration_63, sarif_of

SAME = "https://example.org/onto/cs#TechTranslation"


def _ontology(version: str) -> dict[str, Any]:
    doc = registration_63()
    doc["@context"]["ontologyId"] = {"@id": "ioa:ontologyId", "@type": "@id"}
    doc["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
    doc["ontologyId"] = "https://example.org/onto/agent-core"
    doc["ontologyVersion"] = version
    return doc


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three registrations of one IRI: the 6.3 one, one with other outputs, one under another
    ontology version; and a fourth IRI registered twice the same (no conflict)."""
    pdf = registration_63()
    pdf["outputs"] = ["application/PDF"]  # compared (and so shown) in lower case
    other = registration_63()
    other["@id"] = "cs:Other"
    rows = [registration_63(), other, pdf, other, _ontology("2.0")]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def audit(folder: Path, fmt: str) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--format", fmt], cwd=folder, capture_output=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == b"", proc.stderr.decode()
    return proc


EXPECTED = [{"member": "/outputs", "values": [["text/plain"], ["application/pdf"],
                                              ["text/plain"]]},
            {"member": "/ontologyVersion", "values": [["1.0"], ["1.0"], ["2.0"]]}]


def test_the_json_conflict_line_lists_the_differing_members_with_each_registrations_value(
        folder: Path) -> None:
    lines = [json.loads(line) for line in audit(folder, "json").stdout.splitlines()]
    (conflict,) = [line["conflict"] for line in lines if "conflict" in line]
    assert conflict["id"] == SAME
    assert [r["index"] for r in conflict["registrations"]] == [0, 2, 4]
    # Only what differs: inputs and the ontology's id are the same in all three.
    assert conflict["differences"] == EXPECTED


def test_the_text_report_shows_each_differing_member_side_by_side(folder: Path) -> None:
    out = audit(folder, "text").stdout.decode().splitlines()
    at = next(n for n, line in enumerate(out) if line.startswith("CONFLICT"))
    assert out[at + 1:at + 3] == [
        "  /outputs: r.jsonl:1 text/plain | r.jsonl:3 application/pdf | r.jsonl:5 text/plain",
        "  /ontologyVersion: r.jsonl:1 1.0 | r.jsonl:3 1.0 | r.jsonl:5 2.0"]


class _Differs(HTMLParser):
    """The cells of each table.differs, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("class", "differs") in attrs:
            self.tables.append([])
        elif self.tables and tag == "tr":
            self.tables[-1].append([])
        elif self.tables and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def test_the_html_report_has_a_table_of_what_differs_per_conflict(folder: Path) -> None:
    page = _Differs()
    page.feed(audit(folder, "html").stdout.decode())
    (table,) = page.tables
    assert table == [["Registration", "/outputs", "/ontologyVersion"],
                     ["r.jsonl line 1", "text/plain", "1.0"],
                     ["r.jsonl line 3", "application/pdf", "1.0"],
                     ["r.jsonl line 5", "text/plain", "2.0"]]


def test_the_sarif_conflict_says_what_differs(folder: Path) -> None:
    log = sarif_of(audit(folder, "sarif").stdout)
    (conflict,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "registration.conflict"]
    assert conflict["properties"]["differences"] == EXPECTED
    assert "/outputs: r.jsonl:1 text/plain | r.jsonl:3 application/pdf" in (
        conflict["message"]["text"])
