"""The reference engine: the pipeline's stages for one Checker, in full.

A Checker builds one engine (this one, or the compiled engine that extends it) and asks it
for the two things a check needs: the baseline of a document, and the outcome of the
decision for an envelope with a clean baseline. What does not depend on the document (the
shapes, the context policy, the limits, the receiver's quads) is given once.
"""

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyoxigraph

from ..sources.loader import Artifact, Profile, Registration, artifact_quads
from .baseline import Baseline, Kind, read_document
from .contexts import ContextLoader, ContextPolicy
from .decision import Outcome, Task, evaluate
from .intake import Limits
from .shapes import ShapeSet
from .store import Dataset, envelope_quads, envelope_subject

if TYPE_CHECKING:
    from .constraints import ProfileShapes

DocumentInput = bytes | str | dict[str, Any]


class ReferenceEngine:
    """Every stage in full: pyld, the shapes evaluated member by member, the named SPARQL
    queries over a fresh Oxigraph dataset per check."""

    name = "reference"

    def __init__(self, *, profile: Profile, registrations: Sequence[Registration],
                 artifacts: Sequence[Artifact], fixed: Sequence[pyoxigraph.Quad],
                 shapes: ShapeSet, policy: ContextPolicy, limits: Limits,
                 constraints: "ProfileShapes | None" = None) -> None:
        self.profile, self.registrations, self.artifacts = profile, registrations, artifacts
        self.fixed = tuple(fixed)
        self.shapes, self.policy, self.limits = shapes, policy, limits
        #: The profile's own SHACL shapes (iop:shapes), or None when it names none.
        self.constraints = constraints

    def baseline(self, data: DocumentInput, kind: Kind,
                 retriever: ContextLoader | None = None) -> Baseline:
        """The baseline stage of one document: every reason it has."""
        return self.reported(data, kind, retriever)

    def reported(self, data: DocumentInput, kind: Kind,
                 retriever: ContextLoader | None = None) -> Baseline:
        """The baseline stage on its reporting path (every reason), whatever the engine."""
        return read_document(data, kind, shapes=self.shapes, policy=self.policy,
                             permitted_types=self.profile.permitted_types, limits=self.limits,
                             retriever=retriever)

    def outcome(self, node: dict[str, Any], task: Task, at: datetime, *,
                clean: bool, fetched: Sequence[Artifact] = (),
                located: Sequence[Any] = ()) -> Outcome:
        """The decision's outcome for an envelope whose baseline rejected nothing (``clean``:
        it found nothing at all), with ``fetched`` the artifacts retrieved for this check.

        Raises :class:`~ioa_semantic.pipeline.store.UnloadableTerm` for an expanded value no
        RDF store accepts.
        """
        blanks: dict[str, Any] = {}
        quads = envelope_quads(node, nodes=blanks)
        dataset = Dataset(self.fixed, quads,
                          *(artifact_quads(a) for a in fetched if not a.malformed))
        out = evaluate(dataset, node, self.profile, self.registrations,
                       (*self.artifacts, *fetched), task, at)
        if self.constraints is not None and "readAs" in out.ontology:
            from .constraints import (
                Unevaluable,
                constraint_outcome,
                places,
                task_quads,
                unevaluable,
            )

            # The domain profile's required constraints (5.4), over the same store, last:
            # nothing reads the store after them.
            top = envelope_subject(node)
            try:
                task_graph = task_quads(task.items(), top, task.kinds)
            except Unevaluable as exc:
                out.findings.append(unevaluable(exc))
                return out
            dataset.store.bulk_extend(task_graph)
            findings, proposed = constraint_outcome(
                self.constraints, dataset.store, top, len(quads) + len(task_graph),
                places(blanks, located))
            out.findings.extend(findings)
            out.remedies.extend(proposed)
        return out
