"""Remedies (contract 2, "Remedies"; draft 6.4, 7.3): what would change the answer.

The data-driven cases hold each action on the draft's own examples (``expect.remedies``) and
every result to the contract's shape (``test_cases.assert_remedies``). Here: a remedy names
only what the receiver defines, never a guess; applying a ``supply-parameter`` or a
``select-alignment`` remedy with its listed values removes the reasons it answers; every
action of the contract is produced by some case; the audit and the text report carry them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioa_semantic import Checker, Verdict
from ioa_semantic._codes import CODES
from ioa_semantic.pipeline.remedies import ACTIONS, ANSWERS

from support import AT, case_options
from test_cases import ALL_CASES, arguments

CASES = Path(__file__).resolve().parent / "cases"
CASE_121 = CASES / "compatibility" / "remedy-12.1-without-language-pair"
TWO_ISSUERS = CASES / "compatibility" / "custom-no-selection-rule-two-issuers"
_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
# Members that are not the receiver's identifiers: where in the input, what to fetch, names.
_NOT_DEFINITIONS = {"action", "by", "codes", "path", "url", "name", "field"}


def _checker(folder: Path) -> tuple[Checker, dict[str, str], Any]:
    profile, options, params, at = case_options(folder, json.loads(
        (folder / "case.json").read_text())["args"])
    return Checker(profile, **options), params, at


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _defined(checker: Checker) -> set[str]:
    """Every IRI and literal the receiver's profile, registrations and artifacts hold, the
    verification methods its key bindings accept (a did:key as the proof must name it,
    did:key:X#X), and the names of its own shapes."""
    from ioa_semantic.pipeline.provenance import is_did_key, method_of

    held = {term.value for quad in checker.stages.fixed
            for term in (quad.subject, quad.predicate, quad.object)
            if not isinstance(term, pyoxigraph.Triple)}
    held |= {method_of(v) for v in held if is_did_key(v)}
    if checker.constraints is not None:
        held |= {route.shape for route in checker.constraints.routes}
    return held


def _iris_of(remedy: dict[str, Any]) -> list[str]:
    return [s for key, value in remedy.items() if key not in _NOT_DEFINITIONS
            for s in _strings(value) if _IRI.match(s)]


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.verdict != "compatible"],
                         ids=lambda c: c.id)
def test_a_remedy_names_only_iris_the_receiver_defines(case: Any) -> None:
    args = arguments(case)
    checker = Checker(args.profile, capabilities=args.capabilities, alignments=args.alignments,
                      limits=args.limits, allow_remote=args.allow_remote,
                      allow_private_addresses=args.allow_private_addresses)
    decision = checker.check(case.envelope.read_bytes(), params=args.params, at=args.at)
    defined = _defined(checker)
    strangers = [(r["action"], iri) for r in (m.as_dict() for m in decision.remedies)
                 for iri in _iris_of(r) if iri not in defined]
    assert strangers == []
    # Each remedy answers the codes its action is for (what docs/codes.md says).
    for remedy in decision.remedies:
        allowed = {c for c in CODES if CODES[c].effect is Verdict.INVALID} if (
            remedy.action == "correct-input") else ANSWERS[remedy.action]
        assert set(remedy.codes) <= allowed, remedy


@settings(max_examples=30, deadline=None)
@given(sent=st.sets(st.sampled_from(["sourceLang", "targetLang"])))
def test_supplying_the_listed_parameters_removes_the_reasons_they_answer(sent: set[str]) -> None:
    """The 12.1 task with none, one or both of its languages: the remedies list what is
    missing with the artifact's values, and supplying them gives the compatible decision."""
    checker, _, at = _checker(CASE_121)
    pair = {"sourceLang": "zh", "targetLang": "en"}
    envelope = (CASE_121 / "envelope.jsonld").read_bytes()
    params = {k: v for k, v in pair.items() if k in sent}
    first = checker.check(envelope, params=params, at=at)
    supply = [r for r in first.remedies if r.action == "supply-parameter"]
    assert {r.details["name"] for r in supply} == set(pair) - sent
    if not supply:
        assert first.verdict is Verdict.COMPATIBLE and first.remedies == ()
        return
    applied = {**params, **{r.details["name"]: r.details["values"][0] for r in supply}}
    second = checker.check(envelope, params=applied, at=at)
    answered = {code for r in supply for code in r.codes}
    assert not answered & {f.code for f in second.findings if f.severity == "error"}
    assert second.verdict is Verdict.COMPATIBLE and second.remedies == ()


def test_naming_a_listed_alignment_removes_the_ambiguity() -> None:
    checker, params, at = _checker(TWO_ISSUERS)
    document = json.loads((TWO_ISSUERS / "envelope.jsonld").read_text())
    first = checker.check(json.dumps(document).encode(), params=params, at=at)
    (select,) = [r for r in first.remedies if r.action == "select-alignment"]
    candidates = select.details["candidates"]
    assert len(candidates) == 2
    for candidate in candidates:
        chosen = dict(document)
        chosen["@context"] = {**document["@context"],
                              "alignmentRef": {"@id": "ioa:alignmentRef", "@type": "@id"}}
        chosen["alignmentRef"] = candidate["artifactId"]
        second = checker.check(json.dumps(chosen).encode(), params=params, at=at)
        assert "alignment.ambiguous" not in {f.code for f in second.findings}
        assert second.verdict is Verdict.COMPATIBLE, [f.code for f in second.findings]
        (evidence,) = second.evidence
        assert evidence["artifactId"] == candidate["artifactId"]


def test_every_action_of_the_contract_is_produced_by_a_case() -> None:
    expected = {r["action"] for c in ALL_CASES for r in c.spec["expect"].get("remedies", [])}
    produced: set[str] = set()
    for case in ALL_CASES:
        if case.verdict == "compatible" or not case.spec["expect"].get("remedies"):
            continue
        args = arguments(case)
        checker = Checker(args.profile, capabilities=args.capabilities,
                          alignments=args.alignments, limits=args.limits,
                          allow_remote=args.allow_remote,
                          allow_private_addresses=args.allow_private_addresses)
        decision = checker.check(case.envelope.read_bytes(), params=args.params, at=args.at)
        produced |= {r.action for r in decision.remedies}
    assert expected == produced == set(ACTIONS) - {"correct-input"}
    invalid = [c for c in ALL_CASES if c.verdict == "invalid"]
    assert invalid, "correct-input is held on every invalid case by test_cases"


def test_the_text_report_lists_them_to_proceed(tmp_path: Path) -> None:
    import subprocess

    from support import IOA_CHECK

    args = json.loads((CASE_121 / "case.json").read_text())["args"]
    proc = subprocess.run([IOA_CHECK, "envelope.jsonld", *args, "--format", "text"],
                          cwd=CASE_121, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 3
    tail = proc.stdout.split("to proceed:", 1)[1]
    assert "supply the task parameter sourceLang (accepted: zh)" in tail
    assert "supply the task parameter targetLang (accepted: en)" in tail
    assert AT  # the case pins its own instant


def test_an_audit_line_carries_its_remedies(tmp_path: Path) -> None:
    import subprocess

    from support import IOA_CHECK, registration_63

    good = registration_63()
    bad = dict(good)
    del bad["inputs"]
    lines = [json.dumps(good), json.dumps(bad)]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--format", "json"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    results = [json.loads(line) for line in proc.stdout.splitlines()][:2]
    assert results[0]["status"] == "valid" and results[0]["remedies"] == []
    assert results[1]["status"] == "invalid"
    assert results[1]["remedies"] == [
        {"action": "correct-input", "by": "sender", "codes": ["registration.missing"], "path": ""}]


def _literal_policy(remedies: list[dict[str, Any]]) -> Any:
    """A sender that applies every remedy literally, with the first value each lists."""
    from ioa_semantic.negotiation import SenderPolicy

    parameters = {r["name"]: r["values"][0] for r in remedies
                  if r["action"] == "supply-parameter" and r.get("values")}
    speaks = frozenset((a["ontologyId"], a["ontologyVersion"]) for r in remedies
                       if r["action"] == "use-accepted-version" for a in r["accepted"])
    return SenderPolicy(parameters=parameters, speaks=speaks,
                        choose_alignment=lambda candidates: candidates[0])


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.verdict in (
    "indeterminate", "incompatible")], ids=lambda c: c.id)
def test_a_remedy_applied_literally_never_meets_the_same_refusal(case: Any) -> None:
    """Issue 34, "remedies that work": the project's own negotiating client, applying every
    remedy it can with the values the remedy lists, sends an envelope that is compatible or
    refused for another reason; never the same refusal again (a sender re-sending what was
    refused, forever)."""
    from ioa_semantic.negotiation import changes_for

    args = arguments(case)
    checker = Checker(args.profile, capabilities=args.capabilities, alignments=args.alignments,
                      limits=args.limits, allow_remote=args.allow_remote,
                      allow_private_addresses=args.allow_private_addresses)
    text = case.envelope.read_bytes()
    try:
        envelope = json.loads(text)
    except ValueError:
        pytest.skip("not JSON: nothing a sender would negotiate")
    if not isinstance(envelope, dict):
        pytest.skip("not one object")
    before = checker.check(text, params=args.params, at=args.at)
    remedies = [r.as_dict() for r in before.remedies]
    sent, changes = changes_for(envelope, remedies, _literal_policy(remedies))
    if not changes:
        return  # nothing the sender could change: the refusal says so by its actions
    after = checker.check(json.dumps(sent).encode(), params=args.params, at=args.at)
    refusal = (before.verdict, sorted({f.code for f in before.findings if f.severity == "error"}))
    again = (after.verdict, sorted({f.code for f in after.findings if f.severity == "error"}))
    assert after.verdict is Verdict.COMPATIBLE or again != refusal, (changes, again)
