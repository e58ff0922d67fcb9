"""The Checker: one receiver's profile, registrations and artifacts, built once, used often.

A Checker loads and compiles everything that does not depend on the envelope (profile,
vocabulary, shapes, offered registrations and artifacts) at construction; ``check`` then runs
one envelope through the pipeline: intake, expansion, shapes, store, decision. It holds no
mutable state between checks except a bounded decision cache, so it may be shared between
threads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from mypy_extensions import mypyc_attr

if TYPE_CHECKING:
    from pathlib import Path

    from .pipeline.constraints import ProfileShapes
    from .sources.retrieval import ResourceCache, RetrievalPolicy, Retriever

from ._codes import finding
from ._exceptions import ConfigurationError, RegistrationError, RetrievalError
from ._files import Unreadable, read_bounded
from ._findings import Decision, Finding, ProfileRef, Remedy, Severity, Verdict, combine, sort_key
from ._memo import BoundedCache
from ._runtime import Lock, sha256
from .compiled.engine import CompiledEngine
from .pipeline import bounded, remedies
from .pipeline.baseline import Baseline, Kind, read_document
from .pipeline.bounded import SHAPE_TIMEOUT
from .pipeline.contexts import ContextPolicy
from .pipeline.decision import task_from
from .pipeline.engine import ReferenceEngine
from .pipeline.intake import Limits
from .pipeline.shapes import ShapeSet
from .pipeline.store import UnloadableTerm
from .sources.loader import (
    Artifact,
    Profile,
    Registration,
    artifact_from,
    artifact_quads,
    is_remote,
    load_profile,
    load_shape_files,
    read_artifact,
    registration_from_node,
    resolve_artifact,
)
from .sources.parameters import BUILT_IN

# The engines by name; the Checker builds one, and that is the one place the compiled engine
# is chosen (it asks its compiled forms first and falls back to the reference stages).
_ENGINES: dict[str, type[ReferenceEngine]] = {"compiled": CompiledEngine,
                                              "reference": ReferenceEngine}
ENGINES = tuple(_ENGINES)
_ALIGNMENT_REF = "https://example.org/ioa/semantic#alignmentRef"
_MAPPING_NOT_ESTABLISHED = frozenset({
    "alignment.no-accepted-mapping", "alignment.condition-unevaluable", "alignment.not-offered"})
_SHAPES: ShapeSet | None = None
_SHAPES_LOCK = Lock()


def shapes() -> ShapeSet:
    """The compiled baseline shapes, shared by every Checker in the process."""
    global _SHAPES
    with _SHAPES_LOCK:
        if _SHAPES is None:
            _SHAPES = ShapeSet()
        return _SHAPES


EnvelopeInput = bytes | str | dict[str, Any]


def context_policy(profile: Profile) -> ContextPolicy:
    """What a sender's contexts may do under ``profile``: with its permitted types and its
    retrieval settings, all the baseline stage reads of a profile."""
    return ContextPolicy(
        allow_vocab=profile.allow_vocab,
        allow_base=profile.allow_base,
        allowed_schemes=profile.allowed_schemes,
        ignorable_terms=profile.ignorable_terms,
        parameter_terms=frozenset(term for term, parameter in profile.parameter_terms().items()
                                  if parameter.name not in BUILT_IN),
    )


def baseline_reads(profile: Profile) -> tuple[Any, ...]:
    """What the baseline stage reads of ``profile`` (an envelope it rejects was judged on
    this and nothing else of the profile): two profiles equal here reject alike."""
    return (context_policy(profile), profile.permitted_types, profile.retrieval)


class Checked(NamedTuple):
    """One check as a :class:`DecisionRecorder` receives it: what is needed to judge it again.

    ``envelope`` is the bytes judged (a dict envelope as its JSON text), ``params`` the task
    parameters the caller gave (not those the envelope carries), ``at`` the evaluation
    instant, and ``instance`` the digests of the envelope instance's pair (``@id`` and
    ``profileVersion``) and content as the revision memory holds them (5.3), or None.
    """

    envelope: bytes
    params: Mapping[str, str]
    at: datetime
    decision: Decision
    instance: tuple[bytes, bytes] | None


class Offered(NamedTuple):
    """What a Checker was built from, as a decision log keeps it: the profile as named (a
    shipped name or a path) and each registration and artifact as (origin, bytes)."""

    profile: str
    capabilities: tuple[tuple[str, bytes], ...]
    alignments: tuple[tuple[str, bytes], ...]


class DecisionRecorder(Protocol):
    """Receives every decision a Checker makes (a decision log, issue 40); it is called on
    the checking thread, after the decision, and what it raises escapes the check."""

    def record(self, checker: Checker, checked: Checked) -> None:
        """Keep one decision."""


# A program may extend the Checker (a gate's own, the tests' held one): compiled by mypyc, a
# class admits no subclass written in Python unless it says so.
@mypyc_attr(allow_interpreted_subclasses=True)
class Checker:
    """Judges envelopes against one accepted profile (draft 7.1).

    ``capabilities`` are the receiver's own registrations (paths, or bytes), ``alignments``
    the offered artifacts (paths, shipped names, or bytes). A broken profile or registration
    raises :class:`~ioa_semantic.ConfigurationError`; a malformed artifact is excluded with a
    reason at check time. ``shape_timeout`` (seconds) bounds each evaluation of the
    profile's shapes that pySHACL makes (SHACL-SPARQL, the Core constraints the compiled
    checks do not hold): past it the evaluation is stopped and the check is indeterminate
    (``constraint.shape-unevaluable``). ``recorder`` receives every decision with what judging
    it again needs (:class:`~ioa_semantic.impact.DecisionLog` writes a decision log).
    """

    def __init__(
        self,
        profile: str | Profile = "cs-translation",
        *,
        capabilities: Iterable[str | Path | bytes] = (),
        alignments: Iterable[str | Path | bytes] = (),
        limits: Limits | None = None,
        cache_size: int = 1024,
        cache_bytes: int = 32 << 20,
        allow_remote: Iterable[str] = (),
        allow_private_addresses: bool = False,
        retrieval: RetrievalPolicy | None = None,
        engine: str = "compiled",
        shape_timeout: float = SHAPE_TIMEOUT,
        recorder: DecisionRecorder | None = None,
    ) -> None:
        if not 0 < shape_timeout < float("inf"):
            raise ConfigurationError(f"shape_timeout must be a positive number of seconds, not "
                                     f"{shape_timeout!r}")
        if engine not in ENGINES:
            raise ConfigurationError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
        # "compiled" answers the common case from compiled shapes and tables and hands
        # everything else to "reference" (pyld, the shapes in full, the named SPARQL queries);
        # the differential tests hold the two to the same decisions.
        self.engine = engine
        #: The bound on each evaluation of the profile's shapes, in seconds.
        self.shape_timeout = shape_timeout
        # Retrieval is off unless the profile or the caller names origins (contract 4).
        # ``retrieval`` is a ready RetrievalPolicy (tests give it a resolver and a test CA);
        # otherwise the policy is the profile's section plus ``allow_remote``.
        self._cli_origins = tuple(allow_remote)
        self._allow_private = allow_private_addresses
        self._retrieval_policy = retrieval
        self._resources: ResourceCache | None = None
        bootstrap = self._retriever() if isinstance(profile, str) else None
        self.profile = profile if isinstance(profile, Profile) else load_profile(profile, bootstrap)
        if retrieval is None:
            self._retrieval_policy = self._policy_from(self.profile)
        # The profile's own SHACL shapes (draft 5.4), read and routed once; a remote file is
        # fetched under the profile's policy, pinned.
        shape_files = load_shape_files(self.profile, self._retriever() if any(
            is_remote(s) for s in self.profile.shapes) or is_remote(self.profile.source)
            else None)
        self.constraints: ProfileShapes | None = None
        if shape_files:
            from .pipeline.constraints import ProfileShapes

            # pySHACL's evaluations (SHACL-SPARQL, the Core constraints the compiled checks
            # do not hold) run in a worker process, killed past ``shape_timeout`` seconds.
            self.constraints = ProfileShapes(shape_files, shape_timeout)
        self.limits = limits or Limits()
        self.policy = context_policy(self.profile)
        self._shapes = shapes()
        capabilities = list(capabilities)
        offered = list(alignments)
        #: Who receives each decision (a decision log), or None.
        self.recorder = recorder
        #: What this Checker was built from, kept only for a recorder (it may judge again).
        self.offered: Offered | None = None
        #: What the recorder keeps of this Checker (a decision log: its configuration, written
        #: once). Held by the Checker, so that it goes with it: the recorder cannot key it by
        #: the Checker's id() (reused once the Checker is collected), nor by a weak reference
        #: (a Checker compiled by mypyc takes none).
        self.recorded: Any = None
        if recorder is not None:
            self.offered = Offered(
                profile if isinstance(profile, str) else self.profile.source,
                tuple(_read(item, "capability registration", RegistrationError,
                            self.limits.max_bytes) for item in capabilities),
                tuple((f"<artifact {i}>", item) if isinstance(item, bytes)
                      else resolve_artifact(str(item)) for i, item in enumerate(
                          a for a in offered if not (isinstance(a, str) and is_remote(a)))))
        self._capability_retrieved: list[tuple[tuple[str, str, str], ...]] = []
        self.registrations = tuple(
            self._registration(item, i) for i, item in enumerate(capabilities))
        self._remote_artifacts = tuple(str(a) for a in offered
                                       if isinstance(a, str) and is_remote(a))
        self.artifacts = tuple(self._artifact(item, i) for i, item in enumerate(
            a for a in offered if not (isinstance(a, str) and is_remote(a))))
        fixed = list(self.profile.quads)
        for registration in self.registrations:
            fixed.extend(registration.quads())
            fixed.extend(registration.constraint_quads(self.profile.parameters))
        for artifact in self.artifacts:
            if not artifact.malformed:
                fixed.extend(artifact_quads(artifact))
        self._profile_ref = ProfileRef(self.profile.id, self.profile.revision)
        # The part of each offered artifact's dependency entry that no check changes.
        self._artifact_entries = tuple(_artifact_entry(a) for a in self.artifacts)
        # What every decision of this Checker depends on, whatever the envelope (rule 15).
        self._fixed_dependencies: dict[str, Any] = {
            "profile": {"id": self.profile.id, "revision": self.profile.revision,
                        "sha256": self.profile.digest,
                        **({"shapes": self.constraints.dependencies()}
                           if self.constraints is not None else {})},
            "capabilities": [
                {"id": r.iri, "ontologyId": r.ontology[0], "ontologyVersion": r.ontology[1],
                 **({"retrieved": [{"url": url, "finalUrl": final, "sha256": digest}
                                   for url, final, digest in retrieved]} if retrieved else {})}
                for r, retrieved in zip(self.registrations, self._capability_retrieved,
                                        strict=True)
            ],
        }
        #: The engine's stages for this Checker's fixed inputs.
        self.stages: ReferenceEngine = _ENGINES[engine](
            profile=self.profile, registrations=self.registrations, artifacts=self.artifacts,
            fixed=fixed, shapes=self._shapes, policy=self.policy, limits=self.limits,
            constraints=self.constraints)
        # Decisions by envelope digest, parameters and validity side: at most cache_size of
        # them and cache_bytes as _weight counts them (a decision with thousands of reasons
        # weighs what they say).
        # Each decision with its instance's (pair, content) digests, when it has an @id.
        self._cache: BoundedCache[tuple[Any, ...],
                                  tuple[Decision, tuple[bytes, bytes] | None]] = BoundedCache(
            cache_bytes, max_entries=cache_size)
        self._cache_size = cache_size
        # The first content seen of each envelope instance (its @id and profileVersion, 5.3),
        # by the digest of its expanded graph: another content under the same pair is no
        # unambiguous revision. The most recent INSTANCES pairs are remembered (each weighs
        # one: the bound is a count; the lock makes a look and a put one step).
        self._instances: BoundedCache[bytes, bytes] = BoundedCache(INSTANCES,
                                                                   max_entries=INSTANCES)
        self._instances_lock = Lock()
        #: Whether a check adds the instance it reads to that memory. A decision log judged
        #: again turns it off: each decision then sees what its logged Checker had seen
        #: (:meth:`remember_instance`), whatever the others judged again read.
        self.learns_instances = True

    def _policy_from(self, profile: Profile | None) -> RetrievalPolicy | None:
        settings = profile.retrieval if profile is not None else None
        origins = tuple(dict.fromkeys((*(settings.origins if settings else ()), *self._cli_origins)))
        if not origins:
            return None
        from .sources.retrieval import RetrievalPolicy

        try:
            return RetrievalPolicy(
                origins=origins,
                allow_private_addresses=self._allow_private or bool(
                    settings and settings.allow_private_addresses),
                pins=settings.pins if settings else {},
                **(settings.budgets if settings else {}),
            )
        except ValueError as exc:
            raise ConfigurationError(f"retrieval policy: {exc}") from exc

    def _retriever(self) -> Retriever | None:
        """A retriever for one check (or for loading the profile), or None when retrieval is off."""
        if self._retrieval_policy is None and not self._cli_origins:
            return None
        policy = self._retrieval_policy or self._policy_from(None)
        if policy is None:
            return None
        from .sources.retrieval import ResourceCache, Retriever

        if self._resources is None:
            self._resources = ResourceCache()
        return Retriever(policy, self._resources)

    @property
    def retrieval_enabled(self) -> bool:
        return self._retrieval_policy is not None

    @property
    def remote_artifacts(self) -> tuple[str, ...]:
        """The artifacts offered by URL (retrieved for each check)."""
        return self._remote_artifacts

    @property
    def profile_ref(self) -> ProfileRef:
        return self._profile_ref

    @property
    def profile_dependencies(self) -> Mapping[str, Any]:
        """What every decision records of the profile: id, revision, sha256 and the digests
        of its shape files (rule 15)."""
        profile: Mapping[str, Any] = self._fixed_dependencies["profile"]
        return profile

    def forget_instances(self) -> None:
        """Forget every instance content seen (5.3): a decision log judged again starts each
        logged Checker's memory afresh, as that Checker started. The cached decisions go
        too: one found ambiguous against a content now forgotten is no longer ambiguous, and
        a cache hit would serve it as it was."""
        with self._instances_lock:
            self._instances.clear()
            self._cache = BoundedCache(self._cache.max_bytes, max_entries=self._cache_size)

    def _registration(self, item: str | Path | bytes, index: int) -> Registration:
        origin, data = _read(item, "capability registration", RegistrationError,
                             self.limits.max_bytes)
        # A remote @context is retrieved under the Checker's policy (--allow-remote, the
        # profile's), as an envelope's is; what was retrieved is recorded with the capability
        # in every decision's dependencies (rule 15). A retrieval that fails leaves the
        # registration unread: a configuration error naming its retrieval. reason.
        retriever = self._retriever()
        result = read_document(data, "registration", shapes=self._shapes, policy=self.policy,
                               permitted_types=self.profile.permitted_types, limits=self.limits,
                               retriever=retriever)
        self._capability_retrieved.append(tuple(retriever.retrieved) if retriever else ())
        errors = [f for f in result.findings if f.severity is Severity.ERROR]
        if errors or result.node is None:
            details = "; ".join(f"{f.code} at {f.path or '/'}: {f.message}" for f in errors)
            raise RegistrationError(f"{origin}: not a valid capability registration: {details}")
        registration = registration_from_node(result.node, origin, index,
                                              self.profile.single_ontology(),
                                              self.profile.parameters)
        if isinstance(registration, str):
            raise RegistrationError(f"{origin}: {registration}")
        return registration

    def _artifact(self, item: str | Path | bytes, index: int) -> Artifact:
        if isinstance(item, bytes):
            return read_artifact(item, f"<artifact {index}>", index)
        origin, data = resolve_artifact(str(item))
        return read_artifact(data, origin, index)

    def baseline(self, data: EnvelopeInput, kind: Kind,
                 retriever: Retriever | None = None) -> Baseline:
        """The baseline stage for one document under this Checker's engine and policy.

        The compiled engine answers what it can show clean; everything else, and anything
        needing a retrieval, takes the reference path, which reports every reason.
        """
        return self.stages.baseline(data, kind, retriever)

    def reported(self, data: EnvelopeInput, kind: Kind,
                 retriever: Retriever | None = None) -> Baseline:
        """The baseline stage's reporting path alone (for a caller that already had the
        compiled path decline the document)."""
        return self.stages.reported(data, kind, retriever)

    def check(
        self,
        envelope: EnvelopeInput,
        *,
        params: Mapping[str, str] | None = None,
        at: datetime | None = None,
        source: str = "-",
    ) -> Decision:
        """Judge one envelope. ``at`` is the evaluation instant (default: now, in UTC): an
        aware datetime, one with a UTC offset (a naive one raises
        :class:`~ioa_semantic.ConfigurationError`; which instant it means is not known).

        A dict is accepted but is weaker than bytes: duplicate member names are already gone.
        """
        at = datetime.now(UTC) if at is None else _aware(at)
        params = dict(params or {})
        key = self._cache_key(envelope, params, at)
        if key is not None:
            cached = self._cache.get(key)
            if cached is not None and self._still_first(cached):
                return self._recorded(envelope, params, at, _as_asked(
                    cached[0], source, _instant(at)), cached[1])
        contents: list[tuple[bytes, bytes]] = []
        stops = bounded.stops()
        decision = self._decide(envelope, params, at, source, contents)
        # A decision cut short by the shape bound is the machine's load as much as the
        # input's: judged afresh next time, never served from the cache.
        if key is not None and bounded.stops() == stops:
            self._cache.put(key, (decision, contents[0] if contents else None),
                            _weight(decision))
        return self._recorded(envelope, params, at, decision, contents[0] if contents else None)

    def unread(self, reasons: tuple[Finding, ...], *, params: Mapping[str, str] | None = None,
               at: datetime | None = None, source: str = "-") -> Decision:
        """The decision on an envelope its caller could not read whole (``reasons``: why, a
        ``json.`` finding): invalid, with the instant and the dependencies a check records
        (rule 15), as :meth:`check` would have made it of the envelope's bytes. Nothing is
        given to the recorder: there are no bytes to keep."""
        at = datetime.now(UTC) if at is None else _aware(at)
        return self._decision_of(list(reasons), source, dict(params or {}), at, None)

    def _recorded(self, envelope: EnvelopeInput, params: Mapping[str, str], at: datetime,
                  decision: Decision, instance: tuple[bytes, bytes] | None) -> Decision:
        """``decision``, given to the recorder first when there is one."""
        if self.recorder is not None:
            data = (json.dumps(envelope, ensure_ascii=False).encode("utf-8", "surrogatepass")
                    if isinstance(envelope, dict) else envelope.encode("utf-8", "surrogatepass")
                    if isinstance(envelope, str) else envelope)
            self.recorder.record(self, Checked(data, dict(params), at, decision, instance))
        return decision

    def remember_instance(self, pair: bytes, content: bytes) -> bool:
        """Take ``content`` as the first content seen of the instance ``pair`` unless one is
        already held (5.3): how a decision log judged again restores what the checker that
        logged it had seen, so a revision found ambiguous then is ambiguous again. Whether
        ``content`` is (now) the first: what a check of that content would find."""
        return self._first_content(pair, content, take=True) == content

    def first_instance(self, pair: bytes, content: bytes) -> bool:
        """Whether ``content`` is the first content the revision memory holds for the
        instance ``pair``, or none is held (5.3), without taking it."""
        return self._first_content(pair, content, take=False) == content

    def _first_content(self, pair: bytes, content: bytes, *, take: bool) -> bytes:
        """The first content the revision memory holds for the instance ``pair`` (5.3), or
        ``content`` when it holds none, which ``take`` then has it hold. A look refreshes
        the pair (the least recently used pairs are the ones forgotten)."""
        with self._instances_lock:
            held = self._instances.get(pair)
            if held is None:
                if take:
                    self._instances.put(pair, content, 1)
                return content
            return held

    def _still_first(self, cached: tuple[Decision, tuple[bytes, bytes] | None]) -> bool:
        """Whether a cached decision may be served: its instance's content is (again) the
        first one the revision memory holds for the pair (5.3). A hit refreshes the pair in
        the memory, so a served instance is never the one forgotten; and a decision whose
        pair was forgotten and since taken by another content is judged afresh (it is now
        the ambiguous one)."""
        _, content = cached
        if content is None:
            return True
        pair, digest = content
        return self._first_content(pair, digest, take=True) == digest

    def _cache_key(self, envelope: EnvelopeInput, params: Mapping[str, str],
                   at: datetime) -> tuple[Any, ...] | None:
        # Everything else a decision depends on (profile, registrations, artifacts) is fixed
        # for this Checker; the instant matters only through its side of each validity limit.
        # Remote resources can change between checks; only fetches are cached then.
        if self._cache_size <= 0 or isinstance(envelope, dict) or self.retrieval_enabled:
            return None
        data = envelope.encode("utf-8", "surrogatepass") if isinstance(envelope, str) else envelope
        validity = tuple(a.validity_at(at) for a in self.artifacts)
        return (sha256(data).digest(), tuple(sorted(params.items())), validity)

    def _decide(self, envelope: EnvelopeInput, params: dict[str, str], at: datetime,
                source: str, contents: list[tuple[bytes, bytes]] | None = None) -> Decision:
        retriever = self._retriever()
        baseline = self.baseline(envelope, "envelope", retriever)
        findings: list[Finding] = list(baseline.findings)
        evidence: list[dict[str, Any]] = []
        excluded: list[dict[str, Any]] = []
        candidates: list[dict[str, Any]] = []
        ontology: dict[str, str] = {}
        proposed: list[Remedy] = []
        instance: dict[str, str | None] = {"id": None, "profileVersion": None}
        # The task parameters the decision rests on, whatever gave them (contract 15).
        judged: dict[str, Any] = dict(params)
        reference: str | None = None
        fetched: list[Artifact] = []
        if not baseline.rejected and baseline.node is not None:
            instance = _instance(baseline.node)
            reference = _referenced(baseline.node)
            findings.extend(self._revision_findings(baseline.node, instance, contents))
            fetched, unavailable = self._fetch_artifacts(baseline.node, retriever)
            task = task_from(baseline.node, params, self.profile.parameters)
            judged.update(task.parameters)
            judged.update((name, list(values)) for name, values in task.several.items())
            try:
                outcome = self.stages.outcome(baseline.node, task, at,
                                              clean=not baseline.findings, fetched=fetched,
                                              located=baseline.located)
            except UnloadableTerm as exc:
                findings.append(finding(
                    "jsonld.expansion-error",
                    f"the expanded envelope holds a value no RDF store accepts: {exc}"))
                return self._decision_of(findings, source, judged, at, retriever,
                                         instance=instance, reference=reference, fetched=fetched)
            findings.extend(outcome.findings)
            # An artifact that could not be fetched matters where a mapping was needed and
            # not established (S4: unavailable, not absent); elsewhere it is a warning.
            needed = any(f.code in _MAPPING_NOT_ESTABLISHED for f in outcome.findings)
            findings.extend(f if needed else finding(f.code, f.message, f.path,
                                                     severity=Severity.WARNING, subject=f.subject)
                            for f in unavailable)
            evidence, excluded, candidates = outcome.evidence, outcome.excluded, outcome.candidates
            ontology, proposed = outcome.ontology, outcome.remedies
        return self._decision_of(findings, source, judged, at, retriever, ontology=ontology,
                                 evidence=evidence, excluded=excluded, candidates=candidates,
                                 proposed=proposed, instance=instance, reference=reference,
                                 fetched=fetched)

    def _revision_findings(self, node: dict[str, Any], instance: Mapping[str, str | None],
                           contents: list[tuple[bytes, bytes]] | None = None) -> list[Finding]:
        """Draft 5.3: a reused profile instance is an unambiguous revision only if its
        instance identifier and profileVersion name one content. The first content this
        Checker saw under the pair is that revision; another under the same pair is not.
        ``contents`` receives the pair's and the content's digests."""
        ident = instance["id"]
        if ident is None:
            return []
        version = instance["profileVersion"]
        digest = _content_digest(node)
        # The pair by its digest: the memory holds 32 bytes a pair whatever the sender wrote
        # (an @id and a profileVersion may be hundreds of kB within the intake limit).
        pair = sha256(_pair_text(ident, version).encode("utf-8", "surrogatepass")).digest()
        first = self._first_content(pair, digest, take=self.learns_instances)
        if contents is not None:
            contents.append((pair, digest))
        if first == digest:
            return []
        named = f"profileVersion {version!r}" if version is not None else "no profileVersion"
        return [finding(
            "profile.revision-ambiguous",
            f"the envelope {ident} with {named} was seen before with another content: which "
            "revision of the instance is meant is not unambiguous (5.3); give the changed "
            "instance a new profileVersion or identifier", "/@id")]

    def _decision_of(self, findings: list[Finding], source: str, params: Mapping[str, Any],
                     at: datetime, retriever: Retriever | None, *, ontology: Mapping[str, str] | None = None,
                     evidence: list[dict[str, Any]] | None = None,
                     excluded: list[dict[str, Any]] | None = None,
                     candidates: list[dict[str, Any]] | None = None,
                     proposed: Iterable[Remedy] = (),
                     instance: Mapping[str, str | None] | None = None,
                     reference: str | None = None,
                     fetched: Iterable[Artifact] = ()) -> Decision:
        """The verdict of ``findings`` (rule 14) with everything the decision records;
        ``fetched`` are the artifacts retrieved for this check."""
        if findings:
            verdict = combine(f.effect for f in findings
                              if f.severity is Severity.ERROR and f.effect is not None)
            # Every non-compatible result carries an error; a lower-ranked error never decides.
            reasons = tuple(sorted((_demote(f, verdict) for f in findings), key=sort_key))
        else:
            verdict, reasons = Verdict.COMPATIBLE, ()
        return Decision.of(
            verdict, reasons, self.profile_ref,
            source=source,
            evidence=evidence or (),
            excluded=excluded or (),
            candidates=candidates or (),
            dependencies=self._dependencies(ontology or {}, params, at, retriever, instance,
                                            reference, fetched),
            at=at.isoformat().replace("+00:00", "Z"),
            remedies=remedies.for_decision(verdict, reasons, proposed),
        )

    def _fetch_artifacts(self, node: dict[str, Any],
                         retriever: Retriever | None) -> tuple[list[Artifact], list[Finding]]:
        """Artifacts offered by URL, and the one an alignmentRef names if it is not offered."""
        wanted = list(self._remote_artifacts)
        reference = _referenced(node)
        if (reference and is_remote(reference) and reference not in wanted
                and not any(a.id == reference for a in self.artifacts)):
            wanted.append(reference)
        if not wanted:
            return [], []
        # What the receiver offers by URL is its own to fix; an alignmentRef, the sender's.
        offered = frozenset(self._remote_artifacts)
        if retriever is None:
            return [], [finding("retrieval.prohibited",
                                f"the alignment artifact {url} is not retrieved: remote "
                                "retrieval is off by policy", url,
                                subject=remedies.receivers(url) if url in offered else url)
                        for url in wanted]
        fetched: list[Artifact] = []
        unavailable: list[Finding] = []
        for url in wanted:
            try:
                document, final_url, digest = retriever.fetch_json(url)
            except RetrievalError as exc:
                where = exc.url or url
                unavailable.append(finding(
                    exc.code, exc.message, url,
                    subject=remedies.receivers(where) if url in offered else where))
                continue
            fetched.append(artifact_from(document, digest, final_url,
                                         len(self.artifacts) + len(fetched)))
        return fetched, unavailable

    def _dependencies(self, ontology: Mapping[str, str], params: Mapping[str, Any],
                      at: datetime, retriever: Retriever | None = None,
                      instance: Mapping[str, str | None] | None = None,
                      reference: str | None = None,
                      fetched: Iterable[Artifact] = ()) -> dict[str, Any]:
        """What the decision depends on (rule 15). Every artifact it considered is among
        ``artifacts``, each with its validity limits and the instant's side of each: the
        offered ones in the order offered, then those retrieved for this check (an
        ``--alignment`` URL, an ``alignmentRef``) in the order retrieved."""
        considered = [*zip(self.artifacts, self._artifact_entries, strict=True),
                      *((a, _artifact_entry(a)) for a in fetched)]
        return {
            # Which instance revision was judged (5.3): its identifier and profileVersion.
            "instance": dict(instance or {"id": None, "profileVersion": None}),
            "retrieved": [{"url": url, "finalUrl": final, "sha256": digest}
                          for url, final, digest in (retriever.retrieved if retriever else ())],
            "profile": self._fixed_dependencies["profile"],
            "ontology": dict(ontology),
            "artifacts": [{**entry, **dict(zip(_POSITIONS, a.validity_at(at), strict=True))}
                          for a, entry in considered],
            "capabilities": self._fixed_dependencies["capabilities"],
            "parameters": dict(sorted(params.items())),
            # The artifact the envelope's alignmentRef names: whether one of that id is
            # offered decided whether it was to be retrieved (S5: offering it changes that).
            "alignmentRef": reference,
        }


# Envelope instances (@id, profileVersion) whose first content a Checker remembers.
INSTANCES = 65536
_PROFILE_VERSION = "https://example.org/ioa/semantic#profileVersion"


def _pair_text(ident: str, version: str | None) -> str:
    """``json.dumps([ident, version], ensure_ascii=False)``, which the memory of instances
    has keyed pairs by, written without the encoder's machinery (a twentieth of a warm check)."""
    return "[" + encode_basestring(ident) + ", " + (
        "null" if version is None else encode_basestring(version)) + "]"


def _referenced(node: dict[str, Any]) -> str | None:
    """The artifact an expanded envelope's alignmentRef names, or None."""
    reference = (node.get(_ALIGNMENT_REF) or [{}])[0].get("@id")
    return reference if isinstance(reference, str) else None


def _instance(node: dict[str, Any]) -> dict[str, str | None]:
    """The envelope's instance identifier and profileVersion, as the decision records them."""
    ident = node.get("@id")
    version = node.get(_PROFILE_VERSION, [{}])[0].get("@value")
    return {"id": ident if isinstance(ident, str) else None,
            "profileVersion": version if isinstance(version, str) else None}


def _content_digest(node: Any) -> bytes:
    """The digest of an expanded envelope's meaning: the same graph written in another order
    or spelling (members, set values, compact IRIs), with a value written twice (one triple)
    or a blank node given a label of its own, gives the same digest.

    Not RDF dataset canonicalization (RDFC-1.0): its blank node hashing can be made
    exponential by the sender. A blank node label used once names nothing another part of
    the graph refers to and is dropped; a label used more than once is kept as written, so
    the same graph relabelled there is taken as another content (the cautious side: the
    instance is then ambiguous, never two contents taken as one)."""
    # The labels are counted as the text is written, every label left out; a label used
    # more than once (rare: a sender's own blank node referred to twice) has it written again
    # with that label kept. A separate walk to count them first was a sixth of the digest.
    uses: dict[str, int] = {}
    text = _canonical_text(node, _NO_LABELS, uses)
    shared = {label for label, count in uses.items() if count > 1}
    if shared:
        text = _canonical_text(node, shared)
    return sha256(text.encode("utf-8", "surrogatepass")).digest()


_NO_LABELS: set[str] = set()


def _canonical_text(value: Any, shared: set[str], uses: dict[str, int] | None = None) -> str:
    """The canonical form of an expanded document as JSON text: members in key order, every
    array but an ``@list`` a set (its values' texts sorted, each once), and an ``@id`` of a
    blank node label used once left out (``shared``: the labels used more than once). With
    ``uses``, each blank node label that stands as an ``@id`` of an object is counted in it
    (each object is written once).

    Built as text in one pass, each value's text made once: sorting a set by its values'
    texts and then serializing the whole again (``json.dumps`` with ``sort_keys``) made
    every nested value's text once per level above it (``test_content_digest`` holds the
    two to the same bytes). Sorting by the compact text orders values as sorting by
    ``json.dumps``'s default spacing did: a space follows only a separator, and two texts
    first differ before it."""
    if isinstance(value, dict):
        if uses is not None:
            ident = value.get("@id")
            if isinstance(ident, str) and ident.startswith("_:"):
                uses[ident] = uses.get(ident, 0) + 1
        members = []
        for key in sorted(value):
            item = value[key]
            if type(item) is str:  # the common member: an @id, an @value, an @type
                if key == "@id" and item.startswith("_:") and item not in shared:
                    continue
                text = encode_basestring(item)
            elif key == "@list" and isinstance(item, list):
                # A list keeps its order and its repeated values.
                text = "[" + ",".join([_canonical_text(x, shared, uses) for x in item]) + "]"
            else:
                text = _canonical_text(item, shared, uses)
            members.append(_key_text(key) + text)
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        if len(value) == 1:  # the common set: one value
            return "[" + _canonical_text(value[0], shared, uses) + "]"
        # Values of a property are a set in JSON-LD: their order means nothing, and a value
        # written twice is one triple.
        return "[" + ",".join(sorted({_canonical_text(x, shared, uses) for x in value})) + "]"
    if isinstance(value, str):
        return encode_basestring(value)
    # Numbers (an exact number's float too), booleans and null the way json.dumps writes
    # them.
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _key_text(key: str) -> str:
    """A member name as the canonical text writes it, with its colon: an expanded document's
    names are its properties' IRIs and keywords, the same few in every envelope of a
    profile, so each is written once and remembered (short ones, a bounded number)."""
    found = _KEY_TEXTS.get(key)
    if found is None:
        found = encode_basestring(key) + ":"
        if len(key) <= _KEY_CHARS:
            if len(_KEY_TEXTS) >= _KEYS_REMEMBERED:
                _KEY_TEXTS.clear()  # forgotten at once: a sender's names of the moment
            _KEY_TEXTS[key] = found
    return found


# At most 4,096 names of up to 256 characters, each held with its text: about 9 MiB at worst
# (4 bytes a character, as names of astral characters are), whatever the envelopes hold.
_KEYS_REMEMBERED = 4096
_KEY_CHARS = 256
_KEY_TEXTS: dict[str, str] = {}


# The evaluation instant's position against each validity limit, as Artifact.validity_at
# orders them.
_POSITIONS = ("notYetValidAtEvaluation", "expiredAtEvaluation", "proofNotYetValidAtEvaluation",
              "proofExpiredAtEvaluation")


def _artifact_entry(artifact: Artifact) -> dict[str, Any]:
    """The part of an artifact's dependency entry that no check changes (rule 15): what it
    is, its validity limits, and who signed it."""
    proof = artifact.proof
    return {"artifactId": artifact.id or None, "revision": artifact.revision or None,
            "sha256": artifact.digest, **artifact.limits(),
            # Who signed it, as its proof says (None: unsigned); whether that was accepted
            # is in the evidence or the exclusions.
            "verificationMethod": proof.method or None if proof else None}


def _aware(at: Any) -> datetime:
    """``at`` as an evaluation instant: a datetime with a UTC offset. A naive one names no
    instant (local time, UTC?) and cannot be set against a validity limit, which has one."""
    if not isinstance(at, datetime) or at.utcoffset() is None:
        raise ConfigurationError(
            "at must be an aware datetime (with a UTC offset, e.g. "
            f"datetime(2026, 6, 1, tzinfo=UTC)), not {at!r}")
    return at


def _instant(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _weight(decision: Decision) -> int:
    """What a cached decision is counted as weighing, in bytes (an estimate from what it
    holds: its reasons' text and a fixed share for everything else)."""
    dependencies = decision.dependencies
    # The task parameters are held twice (the cache key and the dependencies), the instance's
    # @id and profileVersion once: a sender chooses their length.
    parameters = sum(len(k) + (len(v) if isinstance(v, str) else sum(len(x) + 56 for x in v))
                     + 112 for k, v in dependencies["parameters"].items())
    instance = sum(len(v) + 56 for v in dependencies["instance"].values() if v is not None)
    return (1024 + sum(len(f.message) + len(f.path) + 128 for f in decision.findings) + 512 * (
        len(decision.evidence) + len(decision.excluded) + len(decision.candidates))
        + 2 * parameters + instance)


def _demote(f: Finding, verdict: Verdict) -> Finding:
    """Keep errors that share the verdict's effect; others stay visible as warnings."""
    if f.severity is Severity.ERROR and f.effect is not verdict:
        return finding(f.code, f.message, f.path, severity=Severity.WARNING, section=f.section,
                       subject=f.subject)
    return f


def _as_asked(decision: Decision, source: str, at: str | None) -> Decision:
    """A cached decision as this check asks it: its source and its instant (the cache keys
    a decision by the side of each validity limit the instant falls on, not the instant)."""
    if decision.source == source and decision.at == at:
        return decision
    return decision._replace(source=source, at=at)


def _read(item: str | Path | bytes, what: str, error: type[Exception],
          limit: int) -> tuple[str, bytes]:
    """The file's name and bytes, read up to ``limit`` (the document's own, which the
    intake holds it to anyway); one not read (unreadable, over it, not a regular file) is
    ``error``."""
    if isinstance(item, bytes):
        return f"<{what}>", item
    path = os.fspath(item)
    try:
        return path, read_bounded(path, limit, f"for a {what} (--max-bytes)")
    except Unreadable as exc:
        raise error(f"{path}: the {what} {exc}") from None


def check(envelope: EnvelopeInput, profile: str = "cs-translation", **options: Any) -> Decision:
    """One-off check; build a :class:`Checker` to check many envelopes. ``at``, when given,
    is an aware datetime (a naive one raises :class:`~ioa_semantic.ConfigurationError`
    before the Checker is built)."""
    at = options.pop("at", None)
    if at is not None:
        _aware(at)
    params = options.pop("params", None)
    return Checker(profile, **options).check(envelope, at=at, params=params)
