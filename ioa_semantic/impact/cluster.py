"""A decision log's touched decisions judged on a Dask cluster: ``ioa-check impact LOG...
--scheduler ADDRESS`` (issue 40, item 3).

The client does what the local run does but the judging: it reads the log, keeps each logged
Checker's instances (5.3), asks each part of the change whether it touches each decision and
counts the skipped ones. The touched decisions go to the cluster in batches, in log order,
each carrying the instances its decisions' Checkers had logged up to them; a worker judges a
batch as :class:`~ioa_semantic.impact.Impact` judges (the same :func:`outcome_of`, the same
replayed Checkers, restoring their revision memory from what the batch carries, and a memo
of its own), reading the objects folder beside the log itself, each object proven by its
sha256 (the workers share the client's file system, as an audit's do). The outcomes come
back in log order, with a bounded number of batches in flight, and the client names the
causes and counts as the local run does: the reports and the exit status are the local
run's.

A batch carries all a decision is judged with: a replayed Checker's revision memory is the
log's record (an instance a decision reads only under the change is not carried to the next,
here or in the local run), so where the batches begin changes nothing.

Importing this module imports Dask; the command line imports it only for ``--scheduler``.
"""

# distributed's Client is only partly annotated.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import functools
import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from distributed import Client, Future, KilledWorker

from .change import Change, Part, parts_of
from .rejudge import Judging, Outcome, Seen, Touched, _Judge, outcome_of

#: Decisions a batch holds: a worker's seconds, when every one is judged.
BATCH = 256


class _Carried(Seen):
    """A logged Checker's instances as a batch carries them, up to one decision (``end``)."""

    def __init__(self, dropped: int, base: int, items: list[tuple[bytes, bytes]],
                 end: int) -> None:
        super().__init__()
        self.items, self.dropped, self.base, self._end = items, dropped, base, end

    @property
    def end(self) -> int:
        return self._end

    def since(self, position: int) -> list[tuple[bytes, bytes]]:
        return self.items[max(position - self.dropped, 0):max(self._end - self.dropped, 0)]


def on_workers(change: Change) -> Change:
    """``change`` as a worker reads it: the files it names by their absolute paths (a name
    that is no file is a shipped profile or artifact)."""
    def absolute(name: str) -> str:
        return os.path.abspath(name) if os.path.exists(name) else name

    return change._replace(profile=absolute(change.profile) if change.profile else None,
                           added=tuple(absolute(a) for a in change.added))


@functools.lru_cache(maxsize=4)
def _judging_for(change: Change) -> tuple[list[Part], _Judge]:
    """A worker's parts of ``change`` and what judges under them, kept for its batches."""
    return parts_of(change), _Judge()


def judge_batch(change: Change, batch: list[Touched]) -> list[Outcome]:
    """A worker's task: each decision of ``batch`` judged again, in order (its outcome
    without the decision, which the client does not need)."""
    parts, judge = _judging_for(change)
    # The revision memory is restored from what the batch carries, never from a batch
    # this worker judged before.
    judge.forget_runs()
    return [outcome._replace(after=None) for outcome in
            (outcome_of(judge.judge, parts, touched) for touched in batch)]


class _Carrier:
    """A batch's decisions as the workers read them, each taken as it is read: its
    instances as far as it (one list per logged Checker, while its oldest entries are still
    those kept), its log by its absolute path. Taken later, when the batch is full, a
    logged Checker's instances could have dropped the oldest that the local run judged a
    decision with (reading on to the batch's last decision appends, and drops, more)."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[int, int, list[tuple[bytes, bytes]]]] = {}

    def carry(self, touched: Touched) -> Touched:
        seen = touched.seen
        held = self._held.get(id(seen))
        if held is None or held[1] != seen.base:
            held = self._held[id(seen)] = (seen.dropped, seen.base, list(seen.items))
        else:
            held[2].extend(seen.items[len(held[2]):])
        dropped, base, items = held
        # The log by its absolute path: a worker finds its objects folder from its own
        # working directory.
        return touched._replace(
            item=touched.item._replace(log=os.path.abspath(touched.item.log)),
            seen=_Carried(dropped, base, items, touched.end))


def _carried(batch: list[Touched]) -> list[Touched]:
    """``batch`` as the workers read it, its decisions read just now (see :class:`_Carrier`)."""
    carrier = _Carrier()
    return [carrier.carry(touched) for touched in batch]


def judging(client: Client, change: Change, batch: int = BATCH) -> Judging:
    """Judging on the cluster ``client`` is connected to, of the decisions ``change``
    touches (as named on the client: see :func:`on_workers`)."""
    named = on_workers(change)

    def judge(touched: Iterator[Touched]) -> Iterator[tuple[Touched, Outcome]]:
        # Enough batches in flight to keep every worker busy, few enough that the decisions
        # waiting here (and their outcomes there) stay bounded.
        in_flight = max(4, 2 * sum(client.nthreads().values()))
        window: deque[tuple[list[Touched], list[Touched], Future[Any]]] = deque()

        def submitted(carried: list[Touched]) -> Future[Any]:
            return client.submit(judge_batch, named, carried, pure=False)

        while True:
            carrier = _Carrier()
            units, carried = [], []
            for one in itertools.islice(touched, batch):
                units.append(one)
                carried.append(carrier.carry(one))
            if not units:
                break
            window.append((units, carried, submitted(carried)))
            if len(window) >= in_flight:
                yield from _collected(*window.popleft(), submitted)
        while window:
            yield from _collected(*window.popleft(), submitted)

    return judge


def _collected(units: list[Touched], carried: list[Touched], pending: Future[Any],
               again: Callable[[list[Touched]], Future[Any]],
               ) -> Iterator[tuple[Touched, Outcome]]:
    """A batch's outcomes. One that Dask gave up on (worker processes died running it, and
    a worker runs more than the task that ended it) is submitted once more; given up on
    again, its decisions are not judged again, with why (never retried forever)."""
    try:
        outcomes: list[Outcome] = pending.result()
    except KilledWorker:
        try:
            outcomes = again(carried).result()
        except KilledWorker:
            outcomes = [Outcome("its batch ended worker processes of the cluster twice "
                                "(Dask's KilledWorker)")] * len(units)
    for touched, outcome in zip(units, outcomes, strict=True):
        # The log as it was named here, as the local run names it.
        yield touched, (outcome if outcome.flip is None else outcome._replace(
            flip=outcome.flip._replace(log=touched.item.log)))
