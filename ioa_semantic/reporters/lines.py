"""A text report's lines as pieces of text, each plain or styled: drawn by rich on a
terminal, written as they are anywhere else.

Rich draws no style where its output is not a terminal (a pipe, a file, a test), and
importing it costs about half of a one-envelope ``ioa-check`` there (issue 39,
docs/performance.md, "Cold start"). So a report built of pieces imports rich only when
rich would style it: the same text either way, held so by ``tests/test_report_lines.py``.
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Any

from .._visible import visible

if TYPE_CHECKING:
    from rich.console import Console

# A piece of a line: text, or text and the rich style it is drawn in on a terminal.
Piece = str | tuple[str, str]


def styled(stream: IO[str]) -> bool:
    """Whether rich would draw styles on ``stream``: its own rules (``Console.is_terminal``
    of rich 14-15, the versions pyproject.toml allows), read without importing it. Where
    they say no, the report is the pieces' text; where they say yes, rich draws it and
    applies its own further rules (``NO_COLOR``, a dumb terminal)."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    return is_terminal(stream)


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` says it is a terminal (a stream without ``isatty``, or closed, is
    not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


def text_console(stream: IO[str]) -> Console:
    """A rich console for a text report on ``stream``.

    Rich ends the process with status 1 when the reader of stdout goes away, which here
    would read as "incompatible"; this one raises BrokenPipeError instead, for the command
    line to end as every other command does then.
    """
    from rich.console import Console

    class ReportConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    # No emoji codes: messages quote the input, and "did:key:z6Mk..." would print a key.
    return ReportConsole(file=stream, highlight=False, soft_wrap=True, emoji=False)


class Lines:
    """Where a text report writes its lines (``surrogates``: as :func:`visible` shows them).
    ``console``: the rich console to draw on, where the caller has one; by default one is
    made only if :func:`styled` says rich would style the stream."""

    def __init__(self, stream: IO[str], *, surrogates: bool = True,
                 console: Any | None = None) -> None:
        self.stream = stream
        self.surrogates = surrogates
        if console is None and styled(stream):
            console = text_console(stream)
        self.console = console

    def line(self, *pieces: Piece) -> None:
        if self.console is None:
            text = "".join(p if isinstance(p, str) else p[0] for p in pieces)
            self.stream.write(visible(text, surrogates=self.surrogates) + "\n")
            return
        from rich.text import Text

        # Text, never markup: rich's markup escape does not survive every text (a piece
        # ending in backslashes before a styled one loses one), and a report quotes input.
        self.console.print(Text.assemble(*(
            visible(p, surrogates=self.surrogates) if isinstance(p, str)
            else (visible(p[0], surrogates=self.surrogates), p[1]) for p in pieces)))
