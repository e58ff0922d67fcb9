"""The named queries over a dataset that holds many artifacts and registrations at once.

A query that is right for one artifact can be wrong for many (a join that mixes one
artifact's rules with another's versions, a condition read from the wrong rule). Here one
applicable artifact hides among many that each fail one requirement, and every exclusion
must name the right reason. Covers R-7.2-1..R-7.2-6, R-7.3-1, R-7.3-2.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker, Verdict

from support import CONFORMANCE

CASE = CONFORMANCE / "draft-12.1-accepted-mapping"
pytestmark = pytest.mark.skipif(not CASE.exists(), reason="../shared is not present")
AT = datetime(2026, 6, 1, tzinfo=UTC)
PARAMS = {"sourceLang": "zh", "targetLang": "en"}


def _artifact(**changes: object) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((CASE / "align0.json").read_text())
    rule_changes = changes.pop("rule", {})
    conditions = changes.pop("conditions", None)
    doc.update(changes)
    doc["mappingRules"][0].update(rule_changes)
    if conditions is not None:
        doc["mappingRules"][0]["conditions"] = conditions
    return doc


# Each decoy fails exactly one requirement; the code is what the checker must say.
DECOYS = {
    "untrusted": (_artifact(assertedBy="https://elsewhere.example/issuer"), "alignment.untrusted"),
    "expired": (_artifact(validUntil="2026-05-31T00:00:00Z"), "alignment.expired"),
    "source-version": (_artifact(sourceOntologyVersion="1.1"), "alignment.inapplicable"),
    "target-version": (_artifact(targetOntologyVersion="2.1"), "alignment.inapplicable"),
    "other-from": (_artifact(rule={"from": "https://example.org/onto/cs#Other"}),
                   "alignment.inapplicable"),
    "other-to": (_artifact(rule={"to": "https://example.net/onto/doc#Other"}),
                 "alignment.inapplicable"),
    "reverse-only": (_artifact(direction="target-to-source"), "alignment.inapplicable"),
    "condition-false": (_artifact(conditions={"targetLang": "fr"}), "alignment.inapplicable"),
    "malformed": (_artifact(revision=""), "alignment.malformed"),
}


def _write(tmp_path: Path, name: str, doc: dict[str, Any], index: int) -> Path:
    doc = copy.deepcopy(doc)
    if isinstance(doc.get("artifactId"), str):
        doc["artifactId"] = f"https://example.org/align/{name}-{index}"
    path = tmp_path / f"{name}-{index}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def offered(tmp_path: Path) -> list[Path]:
    paths = []
    for copy_index in range(4):
        for name, (doc, _) in DECOYS.items():
            paths.append(_write(tmp_path, name, doc, copy_index))
    paths.insert(17, CASE / "align0.json")
    return paths


def test_one_applicable_artifact_among_many_decoys(offered: list[Path]) -> None:
    checker = Checker("cs-translation", capabilities=[CASE / "provider.jsonld"], alignments=offered)
    decision = checker.check((CASE / "envelope.jsonld").read_bytes(), params=PARAMS, at=AT)
    assert decision.verdict is Verdict.COMPATIBLE, decision.findings
    (evidence,) = decision.evidence
    assert evidence["artifactId"] == "https://example.org/align/cs-doc-v1"
    excluded = {item["artifactId"]: item["code"] for item in decision.excluded}
    assert len(decision.excluded) == len(DECOYS) * 4
    for copy_index in range(4):
        for name, (_, code) in DECOYS.items():
            key = f"https://example.org/align/{name}-{copy_index}" if name != "malformed" else None
            if key is not None:
                assert excluded[key] == code, name


def test_two_applicable_among_many_are_ambiguous(offered: list[Path], tmp_path: Path) -> None:
    second = _write(tmp_path, "second", _artifact(), 0)
    checker = Checker("cs-translation", capabilities=[CASE / "provider.jsonld"],
                      alignments=[*offered, second])
    decision = checker.check((CASE / "envelope.jsonld").read_bytes(), params=PARAMS, at=AT)
    assert decision.verdict is Verdict.INDETERMINATE
    assert [f.code for f in decision.findings if f.severity == "error"] == ["alignment.ambiguous"]


def test_same_artifact_offered_many_times_is_one_mapping() -> None:
    checker = Checker("cs-translation", capabilities=[CASE / "provider.jsonld"],
                      alignments=[CASE / "align0.json"] * 5 + ["cs-doc-v1"])
    decision = checker.check((CASE / "envelope.jsonld").read_bytes(), params=PARAMS, at=AT)
    assert decision.verdict is Verdict.COMPATIBLE


def test_many_registrations_only_the_mapped_one_under_the_target_version_counts(
        tmp_path: Path) -> None:
    provider = json.loads((CASE / "provider.jsonld").read_text())
    paths = []
    for version in ("1.0", "2.1", "3.0"):
        doc = copy.deepcopy(provider)
        doc["ontologyVersion"] = version
        doc["inputs"] = ["application/pdf"]  # would conflict, if it were wrongly chosen
        path = tmp_path / f"p-{version}.jsonld"
        path.write_text(json.dumps(doc))
        paths.append(path)
    checker = Checker("cs-translation", capabilities=[*paths, CASE / "provider.jsonld"],
                      alignments=[CASE / "align0.json"])
    decision = checker.check((CASE / "envelope.jsonld").read_bytes(), params=PARAMS, at=AT)
    assert decision.verdict is Verdict.COMPATIBLE, decision.findings
    assert decision.evidence[0]["source"].endswith("provider.jsonld")
