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


def held(text: str | None) -> str | float | None:
    """How ``text`` (a timestamp's text, or None) is held: the float whose shortest text it
    is, else itself."""
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
