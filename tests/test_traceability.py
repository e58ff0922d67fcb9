"""Requirements traceability: every ID of ../shared/reference/draft-requirements.md is named
by a test that exercises it, or listed here with the reason it is not (R-* as in the file).

Also the checks that cover requirements no other module needed: candidates are descriptive
(R-7.4-1), renegotiation hints (R-6.4-7, R-8-I1), and no I/O but policy-gated fetches
(R-8-I2).
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ioa_semantic import Checker, Verdict

from support import CONFORMANCE, SHARED, dumps, envelope_62

CHECKLIST = SHARED / "reference" / "draft-requirements.md"
TESTS = Path(__file__).resolve().parent
AT = datetime(2026, 6, 1, tzinfo=UTC)

NOT_COVERED = {
    "R-6.5-2": "binds a sender (emit corrected envelopes); nothing for a validator to check",
    "R-6.5-3": "the tool has no draft-revision compatibility switch that could turn an "
               "indeterminate into compatible; there is nothing to exercise",
    "R-7.1-6": "no negotiated-fallback feature: a fallback profile is simply another Checker, "
               "which evaluates everything in full",
    "R-9-I3": "the library takes no task id: the decision cache is keyed on the envelope's "
              "bytes and what the Checker holds, so the same envelope in another task gets the "
              "same (recomputable) decision; binding results to tasks is left to the carrier",
    "R-11-I2": "the ioa namespace is fixed by the 6.1 baseline context shipped as data; a "
               "configurable namespace is not implemented",
}

pytestmark = pytest.mark.skipif(not CHECKLIST.exists(), reason="../shared is not present")


def _requirement_ids() -> set[str]:
    return set(re.findall(r"^\| (R-[0-9][0-9A-Za-z.\-]*) \|", CHECKLIST.read_text(), re.M))


def _named_by_tests() -> set[str]:
    named: set[str] = set()
    pattern = re.compile(r"R-[0-9]+(?:\.[0-9]+)?-I?[0-9]+[a-z]?")
    for path in TESTS.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".json") and path != SENTENCES:
            text = path.read_text(errors="ignore")
            if path.name == Path(__file__).name:
                # The explanations below name what is *not* covered; they do not count.
                start = text.index("NOT_COVERED = {")
                text = text[:start] + text[text.index("\n}\n", start):]
            named |= set(pattern.findall(text))
    return named


def _coverage() -> dict[str, list[str]]:
    """Each requirement ID and the test files (or case folders) that name it."""
    pattern = re.compile(r"R-[0-9]+(?:\.[0-9]+)?-I?[0-9]+[a-z]?")
    where: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("*")):
        # The sentences' holders are what the tests name, not a test themselves.
        if not path.is_file() or path.suffix not in (".py", ".json") or path in (
                Path(__file__), SENTENCES):
            continue
        name = str(path.parent.relative_to(TESTS)) if path.name == "case.json" else path.name
        for ident in sorted(set(pattern.findall(path.read_text(errors="ignore")))):
            where.setdefault(ident, []).append(name)
    return where


DRAFT = SHARED / "reference" / "ioa-semantic-interaction-draft.txt"
SENTENCES = TESTS / "draft_sentences.json"
_KEYWORD = re.compile(r"\b(must|should|may)( not)?\b", re.IGNORECASE)


def draft_sentences() -> list[tuple[str, str]]:
    """(section, sentence) of every sentence of the draft's sections 5 to 7 and 12 that says
    MUST, SHOULD or MAY in any case. A paragraph of the draft is one line ending in a
    pilcrow (code blocks have none); a sentence ends at a full stop before a capital."""
    found: list[tuple[str, str]] = []
    section = None
    for line in DRAFT.read_text().splitlines():
        heading = re.match(r"^(\d+)\.(\d+)\. ", line)
        if heading:
            section = f"{heading.group(1)}.{heading.group(2)}"
            continue
        if section is None or int(section.split(".")[0]) not in (5, 6, 7, 12):
            continue
        if not line.endswith("\u00b6"):
            continue
        paragraph = line[:-1].lstrip("\u2022 ").strip()
        for sentence in re.split(r"(?<=[.])\s+(?=[A-Z])", paragraph):
            if _KEYWORD.search(sentence):
                found.append((section, sentence))
    return found


def _holds(holder: str, covered: dict[str, list[str]]) -> bool:
    """Whether a holder of a sentence exists: a requirement ID some test names, a case
    folder, or a test function."""
    if holder.startswith("R-"):
        return bool(covered.get(holder))
    if holder.startswith("cases/"):
        return (TESTS / holder / "case.json").exists()
    file, _, name = holder.partition("::")
    path = TESTS.parent / file
    return path.exists() and f"def {name}(" in path.read_text()


def _sentence_rows() -> list[str]:
    entries = json.loads(SENTENCES.read_text())["sentences"]
    lines = ["## The draft's sentences", "",
             "Every sentence of sections 5 to 7 and 12 of the draft that says MUST, SHOULD or "
             "MAY (in any case), extracted from the draft's text, with what holds it "
             "(`tests/draft_sentences.json`): requirement IDs of the checklist below, case "
             "folders, tests; or whom the sentence binds where it binds no validator.", "",
             "| section | keyword | sentence | held by |", "|---|---|---|---|"]
    for entry in entries:
        keywords = sorted({m.group(0).upper() for m in _KEYWORD.finditer(entry["sentence"])})
        held = (", ".join(f"`{h}`" for h in entry["holders"]) if entry.get("holders")
                else f"binds {entry['binds']}")
        lines.append(f"| {entry['section']} | {', '.join(keywords)} | "
                     f"{entry['sentence'].replace('|', '&#124;')} | {held} |")
    return lines


def render_matrix() -> str:
    """docs/conformance.md: every normative sentence of the draft and what holds it; every
    requirement of the checklist, its keyword, and what covers it or why not."""
    rows = re.findall(r"^\| (R-[0-9][0-9A-Za-z.\-]*) \| ([^|]*) \| ([^|]*) \|",
                      CHECKLIST.read_text(), re.M)
    covered = _coverage() | {i: ["tests/test_traceability.py"] for i in _named_here()}
    lines = ["# Conformance matrix", "",
             "Generated by `python tests/test_traceability.py` from the draft "
             "(`../shared/reference/ioa-semantic-interaction-draft.txt`), "
             "`tests/draft_sentences.json`, `../shared/reference/draft-requirements.md` and the "
             "tests; `tests/test_traceability.py` fails when this file is stale, and when a "
             "sentence has no holder.", "", *_sentence_rows(), "",
             "## The requirements checklist", "",
             "| requirement | keyword | statement | covered by |", "|---|---|---|---|"]
    for ident, keyword, text in rows:
        tests = covered.get(ident)
        cell = (", ".join(f"`{t}`" for t in tests[:6]) + (f" and {len(tests) - 6} more"
                                                          if len(tests) > 6 else "")
                if tests else f"not tested: {NOT_COVERED.get(ident, '?')}")
        lines.append(f"| {ident} | {keyword.strip()} | {text.strip()} | {cell} |")
    return "\n".join(lines) + "\n"


def _named_here() -> set[str]:
    text = Path(__file__).read_text()
    start = text.index("NOT_COVERED = {")
    text = text[:start] + text[text.index("\n}\n", start):]
    return set(re.findall(r"R-[0-9]+(?:\.[0-9]+)?-I?[0-9]+[a-z]?", text))


MATRIX = TESTS.parent / "docs" / "conformance.md"


def test_the_conformance_matrix_is_current() -> None:
    assert MATRIX.exists() and MATRIX.read_text() == render_matrix(), (
        "docs/conformance.md is stale: run python tests/test_traceability.py")


def test_every_normative_sentence_of_the_draft_has_a_holder() -> None:
    """Issue 34: the matrix is built from the draft's own text. Each sentence of sections 5
    to 7 and 12 that says MUST, SHOULD or MAY is listed once, as the draft words it, and is
    held by a requirement some test names, a case, a test, or says whom it binds."""
    extracted = draft_sentences()
    assert len(extracted) >= 55, "the draft was not read"
    entries = json.loads(SENTENCES.read_text())["sentences"]
    listed = [(e["section"], e["sentence"]) for e in entries]
    assert sorted(listed) == sorted(extracted), (
        f"in the draft, not listed: {sorted(set(extracted) - set(listed))}; "
        f"listed, not in the draft: {sorted(set(listed) - set(extracted))}")
    covered = _coverage() | {i: ["tests/test_traceability.py"] for i in _named_here()}
    unheld = [(e["section"], e["sentence"][:60], [h for h in e.get("holders", ())
                                                   if not _holds(h, covered)])
              for e in entries if not (e.get("binds") or (e.get("holders") and all(
                  _holds(h, covered) for h in e["holders"])))]
    assert unheld == [], unheld


def test_every_requirement_is_covered_or_explained() -> None:
    ids = _requirement_ids()
    assert len(ids) >= 80, "the checklist was not read"
    uncovered = ids - _named_by_tests()
    assert uncovered == set(NOT_COVERED), (
        f"named by no test and not explained: {sorted(uncovered - set(NOT_COVERED))}; "
        f"explained but now covered or gone: {sorted(set(NOT_COVERED) - uncovered)}")


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="../shared is not present")
def test_candidates_are_descriptive_and_never_decide() -> None:
    """R-7.4-1, R-7.4-2, R-10-I2: a confidence is shown as a candidate; trust decides."""
    case = CONFORMANCE / "draft-S2-untrusted-high-confidence"
    checker = Checker("cs-translation", capabilities=[case / "provider.jsonld"],
                      alignments=[case / "align0.json"])
    decision = checker.check((case / "envelope.jsonld").read_bytes(),
                             params={"sourceLang": "zh", "targetLang": "en"}, at=AT)
    assert decision.verdict is Verdict.INDETERMINATE
    (candidate,) = decision.candidates
    assert candidate["confidence"] == 0.99 and "never decides" in candidate["note"]
    assert decision.as_dict()["authorization"] == "not-evaluated"


def test_rejections_say_what_to_correct_or_renegotiate(tmp_path: Path) -> None:
    """R-6.4-7, R-8-I1, R-7.1-8: a rejection names the reason and how to correct it, and the
    deciding side keeps incompatible and indeterminate apart."""
    import subprocess

    from support import IOA_CHECK

    doc = envelope_62()
    doc["profileContext"]["termBindings"].append(
        {"@type": "ioa:TermBinding", "term": "LLM", "sense": "cs:Other"})
    (tmp_path / "e.jsonld").write_bytes(dumps(doc))
    proc = subprocess.run([IOA_CHECK, "e.jsonld", "--profile", "cs-translation", "--at",
                           "2026-06-01T00:00:00Z"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 4
    assert "envelope.ambiguous-binding" in proc.stdout
    assert "correct or renegotiate" in proc.stdout and "fix:" in proc.stdout
    law = envelope_62()
    law["profileContext"]["domain"] = "https://example.org/onto/law#Law"
    unknown = envelope_62()
    unknown["intentRef"] = "cs:Unknown"
    checker = Checker("cs-translation")
    assert checker.check(dumps(law), at=AT).verdict is Verdict.INCOMPATIBLE
    assert checker.check(dumps(unknown), at=AT).verdict is Verdict.INDETERMINATE


def test_a_check_does_no_network_io_when_retrieval_is_off() -> None:
    """R-8-I2, R-6.1-9: the library reads its arguments and its shipped data; a remote
    context with retrieval off opens no connection (seen by an audit hook on socket.connect)."""
    connects: list[object] = []
    watching = [True]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if watching[0] and event == "socket.connect":
            connects.append(args)

    sys.addaudithook(hook)
    try:
        doc = envelope_62()
        doc["@context"] = ["https://example.org/ioa/context.jsonld", doc["@context"]]
        decision = Checker("cs-translation").check(json.dumps(doc).encode(), at=AT)
    finally:
        watching[0] = False
    assert decision.verdict is Verdict.INDETERMINATE
    assert connects == []


if __name__ == "__main__":
    MATRIX.parent.mkdir(exist_ok=True)
    MATRIX.write_text(render_matrix())
    print(f"wrote {MATRIX}")
