"""Impact over registrations: the audit's JSON output is the before, its inputs what is
judged again (issue 40, item 1: "the audit's JSON output and its inputs serve the same
purpose for registrations").

An audit judges each registration on itself and the profile alone: no artifact, no instant
and no other registration decides its status or reasons; registrations meet only in the
conflicts (one capability IRI declared differently). So a change touches registrations as a
whole or not at all, part by part:

* a profile of the audited profile's id touches every registration when what an audit reads
  of a profile differs (:func:`audit_reads`); otherwise none;
* artifacts added or withdrawn and another instant touch none (an audit reads neither);
* registrations added are judged (they had no result before) and, with them, the audited
  registrations of the capability IRIs they declare (the report names each one's IRI), for
  the conflicts: every other registration is skipped.

:class:`RegistrationImpact` streams the report beside what is judged again, in input order,
with the audit's own machinery (its worker processes, the compiled engine's answer by kind,
a Dask cluster's :class:`~ioa_semantic.audit.dask.ClusterAudit`): memory holds what the
audit's does, the conflict index and one batch, never the report.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, NamedTuple, Protocol

from .._checker import Checker, baseline_reads
from .._exceptions import ConfigurationError, IoaSemanticError
from ..audit.inputs import documents, pieces
from ..audit.judge import Judged, Result
from ..audit.run import Audit
from ..pipeline.intake import Limits
from ..sources.loader import Profile, load_profile
from .change import Change, Part, parts_of
from .rejudge import Flip, Summary, _identity

#: The statuses an audit gives, and "absent" for a registration that was not audited.
STATUSES = ("valid", "invalid", "indeterminate")
ABSENT = "absent"
#: A capability IRI's state as to conflicts.
CONFLICT, NO_CONFLICT = "conflict", "no conflict"

# Judges a stream of pieces (the audit's inputs, cut as an audit cuts them) into batches:
# locally with worker processes, or on a cluster.
Judging = Callable[[Audit, Sequence[str]], Iterable[Judged]]


class RegistrationFlip(NamedTuple):
    """A registration whose status or reasons the change alters, or a capability IRI whose
    conflict appears, goes or names other registrations (``index`` None and ``id`` the IRI,
    its verdicts :data:`CONFLICT` and :data:`NO_CONFLICT`).

    ``log`` and ``line`` locate it as the reporters do a logged decision: the registration's
    file and its line there (a JSON Lines record's own, else 1)."""

    log: str
    line: int
    source: str  # as a report names it: the capability IRI, or the file and index
    position: int | None  # "index" in the audit's output and here
    id: str | None
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    added: tuple[Mapping[str, Any], ...]
    removed: tuple[Mapping[str, Any], ...]
    causes: tuple[str, ...]
    conflict: bool = False

    @property
    def transition(self) -> str:
        return f"{self.before['verdict']} -> {self.after['verdict']}"

    def as_dict(self) -> dict[str, Any]:
        """As ``--format json`` prints it: the audit's identification of the registration
        (``source`` its file, ``index``, ``id``), or ``conflict`` the IRI."""
        head: dict[str, Any] = ({"conflict": self.id} if self.conflict else
                                {"source": self.log, "index": self.position, "id": self.id})
        return {**head, "transition": self.transition, "before": dict(self.before),
                "after": dict(self.after), "added": [dict(r) for r in self.added],
                "removed": [dict(r) for r in self.removed], "causes": list(self.causes)}


#: A flip of either kind, as the reporters render it.
AnyFlip = Flip | RegistrationFlip


class ImpactRun(Protocol):
    """What the reporters read of an impact run, of a log's decisions
    (:class:`~ioa_semantic.impact.Impact`) or of an audit's registrations
    (:class:`RegistrationImpact`): its flips, then its summary, and what it read."""

    logs: tuple[str, ...]
    summary: Summary | None

    def __iter__(self) -> Iterator[AnyFlip]: ...


def audit_reads(profile: Profile) -> tuple[Any, ...]:
    """What an audit reads of ``profile``: the baseline's policy, the declared task
    parameters (a registration carrying one is checked against it), the single accepted
    ontology (a registration naming none declares it, for the conflicts) and the profile's
    own shapes. Two profiles equal here audit every registration alike."""
    return (baseline_reads(profile), profile.parameters, profile.single_ontology(),
            profile.shapes)


class _Before(NamedTuple):
    """One registration line of the audit's JSON output."""

    source: str
    position: int | None  # "index" in the report
    id: str | None
    status: str
    reasons: list[dict[str, Any]]


# The longest line of an audit report read (a decision log's bound): a registration line
# carries its reasons, each bounded by the intake's limits.
_MAX_REPORT_LINE = 256 << 20


class _Report:
    """The audit's JSON output, read line by line: registrations, then conflicts, then the
    summary. A line that is none of these is a :class:`ConfigurationError` naming it."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._handle: IO[bytes] = open(path, "rb")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            raise ConfigurationError(f"{path}: the audit report cannot be read: "
                                     f"{exc.strerror}") from exc
        self.number = 0
        self.conflicts: dict[str, frozenset[tuple[str, int | None]]] = {}
        self._pending: dict[str, Any] | None = None
        self.done = False

    def close(self) -> None:
        self._handle.close()

    def _next(self) -> dict[str, Any] | None:
        while raw := self._handle.readline(_MAX_REPORT_LINE + 1):
            self.number += 1
            if len(raw) > _MAX_REPORT_LINE:
                raise self._refused(f"a line longer than {_MAX_REPORT_LINE} bytes")
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
                raise self._refused("not a JSON line") from exc
            if not isinstance(line, dict):
                raise self._refused("not a JSON object")
            return line
        return None

    def _refused(self, why: str) -> ConfigurationError:
        return ConfigurationError(f"{self.path}, line {self.number}: {why}: not a line of "
                                  "ioa-check audit --format json")

    def registrations(self) -> Iterator[_Before]:
        """Every registration line, in order; then the conflicts are read (:attr:`conflicts`)."""
        while (line := self._next()) is not None:
            if "conflict" in line or "summary" in line:
                self._pending = line
                break
            try:
                status = line["status"]
                reasons = line["reasons"]
                if status not in STATUSES or not isinstance(reasons, list) or not all(
                        isinstance(r, dict) for r in reasons):
                    raise TypeError("status or reasons")
                index, source, ident = line["index"], line["source"], line.get("id")
                if index is not None and (type(index) is not int or index < 0):
                    raise TypeError("index")
                if type(source) is not str or not (ident is None or type(ident) is str):
                    raise TypeError("source or id")
                yield _Before(source, index, ident, status, reasons)
            except (KeyError, TypeError) as exc:
                raise self._refused(f"a registration's member is missing or of the wrong "
                                    f"kind ({exc})") from exc
        line, self._pending = self._pending, None
        while line is not None:
            if "summary" in line:
                self.done = True
                return
            try:
                conflict = line["conflict"]
                self.conflicts[str(conflict["id"])] = frozenset(
                    (str(r["source"]), r["index"]) for r in conflict["registrations"])
            except (KeyError, TypeError) as exc:
                raise self._refused(f"a conflict's member is missing ({exc})") from exc
            line = self._next()
        raise ConfigurationError(f"{self.path}: the audit report ends before its summary "
                                 "line (an audit cut short)")


Place = tuple[str, "int | None"]


def _by_place(batch: Judged) -> tuple[dict[Place, deque[Result]], dict[Place, deque[str]], bool]:
    """A batch's results with a reason, and the IRI each valid registration declares, by
    place, in order (a file named twice is two registrations at one place: a batch holds
    every file's items but JSON Lines', each met once); and whether every registration of
    the batch is listed so (a cluster's batches carry no declarations: there only the places
    of the results with a reason are held to the report's)."""
    notable: dict[Place, deque[Result]] = {}
    for r in batch.notable:
        notable.setdefault((r.source, r.position), deque()).append(r)
    ids: dict[Place, deque[str]] = {}
    for ident, _, _, where in batch.declarations:
        ids.setdefault(where, deque()).append(ident)
    return notable, ids, bool(ids) or batch.size == len(batch.notable)


def _first(held: dict[Place, deque[Any]], where: Place) -> Any:
    """The first of what ``held`` has at ``where``, taken (None where it has nothing)."""
    found = held.get(where)
    if not found:
        return None
    first = found.popleft()
    if not found:
        del held[where]
    return first


def _located(source: str, index: int | None) -> int:
    """The line a registration begins on, as far as its place says: a JSON Lines record's
    own (its index counts from 0), else the file's first."""
    return index + 1 if index is not None and source.endswith(".jsonl") else 1


def _named(source: str, index: int | None, ident: str | None) -> str:
    return ident or (f"{source}[{index}]" if index is not None else source)


def local_judging(jobs: int) -> Judging:
    """Judging in this process (``jobs`` 1) or in ``jobs`` forked worker processes, as
    ``ioa-check audit --jobs`` does."""
    def judging(run: Audit, paths: Sequence[str]) -> Iterable[Judged]:
        return run.batches(pieces(paths, limits=run.judging.limits), jobs=jobs)
    return judging


class RegistrationImpact:
    """The impact of ``change`` (and of the registrations in ``added``, files or folders as
    an audit takes them) on the registrations an audit judged: ``report`` its JSON output,
    ``inputs`` what it read, ``audited`` the profile it was made with. Iterate it for the
    flips; :attr:`summary` is then complete (its subject ``registration``).

    With ``everything``, every registration is judged again (what the skipping is tested
    against); with ``keep``, each registration judged again is kept in :attr:`judged` by
    (source, index), as (status, reasons as dicts). ``judging`` judges the pieces (default:
    this process; see :func:`local_judging` and ``audit.dask``); ``cluster`` builds the
    Audit a cluster judges on, given the profile judged under."""

    subject = "registration"

    def __init__(self, report: str, inputs: Sequence[str], audited: str, change: Change,
                 added: Sequence[str] = (), *, everything: bool = False, keep: bool = False,
                 limits: Limits | None = None, engine: str = "compiled",
                 judging: Judging | None = None,
                 cluster: Callable[[str], Audit] | None = None) -> None:
        if "-" in inputs or "-" in added:
            raise ConfigurationError("impact reads registrations from files: - (standard "
                                     "input) cannot be read again")
        self.report = report
        self.logs: tuple[str, ...] = (report,)
        self.inputs = tuple(inputs)
        self.added = tuple(added)
        self.change = change
        self.everything = everything
        self.keep = keep
        self.judging = judging or local_judging(1)
        self.cluster = cluster
        self.parts: list[Part] = parts_of(change)
        self.audited = load_profile(audited)
        self._audited_name = audited  # as named: Profile.source is for people
        self.limits = limits
        self.engine = engine
        self.summary: Summary | None = None
        self._declared_by_added: set[str] = set()
        #: With ``keep``: every registration judged again, by (source, index).
        self.judged: dict[tuple[str, int | None], tuple[str, tuple[tuple[str, ...], ...]]] = {}
        self._labels = [p.label for p in self.parts]
        self._added_label = f"{_ADDED}: " + ", ".join(self.added)
        if self.added:
            self._labels.append(self._added_label)

    # --- which parts touch the registrations -------------------------------------------

    def _profile_now(self) -> tuple[str, Part | None, str | None]:
        """The profile registrations are judged under after the change, the profile part
        and, when it touches none of them, why."""
        part = next((p for p in self.parts if p.kind == "profile"), None)
        if part is None:
            return self._audited_name, None, None
        assert part.profile is not None and part.profile_source is not None
        if part.profile.id != self.audited.id:
            return self._audited_name, part, "judged under another profile"
        if audit_reads(part.profile) == audit_reads(self.audited) and not (
                part.profile.shapes or self.audited.shapes):
            return part.profile_source, part, (
                "what an audit reads of the profile is unchanged (its context policy, "
                "permitted types, retrieval, task parameters, accepted ontology and shapes)")
        return part.profile_source, part, None

    def _untouched(self) -> list[str]:
        """Why each part but the profile and the registrations added touches no registration."""
        reasons = []
        for part in self.parts:
            if part.kind in ("artifact-added", "artifact-withdrawn"):
                reasons.append("an audit reads no alignment artifact")
            elif part.kind == "instant":
                reasons.append("no registration's judgement depends on the instant")
        return reasons

    # --- the run -----------------------------------------------------------------------

    def __iter__(self) -> Iterator[RegistrationFlip]:
        profile, part, why_not = self._profile_now()
        self._counts = _Counts()
        report = _Report(self.report)
        try:
            if self.everything or (part is not None and why_not is None):
                cause = (part.label,) if part is not None and why_not is None else ()
                yield from self._whole(report, profile, cause)
            else:
                yield from self._narrow(report, profile,
                                        [*self._untouched(), *([why_not] if why_not else [])])
        finally:
            report.close()
        counts = self._counts
        self.summary = Summary(tuple(self._labels), counts.read, counts.rejudged,
                               dict(counts.skipped), counts.unchanged, counts.flipped,
                               dict(counts.causes), dict(counts.transitions), {}, (),
                               subject=self.subject, conflicts=counts.conflicts)

    def _run(self, profile: str, local: bool = False) -> Audit:
        if self.cluster is not None and not local:
            return self.cluster(profile)
        try:
            checker = Checker(profile, limits=self.limits, engine=self.engine)
        except IoaSemanticError as exc:
            raise ConfigurationError(f"the profile {profile} cannot be judged under: "
                                     f"{exc}") from exc
        return Audit(checker)

    def _whole(self, report: _Report, profile: str, cause: tuple[str, ...]
               ) -> Iterator[RegistrationFlip]:
        """Every registration judged again (and those added), beside the report's lines."""
        run = self._run(profile)
        causes = cause or (self._added_label,)
        # The IRIs whose registrations changed status under the profile, and those the
        # registrations added declare: which part a conflict's change comes of.
        changed: set[str] = set()
        self._declared_by_added = set()
        befores = report.registrations()
        for batch in self.judging(run, (*self.inputs, *self.added)):
            notable, ids, listed = _by_place(batch)
            matched = 0
            for _ in range(batch.size):
                before = next(befores, None)
                if before is None:
                    break
                where = (before.source, before.position)
                result = _first(notable, where)
                ident = _first(ids, where)
                # The report's line for the place must say what the inputs hold there (a
                # report of other inputs is refused, never compared).
                if listed and result is None and (ident is None or ident != before.id):
                    raise self._mismatch(where)
                matched += 1
                self._counts.read += 1
                self._counts.rejudged += 1
                flip = (self._compared(before, "valid", [], causes) if result is None else
                        self._compared(before, result.status,
                                       [f.as_dict() for f in result.reasons], causes))
                if flip is not None:
                    if flip.before["verdict"] != flip.after["verdict"] and flip.id:
                        changed.add(flip.id)
                    yield flip
            if matched == batch.size:
                if notable:  # a result with a reason the report does not have there
                    raise self._mismatch(next(iter(notable)))
                continue
            if not self.added:
                raise ConfigurationError(
                    f"{self.report}: the inputs now hold more registrations than the report: "
                    "the audit report is not of these inputs (name registrations added "
                    "with --add-registrations)")
            # The rest of the batch are registrations added (they come after every audited
            # one: the report has run out).
            left = [r for results in notable.values() for r in results]
            listed_left = {(r.source, r.position) for r in left}
            plain = [(ident, where) for where, idents in ids.items() for ident in idents
                     if where not in listed_left]
            yield from self._new(left, plain)
        if next(befores, None) is not None:
            raise ConfigurationError(f"{self.report}: the report has more registrations "
                                     "than its inputs now hold: the audit report is not of "
                                     "these inputs")
        after = {c.id: frozenset(c.registrations) for c in run.conflicts()}
        if not (cause and self.added):
            yield from self._conflicts(report.conflicts, after, None, lambda _: causes)
            return
        # A conflict comes of the profile alone where no registration added declares its IRI;
        # of the registrations added alone where the profile changed neither the status of
        # one of its registrations nor what a registration naming no ontology declares; of
        # both (joined) otherwise.
        ontology = self._ontology_changed()

        def of(ident: str) -> tuple[str, ...]:
            by_profile = ontology or ident in changed
            if ident not in self._declared_by_added:
                return cause
            return ((" + ".join((*cause, self._added_label)),) if by_profile
                    else (self._added_label,))

        yield from self._conflicts(report.conflicts, after, None, of)

    def _new(self, notable: list[Result], plain: list[tuple[str, tuple[str, int | None]]]
             ) -> Iterator[RegistrationFlip]:
        """The registrations added (absent before), in input order: ``notable`` those with
        a result to show, ``plain`` those an audit only counts (IRI, where)."""
        rows = [(r.source, r.position, r.id, r.status, [f.as_dict() for f in r.reasons])
                for r in notable]
        rows.extend((where[0], where[1], ident, "valid", []) for ident, where in plain)
        rows.sort(key=lambda r: (self._order(r[0]), r[0], -1 if r[1] is None else r[1]))
        for source, index, ident, status, found in rows:
            if ident is not None and status == "valid":
                self._declared_by_added.add(ident)
            self._counts.read += 1
            self._counts.rejudged += 1
            if self.keep:
                self.judged[(source, index)] = (status, tuple(sorted(
                    _identity(r) for r in found)))
            flip = RegistrationFlip(source, _located(source, index),
                                    _named(source, index, ident), index, ident,
                                    {"verdict": ABSENT, "reasons": []},
                                    {"verdict": status, "reasons": found}, tuple(found), (),
                                    (self._added_label,))
            self._counts.flipped_one(flip)
            yield flip

    def _order(self, source: str) -> int:
        """Which of the registrations added ``source`` is (or is under)."""
        for number, path in enumerate(self.added):
            if source == path or source.startswith(path.rstrip("/") + "/"):
                return number
        return len(self.added)

    def _ontology_changed(self) -> bool:
        """Whether the profile part changes what a registration naming no ontology declares."""
        part = next((p for p in self.parts if p.kind == "profile"), None)
        return part is not None and part.profile is not None and (
            part.profile.single_ontology() != self.audited.single_ontology())

    def _mismatch(self, where: tuple[str, int | None]) -> ConfigurationError:
        return ConfigurationError(f"{self.report}: the registration at {where[0]}, index "
                                  f"{where[1]} is not where the report has it: the audit "
                                  "report is not of these inputs")

    def _compared(self, before: _Before, status: str, reasons: list[dict[str, Any]],
                  causes: tuple[str, ...]) -> RegistrationFlip | None:
        was = {_identity(r): r for r in before.reasons}
        now = {_identity(r): r for r in reasons}
        if self.keep:
            self.judged[(before.source, before.position)] = (status, tuple(sorted(now)))
        if status == before.status and was.keys() == now.keys():
            self._counts.unchanged += 1
            return None
        flip = RegistrationFlip(
            before.source, _located(before.source, before.position),
            _named(before.source, before.position, before.id), before.position, before.id,
            {"verdict": before.status, "reasons": before.reasons},
            {"verdict": status, "reasons": list(now.values())},
            tuple(r for k, r in now.items() if k not in was),
            tuple(r for k, r in was.items() if k not in now), causes)
        self._counts.flipped_one(flip)
        return flip

    def _conflicts(self, before: Mapping[str, frozenset[tuple[str, int | None]]],
                   after: Mapping[str, frozenset[tuple[str, int | None]]],
                   among: frozenset[str] | None, causes: Callable[[str], tuple[str, ...]]
                   ) -> Iterator[RegistrationFlip]:
        """A flip for each capability IRI (of ``among``, or any) whose conflict appears,
        goes or names other registrations, in the order of the IRIs."""
        for ident in sorted(set(before) | set(after)):
            if among is not None and ident not in among:
                continue
            was, now = before.get(ident), after.get(ident)
            if was == now:
                continue
            first = min(now or was or (), key=_place_key)
            flip = RegistrationFlip(
                first[0], _located(*first), ident, None, ident,
                _conflict_side(ident, was), _conflict_side(ident, now),
                () if now is None or was is not None else (_conflict_reason(ident),),
                () if was is None or now is not None else (_conflict_reason(ident),),
                causes(ident), conflict=True)
            self._counts.flipped_one(flip)
            yield flip

    def _narrow(self, report: _Report, profile: str, reasons: list[str]
                ) -> Iterator[RegistrationFlip]:
        """No part touches the audited registrations' own results: the registrations added
        are judged, with the audited ones of the capability IRIs they declare (for the
        conflicts); the others are skipped."""
        if not self.added:
            why = "; ".join(sorted(set(reasons))) or "the change is empty"
            for _ in report.registrations():
                self._counts.read += 1
                self._counts.skipped[why] += 1
            return
        why = "; ".join(sorted({*reasons, _OTHER_IRI}))
        run = self._run(profile, local=True)  # what an operator adds is small: judged here
        notable: list[Result] = []
        plain: list[tuple[str, tuple[str, int | None]]] = []
        for batch in run.batches(pieces(self.added, limits=run.judging.limits)):
            notable.extend(batch.notable)
            listed = {(r.source, r.position) for r in batch.notable}
            plain.extend((ident, where) for ident, _, _, where in batch.declarations
                         if where not in listed)
        iris = {ident for ident, _ in plain} | {r.id for r in notable if r.id is not None}
        # The audited registrations of those IRIs (the report names each one's), judged
        # again for their declarations; a registration not valid declares nothing. The
        # inputs are read beside the report (not judged): each registration must be where
        # the report has it, or the report is not of these inputs.
        inputs = documents(self.inputs, limits=run.judging.limits)
        for before in report.registrations():
            self._counts.read += 1
            item = next(inputs, None)
            if item is None or (item[0], item[1]) != (before.source, before.position):
                raise self._mismatch((before.source, before.position))
            if not (before.id in iris and before.status == "valid"):
                self._counts.skipped[why] += 1
                continue
            source, index, document, problems = item
            self._counts.rejudged += 1
            result = (run.unreadable(source, index, problems) if document is None
                      else run.registration(document, source, index))
            flip = self._compared(before, result.status,
                                  [r.as_dict() for r in result.reasons], (self._added_label,))
            if flip is not None:
                yield flip
        if next(inputs, None) is not None:
            raise ConfigurationError(
                f"{self.report}: the inputs now hold more registrations than the report: "
                "the audit report is not of these inputs")
        yield from self._new(notable, plain)
        after = {c.id: frozenset(c.registrations) for c in run.conflicts()}
        yield from self._conflicts(report.conflicts, after, frozenset(iris),
                                   lambda _: (self._added_label,))


_ADDED = "registrations added"
_OTHER_IRI = ("a registration's judgement reads no other registration, and its capability IRI "
              "is not one the registrations added declare")


def _place_key(where: tuple[str, int | None]) -> tuple[str, int]:
    return (where[0], -1 if where[1] is None else where[1])


def _conflict_side(ident: str, registrations: frozenset[tuple[str, int | None]] | None
                   ) -> dict[str, Any]:
    if registrations is None:
        return {"verdict": NO_CONFLICT, "reasons": [], "registrations": []}
    return {"verdict": CONFLICT, "reasons": [_conflict_reason(ident)], "registrations": [
        {"source": s, "index": i} for s, i in sorted(
            registrations, key=lambda w: (w[0], -1 if w[1] is None else w[1]))]}


def _conflict_reason(ident: str) -> dict[str, Any]:
    from .._codes import CODES

    code = "registration.conflict"
    return {"code": code, "severity": "error", "section": CODES[code].section, "path": ident,
            "message": f"{ident} is registered with conflicting declarations"}


class _Counts:
    def __init__(self) -> None:
        self.read = self.rejudged = self.unchanged = self.flipped = self.conflicts = 0
        self.skipped: Counter[str] = Counter()
        self.causes: Counter[str] = Counter()
        self.transitions: Counter[str] = Counter()

    def flipped_one(self, flip: RegistrationFlip) -> None:
        if flip.conflict:
            self.conflicts += 1
        else:
            self.flipped += 1
        self.transitions[flip.transition] += 1
        for cause in flip.causes:
            self.causes[cause] += 1
