"""The sender's side of a refusal: the changes a remedy asks for that the sender can make
mechanically and honestly from what it holds itself (draft 6.4, 7.3).

A refusal lists remedies (contract 2, "Remedies"). :func:`changes_for` reads them against a
:class:`SenderPolicy`, which says what the sender's task really is and what it speaks, and
gives the envelope to send again with the changes it may make:

* ``supply-parameter``: the task's own value for the parameter, written into the
  ``profileContext`` (a profile's own parameter by the ``term`` the remedy names), when the
  sender's task has one and it is among the listed values (where the remedy lists values
  to equal, not bounds: whether a value meets a bound is the receiver's to judge);
* ``select-alignment``: one listed candidate in ``alignmentRef`` (and its revision in
  ``alignmentRevision`` when two revisions of one artifact are candidates), as the sender's
  own selection policy chooses (none: no choice is made for it);
* ``use-accepted-version``: an accepted ontology version, only one the sender declares it
  speaks too.

Nothing else is changed: no constraint is relaxed, no value invented, no sense or domain
swapped (``renegotiate``, ``correct-input``, ``offer-alignment`` and the receiver's own
``allow-retrieval`` are for people or for the receiver). The transport (A2A, HTTP) is the
caller's: see :func:`ioa_semantic.a2a.negotiate`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import data
from .pipeline.decision import ALIGNMENT_REVISION, same_value

# A task parameter and the profileContext member that carries it in an envelope.
_CONTEXT_MEMBER = {"sourceLang": "sourceLang", "targetLang": "targetLang", "domain": "domain",
                   "inputMediaType": "inputs", "outputMediaType": "outputs"}


@dataclass(frozen=True)
class SenderPolicy:
    """What the sender holds: its task's own parameters, the ontology versions it speaks
    (``(ontologyId, ontologyVersion)`` pairs), and its rule for choosing among several
    applicable alignment artifacts (given the candidates, an ``artifactId`` or None)."""

    parameters: Mapping[str, str] = field(default_factory=dict)
    speaks: frozenset[tuple[str, str]] = frozenset()
    # Given the candidates (each {artifactId, revision}): the one chosen, or its artifactId
    # (enough where no two revisions of it are candidates), or None.
    choose_alignment: Callable[[Sequence[Mapping[str, Any]]],
                               str | Mapping[str, Any] | None] | None = None


class Change(NamedTuple):
    """One change made to the envelope for the next round: the remedy acted on, the member
    changed and its new value."""

    action: str
    member: str
    value: Any


def changes_for(envelope: Mapping[str, Any], remedies: Iterable[Mapping[str, Any]],
                policy: SenderPolicy) -> tuple[dict[str, Any], tuple[Change, ...]]:
    """The envelope with every change the remedies ask for that ``policy`` lets the sender
    make, and those changes (none: nothing the sender could honestly change)."""
    sent = copy.deepcopy(dict(envelope))
    changes: list[Change] = []
    for item in remedies:
        action = item.get("action")
        if action == "supply-parameter":
            change = _supply(sent, item, policy)
        elif action == "select-alignment":
            change = _select(sent, item, policy)
        elif action == "use-accepted-version":
            change = _version(sent, item, policy)
        else:
            change = None
        if change is not None:
            changes.append(change)
    return sent, tuple(changes)


def _supply(envelope: dict[str, Any], item: Mapping[str, Any],
            policy: SenderPolicy) -> Change | None:
    name = str(item.get("name"))
    value = policy.parameters.get(name)
    term = item.get("term")
    # The contract's five by their baseline members; a profile's own parameter by the
    # property the remedy names, under the parameter's name as the term.
    member = _CONTEXT_MEMBER.get(name) or (name if isinstance(term, str) else None)
    allowed = item.get("values")
    context = envelope.get("profileContext")
    if value is None or member is None or not isinstance(context, dict):
        return None
    # The contract's five compare by rules this client knows (same_value); a profile's own
    # parameter compares by its declared datatype, which the remedy does not carry: the
    # receiver judges the sent value (as for bounds), never a string comparison here.
    if allowed and item.get("comparison") is None and name in _CONTEXT_MEMBER and not any(
            same_value(name, value, str(a)) for a in allowed):
        return None  # the task's own value is not one the receiver accepts: nothing to send
    defined = _define(envelope, member) if name in _CONTEXT_MEMBER else _define_as(
        envelope, member, str(term))
    if member in context or not defined:
        return None  # the envelope already says something else: not the sender's to change
    context[member] = value
    return Change("supply-parameter", f"profileContext/{member}", value)


def _select(envelope: dict[str, Any], item: Mapping[str, Any],
            policy: SenderPolicy) -> Change | None:
    candidates = list(item.get("candidates") or ())
    if policy.choose_alignment is None or "alignmentRef" in envelope:
        return None
    chosen = policy.choose_alignment(candidates)
    if isinstance(chosen, str):
        # An artifact id: it names one candidate only if no two revisions of it remain.
        named = [c for c in candidates if c.get("artifactId") == chosen]
        chosen = named[0] if len(named) == 1 else None
    if not isinstance(chosen, Mapping) or chosen not in candidates:
        return None
    if not _define(envelope, "alignmentRef"):
        return None
    revised = sum(c.get("artifactId") == chosen.get("artifactId") for c in candidates) > 1
    if revised and ("alignmentRevision" in envelope or not _define_as(
            envelope, "alignmentRevision", ALIGNMENT_REVISION)):
        return None
    envelope["alignmentRef"] = chosen["artifactId"]
    if revised:
        # Two revisions of one artifact share its IRI: the revision names the one chosen.
        envelope["alignmentRevision"] = chosen["revision"]
    return Change("select-alignment", "alignmentRef",
                  [chosen["artifactId"], chosen["revision"]] if revised else chosen["artifactId"])


def _version(envelope: dict[str, Any], item: Mapping[str, Any],
             policy: SenderPolicy) -> Change | None:
    accepted = sorted((str(a.get("ontologyId")), str(a.get("ontologyVersion")))
                      for a in item.get("accepted") or ())
    both = [pair for pair in accepted if pair in policy.speaks]
    current = (envelope.get("ontologyId"), envelope.get("ontologyVersion"))
    if not both or both[0] == current:
        return None
    envelope["ontologyId"], envelope["ontologyVersion"] = both[0]
    return Change("use-accepted-version", "ontologyVersion", list(both[0]))


def _define_as(envelope: dict[str, Any], term: str, iri: str) -> bool:
    """Whether ``term`` means ``iri`` in the envelope's own inline context, defining it so
    when it is not defined; False when it means something else there."""
    context = envelope.get("@context")
    if not isinstance(context, dict) or term.startswith("@"):
        return False
    if term not in context:
        context[term] = iri
    return bool(context[term] == iri or context[term] == {"@id": iri})


def _define(envelope: dict[str, Any], term: str) -> bool:
    """Whether ``term`` is defined in the envelope's own inline context, adding the 6.1
    baseline's definition when it is not (a sender may define the terms it uses, each as
    the baseline does). False for a context that is not one inline object."""
    context = envelope.get("@context")
    if not isinstance(context, dict):
        return False
    baseline = data.read_json("contexts", "baseline.jsonld")["@context"]
    if term not in context:
        definition = baseline[term]
        prefix = (definition["@id"] if isinstance(definition, dict) else definition).split(":")[0]
        if context.get(prefix) != baseline.get(prefix):
            return False  # the prefix means something else here, or is not defined
        context[term] = copy.deepcopy(definition)
    return True
