"""What input may hide from a person reading a terminal or a log, shown as code points.

Below every layer that writes for people (the reporters, the service's log): a name, a
message or a traceback quoting input is filtered here before it is printed.
"""

import re

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
_HIDDEN = re.compile(f"[{_HIDDEN_CLASS}\ud800-\udfff]")
# The check's text report leaves lone surrogates to the stream's backslashreplace (a file
# name's byte 0xFF is written "\udcff", docs/architecture.md, "Output").
_HIDDEN_BUT_SURROGATES = re.compile(f"[{_HIDDEN_CLASS}]")


def visible(markup: str, *, surrogates: bool = True) -> str:
    """A line of a text report with what its input could hide in it shown: the report's
    own markup holds none of these characters, so the whole line is filtered."""
    hidden = _HIDDEN if surrogates else _HIDDEN_BUT_SURROGATES
    return hidden.sub(lambda m: f"<U+{ord(m.group()):04X}>", markup)


def visible_lines(text: str) -> str:
    """``text`` of several lines (a traceback for a log) with each line :func:`visible`: its
    line feeds kept, every other hidden character shown."""
    return "\n".join(visible(line) for line in text.split("\n"))
