"""A change to what decisions rest on, and which logged decisions it can touch (S5).

A :class:`Change` names a new or revised profile, artifacts added, artifacts withdrawn (by
``artifactId``) and another evaluation instant. Each is a :class:`Part`; a logged decision is
judged again when at least one part :meth:`Part.touches` it, and skipped otherwise, with the
reason. The test is sound first: a part touches every decision that read what it changes
(the log's ``dependencies.read``, docs/impact.md "What a decision depends on").
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import pyoxigraph

from .._checker import baseline_reads
from .._exceptions import ConfigurationError
from .._instants import instant
from .._vocab import IOP

if TYPE_CHECKING:
    from rdflib import Graph
from ..sources.loader import Artifact, Profile, load_profile, read_artifact, resolve_artifact


class Change(NamedTuple):
    """A change as named: ``profile`` a profile name or file (new or revised), ``added``
    artifact files or shipped names, ``withdrawn`` artifactIds, ``at`` another instant."""

    profile: str | None = None
    added: tuple[str, ...] = ()
    withdrawn: tuple[str, ...] = ()
    at: datetime | None = None


class Added(NamedTuple):
    """An artifact the change adds: where it came from, its bytes and what it says."""

    origin: str
    data: bytes
    artifact: Artifact


class Part(NamedTuple):
    """One part of a change: ``kind`` (``profile``, ``artifact-added``,
    ``artifact-withdrawn``, ``instant``), ``label`` (the cause as a report names it) and what
    it holds."""

    kind: str
    label: str
    profile: Profile | None = None
    profile_source: str | None = None
    added: Added | None = None
    withdrawn: str | None = None
    at: datetime | None = None

    def touches(self, entry: Mapping[str, Any], profile_now: Mapping[str, Any] | None,
                profile_before: Profile | None = None,
                issuer_of: Callable[[str], str | None] | None = None) -> str | None:
        """None when this part can change the logged decision ``entry``; else why it cannot
        (the reason a skip is counted under). ``profile_now`` is what the new profile's
        decisions record of it (its dependencies), for a profile part; ``profile_before``
        the profile the decision was judged under, when it could be read as it was;
        ``issuer_of`` the ``assertedBy`` of an offered artifact by its sha256 (None when it
        cannot be read)."""
        configuration = entry["configuration"]
        read = entry["dependencies"]["read"]
        if self.kind == "profile":
            return self._touches_profile(entry, profile_now, profile_before, issuer_of)
        offered = configuration["alignments"]
        if self.kind == "artifact-withdrawn":
            if not any(a.get("artifactId") == self.withdrawn for a in offered):
                return "the withdrawn artifact was not offered"
            if read["artifacts"] or _referenced(entry) == self.withdrawn:
                return None
        if self.kind == "artifact-added":
            assert self.added is not None
            if any(a["sha256"] == self.added.artifact.digest for a in offered):
                return "the added artifact was already offered"
            # The envelope's alignmentRef is retrieved unless an artifact of its id is
            # offered (the Checker's _fetch_artifacts): adding the first one changes that.
            reference = _referenced(entry)
            if read["artifacts"] or (reference is not None
                                     and reference == self.added.artifact.id
                                     and not any(a.get("artifactId") == reference
                                                 for a in offered)):
                return None
        if not read["artifacts"]:
            return f"no artifact was read: {read.get('notReadBecause', 'none was screened')}"
        assert self.at is not None
        if not entry["dependencies"]["artifacts"]:
            return "no artifact was offered or retrieved: no validity limit was read"
        logged_sides = [_sides(a) for a in entry["dependencies"]["artifacts"]]
        if logged_sides == [_sides_at(a, self.at) for a in entry["dependencies"]["artifacts"]]:
            return "the instant is on the same side of every validity limit"
        return None

    def _touches_profile(self, entry: Mapping[str, Any], profile_now: Mapping[str, Any] | None,
                         profile_before: Profile | None,
                         issuer_of: Callable[[str], str | None] | None = None) -> str | None:
        """:meth:`touches` for a profile part."""
        read = entry["dependencies"]["read"]
        assert self.profile is not None and profile_now is not None
        logged = entry["configuration"]["profile"]
        if logged.get("id") != self.profile.id:
            return "judged under another profile"
        if {k: v for k, v in logged.items() if k != "source"} == dict(profile_now):
            return "the profile is unchanged"
        difference = (profile_difference(profile_before, self.profile)
                      if profile_before is not None else "other")
        if difference == "none":
            return "the profile differs only in what no decision reads (its revision)"
        if difference == "trust" and not read["artifacts"]:
            return ("the profile differs only in the artifacts it accepts, and no artifact "
                    f"was read: {read.get('notReadBecause')}")
        if difference == "trust" and issuer_of is not None and profile_before is not None:
            issuers, pinned = trust_changes(profile_before, self.profile)
            offered = entry["configuration"]["alignments"]
            if not any(a.get("artifactId") in pinned or issuer_of(a["sha256"]) in issuers
                       or issuer_of(a["sha256"]) is None for a in offered):
                return ("the profile differs only in the artifacts it accepts, and none of "
                        "those offered is of an issuer or a pin it treats otherwise")
        if (read.get("stage") == "baseline" and profile_before is not None
                and baseline_reads(profile_before) == baseline_reads(self.profile)):
            return ("rejected before compatibility was evaluated, and what the baseline "
                    "reads of the profile is unchanged")
        return None


# What a profile says of the artifacts it accepts: read only where artifacts are screened
# (pipeline.decision.screen_artifacts and judge_mapped, the mapping_candidates query's
# ?trusted), and by the remedies, which are not compared.
_TRUST_FIELDS = frozenset({"trusted_issuers", "issuer_bindings", "pins", "preferred_issuers"})
_TRUST_TERMS = frozenset(IOP + t for t in ("trustedIssuer", "issuerBinding", "artifactPin",
                                           "preferIssuer"))
# What no decision's verdict or reasons read: where the file was, its digest and its
# revision (which the decision's profile member shows); the graph is compared on its own.
_UNREAD_FIELDS = frozenset({"source", "digest", "revision", "quads"})


# profile_difference's answers by the two revisions' files (where each was read, and the
# sha256 of its bytes): comparing the graphs costs milliseconds, and a log holds a million
# decisions judged under one revision. Bounded: a service compares a pair per request.
_DIFFERENCES: dict[tuple[str, str, str, str], str] = {}
_DIFFERENCES_KEPT = 64
_DIFFERENCES_LOCK = threading.Lock()


def profile_difference(before: Profile, after: Profile) -> str:
    """:func:`differences_of` the two profiles, once per pair of their files: every decision
    of a log asks, and comparing the graphs costs milliseconds (a profile with shapes of its
    own differs in ``other`` whatever its shape files hold)."""
    key = (before.source, before.digest, after.source, after.digest)
    with _DIFFERENCES_LOCK:
        found = _DIFFERENCES.get(key)
    if found is None:
        found = differences_of(before, after)
        with _DIFFERENCES_LOCK:  # the service's impact runs share it, each on a thread
            if len(_DIFFERENCES) >= _DIFFERENCES_KEPT:
                _DIFFERENCES.pop(next(iter(_DIFFERENCES)))
            _DIFFERENCES[key] = found
    return found


def differences_of(before: Profile, after: Profile) -> str:
    """How two revisions of a profile differ, as decisions read them: ``none`` (in nothing
    a verdict or reason reads), ``trust`` (only in the artifacts they accept: trusted
    issuers, issuer bindings, pins, preferences) or ``other``.

    Sound first: a profile with SHACL shapes of its own is ``other`` (a shape may read any
    statement of the profile), and the two graphs, but for the statements of trust and the
    revision, must be isomorphic, besides every field read from them being equal."""
    if before.shapes or after.shapes:
        return "other"
    for name in Profile._fields:
        if name not in _UNREAD_FIELDS | _TRUST_FIELDS and (
                getattr(before, name) != getattr(after, name)):
            return "other"
    from rdflib.compare import isomorphic  # rdflib: only for a change that revises a profile

    graphs = _untrusted_graph(before), _untrusted_graph(after)
    # Isomorphic graphs have the same statements once every blank node is one and the same:
    # when they do not, the canonical labelling (exponential on symmetric blank nodes: two
    # cycles of forty took minutes, a service thread that no time bound stops) is not needed,
    # and when they do, the revision is no larger than the profile it is compared with.
    if _blind(graphs[0]) != _blind(graphs[1]) or not isomorphic(*graphs):
        return "other"
    if any(getattr(before, name) != getattr(after, name) for name in _TRUST_FIELDS):
        return "trust"
    return "none"


def _blind(graph: Graph) -> Counter[tuple[Any, Any, Any]]:
    """``graph``'s statements with every blank node the same (None), counted."""
    from rdflib import BNode

    def seen(term: Any) -> Any:
        return None if isinstance(term, BNode) else term

    return Counter((seen(s), seen(p), seen(o)) for s, p, o in graph)


def trust_changes(before: Profile, after: Profile) -> tuple[frozenset[str], frozenset[str]]:
    """The issuers whose artifacts two revisions treat differently (trusted by one only, bound
    to other keys, or ranked among the preferred when the preferences differ at all), and the
    artifactIds whose pins differ. An artifact of neither is screened alike under both
    (pipeline.decision.screen_artifacts and judge_mapped read these by issuer and by id)."""
    issuers = set(before.trusted_issuers ^ after.trusted_issuers)
    bound_before, bound_after = before.issuer_bindings, after.issuer_bindings
    issuers |= {i for i in {*bound_before, *bound_after}
                if bound_before.get(i) != bound_after.get(i)}
    if dict(before.preferred_issuers) != dict(after.preferred_issuers):
        # A rank is read against the others': any issuer ranked by either is touched.
        issuers |= {*before.preferred_issuers, *after.preferred_issuers}
    pins = set(before.pins.items()) ^ set(after.pins.items())
    return frozenset(issuers), frozenset(ident for (ident, _), _ in pins)


def _untrusted_graph(profile: Profile) -> Graph:
    """The profile's statements but its trust (with what hangs from each) and its revision."""
    from rdflib import BNode, Graph, Literal, URIRef

    def term(node: Any) -> Any:
        if isinstance(node, pyoxigraph.NamedNode):
            return URIRef(node.value)
        if isinstance(node, pyoxigraph.BlankNode):
            return BNode(node.value)
        return Literal(node.value, lang=node.language,
                       datatype=None if node.language else URIRef(node.datatype.value))

    triples = {(term(q.subject), term(q.predicate), term(q.object)) for q in profile.quads}
    dropped = {o for s, p, o in triples if str(p) in _TRUST_TERMS and isinstance(o, BNode)}
    pending = list(dropped)
    while pending:  # what hangs from a dropped entry goes with it
        node = pending.pop()
        for s, _, o in triples:
            if s == node and isinstance(o, BNode) and o not in dropped:
                dropped.add(o)
                pending.append(o)
    graph = Graph()
    for s, p, o in triples:
        if (str(p) in _TRUST_TERMS or s in dropped
                or (str(p) == IOP + "revision" and str(s) == profile.id)):
            continue
        graph.add((s, p, o))
    return graph


def _referenced(entry: Mapping[str, Any]) -> str | None:
    reference = entry["dependencies"].get("alignmentRef")
    return reference if isinstance(reference, str) else None


_SIDES = ("notYetValidAtEvaluation", "expiredAtEvaluation", "proofNotYetValidAtEvaluation",
          "proofExpiredAtEvaluation")


def _sides(logged: Mapping[str, Any]) -> tuple[bool, ...]:
    return tuple(bool(logged.get(k)) for k in _SIDES)


def _sides_at(logged: Mapping[str, Any], at: datetime) -> tuple[bool, ...]:
    """Where ``at`` stands against a logged artifact's limits, as Artifact.validity_at
    puts it: before validFrom, at or after validUntil, before the proof's created, at or
    after its expires."""
    def limit(name: str) -> datetime | None:
        value = logged.get(name)
        return instant(value) if isinstance(value, str) else None

    valid_from, valid_until = limit("validFrom"), limit("validUntil")
    created, expires = limit("proofCreated"), limit("proofExpires")
    return (valid_from is not None and at < valid_from,
            valid_until is not None and at >= valid_until,
            created is not None and at < created,
            expires is not None and at >= expires)


def parts_of(change: Change) -> list[Part]:
    """The parts of ``change``, each loaded (a profile or artifact that cannot be read is a
    :class:`~ioa_semantic.ConfigurationError`)."""
    parts: list[Part] = []
    if change.profile is not None:
        profile = load_profile(change.profile)
        parts.append(Part("profile", f"profile {profile.id} revision {profile.revision} "
                          f"({profile.source}, sha256 {profile.digest[:12]})",
                          profile=profile, profile_source=change.profile))
    for index, name in enumerate(change.added):
        origin, data = resolve_artifact(name)
        artifact = read_artifact(data, origin, index)
        named = (f"{artifact.id} revision {artifact.revision}" if artifact.id
                 else f"{origin} (malformed)")
        parts.append(Part("artifact-added", f"artifact added: {named}",
                          added=Added(origin, data, artifact)))
    parts.extend(Part("artifact-withdrawn", f"artifact withdrawn: {ident}", withdrawn=ident)
                 for ident in dict.fromkeys(change.withdrawn))
    if change.at is not None:
        if change.at.tzinfo is None:
            raise ConfigurationError(f"the instant {change.at.isoformat()} has no UTC offset")
        instant = change.at.isoformat().replace("+00:00", "Z")
        parts.append(Part("instant", f"instant {instant}", at=change.at))
    return parts


def applies(parts: Sequence[Part], entry: Mapping[str, Any],
            profile_now: Mapping[str, Any] | None, profile_before: Profile | None = None,
            issuer_of: Callable[[str], str | None] | None = None
            ) -> tuple[list[Part], list[str]]:
    """The parts that touch ``entry`` and, when none does, why each does not (see
    :meth:`Part.touches`)."""
    touching, reasons = [], []
    for part in parts:
        why = part.touches(entry, profile_now, profile_before, issuer_of)
        if why is None:
            touching.append(part)
        else:
            reasons.append(why)
    return touching, reasons
