"""The traffic corpora of bench/traffic.py: deterministic, as varied as promised, and judged
alike by both engines (not a benchmark)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ioa_semantic import Checker
from ioa_semantic.audit.judge import judge

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import traffic  # noqa: E402

SIZE = 4000
SAMPLE = 300
AT = datetime(2026, 6, 1, tzinfo=UTC)
SCRIPTS: dict[str, Callable[[str], bool]] = {
    "latin": lambda ch: (ch.isascii() and ch.isalpha()) or "\u00c0" <= ch <= "\u024f",
    "cjk": lambda ch: "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af",
    "cyrillic": lambda ch: "\u0400" <= ch <= "\u04ff",
    "arabic": lambda ch: "\u0600" <= ch <= "\u06ff",
    "emoji": lambda ch: ch >= "\U0001f300" or "\u2600" <= ch <= "\u27bf",
}


@pytest.fixture(scope="module")
def corpora() -> dict[str, list[bytes]]:
    return {name: list(make(SIZE)) for name, make in traffic.REGISTRATION_CORPORA.items()}


@pytest.fixture(scope="module")
def engines() -> tuple[Checker, Checker]:
    return Checker("cs-translation"), Checker("cs-translation", engine="reference")


def test_same_seed_same_bytes() -> None:
    for make in traffic.REGISTRATION_CORPORA.values():
        assert list(make(500)) == list(make(500))
    assert list(traffic.registrations(300, 50, seed=1)) != list(traffic.registrations(300, 50))
    for senders in traffic.ENVELOPE_STREAMS.values():
        assert traffic.envelopes(200, senders) == traffic.envelopes(200, senders)


def test_a_corpus_is_a_prefix_of_a_larger_one() -> None:
    # The audit rows at 20,000 and 100,000 measure the same traffic, the larger one longer.
    assert list(traffic.registrations(1000, 5000)) == list(traffic.registrations(3000, 5000))[:1000]


def test_registration_variety(corpora: dict[str, list[bytes]]) -> None:
    expected_contexts = {"uniform (bench_audit)": (1, 1), "5 senders": (5, 5),
                         "5,000 senders": (1000, 5000), "each its own sender": (SIZE, SIZE)}
    for name, lines in corpora.items():
        docs = [json.loads(line) for line in lines]
        contexts = {traffic.context_key(d) for d in docs}
        layouts = {traffic.layout_key(d) for d in docs}
        low, high = expected_contexts[name]
        assert low <= len(contexts) <= high, (name, len(contexts))
        assert len(layouts) >= len(contexts)
        if name == "uniform (bench_audit)":
            continue
        text = b"\n".join(lines)
        ids = [d["@id"] for d in docs if isinstance(d.get("@id"), str)]
        assert sum(i.startswith("urn:") for i in ids) > len(ids) // 20, name
        assert sum(i.startswith("https:") for i in ids) > len(ids) // 20, name
        assert b"\\u" in text  # non-ASCII written as JSON escapes (\u00e9, \ud83d\ude80)
        assert b"\\n" in text  # an escaped newline in a label
        labels = [str(v) for d in docs for k, v in d.items()
                  if k in traffic.TERM_NAMES["label"] or k == "rdfs:label"]
        found = {script for script, test in SCRIPTS.items()
                 if any(test(ch) for label in labels for ch in label)}
        assert len(found) >= (3 if name == "5 senders" else 5), (name, found)
        if name != "5 senders":
            assert b"\\u00e9" in text
        media = {m for d in docs for v in d.values() if isinstance(v, list)
                 for m in v if isinstance(m, str) and "/" in m}
        assert any(m.startswith("application/vnd.") for m in media)


def test_envelope_variety() -> None:
    for senders, (low, high) in ((1, (1, 1)), (300, (100, 300)), (None, (500, 500))):
        docs = [json.loads(e) for e in traffic.envelopes(500, senders)]
        assert len({d["@id"] for d in docs}) == 500  # no two envelopes alike
        assert low <= len({traffic.context_key(d) for d in docs}) <= high


def test_invalid_share(corpora: dict[str, list[bytes]], engines: tuple[Checker, Checker]) -> None:
    compiled, _ = engines
    for name, lines in corpora.items():
        if name == "uniform (bench_audit)":
            continue  # bench_audit's own 1%
        statuses = [judge(compiled, line, "t", i)[0].status for i, line in enumerate(lines)]
        share = statuses.count("invalid") / len(statuses)
        assert 0.03 <= share <= 0.05, (name, share)
        assert statuses.count("indeterminate") == 0


@pytest.mark.parametrize("name", list(traffic.REGISTRATION_CORPORA))
def test_engines_agree_on_registrations(name: str, corpora: dict[str, list[bytes]],
                                        engines: tuple[Checker, Checker]) -> None:
    compiled, reference = engines
    lines = corpora[name][:SAMPLE]
    for index, line in enumerate(lines):
        fast, _ = judge(compiled, line, "corpus.jsonl", index)
        slow, _ = judge(reference, line, "corpus.jsonl", index)
        assert fast.as_dict() == slow.as_dict(), line


@pytest.mark.parametrize("senders", list(traffic.ENVELOPE_STREAMS.values()))
def test_envelopes_compatible_on_both_engines(senders: int | None) -> None:
    checkers = [Checker("cs-translation", engine=e, cache_size=0) for e in ("compiled", "reference")]
    for data in traffic.envelopes(60, senders):
        verdicts = {c.check(data, at=AT).verdict.value for c in checkers}
        assert verdicts == {"compatible"}, data
