"""Instants read to the letter: an ISO-8601 instant with more fraction digits than Python's
microsecond keeps.

``datetime.fromisoformat`` truncates a seventh fraction digit, which would move a lower limit
(an artifact's ``validFrom``, a proof's ``created``) earlier: the window would open before
the instant the artifact names (draft 7.2, "Any validity limits ... MUST be evaluated before
the artifact is used"). Rounding instead (a lower limit up, an upper one down) keeps no
window wider than written, but judges the instants between wrongly: an evaluation instant
just before a ``validUntil`` of ``...00.0000001Z`` is before it, and a window of a tenth of
a microsecond is a window. So an instant is kept exactly: an :class:`Instant` is the
datetime of its microseconds and the digits written past them, and it compares, hashes and
prints by both.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any

# An instant as written wherever the project reads one (RFC 3339's date-time, which ISO 8601
# and XML Schema's dateTimeStamp share): a date, "T", the time to the second, an optional
# fraction, then "Z" or an offset; ASCII digits (RFC 3339 allows "t" and "z" in lower case).
# Python's own reader alone took any character between the date and the time, and a space
# before the offset.
_WRITTEN = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?)"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})?")
# The fraction of the seconds, the only part past a microsecond.
_FRACTION = re.compile(r"(?<=:[0-9][0-9])\.([0-9]+)")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)


class Instant(datetime):
    """A datetime and the digits of its fraction of a second past the sixth (``beyond``,
    trailing zeros dropped: ``""`` when there are none, and then it is the datetime it
    extends in every respect).

    Compared with a datetime or another Instant, each is the exact instant it names: an
    evaluation instant (a datetime, to the microsecond) is before ``...00.0000001Z`` when it
    is ``...00Z``. Python asks a right operand that subclasses the left one first, so
    ``at < limit`` is answered here as ``limit > at``. A time zone conversion keeps the
    digits; what arithmetic or ``replace`` makes of one is the instant to the microsecond
    (datetime makes those without this class's constructor: hence the class's default)."""

    beyond: str = ""

    def __new__(cls, *args: Any, beyond: str = "", **fields: Any) -> Instant:
        made = super().__new__(cls, *args, **fields)
        made.beyond = beyond.rstrip("0")
        return made

    def _order(self, other: object) -> int | None:
        """-1, 0 or 1 as this instant is before, at or after ``other``; None when ``other``
        is no datetime. Raises TypeError for a datetime without an offset, as datetime's own
        comparison of aware and naive ones does."""
        if not isinstance(other, datetime):
            return None
        if (self.utcoffset() is None) != (other.utcoffset() is None):
            raise TypeError("can't compare offset-naive and offset-aware datetimes")
        mine, theirs = _micro(self), _micro(other)
        if mine != theirs:
            return -1 if mine < theirs else 1
        digits = self.beyond
        other_digits = other.beyond if isinstance(other, Instant) else ""
        width = max(len(digits), len(other_digits))
        digits, other_digits = digits.ljust(width, "0"), other_digits.ljust(width, "0")
        return (digits > other_digits) - (digits < other_digits)

    def __eq__(self, other: object) -> bool:
        # As datetime's: a naive one never equals an aware one (no TypeError for ==).
        if not isinstance(other, datetime) or (
                (self.utcoffset() is None) != (other.utcoffset() is None)):
            return False
        return self._order(other) == 0

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return datetime.__hash__(self) if not self.beyond else hash((_micro(self), self.beyond))

    def __lt__(self, other: date) -> bool:
        return _compared(self._order(other), other) < 0

    def __le__(self, other: date) -> bool:
        return _compared(self._order(other), other) <= 0

    def __gt__(self, other: date) -> bool:
        return _compared(self._order(other), other) > 0

    def __ge__(self, other: date) -> bool:
        return _compared(self._order(other), other) >= 0

    def astimezone(self, tz: tzinfo | None = None) -> Instant:
        return _extended(datetime.astimezone(self, tz), self.beyond)

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        """As datetime writes it, with the digits past the microsecond where they stand."""
        text = datetime.isoformat(self, sep, timespec)
        if not self.beyond or timespec != "auto":
            return text
        seconds = text.index(":", text.index(":") + 1) + 3  # past the seconds' two digits
        rest = text[seconds + 7:] if self.microsecond else text[seconds:]
        return f"{text[:seconds]}.{self.microsecond:06d}{self.beyond}{rest}"

    def __str__(self) -> str:
        return self.isoformat(" ")

    def __repr__(self) -> str:
        shown = datetime.__repr__(self)
        return f"{shown[:-1]}, beyond={self.beyond!r})" if self.beyond else shown

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        state = datetime.__reduce_ex__(self, protocol)[1]
        return (_restored, (state, self.beyond))


def _extended(moment: datetime, beyond: str) -> Instant:
    """``moment`` with the digits ``beyond`` its microsecond."""
    return Instant(moment.year, moment.month, moment.day, moment.hour, moment.minute,
                   moment.second, moment.microsecond, moment.tzinfo, fold=moment.fold,
                   beyond=beyond)


def _restored(state: tuple[Any, ...], beyond: str) -> Instant:
    return Instant(*state, beyond=beyond)


def _micro(moment: datetime) -> timedelta:
    """Its microseconds since the epoch, whatever its offset (a naive one's as it reads)."""
    return datetime.__sub__(moment, _EPOCH if moment.utcoffset() is not None else _NAIVE_EPOCH)


def _compared(order: int | None, other: object) -> int:
    if order is None:
        raise TypeError(f"an instant is not comparable with {type(other).__name__}")
    return order


def instant(text: str, *, utc_unless_offset: bool = False) -> Instant:
    """``text`` (an ISO-8601 instant, ``Z`` or an offset) as an aware :class:`Instant`, every
    fraction digit kept. Raises ValueError when it is not a date-time, when it has no UTC
    offset (unless ``utc_unless_offset``: then it is read as UTC, for a format that says
    its instants are), or when it lies outside the years Python's datetime counts."""
    written = _WRITTEN.fullmatch(text)
    if written is None:
        raise ValueError(f"{text!r} is not a date-time (YYYY-MM-DDThh:mm:ss, an optional "
                         "fraction, then Z or a UTC offset such as +02:00)")
    if written.group(2) is None and not utc_unless_offset:
        raise ValueError(f"{text!r} has no UTC offset")
    normal = text.replace("Z", "+00:00").replace("z", "+00:00")
    if written.group(2) is None:
        normal += "+00:00"
    fraction = _FRACTION.search(normal)
    beyond = ""
    if fraction is not None and len(fraction.group(1)) > 6:
        beyond = fraction.group(1)[6:]
        normal = normal[:fraction.start(1) + 6] + normal[fraction.end(1):]
    try:
        moment = datetime.fromisoformat(normal)
    except ValueError:
        raise ValueError(f"{text!r} is not a date-time") from None
    try:
        moment.astimezone(UTC)  # an offset past the first or the last year: out of range
    except OverflowError:
        raise ValueError(f"{text!r} lies outside the years 1 to 9999 in UTC") from None
    return _extended(moment, beyond)
