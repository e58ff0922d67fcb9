"""The digest of an envelope instance's content (draft 5.3), made as text in one pass.

The revision memory and the decision logs hold these digests, so the one-pass text must give
the bytes the first definition gave: the canonical structure (sets sorted by their values'
JSON text, each once; ``@list`` in order; a blank node label used once dropped) written by
``json.dumps`` with sorted keys.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ioa_semantic._checker import _canonical_text, _content_digest, _pair_text


def _canonical(value: Any, shared: set[str]) -> Any:
    """The first definition of the canonical form (a structure, serialized afterwards)."""
    if isinstance(value, dict):
        return {k: [_canonical(x, shared) for x in v] if k == "@list" and isinstance(v, list)
                else _canonical(v, shared) for k, v in value.items()
                if not (k == "@id" and isinstance(v, str) and v.startswith("_:")
                        and v not in shared)}
    if isinstance(value, list):
        keyed = {json.dumps(x, sort_keys=True, ensure_ascii=False): x
                 for x in (_canonical(item, shared) for item in value)}
        return [keyed[k] for k in sorted(keyed)]
    return value


def _blank_labels(value: Any) -> dict[str, int]:
    """How many times each blank node label stands as an ``@id`` in an expanded document (the
    first definition counted them in a walk of their own)."""
    uses: dict[str, int] = {}
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            ident = item.get("@id")
            if isinstance(ident, str) and ident.startswith("_:"):
                uses[ident] = uses.get(ident, 0) + 1
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return uses


def _first_digest(node: Any) -> bytes:
    shared = {label for label, uses in _blank_labels(node).items() if uses > 1}
    return hashlib.sha256(json.dumps(_canonical(node, shared), sort_keys=True,
                                     ensure_ascii=False, separators=(",", ":")
                                     ).encode("utf-8", "surrogatepass")).digest()


# Texts that test the orderings: separators, quotes, escapes, non-ASCII, lone surrogates,
# blank node labels (some repeated).
_TEXT = st.one_of(st.sampled_from(["_:b0", "_:b1", "_:b2", "a", "a,b", 'a"', "a, b", "a:b",
                                   "é", "\u2028", "\ud800", "[", "{", ""]),
                  st.text(max_size=6))
_SCALAR = st.one_of(_TEXT, st.integers(-3, 3), st.floats(allow_nan=True), st.booleans(),
                    st.none())
_KEY = st.one_of(st.sampled_from(["@id", "@list", "@value", "@type", "a", "b", "a b"]),
                 st.text(max_size=4))
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_KEY, inner, max_size=4)), max_leaves=25)


@settings(max_examples=600, deadline=None)
@given(_VALUE)
def test_the_one_pass_text_gives_the_first_definitions_bytes(value: Any) -> None:
    """Any JSON value, however nested, sets of sets included, digests as it did."""
    assert _content_digest(value) == _first_digest(value)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.one_of(st.none(), _TEXT))
def test_an_instance_pair_is_written_as_json_dumps_wrote_it(ident: str, version: str | None) -> None:
    """The memory of instances keys a pair by the text json.dumps gave it: a pair seen
    before an upgrade is the same pair after it."""
    assert _pair_text(ident, version) == json.dumps([ident, version], ensure_ascii=False)


def test_a_known_content_keeps_its_digest() -> None:
    """A digest a decision log holds still names the content it named (set values in
    another order and repeated, a blank node used once and one used twice, a list)."""
    node = {"@id": "urn:x", "@type": ["https://e/T"],
            "https://e/p": [{"@value": "b"}, {"@value": "a"}, {"@value": "a"}],
            "https://e/q": [{"@id": "_:b0", "https://e/r": [{"@value": 1.5}]},
                            {"@id": "_:b1"}, {"@id": "_:b1"}],
            "https://e/l": [{"@list": [{"@value": "z"}, {"@value": "z"},
                                       {"@value": "é\u2028"}]}]}
    assert _content_digest(node).hex() == (
        "38cc2c74e5235b3c83bf88d15bf4ba018128ba76779c7a64dd9cf3fb864a9238")
    shared = {"_:b1"}
    assert _canonical_text(node["https://e/q"], shared) == (
        '[{"@id":"_:b1"},{"https://e/r":[{"@value":1.5}]}]')


def test_names_past_the_memory_of_names_are_written_alike() -> None:
    """The names of members are remembered as written, a bounded number of short ones: a
    document with more names than that, and names longer than those kept, digests as the
    first definition did, and again the same once the names are remembered."""
    node: dict[str, Any] = {f"https://e/p{n}": [{"@value": n}] for n in range(5000)}
    node["https://e/" + "x" * 300] = [{"@id": "_:b0"}, {"@id": "_:b0", "@type": ["https://e/T"]}]
    assert _content_digest(node) == _first_digest(node) == _content_digest(node)
