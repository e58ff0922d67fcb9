"""Remedies: what would change the answer (contract 2, "Remedies"; draft 6.4, 7.1, 7.3).

Each remedy is derived from a deciding reason and from what the receiver holds (the profile,
the offered registrations and artifacts), never from similarity to what was sent: it names
an action a program can take, who can take it, the codes it answers, and only identifiers
and values the receiver's own definitions contain.

Two kinds of remedy meet here. Those every reason of a kind has are derived from the reason
alone: ``correct-input`` at the path of each ``invalid`` reason, ``allow-retrieval`` or
``retry`` for a retrieval refused or failed (a retry is the sender's for what the envelope
names, the receiver's for what it names itself: its profile, the shape files the profile
pins, the artifacts it offers by URL). Those that need what a stage knew when it
found the reason (the accepted versions, a mapping's conditions, the applicable artifacts,
a provider's declared values) are proposed by the decision stage beside its findings
(:class:`~ioa_semantic.pipeline.decision.Outcome`). :func:`for_decision` keeps the remedies
of the reasons that decide the verdict, merges those that say the same, and orders them.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .._findings import Finding, Remedy, Severity, Verdict, frozen, thawed

# The contract's actions, in the order a result lists them.
ACTIONS = ("correct-input", "supply-parameter", "use-accepted-version", "offer-alignment",
           "select-alignment", "allow-retrieval", "retry", "renegotiate")
SENDER, RECEIVER = "sender", "receiver"

# Retrieval reasons by what would change them: the receiver's policy (an origin, a private
# address, a budget), or another attempt (the network, the server), by whoever named the
# resource. The rest (a cycle, a content type, a changed pinned resource) no action of either
# party's check can remedy.
_POLICY_REFUSALS = frozenset({
    "retrieval.prohibited", "retrieval.origin-not-allowed", "retrieval.private-address",
    "retrieval.redirect-refused", "retrieval.too-many-redirects", "retrieval.too-large",
    "retrieval.too-deep", "retrieval.budget"})
_TRANSIENT = frozenset({"retrieval.timeout", "retrieval.failed", "retrieval.http-status"})

# The action that answers each code a check decides on (docs/codes.md shows it), besides
# correct-input, which answers every code that forces invalid. A code in none has no remedy:
# an unknown sense, intent or capability (any proposal would be by similarity to what was
# sent, 6.4), a retrieval no party's check can change (a cycle, a content type, a pinned
# resource that changed), and what is not a check's (the audit's conflicts, the trace's).
ANSWERS: dict[str, frozenset[str]] = {
    "supply-parameter": frozenset({"constraint.missing-parameter",
                                   "alignment.condition-unevaluable"}),
    "use-accepted-version": frozenset({"profile.ontology-not-accepted",
                                       "profile.version-not-accepted",
                                       "profile.relationship-scope"}),
    "offer-alignment": frozenset({"alignment.no-accepted-mapping", "alignment.not-offered"}),
    "select-alignment": frozenset({"alignment.ambiguous"}),
    "allow-retrieval": _POLICY_REFUSALS,
    "retry": _TRANSIENT,
    "renegotiate": frozenset({
        "domain.binding-not-permitted", "domain.context-not-permitted",
        "domain.intent-not-permitted", "intent.not-applicable", "intent.domain-mismatch",
        "capability.input-conflict", "capability.output-conflict",
        "capability.language-conflict", "capability.parameter-conflict",
        "capability.unit-conflict", "constraint.parameter-conflict",
        "constraint.unit-conflict", "constraint.shape-violated"}),
}


def remedy(action: str, by: str, codes: Iterable[str], **details: Any) -> Remedy:
    """A remedy, its members frozen (a Decision is a value)."""
    assert action in ACTIONS, action
    return Remedy(action, by, tuple(sorted(set(codes))), frozen(details))


# The subject of a reason about a task parameter's value given by the carrier (--param, the
# service's param=, the A2A part's parameters), then the parameter's name: no path of the
# envelope holds that value, so its correction names the parameter.
CARRIED_PARAMETER = "urn:ioa-semantic:carried-parameter:"
# The subject of a retrieval reason about a resource the receiver names itself (its profile's
# URL, a shape file the profile pins, an artifact it offers by URL), then the URL: the sender
# named none of it, so another attempt, like the policy, is the receiver's to make.
RECEIVER_RESOURCE = "urn:ioa-semantic:receiver-resource:"


def receivers(url: str) -> str:
    """The subject of a retrieval reason about ``url``, a resource the receiver names."""
    return RECEIVER_RESOURCE + url


def named_by_receiver(reason: Finding) -> bool:
    """Whether ``reason`` is about a resource the receiver names itself (its fix is the
    receiver's too: :func:`~ioa_semantic._codes.fix_for`)."""
    return reason.subject is not None and reason.subject.startswith(RECEIVER_RESOURCE)


def of_reason(reason: Finding) -> Remedy | None:
    """The remedy a reason has by its kind alone, if any."""
    if reason.effect is Verdict.INVALID:
        if reason.subject is not None and reason.subject.startswith(CARRIED_PARAMETER):
            return remedy("correct-input", SENDER, (reason.code,), path=reason.path,
                          parameter=reason.subject[len(CARRIED_PARAMETER):])
        return remedy("correct-input", SENDER, (reason.code,), path=reason.path)
    if reason.subject is None:
        return None
    url, by = reason.subject, SENDER
    if named_by_receiver(reason):
        url, by = url[len(RECEIVER_RESOURCE):], RECEIVER
    if reason.code in _POLICY_REFUSALS:
        return remedy("allow-retrieval", RECEIVER, (reason.code,), url=url)
    if reason.code in _TRANSIENT:
        return remedy("retry", by, (reason.code,), url=url)
    return None


def for_decision(verdict: Verdict, reasons: Sequence[Finding],
                 proposed: Iterable[Remedy] = ()) -> tuple[Remedy, ...]:
    """The remedies of a decision: of each reason that decides ``verdict`` (an error), by
    its kind or as a stage ``proposed`` it; those with the same action, actor and members
    merged into one that answers all their codes. A compatible decision has none."""
    if verdict is Verdict.COMPATIBLE:
        return ()
    deciding = [r for r in reasons if r.severity is Severity.ERROR]
    codes = {r.code for r in deciding}
    found = [m for m in map(of_reason, deciding) if m is not None]
    found.extend(m for m in proposed if codes.intersection(m.codes))
    merged: dict[tuple[str, str, str], set[str]] = {}
    details: dict[tuple[str, str, str], Any] = {}
    for item in found:
        key = (item.action, item.by, _canonical(item.details))
        merged.setdefault(key, set()).update(c for c in item.codes if c in codes)
        details[key] = item.details
    return tuple(Remedy(action, by, tuple(sorted(merged[key])), details[key])
                 for key in sorted(merged, key=lambda k: (ACTIONS.index(k[0]), k[1], k[2]))
                 for action, by, _ in (key,))


def _canonical(details: Any) -> str:
    """The members of a remedy as one comparable text (what makes two remedies the same)."""
    return json.dumps(thawed(details), sort_keys=True, ensure_ascii=False)
