"""A call's times are held as the floats mas-lab wrote them as, and read back as the very
texts the trace gave (issue 37: two texts a call weighed 64 MiB of a million events)."""

from __future__ import annotations

import sys

from hypothesis import given
from hypothesis import strategies as st

from ioa_semantic.trace.events import _instant
from ioa_semantic.trace.instants import held, text


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
