"""Registrations judged by kind, for an audit: most registrations of a directory differ from
one another only where the shapes cannot tell them apart, and a kind judged clean once is
clean again, a kind reported once is reported alike again (see :class:`Kinds`)."""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .._findings import Finding
from .._runtime import orjson_module
from ..compiled.engine import CompiledEngine, cached_active_context
from ..compiled.reader import escapes_a_colon
from ..compiled.walk import id_expander, member_plan
from ..pipeline.baseline import Baseline


class _KindPlan(NamedTuple):
    """How documents of one layout and one context are told apart: the members a clean
    judgement does not depend on (``@id`` first, then plain strings any string satisfies)
    and the others, whose values make up a kind."""

    expand_id: Callable[[str], str | None]  # the walk's expansion of an @id
    masked: tuple[str, ...]
    kept: tuple[str, ...]
    kinds: dict[bytes, tuple[int, Any]]  # kept values -> (colons besides masked, remembered)


class Reported(NamedTuple):
    """What the reporting path found of a registration of a kind that is not clean: its
    status and reasons, which every registration of the kind gets (see
    :meth:`Unknown.remember_reported`)."""

    status: str
    reasons: tuple[Finding, ...]


class Unknown(NamedTuple):
    """A registration of a kind not known yet, and the compiled path's baseline of it (None
    unless that path found it clean): :meth:`remember` what is judged of a clean one,
    :meth:`remember_reported` what the reporting path found of one that is not."""

    kinds: "Kinds"
    plan: _KindPlan
    values: bytes
    colons: int
    compiled: Baseline | None
    masked: tuple[str, ...]  # the masked members' values as written, the @id first

    def remember(self, value: Any) -> None:
        if self.compiled is not None and self.kinds.spend(len(self.values)):
            self.plan.kinds[self.values] = (self.colons, value)

    def remember_reported(self, status: str, ident: str | None,
                          reasons: Sequence[Finding]) -> None:
        """Remember the reporting path's ``status`` and ``reasons`` for the kind, when they
        are not about a masked member: none of them at the ``@id`` or a masked member, none
        naming the ``@id`` or a masked value, and the result's ``ident`` the ``@id`` as the
        walk expands it. A registration of the kind whose masked members pass what a clean
        kind's must (:meth:`Kinds.judged`) adds nothing to what its kept members are
        reported for, so it gets these reasons without the reporting path."""
        if self.compiled is not None or status == "valid" or ident is None:
            return
        if self.plan.expand_id(self.masked[0]) != ident:
            return
        pointers = [f"/{_pointer(key)}" for key in self.plan.masked]
        named = (ident, *self.masked)
        for reason in reasons:
            if any(reason.path == p or reason.path.startswith(p + "/") for p in pointers):
                return
            if any(text and (text in reason.message or text in reason.path
                             or text in (reason.subject or "")) for text in named):
                return
        size = len(self.values) + sum(len(r.message) + len(r.path) + 128 for r in reasons)
        if self.kinds.spend(size):
            self.plan.kinds[self.values] = (self.colons, Reported(status, tuple(reasons)))


def _pointer(key: str) -> str:
    """A member name as a JSON Pointer's reference token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


class Kinds:
    """Registrations judged by kind, for an audit: a kind is everything the compiled
    baseline's judgement of a registration depends on, so that registrations of a kind
    judged clean once are clean.

    Two registrations are of one kind when they have the same members in the same order
    with values of the same types, the same context (as orjson writes it) and the same
    values everywhere but ``@id`` and the members whose one string value any string meets
    (:meth:`ShapeSet.any_string`; never one of ``keep``, what the caller remembers is read
    from those). A registration of a kind remembered clean is clean when its text passes
    the intake's limits and the colon proof of :func:`read_document_compiled` (its own
    colons: the masked strings' are counted, the rest are the kind's) and its ``@id``
    expands as the walk expands it; it then needs none of the walk, the shapes or the
    reporting. A kind the reporting path found invalid (or indeterminate) for reasons that
    are not about its masked members is remembered with them (:class:`Reported`), and a
    registration of it that passes the same is reported alike without that path (the
    reporting path cost an invalid registration several times a clean one). Anything else
    (a kind not remembered) is for the caller to judge in full. The tests and the
    differential fuzzer hold every answer to the full judgement's, a sibling's (the masked
    members changed) included.
    """

    def __init__(self, engine: CompiledEngine, keep: frozenset[str]) -> None:
        """``engine``: the Checker's compiled engine, whose baseline a kind stands for."""
        self.engine = engine
        shapes = engine.compiled_shapes
        self.policy, self.limits = engine.policy, engine.limits
        self.any_string = shapes.any_string("registration") - keep
        self.single_valued = shapes.single_valued["registration"]
        self.plans: dict[tuple[Any, ...], _KindPlan | None] = {}
        self.asked = self.answered = 0
        self.room = _KINDS_BYTES

    def judged(self, data: bytes) -> tuple[str, Any] | Unknown | None:
        """``(the expanded @id, what was remembered)`` for a registration of a kind judged
        clean (what the caller remembered) or reported (a :class:`Reported`); for one of a
        kind not known yet, its compiled baseline and what remembers it; or None (judge it
        in full)."""
        self.asked += 1
        if self.asked > _KINDS_TRIAL and self.answered * 4 < self.asked:
            # Kinds answer fewer than a quarter of the registrations (each of its own kind,
            # say): telling them apart costs more than it saves, and nothing else changes.
            return None
        # The intake's limits but the nesting: a registration of a kind nests as the kind
        # does (what it masks are strings), and any other is judged in full.
        if len(data) > self.limits.max_bytes:
            return None
        if escapes_a_colon(data):
            return None
        orjson = orjson_module()

        try:
            document = orjson.loads(data)
            if type(document) is not dict:
                return None
            layout = (tuple(document), orjson.dumps(document["@context"]))
            try:
                plan = self.plans[layout]
            except KeyError:
                plan = self._plan(document, layout)
            if plan is None:
                return None
            values = orjson.dumps([document[key] for key in plan.kept])
        except (KeyError, TypeError, ValueError):  # not JSON, no context, an integer too large
            return None
        masked = 0
        for key in plan.masked:
            value = document[key]
            if type(value) is not str:
                return None
            masked += value.count(":")
        known = plan.kinds.get(values)
        if known is None:
            return Unknown(self, plan, values, data.count(b":") - masked,
                           self.engine.compiled_baseline(data, "registration"),
                           tuple(document[key] for key in plan.masked))
        if data.count(b":") != known[0] + masked:
            return None  # a member name repeated: the full judgement reports it
        ident = plan.expand_id(document["@id"])
        if ident is None:
            return None
        self.answered += 1
        return ident, known[1]

    def _plan(self, document: dict[str, Any], layout: tuple[Any, ...]) -> _KindPlan | None:
        reviewed = cached_active_context(document["@context"], self.policy, self.limits)
        schemes = self.policy.allowed_schemes
        plan = None
        # Only registrations without nested node objects have kinds: a nested node's @id is
        # kept while the top one is masked, and the two may coincide in one registration of
        # the kind and not in another (JSON-LD would merge them: jsonld.shared-node-id).
        if reviewed is not None and type(document.get("@id")) is str and not any(
                type(value) is dict or (type(value) is list and any(
                    type(item) is dict for item in value))
                for key, value in document.items() if key != "@context"):
            masked, kept = ["@id"], []
            for key, value in document.items():
                if key in ("@id", "@context"):
                    continue
                member = member_plan(key, reviewed.active, schemes, self.single_valued)
                if type(value) is str and type(member) is tuple and not member[1] and (
                        member[0] in self.any_string):
                    masked.append(key)
                else:
                    kept.append(key)
            plan = _KindPlan(id_expander(reviewed.active, schemes), tuple(masked),
                             tuple(kept), {})
        if self.spend(len(layout[1]) + sum(map(len, layout[0]))):
            self.plans[layout] = plan
        return plan

    def spend(self, size: int) -> bool:
        """Whether there is room to remember ``size`` more bytes (and they are counted)."""
        if self.room < size:
            return False
        self.room -= size
        return True


# Bytes of the layouts, contexts and kinds a process remembers, as their keys count them (a
# kind of 6.3's shape keeps tens of bytes); past them, a registration not known yet is
# judged in full.
_KINDS_BYTES = 64 << 20
# Registrations asked about before kinds may be found not worth asking.
_KINDS_TRIAL = 4096

