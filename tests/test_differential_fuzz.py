"""A differential fuzzer: both engines, the audit, the contract's invalid inputs.

Seeds (the draft's examples, every case's envelope and registrations) are mutated by
``tests/fuzzing.py`` at the byte level and at the JSON level; each mutation knows whether the
contract makes the input malformed (section 3, rule 1: an IRI with an excluded character, an
``@foo`` key, a duplicate member, trailing bytes ...). For every input:

* nothing raises, in either engine or in the audit's judging of a registration;
* the compiled and the reference engine give the same verdict and the same set of codes;
* an input known to be malformed is ``invalid`` (so never ``compatible`` / ``valid``), and one
  known to be at best indeterminate (an ``@import``, a version not accepted) is never
  ``compatible``;
* the json reporter's line validates against ``ioa_semantic/output.schema.json`` and encodes
  as UTF-8;
* the same input twice, and through a fresh checker, gives the same output; an input with the
  same JSON value (escapes, member order, whitespace) gets the same verdict and codes;
* an audit of a batch of registration lines gives each line the same result whatever the
  order of the lines.

The counter-examples found so far are data-driven cases in ``tests/cases/fuzz/`` (envelopes,
in the format of the other case folders) and ``tests/cases/fuzz/_audit/`` (registrations);
each is replayed here. The default run keeps the generated inputs to a small budget;
``pytest -m slow`` runs a few thousand. ``python bench/fuzz_report.py --count N --seed S``
prints every failure class with a minimized example.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import fuzzing
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

ENVELOPE_SEEDS = fuzzing.usable_seeds("envelope")
REGISTRATION_SEEDS = fuzzing.usable_seeds("registration")


def _explain(m: fuzzing.Mutant, failures: list[fuzzing.Failure]) -> str:
    lines = [f"{len(failures)} failure(s) for an input from {m.seed.name} "
             f"(setup {m.setup.name}, mutations {[e.op for e in m.effects]}, expected "
             f"{fuzzing.EXPECT_NAMES[m.expect]} because {m.expect_op}):",
             f"  input: {m.text[:1500]!a}"]
    for f in failures[:6]:
        detail = json.dumps(f.detail, ensure_ascii=True, default=str)[:700]
        lines.append(f"  - {' | '.join(f.signature)}: {detail}")
    return "\n".join(lines)


def _assert_clean(m: fuzzing.Mutant) -> None:
    failures = fuzzing.run(m)
    assert not failures, _explain(m, failures)


# --- the seeds themselves -------------------------------------------------------------------


def test_seeds_are_found() -> None:
    assert len(ENVELOPE_SEEDS) > 20 and REGISTRATION_SEEDS
    assert any(s.name == "examples/envelope-6.2" for s in ENVELOPE_SEEDS)


@pytest.mark.parametrize("seed", ENVELOPE_SEEDS[:1] + REGISTRATION_SEEDS[:1],
                         ids=lambda s: s.name)
def test_unmutated_example_passes_every_property(seed: fuzzing.Seed) -> None:
    _assert_clean(fuzzing.replay(seed, []))


def test_iri_production() -> None:
    """The oracle: RFC 3987's IRI production, as the contract reads it."""
    good = ["https://example.org/onto/cs#TechTranslation", "urn:example:x", "http://[::1]/x",
            "https://\u4f8b\u3048.jp/x", "https://example.org/%41", "urn:x:\U0001f600",
            "https://example.org/x?q=\ue000#f", "https:"]
    bad = ["https://example.org/a b", "https://example.org/a<b", 'https://e.org/"', "x",
           "_:b0", "https://e.org/a#b#c", "https://e.org/%zz", "https://e.org/%4",
           "https://e.org/\x00", "https://e.org/\ud800", "https://e.org/\uffff",
           "https://e.org/#\ue000", "https://e.org/a|b", "https://e.org/a^b", "https://e.org/`",
           "https://e.org/{x}", "https://e.org/a\\b", "https://e.org/\x85", ""]
    assert all(fuzzing.is_iri(v) for v in good), [v for v in good if not fuzzing.is_iri(v)]
    assert not any(fuzzing.is_iri(v) for v in bad), [v for v in bad if fuzzing.is_iri(v)]


def test_mutator_marks_what_the_contract_makes_malformed() -> None:
    seed = ENVELOPE_SEEDS[0]
    marked = [fuzzing.replay(seed, [("duplicate-member", 1)]),
              *(fuzzing.replay(seed, [("bytes:a", n)]) for n in range(40))]
    assert marked[0].expect == fuzzing.INVALID
    for m in marked[1:]:
        _parsed, why = fuzzing.strict_parse(m.data, allow_bom=True)
        if why is not None:
            assert m.expect == fuzzing.INVALID, m.effects


# --- the corpus of counter-examples ---------------------------------------------------------


@pytest.mark.parametrize("folder", fuzzing.corpus_cases(), ids=lambda p: p.name)
def test_fuzz_corpus_envelope(folder: Path) -> None:
    """A counter-example the fuzzer found: every property holds, and the case's verdict."""
    m, spec = fuzzing.case_mutant(folder)
    failures, seen = fuzzing.run_envelope(m)
    expected = spec["expect"]["verdict"]
    for engine, said in seen.items():
        if said["verdict"] != expected:
            failures.append(fuzzing.Failure(("verdict", engine, said["verdict"], expected),
                                            {"observed": said, "why": spec["why"]}))
        missing = [p for p in spec["expect"].get("codes", [])
                   if not any(c.startswith(p) for c in said["codes"])]
        if missing:
            failures.append(fuzzing.Failure(("codes", engine, *missing), {"observed": said}))
    assert not failures, _explain(m, failures)


@pytest.mark.parametrize("folder", fuzzing.audit_corpus(), ids=lambda p: p.name)
def test_fuzz_corpus_registrations(folder: Path) -> None:
    """Registration counter-examples: each line's expected status, both engines, in order and
    shuffled, through the audit command."""
    spec = json.loads((folder / "audit.json").read_text(encoding="utf-8"))
    lines = [line for line in (folder / spec["registrations"]).read_bytes().split(b"\n")
             if line.strip()]
    expected = spec["expect"]["status"]
    assert len(expected) == len(lines)
    problems = []
    for engine in ("compiled", "reference"):
        _status, objects, _stderr = fuzzing.audit_command(lines, engine)
        per_line = {o["index"]: o for o in objects if "status" in o}
        for i, want in enumerate(expected):
            got = per_line.get(i, {}).get("status")
            if got != want:
                problems.append(f"{engine}: line {i} {lines[i][:300]!a}: status {got!r}, "
                                f"expected {want!r} ({spec['why'][i]}); reasons "
                                f"{[r['code'] for r in per_line.get(i, {}).get('reasons', [])]}")
    for i, line in enumerate(lines):
        seed = fuzzing.Seed(f"{folder.name}:{i}", "registration", "{}", fuzzing.DEFAULT)
        m = fuzzing.Mutant(seed, [], line, "registration", fuzzing.DEFAULT,
                           expect=fuzzing.INVALID if expected[i] == "invalid" else fuzzing.NONE,
                           expect_op=spec["why"][i])
        problems += [f"line {i}: {' | '.join(f.signature)}" for f in fuzzing.run_registration(m)[0]]
    batch = [fuzzing.Mutant(fuzzing.Seed("x", "registration", "{}", fuzzing.DEFAULT), [], line,
                            "registration", fuzzing.DEFAULT) for line in lines]
    for order_seed in range(3):
        problems += [" | ".join(f.signature) + f": {f.detail}"
                     for f in fuzzing.run_audit_order(batch, random.Random(order_seed))]
    assert not problems, "\n".join(problems)


# --- generated inputs -----------------------------------------------------------------------

FAST = settings(max_examples=400, deadline=None, database=None,
                phases=[Phase.explicit, Phase.generate],  # the report script minimizes
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(FAST, max_examples=4000)


def _envelope_property(index: int, rng: random.Random) -> None:
    seed = ENVELOPE_SEEDS[index % len(ENVELOPE_SEEDS)]
    _assert_clean(fuzzing.mutate(seed, rng))


def _registration_property(index: int, rng: random.Random) -> None:
    seed = REGISTRATION_SEEDS[index % len(REGISTRATION_SEEDS)]
    _assert_clean(fuzzing.mutate(seed, rng))


def _audit_property(rng: random.Random, size: int) -> None:
    batch = [fuzzing.mutate(REGISTRATION_SEEDS[i % len(REGISTRATION_SEEDS)], rng)
             for i in range(size)]
    clean = [fuzzing.replay(s, []) for s in REGISTRATION_SEEDS]
    batch += clean + clean  # kinds judged clean, seen again after mutated ones
    failures = fuzzing.run_audit_order(batch, rng)
    assert not failures, "\n".join(f"{' | '.join(f.signature)}: {f.detail}" for f in failures)


@FAST
@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_differential_fuzz_envelopes(index: int, rng: random.Random) -> None:
    _envelope_property(index, rng)


@settings(FAST, max_examples=250)
@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_differential_fuzz_registrations(index: int, rng: random.Random) -> None:
    _registration_property(index, rng)


@settings(FAST, max_examples=6)
@given(st.randoms(use_true_random=False))
def test_audit_line_order_does_not_change_a_result(rng: random.Random) -> None:
    _audit_property(rng, 30)


@pytest.mark.slow
@SLOW
@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_differential_fuzz_envelopes_slow(index: int, rng: random.Random) -> None:
    _envelope_property(index, rng)


@pytest.mark.slow
@settings(SLOW, max_examples=2000)
@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_differential_fuzz_registrations_slow(index: int, rng: random.Random) -> None:
    _registration_property(index, rng)


@pytest.mark.slow
@settings(SLOW, max_examples=40)
@given(st.randoms(use_true_random=False))
def test_audit_line_order_slow(rng: random.Random) -> None:
    _audit_property(rng, 80)


@pytest.mark.slow
def test_seeded_sweep_slow() -> None:
    """A fixed sweep (the report script's default): every failure class at once."""
    classes: dict[tuple[str, ...], str] = {}
    for m in fuzzing.mutants(3000, 1):
        for f in fuzzing.run(m):
            classes.setdefault(f.signature, ascii(m.text[:300]))
    assert not classes, "\n".join(f"{' | '.join(s)}: {t}" for s, t in sorted(classes.items()))
