"""Progress of a long trace feed on a terminal: lines read, inputs done, the rate.

Shown on ``stream`` only when it is a terminal (a pipe or a file gets nothing), with rich, as
the audit shows its running count; it goes away when the feed ends, leaving the report.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Protocol


class Reading(Protocol):
    def input(self, index: int) -> None: ...

    def read(self, lines: int) -> None: ...


class _Silent:
    def input(self, index: int) -> None:
        pass

    def read(self, lines: int) -> None:
        pass


@contextmanager
def reading(stream: IO[str], inputs: int) -> Iterator[Reading]:
    """Where a feed says how far it is: :meth:`Reading.input` as each input begins (from 0),
    :meth:`Reading.read` with the lines (events, spans' lines, messages) the input has had
    read so far."""
    if not stream.isatty():
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.fields[lines]:,} lines read, input "
                                           "{task.fields[at]} of {task.total:.0f}, "
                                           "{task.fields[rate]:,.0f} lines/s"),
               TimeElapsedColumn())
    with Progress(*columns, console=Console(file=stream), transient=True) as progress:
        task = progress.add_task("trace", total=inputs, lines=0, at=1, rate=0.0)
        yield _Shown(progress, task)


class _Shown:
    def __init__(self, progress: object, task: object) -> None:
        self.progress = progress
        self.task = task
        self.started = time.monotonic()
        self.before = 0  # lines of the inputs already read
        self.current = 0

    def input(self, index: int) -> None:
        self.before += self.current
        self.current = 0
        self.progress.update(self.task, completed=index, at=index + 1)  # type: ignore[attr-defined]

    def read(self, lines: int) -> None:
        self.current = lines
        total = self.before + lines
        elapsed = max(time.monotonic() - self.started, 1e-9)
        self.progress.update(self.task, lines=total, rate=total / elapsed)  # type: ignore[attr-defined]
