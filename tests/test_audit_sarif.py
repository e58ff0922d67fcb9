"""``ioa-check audit --format sarif``: SARIF 2.1.0 that code scanning tools use well, through
the installed command (docs/audit.md, "SARIF").

Every report is validated against the official SARIF 2.1.0 schema (``support.sarif_of``).
Each result is placed at the line and column of the member its reason's path names, in the
text the audit judged; the rules are those that fired, each linking to its code on the docs'
codes page; the invocation carries the command's exit status; a reason whose correction is a
value the receiver defines carries it as a fix, any other remedy stays advice.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioa_semantic._codes import CODES
from ioa_semantic.audit.places import places

from support import IOA_CHECK, ROOT, registration_63, sarif_of

DOCS = "https://ioa-semantic.readthedocs.io/en/latest/"


def sarif(args: list[str], cwd: Path) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([IOA_CHECK, "audit", *args, "--profile", "cs-translation",
                           "--format", "sarif"], cwd=cwd, capture_output=True, timeout=60)
    assert proc.stderr == b"", proc.stderr.decode()
    return proc.returncode, sarif_of(proc.stdout)


def variant(**changes: Any) -> dict[str, Any]:
    doc = registration_63()
    doc.update(changes)
    return doc


def where(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """Line and column (UTF-16 code units, 1-based) of the ``nth`` ``needle`` in ``text``."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    start = text.rfind("\n", 0, at) + 1
    return text.count("\n", 0, at) + 1, len(text[start:at].encode("utf-16-le")) // 2 + 1


def region(result: dict[str, Any], number: int = 0) -> tuple[int, int]:
    found = result["locations"][number]["physicalLocation"]["region"]
    return found["startLine"], found["startColumn"]


def test_a_json_lines_result_is_at_its_records_line_and_the_members_column(tmp_path: Path) -> None:
    # A character beyond the BMP before the member: two UTF-16 code units, SARIF's columns.
    records = [registration_63(), variant(label="\U0001F310 translation", inputs=["text"])]
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    (tmp_path / "r.jsonl").write_text(body, encoding="utf-8")
    status, log = sarif(["r.jsonl"], tmp_path)
    assert status == 1
    run = log["runs"][0]
    assert run["columnKind"] == "utf16CodeUnits"
    (result,) = run["results"]
    assert result["ruleId"] == "registration.media-type"
    assert result["locations"][0]["logicalLocations"] == [{"fullyQualifiedName": "/inputs/0"}]
    record = json.dumps(records[1], ensure_ascii=False)
    line, column = where(record, '"text"')
    assert region(result) == (2, column) and line == 1
    assert column == record.index('"text"') + 2  # one code point, two code units


def test_a_json_file_and_an_array_item_are_placed_in_the_file(tmp_path: Path) -> None:
    one = json.dumps(variant(inputs=["text"]), indent=2)
    (tmp_path / "one.json").write_text(one)
    many = json.dumps([registration_63(), variant(outputs=["pdf"])], indent=4)
    (tmp_path / "many.json").write_text(many)
    _, log = sarif(["one.json", "many.json"], tmp_path)
    placed = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: region(r)
              for r in log["runs"][0]["results"]}
    assert placed == {"one.json": where(one, '"text"'), "many.json": where(many, '"pdf"')}
    assert placed["many.json"][0] > 20  # in the second item, past the first


def test_a_path_the_text_holds_is_placed_and_one_it_does_not_is_the_documents_start(
        tmp_path: Path) -> None:
    # The registration's own pointer "" (inputs missing) is its first character, on line 3;
    # text that is not JSON holds no member: its region is the document's, line 1.
    missing = registration_63()
    del missing["inputs"]
    (tmp_path / "late.json").write_text("\n\n  " + json.dumps(missing))
    (tmp_path / "broken.json").write_text("\n\n{not json")
    (tmp_path / "r.jsonl").write_text(json.dumps(registration_63()) + "\n  {not json\n")
    _, log = sarif(["late.json", "broken.json", "r.jsonl"], tmp_path)
    placed = [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
               region(r)) for r in log["runs"][0]["results"]]
    assert placed == [("registration.missing", "late.json", (3, 3)),
                      ("json.syntax", "broken.json", (1, 1)),
                      ("json.syntax", "r.jsonl", (2, 1))]


def test_the_rules_are_those_that_fired_each_linking_to_its_code(tmp_path: Path) -> None:
    body = "".join(json.dumps(r) + "\n" for r in [
        variant(inputs=["text"]), variant(outputs=[5]), variant(inputs=["text"]),
        variant(**{"@id": "cs:Other"}), variant(**{"@id": "cs:Other"}, outputs=["text/html"])])
    (tmp_path / "r.jsonl").write_text(body)
    status, log = sarif(["r.jsonl"], tmp_path)
    run = log["runs"][0]
    rules, results = run["tool"]["driver"]["rules"], run["results"]
    fired = list(dict.fromkeys(r["ruleId"] for r in results))
    assert fired == ["registration.media-type", "registration.type", "registration.conflict"]
    assert [rule["id"] for rule in rules] == fired and len(CODES) > 3 * len(rules)
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    codes_page = (ROOT / "docs" / "codes.md").read_text()
    for rule in rules:
        assert rule["helpUri"] == f"{DOCS}codes/#{rule['id']}"
        assert f'<span id="{rule["id"]}"></span>' in codes_page  # the anchor it links to
    assert run["invocations"] == [{"executionSuccessful": True, "exitCode": status,
                                   "exitCodeDescription":
                                   "some registration invalid, or a conflict"}] and status == 1


def test_the_docs_url_is_configurable_and_a_clean_audit_fires_no_rule(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text(json.dumps(variant(inputs=["text"])) + "\n")
    (tmp_path / "good.jsonl").write_text(json.dumps(registration_63()) + "\n")
    _, log = sarif(["bad.jsonl", "--docs-url", "https://docs.example.org/ioa"], tmp_path)
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["helpUri"] == "https://docs.example.org/ioa/codes/#registration.media-type"
    status, log = sarif(["good.jsonl"], tmp_path)
    run = log["runs"][0]
    assert status == 0 and run["results"] == [] and run["tool"]["driver"]["rules"] == []
    assert run["invocations"][0]["exitCode"] == 0


def test_a_library_audit_states_no_invocation_for_the_command_line_makes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exit status is the command line's (cli/audit.py gives the reporter the
    invocation): a library caller's report is the command's without its invocation."""
    import io

    from ioa_semantic import Checker
    from ioa_semantic.audit.inputs import pieces
    from ioa_semantic.audit.run import Audit
    from ioa_semantic.reporters.audit import AUDIT_REPORTERS

    (tmp_path / "r.jsonl").write_text(json.dumps(variant(inputs=["text"])) + "\n")
    monkeypatch.chdir(tmp_path)  # the sources named as the command names them
    run = Audit(Checker("cs-translation"))
    out = io.StringIO()
    AUDIT_REPORTERS["sarif"](run, run.batches(pieces(["r.jsonl"],
                                                     limits=run.judging.limits, place=True),
                                              place=True), out)
    log = sarif_of(out.getvalue().encode())
    status, command = sarif(["r.jsonl"], tmp_path)
    assert status == 1 and command["runs"][0].pop("invocations")[0]["exitCode"] == 1
    assert log == command and "invocations" not in log["runs"][0]


def test_a_textual_remedy_is_a_fix_that_makes_the_registration_valid(tmp_path: Path) -> None:
    redefined = registration_63()
    redefined["@context"]["inputs"] = "ioa:inputz"  # a baseline term defined otherwise
    text = json.dumps(redefined)
    (tmp_path / "r.jsonl").write_text(json.dumps(variant(inputs=["text"])) + "\n" + text + "\n")
    _, log = sarif(["r.jsonl"], tmp_path)
    advice, textual = log["runs"][0]["results"]
    # Advice only (what must change, not to what): in the message, no fix.
    assert advice["ruleId"] == "registration.media-type" and "fixes" not in advice
    assert 'Remedy: correct-input (by the sender; path "/inputs/0").' in advice["message"]["text"]
    assert textual["ruleId"] == "jsonld.term-redefinition"
    assert "Remedy" not in textual["message"]["text"]
    ((change,),) = [fix["artifactChanges"] for fix in textual["fixes"]]
    assert change["artifactLocation"] == {"uri": "r.jsonl"}
    (replacement,) = change["replacements"]
    deleted = replacement["deletedRegion"]
    assert deleted["startLine"] == deleted["endLine"] == 2
    start, end = deleted["startColumn"] - 1, deleted["endColumn"] - 1
    assert text[start:end] == '"ioa:inputz"'
    fixed = text[:start] + replacement["insertedContent"]["text"] + text[end:]
    (tmp_path / "fixed.jsonl").write_text(fixed + "\n")
    proc = subprocess.run([IOA_CHECK, "audit", "fixed.jsonl", "--profile", "cs-translation",
                           "--format", "json"], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stdout.decode()
    assert json.loads(proc.stdout.splitlines()[0])["status"] == "valid"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=20)


def _pointers(value: Any, pointer: str = "") -> Any:
    yield pointer, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list) else ()
    for key, child in items:
        name = str(key).replace("~", "~0").replace("/", "~1")
        yield from _pointers(child, f"{pointer}/{name}")


@settings(max_examples=200, deadline=None)
@given(_JSON, st.booleans(), st.booleans())
def test_every_member_is_placed_at_its_value_in_the_text(value: Any, indented: bool,
                                                         ascii_only: bool) -> None:
    """The position-tracking pass places every member of any JSON text: the span it gives
    holds that member's value (names with ``~``, ``/``, escapes and characters beyond the
    BMP included)."""
    text = json.dumps(value, indent=2 if indented else None, ensure_ascii=ascii_only)
    pointers = dict(_pointers(value))
    found = places(text, pointers)
    assert set(found) == set(pointers)
    lines = text.split("\n")
    for pointer, place in found.items():
        def offset(line: int, column: int) -> int:
            # From UTF-16 columns back to an index into the line's characters.
            row, units, at = lines[line - 1], 1, 0
            while units < column:
                units += 2 if ord(row[at]) > 0xFFFF else 1
                at += 1
            return sum(len(r) + 1 for r in lines[:line - 1]) + at
        start = offset(place.value_line, place.value_column)
        end = offset(place.end_line, place.end_column)
        assert json.loads(text[start:end]) == pointers[pointer]


def test_a_message_shows_what_the_input_would_hide_from_its_reader(tmp_path: Path) -> None:
    """A code-scanning page shows the message: a bidi override that a profile's shape gives
    as its ``sh:message`` would reorder what a person reads there; it is shown as its code
    point, as in the text report (the properties keep the data as it was)."""
    from test_audit_constraints import PREFIXES, profile

    shapes = PREFIXES + (
        'ex:Labelled a sh:NodeShape ; sh:targetClass ioa:Capability ;\n'
        '    sh:property [ sh:path rdfs:label ; sh:minCount 1 ;'
        ' sh:message "needs a label \u202eLEBAL" ] .\n')
    house = profile(tmp_path, shapes)
    unlabelled = registration_63()
    del unlabelled["label"]
    unlabelled["@id"] = "cs:HouseTranslation"  # the vocabulary labels cs:TechTranslation
    (tmp_path / "r.jsonl").write_text(json.dumps(unlabelled) + "\n")
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", str(house), "--format",
                           "sarif"], cwd=tmp_path, capture_output=True, timeout=60)
    (result,) = sarif_of(proc.stdout)["runs"][0]["results"]
    assert result["ruleId"] == "constraint.shape-violated"
    assert "needs a label <U+202E>LEBAL" in result["message"]["text"], result["message"]
    assert "\u202e" not in result["message"]["text"]
