"""The compiled shapes' pattern checks remembered: a media type or a language tag met again
is answered by a lookup, not searched again, within a bound on what is remembered."""

from __future__ import annotations

import re
from typing import Any

from ioa_semantic._checker import shapes
from ioa_semantic._vocab import IOA
from ioa_semantic.compiled import conformance
from ioa_semantic.compiled.conformance import SearchMemo, compile_conformance

SHAPE = "https://ioa-semantic.org/ns/shapes#RegistrationShape"


def _registration_check() -> tuple[Any, SearchMemo]:
    """The registration shape's conformance function, and the memo of its inputs' pattern."""
    check = compile_conformance(shapes().shapes[SHAPE])
    memos = [v for v in check.__globals__.values() if isinstance(v, SearchMemo)]
    inputs = next(m for m in memos if m.search("text/plain") and not m.search("text"))
    return check, inputs


def _node(media: str) -> dict[str, Any]:
    return {"@id": "urn:cap", "@type": [IOA + "Capability"],
            IOA + "inputs": [{"@value": media}], IOA + "outputs": [{"@value": "text/plain"}]}


def test_a_media_type_met_again_is_not_searched_again() -> None:
    """The thousandth registration of a sender re-checks only what is new: the pattern runs
    once a distinct media type, and the answers are the pattern's (a miss stays a miss)."""
    check, memo = _registration_check()
    for _ in range(100):
        assert check(_node("application/vnd.sender.doc+json"))
        assert not check(_node("not a media type"))
    assert memo.misses == 2


def test_the_memo_is_bounded() -> None:
    """At most SEARCHED_ENTRIES answers, none for a string longer than SEARCHED_CHARS
    (asked again, it is searched again), whatever the registrations hold."""
    memo = SearchMemo(re.compile(r"\S").search)
    for i in range(conformance.SEARCHED_ENTRIES + 10):
        assert memo[f"x{i}"]
        assert len(memo) <= conformance.SEARCHED_ENTRIES
    long = "y" * (conformance.SEARCHED_CHARS + 1)
    misses = memo.misses
    assert memo[long] and memo[long]
    assert memo.misses == misses + 2 and long not in memo
