"""Decision: the three-valued judgement of draft section 7 over the store's query results.

Each step reads one named query and yields findings; nothing here guesses. A known intent
whose required capability is missing is a completed conflict (incompatible); an unknown
intent, sense or capability, an unaccepted version, or a mapping that cannot be established
unambiguously leaves the result indeterminate (contract section 3).
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from .._codes import finding
from .._findings import Finding, Remedy, Severity
from .._vocab import IOA
from ..sources import parameters
from ..sources.loader import Artifact, Profile, Registration
from ..sources.parameters import (
    BUILT_IN,
    Parameter,
    Value,
    datatype_problem,
    key,
    unit_problem,
    value_of,
)
from .remedies import CARRIED_PARAMETER, SENDER, remedy
from .store import group


class Dataset(Protocol):
    """What the decision reads: the named queries' rows for one envelope.

    The reference engine runs the SPARQL queries on a store (:class:`.store.Dataset`); the
    compiled engine answers them from tables (:class:`ioa_semantic.compiled.tables.TableDataset`).
    """

    def select(self, name: str) -> list[dict[str, Any]]: ...

    def read_as(self, ontology: tuple[str, str]) -> None: ...


# --- comparison rules: the profile's declarations (sources/parameters.py) -----------------


def same_value(parameter: str, a: str, b: str) -> bool:
    """Whether two values of a parameter of the contract's table (any other name: a string)
    are the same value: media types and language tags as the table compares them."""
    return parameters.same_value(BUILT_IN.get(parameter) or Parameter(parameter, "string"), a, b)


# --- the task -------------------------------------------------------------------------------


class Task(NamedTuple):
    """Task parameters by name, each with where it came from, as lexical forms in the unit
    the profile declares for them.

    ``parameters`` are those with one value; ``several`` those the envelope's
    profileContext gives more than one value (contract 3.1: a language or a media type may
    be several), each with its values in order. ``--param`` names a key once, and
    overrides the envelope. A condition on a parameter with several values cannot be
    evaluated (rule 10); a provider or the profile must accept each of them. ``problems``
    are the values that could not be read: not of the declared datatype (invalid, 6.4), or
    stated in another unit (a conflict, S3); such a value is not part of the task.
    """

    parameters: Mapping[str, str]
    origin: Mapping[str, str] = MappingProxyType({})
    several: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    problems: tuple[Finding, ...] = ()
    # The parameters one of whose values is among the problems: supplied, but not usable
    # (so never also reported missing).
    rejected: frozenset[str] = frozenset()
    # The declared datatype (a kind of parameters.DATATYPES) of each parameter the profile
    # declares: the shapes see a number or an instant as a literal of its datatype.
    kinds: Mapping[str, str] = MappingProxyType({})

    def supplies(self, name: str) -> bool:
        return name in self.parameters or name in self.several

    def values(self, name: str) -> tuple[str, ...]:
        """Every value of the parameter (none when the task does not supply it)."""
        value = self.parameters.get(name)
        return (value,) if value is not None else self.several.get(name, ())

    def items(self) -> list[tuple[str, str]]:
        """Every (name, value) of the task, by name and then in the order given."""
        return sorted(self.parameters.items()) + [
            (name, value) for name in sorted(self.several) for value in self.several[name]]

    def for_capability(self, declared: Mapping[str, tuple[str, ...]]) -> "Task":
        """Add the media type the vocabulary declares for one requested capability, if single."""
        merged: dict[str, str] | None = None
        origin: dict[str, str] = {}
        for name, values in declared.items():
            if len(values) == 1 and not self.supplies(name):
                if merged is None:
                    merged, origin = dict(self.parameters), dict(self.origin)
                merged[name] = values[0]
                origin[name] = "profile vocabulary"
        if merged is None:
            return self  # read as it is
        return self._replace(parameters=merged, origin=origin)

    def single(self, name: str) -> str | None:
        return self.parameters.get(name)


PROFILE_CONTEXT = IOA + "profileContext"


# Several media types in profileContext are several values of the task's media type, as
# several languages are: a condition on them cannot be evaluated (rule 10), a provider must
# accept each, and the vocabulary's single declared type never stands in for them (it
# stands in only where the envelope says nothing of inputs or outputs).


def task_from(node: dict[str, Any], overrides: Mapping[str, str],
              declared: Mapping[str, Parameter] = BUILT_IN) -> Task:
    """The contract's table: --param first, then the envelope's profileContext, which
    carries each declared parameter by its term; every value read by its declaration."""
    params: dict[str, str] = {}
    origin: dict[str, str] = {}
    several: dict[str, tuple[str, ...]] = {}
    problems: list[Finding] = []
    rejected: set[str] = set()
    contexts = node.get(PROFILE_CONTEXT, ())
    context = contexts[0] if contexts and isinstance(contexts[0], dict) else {}
    for parameter in declared.values():
        values = context.get(parameter.term) if parameter.term is not None else None
        if not values:
            continue
        before = len(problems)
        found = tuple(dict.fromkeys(
            lexical for item in values
            if (lexical := _read_value(parameter, item, problems)) is not None))
        if len(problems) > before:
            rejected.add(parameter.name)
        if len(found) == 1:
            params[parameter.name], origin[parameter.name] = found[0], "envelope"
        elif len(found) > 1:
            several[parameter.name], origin[parameter.name] = found, "envelope"
    for name, value in overrides.items():
        several.pop(name, None)
        params.pop(name, None)
        rejected.discard(name)
        override = declared.get(name)
        if override is not None and not _typed(override, value, CARRIER, problems):
            rejected.add(name)
            continue
        params[name], origin[name] = value, "--param"
    return Task(params, origin, several, tuple(problems), frozenset(rejected),
                MappingProxyType({p.name: p.datatype for p in declared.values()}))


def _read_value(parameter: Parameter, item: Any, problems: list[Finding]) -> str | None:
    """One value of a declared parameter in profileContext, or None (its problem added)."""
    value = value_of(item)
    if value is None:
        problems.append(finding(
            "constraint.parameter-type",
            f"the task parameter {parameter.name} in profileContext is not a value of "
            f"{parameters.describe(parameter)}", "/profileContext"))
        return None
    # Its stated datatype, then its stated unit (S3: never converted).
    for code, problem in (("constraint.parameter-type", datatype_problem(parameter, value)),
                          ("constraint.unit-conflict", unit_problem(parameter, value.unit))):
        if problem is not None:
            # A unit conflict names its parameter (not in the output): its remedy is to
            # renegotiate that parameter in the profile's unit (parameter_remedies).
            problems.append(finding(
                code, f"the task parameter {parameter.name}={value.lexical!r} in "
                f"profileContext: {problem}", "/profileContext",
                subject=UNIT_CONFLICT + parameter.name if code == "constraint.unit-conflict"
                else None))
            return None
    return value.lexical if _typed(parameter, value.lexical, "profileContext", problems) else None


# The subject of a task parameter's unit conflict, then the parameter's name.
UNIT_CONFLICT = "urn:ioa-semantic:unit-conflict:"


# How a reason names a value the carrier gave (--param, the service's param=, the A2A
# part's parameters).
CARRIER = "given by the carrier"


def _typed(parameter: Parameter, lexical: str, where: str, problems: list[Finding]) -> bool:
    try:
        key(parameter, lexical)
    except ValueError as exc:
        # A carrier's value replaced the envelope's: no path of the envelope holds it, and
        # the remedy names the parameter (remedies.of_reason), not /profileContext.
        carried = where == CARRIER
        problems.append(finding(
            "constraint.parameter-type",
            f"the task parameter {parameter.name} ({where}): {exc}, which "
            f"{parameters.describe(parameter)} must be", "" if carried else "/profileContext",
            subject=CARRIED_PARAMETER + parameter.name if carried else None))
        return False
    return True


# --- the outcome ----------------------------------------------------------------------------


class Outcome:
    """What the compatibility steps found, filled in as they run."""

    __slots__ = ("at", "candidates", "evidence", "excluded", "findings", "ontology", "remedies")

    def __init__(self, at: datetime | None = None) -> None:
        # The evaluation instant, which a remedy names where a validity limit decided.
        self.at = at
        self.findings: list[Finding] = []
        # What would answer the findings, proposed where the steps know it (see remedies).
        self.remedies: list[Remedy] = []
        self.evidence: list[dict[str, Any]] = []
        self.excluded: list[dict[str, Any]] = []
        self.candidates: list[dict[str, Any]] = []
        self.ontology: dict[str, str] = {}


def evaluate(
    dataset: Dataset,
    node: dict[str, Any],
    profile: Profile,
    registrations: Sequence[Registration],
    artifacts: Sequence[Artifact],
    task: Task,
    at: datetime,
) -> Outcome:
    """Run every compatibility step over one envelope's dataset."""
    out = Outcome(at)
    ontology_id = node[IOA + "ontologyId"][0]["@id"]
    version = node[IOA + "ontologyVersion"][0]["@value"]
    intent = node[IOA + "intentRef"][0]["@id"]
    out.ontology = {"id": ontology_id, "version": version}
    # A malformed envelope is invalid before any compatibility step (7.1), whatever version
    # it names: checked ahead of the acceptance, which stops early under another version.
    alignment_ref, revision = referenced(node)
    if revision is not None and alignment_ref is None:
        out.findings.append(finding(
            "envelope.missing", "alignmentRevision names the revision of the artifact "
            "alignmentRef names, and the envelope has no alignmentRef", ""))

    read_as = _acceptance(dataset, profile, ontology_id, version, intent, out)
    if read_as is None:
        return out  # rule 5: no vocabulary check under an unaccepted version
    out.ontology["readAs"] = read_as
    dataset.read_as((ontology_id, read_as))

    out.findings.extend(_context_domains(dataset))
    out.findings.extend(_binding_senses(dataset, profile))
    out.findings.extend(_intent(dataset, profile, out.remedies))
    out.findings.extend(parameter_findings(profile, task))
    out.remedies.extend(_step_remedies(out.findings, profile))
    out.remedies.extend(parameter_remedies(profile, task))

    capabilities = group(dataset.select("requested_capabilities"), "capability")
    candidates = group(dataset.select("mapping_candidates"), "capability") if registrations else {}
    conditions = conditions_by_rule(dataset.select("rule_conditions")) if registrations else {}
    # Offered artifacts are screened whether or not a capability is offered: each exclusion
    # is reported (rule 9), even where no mapping is asked of it.
    screened = screen_artifacts(artifacts, profile, alignment_ref, at, out, revision=revision)
    by_graph = {r.graph_name: r for r in registrations}
    for capability, rows in sorted(capabilities.items()):
        known = any(r["known"] for r in rows)
        direct = sorted({r["registration"] for r in rows if r["registration"]})
        cap_task = task.for_capability(declared_media(rows))
        if not known and not direct:
            out.findings.append(finding(
                "capability.unknown",
                f"the capability {capability} is not in the profile's vocabulary and no offered "
                "registration under the envelope's ontology version declares it", capability))
        if not registrations:
            continue
        if direct:
            judge_direct(capability, [by_graph[g] for g in direct], cap_task, profile, out)
            continue
        judge_mapped(capability, candidates.get(capability, []), conditions, screened, by_graph,
                     profile, cap_task, alignment_ref, out, in_vocabulary=known)
    return out


def declared_media(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """The media types the vocabulary declares for a capability, from its capability rows."""
    return {"inputMediaType": tuple(sorted({r["input"] for r in rows if r["input"]})),
            "outputMediaType": tuple(sorted({r["output"] for r in rows if r["output"]}))}


UNDECLARED_MEDIA = declared_media(())


def _acceptance(dataset: Dataset, profile: Profile, ontology_id: str, version: str,
                intent: str, out: Outcome) -> str | None:
    rows = dataset.select("ontology_acceptance")
    direct = [r for r in rows if r["relationship"] is None]
    if direct:
        return str(direct[0]["readAs"])
    by_relationship = group(rows, "relationship")
    # Deterministic whatever order the rows come in: the first applicable relationship by
    # the version it reads as.
    for relationship_rows in sorted(by_relationship.values(), key=lambda rs: str(rs[0]["readAs"])):
        scope = {r["scope"] for r in relationship_rows if r["scope"]}
        if not scope or intent in scope:
            read_as = str(relationship_rows[0]["readAs"])
            out.findings.append(finding(
                "profile.version-relationship",
                f"version {version!r} of {ontology_id} is read as {read_as!r} through the "
                "profile's declared relationship", "/ontologyVersion"))
            return read_as
    out.remedies.append(remedy(
        "use-accepted-version", SENDER, ("profile.relationship-scope",
                                         "profile.version-not-accepted",
                                         "profile.ontology-not-accepted"),
        accepted=[{"ontologyId": o, "ontologyVersion": v} for o, v in sorted(profile.accepted)]))
    if by_relationship:
        out.findings.append(finding(
            "profile.relationship-scope",
            f"the profile relates version {version!r} of {ontology_id} to an accepted version "
            f"only for other intents, not for {intent}", "/intentRef"))
    elif any(ontology_id == accepted for accepted, _ in profile.accepted):
        versions = sorted(v for o, v in profile.accepted if o == ontology_id)
        out.findings.append(finding(
            "profile.version-not-accepted",
            f"version {version!r} of {ontology_id} is not accepted by profile {profile.id} "
            f"(accepted: {', '.join(map(repr, versions))}) and no relationship is declared; "
            "versions are identifiers, not an ordering", "/ontologyVersion"))
    else:
        out.findings.append(finding(
            "profile.ontology-not-accepted",
            f"the ontology {ontology_id} is not accepted by profile {profile.id}",
            "/ontologyId"))
    return None


def _context_domains(dataset: Dataset) -> Iterator[Finding]:
    for row in dataset.select("context_domains"):
        if not row["permitted"]:
            yield finding("domain.context-not-permitted",
                          f"the task context names the domain {row['domain']}, which the profile "
                          "does not permit", "/profileContext/domain")


def _binding_senses(dataset: Dataset, profile: Profile) -> Iterator[Finding]:
    by_binding: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for row in dataset.select("binding_senses"):
        by_binding.setdefault((row["term"], row["sense"]), []).append(row)
    for (term, sense), rows in sorted(by_binding.items()):
        domains = sorted({r["domain"] for r in rows if r["domain"]})
        if not rows[0]["known"] and not domains:
            yield finding("domain.unknown-sense",
                          f"the sense {sense} bound to {term!r} is not in the profile's "
                          "vocabulary; it is not matched by label or guessed (6.4)", sense)
        elif not domains:
            yield finding("domain.unknown-sense",
                          f"the sense {sense} bound to {term!r} has no declared domain, so the "
                          "profile's domain restriction cannot be evaluated", sense)
        elif not any(r["permitted"] for r in rows) and not profile.cross_domain_bindings:
            permitted = profile.permitted_domains | profile.permitted_binding_domains
            yield finding("domain.binding-not-permitted",
                          f"{term!r} is bound to {sense}, which lies in {', '.join(domains)}; the "
                          f"profile permits senses only in {', '.join(sorted(permitted)) or 'no domain'}",
                          sense)


def _intent(dataset: Dataset, profile: Profile, remedies: list[Remedy]) -> Iterator[Finding]:
    rows = dataset.select("intent_requirements")
    if not rows:
        return
    intent = rows[0]["intent"]
    if not rows[0]["known"]:
        yield finding("intent.unknown",
                      f"the intent {intent} is not in the profile's vocabulary", "/intentRef")
        return
    missing = sorted({str(row["required"]) for row in rows
                      if row["required"] and not row["declared"]})
    if missing:
        remedies.append(remedy("renegotiate", SENDER, ("intent.not-applicable",),
                               field="capabilityRefs", permitted=missing))
    for row in rows:
        if row["required"] and not row["declared"]:
            yield finding("intent.not-applicable",
                          f"the intent {intent} requires the capability {row['required']}, which "
                          "capabilityRefs does not declare", "/capabilityRefs")
    domains = dataset.select("intent_domains")
    if domains and not any(r["permitted"] for r in domains):
        yield finding("domain.intent-not-permitted",
                      f"the intent {intent} applies only to "
                      f"{', '.join(sorted(r['domain'] for r in domains))}, which the profile "
                      "does not permit", "/intentRef")
    context_domains = dataset.select("context_domains")
    if domains and context_domains and not any(r["inContext"] for r in domains):
        remedies.append(remedy(
            "renegotiate", SENDER, ("intent.domain-mismatch",), field="domain",
            permitted=sorted(str(r["domain"]) for r in domains if r["permitted"])))
        yield finding("intent.domain-mismatch",
                      f"the intent {intent} applies to "
                      f"{', '.join(sorted(r['domain'] for r in domains))}, none of which the "
                      "task context names", "/profileContext/domain")


def parameter_findings(profile: Profile, task: Task) -> Iterator[Finding]:
    yield from task.problems
    for name in sorted(profile.required_parameters):
        if not task.supplies(name) and name not in task.rejected:
            yield finding("constraint.missing-parameter",
                          f"the profile requires the task parameter {name!r}, which neither "
                          "--param nor the envelope supplies", "/profileContext")
    # The carrier's domain replaces the envelope's (contract, "Task parameters"): the task's
    # domain is then the carrier's, held to the profile's permitted domains as a
    # profileContext domain is (contract 6), or the restriction would be lifted by the carrier.
    domain = task.single("domain")
    if task.origin.get("domain") == "--param" and domain is not None and (
            domain not in profile.permitted_domains):
        # No path of the envelope holds the carrier's value (its own domain may be one the
        # profile permits): the reason names the parameter, as a carried value's type does.
        yield finding("domain.context-not-permitted",
                      f"the task's domain {domain} (given by the carrier) is one the profile "
                      "does not permit", "", subject=CARRIED_PARAMETER + "domain")
    for name, allowed in sorted(profile.parameter_values.items()):
        for value in task.values(name):
            if not _allowed(profile, name, value, allowed):
                yield finding("constraint.parameter-conflict",
                              f"the task parameter {name}={value!r} is not among the values the "
                              f"profile allows ({', '.join(sorted(allowed))})", "/profileContext")


def _step_remedies(findings: Sequence[Finding], profile: Profile) -> Iterator[Remedy]:
    """The remedies of the steps before the capabilities whose findings name their subject
    (a parameter, a domain) in what the profile defines."""
    codes = {f.code for f in findings}
    domains = sorted(profile.permitted_domains)
    if "domain.context-not-permitted" in codes:
        yield remedy("renegotiate", SENDER, ("domain.context-not-permitted",), field="domain",
                     permitted=domains)
    if "domain.intent-not-permitted" in codes:
        yield remedy("renegotiate", SENDER, ("domain.intent-not-permitted",), field="intentRef",
                     permitted=domains)
    if "domain.binding-not-permitted" in codes:
        yield remedy("renegotiate", SENDER, ("domain.binding-not-permitted",), field="sense",
                     permitted=sorted(profile.permitted_domains
                                      | profile.permitted_binding_domains))


def _allowed(profile: Profile, name: str, value: str, allowed: Iterable[str]) -> bool:
    """Whether the task's value is one of the values the profile allows (by its datatype)."""
    parameter = profile.parameter(name)
    return any(parameters.same_value(parameter, value, a) for a in allowed)


def parameter_remedies(profile: Profile, task: Task) -> Iterator[Remedy]:
    """What answers :func:`parameter_findings`: each missing parameter supplied, each
    conflicting one renegotiated, with the values the profile allows where it fixes them."""
    for name in sorted(profile.required_parameters):
        if not task.supplies(name) and name not in task.rejected:
            allowed = profile.parameter_values.get(name)
            yield remedy("supply-parameter", SENDER, ("constraint.missing-parameter",), name=name,
                         **({"values": sorted(allowed)} if allowed else {}),
                         **_supplied_by(profile.parameter(name)))
    for name, allowed in sorted(profile.parameter_values.items()):
        if any(not _allowed(profile, name, value, allowed) for value in task.values(name)):
            yield remedy("renegotiate", SENDER, ("constraint.parameter-conflict",), field=name,
                         permitted=sorted(allowed))
    for name in sorted({p.subject[len(UNIT_CONFLICT):] for p in task.problems
                        if p.subject is not None and p.subject.startswith(UNIT_CONFLICT)}):
        # Stated in another unit (S3: never converted): renegotiated in the profile's unit.
        yield remedy("renegotiate", SENDER, ("constraint.unit-conflict",), field=name,
                     **_in_unit(profile, name))


# The parameters of the contract's table a registration declares in members of its own,
# with the code of a conflict and the member's name.
_PROVIDER_MEMBERS = (
    ("inputMediaType", attrgetter("inputs"), "capability.input-conflict", "inputs"),
    ("outputMediaType", attrgetter("outputs"), "capability.output-conflict", "outputs"),
    ("sourceLang", attrgetter("source_langs"), "capability.language-conflict", "sourceLang"),
    ("targetLang", attrgetter("target_langs"), "capability.language-conflict", "targetLang"),
)


def _provider_conflicts(capability: str, registration: Registration, task: Task,
                        profile: Profile, remedies: list[Remedy]) -> list[Finding]:
    """Each constraint the provider capability declares that the task's values do not
    meet, by the profile's declaration of the parameter (rule 11; S3: no conversion)."""
    conflicts = []
    for name, code, member, stated in _stated(registration):
        if not stated:
            continue
        parameter = profile.parameter(name)
        # A value stated in another unit than the profile's is a conflict in itself (rule 10,
        # S3: never converted), whatever the task says or does not say.
        other = next((v for v in stated if unit_problem(parameter, v.unit) is not None), None)
        if other is not None:
            remedies.append(remedy("renegotiate", SENDER, ("capability.unit-conflict",),
                                   field=name, **_in_unit(profile, name)))
            conflicts.append(finding(
                "capability.unit-conflict",
                f"the provider capability {registration.iri} ({registration.origin}) states "
                f"{name} {other.lexical}: {unit_problem(parameter, other.unit)}",
                registration.iri))
            continue
        if not task.supplies(name) and name not in BUILT_IN:
            # A constraint of the provider's on the profile's own parameter that the task
            # says nothing of: whether the task meets it is not established (never met by
            # silence); the contract's five keep their table's reading.
            remedies.append(remedy("supply-parameter", SENDER, ("constraint.missing-parameter",),
                                   name=name, **_supplied_by(parameter)))
            conflicts.append(finding(
                "constraint.missing-parameter",
                f"the provider capability {registration.iri} ({registration.origin}) constrains "
                f"{name} ({_bounds(parameter, [v.lexical for v in stated])}), which the task "
                "does not supply: whether it meets the constraint is not established",
                registration.iri))
            continue
        if not task.supplies(name):
            continue
        declared = [v.lexical for v in stated]
        outside = [value for value in task.values(name)
                   if not parameters.holds_any(parameter, value, declared)]
        if not outside:
            continue
        remedies.append(remedy("renegotiate", SENDER, (code,), field=name,
                               permitted=list(declared), **_how(parameter)))
        conflicts.append(finding(
            code,
            f"the provider capability {registration.iri} ({registration.origin}) declares "
            f"{member} {_bounds(parameter, declared)}, but the task's {name} is "
            f"{', '.join(map(repr, outside))} (from {task.origin.get(name, 'the task')}); "
            "no conversion is attempted",
            registration.iri))
    return conflicts


def _stated(registration: Registration) -> Iterator[tuple[str, str, str, tuple[Value, ...]]]:
    """What the registration states of each parameter: (name, the code of a conflict, the
    member that states it, the values as stated)."""
    for name, read, code, member in _PROVIDER_MEMBERS:
        yield name, code, member, tuple(Value(v) for v in sorted(read(registration)))
    for name, values in sorted(registration.constraints.items()):
        yield name, "capability.parameter-conflict", name, values


def _bounds(parameter: Parameter, stated: Sequence[str]) -> str:
    """Stated values in words, as the parameter's comparison reads them: "at most 1024
    (in unit:KiloBYTE)", "text/plain, text/html"."""
    how = {"atMost": "at most ", "atLeast": "at least "}.get(parameter.comparison, "")
    unit = f" (in {parameter.unit})" if parameter.unit else ""
    return f"{how}{' or '.join(stated) if how else ', '.join(stated)}{unit}"


def _how(parameter: Parameter) -> dict[str, str]:
    """A remedy's members that say how its listed values compare, where not equality."""
    out = {"comparison": parameter.comparison} if parameter.ordered and (
        parameter.comparison in ("atMost", "atLeast")) else {}
    return {**out, **({"unit": parameter.unit} if parameter.unit else {})}


def _in_unit(profile: Profile, name: str) -> dict[str, Any]:
    """A unit conflict's renegotiation: the profile's unit (and comparison), and the values
    it permits, where it fixes them (none listed otherwise: any value in its unit)."""
    return {**_how(profile.parameter(name)),
            "permitted": sorted(profile.parameter_values.get(name, ()))}


def _supplied_by(parameter: Parameter) -> dict[str, str]:
    """A supply-parameter remedy's members: how its values compare, and, for a profile's own
    parameter, the property by which an envelope's profileContext carries it (a sender can
    then put the value in the envelope itself; the contract's five are members of the
    baseline context)."""
    term = parameter.term if parameter.name not in BUILT_IN else None
    return {**_how(parameter), **({"term": term} if term is not None else {})}


def judge_direct(capability: str, providers: list[Registration], task: Task, profile: Profile,
                 out: Outcome) -> None:
    proposed: list[Remedy] = []
    results = [(r, _provider_conflicts(capability, r, task, profile, proposed))
               for r in providers]
    clean = [r for r, conflicts in results if not conflicts]
    if clean:
        out.evidence.append({"capability": capability, "via": "same ontology",
                             "providedBy": clean[0].iri, "source": clean[0].origin})
        return
    for _, conflicts in results:
        out.findings.extend(conflicts)
    out.remedies.extend(proposed)


# The envelope member that names the revision of the artifact alignmentRef names: the
# project's (the draft's alignmentRef is an IRI alone, and two revisions of one artifact
# share it); docs/parameters.md, "Naming one artifact".
ALIGNMENT_REVISION = "https://ioa-semantic.org/ns/alignment#alignmentRevision"


def referenced(node: dict[str, Any]) -> tuple[str | None, str | None]:
    """The artifact the envelope names (alignmentRef) and the revision it names of it."""
    # An empty array is no value (expansion may keep one): neither names anything.
    ident = (node.get(IOA + "alignmentRef") or [{}])[0].get("@id")
    revision = (node.get(ALIGNMENT_REVISION) or [{}])[0].get("@value")
    return ident, revision if isinstance(revision, str) else None


def screen_artifacts(artifacts: Sequence[Artifact], profile: Profile, alignment_ref: str | None,
            at: datetime, out: Outcome, *, revision: str | None = None) -> dict[str, Artifact]:
    """Exclude untrusted, not yet valid, expired, malformed, unpinned and unreferenced
    artifacts, and those whose provenance does not hold at ``at`` (7.2, 7.3); report the
    members of each that this checker does not define."""
    usable: dict[str, Artifact] = {}
    pinned_ids = {ident for ident, _ in profile.pins}
    for artifact in artifacts:
        for member in artifact.unknown_members:
            out.findings.append(finding(
                "alignment.unknown-member",
                f"artifact {artifact.id or artifact.origin} carries the member {member!r}, "
                "which this checker does not define; it is not used", artifact.id or artifact.origin,
                severity=Severity.WARNING))
        if artifact.confidence is not None:
            out.candidates.append({**artifact.label(), "confidence": artifact.confidence,
                                   "note": "descriptive only; confidence never decides (7.4)"})
        reason = None
        if artifact.malformed:
            reason = ("alignment.malformed", "; ".join(artifact.problems))
        elif alignment_ref is not None and artifact.id != alignment_ref:
            reason = ("alignment.not-referenced",
                      f"the envelope's alignmentRef names {alignment_ref}")
        elif alignment_ref is not None and revision is not None and artifact.revision != revision:
            reason = ("alignment.not-referenced",
                      f"the envelope's alignmentRevision names revision {revision}")
        elif artifact.id in pinned_ids and profile.pins.get(
                (artifact.id, artifact.revision)) != artifact.digest:
            reason = ("alignment.pin-mismatch",
                      f"sha256 {artifact.digest} is not the revision the profile pins")
        elif artifact.asserted_by not in profile.trusted_issuers:
            reason = ("alignment.untrusted",
                      f"issuer {artifact.asserted_by} is not trusted by profile {profile.id}")
        elif (unproven := provenance_problem(artifact, profile, at)) is not None:
            reason = unproven
        elif artifact.valid_from is not None and at < artifact.valid_from:
            reason = ("alignment.not-yet-valid",
                      f"validFrom {artifact.valid_from.isoformat()} is after the evaluation "
                      f"instant {at.isoformat()}")
        elif artifact.valid_until is not None and at >= artifact.valid_until:
            reason = ("alignment.expired",
                      f"validUntil {artifact.valid_until.isoformat()} is not after the "
                      f"evaluation instant {at.isoformat()}")
        if reason is None:
            usable[artifact.graph_name] = artifact
        else:
            _exclude(out, artifact, *reason)
    return usable


def provenance_problem(artifact: Artifact, profile: Profile,
                       at: datetime | None) -> tuple[str, str] | None:
    """Why the artifact's provenance does not hold under the profile's trust policy
    (contract 6), as (code, why), or None; ``at`` None leaves the proof's expiry unjudged.

    A proof is required of a ``did:key`` issuer (by that key) and of an issuer the profile
    binds to keys with a proof required (by one of them). A proof an artifact carries is
    checked wherever it stands: one that is malformed, of a kind not verified, made by a key
    the profile does not accept for the issuer, failing or expired excludes the artifact. An
    issuer trusted by claim has no key of its own, so any key's proof that verifies is
    integrity only, never more trust (7.2)."""
    proof = artifact.proof
    issuer = artifact.asserted_by
    if proof is None:
        if profile.requires_proof(issuer):
            return ("alignment.proof-missing",
                    f"the profile accepts artifacts of {issuer} only with a proof by "
                    f"{_keys(profile.accepted_methods(issuer))}, and it carries none")
        return None
    if proof.code and proof.code != "alignment.proof-invalid":
        return proof.code, proof.problem
    accepted = profile.accepted_methods(issuer)
    if accepted is not None and proof.method not in accepted:
        return ("alignment.proof-key-not-accepted",
                f"its proof is by {proof.method}, which the profile does not accept for "
                f"{issuer} (accepted: {_keys(accepted)})")
    if proof.code:
        return proof.code, proof.problem
    if at is not None and proof.created is not None and at < proof.created:
        return ("alignment.proof-not-yet-valid",
                f"its proof was created at {proof.created.isoformat()}, after the evaluation "
                f"instant {at.isoformat()}: no evidence at that instant")
    if at is not None and proof.expires is not None and at >= proof.expires:
        return ("alignment.proof-expired",
                f"its proof expires at {proof.expires.isoformat()}, not after the evaluation "
                f"instant {at.isoformat()}")
    return None


def _keys(methods: frozenset[str] | None) -> str:
    return ", ".join(sorted(methods or ())) or "no key"


def provenance_of(artifact: Artifact, profile: Profile) -> dict[str, Any]:
    """How an accepted artifact's issuer is established, for the evidence: ``signed`` (its
    proof verifies under a key the profile accepts for the issuer) or ``claim`` (the
    profile trusts the issuer's assertedBy as written), and the proof's verification
    method, if any (contract 6; draft 12.4)."""
    proof = artifact.proof
    method = proof.method if proof is not None and proof.verified else None
    signed = method is not None and profile.accepted_methods(artifact.asserted_by) is not None
    return {"provenance": "signed" if signed else "claim", "verificationMethod": method}


def _exclude(out: Outcome, artifact: Artifact, code: str, why: str) -> None:
    out.excluded.append({**artifact.label(), "code": code, "reason": why})
    out.findings.append(finding(code, f"artifact {artifact.id or artifact.origin} "
                                f"(revision {artifact.revision or '?'}) excluded: {why}",
                                artifact.id or artifact.origin, severity=Severity.INFO))


class Condition(NamedTuple):
    """One stated value of a mapping rule's condition: a condition listing several values
    is several of these, alternatives of one another."""

    parameter: str
    value: str
    unit: str | None = None


def conditions_by_rule(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[Condition]]:
    out: dict[tuple[str, str], list[Condition]] = {}
    for row in rows:
        out.setdefault((row["artifactGraph"], row["rule"]), []).append(
            Condition(row["parameter"], row["value"], row.get("unit")))
    return out


def _by_parameter(conditions: Iterable[Condition]) -> dict[str, list[Condition]]:
    grouped: dict[str, list[Condition]] = {}
    for condition in conditions:
        grouped.setdefault(condition.parameter, []).append(condition)
    return dict(sorted(grouped.items()))


def _shown(stated: list[Condition]) -> str:
    return " or ".join(repr(c.value) + (f" ({c.unit})" if c.unit else "") for c in stated)


def _evaluate_conditions(conditions: list[Condition], profile: Profile,
                         task: Task) -> tuple[str, str]:
    """("satisfied" | "false" | "unevaluable", why) for one mapping rule (contract rule 10).

    Each condition compares the task's value with the stated one(s) by the profile's
    declaration of the parameter (several stated values are alternatives). A condition that
    does not hold makes the rule inapplicable even where another cannot be evaluated: no
    value of the missing parameter would make it apply. A condition stated in another unit
    than the declaration's does not hold (S3: never converted)."""
    false: list[str] = []
    unevaluable: list[str] = []
    known = profile.known_parameters
    for name, stated in _by_parameter(conditions).items():
        state, why = _condition(name, stated, name in known, profile, task)
        (false if state == "false" else unevaluable if state == "unevaluable" else []).append(why)
    if false:
        return "false", "; ".join(false)
    if unevaluable:
        return "unevaluable", "; ".join(unevaluable)
    return "satisfied", ""


def _condition(name: str, stated: list[Condition], known: bool, profile: Profile,
               task: Task) -> tuple[str, str]:
    """One parameter's condition, as :func:`_evaluate_conditions` words it."""
    if not known:
        return "unevaluable", f"the condition {name!r} has no defined evaluation"
    parameter = profile.parameter(name)
    for condition in stated:
        conflict = unit_problem(parameter, condition.unit)
        if conflict is not None:
            return "false", f"the condition {name}={condition.value!r} does not hold: {conflict}"
        try:
            key(parameter, condition.value)
        except ValueError as exc:
            return "unevaluable", f"the condition on {name} cannot be evaluated: {exc}"
    several = task.several.get(name)
    if several is not None:
        return "unevaluable", (f"the task's {name} has several values "
                               f"({', '.join(map(repr, several))}), so the condition "
                               f"{name}={_shown(stated)} cannot be evaluated")
    value = task.single(name)
    if value is None:
        return "unevaluable", (f"the task supplies no {name!r} for the condition "
                               f"{name}={_shown(stated)}")
    if not parameters.holds_any(parameter, value, [c.value for c in stated]):
        return "false", (f"the condition {name} {_bounds(parameter, [c.value for c in stated])}"
                         f" does not hold ({name}={value!r})")
    return "satisfied", ""


def _unusable(parameter: Parameter, condition: Condition) -> bool:
    """Whether a stated value is in another unit or no value of the datatype."""
    if unit_problem(parameter, condition.unit) is not None:
        return True
    try:
        key(parameter, condition.value)
    except ValueError:
        return True
    return False


def _to_supply(conditions: list[Condition], profile: Profile,
               task: Task) -> list[tuple[str, str]]:
    """The conditions of a rule the task does not supply, when supplying them with the values
    the rule states would satisfy it: every condition's parameter has a defined evaluation,
    and every one the task supplies holds. Otherwise none (no value of the sender's makes
    the rule apply)."""
    missing: list[tuple[str, str]] = []
    for name, stated in _by_parameter(conditions).items():
        if name not in profile.known_parameters or name in task.several:
            return []
        if task.supplies(name):
            if _condition(name, stated, True, profile, task)[0] != "satisfied":
                return []
            continue
        parameter = profile.parameter(name)
        if any(_unusable(parameter, c) for c in stated):
            return []  # no value the sender could send meets it
        missing.extend((name, c.value) for c in stated)
    return missing


def _offers(capability: str, registrations: Iterable[Registration], profile: Profile,
            task: Task, out: Outcome) -> Iterator[Remedy]:
    """``offer-alignment`` for a capability no offered registration under the envelope's
    ontology provides: an artifact from the envelope's ontology (as read) to each ontology
    the offered registrations are under, issued by an issuer the profile trusts, whose
    conditions cover the task's parameters."""
    source = (out.ontology.get("id", ""), out.ontology.get("readAs", out.ontology.get("version", "")))
    parameters = [{"name": name, "values": list(task.values(name))}
                  for name in sorted({*task.parameters, *task.several})
                  if name in profile.known_parameters]
    # An issuer whose artifacts count only with a proof by one of its keys (a did:key
    # issuer, a binding that requires one): the artifact offered must carry that proof.
    proofs = [{"issuer": issuer, "verificationMethods": sorted(
                  profile.accepted_methods(issuer) or ())}
              for issuer in sorted(profile.trusted_issuers) if profile.requires_proof(issuer)]
    # An artifact was refused for a validity limit: the one offered must be valid (and its
    # proof too) at the evaluation instant, or the same refusal follows (7.2).
    valid_at = ({"validAt": out.at.isoformat().replace("+00:00", "Z")}
                if out.at is not None and any(e.get("code") in _VALIDITY_EXCLUSIONS
                                              for e in out.excluded) else {})
    for target in sorted({r.ontology for r in registrations} - {source}):
        yield remedy("offer-alignment", SENDER, ("alignment.no-accepted-mapping",
                                                 "alignment.not-offered"),
                     capability=capability,
                     source={"ontologyId": source[0], "ontologyVersion": source[1]},
                     target={"ontologyId": target[0], "ontologyVersion": target[1]},
                     trustedIssuers=sorted(profile.trusted_issuers), conditions=parameters,
                     **({"proofRequired": proofs} if proofs else {}), **valid_at)


_VALIDITY_EXCLUSIONS = frozenset({"alignment.expired", "alignment.not-yet-valid",
                                  "alignment.proof-expired", "alignment.proof-not-yet-valid"})


def judge_mapped(capability: str, rows: Sequence[Mapping[str, Any]],  # noqa: C901
            conditions: dict[tuple[str, str], list[Condition]],
            usable: dict[str, Artifact], by_graph: dict[str, Registration], profile: Profile,
            task: Task, alignment_ref: str | None, out: Outcome, *,
                 in_vocabulary: bool = True) -> None:
    """A requested capability no offered registration provides under the envelope's ontology:
    provided through one accepted mapping, or the reasons why not. ``in_vocabulary``: whether the
    capability is in the profile's vocabulary (an alignment is offered only for one that
    is: a remedy names only what the receiver defines)."""
    applicable: dict[tuple[str, str], tuple[Artifact, Registration, Mapping[str, Any]]] = {}
    unevaluable: list[str] = []
    supply: list[tuple[str, str]] = []  # (parameter, value) conditions the task does not supply
    for graph, artifact in usable.items():
        artifact_rows = [r for r in rows if r["artifactGraph"] == graph]
        verdicts = []
        for row in artifact_rows:
            if not row["versionsMatch"]:
                verdicts.append(("inapplicable", "its ontology versions are not exactly the "
                                 "envelope's and the offered capability's"))
                continue
            if not row["registration"]:
                verdicts.append(("inapplicable", f"{row['offered']} is not offered under the "
                                 "artifact's exact target ontology version"))
                continue
            rule_conditions = conditions.get((graph, row["rule"]), [])
            state, why = _evaluate_conditions(rule_conditions, profile, task)
            if state == "unevaluable":
                supply.extend(_to_supply(rule_conditions, profile, task))
            if state == "satisfied":
                registration = by_graph[row["registration"]]
                applicable.setdefault((artifact.id, artifact.revision),
                                      (artifact, registration, row))
                break
            verdicts.append(("unevaluable" if state == "unevaluable" else "inapplicable", why))
        else:
            if not artifact_rows:
                verdicts.append(("inapplicable",
                                 f"no mapping rule maps {capability} in a declared direction"))
            kinds = {k for k, _ in verdicts}
            why = "; ".join(sorted({w for _, w in verdicts}))
            if "unevaluable" in kinds:
                unevaluable.append(f"{artifact.id} revision {artifact.revision}: {why}")
                out.excluded.append({**artifact.label(), "code": "alignment.condition-unevaluable",
                                     "reason": why, "capability": capability})
            else:
                _exclude(out, artifact, "alignment.inapplicable", why)

    if len(applicable) > 1 and profile.preferred_issuers:
        ranks = {key: profile.preferred_issuers.get(a.asserted_by)
                 for key, (a, _, _) in applicable.items()}
        ranked = [r for r in ranks.values() if r is not None]
        best = {key for key, r in ranks.items() if ranked and r == min(ranked)}
        if len(best) == 1:
            key = best.pop()
            out.findings.append(finding(
                "alignment.local-selection",
                f"the profile's selection rule chose {key[0]} revision {key[1]} among "
                f"{len(applicable)} applicable artifacts; this local choice is not the peer's "
                "agreement (7.3)", key[0]))
            applicable = {key: applicable[key]}
    if len(applicable) > 1:
        out.remedies.append(remedy(
            "select-alignment", SENDER, ("alignment.ambiguous",), capability=capability,
            candidates=[{"artifactId": i, "revision": r} for i, r in sorted(applicable)]))
        names = ", ".join(f"{i} revision {r}" for i, r in sorted(applicable))
        out.findings.append(finding(
            "alignment.ambiguous",
            f"{len(applicable)} distinct applicable artifacts map {capability} ({names}) and the "
            "profile's selection rule does not single one out; negotiate one mapping",
            capability))
        return
    if applicable:
        (artifact, registration, row), = applicable.values()
        conflicts = _provider_conflicts(capability, registration, task, profile, out.remedies)
        if conflicts:
            out.findings.extend(conflicts)
            return
        out.evidence.append({
            "capability": capability, "via": "alignment", "providedBy": registration.iri,
            "source": registration.origin, "artifactId": artifact.id,
            "revision": artifact.revision, "reverse": bool(row["reverse"]),
            **provenance_of(artifact, profile),
        })
        return
    if alignment_ref is not None and not any(a.id == alignment_ref for a in usable.values()):
        out.findings.append(finding(
            "alignment.not-offered",
            f"the envelope's alignmentRef {alignment_ref} names no usable offered artifact",
            "/alignmentRef"))
    if in_vocabulary:
        out.remedies.extend(_offers(capability, by_graph.values(), profile, task, out))
    if unevaluable:
        for name in sorted({n for n, _ in supply}):
            out.remedies.append(remedy(
                "supply-parameter", SENDER, ("alignment.condition-unevaluable",), name=name,
                values=sorted({v for n, v in supply if n == name}),
                **_supplied_by(profile.parameter(name))))
        out.findings.append(finding(
            "alignment.condition-unevaluable",
            f"a mapping for {capability} cannot be established: {'; '.join(unevaluable)}",
            capability))
        return
    out.findings.append(finding(
        "alignment.no-accepted-mapping",
        f"no offered registration provides {capability} under the envelope's ontology version, "
        "and no accepted alignment artifact maps it; an absent mapping is not a finding of "
        "absence (12.5 S4)", capability))
