"""Instants to the letter (contract rules 9, 10 and 15): a validity limit, a proof's created
and expires, a declared dateTime parameter and ``--at`` are compared by every fraction digit
written, never rounded, and one at the very end of year 9999 is an instant like another.
Through the installed command, and :class:`ioa_semantic._instants.Instant` against exact
arithmetic."""

from __future__ import annotations

import json
import pickle
import subprocess
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ioa_semantic._instants import Instant, instant

from support import EXAMPLES, IOA_CHECK, ROOT

SHIPPED = ROOT / "ioa_semantic" / "data" / "alignments" / "cs-doc-v1.json"
TASK = [str(EXAMPLES / "envelope-12.1.jsonld"), "--profile", "cs-translation",
        "--capability", str(EXAMPLES / "provider-12.1.jsonld"),
        "--param", "sourceLang=zh", "--param", "targetLang=en"]


def check(tmp_path: Path, limits: dict[str, str], at: str, *more: str) -> tuple[int, dict[str, Any]]:
    artifact = json.loads(SHIPPED.read_text())
    artifact.pop("validUntil")
    artifact.update(limits)
    path = tmp_path / "artifact.json"
    path.write_text(json.dumps(artifact))
    proc = subprocess.run([IOA_CHECK, *TASK, "--alignment", str(path), "--at", at,
                           "--format", "json", *more], capture_output=True, timeout=60)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    assert proc.returncode != 70, proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def codes(decision: dict[str, Any]) -> set[str]:
    return {reason["code"] for reason in decision["reasons"]}


def test_an_instant_before_a_limit_by_a_tenth_of_a_microsecond_is_before_it(tmp_path: Path) -> None:
    status, decision = check(tmp_path, {"validUntil": "2026-12-31T00:00:00.0000001Z"},
                             "2026-12-31T00:00:00Z")
    assert (status, decision["verdict"]) == (0, "compatible"), decision
    limits = decision["dependencies"]["artifacts"][0]
    assert limits["validUntil"] == "2026-12-31T00:00:00.0000001Z"
    assert limits["expiredAtEvaluation"] is False
    status, decision = check(tmp_path, {"validUntil": "2026-12-31T00:00:00.0000001Z"},
                             "2026-12-31T00:00:00.000001Z")
    assert "alignment.expired" in codes(decision)


def test_a_window_of_a_tenth_of_a_microsecond_is_a_window(tmp_path: Path) -> None:
    window = {"validFrom": "2026-06-01T00:00:00Z", "validUntil": "2026-06-01T00:00:00.0000001Z"}
    status, decision = check(tmp_path, window, "2026-06-01T00:00:00Z")
    assert (status, decision["verdict"]) == (0, "compatible"), decision
    status, decision = check(tmp_path, window, "2026-06-01T00:00:00.00000001Z")
    assert decision["verdict"] == "compatible"
    status, decision = check(tmp_path, window, "2026-06-01T00:00:00.0000001Z")
    assert "alignment.expired" in codes(decision)


def test_the_evaluation_instant_keeps_its_digits_past_the_microsecond(tmp_path: Path) -> None:
    _, decision = check(tmp_path, {"validFrom": "2026-06-01T00:00:00.0000001Z"},
                        "2026-06-01T00:00:00.0000005Z")
    assert decision["verdict"] == "compatible", decision
    assert decision["dependencies"]["artifacts"][0]["notYetValidAtEvaluation"] is False
    _, decision = check(tmp_path, {"validFrom": "2026-06-01T00:00:00.0000005Z"},
                             "2026-06-01T00:00:00.0000001Z")
    assert "alignment.not-yet-valid" in codes(decision)


@pytest.mark.parametrize("member", ["validFrom", "validUntil"])
def test_a_limit_at_the_end_of_year_9999_is_an_instant_like_another(tmp_path: Path,
                                                                     member: str) -> None:
    """It was rounded up past the last microsecond datetime counts: an internal error."""
    _, decision = check(tmp_path, {member: "9999-12-31T23:59:59.9999991Z"},
                        "2026-06-01T00:00:00Z")
    if member == "validFrom":
        assert "alignment.not-yet-valid" in codes(decision), decision
    else:
        assert decision["verdict"] == "compatible", decision


def test_a_declared_date_time_a_tenth_of_a_microsecond_past_its_bound_is_past_it(
        tmp_path: Path) -> None:
    ttl = tmp_path / "profile.ttl"
    ttl.write_text(_PROFILE)
    artifact = json.loads(SHIPPED.read_text())
    artifact["mappingRules"][0]["conditions"]["deadline"] = "2026-06-01T00:00:00Z"
    path = tmp_path / "artifact.json"
    path.write_text(json.dumps(artifact))

    def verdict(deadline: str) -> tuple[str, set[str]]:
        proc = subprocess.run(
            [IOA_CHECK, *TASK[:1], "--profile", str(ttl), *TASK[3:], "--alignment", str(path),
             "--param", f"deadline={deadline}", "--at", "2026-06-01T00:00:00Z",
             "--format", "json"], capture_output=True, timeout=60)
        assert b"Traceback" not in proc.stderr, proc.stderr.decode()
        decision = json.loads(proc.stdout)
        return decision["verdict"], codes(decision)

    assert verdict("2026-06-01T00:00:00Z")[0] == "compatible"
    assert verdict("2026-06-01T00:00:00.0000000Z")[0] == "compatible"
    later = verdict("2026-06-01T00:00:00.0000001Z")
    assert later[0] != "compatible" and "alignment.inapplicable" in later[1], later


_PROFILE = """
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix cs: <https://example.org/onto/cs#> .

<https://example.org/profiles/exact> a iop:Profile ;
    iop:revision "1" ;
    iop:acceptsOntology [ iop:ontologyId <https://example.org/onto/agent-core> ;
                          iop:ontologyVersion "1.0" ] ;
    iop:permittedDomain cs:ComputerScience ;
    iop:trustedIssuer <https://example.org/mapping-authority> ;
    iop:taskParameter [ iop:name "deadline" ; iop:datatype xsd:dateTime ;
                        iop:comparison iop:atMost ] .

cs:ComputerScience a ioa:Domain .
cs:LargeLanguageModel a ioa:Concept ; ioa:inDomain cs:ComputerScience ; ioa:abbr "LLM" .
cs:TranslateTechDoc a ioa:Intent ; ioa:requiresCapability cs:TechTranslation ;
    ioa:appliesToDomain cs:ComputerScience .
cs:TechTranslation a ioa:Capability ; ioa:inputs "text/plain" ; ioa:outputs "text/plain" .
"""


@pytest.mark.parametrize("written", ["2026-06-01x00:00:00Z", "2026-06-01T00:00:00 +00:00",
                                     "2026-06-01 00:00:00Z", "2026-06-01T00:00Z",
                                     "2026-06-01T00:00:00+01:00:00.5",
                                     "\uff12\uff10\uff12\uff16-06-01T00:00:00Z"])
def test_at_is_read_as_the_limits_are(written: str) -> None:
    """``--at`` was read by Python's reader alone, which takes any character between the
    date and the time, a space before the offset and an offset with seconds."""
    proc = subprocess.run([IOA_CHECK, str(EXAMPLES / "envelope-6.2.jsonld"), "--profile",
                           "cs-translation", "--at", written], capture_output=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b"", proc
    assert "is not a date-time" in proc.stderr.decode()


# Instants as written: a date, a time, up to 12 fraction digits and an offset.
_WRITTEN = st.builds(
    lambda day, clock, digits, offset: (
        f"{datetime(2026, 1, 1, tzinfo=UTC).fromordinal(day).date().isoformat()}"
        f"T{clock // 3600:02d}:{clock // 60 % 60:02d}:{clock % 60:02d}"
        f"{'.' + digits if digits else ''}{offset}"),
    st.integers(739_000, 739_010), st.integers(0, 86_399),
    st.text("0123456789", max_size=12) | st.sampled_from(["", "0000001", "9999999"]),
    st.sampled_from(["Z", "z", "+00:00", "-00:00", "+01:30", "-14:00", "+14:00"]))


def _exact(text: str) -> Fraction:
    """The instant ``text`` names, in seconds since the epoch, by arithmetic alone."""
    date, time = text[:10], text[11:19]
    rest = text[19:]
    digits = ""
    if rest.startswith("."):
        end = 1
        while end < len(rest) and rest[end].isdigit():
            end += 1
        digits, rest = rest[1:end], rest[end:]
    offset = 0 if rest in ("Z", "z") else (int(rest[1:3]) * 60 + int(rest[4:6])) * (
        1 if rest[0] == "+" else -1)
    days = datetime.fromisoformat(date).toordinal() - datetime(1970, 1, 1).toordinal()
    hh, mm, ss = map(int, time.split(":"))
    whole = days * 86_400 + hh * 3600 + mm * 60 + ss - offset * 60
    return whole + (Fraction(int(digits), 10 ** len(digits)) if digits else Fraction(0))


@given(_WRITTEN, _WRITTEN)
def test_instants_compare_as_the_instants_they_name(first: str, second: str) -> None:
    a, b = instant(first), instant(second)
    exact_a, exact_b = _exact(first), _exact(second)
    assert (a < b, a <= b, a == b, a >= b, a > b) == (
        exact_a < exact_b, exact_a <= exact_b, exact_a == exact_b, exact_a >= exact_b,
        exact_a > exact_b)
    if a == b:
        assert hash(a) == hash(b)
    # An evaluation instant to the microsecond (a datetime) on either side.
    micro = datetime.combine(b.date(), b.time(), b.tzinfo)
    assert (a < micro) is (exact_a < _exact(micro.isoformat()))
    assert (micro < a) is (_exact(micro.isoformat()) < exact_a)
    assert pickle.loads(pickle.dumps(a)) == a and instant(a.isoformat()) == a
    assert a.astimezone(UTC) == a and a.astimezone(UTC).beyond == a.beyond


def test_an_instant_without_digits_past_the_microsecond_is_its_datetime() -> None:
    plain = datetime(2026, 6, 1, tzinfo=UTC)
    written = instant("2026-06-01T00:00:00.000000000Z")
    assert written == plain and plain == written and hash(written) == hash(plain)
    assert written.isoformat() == plain.isoformat() and not written.beyond
    finer = instant("2026-06-01T00:00:00.0000001Z")
    assert plain < finer and not plain >= finer and finer > plain and plain != finer
    assert str(finer) == "2026-06-01 00:00:00.0000001+00:00"


def test_an_instant_without_an_offset_compares_as_a_datetime_without_one() -> None:
    """As datetime's: a naive one equals the naive datetime of its instant (and hashes
    alike), never an aware one (== is False, an order a TypeError)."""
    naive, plain = Instant(2026, 1, 1), datetime(2026, 1, 1)
    assert naive == plain and plain == naive and hash(naive) == hash(plain)
    aware = datetime(2026, 1, 1, tzinfo=UTC)
    assert naive != aware and aware != naive
    with pytest.raises(TypeError):
        _ = naive < aware
    assert plain < Instant(2026, 1, 1, beyond="1")


def test_a_logged_instant_an_earlier_release_wrote_is_read() -> None:
    """A decision log line whose ``at`` an earlier ioa-check took from a looser --at (an
    offset with seconds) is read as it was then, not refused with the rest of its file."""
    from ioa_semantic.impact.log import _instant_of

    assert _instant_of("2026-06-01T00:00:00+05:30:15") == datetime.fromisoformat(
        "2026-06-01T00:00:00+05:30:15")
    assert _instant_of("2026-06-01T00:00:00.0000001Z").isoformat().endswith(".0000001+00:00")
    with pytest.raises(ValueError):
        _instant_of("2026-06-01T00:00:00")
