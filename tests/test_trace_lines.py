"""The lines of a trace as the fold reads them: each line's end is the byte offset the handle
stands at after it (a checkpoint resumes there), counted from the lines' lengths rather than
asked of the handle after each one."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import IO

from hypothesis import given
from hypothesis import strategies as st

from ioa_semantic.trace.events import Line, lines


def _told(handle: IO[bytes], seq: int, max_bytes: int) -> Iterator[Line]:
    """The reference: as lines() read them before, the end asked of the handle."""
    while True:
        data = handle.readline(max_bytes + 1)
        if not data:
            return
        seq += 1
        if len(data) > max_bytes and not data.endswith(b"\n"):
            while True:
                more = handle.readline(1 << 20)
                if not more or more.endswith(b"\n"):
                    break
        yield Line(seq, handle.tell(), data)


_PIECES = st.lists(st.one_of(st.binary(max_size=40), st.sampled_from([b"\n", b"\r\n", b"\r"]),
                             st.builds(lambda n: b"x" * n, st.integers(0, 3 << 20))),
                   max_size=12)


@given(_PIECES, st.integers(0, 64), st.integers(1, 300), st.integers(0, 5))
def test_each_lines_end_is_where_the_handle_stands_after_it(
        pieces: list[bytes], skip: int, max_bytes: int, seq: int) -> None:
    data = b"".join(pieces)
    start = min(skip, len(data))  # a resumed read begins where a checkpoint left off
    ours = io.BufferedReader(io.BytesIO(data))
    reference = io.BufferedReader(io.BytesIO(data))
    ours.seek(start)
    reference.seek(start)
    assert list(lines(ours, seq, max_bytes)) == list(_told(reference, seq, max_bytes))


def test_a_line_longer_than_the_bound_ends_after_its_drained_rest() -> None:
    data = b"a" * (3 << 20) + b"\nshort\n"
    read = list(lines(io.BufferedReader(io.BytesIO(data)), 0, 100))
    assert [(line.seq, line.end, len(line.data)) for line in read] == [
        (1, (3 << 20) + 1, 101), (2, len(data), 6)]
