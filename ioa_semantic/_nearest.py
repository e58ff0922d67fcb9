"""What a mistyped word was probably meant to be, said the same way everywhere.

A name the tool does not know (an option, a command, a shipped profile or artifact, a profile
term, an artifact member, a shipped query) is refused with the known name it resembles, if
any: ``difflib``'s similarity ratio, the standard library's, so that every place suggests
alike. A suggestion is only words for people: nothing is ever matched or accepted by it (the
contract's rule 4, labels are never identifiers, holds for the tool's own names too).
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

from collections.abc import Callable, Iterable

# How many unknown words of one input (a command line, an artifact) are each given the name
# they resemble: a suggestion is a similarity search over the known names, and a hostile
# input holds as many unknown words as its size allows; past these, they are only named.
SUGGESTED = 10


def nearest(word: str, known: Iterable[str]) -> str | None:
    """The known name most like ``word``, or None when none is close (difflib's cutoff)."""
    # Imported when a word is refused: a check that refuses nothing never pays for it.
    import difflib

    # Sorted: which of two equally close names is named must not depend on a set's order.
    close = difflib.get_close_matches(word, sorted(known), n=1)
    return close[0] if close else None


def did_you_mean(word: str, known: Iterable[str], spelled: Callable[[str], str] = repr) -> str:
    """`` (did you mean 'name'?)`` for the known name most like ``word``, or ``""``;
    ``spelled`` writes the name as the message shows names (quoted, by default)."""
    close = nearest(word, known)
    return f" (did you mean {spelled(close)}?)" if close is not None else ""
