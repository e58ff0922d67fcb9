"""The decision answered from a Checker's compiled tables, for the common envelope.

:class:`CompiledDecision` gives :func:`ioa_semantic.pipeline.decision.evaluate`'s outcome
for an envelope with a clean baseline whose every step before the capabilities passes, or
declines (None) and the caller runs ``evaluate``; the differential tests hold the two to the
same outcome.
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .._vocab import IOA
from ..pipeline.decision import (
    PROFILE_CONTEXT,
    UNDECLARED_MEDIA,
    Outcome,
    Task,
    conditions_by_rule,
    declared_media,
    judge_direct,
    judge_mapped,
    parameter_findings,
    referenced,
    screen_artifacts,
)
from ..sources.loader import Artifact, Profile, Registration
from .tables import XSD_STRING, CompiledTables, candidates_in_order

_ONTOLOGY_ID, _ONTOLOGY_VERSION = IOA + "ontologyId", IOA + "ontologyVersion"


_INTENT_REF, _CAPABILITY_REFS = IOA + "intentRef", IOA + "capabilityRefs"


_TERM_BINDINGS, _SENSE, _DOMAIN = IOA + "termBindings", IOA + "sense", IOA + "domain"


class CompiledDecision:
    """:func:`evaluate` over a Checker's compiled tables, for the common envelope.

    What does not depend on the envelope is prepared once, from the tables: the mapping
    rules' conditions, the registrations by graph, each vocabulary capability's declared
    media types, and the mapping candidates of each capability under each accepted ontology
    version.
    """

    __slots__ = ("artifacts", "by_graph", "candidates", "conditions", "declared", "known",
                 "profile", "registrations", "tables")

    def __init__(self, tables: CompiledTables, profile: Profile,
                 registrations: Sequence[Registration], artifacts: Sequence[Artifact]) -> None:
        self.tables, self.profile = tables, profile
        self.registrations, self.artifacts = registrations, artifacts
        self.conditions = conditions_by_rule([row for _, row in tables.conditions])
        self.by_graph = {r.graph_name: r for r in registrations}
        self.declared = {capability: declared_media(rows)
                         for capability, rows in tables.capabilities.items()}
        self.known = frozenset(capability for capability, rows in tables.capabilities.items()
                               if any(r["known"] for r in rows))
        # mapping_candidates for each requested capability and each (id, version) a check
        # can read an envelope as; the rows in ORDER BY order.
        read_as = {(ontology, str(row["readAs"])) for (ontology, _), rows in
                   tables.acceptance.items() for row in rows if row["relationship"] is None}
        self.candidates = {
            (capability, ontology, version): candidates_in_order(
                readings, capability, (ontology,), ((version, XSD_STRING, None),))
            for capability, readings in tables.readings.items()
            for ontology, version in read_as}

    def evaluate(self, node: dict[str, Any], task: Task, at: datetime) -> Outcome | None:  # noqa: C901
        """evaluate's Outcome for an envelope with a clean baseline, or None.

        It answers an envelope whose every step before the capabilities passes: its version
        accepted as itself, its context's domains permitted, every bound sense in a domain
        the profile permits, a known intent whose required capabilities are declared and
        whose domains hold, and task parameters the profile allows; with its context and
        bindings blank nodes (an IRI would merge them with other nodes in the store) and no
        unknown capability. The capability steps call the helpers :func:`evaluate` calls, on
        the same rows. Anything else is None, and :func:`evaluate` over a
        :class:`~.tables.TableDataset` reports it; the tests hold the two Outcomes equal.
        The common envelope skips building the index and the eight queries' rows (a third
        of a warm check before, measured).
        """
        tables, profile, registrations = self.tables, self.profile, self.registrations
        version_value = node[_ONTOLOGY_VERSION][0]
        version = version_value.get("@value")
        if len(version_value) != 1 or type(version) is not str:
            return None
        ontology_id = node[_ONTOLOGY_ID][0]["@id"]
        intent = node[_INTENT_REF][0]["@id"]
        direct = [row for row in tables.acceptance.get(
            (ontology_id, (version, XSD_STRING, None)), ()) if row["relationship"] is None]
        if not direct:
            return None
        read_as = str(direct[0]["readAs"])

        context_domains: set[str] = set()
        for context in node.get(PROFILE_CONTEXT, ()):
            if "@id" in context or "@value" in context:
                return None
            for domain in context.get(_DOMAIN, ()):
                iri = domain.get("@id")
                if iri is None or iri not in tables.permitted_domains:
                    return None
                context_domains.add(iri)
            for binding in context.get(_TERM_BINDINGS, ()):
                if "@id" in binding or "@value" in binding:
                    return None
                for sense in binding.get(_SENSE, ()):
                    meanings = tables.senses.get(sense.get("@id", ""))
                    if meanings is None or not any(part["domain"] for _, part in meanings) or not (
                            profile.cross_domain_bindings
                            or any(part["permitted"] for _, part in meanings)):
                        return None

        requirements = tables.intents.get(intent)
        if requirements is None or not requirements[0][2]["known"]:
            return None
        refs = [ref.get("@id") for ref in node[_CAPABILITY_REFS]]
        if None in refs:
            return None
        if any(required is not None and required not in refs for _, required, _ in requirements):
            return None
        domains = tables.intent_domains.get(intent, ())
        if domains and not any(part["permitted"] for _, _, part in domains):
            return None
        if domains and context_domains and not any(d in context_domains for d, _, _ in domains):
            return None
        if next(parameter_findings(profile, task), None) is not None:
            return None

        out = Outcome(at)
        out.ontology = {"id": ontology_id, "version": version, "readAs": read_as}
        version_term = (read_as, XSD_STRING, None)
        alignment_ref, revision = referenced(node)
        if revision is not None and alignment_ref is None:
            return None  # envelope.missing: evaluate words it
        # Offered artifacts are screened whether or not a capability is offered: each
        # exclusion is reported (rule 9), even where no mapping is asked of it.
        screened = screen_artifacts(self.artifacts, profile, alignment_ref, at, out,
                                    revision=revision)
        for capability in sorted(set(refs)):
            direct_providers = sorted({g for _, g in tables.registrations.get(
                (capability, ontology_id, version_term), ())})
            if not direct_providers and capability not in self.known:
                return None  # capability.unknown: evaluate words it
            if not registrations:
                continue
            cap_task = task.for_capability(self.declared.get(capability, UNDECLARED_MEDIA))
            if direct_providers:
                judge_direct(capability, [self.by_graph[g] for g in direct_providers], cap_task,
                             profile, out)
                continue
            judge_mapped(capability, self.candidates.get((capability, ontology_id, read_as), []),
                    self.conditions, screened, self.by_graph, profile, cap_task, alignment_ref,
                    out)
        return out
