"""The judgement of registrations in batches, in this process or in worker processes.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .._checker import Checker

from .._exceptions import WorkerLost
from .._runtime import die_with
from ..compiled.engine import CompiledEngine
from .conflicts import Declared, digested
from .inputs import _BATCH, Piece, items_of
from .judge import (
    _INPUTS,
    _ONTOLOGY_ID,
    _ONTOLOGY_VERSION,
    _OUTPUTS,
    Item,
    Judged,
    Render,
    Result,
    judge,
    judge_node,
)
from .kinds import Kinds
from .places import Element, places

_WORKER_CHECKER: Checker | None = None


_WORKER_KINDS: Kinds | None = None


def kinds_for(checker: Checker) -> Kinds | None:
    """Registrations judged by kind under ``checker`` (its compiled engine only: the reference
    engine judges every registration in full)."""
    if not isinstance(checker.stages, CompiledEngine) or checker.constraints is not None:
        return None  # a profile's shapes read the node: each registration is expanded
    return Kinds(checker.stages,
                 keep=frozenset({_INPUTS, _OUTPUTS, _ONTOLOGY_ID, _ONTOLOGY_VERSION}))


def judge_batch(checker: Checker, batch: Iterable[Item], kinds: Kinds | None = None,
                place: bool = False) -> list[tuple[Result, tuple[Any, ...] | None]]:
    """A batch of items judged together: the unit of work of every audit runner.

    Local workers and a cluster's workers alike call this, so they report the same.
    """
    return list(judged_items(checker, batch, kinds, place))


def judged_items(checker: Checker, items: Iterable[Item], kinds: Kinds | None = None,
                 place: bool = False) -> Iterator[tuple[Result, tuple[Any, ...] | None]]:
    """Each item's result and declaration, in order; with ``place``, each result with a
    reason placed in the text it was judged from (an array's items come as :class:`Element`,
    see :func:`.inputs.document_items`)."""
    if not place:
        yield from _judged_items(checker, items, kinds)
        return
    items = list(items)
    # An array's item is judged as the plain dict it was read as.
    unwrapped = [(source, index, dict(document) if isinstance(document, Element) else document,
                  problems) for source, index, document, problems in items]
    for item, (result, declaration) in zip(items, _judged_items(checker, unwrapped, kinds),
                                           strict=True):
        yield placed(result, item[2]), declaration


def placed(result: Result, document: Any) -> Result:
    """``result`` with the places of its reasons' paths in ``document``'s text, when it has
    reasons and its text is at hand (an unreadable file has none)."""
    if not result.reasons:
        return result
    if isinstance(document, Element):
        text, line, column = document.text, document.line, document.column
    elif isinstance(document, bytes):
        text, line, column = document.decode("utf-8", "replace"), 1, 1
    else:
        return result
    found = places(text, {"", *(reason.path for reason in result.reasons)}, line, column)
    return result._replace(places=tuple(sorted(found.items())))


def _judged_items(checker: Checker, items: Iterable[Item],
                  kinds: Kinds | None = None) -> Iterator[tuple[Result, tuple[Any, ...] | None]]:
    if checker.constraints is not None:
        # The profile's shapes, applied to the batch's valid registrations together.
        from .constraints import constrained

        yield from constrained(checker.constraints, checker.stages.fixed, [
            (Result(source, index, None, "invalid", tuple(problems)), None, None)
            if document is None else judge_node(checker, document, source, index)
            for source, index, document, problems in items])
        return
    for source, index, document, problems in items:
        if document is None:
            yield Result(source, index, None, "invalid", tuple(problems)), None
        else:
            yield judge(checker, document, source, index, kinds)


def judge_together(checker: Checker, batch: Iterable[Item], render: Render | None = None,
                   kinds: Kinds | None = None, place: bool = False) -> Judged:
    """A batch judged into what the audit counts and the reporters write: where it is
    judged (a worker), so that the process writing the output handles a batch, not each
    registration in it."""
    lines: list[str] = []
    notable: list[Result] = []
    declarations: list[Declared] = []
    size = 0
    for result, declaration in judged_items(checker, batch, kinds, place):
        size += 1
        if render is not None:
            lines.append(render(result))
        if not result.plain:
            notable.append(result)
        if declaration is not None and result.id is not None:
            declarations.append((result.id, declaration, (result.source, result.position)))
    return Judged(size, "".join(lines), tuple(notable), *digested(declarations))


def batched(results: Iterable[Result], render: Render | None = None) -> Iterator[Judged]:
    """Results judged elsewhere (a cluster), as the reporters read them: batches. Their
    declarations stay with whoever counted them."""
    batch: list[Result] = []
    for result in results:
        batch.append(result)
        if len(batch) == _BATCH:
            yield _as_judged(batch, render)
            batch = []
    if batch:
        yield _as_judged(batch, render)


def _as_judged(batch: list[Result], render: Render | None) -> Judged:
    return Judged(len(batch), "".join(map(render, batch)) if render is not None else "",
                  tuple(r for r in batch if not r.plain), [], {})


def judge_piece(checker: Checker, piece: Piece, render: Render | None = None,
                kinds: Kinds | None = None, place: bool = False) -> Judged:
    """A piece of the input judged (in a worker, where a block of lines is also split)."""
    return judge_together(checker, items_of(piece), render, kinds, place)


def _judge_in_worker(piece: Piece, render: Render | None, place: bool) -> Judged:
    assert _WORKER_CHECKER is not None, "a worker is started with its checker"
    return judge_piece(_WORKER_CHECKER, piece, render, _WORKER_KINDS, place)


def _in_workers(checker: Checker, pieces: Iterable[Piece], jobs: int, render: Render | None,
                kinds: Kinds | None, place: bool = False) -> Iterator[Judged]:
    """Judge pieces in forked workers that inherit the built checker, keeping input order.

    At most a few pieces per worker are in flight, so memory does not grow with the input
    (a pool's own ``imap`` would read the whole input ahead). An input of one piece is
    judged here: starting workers would cost more than the one that judges it could give.
    """
    import itertools
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pieces = iter(pieces)
    ahead = list(itertools.islice(pieces, 2))
    if len(ahead) < 2:
        for piece in ahead:
            yield judge_piece(checker, piece, render, kinds, place)
        return
    pieces = itertools.chain(ahead, pieces)
    global _WORKER_CHECKER, _WORKER_KINDS
    _WORKER_CHECKER, _WORKER_KINDS = checker, kinds  # each worker fills its own copy
    # Not multiprocessing.Pool: its worker handler waits on the results' pipe too, and spins
    # while a result waits there to be read (a batch's result is tens of kilobytes): a third
    # of the writing process's time on a uniform audit went to that loop, on the cores the
    # workers need. The executor's one thread reads each result as it comes.
    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                               initializer=_as_a_worker, initargs=(os.getpid(),))
    pending: deque[Future[Judged]] = deque()
    try:
        for piece in pieces:
            pending.append(pool.submit(_judge_in_worker, piece, render, place))
            if len(pending) >= 4 * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except BrokenProcessPool:  # from submit() or result(), whichever met it first
        raise WorkerLost("a worker process ended before its work was done (killed, or the "
                         "system out of memory); the audit did not finish") from None
    finally:
        # Ended early (an output that failed, a consumer that stopped): what is queued is
        # not judged, and no worker outlives the run.
        pool.shutdown(wait=True, cancel_futures=True)


def _as_a_worker(parent: int) -> None:
    """A worker ends with the process that started it, however that ends (killed, out of
    memory: it would otherwise sleep forever on the pool's pipes, whose both ends it holds),
    and as the operating system ends it on SIGTERM (the pool's own way to stop its workers;
    the command line's handler, inherited, is the writing process's)."""
    import _signal

    die_with(parent)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
