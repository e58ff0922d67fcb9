"""Immutable values that every stage produces and every reporter reads.

A :class:`Finding` is one reason about the input: a stable dotted code, a severity, a sentence
for people, the draft section it rests on, and where in the input it points. A
:class:`Decision` is the verdict of one check together with every finding and the
descriptive evidence around it.
"""

# No ``from __future__ import annotations`` here or in the other modules that define
# NamedTuples: typing compiles every string annotation of a NamedTuple field at import,
# which cost a one-envelope command about 6 ms of its start-up (measured). Functions nested
# in others quote their annotations instead, which would otherwise be built on every call.

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple


class Verdict(enum.StrEnum):
    """The outcome of a check (draft 7.1), plus the rejection of malformed input."""

    COMPATIBLE = "compatible"
    INCOMPATIBLE = "incompatible"
    INDETERMINATE = "indeterminate"
    INVALID = "invalid"

    @property
    def may_proceed(self) -> bool:
        """Whether a receiver may rely on semantic compatibility (7.1); never authorization."""
        return self is Verdict.COMPATIBLE


# Combination order of contract rule 14: malformed input is rejected first; an established
# conflict outranks anything unestablished.
_RANK = {
    Verdict.COMPATIBLE: 0,
    Verdict.INDETERMINATE: 1,
    Verdict.INCOMPATIBLE: 2,
    Verdict.INVALID: 3,
}


def combine(verdicts: Any) -> Verdict:
    """The three-valued AND of contract rule 14 (with `invalid` above all)."""
    result = Verdict.COMPATIBLE
    for verdict in verdicts:
        if _RANK[verdict] > _RANK[result]:
            result = verdict
    return result


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Finding(NamedTuple):
    """One reason about the input.

    ``effect`` is the verdict this finding forces when its severity is ``error``; it comes
    from the code registry, so a finding cannot claim an effect its code does not have.
    """

    code: str
    severity: Severity
    message: str
    section: str
    path: str
    effect: Verdict | None = None
    # The resource a reason is about when that is not a place in the input: the URL of a
    # retrieval. Read by remedies (allow-retrieval, retry); not part of the output.
    subject: str | None = None

    def as_dict(self) -> dict[str, str]:
        return {
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
            "section": self.section,
            "path": self.path,
        }


def sort_key(finding: Finding) -> tuple[int, str, str, str]:
    """Errors first, then by path and code, so reasons come out in a stable order."""
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return (order[finding.severity], finding.path, finding.code, finding.message)


class Remedy(NamedTuple):
    """What would change the answer, in a form a program can act on (contract 2, Remedies):
    an ``action``, who can take it (``by``: ``sender`` or ``receiver``), the reason codes it
    answers, and the action's own members (``details``). A remedy lists only identifiers
    and values the profile, the offered registrations or the offered artifacts define."""

    action: str
    by: str
    codes: tuple[str, ...]
    details: Mapping[str, Any] = MappingProxyType({})

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action, "by": self.by, "codes": list(self.codes),
                **thawed(self.details)}


class ProfileRef(NamedTuple):
    id: str
    revision: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "revision": self.revision}


def frozen(value: Any) -> Any:
    """A JSON-like value that cannot be changed: objects as read-only mappings, arrays as
    tuples. A Decision holds only such values, so no receiver can change what a Checker
    keeps (its fixed dependencies, its cache) or what another receiver was given."""
    kind = type(value)
    if kind in _ATOMS:  # most of what a decision holds; the ABC checks below cost more
        return value
    # The exact types first: an empty list's isinstance check against the Mapping ABC cost
    # more than the rest of its freezing (a decision holds several).
    if kind is dict or kind is MappingProxyType:
        return MappingProxyType({k: frozen(v) for k, v in value.items()})
    if kind is list or kind is tuple:
        return tuple(map(frozen, value))
    if isinstance(value, Mapping):
        return MappingProxyType({k: frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(map(frozen, value))
    return value


_ATOMS = frozenset({str, int, float, bool, type(None)})


def thawed(value: Any) -> Any:
    """A frozen value as plain dicts and lists again (a fresh copy, for reporters)."""
    if isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thawed(v) for v in value]
    return value


class Decision(NamedTuple):
    """The verdict of one check with every reason and what it depended on.

    ``evidence``, ``excluded`` and ``candidates`` are descriptive: they never change the
    verdict. ``dependencies`` lists what a cached copy of this decision depends on
    (contract rule 15). A Decision is a value: build it with :meth:`of`, which freezes
    what it holds (:func:`frozen`).
    """

    verdict: Verdict
    findings: tuple[Finding, ...]
    profile: ProfileRef
    source: str = "-"
    evidence: tuple[dict[str, Any], ...] = ()
    excluded: tuple[dict[str, Any], ...] = ()
    candidates: tuple[dict[str, Any], ...] = ()
    dependencies: Mapping[str, Any] = MappingProxyType({})
    at: str | None = None
    remedies: tuple[Remedy, ...] = ()

    @classmethod
    def of(cls, verdict: Verdict, findings: tuple[Finding, ...], profile: ProfileRef, *,
           source: str = "-", evidence: Any = (), excluded: Any = (), candidates: Any = (),
           dependencies: Mapping[str, Any] | None = None, at: str | None = None,
           remedies: tuple[Remedy, ...] = ()) -> "Decision":
        return cls(verdict, tuple(findings), profile, source, frozen(evidence),
                   frozen(excluded), frozen(candidates), frozen(dependencies or {}), at,
                   tuple(remedies))

    @property
    def reasons(self) -> tuple[Finding, ...]:
        return self.findings

    @property
    def may_proceed(self) -> bool:
        return self.verdict.may_proceed

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "verdict": str(self.verdict),
            "reasons": [f.as_dict() for f in self.findings],
            "remedies": [r.as_dict() for r in self.remedies],
            "profile": self.profile.as_dict(),
            "authorization": "not-evaluated",
            "mayProceed": self.may_proceed,
        }
        if self.at is not None:
            out["at"] = self.at
        if self.evidence:
            out["evidence"] = thawed(self.evidence)
        if self.excluded:
            out["excluded"] = thawed(self.excluded)
        if self.candidates:
            out["candidates"] = thawed(self.candidates)
        if self.dependencies:
            out["dependencies"] = thawed(self.dependencies)
        return out
