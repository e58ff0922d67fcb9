"""Honest skipping (issue 40, item 4): for random corpora of logged decisions and random
changes, no decision ``ioa-check impact`` skips is one whose full judgement under the change
differs from what was logged; and every decision it judges again is judged as the full
judgement judges it. How many it skips is measured (hypothesis events, and a floor). The
same for an audit's registrations and their conflicts (its JSON output and its inputs)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ioa_semantic import Checker
from ioa_semantic.cli.main import main
from ioa_semantic.impact import Change, DecisionLog, Impact, RegistrationImpact, read_log
from ioa_semantic.impact.log import Logged

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CS_DOC = "https://example.org/align/cs-doc-v1"
_12_1 = (EXAMPLES / "envelope-12.1.jsonld").read_bytes()
_NAMED = _12_1.replace(b'"@type": "ioa:SemanticProfile",',
                       b'"@type": "ioa:SemanticProfile", "@id": "urn:e:1",')
# The shipped examples and mutations of them: another ontology version (not accepted), an
# alignmentRef, malformed JSON, a named instance and another content under its name (5.3).
ENVELOPES = (
    _12_1,
    (EXAMPLES / "envelope-6.2.jsonld").read_bytes(),
    (EXAMPLES / "legal-contract.jsonld").read_bytes(),
    _12_1.replace(b'"1.0"', b'"9.9"'),
    _12_1.replace(b'"@type": "ioa:SemanticProfile",', b'"@type": "ioa:SemanticProfile", '
                  b'"ioa:alignmentRef": {"@id": "' + CS_DOC.encode() + b'"},'),
    b'{"@type": ',
    _NAMED,
    _NAMED.replace(b'"LLM"', b'"large language model"'),
)
PARAMS: tuple[dict[str, str], ...] = (
    {}, {"sourceLang": "zh", "targetLang": "en"}, {"sourceLang": "fr", "targetLang": "en"})
INSTANTS = tuple(datetime.fromisoformat(t) for t in (
    "2025-01-01T00:00:00+00:00", "2026-06-01T00:00:00+00:00", "2026-09-15T00:00:00+00:00",
    "2026-12-31T00:00:00+00:00", "2027-06-01T00:00:00+00:00"))


def _variants() -> dict[str, dict[str, Any]]:
    """Artifacts made from the shipped 12.4 one: later revisions, a later validFrom, another
    issuer, a member the project does not define, another artifact under other conditions."""
    shipped = json.loads((ROOT / "ioa_semantic/data/alignments/cs-doc-v1.json").read_text())

    def revised(**members: Any) -> dict[str, Any]:
        return {**shipped, **members}

    french = revised(artifactId="https://example.org/align/cs-doc-fr", revision="1")
    french["mappingRules"] = [{**rule, "conditions": {**rule.get("conditions", {}),
                                                      "sourceLang": "fr"}}
                              for rule in shipped["mappingRules"]]
    return {
        "later": revised(revision="2", validUntil="2027-12-31T00:00:00Z"),
        "not-yet": revised(revision="3", validFrom="2026-09-01T00:00:00Z"),
        "untrusted": revised(revision="4", assertedBy="https://example.org/someone"),
        "unknown-member": revised(revision="5", remark="kept"),
        "french": french,
    }


@pytest.fixture(scope="module")
def pool() -> Iterator[dict[str, str]]:
    """Names of the artifacts and profiles a corpus or a change draws from, as files."""
    with tempfile.TemporaryDirectory() as folder:
        files = {"cs-doc-v1": "cs-doc-v1"}
        for name, document in _variants().items():
            path = Path(folder, f"{name}.json")
            path.write_text(json.dumps(document))
            files[name] = str(path)
        shipped = (ROOT / "ioa_semantic/data/profiles/cs-translation.ttl").read_text()
        for name, text in {
            "other-issuer": shipped.replace("mapping-authority", "someone"),
            "revision-2": shipped.replace('iop:revision "1"', 'iop:revision "2"'),
            "trusting": shipped.replace(
                "iop:trustedIssuer <https://example.org/mapping-authority> .",
                "iop:trustedIssuer <https://example.org/mapping-authority>, "
                "<https://example.org/someone> ."),
            "law-too": shipped.replace("iop:permittedDomain cs:ComputerScience ;",
                                       "iop:permittedDomain cs:ComputerScience, law:Law ;"),
        }.items():
            path = Path(folder, f"{name}.ttl")
            path.write_text(text)
            files[name] = str(path)
        yield files


ARTIFACTS = ("cs-doc-v1", "later", "not-yet", "untrusted", "unknown-member", "french")
corpus = st.lists(st.tuples(
    st.booleans(),  # registrations offered
    st.lists(st.sampled_from(ARTIFACTS), max_size=3, unique=True),
    st.lists(st.tuples(st.sampled_from(range(len(ENVELOPES))),
                       st.sampled_from(range(len(PARAMS))),
                       st.sampled_from(range(len(INSTANTS)))), min_size=1, max_size=5),
), min_size=1, max_size=2)  # each item one Checker's run
change = st.tuples(
    st.sampled_from((None, "other-issuer", "revision-2", "trusting", "law-too",
                     "cs-translation")),
    st.lists(st.sampled_from(ARTIFACTS), max_size=2, unique=True),
    st.lists(st.sampled_from((CS_DOC, "https://example.org/align/cs-doc-fr")), max_size=1),
    st.sampled_from((None, *range(len(INSTANTS)))),
)


def _same(entry: dict[str, Any], judged: Any) -> bool:
    def key(r: dict[str, Any]) -> tuple[str, ...]:
        return (r["code"], r["severity"], r["path"], r["section"])

    logged = entry["decision"]
    return logged["verdict"] == str(judged.verdict) and (
        {key(r) for r in logged["reasons"]} == {key(f.as_dict()) for f in judged.findings})


def logged(folder: str, pool: dict[str, str], runs: list[Any],
           described: tuple[Any, ...]) -> tuple[str, Change]:
    """The decision log ``runs`` make in ``folder`` (each run a Checker: whether the provider
    is offered, its artifacts, its checks), and the change ``described`` names."""
    log = str(Path(folder, "decisions.jsonl"))
    for offered, artifacts, checks in runs:
        checker = Checker("cs-translation",
                          capabilities=[EXAMPLES / "provider-12.1.jsonld"] if offered else [],
                          alignments=[pool[a] for a in artifacts],
                          recorder=DecisionLog(log))
        for envelope, params, instant in checks:
            checker.check(ENVELOPES[envelope], params=PARAMS[params], at=INSTANTS[instant])
    profile, added, withdrawn, instant = described
    return log, Change(pool.get(profile, profile) if profile else None,
                       tuple(pool[a] for a in added), tuple(withdrawn),
                       INSTANTS[instant] if instant is not None else None)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(runs=corpus, described=change)
# A trust revision that distrusts the issuer of an artifact a decision screened: the decision
# is judged again (a change of trust skips only decisions whose offered artifacts are all of
# issuers the revisions treat alike).
@example(runs=[(True, ["cs-doc-v1"], [(0, 1, 1)])], described=("other-issuer", [], [], None))
def test_no_decision_skipped_is_one_the_change_flips(
        pool: dict[str, str], runs: list[Any], described: tuple[Any, ...]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        log, the_change = logged(folder, pool, runs, described)
        selective = Impact([log], the_change, keep=True)
        flipped = {(f.log, f.line) for f in selective}
        full = Impact([log], the_change, everything=True, keep=True)
        list(full)
        entries = [e for e in read_log(log) if isinstance(e, Logged)]
        assert len(full.judged) == len(entries)
        for item in entries:
            where = (item.log, item.line)
            judged = full.judged[where]
            if where not in selective.judged:
                assert _same(item.entry, judged), (where, the_change)  # soundness
            else:
                assert selective.judged[where] == judged
                assert (where in flipped) == (not _same(item.entry, judged))
        skipped = len(entries) - len(selective.judged)
        event(f"skipped {10 * skipped // len(entries) * 10}% of the decisions")
        assert selective.summary is not None
        assert sum(selective.summary.skipped.values()) == skipped


def test_a_narrow_change_skips_most_of_a_corpus(tmp_path: Path, pool: dict[str, str]) -> None:
    # A withdrawal over decisions of which few read artifacts: the others are skipped.
    log = str(tmp_path / "decisions.jsonl")
    checker = Checker("cs-translation", capabilities=[EXAMPLES / "provider-12.1.jsonld"],
                      alignments=["cs-doc-v1"], recorder=DecisionLog(log))
    for envelope in (*ENVELOPES[3:4] * 4, ENVELOPES[5], ENVELOPES[0]):
        checker.check(envelope, at=INSTANTS[1])
    impact = Impact([log], Change(withdrawn=(CS_DOC,)))
    list(impact)
    assert impact.summary is not None
    assert (impact.summary.decisions, impact.summary.rejudged) == (6, 1)


# --- the audit's registrations (issue 40, item 1: its JSON output and inputs) -------------

_REGISTRATION = json.loads((EXAMPLES / "registration-6.3.jsonld").read_text())


def _registration(ident: str, **members: Any) -> bytes:
    document = {**_REGISTRATION, "@id": ident, **members}
    return json.dumps({k: v for k, v in document.items() if v is not None}).encode()


# The 6.3 example and mutations: a member a profile may let be ignored, another output (a
# conflict with the first under one IRI), another ontology named, none named (read under
# the profile's single ontology), an invalid one (no inputs), an IRI of a scheme a profile
# may refuse, text that is not JSON.
REGISTRATIONS = (
    _registration("cs:A"),
    _registration("cs:A", outputs=["application/pdf"]),
    _registration("cs:B", note="descriptive"),
    _registration("cs:B"),
    _registration("cs:C", ontologyId="https://example.org/onto/agent-core",
                  ontologyVersion="1.0"),
    _registration("cs:C", ontologyId="https://example.org/onto/agent-core",
                  ontologyVersion="1.1"),
    _registration("cs:D", inputs=None),
    _registration("urn:x:D"),
    b'{"@id": ',
)


@pytest.fixture(scope="module")
def profiles(pool: dict[str, str]) -> Iterator[dict[str, str]]:
    """Revisions of the shipped profile an audit reads (or does not), as files."""
    shipped = (ROOT / "ioa_semantic/data/profiles/cs-translation.ttl").read_text()
    trusted = "iop:trustedIssuer <https://example.org/mapping-authority> ."
    with tempfile.TemporaryDirectory() as folder:
        files = {name: pool[name] for name in ("revision-2", "trusting", "law-too")}
        for name, text in {
            "notes": shipped.replace(trusted, trusted[:-1] + '; iop:ignorableTerm "note" .'),
            "https-only": shipped.replace('iop:allowedScheme "https", "http", "urn" ;',
                                          'iop:allowedScheme "https", "http" ;'),
            "version-1.1": shipped.replace('iop:ontologyVersion "1.0"',
                                           'iop:ontologyVersion "1.1"'),
        }.items():
            path = Path(folder, f"{name}.ttl")
            path.write_text(text)
            files[name] = str(path)
        yield files


def _audited(folder: str, name: str, picks: list[int]) -> tuple[str, str]:
    """A JSON Lines file of the registrations ``picks``, and its audit's JSON output."""
    inputs = str(Path(folder, name))
    Path(inputs).write_bytes(b"".join(REGISTRATIONS[i] + b"\n" for i in picks))
    report = inputs + ".audit"
    assert main(["audit", inputs, "--profile", "cs-translation", "--format", "json",
                 "--output", report, "--jobs", "1"]) in (0, 1)
    return inputs, report


def _without_causes(flip: Any) -> dict[str, Any]:
    return {k: v for k, v in flip.as_dict().items() if k != "causes"}


registrations = st.lists(st.sampled_from(range(len(REGISTRATIONS))), min_size=1, max_size=6)
registration_change = st.tuples(
    st.sampled_from((None, "revision-2", "trusting", "law-too", "notes", "https-only",
                     "version-1.1")),
    st.booleans(),  # an artifact added and one withdrawn
    st.booleans(),  # another instant
    st.lists(st.sampled_from(range(len(REGISTRATIONS))), max_size=3),  # registrations added
)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(picks=registrations, described=registration_change)
def test_no_registration_skipped_is_one_the_change_flips(
        pool: dict[str, str], profiles: dict[str, str], picks: list[int],
        described: tuple[Any, ...]) -> None:
    profile, artifacts, instant, added = described
    with tempfile.TemporaryDirectory() as folder:
        inputs, report = _audited(folder, "registrations.jsonl", picks)
        more = [_audited(folder, "added.jsonl", added)[0]] if added else []
        the_change = Change(profiles[profile] if profile else None,
                            (pool["later"],) if artifacts else (),
                            (CS_DOC,) if artifacts else (),
                            INSTANTS[4] if instant else None)
        if the_change == Change() and not more:
            return
        selective = RegistrationImpact(report, [inputs], "cs-translation", the_change, more,
                                       keep=True)
        flips = [_without_causes(f) for f in selective]
        full = RegistrationImpact(report, [inputs], "cs-translation", the_change, more,
                                  everything=True, keep=True)
        # The same flips, conflicts included: none missed, none made up.
        assert flips == [_without_causes(f) for f in full]
        audited = [line for line in map(json.loads, Path(report).read_text().splitlines())
                   if "status" in line]
        assert len(full.judged) == len(audited) + len(added)
        for line in audited:
            where = (line["source"], line["index"])
            status, reasons = full.judged[where]
            if where not in selective.judged:  # skipped: the full judgement is the report's
                assert (status, reasons) == (line["status"], tuple(sorted(
                    (r["code"], r["severity"], r["path"], r["section"])
                    for r in line["reasons"]))), (where, the_change)
            else:
                assert selective.judged[where] == (status, reasons)
        assert selective.summary is not None
        skipped = len(audited) - sum(1 for w in selective.judged if w[0] == inputs)
        assert sum(selective.summary.skipped.values()) == skipped
        event(f"skipped {10 * skipped // len(audited) * 10}% of the registrations")


# Logs with repeats: few distinct checks, each drawn many times (issue 40, item 3).
repeated = st.lists(st.tuples(
    st.booleans(),
    st.lists(st.sampled_from(ARTIFACTS), max_size=2, unique=True),
    st.lists(st.tuples(st.sampled_from((0, 4, 5, 6, 7)), st.sampled_from(range(2)),
                       st.sampled_from((1, 2, 4))), min_size=4, max_size=14),
), min_size=1, max_size=3)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(runs=repeated, described=change)
# A named instance seen with another content: the repeat of the second is ambiguous only
# while its run's memory holds the first.
@example(runs=[(True, ["cs-doc-v1"], [(6, 1, 1), (7, 1, 1), (7, 1, 1), (6, 1, 1)]),
               (True, ["cs-doc-v1"], [(7, 1, 1), (6, 1, 1), (7, 1, 2)])],
         described=("law-too", [], [], 4))
def test_the_memo_gives_each_repeat_what_a_fresh_judgement_gives(
        pool: dict[str, str], runs: list[Any], described: tuple[Any, ...]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        log, the_change = logged(folder, pool, runs, described)
        memo = Impact([log], the_change, everything=True, keep=True)
        fresh = Impact([log], the_change, everything=True, keep=True, memo=False)
        assert [f.as_dict() for f in memo] == [f.as_dict() for f in fresh]
        assert memo.summary == fresh.summary
        assert memo.judged == fresh.judged
        assert memo.memo is not None and fresh.memo is None
        event(f"memo hits: {10 * memo.memo.hits // max(len(memo.judged), 1) * 10}% of the "
              "decisions")


def test_a_log_of_repeats_is_judged_once_per_distinct_decision(
        tmp_path: Path, pool: dict[str, str]) -> None:
    log = str(tmp_path / "decisions.jsonl")
    checker = Checker("cs-translation", capabilities=[EXAMPLES / "provider-12.1.jsonld"],
                      alignments=["cs-doc-v1"], recorder=DecisionLog(log))
    for i in range(60):  # 3 envelopes x 2 parameter sets, each repeated ten times
        checker.check(ENVELOPES[i % 3], params=PARAMS[i % 2], at=INSTANTS[1])
    impact = Impact([log], Change(pool["law-too"], at=INSTANTS[4]))
    flips = list(impact)
    assert impact.summary is not None and impact.summary.rejudged == 60 and flips
    # The whole change, and each of its two parts alone for the flips' causes: three
    # configurations, six distinct decisions in each; every other judgement is a repeat.
    assert impact.memo is not None
    assert impact.memo.misses <= 3 * 6 and impact.memo.hits >= 60 - 6
