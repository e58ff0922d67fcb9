"""Property tests over mutations of the 6.2 envelope.

Covers R-5.4-1, R-6.2-1..R-6.2-7, R-7.1-11: a structurally broken envelope is never
compatible, nothing raises, and the same input always gets the same decision.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioa_semantic import Checker, Verdict

from support import envelope_62

AT = datetime(2026, 6, 1, tzinfo=UTC)
CHECKER = Checker("cs-translation")
FIELDS = ["@context", "@type", "ontologyId", "ontologyVersion", "capabilityRefs", "intentRef",
          "profileContext"]
REQUIRED = ["@context", "@type", "ontologyId", "ontologyVersion", "capabilityRefs", "intentRef"]
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                         st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)


def _mutate(doc: dict[str, Any], op: str, field: str, value: Any) -> tuple[Any, bool]:
    """Apply one mutation; say whether it certainly breaks the baseline."""
    if op == "delete":
        doc.pop(field, None)
        return doc, field in REQUIRED
    if op == "retype":
        original = doc.get(field)
        doc[field] = value
        return doc, field in REQUIRED and type(value) is not type(original) and not (
            field in ("capabilityRefs", "@type") and isinstance(value, str))
    if op == "duplicate":
        # Two values of a single-valued field: a JSON array of the value twice, distinct
        if field in ("ontologyId", "intentRef") and isinstance(doc.get(field), str):
            doc[field] = [doc[field], doc[field] + "2"]
            return doc, True
        return doc, False
    if op == "reprefix":
        if isinstance(doc.get("intentRef"), str):
            doc["intentRef"] = "xx:" + doc["intentRef"].partition(":")[2]
            return doc, True
        return doc, False
    if op == "legacy":
        doc["type"] = doc.pop("@type", "ioa:SemanticProfile")
        return doc, True
    return doc, False


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(st.tuples(st.sampled_from(["delete", "retype", "duplicate", "reprefix", "legacy"]),
                           st.sampled_from(FIELDS), json_values), min_size=1, max_size=3),
)
def test_broken_envelope_is_never_compatible(ops: list[tuple[str, str, Any]]) -> None:
    """R-7.1-11, R-6.2-*: mutations never raise; a certain break is never compatible."""
    doc: Any = envelope_62()
    broken = False
    for op, field, value in ops:
        doc, b = _mutate(doc, op, field, value)
        broken = broken or b
    data = json.dumps(doc).encode()
    first = CHECKER.check(data, at=AT)
    second = CHECKER.check(data, at=AT)
    assert first.verdict == second.verdict
    assert [f.code for f in first.findings] == [f.code for f in second.findings]
    if broken:
        assert first.verdict is not Verdict.COMPATIBLE, (ops, first.findings)
    if first.verdict is not Verdict.COMPATIBLE:
        assert any(f.severity == "error" for f in first.findings)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_never_raise_and_are_never_compatible(data: bytes) -> None:
    """R-7.1-11: arbitrary bytes are judged, never raise, and are never compatible."""
    decision = CHECKER.check(data, at=AT)
    assert decision.verdict is not Verdict.COMPATIBLE


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_arbitrary_json_never_raises(value: Any) -> None:
    doc = envelope_62()
    doc["profileContext"] = value
    decision = CHECKER.check(json.dumps(doc).encode(), at=AT)
    assert decision.verdict in set(Verdict)


@pytest.mark.parametrize("field", REQUIRED)
def test_each_required_field_missing_is_invalid(field: str) -> None:
    """R-5.4-1, R-6.2-1: each required member, absent, makes the envelope invalid."""
    doc = envelope_62()
    del doc[field]
    assert CHECKER.check(json.dumps(doc).encode(), at=AT).verdict is Verdict.INVALID
