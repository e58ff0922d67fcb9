"""A run's :class:`Call` holds the ten fields most calls leave at their defaults in one slot,
and not at all when they are (issue 37: a long run's calls are held to the end of its store's
load, and those ten fields took 80 bytes a call): it is still made, read, compared, shown,
copied, pickled and replaced as the named tuple of its 24 fields it was.

Each property is checked against that named tuple as it was declared (:class:`OldCall`), over
calls whose rare fields are set or left at their defaults. Memory is a size, never a time.
"""

from __future__ import annotations

import copy
import operator
import pickle
import sys
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ioa_semantic.trace.calls import Call, Digest


class OldCall(NamedTuple):
    """Call as it was declared before its rare fields were held apart: the reference."""

    key: str
    id: str
    cls: str
    agent: str | None
    target: str | None
    parent: str | None
    parent_id: str | None
    start: str | None
    end: str | None
    first_line: int
    status: str | None
    label: str | None
    tokens: dict[str, int]
    finish: str | None
    temperature: float | None
    response_id: str | None
    input: Digest | None
    output: Digest | None
    content: dict[str, Any] | None
    ambiguous: tuple[str, ...]
    remote: bool = False
    candidates: tuple[str, ...] | None = None
    agent_id: str | None = None
    own_agent: str | None = None


ORDER = ("key", "id", "cls", "agent", "target", "parent", "parent_id", "start", "end",
         "first_line", "status", "label", "tokens", "finish", "temperature", "response_id",
         "input", "output", "content", "ambiguous", "remote", "candidates", "agent_id",
         "own_agent")
RARE = ("label", "finish", "temperature", "response_id", "content", "ambiguous", "remote",
        "candidates", "agent_id", "own_agent")
AT_DEFAULTS: dict[str, Any] = {"label": None, "finish": None, "temperature": None,
                               "response_id": None, "content": None, "ambiguous": (),
                               "remote": False, "candidates": None, "agent_id": None,
                               "own_agent": None}


class Names(tuple[str, ...]):
    """An empty tuple of another type: equal to ``()``, not the default itself."""

    __slots__ = ()


text = st.text(max_size=6)
maybe_text = st.none() | text
names = st.lists(text, max_size=3).map(tuple)
digests = st.none() | st.builds(
    Digest, st.text("0123456789abcdef", min_size=64, max_size=64) | st.just("text-" + "ab" * 10)
    | text, st.integers(0, 2**40))
json_values = st.recursive(st.none() | st.booleans() | st.integers() | text,
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(text, inner, max_size=3), max_leaves=6)

COMMON: dict[str, st.SearchStrategy[Any]] = {
    "key": text, "id": text, "cls": st.sampled_from(("agent", "llm", "tool", "mas", "span")),
    "agent": maybe_text, "target": maybe_text, "parent": maybe_text, "parent_id": maybe_text,
    "start": maybe_text, "end": maybe_text, "first_line": st.integers(0, 2**31),
    "status": maybe_text, "tokens": st.dictionaries(text, st.integers(0, 10**6), max_size=2),
    "input": digests, "output": digests}
# The rare fields' values: a value of its own, or one equal to the default that is not it (the
# call keeps it as given, and compares as a tuple of it would).
SET: dict[str, st.SearchStrategy[Any]] = {
    "label": text, "finish": text, "response_id": text, "agent_id": text, "own_agent": text,
    "temperature": st.floats(allow_nan=False), "content": st.dictionaries(text, json_values,
                                                                             max_size=3),
    "ambiguous": names.filter(bool) | st.just(Names()), "remote": st.sampled_from((True, 0, 1)),
    "candidates": names}


@st.composite
def calls(draw: st.DrawFn, rare: bool | None = None) -> dict[str, Any]:
    """The 24 fields of a call, in their order; ``rare``: its rare fields all set to values of
    their own (True), all at their defaults (False), or each either way (None)."""
    values = {name: draw(COMMON[name]) if name in COMMON else None for name in ORDER}
    for name in RARE:
        given_one = draw(st.booleans()) if rare is None else rare
        values[name] = draw(SET[name]) if given_one else AT_DEFAULTS[name]
    return values


def outcome(operation: Any, *operands: Any) -> Any:
    """What an operation gives: its answer, or the type of what it raised."""
    try:
        return operation(*operands)
    except TypeError as exc:
        return type(exc)


def test_the_fields_are_the_24_in_their_declared_order() -> None:
    assert Call._fields == OldCall._fields == ORDER
    assert Call.__match_args__ == OldCall.__match_args__
    assert Call._field_defaults == OldCall._field_defaults


@given(calls())
def test_every_field_reads_back_as_given_by_keyword_or_place(values: dict[str, Any]) -> None:
    for call in (Call(**values), Call(*values.values()), Call._make(values.values())):
        assert type(call) is Call
        for name, value in values.items():
            assert getattr(call, name) is value or (
                getattr(call, name) == value and type(getattr(call, name)) is type(value)), name
        assert list(call._asdict()) == list(ORDER)
        assert call._asdict() == values
        assert all(a is b for a, b in zip(call._asdict().values(), values.values(), strict=True))


@given(calls())
def test_it_shows_iterates_and_indexes_as_the_named_tuple(values: dict[str, Any]) -> None:
    call, old = Call(**values), OldCall(**values)
    assert repr(call) == "Call" + repr(old)[len("OldCall"):]
    assert len(call) == len(old) == 24
    assert tuple(call) == tuple(old) and list(call) == list(old)
    assert all(call[i] == old[i] for i in range(-24, 24))
    assert operator.getitem(call, slice(3, 17, 2)) == old[3:17:2]  # (mypy: the held slice)
    assert (values["key"] in call) and call.count(values["key"]) == old.count(values["key"])
    assert call.index(values["tokens"]) == old.index(values["tokens"])
    assert call + (1,) == old + (1,) and (1,) + call == (1,) + old  # noqa: RUF005
    assert call * 2 == old * 2
    assert outcome(hash, call) is outcome(hash, old) is TypeError  # its tokens are a dict


@given(calls(), st.data())
def test_replace_changes_what_it_is_given_and_nothing_else(values: dict[str, Any],
                                                            data: st.DataObject) -> None:
    call = Call(**values)
    names = data.draw(st.lists(st.sampled_from(ORDER), unique=True))
    other = data.draw(calls())
    changes = {name: other[name] for name in names}
    for replaced in (call._replace(**changes), call.__replace__(**changes)):
        assert type(replaced) is Call
        assert replaced._asdict() == {**values, **changes}
        assert replaced == OldCall(**values)._replace(**changes)
    assert call._asdict() == values  # itself unchanged
    with pytest.raises(ValueError, match=r"Got unexpected field names: \['colour'\]"):
        call._replace(label="x", colour="red")  # type: ignore[arg-type]


@given(calls())
def test_pickle_and_copy_make_the_same_call_again(values: dict[str, Any]) -> None:
    call = Call(**values)
    again = [pickle.loads(pickle.dumps(call, protocol)) for protocol in
             range(pickle.HIGHEST_PROTOCOL + 1)]
    for made in (*again, copy.copy(call), copy.deepcopy(call)):
        assert type(made) is Call
        assert made == call
        assert not made != call  # noqa: SIM202 (its own __ne__)
        assert made._asdict() == values and repr(made) == repr(call)
        assert (made.rare is None) is (call.rare is None)  # held alike


@given(calls(), calls(), st.data())
def test_equality_and_order_are_the_24_tuples(first: dict[str, Any], second: dict[str, Any],
                                              data: st.DataObject) -> None:
    # Mostly the same call but for a few fields, some of them equal to what they replace
    # without being it (remote 0 for False, an empty tuple of another type for ()).
    names = data.draw(st.lists(st.sampled_from(ORDER), max_size=3, unique=True))
    near = {**first, **{name: second[name] for name in names}}
    same_value = {"remote": 0 if first["remote"] is False else first["remote"],
                  "ambiguous": Names() if first["ambiguous"] == () else first["ambiguous"]}
    for other in (second, near, {**first, **same_value}, first):
        a, b = Call(**first), Call(**other)
        old_a, old_b = OldCall(**first), OldCall(**other)
        assert (a == b) is (old_a == old_b) and (a != b) is (old_a != old_b)
        # Against a tuple of the 24 on either side (not another named tuple on the left: its
        # own comparison answers first, and sees the items held).
        plain_b = tuple(other.values())
        assert (a == old_b) is (a == plain_b) is (plain_b == a) is (old_a == old_b)
        assert (a != old_b) is (a != plain_b) is (plain_b != a) is (old_a != old_b)
        for compare in (operator.lt, operator.le, operator.gt, operator.ge):
            assert outcome(compare, a, b) == outcome(compare, old_a, old_b)
            assert outcome(compare, a, old_b) == outcome(compare, old_a, old_b)
            assert outcome(compare, plain_b, a) == outcome(compare, old_b, old_a)
    assert Call(**first) != "not a call" and Call(**first) != None  # noqa: E711


@given(calls(rare=False))
def test_a_call_with_its_rare_fields_at_their_defaults_holds_15_slots(
        values: dict[str, Any]) -> None:
    # 24 fields were 40 + 8 a field (232 bytes); the 14 most calls set and one slot for the
    # rest, 160. The bound, 16 slots, fails for the 24-tuple.
    call = Call(**values)
    assert sys.getsizeof(call) <= 8 * 16 + 48
    assert sys.getsizeof(OldCall(**values)) > 8 * 16 + 48
    assert call.rare is None  # nothing else held for them


@given(calls(rare=True))
def test_a_rare_field_set_is_held_and_reads_back(values: dict[str, Any]) -> None:
    call = Call(**values)
    assert call.rare is not None
    for name in RARE:
        assert getattr(call, name) is values[name]
    cleared = call._replace(**AT_DEFAULTS)
    assert cleared.rare is None and cleared == OldCall(**{**values, **AT_DEFAULTS})


def test_a_match_statement_takes_its_fields_by_place() -> None:
    call = Call("k", "i", "tool", "a", "t", None, None, None, None, 3, None, "L", {}, None, None,
                None, None, None, None, (), own_agent="o")
    match call:
        case Call(key, _, cls, agent, target):
            assert (key, cls, agent, target) == ("k", "tool", "a", "t")
        case _:
            pytest.fail("not matched")
    match call:
        case Call(label=label, own_agent=own):
            assert (label, own) == ("L", "o")
        case _:
            pytest.fail("not matched")
