"""A call's digest as the trace audit holds it: the bytes of the hash, read back as it came.

Issue 37: a long run holds two digests a call to its end; as the pair of the hex text and the
count each weighed 197 bytes. Whatever it holds, a digest gives back the very hash and count
it was made of, and its JSON (reports, records, checkpoints) is what the pair wrote.
"""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ioa_semantic.trace.calls import Digest
from ioa_semantic.trace.privacy import Private, digest

HASH = hashlib.sha256(b"refund 42").hexdigest()


def test_a_hash_is_held_in_its_32_bytes_and_its_count() -> None:
    held = Digest(HASH, 1234)
    assert len(held) == 1 + 32 + 2  # its kind, the hash, the count in two bytes
    # The pair it replaced: a tuple, the 64 characters of hex, the count.
    pair = sys.getsizeof((HASH, 1234)) + sys.getsizeof(HASH) + sys.getsizeof(1234)
    assert sys.getsizeof(held) < 100 < pair - 50
    assert (held.sha256, held.chars) == (HASH, 1234)


def test_a_private_stores_keyed_reference_is_held_in_its_bytes_too() -> None:
    keyed = Private(b"k" * 32).text(HASH)
    assert keyed.startswith("text-") and len(keyed) == 25
    held = Digest(keyed, 7)
    assert len(held) == 1 + 10 + 1
    assert (held.sha256, held.chars) == (keyed, 7)


def test_the_audits_own_digest_of_content_reads_back_its_sha256() -> None:
    made = digest({"b": 1, "a": "é"})
    text = '{"a":"é","b":1}'
    assert made.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert made.chars == len(text)
    assert made == Digest(made.sha256, made.chars)  # made from the hash's bytes, the same
    assert made.as_json() == {"sha256": made.sha256, "chars": len(text)}
    assert made.as_pair() == [made.sha256, len(text)]


@given(st.one_of(
    st.text(), st.text("0123456789abcdefABCDEF ", min_size=64, max_size=64),
    st.builds(lambda s: "text-" + s, st.text("0123456789abcdefA", min_size=20, max_size=20)),
    st.none(), st.integers(), st.lists(st.integers(), max_size=2)),
    st.one_of(st.integers(min_value=-2, max_value=1 << 70), st.booleans(), st.none(), st.text(),
              st.floats(allow_nan=False)))
def test_whatever_a_record_or_checkpoint_holds_reads_back_as_it_came(sha256: Any,
                                                                       chars: Any) -> None:
    # A record of another version or a hand-edited checkpoint may hold anything: capitals,
    # spaces (which fromhex would take), a count that is no count. None of it is changed.
    held = Digest(sha256, chars)
    assert type(held.sha256) is type(sha256) and held.sha256 == sha256
    assert type(held.chars) is type(chars) and held.chars == chars
    for again in (Digest.of(held.as_json()), Digest.of(held.as_pair()), Digest.of(held),
                  pickle.loads(pickle.dumps(held)), copy.deepcopy(held)):
        assert type(again) is Digest and again == held and hash(again) == hash(held)
        assert again.as_json() == {"sha256": sha256, "chars": chars}
    assert json.loads(json.dumps(held.as_pair())) == [sha256, chars]


def test_two_digests_are_equal_when_their_hash_and_count_are() -> None:
    assert Digest(HASH, 3) == Digest(HASH, 3)
    assert Digest(HASH, 3) != Digest(HASH, 4)
    assert Digest(HASH, 3) != Digest(HASH.upper(), 3)  # not the same text: not the same
    assert Digest(HASH, 3)._replace(chars=4) == Digest(HASH, 4)
    assert Digest(HASH, 3)._replace(sha256="text-" + "0" * 20).sha256 == "text-" + "0" * 20
    assert repr(Digest(HASH, 3)) == f"Digest(sha256={HASH!r}, chars=3)"
