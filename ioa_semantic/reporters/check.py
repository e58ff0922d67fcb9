"""Reporters: decisions rendered for people (text) or programs (JSON Lines).

Reporters only read :class:`~ioa_semantic.Decision` values; they never decide anything.
The ``--format`` choices of the command line are the keys of :data:`REPORTERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

from .._codes import fix_for
from .._findings import Decision, Remedy, Severity, Verdict
from ..pipeline.remedies import named_by_receiver
from . import json_text
from .lines import Lines, Piece

_STYLE = {
    Verdict.COMPATIBLE: "bold green",
    Verdict.INCOMPATIBLE: "bold red",
    Verdict.INDETERMINATE: "bold yellow",
    Verdict.INVALID: "bold magenta",
}
_HINT = {
    Verdict.COMPATIBLE: "semantic compatibility established",
    Verdict.INCOMPATIBLE: "a completed check established a conflict; do not proceed",
    Verdict.INDETERMINATE: "compatibility could not be established; do not proceed, supply "
                           "what is missing or renegotiate",
    Verdict.INVALID: "malformed input rejected before compatibility was evaluated; ask the "
                     "sender for a corrected envelope",
}


def json_lines(decisions: Iterable[Decision], stream: IO[str]) -> None:
    for decision in decisions:
        stream.write(json_text(decision.as_dict()) + "\n")


def text(decisions: Iterable[Decision], stream: IO[str]) -> None:
    out = Lines(stream, surrogates=False)
    for decision in decisions:
        verdict = decision.verdict
        out.line((verdict.upper(), _STYLE[verdict]), f" {decision.source}  ",
                 (f"profile {decision.profile.id} revision {decision.profile.revision}", "dim"))
        out.line(f"  {_HINT[verdict]}")
        for reason in decision.reasons:
            where = reason.path or "/"
            out.line("  ", _MARK[reason.severity], f" {reason.code} ",
                     (f"(section {reason.section}, at {where})", "dim"))
            out.line(f"      {reason.message}")
            # A URL the receiver names itself (its profile, say) is the receiver's to fix.
            fix = (fix_for(reason.code, named_by_receiver(reason))
                   if reason.severity is Severity.ERROR else "")
            if fix:
                out.line("      ", (f"fix: {fix}", "dim"))
        for item in decision.evidence:
            via = f" via artifact {item['artifactId']} revision {item['revision']}" if (
                item.get("artifactId")) else f" ({item['via']})"
            out.line("  ", ("provided", "green"), f" {item['capability']} by "
                     f"{item['providedBy']}{via}{provenance(item)}")
        for item in decision.excluded:
            # A malformed artifact may have no id or revision: it is named by its file.
            named = item.get("artifactId") or item.get("source")
            revision = f" revision {item['revision']}" if item.get("revision") else ""
            out.line("  ", (f"excluded artifact {named}{revision}: {item['reason']}", "dim"))
        if decision.remedies:
            out.line("  to proceed:")
            for remedy in decision.remedies:
                out.line(f"    {describe(remedy)} ", (f"(by the {remedy.by}; answers "
                                                      f"{', '.join(remedy.codes)})", "dim"))
        if decision.at:
            out.line("  ", (f"evaluated at {decision.at}; authorization not evaluated", "dim"))


_MARK: dict[Severity, Piece] = {Severity.ERROR: ("error", "red"),
                                Severity.WARNING: ("warning", "yellow"),
                                Severity.INFO: ("info", "dim")}


def provenance(item: dict[str, Any]) -> str:
    """How the artifact of an evidence item was established, for people (contract 6)."""
    if "provenance" not in item:
        return ""
    if item["provenance"] == "signed":
        return f", signed by {item['verificationMethod']}"
    if item.get("verificationMethod"):
        return (f", trusted by claim (its proof by {item['verificationMethod']} verifies; the "
                "profile binds no key to its issuer)")
    return ", trusted by claim"


def describe(remedy: Remedy) -> str:
    """A remedy in one sentence for people; programs read its members (``as_dict``)."""
    d = remedy.details
    def listed(values: Iterable[Any]) -> str:
        return ", ".join(str(v) for v in values) or "none"
    if remedy.action == "correct-input":
        if d.get("parameter"):
            return f"correct the task parameter {d['parameter']} the carrier gave"
        return f"correct the input at {d['path'] or '/'}"
    if remedy.action == "supply-parameter":
        # The values as the profile compares them: "at most 2048 (in kB's IRI)", never a
        # bare 2048 a person would read as the one value accepted (draft 6.4).
        values = (f" (accepted: {_compared(d)}{listed(d['values'])}{_in_unit(d)})"
                  if d.get("values") else "")
        return f"supply the task parameter {d['name']}{values}"
    if remedy.action == "use-accepted-version":
        return "use an accepted ontology version: " + listed(
            f"{a['ontologyId']} {a['ontologyVersion']}" for a in d["accepted"])
    if remedy.action == "offer-alignment":
        proofs = "".join(
            f"; from {p['issuer']}, signed by {listed(p['verificationMethods'])}"
            for p in d.get("proofRequired", ()))
        return (f"offer an alignment artifact for {d['capability']} from "
                f"{d['source']['ontologyId']} {d['source']['ontologyVersion']} to "
                f"{d['target']['ontologyId']} {d['target']['ontologyVersion']}, asserted by "
                f"{listed(d['trustedIssuers'])}{proofs}"
                + (f", valid at {d['validAt']}" if d.get("validAt") else ""))
    if remedy.action == "select-alignment":
        return ("name one artifact in alignmentRef (and its revision in alignmentRevision "
                "where two revisions of it are listed): " + listed(
                    f"{c['artifactId']} revision {c['revision']}" for c in d["candidates"]))
    if remedy.action == "allow-retrieval":
        return f"allow the retrieval of {d['url']} (the receiver's policy)"
    if remedy.action == "retry":
        return f"retry: {d['url']} could not be fetched"
    field = f" for {d['field']}" if d.get("field") else ""
    shape = f" to meet the profile's shape {d['shape']}" if d.get("shape") else ""
    if not d["permitted"]:
        # A pattern, a count or a SPARQL constraint admits values no list names.
        return f"renegotiate{field}{shape}"
    # A provider's declared constraint (rule 11) is the provider's, not the profile's.
    whose = ("the provider accepts" if remedy.codes and all(
        code.startswith("capability.") for code in remedy.codes) else "the profile permits")
    return (f"renegotiate{field}{shape}: {whose} "
            f"{_compared(d)}{listed(d['permitted'])}{_in_unit(d)}")


def _compared(details: Mapping[str, Any]) -> str:
    """How a remedy's values compare, as words before them ("at most "), or nothing."""
    return {"atMost": "at most ", "atLeast": "at least "}.get(details.get("comparison", ""), "")


def _in_unit(details: Mapping[str, Any]) -> str:
    return f" (in {details['unit']})" if details.get("unit") else ""


REPORTERS: dict[str, Callable[[Iterable[Decision], IO[str]], None]] = {
    "text": text,
    "json": json_lines,
}
