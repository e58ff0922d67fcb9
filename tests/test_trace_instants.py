"""A call's times are held as the floats mas-lab wrote them as, and read back as the very
texts the trace gave (issue 37: two texts a call weighed 64 MiB of a million events)."""

from __future__ import annotations

import sys

from hypothesis import given
from hypothesis import strategies as st

from ioa_semantic.trace.events import _instant, held_instant
from ioa_semantic.trace.instants import earlier, held, text


@given(st.one_of(st.text(), st.none()))
def test_any_text_reads_back_as_it_was_given(value: str | None) -> None:
    assert text(held(value)) == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_timestamps_text_is_held_as_that_float(number: float) -> None:
    written = _instant(number)  # what the fold holds of a JSON number
    value = held(written)
    assert text(value) == written
    if "e" not in repr(number) and number != 0:  # its shortest text is plain decimal notation
        assert value == number and type(value) is float


def test_texts_a_float_would_spell_otherwise_are_held_as_texts() -> None:
    for written in ("1800000000.0070", "100", "+1.5", " 1.5", "1_0.5", "1.", ".5",
                    "12345678901234567890.5", "1e5", "nan", "inf", "-0",
                    # a zero: -0.0 equals 0.0, and calls are compared by what they hold
                    "-0.0", "0.0"):
        assert held(written) == written and type(held(written)) is str


def test_mas_labs_times_weigh_a_float_not_a_text() -> None:
    assert sys.getsizeof(held("1800000000.007")) < sys.getsizeof("1800000000.007") - 30


def test_calls_that_differ_only_in_a_zeros_sign_are_not_equal() -> None:
    from ioa_semantic.trace.calls import Call

    call = Call(key="k", id="k", cls="tool", agent=None, target=None, parent=None,
                parent_id=None, start="0.0", end="1800000000.007", first_line=3, status=None,
                label=None, tokens={}, finish=None, temperature=None, response_id=None,
                input=None, output=None, content=None, ambiguous=())
    assert call != call._replace(start="-0.0")
    assert call == call._replace(end="1800000000.007") and call.end == "1800000000.007"
    assert call._asdict()["end"] == "1800000000.007"


# Timestamps as a trace writes them: JSON numbers (held as floats) and texts no float gives
# back (held as texts), near one another so that both orders and equality are drawn.
_times = st.one_of(
    st.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False),
    st.integers(-10**20, 10**20),
    st.decimals(min_value=-10**12, max_value=10**12, allow_nan=False, allow_infinity=False,
                places=12)).map(_instant).filter(lambda written: written is not None)


@given(_times, _times)
def test_held_times_are_ordered_as_their_texts_decimal_values(one: str, other: str) -> None:
    """The fold finds a call that ends before it starts by comparing its two times as held
    (two floats as floats): the same answer as their texts' decimal values give."""
    from decimal import Decimal

    assert earlier(_held(one), _held(other)) is (Decimal(one) < Decimal(other))


def _held(written: str | None) -> str | float:
    value = held(written)
    assert value is not None
    return value


def test_neighbouring_floats_are_ordered_as_their_texts() -> None:
    import math
    from decimal import Decimal

    for base in (1800000000.007, 1.5, 1e-7, 123456789.123456):
        below, above = math.nextafter(base, 0), math.nextafter(base, math.inf)
        for one, other in ((below, base), (base, above), (base, base), (above, below)):
            first, second = _instant(one), _instant(other)
            assert first is not None and second is not None
            assert earlier(_held(first), _held(second)) is (Decimal(first) < Decimal(second))


@given(st.one_of(st.floats(), st.integers(), st.sampled_from(
    [1e-4, -1e-4, 9.999999999999999e-05, 1e16, -1e16, 9999999999999998.0, 0.0, -0.0,
     5e-324, 1.7976931348623157e308, float("inf"), float("nan"), 1800000000.007, 1.5])))
def test_a_timestamp_is_held_as_its_text_would_be(value: float | int) -> None:
    """The fold holds a float without writing its text and reading it back: what it holds is
    what the text would be held as, of the same type (a float, or the text where a float
    would spell it otherwise)."""
    fast, slow = held_instant(value), (None if _instant(value) is None else held(_instant(value)))
    assert type(fast) is type(slow)
    assert fast == slow or (fast != fast and slow != slow)
