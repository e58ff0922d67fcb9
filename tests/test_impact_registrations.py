"""``ioa-check impact`` over an audit's registrations: its JSON output is the before, its
inputs what is judged again (issue 40, item 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRATION = json.loads((ROOT / "examples" / "registration-6.3.jsonld").read_text())
SHIPPED = (ROOT / "ioa_semantic/data/profiles/cs-translation.ttl").read_text()
TRUSTED = "iop:trustedIssuer <https://example.org/mapping-authority> ."
CS = "https://example.org/onto/cs#"


def registration(ident: str, **members: Any) -> str:
    return json.dumps({**REGISTRATION, "@id": ident, **members})


@pytest.fixture
def audited(tmp_path: Path) -> dict[str, str]:
    """Four registrations audited under the shipped profile: one carries a member the
    profile does not define (invalid), two declare cs:Twice differently (a conflict)."""
    inputs = tmp_path / "registrations.jsonl"
    inputs.write_text("\n".join([
        registration("cs:One"), registration("cs:Noted", note="translated by hand"),
        registration("cs:Twice"), registration("cs:Twice", outputs=["application/pdf"]),
    ]) + "\n")
    report = tmp_path / "audit.jsonl"
    assert main(["audit", str(inputs), "--profile", "cs-translation", "--format", "json",
                 "--output", str(report), "--jobs", "1"]) == 1
    notes = tmp_path / "notes.ttl"
    notes.write_text(SHIPPED.replace(TRUSTED, TRUSTED[:-1] + '; iop:ignorableTerm "note" .'))
    law = tmp_path / "law.ttl"
    law.write_text(SHIPPED.replace("iop:permittedDomain cs:ComputerScience ;",
                                   "iop:permittedDomain cs:ComputerScience, law:Law ;"))
    added = tmp_path / "added.jsonl"
    added.write_text(registration("cs:One", inputs=["text/html"]) + "\n"
                     + registration("cs:New") + "\n")
    return {"inputs": str(inputs), "report": str(report), "notes": str(notes),
            "law": str(law), "added": str(added)}


def impact(audited: dict[str, str], *args: str) -> list[str]:
    return ["impact", "--audit-report", audited["report"], "--registrations",
            audited["inputs"], "--audited-profile", "cs-translation", *args]


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_a_profile_revision_the_audit_reads_flips_the_registrations_it_concerns(
        audited: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    status = main(impact(audited, "--profile", audited["notes"], "--format", "json"))
    *flips, summary = lines(capsys.readouterr().out)
    assert status == 1
    (flip,) = flips
    assert (flip["source"], flip["index"], flip["id"]) == (audited["inputs"], 1, CS + "Noted")
    assert flip["transition"] == "invalid -> valid"
    assert [r["code"] for r in flip["added"]] == ["jsonld.ignored-term"]
    assert [r["code"] for r in flip["removed"]] == ["jsonld.dropped-term"]
    assert flip["causes"][0].startswith("profile https://example.org/profiles/cs-translation")
    assert summary["summary"]["registrations"] == 4
    assert (summary["summary"]["rejudged"], summary["summary"]["flipped"]) == (4, 1)


def test_a_revision_of_what_an_audit_does_not_read_skips_every_registration(
        audited: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(impact(audited, "--profile", audited["law"], "--at",
                       "2027-01-01T00:00:00Z")) == 0
    out = capsys.readouterr().out
    assert "4 registrations: 0 judged again (0 flipped, 0 unchanged), 4 skipped" in out
    assert "what an audit reads of the profile is unchanged" in out
    assert "no registration's judgement depends on the instant" in out


def test_registrations_added_are_judged_with_those_of_their_iris_and_their_conflicts(
        audited: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    status = main(impact(audited, "--add-registrations", audited["added"], "--format",
                         "json"))
    *flips, summary = lines(capsys.readouterr().out)
    assert status == 1
    assert [(f.get("id") or f["conflict"], f["transition"]) for f in flips] == [
        (CS + "One", "absent -> valid"), (CS + "New", "absent -> valid"),
        (CS + "One", "no conflict -> conflict")]
    assert {(r["source"], r["index"]) for r in flips[2]["after"]["registrations"]} == {
        (audited["inputs"], 0), (audited["added"], 0)}
    # Only cs:One's registration is read again: the others cannot meet the added ones.
    assert (summary["summary"]["rejudged"], sum(summary["summary"]["skipped"].values())) == (
        3, 3)
    assert (summary["summary"]["flipped"], summary["summary"]["conflicts"]) == (2, 1)


def test_the_worker_processes_report_what_one_process_reports(
        audited: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    args = impact(audited, "--profile", audited["notes"], "--add-registrations",
                  audited["added"], "--format", "json")
    main([*args, "--jobs", "1"])
    alone = capsys.readouterr().out
    main([*args, "--jobs", "2"])
    assert capsys.readouterr().out == alone


@pytest.mark.parametrize("fmt", ["text", "sarif", "html"])
def test_every_reporter_renders_registrations(
        audited: dict[str, str], capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    assert main(impact(audited, "--profile", audited["notes"], "--add-registrations",
                       audited["added"], "--format", fmt)) == 1
    out = capsys.readouterr().out
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        assert [r["ruleId"] for r in results] == [
            "jsonld.ignored-term", "impact.reasons-removed", "impact.reasons-removed",
            "registration.conflict"]
        assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    elif fmt == "html":
        assert "<h1>Impact of a change on audited registrations</h1>" in out
        assert "3 registrations flipped and 1 conflict changed, every one listed." in out
        assert 'data-before="invalid" data-after="valid"' in out
    else:
        assert "invalid -> valid https://example.org/onto/cs#Noted" in out
        assert "3 flipped" in out and "; 1 conflict changed" in out


def test_a_report_of_other_inputs_is_a_configuration_error(
        audited: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(registration("cs:One") + "\n")
    args = impact(audited, "--profile", audited["notes"])
    args[args.index(audited["inputs"])] = str(other)
    assert main(args) == 2
    assert "is not of these inputs" in capsys.readouterr().err


@pytest.mark.parametrize("args", [
    ["impact", "x.jsonl", "--registrations", "r.jsonl", "--at", "2027-01-01T00:00:00Z"],
    ["impact", "x.jsonl", "--audit-report", "a.jsonl", "--at", "2027-01-01T00:00:00Z"],
    ["impact", "--audit-report", "a.jsonl", "--at", "2027-01-01T00:00:00Z"],
    ["impact", "--at", "2027-01-01T00:00:00Z"],
])
def test_usage_errors_are_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2
    assert capsys.readouterr().out == ""


def test_the_limits_the_audit_was_made_with_are_judged_under_again(
        tmp_path: Path, audited: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "long.jsonl"
    inputs.write_text(registration("cs:Long", note="x" * 2000) + "\n")
    report = tmp_path / "long-audit.jsonl"
    assert main(["audit", str(inputs), "--profile", "cs-translation", "--format", "json",
                 "--output", str(report), "--jobs", "1", "--max-bytes", "1000"]) == 1
    args = ["impact", "--audit-report", str(report), "--registrations", str(inputs),
            "--audited-profile", "cs-translation", "--profile", audited["notes"],
            "--format", "json"]
    # Over the audit's limit it stays invalid, whatever the profile lets be ignored.
    assert main([*args, "--max-bytes", "1000"]) == 0
    assert lines(capsys.readouterr().out)[-1]["summary"]["unchanged"] == 1
    # Under the default limit, the note would be ignored: a flip the audit never made.
    assert main(args) == 1
    assert lines(capsys.readouterr().out)[0]["transition"] == "invalid -> valid"


def test_limits_name_an_audit_not_a_log(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["impact", "x.jsonl", "--at", "2027-01-01T00:00:00Z", "--max-bytes", "10"])
    assert stopped.value.code == 2
    assert "--audit-report" in capsys.readouterr().err
