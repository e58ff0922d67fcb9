"""``ioa-check impact --format sarif`` and ``--format html`` (issue 40, item 2), through the
installed command: the SARIF report is valid against the SARIF 2.1.0 schema, has one result
per flip located at the decision's line of the log; the HTML page has the JSON summary's
counts, its transition matrix and one row per flip, escapes everything from the log and
fetches nothing."""

from __future__ import annotations

import io
import json
import subprocess
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker
from ioa_semantic._codes import CODES
from ioa_semantic.impact import Change, DecisionLog, Impact
from ioa_semantic.reporters import impact_html
from ioa_semantic.reporters.impact import REMOVED_ONLY

from support import IOA_CHECK, ROOT, sarif_of
from test_audit_html import Page, assert_fetches_nothing

EXAMPLES = ROOT / "examples"
ENVELOPE = (EXAMPLES / "envelope-12.1.jsonld").read_bytes()
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
LANGUAGES = {"sourceLang": "zh", "targetLang": "en"}
# A source a browser would read as markup, with a right-to-left override in it.
HOSTILE = '<img src=x onerror="window.pwned=3">\u202e.jsonld'
# A log whose name is no URI reference as it stands (a space, a "#").
SPACED = "none #1.jsonl"
# The change: a second revision of the shipped artifact, valid through 2027, and 2027.
CHANGE = ["--artifact", "v2.json", "--at", "2027-01-01T00:00:00Z"]


def _log(folder: Path, name: str, alignments: tuple[str, ...],
         checks: list[tuple[str, dict[str, str]]]) -> None:
    checker = Checker("cs-translation", capabilities=[str(EXAMPLES / "provider-12.1.jsonld")],
                      alignments=alignments, recorder=DecisionLog(str(folder / name)))
    for source, params in checks:
        checker.check(ENVELOPE, params=params, at=JUNE, source=source)


def make_corpus(folder: Path) -> Path:
    """Logs in ``folder`` of three decisions the change flips three ways: compatible to
    compatible (a reason added), indeterminate to indeterminate (likewise), indeterminate to
    compatible (a reason removed, none added)."""
    _log(folder, "offered.jsonl", ("cs-doc-v1",), [("a.jsonld", LANGUAGES), ("b.jsonld", {})])
    _log(folder, SPACED, (), [(HOSTILE, LANGUAGES)])
    shipped = json.loads(files("ioa_semantic.data").joinpath("alignments/cs-doc-v1.json")
                         .read_text())
    (folder / "v2.json").write_text(json.dumps(
        {**shipped, "revision": "2", "validUntil": "2027-12-31T00:00:00Z"}))
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("impact-reports"))


def impact(folder: Path, fmt: str, *change: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([IOA_CHECK, "impact", "offered.jsonl", SPACED, *(change or CHANGE),
                           "--format", fmt], cwd=folder, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def lines(corpus: Path) -> list[dict[str, Any]]:
    proc = impact(corpus, "json")
    assert proc.returncode == 1, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_sarif_has_one_result_per_flip_at_its_line_of_the_log(
        corpus: Path, lines: list[dict[str, Any]]) -> None:
    proc = impact(corpus, "sarif")
    assert proc.returncode == 1 and proc.stderr == b"", proc.stderr
    (run,) = sarif_of(proc.stdout)["runs"]
    flips, summary = lines[:-1], lines[-1]
    assert len(run["results"]) == len(flips) == 3
    for result, flip in zip(run["results"], flips, strict=True):
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["region"]["startLine"] == flip["line"]
        before, after = flip["before"]["verdict"], flip["after"]["verdict"]
        assert f"{before} \u2192 {after}" in result["message"]["text"]
        assert "caused by " + "; ".join(flip["causes"]) in result["message"]["text"]
        assert result["properties"]["added"] == flip["added"]
        assert result["properties"]["removed"] == flip["removed"]
        added = [r["code"] for r in flip["added"] if r["severity"] == "error"] or [
            r["code"] for r in flip["added"]]
        assert result["ruleId"] == (added[0] if added else REMOVED_ONLY)
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in run["results"]]
    assert uris == ["offered.jsonl", "offered.jsonl", "none%20%231.jsonl"]
    # A flip that only removes a reason is a note of its own rule; one that adds an info
    # reason is a note of that reason's code, described by the registry.
    assert [(r["ruleId"], r["level"]) for r in run["results"]] == [
        ("alignment.expired", "note"), ("alignment.expired", "note"), (REMOVED_ONLY, "note")]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert list(rules) == ["alignment.expired", REMOVED_ONLY]
    assert rules["alignment.expired"]["shortDescription"]["text"] == (
        CODES["alignment.expired"].meaning)
    assert run["properties"] == summary


def test_sarif_of_a_change_that_flips_nothing_has_no_result(corpus: Path) -> None:
    proc = impact(corpus, "sarif", "--at", "2026-07-01T00:00:00Z")
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    (run,) = sarif_of(proc.stdout)["runs"]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
    assert run["properties"]["summary"]["flipped"] == 0


@pytest.fixture(scope="module")
def report(corpus: Path) -> str:
    proc = impact(corpus, "html")
    assert proc.returncode == 1 and proc.stderr == b"", proc.stderr
    return proc.stdout.decode("utf-8")


def test_the_page_shows_the_json_summarys_counts_and_transitions(
        report: str, lines: list[dict[str, Any]]) -> None:
    summary = lines[-1]["summary"]
    page = Page(report)
    assert json.loads(page.text("summary-data")) == lines[-1]
    shown = {ident: attrs.get("data-count") for tag, attrs in page.elements
             if tag == "dd" and (ident := attrs.get("id")) and "data-count" in attrs}
    assert shown == {"decisions": "3", "rejudged": "3", "flipped": "3", "unchanged": "0",
                     "skipped": "0", "unjudgeable": "0"}
    matrix = {(attrs["data-before"], attrs["data-after"]): int(str(attrs["data-count"]))
              for tag, attrs in page.elements if tag == "td" and "data-after" in attrs
              and "data-count" in attrs}
    assert len(matrix) == 16
    assert {k: v for k, v in matrix.items() if v} == {
        tuple(t.split(" -> ")): n for t, n in summary["transitions"].items()}
    assert page.text("change").strip() == "".join(summary["change"])
    assert {row[0]: row[1] for row in page.tables["causes"][1:]} == {
        cause: str(count) for cause, count in summary["causes"].items()}


def test_the_page_lists_each_flip_with_its_reasons_and_causes(
        report: str, lines: list[dict[str, Any]]) -> None:
    page = Page(report)
    flips = lines[:-1]
    rows = [attrs for tag, attrs in page.elements if tag == "tr" and attrs.get("class") == "flip"]
    assert [(r["data-before"], r["data-after"], str(r["data-codes"]).split()) for r in rows] == [
        (f["before"]["verdict"], f["after"]["verdict"],
         sorted({x["code"] for x in f["added"] + f["removed"]})) for f in flips]
    cells = page.tables["flips"][1:]
    assert "line 2" in cells[1][2] and "offered.jsonl" in cells[1][2]
    assert "alignment.no-accepted-mapping" in cells[2][4] and cells[2][3] == "none"
    assert "artifact added" in cells[2][5]
    assert "every one listed" in page.text("left-out")


def test_what_comes_from_the_log_is_escaped_and_the_page_fetches_nothing(report: str) -> None:
    page = Page(report)
    assert page.unbalanced == [] and page.open == []
    assert not [tag for tag, _ in page.elements if tag in ("img", "iframe", "object")]
    assert not [name for _, attrs in page.elements for name in attrs if name.startswith("on")]
    assert "\u202e" not in report
    assert '<img src=x onerror="window.pwned=3"><U+202E>.jsonld' in page.tables["flips"][3][2]
    assert_fetches_nothing(report)


def test_the_page_keeps_the_first_flips_of_each_transition_and_says_so(
        corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact_html, "PER_TRANSITION", 1)
    monkeypatch.chdir(corpus)
    # Two logs of the same decisions: two flips of each transition.
    run = Impact(["offered.jsonl", "offered.jsonl"],
                 Change(added=("v2.json",), at=datetime(2027, 1, 1, tzinfo=UTC)))
    stream = io.StringIO()
    impact_html.impact_html(run, stream)
    page = Page(stream.getvalue())
    rows = [attrs for tag, attrs in page.elements if tag == "tr" and attrs.get("class") == "flip"]
    assert [(r["data-before"], r["data-after"]) for r in rows] == [
        ("compatible", "compatible"), ("indeterminate", "indeterminate")]
    assert page.text("flipped") == "4"
    assert "4 decisions flipped; listed: 2" in page.text("left-out")


def test_the_text_report_gives_each_flip_its_lines_and_shows_controls_as_code_points(
        tmp_path: Path) -> None:
    # Each flip: its transition, source and place; each reason added (+) and removed (-);
    # its causes; one line each, in that order (a flip's lines are printed together). The
    # right-to-left override in a source is shown as a code point, never written raw.
    folder = make_corpus(tmp_path)
    done = subprocess.run([IOA_CHECK, "impact", "offered.jsonl", SPACED, *CHANGE, "--format",
                           "text"], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={"NO_COLOR": "1", "PATH": ""})
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    flips = [i for i, line in enumerate(lines) if " -> " in line and ", line " in line]
    assert len(flips) == 3
    for start, end in zip(flips, [*flips[1:], lines.index(next(
            line for line in lines if line.startswith("change:")))], strict=True):
        body = lines[start + 1:end]
        assert body[-1].startswith("  caused by ") and all(
            line.startswith(("  + ", "  - ")) for line in body[:-1]) and len(body) >= 2
    assert "\u202e" not in done.stdout and "U+202E" in done.stdout.upper()
