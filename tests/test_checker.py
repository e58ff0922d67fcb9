"""The library surface: Checker reuse, threads, the decision cache (S5), inputs of every type.

Covers R-7.1-1 (three outcomes plus invalid, no boolean), R-7.1-5 (mayProceed), R-7.1-7
(compatible is not authorization), R-5.3-4 / R-9-I1 / R-9-I2 (revalidation).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from operations import caches_off, growth, n_log_n_ratio, operations

from ioa_semantic import Checker, Decision, ProfileError, RegistrationError, Verdict, check

from support import CONFORMANCE, dumps, envelope_62

AT = datetime(2026, 6, 1, tzinfo=UTC)
CASE_121 = CONFORMANCE / "draft-12.1-accepted-mapping"
needs_shared = pytest.mark.skipif(not CASE_121.exists(), reason="../shared is not present")


def test_the_62_envelope_is_compatible_and_says_authorization_is_not_evaluated() -> None:
    decision = Checker("cs-translation").check(dumps(envelope_62()), at=AT)
    assert decision.verdict is Verdict.COMPATIBLE
    assert decision.may_proceed
    assert decision.as_dict()["authorization"] == "not-evaluated"
    assert decision.profile.id == "https://example.org/profiles/cs-translation"


def test_bytes_str_and_dict_inputs_agree() -> None:
    checker = Checker("cs-translation")
    doc = envelope_62()
    verdicts = {checker.check(x, at=AT).verdict for x in (dumps(doc), json.dumps(doc), doc)}
    assert verdicts == {Verdict.COMPATIBLE}


def test_a_dict_input_cannot_show_duplicate_keys_but_bytes_can() -> None:
    raw = dumps(envelope_62()).replace(b'"intentRef"', b'"intentRef": "cs:X", "intentRef"', 1)
    assert Checker("cs-translation").check(raw, at=AT).verdict is Verdict.INVALID


def test_not_compatible_never_may_proceed() -> None:
    doc = envelope_62()
    doc["ontologyVersion"] = "9.9"
    decision = Checker("cs-translation").check(dumps(doc), at=AT)
    assert decision.verdict is Verdict.INDETERMINATE
    assert not decision.may_proceed


def test_checks_from_many_threads_give_the_sequential_answers() -> None:
    checker = Checker("cs-translation", cache_size=0)
    docs = []
    for version in ("1.0", "1.1", "", "1.0"):
        doc = envelope_62()
        doc["ontologyVersion"] = version
        docs.append(dumps(doc))
    expected = [checker.check(d, at=AT).verdict for d in docs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda d: checker.check(d, at=AT).verdict, docs * 25))
    assert got == expected * 25


@needs_shared
def test_cache_is_missed_when_the_instant_passes_a_validity_limit() -> None:
    """R-9-I2: compatible at t1; the same request after validUntil is not served from cache."""
    checker = Checker("cs-translation", capabilities=[CASE_121 / "provider.jsonld"],
                      alignments=[CASE_121 / "align0.json"])
    envelope = (CASE_121 / "envelope.jsonld").read_bytes()
    params = {"sourceLang": "zh", "targetLang": "en"}
    assert checker.check(envelope, params=params, at=AT).verdict is Verdict.COMPATIBLE
    later = datetime(2027, 1, 1, tzinfo=UTC)
    assert checker.check(envelope, params=params, at=later).verdict is Verdict.INDETERMINATE


NOT_YET_VALID = Path(__file__).parent / "cases" / "compatibility" / "valid-from-at-the-instant"


def test_every_validity_limit_is_a_dependency_and_keys_the_cache() -> None:
    """Rule 15 and 7.2: validFrom is evaluated before use, recorded among the dependencies
    with the instant's side of it, and a cached decision from before it is never reused
    after it (nor the other way round)."""
    checker = Checker("cs-translation", capabilities=[NOT_YET_VALID / "provider.jsonld"],
                      alignments=[NOT_YET_VALID / "align0.json"])
    envelope = (NOT_YET_VALID / "envelope.jsonld").read_bytes()
    params = {"sourceLang": "zh", "targetLang": "en"}
    valid_from = datetime(2026, 9, 1, tzinfo=UTC)
    before = checker.check(envelope, params=params, at=AT)
    at_start = checker.check(envelope, params=params, at=valid_from)
    again = checker.check(envelope, params=params, at=AT)
    assert (before.verdict, at_start.verdict, again.verdict) == (
        Verdict.INDETERMINATE, Verdict.COMPATIBLE, Verdict.INDETERMINATE)
    [entry] = before.dependencies["artifacts"]
    assert entry["validFrom"] == "2026-09-01T00:00:00Z"
    assert entry["validUntil"] == "2026-12-31T00:00:00Z"
    assert (entry["proofCreated"], entry["proofExpires"]) == (None, None)
    assert entry["notYetValidAtEvaluation"] and not entry["expiredAtEvaluation"]
    assert not at_start.dependencies["artifacts"][0]["notYetValidAtEvaluation"]


@needs_shared
def test_cache_is_missed_when_a_task_parameter_changes() -> None:
    checker = Checker("cs-translation", capabilities=[CASE_121 / "provider.jsonld"],
                      alignments=[CASE_121 / "align0.json"])
    envelope = (CASE_121 / "envelope.jsonld").read_bytes()
    ok = checker.check(envelope, params={"sourceLang": "zh", "targetLang": "en"}, at=AT)
    changed = checker.check(envelope, params={"sourceLang": "zh", "targetLang": "fr"}, at=AT)
    assert ok.verdict is Verdict.COMPATIBLE
    assert changed.verdict is Verdict.INDETERMINATE


@needs_shared
def test_a_changed_offered_capability_is_a_new_check(tmp_path: Path) -> None:
    """S5: the intended service changes, so the prior result is not reused."""
    envelope = (CASE_121 / "envelope.jsonld").read_bytes()
    params = {"sourceLang": "zh", "targetLang": "en"}
    provider = json.loads((CASE_121 / "provider.jsonld").read_text())
    provider["@id"] = "doc:SummarizeText"
    (tmp_path / "p.jsonld").write_text(json.dumps(provider))
    first = Checker("cs-translation", capabilities=[CASE_121 / "provider.jsonld"],
                    alignments=[CASE_121 / "align0.json"])
    second = Checker("cs-translation", capabilities=[tmp_path / "p.jsonld"],
                     alignments=[CASE_121 / "align0.json"])
    assert first.check(envelope, params=params, at=AT).verdict is Verdict.COMPATIBLE
    assert second.check(envelope, params=params, at=AT).verdict is Verdict.INDETERMINATE
    assert first.check(envelope, params=params, at=AT).dependencies["capabilities"] != \
        second.check(envelope, params=params, at=AT).dependencies["capabilities"]


def test_unknown_profile_names_the_installed_ones() -> None:
    with pytest.raises(ProfileError, match=r"cs-translation"):
        Checker("no-such-profile")


def test_broken_profile_file_is_a_profile_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.ttl"
    path.write_text("@prefix iop: <https://ioa-semantic.org/ns/profile#> .\n<a> iop:x ")
    with pytest.raises(ProfileError, match=r"broken\.ttl"):
        Checker(str(path))


def test_malformed_capability_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "cap.jsonld"
    path.write_text('{"@context": {}, "@type": "Capability"}')
    with pytest.raises(RegistrationError, match=r"cap\.jsonld"):
        Checker("cs-translation", capabilities=[path])


def test_one_off_check_function() -> None:
    assert check(dumps(envelope_62()), at=AT).verdict is Verdict.COMPATIBLE


def test_reasons_are_ordered_stably() -> None:
    doc = envelope_62()
    doc["ontologyVersion"] = 1
    doc["capabilityRefs"] = []
    del doc["intentRef"]
    checker = Checker("cs-translation", cache_size=0)
    runs = {tuple((f.code, f.path) for f in checker.check(dumps(doc), at=AT).findings)
            for _ in range(5)}
    assert len(runs) == 1


def test_many_values_of_one_property_cost_linear_time() -> None:
    """50,000 capabilityRefs (size limit raised): indexing the envelope once made this
    quadratic (about 30 s here). Its work is counted (tests/operations.py), not timed: from
    5,000 values to 50,000 it may grow as n log n does, less what a check of one value costs;
    the figures are in bench/."""
    from ioa_semantic import Limits

    checker = Checker("cs-translation", cache_size=0,
                      limits=Limits(max_bytes=64 << 20, max_values=1 << 20))
    decisions: dict[int, Decision] = {}

    def work(n: int) -> int:
        doc = envelope_62()
        doc["capabilityRefs"] = ["cs:TechTranslation"] + [f"cs:Cap{i}" for i in range(n - 1)]
        data = dumps(doc)
        return operations(lambda: decisions.__setitem__(n, checker.check(data, at=AT)))

    work(1)  # what a first check loads once
    with caches_off():
        assert growth(work, 5_000, 50_000) <= n_log_n_ratio(5_000, 50_000)
    decision = decisions[50_000]
    assert decision.verdict is Verdict.INDETERMINATE  # 49,999 capabilities nobody knows
    assert len([f for f in decision.findings if f.code == "capability.unknown"]) == 49_999


def _instance(version: str | None, **changes: Any) -> dict[str, Any]:
    document = envelope_62()
    document["@context"]["profileVersion"] = "ioa:profileVersion"
    document["@id"] = "https://sender.example/profiles/task-7"
    if version is not None:
        document["profileVersion"] = version
    document.update(changes)
    return document


def test_an_instance_reused_with_another_content_is_no_unambiguous_revision() -> None:
    """Draft 5.3: a reused profile is associated with an unambiguous accepted revision by
    "a profileVersion combined with an instance identifier". The decision records both; the
    same pair seen again with another content (here another intent) is indeterminate, while
    the same content written otherwise, or a new profileVersion, is not."""
    checker = Checker("cs-translation")
    first = checker.check(dumps(_instance("1")), at=AT)
    assert first.verdict is Verdict.COMPATIBLE
    assert first.dependencies["instance"] == {
        "id": "https://sender.example/profiles/task-7", "profileVersion": "1"}
    changed = checker.check(dumps(_instance("1", intentRef="cs:OtherIntent")), at=AT)
    assert changed.verdict is Verdict.INDETERMINATE
    assert "profile.revision-ambiguous" in [f.code for f in changed.findings]
    # The same content, its members in another order: the same revision.
    reordered = dict(reversed(list(_instance("1").items())))
    assert checker.check(json.dumps(reordered).encode(), at=AT).verdict is Verdict.COMPATIBLE
    # A new revision says so.
    assert checker.check(dumps(_instance("2", intentRef="cs:OtherIntent")),
                         at=AT).findings[0].code != "profile.revision-ambiguous"
    # Another Checker has seen nothing.
    assert "profile.revision-ambiguous" not in [
        f.code for f in Checker("cs-translation").check(
            dumps(_instance("1", intentRef="cs:OtherIntent")), at=AT).findings]


def test_the_command_line_judges_its_envelopes_as_one_checkers_life(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "a.jsonld").write_bytes(dumps(_instance("1")))
    (tmp_path / "b.jsonld").write_bytes(dumps(_instance("1", intentRef="cs:OtherIntent")))
    run = subprocess.run([str(Path(sys.executable).parent / "ioa-check"), "a.jsonld", "b.jsonld",
                          "--profile", "cs-translation", "--at", "2026-06-01T00:00:00Z",
                          "--format", "json"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, check=False)
    a, b = (json.loads(line) for line in run.stdout.splitlines())
    assert a["verdict"] == "compatible" and b["verdict"] == "indeterminate"
    assert "profile.revision-ambiguous" in [r["code"] for r in b["reasons"]]
    assert run.returncode == 3


def test_an_empty_alignment_ref_names_no_artifact_and_the_decision_records_none() -> None:
    # Expansion keeps an empty array: no value, as the decision stage reads it (it was an
    # IndexError, an internal error, where the Checker looked for an artifact to fetch).
    envelope = envelope_62()
    envelope["ioa:alignmentRef"] = []
    decision = Checker("cs-translation").check(dumps(envelope), at=AT)
    assert decision.verdict is Verdict.COMPATIBLE
    assert decision.dependencies["alignmentRef"] is None
    envelope["ioa:alignmentRef"] = {"@id": "https://example.org/align/cs-doc-v1"}
    named = Checker("cs-translation").check(dumps(envelope), at=AT)
    assert named.dependencies["alignmentRef"] == "https://example.org/align/cs-doc-v1"
