"""``_findings.frozen``: what a Decision holds cannot be changed, whatever type it was given
as (the exact JSON types are frozen first, for speed; every other mapping or sequence as
before)."""

from __future__ import annotations

from collections import OrderedDict, UserDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ioa_semantic._findings import frozen


def first_frozen(value: Any) -> Any:
    """The definition as it was, the ABC checked before the exact types."""
    kind = type(value)
    if kind in {str, int, float, bool, type(None)}:
        return value
    if kind is dict or kind is MappingProxyType or isinstance(value, Mapping):
        return MappingProxyType({k: first_frozen(v) for k, v in value.items()})
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return tuple(map(first_frozen, value))
    return value


class Listing(list[Any]):
    pass


def _container(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    mappings = st.dictionaries(st.text(max_size=3), inner, max_size=3)
    sequences = st.lists(inner, max_size=3)
    return st.one_of(mappings, mappings.map(MappingProxyType), mappings.map(OrderedDict),
                     mappings.map(UserDict), sequences, sequences.map(tuple),
                     sequences.map(Listing))


_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3),
                                 st.floats(allow_nan=False)), _container, max_leaves=12)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, MappingProxyType):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_frozen_gives_what_it_gave(value: Any) -> None:
    assert _same(frozen(value), first_frozen(value))


def test_nothing_frozen_can_be_changed_through_what_was_given() -> None:
    inner: list[Any] = []
    listing = Listing([2])
    given_value = {"a": [1, {"b": inner}], "c": OrderedDict(d=listing)}
    held = frozen(given_value)
    inner.append(3)
    listing.append(4)
    assert held["a"] == (1, MappingProxyType({"b": ()}))
    assert held["c"]["d"] == (2,)
