"""The batch audit of capability registrations (draft 6.3), as a stream.

Inputs are files, folders (walked for ``*.json``, ``*.jsonld``, ``*.jsonl`` in sorted path
order) and ``-`` for JSON Lines on standard input. Each registration gets one result, in
input order; a line or file that cannot be read is a result of its own and the audit goes
on. Among registrations valid on their own, one capability IRI registered with different
inputs, outputs or ontology is a conflict, reported after the registrations with every
registration involved. Memory holds one record per distinct capability IRI (see
:mod:`.conflicts`), nothing per valid registration beyond it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .._checker import Checker

from .._codes import DOCS_URL as DOCS_URL  # re-exported: the docs site's address
from .._findings import Finding
from .._runtime import frozen
from .checkpoint import Checkpoint
from .conflicts import ConflictIndex
from .inputs import Piece
from .judge import DECLARED_MEMBERS, Judged, Render, Result, declared_values
from .workers import _in_workers, judge_piece, judged_items, kinds_for


class Difference(NamedTuple):
    """A member the registrations of a conflict declare differently, and what each declares
    (in the order of the registrations; None where the declaration was not kept, see
    :mod:`.conflicts`)."""

    member: str  # a JSON Pointer of DECLARED_MEMBERS
    values: tuple[list[str] | None, ...]


class Conflict(NamedTuple):
    """A capability IRI registered with conflicting declarations: every registration of it,
    and the members they declare differently, side by side."""

    id: str
    code: str
    registrations: tuple[tuple[str, int | None], ...]
    differences: tuple[Difference, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"conflict": {"id": self.id, "code": self.code, "registrations": [
            {"source": source, "index": index} for source, index in self.registrations],
            "differences": [{"member": d.member, "values": list(d.values)}
                            for d in self.differences]}}


def differences(declarations: Iterable[tuple[Any, ...] | None]) -> tuple[Difference, ...]:
    """The members that ``declarations`` (one per registration of an IRI) declare
    differently, each with every registration's value. A member the kept declarations agree
    on is left out, unless a declaration was not kept and they agree on every member: then
    every member is shown, for the registration not kept may differ in any."""
    said = [None if d is None else declared_values(d) for d in declarations]
    found = [Difference(member, tuple(None if s is None else s[n] for s in said))
             for n, member in enumerate(DECLARED_MEMBERS)]
    differing = tuple(d for d in found
                      if len({tuple(v) for v in d.values if v is not None}) > 1)
    return differing or (tuple(found) if None in said else ())




class Asked(NamedTuple):
    """What an audit was made with, for a report that says so (``--format html``): the inputs
    as given, the profile's id and revision, and the instant of the audit (no judgement of a
    registration depends on it: it dates the report); and the documentation site a report
    links to (``--format sarif``)."""

    inputs: tuple[str, ...]
    profile: tuple[str, str]
    at: datetime
    docs: str = DOCS_URL


class Audit:
    """One audit run over a Checker's profile: feed documents, then read the conflicts."""

    def __init__(self, checker: Checker | None, checkpoint: Checkpoint | None = None,
                 asked: Asked | None = None) -> None:
        self.checker = checker
        self.checkpoint = checkpoint
        self.asked = asked
        self._index = ConflictIndex()
        self._conflicts: list[Conflict] | None = None
        self.total = 0
        self.statuses = {"valid": 0, "invalid": 0, "indeterminate": 0}
        self.codes: dict[str, int] = {}

    @property
    def judging(self) -> Checker:
        """The checker that judges here (a cluster's audit has none: its workers judge)."""
        if self.checker is None:
            raise TypeError("this audit judges on a cluster, not in this process")
        return self.checker

    def registration(self, data: bytes | str | dict[str, Any], source: str,
                     index: int | None) -> Result:
        # As a batch of one: the profile's shapes, if it has any, apply to it too.
        document = data.encode("utf-8") if isinstance(data, str) else data
        ((result, declaration),) = judged_items(self.judging, [(source, index, document, ())])
        return self.record(result, declaration)

    def unreadable(self, source: str, index: int | None, reasons: Iterable[Finding]) -> Result:
        return self._count(Result(source, index, None, "invalid", tuple(reasons)))

    def record(self, result: Result, declaration: tuple[Any, ...] | None) -> Result:
        """Count a judged registration and index its declaration for conflicts."""
        if declaration is not None and result.id is not None:
            where = (result.source, result.position)
            self._index.add(result.id, declaration, where)
            if self.checkpoint is not None:
                self.checkpoint.indexed(result.id, declaration, where)
        return self._count(result)

    def batches(self, pieces: Iterable[Piece], jobs: int = 1,
                render: Render | None = None, place: bool = False) -> Iterator[Judged]:
        """Every piece of the input (see :func:`pieces`) judged and recorded, in input
        order; ``jobs`` worker processes; ``render`` writes each result's line where it was
        judged; ``place`` places each reason in the text judged (``pieces`` cut with it).

        With a checkpoint, the pieces an interrupted run completed are read again, proven the
        same and skipped (``pieces`` cut with the checkpoint's fingerprint), and the state
        advances once each batch has been handed on (and so written).
        """
        # The checker, its compiled shapes and tables live as long as the run: frozen, the
        # collector stops walking them on every full collection (about 15% of a worker's
        # time on a large audit), and forked workers keep sharing their pages. Unfrozen when
        # the run ends, so that a library caller's process is left as it was.
        with frozen():
            yield from self._judged(pieces, jobs, render, place)

    def _judged(self, pieces: Iterable[Piece], jobs: int, render: Render | None,
                place: bool) -> Iterator[Judged]:
        if self.checkpoint is not None:
            self.checkpoint.resume(self)
            pieces = self.checkpoint.remaining(pieces, self)
        kinds = kinds_for(self.judging)
        if jobs <= 1:
            judged: Iterable[Judged] = (judge_piece(self.judging, piece, render, kinds, place)
                                        for piece in pieces)
        else:
            judged = _in_workers(self.judging, pieces, jobs, render, kinds, place)
        try:
            for batch in judged:
                self.record_batch(batch)
                yield batch
                if self.checkpoint is not None:
                    self.checkpoint.advance(self)
        finally:  # done, or ended by a failure: the journal has what the state records
            if self.checkpoint is not None:
                self.checkpoint.close()

    def record_batch(self, batch: Judged) -> None:
        """Count a judged batch and index its declarations for conflicts."""
        plain = batch.size - len(batch.notable)  # valid, without a reason: counted at once
        self.total += plain
        self.statuses["valid"] += plain
        for result in batch.notable:
            self._count(result)
        self._index.add_batch(batch.declarations, batch.declared)
        if self.checkpoint is not None:
            self.checkpoint.indexed_all(batch.declarations, batch.declared)

    def _count(self, result: Result) -> Result:
        self.total += 1
        self.statuses[result.status] += 1
        for reason in result.reasons:
            self.codes[reason.code] = self.codes.get(reason.code, 0) + 1
        return result

    def indexed(self, ident: str, declaration: tuple[Any, ...],
                where: tuple[str, int | None]) -> None:
        """Index a declaration judged before (a resumed run's journal)."""
        self._index.add(ident, declaration, where)

    def conflicts(self) -> list[Conflict]:
        """The conflicts, once every registration is in: computed (and counted in the codes)
        on the first call, the same list on every later one."""
        if self._conflicts is None:
            self._conflicts = [
                Conflict(ident, "registration.conflict", registrations, differences(declared))
                for ident, registrations, declared in self._index.conflicts()]
            if self._conflicts:
                self.codes["registration.conflict"] = (
                    self.codes.get("registration.conflict", 0) + len(self._conflicts))
        return self._conflicts

    def summary(self, conflicts: int) -> dict[str, Any]:
        return {"summary": {"total": self.total, "status": dict(self.statuses),
                            "codes": dict(sorted(self.codes.items())), "conflicts": conflicts}}
