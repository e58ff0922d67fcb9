"""Trust at the boundary: what a hostile sender tried, held to the contract.

Malformed input is never compatible or valid, whichever engine or command reads it; no input
crashes either engine, the audit or a ``--capability`` file; every reason is reported; a
returned Decision is a value. The data-driven cases (tests/cases) cover each class through
the library and the CLI; these tests say what the cases cannot (counts, sharing, exit
statuses of configuration files, an audit that goes on).
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker, Verdict
from ioa_semantic.audit.judge import judge
from ioa_semantic.audit.workers import kinds_for

from support import IOA_CHECK, envelope_62, registration_63

AT = datetime(2026, 6, 1, tzinfo=UTC)
ENGINES = {name: Checker("cs-translation", engine=name, cache_size=0)
           for name in ("compiled", "reference")}


def _both(envelope: dict[str, Any] | bytes) -> list[Any]:
    data = envelope if isinstance(envelope, bytes) else json.dumps(envelope).encode()
    return [checker.check(data, at=AT) for checker in ENGINES.values()]


@pytest.mark.parametrize("engine", ENGINES)
def test_three_missing_members_are_three_reasons_each_naming_its_member(engine: str) -> None:
    envelope = envelope_62()
    for key in ("ontologyVersion", "capabilityRefs", "intentRef"):
        del envelope[key]
    decision = ENGINES[engine].check(json.dumps(envelope).encode(), at=AT)
    assert decision.verdict is Verdict.INVALID
    missing = [f for f in decision.findings if f.code == "envelope.missing"]
    assert len(missing) == 3
    for key in ("ontologyVersion", "capabilityRefs", "intentRef"):
        assert sum(key in f.message for f in missing) == 1, key


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bare_binding_reference_misses_each_of_its_members(engine: str) -> None:
    envelope = envelope_62()
    envelope["profileContext"]["termBindings"] = [{"@id": "https://example.org/x"}]
    decision = ENGINES[engine].check(json.dumps(envelope).encode(), at=AT)
    assert decision.verdict is Verdict.INVALID
    named = sorted(f.message.partition(":")[0] for f in decision.findings
                   if f.code == "envelope.missing")
    assert named == ["@type", "sense", "term"]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_empty_capabilityRefs_is_one_reason_that_says_empty(engine: str) -> None:
    envelope = envelope_62()
    envelope["capabilityRefs"] = []
    decision = ENGINES[engine].check(json.dumps(envelope).encode(), at=AT)
    assert [f.code for f in decision.findings] == ["envelope.missing"]
    assert "empty" in decision.findings[0].message
    assert "type" not in decision.findings[0].code


def test_a_returned_decision_cannot_be_changed_nor_change_another() -> None:
    checker = Checker("cs-translation", alignments=["cs-doc-v1"])
    first = checker.check(json.dumps(envelope_62()).encode(), at=AT)
    with pytest.raises(TypeError):
        first.dependencies["profile"]["id"] = "changed"
    with pytest.raises((TypeError, AttributeError)):
        first.dependencies["parameters"]["sourceLang"] = "xx"
    plain = first.as_dict()
    plain["dependencies"]["profile"]["id"] = "changed"
    plain["dependencies"]["capabilities"].append("changed")
    second = checker.check(json.dumps(envelope_62()).encode(), at=AT)  # a cached decision
    assert second.as_dict()["dependencies"]["profile"]["id"] == checker.profile.id
    assert "changed" not in second.as_dict()["dependencies"]["capabilities"]
    assert second == first


def test_the_decision_cache_hands_out_values_too() -> None:
    checker = Checker("cs-translation")
    data = json.dumps(envelope_62()).encode()
    first = checker.check(data, at=AT, source="a")
    first.as_dict()["reasons"].append({"code": "changed"})
    assert checker.check(data, at=AT, source="b").as_dict()["reasons"] == []


# Inputs pyld fails on with a TypeError or an IndexError, and IRIs pyoxigraph refuses: each is
# invalid in both engines, never an exception.
CRASHERS = {
    "term @id object": lambda e: e["@context"].__setitem__("note", {"@id": {}}),
    "term @id array": lambda e: e["@context"].__setitem__("note", {"@id": []}),
    "term @id number": lambda e: e["@context"].__setitem__("note", {"@id": 5}),
    "@list in a node": lambda e: e["profileContext"].__setitem__("@list", ["x"]),
    "space in a reference": lambda e: e.__setitem__("intentRef", "cs:Translate Doc"),
    "space in an absolute IRI": lambda e: e.__setitem__(
        "intentRef", "https://example.org/onto/cs#Translate Doc"),
    "control in a sense": lambda e: e["profileContext"]["termBindings"][0].__setitem__(
        "sense", "cs:Large\u0001Model"),
    "bad escape in a domain": lambda e: e["profileContext"].__setitem__("domain", "cs:%zz"),
}


@pytest.mark.parametrize("name", CRASHERS)
def test_inputs_that_crashed_are_invalid_in_both_engines(name: str) -> None:
    envelope = envelope_62()
    CRASHERS[name](envelope)
    compiled, reference = _both(envelope)
    assert compiled.verdict is reference.verdict is Verdict.INVALID
    assert {f.code for f in compiled.findings} == {f.code for f in reference.findings}


def test_a_capability_file_with_a_bad_iri_is_a_configuration_error(tmp_path: Path) -> None:
    registration = registration_63()
    registration["@id"] = "cs:Tech Translation"
    path = tmp_path / "provider.jsonld"
    path.write_text(json.dumps(registration))
    envelope = tmp_path / "envelope.jsonld"
    envelope.write_text(json.dumps(envelope_62()))
    run = subprocess.run([IOA_CHECK, str(envelope), "--profile", "cs-translation",
                          "--capability", str(path), "--at", "2026-06-01T00:00:00Z"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    assert "Traceback" not in run.stderr and "jsonld.invalid-iri" in run.stderr


def test_one_bad_registration_never_stops_an_audit(tmp_path: Path) -> None:
    lines = []
    for i, ident in enumerate(["cs:A", "cs:Tech Translation", "cs:B", "cs:C|D", "cs:E"]):
        registration = registration_63()
        registration["@id"] = ident
        registration["label"] = f"capability {i}"
        lines.append(json.dumps(registration))
    path = tmp_path / "registrations.jsonl"
    path.write_text("\n".join(lines) + "\n")
    output = tmp_path / "out.jsonl"
    for extra in ([], ["--state", str(tmp_path / "state.json"), "--output", str(output)]):
        run = subprocess.run([IOA_CHECK, "audit", str(path), "--profile", "cs-translation",
                              "--format", "json", *extra],
                             capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert run.returncode == 1, run.stderr
        text = output.read_text() if extra else run.stdout
        out = [json.loads(line) for line in text.splitlines()]
        assert [r["status"] for r in out[:5]] == ["valid", "invalid", "valid", "invalid", "valid"]
        assert out[-1]["summary"]["total"] == 5
        assert out[-1]["summary"]["codes"] == {"jsonld.invalid-iri": 2}


@pytest.mark.parametrize("tail", [b"\x0c", b"\x0b", b"\x00", b"\xc2\xa0", b"\xe2\x80\xa8", b" x"])
def test_an_audit_line_with_trailing_bytes_is_invalid_in_any_order(tail: bytes) -> None:
    checker = Checker("cs-translation")
    good = [json.dumps(dict(registration_63(), **{"@id": f"cs:R{i}"})).encode()
            for i in range(3)]
    bad = json.dumps(dict(registration_63(), **{"@id": "cs:Bad"})).encode() + tail
    for order in ([*good, bad], [bad, *good]):
        kinds = kinds_for(checker)
        results = {text: judge(checker, text, "r", i, kinds)[0] for i, text in enumerate(order)}
        assert results[bad].status == "invalid"
        assert results[bad].reasons[0].code.startswith("json.")
