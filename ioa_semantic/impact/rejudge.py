"""Impact: the logged decisions a change can touch, judged again; those that flip, and why.

:class:`Impact` reads a decision log (:mod:`.log`), asks each part of the change whether it
touches each decision (:mod:`.change`), judges again only those some part touches, under
the logged configuration with the change applied, and yields a :class:`Flip` for each
decision whose verdict or reasons change; its :attr:`Impact.summary` counts the rest (how
many were skipped and why). Reasons are compared by code, severity, path and section, not
by message: a message may quote the instant, which a cached decision does not keep either.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import lru_cache, partial
from typing import Any, NamedTuple

from .._checker import INSTANCES, Checked, Checker, _instant, _weight
from .._exceptions import IoaSemanticError
from .._findings import Decision
from .._memo import BoundedCache
from ..pipeline import bounded
from ..pipeline.bounded import SHAPE_TIMEOUT
from ..pipeline.intake import Limits
from ..sources.loader import Profile, load_profile, read_artifact
from .change import Change, Part, applies, parts_of
from .log import Damage, Logged, object_path, read_log

# The reasons' identity in a comparison (see the module's docstring).
_IDENTITY = ("code", "severity", "path", "section")
# Checkers kept at once (one per logged Checker and configuration the change produces).
_CHECKERS = 8
# Configurations built at once (one per logged Checker and set of parts), and objects kept
# read (the registrations and artifacts every decision of a Checker names).
_CONFIGURATIONS = 256
_OBJECTS = 256


def _identity(reason: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(reason.get(k, "")) for k in _IDENTITY)


class Flip(NamedTuple):
    """A logged decision whose verdict or reasons the change alters."""

    log: str
    line: int
    source: str
    envelope: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    added: tuple[Mapping[str, Any], ...]
    removed: tuple[Mapping[str, Any], ...]
    causes: tuple[str, ...]

    @property
    def transition(self) -> str:
        return f"{self.before['verdict']} -> {self.after['verdict']}"

    def as_dict(self) -> dict[str, Any]:
        return {"log": self.log, "line": self.line, "source": self.source,
                "envelope": self.envelope, "transition": self.transition,
                "before": dict(self.before), "after": dict(self.after),
                "added": [dict(r) for r in self.added],
                "removed": [dict(r) for r in self.removed], "causes": list(self.causes)}


class Summary(NamedTuple):
    """What an impact run found, in counts: ``decisions`` read, ``rejudged``, ``skipped`` by
    reason, ``unchanged`` (judged again, the same), ``flipped``, flips by cause and by verdict
    transition, ``unjudgeable`` by reason, and the log's damage (``warnings``); ``decisions``
    counts registrations when the ``subject`` is an audit's."""

    change: tuple[str, ...]
    decisions: int
    rejudged: int
    skipped: Mapping[str, int]
    unchanged: int
    flipped: int
    causes: Mapping[str, int]
    transitions: Mapping[str, int]
    unjudgeable: Mapping[str, int]
    warnings: tuple[str, ...]
    #: What was read and judged: ``decision`` (a log's) or ``registration`` (an audit's);
    #: ``decisions`` counts them, and the JSON names the count by it.
    subject: str = "decision"
    #: Of an audit's registrations: the conflicts that appear, go or name other
    #: registrations (each a flip of its own, not counted in ``flipped``).
    conflicts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"change": list(self.change), f"{self.subject}s": self.decisions,
                "rejudged": self.rejudged, "skipped": dict(self.skipped),
                "unchanged": self.unchanged, "flipped": self.flipped,
                **({"conflicts": self.conflicts} if self.subject == "registration" else {}),
                "causes": dict(self.causes), "transitions": dict(self.transitions),
                "unjudgeable": dict(self.unjudgeable), "warnings": list(self.warnings)}


class _Unjudgeable(IoaSemanticError):
    """A logged decision that cannot be judged again (its reason is counted, not raised out
    of an impact run)."""


class _Configuration(NamedTuple):
    profile: str
    capabilities: tuple[tuple[str, bytes], ...]
    alignments: tuple[tuple[str, bytes], ...]
    engine: str
    limits: tuple[tuple[str, Any], ...] = ()
    shape_timeout: float | None = None
    # Whether a profile of the change replaced the logged one (however either was named).
    revised: bool = False


class Touched(NamedTuple):
    """A logged decision some part of the change touches, as it is handed to judging:
    ``touching`` the parts' positions in the change's, ``run`` the Checker that logged it,
    ``seen`` that Checker's instances up to it (``end`` entries in all)."""

    item: Logged
    touching: tuple[int, ...]
    run: str
    seen: Seen
    end: int


class Outcome(NamedTuple):
    """A touched decision judged again: ``unjudgeable`` why it could not be (else None);
    ``after`` the decision; ``flip`` when it flips (its causes not yet named); ``alone`` the
    positions of the parts that flip it alone, when several touch it (none: all of them)."""

    unjudgeable: str | None
    after: Decision | None = None
    flip: Flip | None = None
    alone: tuple[int, ...] = ()


# Judges a stream of touched decisions, each with its outcome, in the stream's order: here
# (Impact's own judging) or on a cluster (impact.cluster).
Judging = Callable[[Iterator[Touched]], Iterator[tuple[Touched, Outcome]]]
# What judges one decision under some parts (Impact._judge, or a worker's _Judge.judge).
Judge = Callable[[Logged, Sequence[Part], "Seen", str], Decision]


def outcome_of(judge: Judge, parts: Sequence[Part], touched: Touched) -> Outcome:
    """``touched`` judged again under the whole change (the parts that do not touch it
    change nothing it read), compared with what was logged and, when it flips and several
    parts touch it, judged under each of those alone."""
    item, run, seen = touched.item, touched.run, touched.seen
    try:
        after = judge(item, parts, seen, run)
    except _Unjudgeable as exc:
        return Outcome(str(exc))
    flip = compared(item, after)
    if flip is None or len(touched.touching) < 2:
        return Outcome(None, after, flip)
    alone = []
    for index in touched.touching:
        try:
            decision = judge(item, [parts[index]], seen, run)
        except _Unjudgeable:
            continue
        if compared(item, decision) is not None:
            alone.append(index)
    return Outcome(None, after, flip, tuple(alone))


def compared(item: Logged, after: Decision) -> Flip | None:
    """The flip of the logged ``item`` judged ``after`` (its causes empty), or None when
    its verdict and reasons are the logged ones."""
    logged = item.entry["decision"]
    before = {_identity(r): r for r in logged["reasons"]}
    now = {_identity(r.as_dict()): r.as_dict() for r in after.findings}
    if logged["verdict"] == str(after.verdict) and before.keys() == now.keys():
        return None
    return Flip(item.log, item.line, item.entry["envelope"].get("source", "-"),
                item.entry["envelope"]["sha256"], logged,
                {"verdict": str(after.verdict), "reasons": list(now.values())},
                tuple(r for k, r in now.items() if k not in before),
                tuple(r for k, r in before.items() if k not in now), ())


class Impact:
    """The impact of ``change`` on the decisions logged in ``logs`` (each a log path, read
    with its rotated segments). Iterate it for the flips; :attr:`summary` is then complete.
    With ``everything``, every decision is judged again (what the skipping is tested
    against); with ``keep``, each decision judged again is kept in :attr:`judged`.

    ``memo`` (on by default) judges each distinct decision once (see :class:`_Judge`);
    off, every touched decision is judged afresh (what the memo is tested against).
    ``judging`` judges the touched decisions elsewhere (a Dask cluster:
    :func:`ioa_semantic.impact.cluster.judging`); by default, here."""

    def __init__(self, logs: Sequence[str], change: Change, *, everything: bool = False,
                 keep: bool = False, memo: bool = True,
                 judging: Judging | None = None) -> None:
        self.logs = tuple(logs)
        self.change = change
        self.parts = parts_of(change)
        self.everything = everything
        self.keep = keep
        self.summary: Summary | None = None
        self.judging: Judging = judging or self._here
        self._judging = _Judge(memo=memo)
        self._profile_now: Mapping[str, Any] | None = None
        self._profiles_before: dict[str, Profile | None] = {}
        #: With ``keep``: every decision judged again, by (log, line).
        self.judged: dict[tuple[str, int], Decision] = {}

    @property
    def memo(self) -> BoundedCache[tuple[Any, ...], _Memoized] | None:
        """The decisions judged once for their repeats (None when the memo is off)."""
        return self._judging.memo

    def __iter__(self) -> Iterator[Flip]:
        self._skipped: Counter[str] = Counter()
        self._warnings: list[str] = []
        self._decisions = 0
        unjudgeable: Counter[str] = Counter()
        causes: Counter[str] = Counter()
        transitions: Counter[str] = Counter()
        rejudged = unchanged = flipped = 0
        for touched, outcome in self.judging(self._touched()):
            if outcome.unjudgeable is not None:
                unjudgeable[outcome.unjudgeable] += 1
                continue
            rejudged += 1
            # (A cluster's outcomes come without the decision: it is not sent back.)
            if self.keep and outcome.after is not None:
                self.judged[(touched.item.log, touched.item.line)] = outcome.after
            flip = outcome.flip
            if flip is None:
                unchanged += 1
                continue
            touching = [self.parts[i] for i in touched.touching]
            if len(touching) > 1:
                flip = flip._replace(causes=tuple(self.parts[i].label for i in outcome.alone)
                                     or (" + ".join(p.label for p in touching),))
            else:
                flip = flip._replace(causes=tuple(p.label for p in touching))
            flipped += 1
            transitions[flip.transition] += 1
            for cause in flip.causes:
                causes[cause] += 1
            yield flip
        self.summary = Summary(tuple(p.label for p in self.parts), self._decisions, rejudged,
                               dict(self._skipped), unchanged, flipped, dict(causes),
                               dict(transitions), dict(unjudgeable), tuple(self._warnings))

    def _touched(self) -> Iterator[Touched]:
        """Every decision some part touches (every one, with ``everything``), in log order;
        the others counted as skipped, with why, and the log's damage kept."""
        # Each logged Checker's instance contents, in log order (5.3): a replay restores them.
        seen: dict[str, Seen] = {}
        positions = {id(p): i for i, p in enumerate(self.parts)}
        for item in self._read():
            if isinstance(item, Damage):
                self._warnings.append(str(item))
                continue
            self._decisions += 1
            entry = item.entry
            run = str(entry.get("checker", ""))
            instance = entry.get("instance")
            if isinstance(instance, dict):
                seen.setdefault(run, Seen()).append((bytes.fromhex(instance["pair"]),
                                                 bytes.fromhex(instance["content"])))
            root = _root(item.log)
            touching, reasons = applies(self.parts, entry, self._profile_dependencies(entry),
                                        self._profile_before(entry),
                                        partial(_issuer, root))
            if not touching and not self.everything:
                self._skipped[reasons[0] if len(set(reasons)) == 1 else
                              "; ".join(sorted(set(reasons))) or "the change is empty"] += 1
                continue
            run_seen = seen.get(run, _NONE_SEEN)
            yield Touched(item, tuple(positions[id(p)] for p in touching), run, run_seen,
                          run_seen.end)

    def _here(self, touched: Iterator[Touched]) -> Iterator[tuple[Touched, Outcome]]:
        """Each touched decision judged in this process, as it is read."""
        for one in touched:
            yield one, outcome_of(self._judge, self.parts, one)

    def _read(self) -> Iterator[Logged | Damage]:
        """Each log's lines, in order (a run that can be stopped looks in between)."""
        for log in self.logs:
            yield from read_log(log)

    def _profile_dependencies(self, entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """What decisions under the changed profile record of it (built once)."""
        part = next((p for p in self.parts if p.kind == "profile"), None)
        if part is None:
            return None
        if self._profile_now is None:
            assert part.profile is not None
            self._profile_now = dict(Checker(part.profile).profile_dependencies)
        return self._profile_now

    def _profile_before(self, entry: Mapping[str, Any]) -> Profile | None:
        """The profile a decision was judged under, read again from where it was named, when
        the change revises a profile and the file is still as it was logged (else None)."""
        if not any(p.kind == "profile" for p in self.parts):
            return None
        logged = entry["configuration"]["profile"]
        source = logged["source"]
        if source not in self._profiles_before:
            try:
                profile: Profile | None = load_profile(source)
            except IoaSemanticError:
                profile = None
            self._profiles_before[source] = profile
        found = self._profiles_before[source]
        return found if found is not None and found.digest == logged.get("sha256") else None

    def _judge(self, item: Logged, parts: Iterable[Part], seen: Seen,
               run: str) -> Decision:
        """``item`` judged under ``parts`` (a subclass may look in between judgements)."""
        return self._judging.judge(item, list(parts), seen, run)


# A memoized decision: the decision, its instance's (pair, content) digests when it has an
# @id, and whether that content was the first of its pair when it was judged (5.3).
_Memoized = tuple[Decision, tuple[bytes, bytes] | None, bool]
#: The memo's bounds: distinct decisions kept, and what they weigh (as a Checker's cache
#: weighs them: their reasons' text and a share for the rest).
MEMO_ENTRIES = 8192
MEMO_BYTES = 32 << 20


class _Judge:
    """What judges logged decisions again: the configurations built (one per logged
    Checker and set of parts), a replayed Checker for each of the last few, and the memo.

    The memo (``memo``) judges each distinct decision once per run. A decision is fixed by
    its configuration with the parts applied (profile, registrations, artifacts, engine,
    limits), the envelope's sha256, the task parameters, the side of every validity limit
    the instant falls on (not the instant: a Checker's own cache keys it so), and, through
    the revision memory (5.3), only by whether its instance's content is the first one its
    pair was seen with: a repeat is served when that is as it was, else judged afresh. At
    most :data:`MEMO_ENTRIES` decisions and :data:`MEMO_BYTES`, the least recently used
    going first. A repeat is served without reading its envelope again: the decision is
    that of the bytes of its sha256, proven when they were first read."""

    def __init__(self, memo: bool = True) -> None:
        self._checkers: dict[tuple[_Configuration, str], _Replay] = {}
        self._configurations: dict[tuple[str, str, str, tuple[str, ...]], _Configuration] = {}
        self.memo: BoundedCache[tuple[Any, ...], _Memoized] | None = (
            BoundedCache(MEMO_BYTES, max_entries=MEMO_ENTRIES) if memo else None)

    def forget_runs(self) -> None:
        """Every replayed Checker starts its revision memory afresh at its next judgement
        (a cluster's worker, at each batch: its replays restore what the batch carries)."""
        for replay in self._checkers.values():
            replay.run = None

    def judge(self, item: Logged, parts: Sequence[Part], seen: Seen, run: str) -> Decision:
        if item.entry["configuration"].get("retrieval"):
            raise _Unjudgeable("it could retrieve remote resources, which are not kept")
        configuration = self._configuration(item, parts)
        replay = self._replay(configuration, run)
        if not configuration.revised and not replay.matches(item.entry):
            raise _Unjudgeable("the profile changed since the decision was logged (name the "
                               "revised file with --profile)")
        at = next((p.at for p in parts if p.kind == "instant" and p.at is not None), item.at)
        source = item.entry["envelope"].get("source", "-")
        digest = item.entry["envelope"]["sha256"]
        params = item.entry["params"]
        replay.restore(seen, run)
        if self.memo is None:
            return replay.judge(_object(_root(item.log), digest), params, at, source)[0]
        key = (configuration, digest, tuple(sorted(params.items())), replay.sides(at))
        found = self.memo.get(key)
        if found is not None:
            decision, instance, first = found
            if instance is None or replay.checker.first_instance(*instance) == first:
                return decision._replace(source=source, at=_instant(at))
        stops = bounded.stops()
        decision, instance = replay.judge(_object(_root(item.log), digest), params, at, source)
        # A decision cut short by the shape bound is the machine's load as much as the
        # input's: judged afresh at its next repeat, as a Checker's cache does.
        if bounded.stops() == stops:
            first = instance is None or replay.checker.first_instance(*instance)
            self.memo.put(key, (decision, instance, first), _weight(decision))
        return decision

    def _replay(self, configuration: _Configuration, run: str) -> _Replay:
        """The replayed Checker of ``configuration`` for the logged Checker ``run``.

        One a logged Checker: a service's workers append to one log, their decisions
        interleaved, and a replay shared by two would forget and restore the whole revision
        memory at every switch (quadratic in the log). At most :data:`_CHECKERS` are kept;
        past that a run takes over the least recently used replay of its configuration,
        which restores its memory from the log (a log of many short runs, one a command,
        builds no Checker a run), else the least recently used one goes."""
        key = (configuration, run)
        replay = self._checkers.pop(key, None)
        if replay is None and len(self._checkers) >= _CHECKERS:
            same = next((k for k in self._checkers if k[0] == configuration), None)
            taken = self._checkers.pop(same if same is not None else next(iter(self._checkers)))
            replay = taken if same is not None else None
        if replay is None:
            try:
                replay = _Replay(configuration)
            except IoaSemanticError as exc:
                raise _Unjudgeable(f"the configuration cannot be built again: {exc}") from exc
        self._checkers[key] = replay  # the most recently used last
        return replay

    def _configuration(self, item: Logged, parts: Sequence[Part]) -> _Configuration:
        """The logged decision's configuration with ``parts`` applied: once per logged
        Checker and set of parts (every decision of a Checker records the same)."""
        key = (_root(item.log), str(item.entry.get("checker", "")),
               json.dumps(item.entry["configuration"], sort_keys=True)
               if not item.entry.get("checker") else "", tuple(p.label for p in parts))
        found = self._configurations.get(key)
        if found is None:
            if len(self._configurations) >= _CONFIGURATIONS:
                self._configurations.clear()
            found = self._configurations[key] = _configured(item, parts)
        return found


def _configured(item: Logged, parts: Iterable[Part]) -> _Configuration:
    logged = item.entry["configuration"]
    root = _root(item.log)
    profile = logged["profile"]["source"]
    revised = False
    alignments = [(a["origin"], _object(root, a["sha256"]), a.get("artifactId"))
                  for a in logged["alignments"]]
    # Withdrawals first: an artifact withdrawn is one that was offered, never one the
    # same change adds (a revision is withdrawn and added under one artifactId).
    for part in sorted(parts, key=lambda p: p.kind != "artifact-withdrawn"):
        if part.kind == "profile" and part.profile is not None and (
                part.profile.id == logged["profile"].get("id")):
            profile, revised = str(part.profile_source), True
        elif part.kind == "artifact-withdrawn":
            alignments = [a for a in alignments if a[2] != part.withdrawn]
        elif part.kind == "artifact-added" and part.added is not None:
            alignments.append((part.added.origin, part.added.data, part.added.artifact.id))
    capabilities = tuple((c["origin"], _object(root, c["sha256"]))
                         for c in logged["capabilities"])
    limits = logged.get("limits")
    timeout = logged.get("shapeTimeout")
    return _Configuration(profile, capabilities,
                          tuple((origin, data) for origin, data, _ in alignments),
                          str(logged.get("engine", "compiled")),
                          tuple(sorted(limits.items())) if isinstance(limits, dict) else (),
                          float(timeout) if isinstance(timeout, (int, float)) else None,
                          revised)


class Seen:
    """A logged Checker's instances (pair and content digests), in log order, such that
    remembering them all, from none, leaves a Checker's revision memory as the logged
    Checker's was. Past twice ``INSTANCES`` entries they are replaced by that memory (each
    pair it holds once, with its content, the least recently seen first: a Checker holds at
    most ``INSTANCES`` pairs), so that memory is bounded whatever the log's length, and a
    pair seen long ago, but among the last ``INSTANCES`` distinct ones, is still held.
    Positions count every entry ever appended; ``base`` is where the last replacement
    ended: a replay that stands before it starts afresh (:meth:`_Replay.restore`)."""

    def __init__(self) -> None:
        self.items: list[tuple[bytes, bytes]] = []
        self.dropped = 0
        self.base = 0

    @property
    def end(self) -> int:
        return self.dropped + len(self.items)

    def append(self, item: tuple[bytes, bytes]) -> None:
        self.items.append(item)
        if len(self.items) > 2 * INSTANCES:
            # As a Checker's LRUCache(INSTANCES).setdefault keeps them: a pair seen again is
            # the most recent, with the content it was first seen with.
            memory: OrderedDict[bytes, bytes] = OrderedDict()
            for pair, content in self.items:
                if pair in memory:
                    memory.move_to_end(pair)
                else:
                    memory[pair] = content
                    if len(memory) > INSTANCES:
                        memory.popitem(last=False)
            end = self.end
            self.items = list(memory.items())
            self.dropped, self.base = end - len(self.items), end

    def since(self, position: int) -> list[tuple[bytes, bytes]]:
        """The entries from ``position`` on (all that are kept, from a position before
        ``base``)."""
        return self.items[max(position - self.dropped, 0):]


_NONE_SEEN = Seen()  # never appended to: a run that logged no instance


class _Replay:
    """A Checker for one configuration, with its revision memory kept as the logged
    Checker's was at each decision. Its own cache is off: the memo (:class:`_Judge`) keys
    what it serves by the configuration too, and, off, every judgement is fresh."""

    def __init__(self, configuration: _Configuration) -> None:
        try:
            limits = Limits(**dict(configuration.limits))
        except TypeError as exc:
            raise _Unjudgeable(f"the logged limits are not this version's: {exc}") from exc
        self.checker = Checker(configuration.profile,
                               capabilities=[data for _, data in configuration.capabilities],
                               alignments=[data for _, data in configuration.alignments],
                               engine=configuration.engine, limits=limits,
                               shape_timeout=configuration.shape_timeout or SHAPE_TIMEOUT,
                               cache_size=0, recorder=self)
        # Its memory is the log's: an instance a decision reads only when judged again (one
        # rejected before it was read at the baseline) is not carried to the next ones, so
        # that what each decision is judged against does not hang on which others were
        # judged, nor on where a cluster's batches begin.
        self.checker.learns_instances = False
        self.run: str | None = None
        self.position = 0
        self._instance: tuple[bytes, bytes] | None = None

    def matches(self, entry: Mapping[str, Any]) -> bool:
        """Whether this Checker's profile is the one the decision was judged under."""
        logged = {k: v for k, v in entry["configuration"]["profile"].items() if k != "source"}
        return logged == dict(self.checker.profile_dependencies)

    def restore(self, seen: Seen, run: str) -> None:
        """The revision memory as the logged Checker ``run`` had it: what ``seen`` holds."""
        if run != self.run or self.position > seen.end or 0 < self.position < seen.base:
            self.checker.forget_instances()
            self.run, self.position = run, 0
        for pair, content in seen.since(self.position):
            self.checker.remember_instance(pair, content)
        self.position = seen.end

    def sides(self, at: datetime) -> tuple[tuple[bool, ...], ...]:
        """Where ``at`` stands against every offered artifact's validity limits."""
        return tuple(a.validity_at(at) for a in self.checker.artifacts)

    def judge(self, envelope: bytes, params: Mapping[str, str], at: datetime,
              source: str) -> tuple[Decision, tuple[bytes, bytes] | None]:
        """The decision, and its instance's (pair, content) digests when it has one."""
        self._instance = None
        decision = self.checker.check(envelope, params=params, at=at, source=source)
        return decision, self._instance

    def record(self, checker: Checker, checked: Checked) -> None:
        """The Checker's recorder: keeps the instance of the decision just made."""
        self._instance = checked.instance


def _root(log: str) -> str:
    """The log a segment belongs to (``LOG.3`` is ``LOG``'s): its objects folder is shared."""
    head, _, tail = log.rpartition(".")
    return head if tail.isdigit() and head and os.path.isdir(f"{head}.objects") else log


@lru_cache(maxsize=_OBJECTS)
def _issuer(root: str, digest: str) -> str | None:
    """The ``assertedBy`` of the artifact kept under ``digest``, or None when it cannot be
    read (then every change of trust touches the decision)."""
    try:
        # As a Checker reads it: the issuer whose trust screen_artifacts looks up.
        artifact = read_artifact(_object(root, digest), "kept", 0)
    except (_Unjudgeable, IoaSemanticError):
        return None
    return artifact.asserted_by or None


@lru_cache(maxsize=_OBJECTS)
def _object(root: str, digest: str) -> bytes:
    """The bytes kept under ``digest``, once they are known to have it. The folder is only a
    cache of names: what stands under a name (edited, swapped, a link out of the folder, a
    pipe that would never end) is judged only when its bytes have that sha256. The memo
    keeps only bytes so proven (a failure is raised, never remembered): the last few
    hundred, as the log names them again."""
    try:
        handle = os.open(object_path(root, digest), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        why = ("a symbolic link, which is not followed" if exc.errno == errno.ELOOP
               else exc.strerror)
        raise _Unjudgeable(f"an object the decision names is not kept ({why})") from exc
    with open(handle, "rb") as kept:
        if not stat.S_ISREG(os.fstat(kept.fileno()).st_mode):
            raise _Unjudgeable("an object the decision names is not kept (not a file)")
        try:
            # Proven before it is held: what stands under the name may be any size (a file
            # swapped in), and only bytes of the logged sha256 are worth their memory.
            proof = hashlib.sha256()
            while chunk := kept.read(_CHUNK):
                proof.update(chunk)
            if proof.hexdigest() != digest:
                raise _Unjudgeable(_CHANGED)
            kept.seek(0)
            data = kept.read()
        except OSError as exc:
            raise _Unjudgeable(f"an object the decision names cannot be read ({exc.strerror})"
                               ) from exc
    # The bytes held are proven again: the file may have changed between the two reads.
    if hashlib.sha256(data).hexdigest() != digest:
        raise _Unjudgeable(_CHANGED)
    return data


_CHANGED = ("an object the decision names does not have the sha256 it is kept under (changed "
            "since it was logged)")


_CHUNK = 1 << 20
