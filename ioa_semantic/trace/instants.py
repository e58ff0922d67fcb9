"""A call's times as a long run holds them: the float a timestamp was written as, where that
float gives the timestamp's text back.

A call's ``start`` and ``end`` are texts in plain decimal notation, exactly as the trace wrote
them (events._instant). mas-lab writes Unix seconds as JSON numbers, so nearly every such text
is a float's shortest text: held as that float (24 bytes) rather than as the text (63 bytes
for ``1800000000.007``), two a call weighed 64 MiB of a million events (issue 37, measured).
The text is made again when read. A text no float gives back exactly (an integer, trailing
zeros, more digits than a double keeps, an exponent) is held as it is: what is read is always
the text that was written.
"""

from __future__ import annotations


def held(text: str | float | None) -> str | float | None:
    """How ``text`` (a timestamp's text, or None) is held: the float whose shortest text it
    is, else itself; a time already held is held as it is."""
    if type(text) is not str or "e" in text or "n" in text or "." not in text:
        return text
    try:
        number = float(text)
    except ValueError:
        return text
    # Only where the float gives the very text back: never rounded, never spelled otherwise
    # (float() also takes spaces, underscores and a leading "+", which repr never writes);
    # and never a negative zero, which equals zero (calls are compared by what they hold).
    return number if repr(number) == text and number != 0.0 else text


def text(value: str | float | None) -> str | None:
    """The text :func:`held` was given."""
    return repr(value) if type(value) is float else value  # type: ignore[return-value]


def earlier(value: str | float, than: str | float) -> bool:
    """Whether the instant held as ``value`` is earlier than the one held as ``than``, as
    their texts' decimal values compare. Two held floats compare as floats: each is the float
    whose shortest text was written, and that text lies within the float's own rounding
    interval, which no other float's overlaps, so the texts are ordered as the floats are."""
    if type(value) is float and type(than) is float:
        return value < than
    from decimal import Decimal  # only for a time held as its text (rare in mas-lab runs)

    return Decimal(text(value)) < Decimal(text(than))  # type: ignore[arg-type]
