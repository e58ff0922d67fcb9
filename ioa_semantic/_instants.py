"""Validity limits read to the letter: an ISO-8601 instant with more fraction digits than
Python's microsecond keeps.

``datetime.fromisoformat`` truncates a seventh fraction digit, which moves a lower limit
(an artifact's ``validFrom``, a proof's ``created``) earlier: the window would open before
the instant the artifact names (draft 7.2, "Any validity limits ... MUST be evaluated before
the artifact is used"). A limit is therefore rounded to the microsecond *inward*: a lower
limit up, an upper limit (``validUntil``, ``expires``) down, so the window used is never
wider than the one written.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

# The fraction of the seconds, the only part past a microsecond.
_FRACTION = re.compile(r"(?<=:\d\d)\.(\d+)")


def instant(text: str, *, lower: bool) -> datetime:
    """``text`` (an ISO-8601 instant, ``Z`` or an offset) as an aware datetime, rounded to
    the microsecond inward: up when it is a ``lower`` limit, down otherwise. Raises
    ValueError when it is not a date-time."""
    normal = text.replace("Z", "+00:00").replace("z", "+00:00")
    fraction = _FRACTION.search(normal)
    beyond = bool(fraction) and fraction is not None and any(
        digit != "0" for digit in fraction.group(1)[6:])
    if fraction is not None and len(fraction.group(1)) > 6:
        normal = normal[:fraction.start(1) + 6] + normal[fraction.end(1):]
    moment = datetime.fromisoformat(normal)
    return moment + timedelta(microseconds=1) if beyond and lower else moment
