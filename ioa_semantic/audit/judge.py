"""One registration judged: its result, and its declaration for the conflicts between
registrations.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .._checker import Checker

from .._codes import finding
from .._findings import Finding, Remedy, Severity, Verdict, sort_key
from .._vocab import IOA
from ..pipeline import remedies
from ..sources.loader import registration_parameter_problems
from .conflicts import Digested
from .kinds import Kinds, Reported, Unknown
from .places import Place


class Result(NamedTuple):
    """One registration's audit result (contract section 2)."""

    source: str
    position: int | None  # "index" in the output: a line of a JSON Lines file, or an array slot
    id: str | None
    status: str
    reasons: tuple[Finding, ...]
    # Where the reasons' paths stand in the text read, by pointer (see .places.placed), for
    # a report that locates findings: None unless the audit was asked to place them or
    # without a text (a file not read). A JSON Lines record's lines count from its own.
    places: tuple[tuple[str, Place], ...] | None = None

    @property
    def plain(self) -> bool:
        """Valid without a reason: what a batch only counts (see Judged.notable)."""
        return not self.reasons and self.status == "valid"

    @property
    def remedies(self) -> tuple[Remedy, ...]:
        """What would make the registration valid (contract 2, Remedies; mostly
        ``correct-input``)."""
        return remedies.for_decision(_VERDICT_OF_STATUS[self.status], self.reasons)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "index": self.position, "id": self.id,
                "status": self.status, "reasons": [r.as_dict() for r in self.reasons],
                "remedies": [r.as_dict() for r in self.remedies]}


_VERDICT_OF_STATUS = {"valid": Verdict.COMPATIBLE, "invalid": Verdict.INVALID,
                      "indeterminate": Verdict.INDETERMINATE}


def _declaration(node: dict[str, Any], default_ontology: tuple[str, str] | None) -> tuple[Any, ...]:
    """What a registration declares about its capability, in a comparable form.

    Equal declarations are one object (up to a bound): registrations of one directory
    declare the same few things, and a batch pickles each of them once, the receiving end
    unpickles one, and the conflict index holds one.
    """
    if _ONTOLOGY_ID in node or _ONTOLOGY_VERSION in node:
        # Ids and versions apart: an id is never the same declaration as an equal version.
        ontology: tuple[Any, ...] | None = (tuple(_lexical(node, _ONTOLOGY_ID)),
                                            tuple(_lexical(node, _ONTOLOGY_VERSION)))
    else:
        ontology = None if default_ontology is None else (
            (default_ontology[0],), (default_ontology[1],))
    # Typed as a tuple of any length: mypyc keeps a fixed-length tuple unboxed and boxes it
    # anew wherever it is stored or returned, and the object kept must be the one returned.
    declaration: tuple[Any, ...] = (_media(node, _INPUTS), _media(node, _OUTPUTS), ontology)
    found = _DECLARATIONS.get(declaration)
    if found is None:
        # Bounded in bytes too: a sender's values may be as long as the intake admits, and
        # a declaration that long is not one a directory repeats.
        if len(_DECLARATIONS) < _DECLARATIONS_LIMIT and _chars(declaration) <= _DECLARATION_CHARS:
            _DECLARATIONS[declaration] = declaration
        return declaration
    return found


def _chars(declaration: tuple[Any, ...]) -> int:
    inputs, outputs, ontology = declaration
    return sum(map(len, inputs)) + sum(map(len, outputs)) + (
        0 if ontology is None else sum(map(len, ontology[0])) + sum(map(len, ontology[1])))


_DECLARATIONS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


# The members a declaration compares, as a registration names them (JSON Pointers).
DECLARED_MEMBERS = ("/inputs", "/outputs", "/ontologyId", "/ontologyVersion")


def declared_values(declaration: tuple[Any, ...]) -> tuple[list[str], ...]:
    """What a declaration says of each of :data:`DECLARED_MEMBERS`, as compared: media types
    in their compared form, sorted; the ontology's ids and versions (the profile's single
    ontology for a registration that names none; none at all where the profile has several)."""
    inputs, outputs, ontology = declaration
    ids, versions = ontology if ontology is not None else ((), ())
    return list(inputs), list(outputs), list(ids), list(versions)


_DECLARATIONS_LIMIT = 4096
#: The longest declaration kept, in its values' characters (all 4,096 hold 16 million at most).
_DECLARATION_CHARS = 4096


def _lexical(node: dict[str, Any], prop: str) -> list[str]:
    return [str(v.get("@value", v.get("@id"))) for v in node.get(prop, ())]


def _media(node: dict[str, Any], prop: str) -> tuple[str, ...]:
    # Type and subtype compare case-insensitively; parameters exactly (contract).
    values = node.get(prop, ())
    if len(values) == 1:  # the common case: one media type, its key remembered
        text = values[0].get("@value")
        if type(text) is str and len(text) <= _MEDIA_CHARS:
            return _one_media(text)
    return tuple(sorted({_key_of(str(v.get("@value", v.get("@id")))) for v in values}))


# Media types longer than this are keyed afresh each time: the memos hold short ones only,
# so that they stay within their entries times this whatever the documents hold.
_MEDIA_CHARS = 256


@lru_cache(maxsize=1024)
def _one_media(value: str) -> tuple[str]:
    return (_media_key(value),)


def _key_of(value: str) -> str:
    return _media_key(value) if len(value) <= _MEDIA_CHARS else _media_key.__wrapped__(value)


# Thousands of senders name media types of their own (a vendor tree apiece): the memo holds
# the keys of as many.
@lru_cache(maxsize=16384)
def _media_key(value: str) -> str:
    """A media type as declarations compare it: type and subtype in lower case, each
    parameter as written but for the spaces around it; a ``;`` inside a quoted value is
    part of the value (RFC 9110 quoted-string)."""
    head, sep, rest = value.partition(";")
    return head.strip().lower() + (sep + ";".join(p.strip() for p in _parameters(rest))
                                   if sep else "")


def _parameters(text: str) -> list[str]:
    """``text`` cut at each ``;`` outside a quoted string (a backslash escapes the next
    character inside one)."""
    pieces, start, quoted, escaped = [], 0, False, False
    for at, char in enumerate(text):
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == ";" and not quoted:
            pieces.append(text[start:at])
            start = at + 1
    pieces.append(text[start:])
    return pieces


Item = tuple[str, int | None, "bytes | dict[str, Any] | None", tuple[Finding, ...]]


Render = Callable[[Result], str]


class Judged(NamedTuple):
    """A batch of registrations judged: what the audit counts and the reporters write."""

    size: int  # registrations judged
    lines: str  # each result's line, in input order, when the batch was judged with a render
    notable: tuple[Result, ...]  # the results with a reason or not valid, in input order
    declarations: list[Digested]  # of each valid registration, for conflicts
    # each distinct declaration of the batch's valid registrations, by digest
    declared: dict[bytes, tuple[Any, ...]]


def judge(checker: Checker, data: bytes | str | dict[str, Any], source: str,
          index: int | None, kinds: Kinds | None = None) -> tuple[Result, tuple[Any, ...] | None]:
    """One registration's result, and its declaration when it is valid (for conflicts).

    With ``kinds``, a registration of a kind already judged clean is answered from it.
    """
    result, declaration, _ = judge_node(checker, data, source, index, kinds)
    return result, declaration


def judge_node(checker: Checker, data: bytes | str | dict[str, Any], source: str,
               index: int | None, kinds: Kinds | None = None
               ) -> tuple[Result, tuple[Any, ...] | None, dict[str, Any] | None]:
    """:func:`judge`, with the registration's expanded node (None when answered by kind or
    when it has none): what the profile's shapes are applied to."""
    unknown = None
    if kinds is not None and type(data) is bytes:
        known = kinds.judged(data)
        if isinstance(known, Unknown):
            unknown = known
        elif known is not None:
            remembered = known[1]
            if type(remembered) is Reported:  # a kind the reporting path judged: alike
                return Result(source, index, known[0], remembered.status,
                              remembered.reasons), None, None
            return Result(source, index, known[0], "valid", ()), remembered, None
    if unknown is None:
        baseline = checker.baseline(data, "registration")
    else:  # the compiled path has judged it: clean, or to be reported
        baseline = unknown.compiled or checker.reported(data, "registration")
    node = baseline.node
    ident = node.get("@id") if node is not None else None
    if not isinstance(ident, str):
        ident = None
    findings = baseline.findings
    if node is not None and checker.policy.parameter_terms.intersection(node):
        findings = (*findings, *(
            finding(code, message, "") for code, message in
            registration_parameter_problems(node, checker.profile.parameters)))
    if not findings:  # the common case, answered without sorting anything
        declaration = None if node is None or ident is None else _declaration(
            node, checker.profile.single_ontology())
        if unknown is not None and declaration is not None:
            unknown.remember(declaration)
        return Result(source, index, ident, "valid", ()), declaration, node
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if any(f.effect is Verdict.INVALID for f in errors):
        status = "invalid"
    elif errors:
        status = "indeterminate"
    else:
        status = "valid"
    declaration = None
    if status == "valid" and node is not None and ident is not None:
        declaration = _declaration(node, checker.profile.single_ontology())
    reasons = tuple(sorted(findings, key=sort_key))
    if unknown is not None and (node is None or not checker.policy.parameter_terms.intersection(
            node)):  # a task parameter's problems are read from values a kind may mask
        unknown.remember_reported(status, ident, reasons)
    return Result(source, index, ident, status, reasons), declaration, node


_INPUTS, _OUTPUTS = IOA + "inputs", IOA + "outputs"


_ONTOLOGY_ID, _ONTOLOGY_VERSION = IOA + "ontologyId", IOA + "ontologyVersion"
