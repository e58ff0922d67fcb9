"""A profile's compiled shapes beside the compiled decision (imported only for a profile
whose shapes are all in the compiled subset; see pipeline.constraints)."""

from collections.abc import Sequence
from typing import Any

import pyoxigraph

from ..pipeline.constraints import (
    ProfileShapes,
    Unevaluable,
    constraint_outcome,
    places,
    task_quads,
    unevaluable,
)
from ..pipeline.decision import Task
from ..pipeline.store import check_quads, envelope_quads, envelope_subject


class ShapesStore:
    """The reference's store for a check as compiled shapes read it (the union of its graphs,
    asked for a subject and predicate's quads or a predicate and object's): the fixed quads
    indexed once, this check's envelope, check and task quads beside them. The reference
    builds a fresh Oxigraph store of the same quads per check; filling and clearing one
    costs more than the shapes."""

    def __init__(self, fixed: Sequence[pyoxigraph.Quad]) -> None:
        self._fixed = _QuadIndex(as_stored(fixed))

    def outcome(self, shapes: ProfileShapes, node: dict[str, Any], task: Task,
                read_as: tuple[str, str], located: Sequence[Any] = ()
                ) -> tuple[list[Any], list[Any]]:
        """The reasons and remedies of the profile's shapes for one check."""
        top = envelope_subject(node)
        try:
            task_graph = task_quads(task.items(), top, task.kinds)
        except Unevaluable as exc:
            return [unevaluable(exc)], []
        blanks: dict[str, Any] = {}
        this_check = _QuadIndex(as_stored([*envelope_quads(node, nodes=blanks),
                                           *check_quads(read_as), *task_graph]))
        return constraint_outcome(shapes, _Union(self._fixed, this_check), top,  # type: ignore[arg-type]
                                  0, places(blanks, located))


def indexed_union(*parts: Sequence[pyoxigraph.Quad]) -> Any:
    """The quads of ``parts`` as compiled shapes read a store (see :class:`ShapesStore`):
    for an evaluation with no pySHACL shape, where filling an Oxigraph store would cost more
    than the shapes."""
    return _Union(*(_QuadIndex(as_stored(quads)) for quads in parts))


_PLAIN = frozenset({"http://www.w3.org/2001/XMLSchema#string",
                    "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"})


def as_stored(quads: Sequence[pyoxigraph.Quad]) -> Sequence[pyoxigraph.Quad]:
    """The quads as an Oxigraph store gives them back: it keeps a literal of a datatype it
    knows in its canonical form (``"01"^^xsd:integer`` as ``"1"``), which the shapes then
    read. Strings (most of what a check brings) are kept as they are, so only quads with
    another literal go through a store."""
    if all(not isinstance(q.object, pyoxigraph.Literal) or q.object.datatype.value in _PLAIN
           for q in quads):
        return quads
    store = pyoxigraph.Store()
    store.bulk_extend(quads)
    return list(store.quads_for_pattern(None, None, None, None))


class _QuadIndex:
    def __init__(self, quads: Sequence[pyoxigraph.Quad]) -> None:
        self.by_subject: dict[tuple[Any, Any], list[pyoxigraph.Quad]] = {}
        self.by_object: dict[tuple[Any, Any], list[pyoxigraph.Quad]] = {}
        for q in quads:
            self.by_subject.setdefault((q.subject, q.predicate), []).append(q)
            self.by_object.setdefault((q.predicate, q.object), []).append(q)


class _Union:
    """``quads_for_pattern`` of Oxigraph's Store over the union of the indexes, for the two
    patterns CompiledShape asks (a subject and predicate; a predicate and object)."""

    def __init__(self, *indexes: _QuadIndex) -> None:
        self._indexes = indexes

    def quads_for_pattern(self, subject: Any, predicate: Any, obj: Any,
                          graph: Any = None) -> list[pyoxigraph.Quad]:
        if predicate is None or graph is not None or (subject is None) == (obj is None):
            raise NotImplementedError("only (s, p, ?) and (?, p, o) over the union")
        found: list[pyoxigraph.Quad] = []
        for index in self._indexes:
            if subject is not None:
                found.extend(index.by_subject.get((subject, predicate), ()))
            else:
                found.extend(index.by_object.get((predicate, obj), ()))
        return found
