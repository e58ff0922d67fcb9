"""The text table (reporters.table), printed by rich: the layout the hand-written printer of
``trace query`` gave, byte for byte, whatever the terminal's width or kind."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioa_semantic.reporters.table import write_table


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).replace("\n", " ")


def hand_written(variables: Sequence[str], rows: Sequence[Mapping[str, Any]],
                 stream: io.StringIO) -> None:
    """The printer ``trace query`` had before rich (its layout is the contract): columns as
    wide as their widest cell, numbers right-aligned. Kept here as the reference, since the
    command's own printer is now the one under test."""
    cells = [[_cell(row[v]) for v in variables] for row in rows]
    widths = [max([len(v)] + [len(r[i]) for r in cells]) for i, v in enumerate(variables)]
    numeric = [bool(rows) and all(isinstance(row[v], int | float) and not isinstance(
        row[v], bool) for row in rows if row[v] is not None) for v in variables]

    def line(values: Sequence[str], header: bool = False) -> str:
        return "  ".join(value.rjust(w) if n and not header else value.ljust(w)
                         for value, w, n in zip(values, widths, numeric, strict=True)).rstrip()

    stream.write(line(variables, True) + "\n")
    stream.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        stream.write(line(row) + "\n")
    stream.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


def printed(variables: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    stream = io.StringIO()
    write_table(variables, rows, stream)
    return stream.getvalue()


def test_numbers_are_right_aligned_under_left_aligned_names() -> None:
    rows = [{"run": "r1", "spans": 3, "judged": True},
            {"run": "a long run name", "spans": 12345, "judged": None}]
    assert printed(["run", "spans", "judged"], rows) == (
        "run              spans  judged\n"
        "---------------  -----  ------\n"
        "r1                   3  true\n"
        "a long run name  12345\n"
        "(2 rows)\n")


def test_no_rows_and_no_columns() -> None:
    assert printed(["run"], []) == "run\n---\n(0 rows)\n"
    assert printed([], []) == "\n\n(0 rows)\n"


def test_a_narrow_terminal_neither_wraps_nor_colours_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "10")
    monkeypatch.setenv("FORCE_COLOR", "1")
    rows = [{"agent": "https://example.org/agents/translator-with-a-long-name", "calls": 7}]
    assert printed(["agent", "calls"], rows) == (
        "agent                                                   calls\n"
        "------------------------------------------------------  -----\n"
        "https://example.org/agents/translator-with-a-long-name      7\n"
        "(1 row)\n")


def test_markup_is_text_and_a_wide_character_takes_two_columns() -> None:
    assert printed(["term", "n"], [{"term": "[bold]x[/]", "n": 1}, {"term": "漢字", "n": 22}]) == (
        "term        n\n"
        "----------  --\n"
        "[bold]x[/]   1\n"
        "漢字        22\n"
        "(2 rows)\n")


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.text(st.characters(codec="latin-1", exclude_categories=["Cc"]),
                            max_size=12))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text("abcxyz", min_size=1, max_size=6), min_size=1, max_size=4,
                unique=True).flatmap(lambda names: st.tuples(
                    st.just(names),
                    st.lists(st.fixed_dictionaries({name: _VALUES for name in names}),
                             max_size=5))))
def test_it_prints_what_the_hand_written_printer_printed(
        table: tuple[list[str], list[dict[str, Any]]]) -> None:
    variables, rows = table
    expected = io.StringIO()
    hand_written(variables, rows, expected)
    assert printed(variables, rows) == expected.getvalue()
