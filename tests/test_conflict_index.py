"""The audit's conflict index, held compactly (IRIs and declarations by digest, places
packed), against the plain index it replaces: the same conflicts, registrations and order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from operations import counted

from ioa_semantic.audit import conflicts
from ioa_semantic.audit.conflicts import ConflictIndex

Where = tuple[str, "int | None"]


def plain_conflicts(entries: list[tuple[str, tuple[Any, ...], Where]]
                    ) -> list[tuple[str, tuple[Where, ...], tuple[Any, ...]]]:
    """The index as the contract states it, with every IRI and declaration in full."""
    first: dict[str, tuple[Any, ...]] = {}
    every: dict[str, list[tuple[Where, Any]]] = {}
    conflicting: set[str] = set()
    for ident, declaration, where in entries:
        if ident not in first:
            first[ident] = declaration
        elif declaration != first[ident]:
            conflicting.add(ident)
        every.setdefault(ident, []).append((where, declaration))
    return [(ident, tuple(w for w, _ in every[ident]), tuple(d for _, d in every[ident]))
            for ident in first if ident in conflicting]


declarations = st.tuples(st.lists(st.sampled_from(["text/plain", "application/json",
                                                   "text/plain;charset=utf-8"]),
                                  max_size=2).map(tuple),
                         st.lists(st.sampled_from(["text/html", "image/png"]), max_size=2).map(tuple),
                         st.none() | st.just(("https://example.org/onto", "1.0")))
places = st.tuples(st.sampled_from(["a.jsonl", "b.json", "-", "dir/é.jsonl"]),
                   st.none() | st.integers(0, 2**70))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["urn:x:1", "urn:x:2", "https://e.org/c#3", "urn:é"]),
                          declarations, places), max_size=30))
def test_the_compact_index_finds_what_the_plain_one_finds(
        entries: list[tuple[str, tuple[Any, ...], Where]]) -> None:
    index = ConflictIndex()
    for ident, declaration, where in entries:
        index.add(ident, declaration, where)
    assert list(index.conflicts()) == plain_conflicts(entries)
    assert len(index) == len({ident for ident, _, _ in entries})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["urn:x:1", "urn:x:2", "https://e.org/c#3", "urn:é"]),
                          declarations, places), max_size=30),
       st.lists(st.integers(1, 8), max_size=8), st.integers(1, 6))
def test_batches_digested_where_judged_index_as_registrations_one_by_one(
        entries: list[tuple[str, tuple[Any, ...], Where]], sizes: list[int], kept: int) -> None:
    """A worker digests its batch (conflicts.digested) and the writing process adds the
    batch (add_batch): the same conflicts, and the same declarations kept within the bound,
    as each registration added in full in input order, whatever the batches' sizes."""
    from ioa_semantic.audit import conflicts
    from ioa_semantic.audit.conflicts import digested

    saved = conflicts.DECLARATIONS_KEPT
    conflicts.DECLARATIONS_KEPT = kept
    try:
        one_by_one, batched = ConflictIndex(), ConflictIndex()
        for ident, declaration, where in entries:
            one_by_one.add(ident, declaration, where)
        at = 0
        for size in [*sizes, len(entries)]:
            batch = entries[at:at + size]
            at += size
            digests, declared = digested(batch)
            assert len(declared) == len({d for _, d, _ in batch})  # each distinct one once
            batched.add_batch(digests, declared)
    finally:
        conflicts.DECLARATIONS_KEPT = saved
    assert list(batched.conflicts()) == list(one_by_one.conflicts())
    assert batched._declared == one_by_one._declared
    assert len(batched) == len(one_by_one)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["urn:x:1", "urn:x:2", "https://e.org/c#3", "urn:é"]),
                          declarations, places), max_size=30),
       st.integers(0, 3), st.integers(0, 3))
def test_entries_past_the_numbered_declarations_and_sources_find_the_same(
        entries: list[tuple[str, tuple[Any, ...], Where]], numbered: int, sources: int) -> None:
    """An IRI's entry is one integer while its declaration and source are among the first
    numbered, and the packed digest and place past them: mixed, the same conflicts."""
    from ioa_semantic.audit import conflicts

    saved = conflicts.DECLARATIONS_NUMBERED, conflicts._SOURCES_NUMBERED
    conflicts.DECLARATIONS_NUMBERED, conflicts._SOURCES_NUMBERED = numbered, sources
    try:
        index = ConflictIndex()
        for ident, declaration, where in entries:
            index.add(ident, declaration, where)
    finally:
        conflicts.DECLARATIONS_NUMBERED, conflicts._SOURCES_NUMBERED = saved
    assert list(index.conflicts()) == plain_conflicts(entries)


def test_an_iri_of_a_numbered_declaration_is_held_in_one_small_integer() -> None:
    """A million IRIs' index was 125 bytes an IRI with a 32-byte bytes entry each (72 with its
    header and rounding); an integer entry is 32 bytes while the index is under 2**28."""
    import sys

    index = ConflictIndex()
    kinds = [((f"text/x-{n}",), ("text/plain",), None) for n in range(10)]
    for n in range(1000):
        index.add(f"urn:cap:{n}", kinds[n % 10], ("a.jsonl", 2**27 + n))
    entries = list(index._first.values())
    assert all(type(entry) is int and sys.getsizeof(entry) <= 32 for entry in entries)
    assert len(index._numbered) == 10


def test_a_conflict_names_every_registration_in_order() -> None:
    index = ConflictIndex()
    one, other = (("text/plain",), ("text/html",), None), (("text/plain",), ("image/png",), None)
    index.add("urn:cap:1", one, ("a.jsonl", 0))
    index.add("urn:cap:2", one, ("a.jsonl", 1))
    index.add("urn:cap:1", one, ("b.jsonl", None))
    index.add("urn:cap:2", one, ("b.jsonl", 7))  # the same declaration again: no conflict
    index.add("urn:cap:1", other, ("b.jsonl", 2**65))  # an index past the packed width
    assert list(index.conflicts()) == [
        ("urn:cap:1", (("a.jsonl", 0), ("b.jsonl", None), ("b.jsonl", 2**65)),
         (one, one, other))]


def test_declarations_past_the_bound_are_not_kept_and_said_so(monkeypatch: Any) -> None:
    """What differs is told from the distinct declarations kept, up to a bound: memory stays
    one record per IRI whatever the senders declare; a declaration first seen past the bound
    is None (not kept), the conflict is still found by its digest."""
    from ioa_semantic.audit import conflicts

    monkeypatch.setattr(conflicts, "DECLARATIONS_KEPT", 2)
    index = ConflictIndex()
    kinds = [((f"text/x-{n}",), ("text/plain",), None) for n in range(4)]
    for n, declaration in enumerate(kinds):
        index.add(f"urn:cap:{n}", declaration, ("a.jsonl", n))
    index.add("urn:cap:0", kinds[1], ("b.jsonl", 0))
    index.add("urn:cap:3", kinds[0], ("b.jsonl", 1))
    assert len(index._declared) == 2
    assert list(index.conflicts()) == [
        ("urn:cap:0", (("a.jsonl", 0), ("b.jsonl", 0)), (kinds[0], kinds[1])),
        ("urn:cap:3", (("a.jsonl", 3), ("b.jsonl", 1)), (None, kinds[0]))]


@counted
def test_a_declaration_met_again_is_not_written_out_again() -> None:
    """The index keys a declaration by its digest, made once a distinct declaration: the
    thousandth registration declaring the same media types costs a lookup, not the
    declaration's text (``repr``) and its digest again."""
    import sys

    index = ConflictIndex()
    declaration = (("text/plain",), ("text/x-seen-again",), (("urn:o",), ("1",)))
    index.add("urn:first", declaration, ("a.jsonl", 0))
    written: list[object] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and arg is repr:
            written.append(arg)

    sys.setprofile(profile)
    try:
        for i in range(1, 50):
            index.add(f"urn:first{i}", tuple(declaration), ("a.jsonl", i))
    finally:
        sys.setprofile(None)
    assert written == []
    assert len(index) == 50


def test_registrations_of_an_iri_registered_again_are_not_held_in_memory() -> None:
    """The contract: memory does not grow with the registrations, apart from the index of
    distinct IRIs. 200,000 registrations of one IRI hold what 2,000 hold (the repeats go to
    a temporary file), and a conflict met after all of them still names every one, in order
    (read back across the file's writes)."""
    import tracemalloc

    declaration = (("text/plain",), ("text/html",), None)

    def held(repeats: int) -> tuple[int, ConflictIndex]:
        index = ConflictIndex()
        tracemalloc.start()
        try:
            for n in range(repeats):
                index.add("urn:x:1", declaration, ("a.jsonl", n))
            return tracemalloc.get_traced_memory()[0], index
        finally:
            tracemalloc.stop()

    few, _ = held(2_000)
    many, index = held(200_000)
    assert many - few < 1_200_000, (few, many)  # at most the write buffer's megabyte more
    differing = (("application/json",), ("text/html",), None)
    index.add("urn:x:1", differing, ("b.jsonl", None))
    ((ident, registrations, declared),) = index.conflicts()
    assert ident == "urn:x:1"
    assert registrations == (*(("a.jsonl", n) for n in range(200_000)), ("b.jsonl", None))
    assert declared == (*(declaration,) * 200_000, differing)
    # Asked again (the reporters ask once each), the same; a repeat added since is in it.
    index.add("urn:x:1", declaration, ("c.jsonl", 7))
    assert next(index.conflicts())[1][-2:] == (("b.jsonl", None), ("c.jsonl", 7))


@settings(max_examples=300, deadline=None)
@given(st.lists(declarations, min_size=2, max_size=6), st.booleans())
def test_a_declaration_digest_tells_declarations_apart_as_equality_does(
        said: list[tuple[Any, ...]], forget: bool) -> None:
    """Declarations are digested by their parts (inputs, outputs, ontology): two digests are
    equal exactly when the declarations are, whether the parts were remembered or forgotten
    (the memo cleared) in between."""
    first = [conflicts.declaration_digest(d) for d in said]
    if forget:
        conflicts._PART_DIGESTS.clear()
    again = [conflicts.declaration_digest(tuple(d)) for d in said]
    assert first == again
    for one, digest in zip(said, first, strict=True):
        for other, other_digest in zip(said, first, strict=True):
            assert (digest == other_digest) == (one == other)


def test_a_declaration_of_known_parts_is_digested_without_remembering_it_whole() -> None:
    """A directory's registrations combine a few media types in many ways: 4 inputs and 4
    outputs make 16 declarations, and the memo holds the 9 parts (one ontology), not the 16
    declarations (which were all remembered, and most of a large audit's were new)."""
    conflicts._PART_DIGESTS.clear()
    inputs = [f"application/vnd.in{n}+json" for n in range(4)]
    outputs = [f"application/vnd.out{n}+json" for n in range(4)]
    ontology = (("https://example.org/onto",), ("1.0",))
    digests = {conflicts.declaration_digest(((i,), (o,), ontology))
               for i in inputs for o in outputs}
    assert len(digests) == 16
    assert len(conflicts._PART_DIGESTS) == 9


def test_a_state_s_declaration_of_another_form_is_digested_too() -> None:
    """A declaration that is not a judge's three parts (none the judge makes, nor a state
    replays: its journal's entries are read by their form) still gets a digest (of its whole
    text) rather than an error, and one apart from the three parts'."""
    odd = (("text/plain",), ("text/html",))
    assert conflicts.declaration_digest(odd) == conflicts.declaration_digest(tuple(odd))
    assert conflicts.declaration_digest(odd) != conflicts.declaration_digest((*odd, None))


def _flat(n: int) -> tuple[Any, ...]:
    inputs = (f"n/{n}", *(f"a/{k}" for k in range(49)))  # under 512 as text
    return (inputs, ("text/plain",), None)


def _nested(n: int) -> tuple[Any, ...]:
    # An ontology's part nests its ids and versions: each string weighed as well.
    ontology = ((f"u:{n}", *(f"u:{k}" for k in range(24))), tuple(f"{k}" for k in range(24)))
    return (("text/plain",), ("text/plain",), ontology)


@pytest.mark.parametrize(("declaration", "times"), [(_flat, 6000), (_nested, 40000)],
                         ids=["fifty-media-types", "an-ontology-of-many-ids"])
def test_the_memory_of_parts_holds_no_more_than_its_bound(
        declaration: Callable[[int], tuple[Any, ...]], times: int) -> None:
    """Each part remembered is weighed as it is held, strings and all: parts of fifty short
    media types each (short as text, most of their weight their strings), or an ontology's
    ids and versions nested in it, fill the memory to its bound and no further, counted by
    what Python allocated for them."""
    import gc
    import tracemalloc

    conflicts._PART_DIGESTS.clear()
    conflicts._part_bytes = 0
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(times):
            conflicts.declaration_digest(declaration(n))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0 < conflicts._part_bytes <= conflicts.PART_DIGESTS_BYTES
    assert held <= conflicts.PART_DIGESTS_BYTES
    assert len(conflicts._PART_DIGESTS) > 100  # remembered, up to the bound (then forgotten)
