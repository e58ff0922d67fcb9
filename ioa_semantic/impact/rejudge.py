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
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import lru_cache, partial
from typing import Any, NamedTuple

from .._checker import INSTANCES, Checker
from .._exceptions import IoaSemanticError
from .._findings import Decision
from ..pipeline.bounded import SHAPE_TIMEOUT
from ..pipeline.intake import Limits
from ..sources.loader import Profile, load_profile, read_artifact
from .change import Change, Part, applies, parts_of
from .log import Damage, Logged, object_path, read_log

# The reasons' identity in a comparison (see the module's docstring).
_IDENTITY = ("code", "severity", "path", "section")
# Checkers kept at once (one per configuration the change produces).
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


class Impact:
    """The impact of ``change`` on the decisions logged in ``logs`` (each a log path, read
    with its rotated segments). Iterate it for the flips; :attr:`summary` is then complete.
    With ``everything``, every decision is judged again (what the skipping is tested
    against); with ``keep``, each decision judged again is kept in :attr:`judged`."""

    def __init__(self, logs: Sequence[str], change: Change, *, everything: bool = False,
                 keep: bool = False) -> None:
        self.logs = tuple(logs)
        self.change = change
        self.parts = parts_of(change)
        self.everything = everything
        self.keep = keep
        self.summary: Summary | None = None
        self._checkers: dict[_Configuration, _Replay] = {}
        self._profile_now: Mapping[str, Any] | None = None
        self._profiles_before: dict[str, Profile | None] = {}
        self._configurations: dict[tuple[str, str, str, tuple[str, ...]], _Configuration] = {}
        #: With ``keep``: every decision judged again, by (log, line).
        self.judged: dict[tuple[str, int], Decision] = {}

    def __iter__(self) -> Iterator[Flip]:
        skipped: Counter[str] = Counter()
        unjudgeable: Counter[str] = Counter()
        causes: Counter[str] = Counter()
        transitions: Counter[str] = Counter()
        warnings: list[str] = []
        decisions = rejudged = unchanged = flipped = 0
        # Each logged Checker's instance contents, in log order (5.3): a replay restores them.
        seen: dict[str, Seen] = {}
        for item in self._read():
            if isinstance(item, Damage):
                warnings.append(str(item))
                continue
            decisions += 1
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
                skipped[reasons[0] if len(set(reasons)) == 1 else
                        "; ".join(sorted(set(reasons))) or "the change is empty"] += 1
                continue
            try:
                # Under the whole change: the parts that do not touch it change nothing it read.
                after = self._judge(item, self.parts, seen.get(run, _NONE_SEEN), run)
            except _Unjudgeable as exc:
                unjudgeable[str(exc)] += 1
                continue
            rejudged += 1
            if self.keep:
                self.judged[(item.log, item.line)] = after
            flip = self._compare(item, after)
            if flip is None:
                unchanged += 1
                continue
            if len(touching) > 1:
                flip = flip._replace(causes=self._causes(item, touching, seen.get(run, _NONE_SEEN),
                                                         run))
            else:
                flip = flip._replace(causes=tuple(p.label for p in touching))
            flipped += 1
            transitions[flip.transition] += 1
            for cause in flip.causes:
                causes[cause] += 1
            yield flip
        self.summary = Summary(tuple(p.label for p in self.parts), decisions, rejudged,
                               dict(skipped), unchanged, flipped, dict(causes),
                               dict(transitions), dict(unjudgeable), tuple(warnings))

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
            found = self._configurations[key] = self._configured(item, parts)
        return found

    def _configured(self, item: Logged, parts: Iterable[Part]) -> _Configuration:
        logged = item.entry["configuration"]
        root = _root(item.log)
        profile = logged["profile"]["source"]
        alignments = [(a["origin"], _object(root, a["sha256"]), a.get("artifactId"))
                      for a in logged["alignments"]]
        # Withdrawals first: an artifact withdrawn is one that was offered, never one the
        # same change adds (a revision is withdrawn and added under one artifactId).
        for part in sorted(parts, key=lambda p: p.kind != "artifact-withdrawn"):
            if part.kind == "profile" and part.profile is not None and (
                    part.profile.id == logged["profile"].get("id")):
                profile = str(part.profile_source)
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
                              float(timeout) if isinstance(timeout, (int, float)) else None)

    def _judge(self, item: Logged, parts: Iterable[Part], seen: Seen,
               run: str) -> Decision:
        parts = list(parts)
        if item.entry["configuration"].get("retrieval"):
            raise _Unjudgeable("it could retrieve remote resources, which are not kept")
        configuration = self._configuration(item, parts)
        replay = self._checkers.pop(configuration, None)
        if replay is None:
            try:
                replay = _Replay(configuration)
            except IoaSemanticError as exc:
                raise _Unjudgeable(f"the configuration cannot be built again: {exc}") from exc
            if len(self._checkers) >= _CHECKERS:
                self._checkers.pop(next(iter(self._checkers)))
        self._checkers[configuration] = replay  # the most recently used last
        replaced = configuration.profile != item.entry["configuration"]["profile"]["source"]
        if not replaced and not replay.matches(item.entry):
            raise _Unjudgeable("the profile changed since the decision was logged (name the "
                               "revised file with --profile)")
        envelope = _object(_root(item.log), item.entry["envelope"]["sha256"])
        at = next((p.at for p in parts if p.kind == "instant" and p.at is not None), item.at)
        return replay.judge(envelope, item.entry["params"], at,
                            item.entry["envelope"].get("source", "-"), seen, run)

    def _compare(self, item: Logged, after: Decision) -> Flip | None:
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

    def _causes(self, item: Logged, touching: Sequence[Part],
                seen: Seen, run: str) -> tuple[str, ...]:
        """The parts that flip the decision alone; all of them when none does alone."""
        alone = []
        for part in touching:
            try:
                decision = self._judge(item, [part], seen, run)
            except _Unjudgeable:
                continue
            if self._compare(item, decision) is not None:
                alone.append(part.label)
        return tuple(alone) or (" + ".join(p.label for p in touching),)


class Seen:
    """A logged Checker's instances (pair and content digests), in log order, as far back
    as its revision memory can reach: a Checker holds at most ``INSTANCES`` pairs, so the
    entries older than twice that are dropped (memory bounded whatever the log's length).
    Positions count every entry ever appended."""

    def __init__(self) -> None:
        self.items: list[tuple[bytes, bytes]] = []
        self.dropped = 0

    @property
    def end(self) -> int:
        return self.dropped + len(self.items)

    def append(self, item: tuple[bytes, bytes]) -> None:
        self.items.append(item)
        if len(self.items) > 2 * INSTANCES:
            del self.items[:INSTANCES]
            self.dropped += INSTANCES

    def since(self, position: int) -> list[tuple[bytes, bytes]]:
        """The entries from ``position`` on (those still kept)."""
        return self.items[max(position - self.dropped, 0):]


_NONE_SEEN = Seen()  # never appended to: a run that logged no instance


class _Replay:
    """A Checker for one configuration, with its revision memory kept as the logged
    Checker's was at each decision."""

    def __init__(self, configuration: _Configuration) -> None:
        try:
            limits = Limits(**dict(configuration.limits))
        except TypeError as exc:
            raise _Unjudgeable(f"the logged limits are not this version's: {exc}") from exc
        self.checker = Checker(configuration.profile,
                               capabilities=[data for _, data in configuration.capabilities],
                               alignments=[data for _, data in configuration.alignments],
                               engine=configuration.engine, limits=limits,
                               shape_timeout=configuration.shape_timeout or SHAPE_TIMEOUT)
        self.run: str | None = None
        self.position = 0

    def matches(self, entry: Mapping[str, Any]) -> bool:
        """Whether this Checker's profile is the one the decision was judged under."""
        logged = {k: v for k, v in entry["configuration"]["profile"].items() if k != "source"}
        return logged == dict(self.checker.profile_dependencies)

    def judge(self, envelope: bytes, params: Mapping[str, str], at: datetime, source: str,
              seen: Seen, run: str) -> Decision:
        if run != self.run:
            self.checker.forget_instances()
            self.run, self.position = run, 0
        for pair, content in seen.since(self.position):
            self.checker.remember_instance(pair, content)
        self.position = seen.end
        return self.checker.check(envelope, params=params, at=at, source=source)


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
            data = kept.read()
        except OSError as exc:
            raise _Unjudgeable(f"an object the decision names cannot be read ({exc.strerror})"
                               ) from exc
    if hashlib.sha256(data).hexdigest() != digest:
        raise _Unjudgeable("an object the decision names does not have the sha256 it is kept "
                           "under (changed since it was logged)")
    return data
