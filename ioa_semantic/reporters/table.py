"""Rows as a plain text table for people (``ioa-check trace query --format text``): a header,
a rule of dashes under it, one line a row, then the count of rows.

Printed by rich, with its colour, markup, highlighting and wrapping off and its width set
from the cells, never from the terminal: the same rows give the same bytes on a terminal,
in a pipe and in a test. Columns are as wide as their widest cell (as a terminal shows
them: a wide character takes two), two spaces apart; a column of numbers is right-aligned
under its left-aligned name. A tab in a cell is printed as the spaces to its stop; any other
character a terminal would obey or hide (an escape sequence's ESC, a carriage return, a
bidirectional override: what a trace's names may carry) is shown as its code point
(reporters.visible), in the column names too.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import IO, Any

_GAP = 2  # spaces between two columns


def cell(value: Any) -> str:
    """A value as its cell: nothing for None, true/false, anything else on one line."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).replace("\n", " ")


def write_table(variables: Sequence[str], rows: Sequence[Mapping[str, Any]],
                stream: IO[str]) -> None:
    """``rows`` (each a value by variable) as a table of the ``variables``' columns."""
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from . import visible

    # A tab as the spaces to its stop, which is what rich prints (and measures) for it.
    cells = [[visible(cell(row[v]).expandtabs()) for v in variables] for row in rows]
    names = [visible(v) for v in variables]
    widths = [max([cell_len(v)] + [cell_len(r[i]) for r in cells])
              for i, v in enumerate(names)]
    numeric = [bool(rows) and all(isinstance(row[v], int | float) and not isinstance(
        row[v], bool) for row in rows if row[v] is not None) for v in variables]
    table = Table(box=None, show_header=False, show_edge=False, pad_edge=False,
                  padding=(0, _GAP // 2), collapse_padding=False)
    for number in numeric:
        table.add_column(justify="right" if number else "left", no_wrap=True)
    # The header is a row of its own: rich would align a numeric column's name to the right.
    table.add_row(*(Text(name.ljust(width + len(name) - cell_len(name)), justify="left")
                    for name, width in zip(names, widths, strict=True)))
    table.add_row(*(Text("-" * width) for width in widths))
    for row in cells:
        table.add_row(*(Text(value) for value in row))
    printed = io.StringIO()
    console = Console(file=printed, width=max(1, sum(widths) + _GAP * (len(widths) - 1)),
                      color_system=None, force_terminal=False, force_jupyter=False,
                      highlight=False, markup=False, emoji=False, soft_wrap=False,
                      legacy_windows=False)
    console.print(table)
    # rich pads every line to the table's width; the rule under the header keeps its own.
    # With no column at all, the header and its rule are empty lines.
    lines = printed.getvalue().splitlines() if variables else ["", ""]
    for at, line in enumerate(lines):
        stream.write((line if at == 1 else line.rstrip()) + "\n")
    stream.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
