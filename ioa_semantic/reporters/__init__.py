"""Reporters render decisions and audits (text, JSON, SARIF); they return nothing.

Every JSON line they write is UTF-8 JSON: :func:`json_text` is the one way they write it.
Every text report for a terminal prints through :class:`Visible`.
"""

import json
import re
from typing import Any

from .._visible import has_lone_surrogate
from .._visible import visible as visible  # re-exported: the commands print through it

# A lone surrogate is what Python makes of a byte that is not UTF-8 in a file name (PEP 383,
# "surrogateescape"); written raw it would be that byte, and the line would not be UTF-8.
_LONE_SURROGATE = "[\ud800-\udfff]"


def json_text(value: Any, **options: Any) -> str:
    """``value`` as JSON text that is UTF-8 whatever it holds: text as it is, but a lone
    surrogate (an undecodable byte ``b`` of a file name, as ``\\udcXX``) written as its JSON
    escape, which ``json.loads`` reads back to the same string (and ``os.fsencode`` to the
    same bytes). docs/architecture.md, "Output"."""
    text = json.dumps(value, ensure_ascii=False, **options)
    if not has_lone_surrogate(text):
        return text
    return re.sub(_LONE_SURROGATE, lambda m: f"\\u{ord(m.group()):04x}", text)


def declared_text(value: list[str] | None) -> str:
    """What a registration declares of a member, for people (an audit's conflicts, text and
    HTML): its values, ``(none)`` for no value, ``(not kept)`` where the audit did not keep
    the declaration (docs/audit.md, "Conflicts")."""
    if value is None:
        return "(not kept)"
    return ", ".join(value) if value else "(none)"


class Visible:
    """A console that prints each line of a report through :func:`visible`."""

    def __init__(self, console: Any, *, surrogates: bool = True) -> None:
        self.console = console
        self.surrogates = surrogates

    def print(self, markup: str) -> None:
        self.console.print(visible(markup, surrogates=self.surrogates))

    def print_lines(self, lines: list[str]) -> None:
        """Several lines at once, each as :meth:`print` prints it: rich's cost is per
        call as much as per line (a report of many short lines costs half as much)."""
        self.console.print("\n".join(visible(markup, surrogates=self.surrogates)
                                     for markup in lines))
