"""What input may hide from a person reading a terminal or a log, shown as code points.

Below every layer that writes for people (the reporters, the service's log): a name, a
message or a traceback quoting input is filtered here before it is printed.
"""

import re
from functools import cache

# What a report may quote (a trace's names, a profile's sh:message, a file name) and a
# terminal would obey or reorder: every C0 control (a line feed would forge a line of the
# report), DEL and the C1 controls (ESC starts a sequence that moves the cursor or clears
# the screen), the Arabic letter mark, zero width characters and directional marks, the
# line and paragraph separators, the bidirectional embeddings, overrides and isolates,
# invisible operators, the byte order mark, interlinear annotation controls, tag
# characters and lone surrogates (as audit_html shows them). Each is printed as its code
# point.
_HIDDEN_CLASS = ("\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
                 "\ufff9-\ufffb\U000e0000-\U000e007f")
# The check's text report leaves lone surrogates to the stream's backslashreplace (a file
# name's byte 0xFF is written "\udcff", docs/architecture.md, "Output").


@cache
def _hidden(surrogates: bool) -> "re.Pattern[str]":
    """The class as a pattern, compiled when a line first needs it: its ranges cost a cold
    check about a millisecond to compile, and most reports are printable ASCII throughout."""
    return re.compile(f"[{_HIDDEN_CLASS}\ud800-\udfff]" if surrogates else f"[{_HIDDEN_CLASS}]")


def visible(markup: str, *, surrogates: bool = True) -> str:
    """A line of a text report with what its input could hide in it shown: the report's
    own markup holds none of these characters, so the whole line is filtered."""
    # Within ASCII, what is not printable is the class's ASCII part exactly (C0 and DEL).
    if markup.isascii() and markup.isprintable():
        return markup
    return _hidden(surrogates).sub(lambda m: f"<U+{ord(m.group()):04X}>", markup)


def visible_lines(text: str) -> str:
    """``text`` of several lines (a traceback for a log) with each line :func:`visible`: its
    line feeds kept, every other hidden character shown."""
    return "\n".join(visible(line) for line in text.split("\n"))


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (what Python makes of a byte that is not UTF-8
    in a file name, PEP 383): the only code points UTF-8 cannot encode. Asked without a
    pattern (the class took a cold check a third of a millisecond to compile); an ASCII
    string, which Python knows it holds, is answered at once."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
