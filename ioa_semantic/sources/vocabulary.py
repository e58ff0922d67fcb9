"""The profile vocabulary, read strictly (contract 3, "Profiles are read strictly").

A profile that misspells a setting (``iop:permitedDomain``) must not be loaded as if the
setting were absent: the check would then report a conflict that misleads. Every term of the
profile namespace a profile file uses is therefore held to the vocabulary the project defines
(``ioa_semantic/data/shapes/profile-vocabulary.json``): a term it does not define, a setting
on a node it does not belong to (a ``iop:rank`` on the profile itself), a setting no path
from the profile reaches, and a value of another kind (a string where an IRI belongs) are
each a problem naming the term, the line it first stands on and, for an unknown term, the
nearest known one. :func:`problems` lists them; the loader refuses a profile that has any,
and ``ioa-check lint`` prints them.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

import pyoxigraph

from .. import data as _resources
from .._iri import is_absolute_iri
from .._nearest import did_you_mean
from .._vocab import IOP, RDF_TYPE, RDFS
from .parameters import COMPARISONS, DATATYPES

_XSD = "http://www.w3.org/2001/XMLSchema#"
# What any node may carry besides settings: its type and words for people.
_DESCRIPTIVE = frozenset({RDF_TYPE, RDFS + "label", RDFS + "comment"})
_NUMBERS = frozenset({_XSD + "integer", _XSD + "decimal", _XSD + "double", _XSD + "float"})
# RFC 3986 3.1: a scheme is a letter, then letters, digits, "+", "-" or ".". An allowed scheme
# written otherwise ("https:", "") matches no IRI, so every envelope would be invalid for a
# reason that lies in the profile.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


@cache
def _vocabulary() -> dict[str, Any]:
    return dict(_resources.read_json("shapes", "profile-vocabulary.json"))


def sections() -> dict[str, dict[str, str]]:
    """Each kind of node a profile holds, with its settings and the kind of their values."""
    return dict(_vocabulary()["sections"])


@cache
def known_terms() -> frozenset[str]:
    """Every local name of the profile namespace the project defines."""
    vocabulary = _vocabulary()
    terms = {setting for section in vocabulary["sections"].values() for setting in section}
    terms.update(vocabulary["classes"], vocabulary["shapeTerms"])
    for values in vocabulary["values"].values():
        terms.update(values)
    return frozenset(terms)


def _nearest(local: str) -> str:
    return did_you_mean(local, known_terms(), lambda term: f"iop:{term}")


class _Lines:
    """Where a term first stands in the Turtle text, written as a full IRI (``<...>``) or by
    any prefix bound to its namespace. The text is indexed in one pass when a line is first
    asked for (a profile of n problem lines must not cost n scans of it: remote profiles are
    read within a byte budget, not a time one)."""

    # Compiled by re when a profile with a problem is first indexed, not with the module: a
    # profile without one never is (the two were half a millisecond of a cold check).
    _PREFIX = r"(?:@prefix|PREFIX)\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>"
    # A full IRI, or a prefixed name: a prefix (possibly empty) not glued to a word before
    # it, then a local name that does not end with a dot (Turtle's PN_LOCAL, simplified).
    _TERM = r"<([^<>\s]*)>|(?<![\w:.-])([A-Za-z][\w.-]*)?:([\w-]+(?:\.[\w-]+)*)"

    # How many of a term's lines are searched for the one holding a given value: each
    # problem costs a bounded share of the text, whatever the number of problems.
    _SEARCHED = 64

    def __init__(self, text: str) -> None:
        self.text = text
        self.first: dict[str, int] | None = None
        # Every line a term stands on (the first _SEARCHED of them), and the lines' text.
        self.every: dict[str, list[int]] = {}
        # The first line each term begins (a statement's subject, as Turtle is written).
        self.subjects: dict[str, int] = {}
        self.lines: list[str] = []

    def _index(self) -> dict[str, int]:
        prefixes = {name or "": iri
                    for name, iri in re.findall(self._PREFIX, self.text, re.IGNORECASE)}
        term = re.compile(self._TERM)
        first: dict[str, int] = {}
        self.lines = self.text.splitlines()
        for number, line in enumerate(self.lines, 1):
            if line.lstrip().startswith("#"):
                continue
            leading = True  # the line's first term: a statement's subject, as Turtle is written
            for match in term.finditer(line):
                full, prefix, local = match.groups()
                if full is None:
                    namespace = prefixes.get(prefix or "")
                    if namespace is None:
                        leading = False
                        continue
                    full = namespace + local
                if leading and not line[:match.start()].strip():
                    self.subjects.setdefault(full, number)
                leading = False
                first.setdefault(full, number)
                seen = self.every.setdefault(full, [])
                if len(seen) < self._SEARCHED and (not seen or seen[-1] != number):
                    seen.append(number)
        return first

    def of_setting(self, local: str, value: Any) -> str:
        """``line N: `` where the setting ``iop:local`` stands with ``value`` (an IRI or a
        literal on the same line), else where the term first stands: a profile restating
        a setting on several nodes (five parameters, each with its iop:comparison) has its
        problem named at the line of the wrong one, not of the first."""
        if self.first is None:
            self.first = self._index()
        if isinstance(value, pyoxigraph.NamedNode):
            wanted = set(self.every.get(value.value, ()))
            number = next((n for n in self.every.get(IOP + local, ()) if n in wanted), None)
        elif isinstance(value, pyoxigraph.Literal):
            number = next((n for n in self.every.get(IOP + local, ())
                           if value.value in self.lines[n - 1]), None)
        else:
            number = None
        return f"line {number}: " if number is not None else self.of(local)

    def of_subject(self, local: str, subject: Any, value: Any) -> str:
        """``line N: `` where the setting ``iop:local`` stands on ``subject``: the first of its
        lines from the subject's first line on (a Turtle statement follows its subject), the
        one holding ``value`` first; else as :meth:`of_setting` finds it. A term used rightly
        on the profile and wrongly on another node is named where it is wrong."""
        if self.first is None:
            self.first = self._index()
        # From where it stands as a subject (a line it begins), else where it first stands.
        start = (self.subjects.get(subject.value) or self.first.get(subject.value)
                 if isinstance(subject, pyoxigraph.NamedNode) else None)
        if start is None:
            return self.of_setting(local, value)
        after = [n for n in self.every.get(IOP + local, ()) if n >= start]
        shown = value.value if isinstance(value, (pyoxigraph.NamedNode, pyoxigraph.Literal)) else None
        number = next((n for n in after if shown is not None and shown in self.lines[n - 1]),
                      after[0] if after else None)
        return f"line {number}: " if number is not None else self.of_setting(local, value)

    def of_iri(self, iri: str) -> str:
        """``line N: `` where ``iri`` first stands, or nothing."""
        if self.first is None:
            self.first = self._index()
        number = self.first.get(iri)
        return f"line {number}: " if number is not None else ""

    def of(self, local: str) -> str:
        """``line N: `` where the profile term ``iop:local`` first stands, or nothing."""
        return self.of_iri(IOP + local)


def _kind_problem(kind: str, value: Any) -> str | None:
    """Why ``value`` is not of ``kind``, or None."""
    literal = isinstance(value, pyoxigraph.Literal)
    datatype = value.datatype.value if literal else None
    if kind.startswith("node:"):
        ok = isinstance(value, pyoxigraph.BlankNode | pyoxigraph.NamedNode)
        return None if ok else "a nested node ([ ... ])"
    if kind == "iri":
        return None if isinstance(value, pyoxigraph.NamedNode) else "an IRI (<...>)"
    if kind == "text":
        return None if literal and datatype == _XSD + "string" and not value.language else (
            "a plain string (\"...\")")
    if kind == "scheme":
        ok = literal and datatype == _XSD + "string" and not value.language and (
            _SCHEME.fullmatch(value.value) is not None)
        return None if ok else (
            "a URI scheme's name (a letter, then letters, digits, '+', '-' or '.'; no colon)")
    if kind == "boolean":
        return None if literal and datatype == _XSD + "boolean" else "true or false"
    if kind == "number":
        return None if literal and datatype in _NUMBERS else "a number"
    if kind == "whole":
        return None if literal and datatype == _XSD + "integer" else "a whole number"
    if kind == "literal":
        return None if literal else "a literal value"
    if kind == "iri-or-text":
        ok = isinstance(value, pyoxigraph.NamedNode) or (
            literal and datatype == _XSD + "string" and is_absolute_iri(value.value))
        return None if ok else "an IRI"
    if kind == "datatype":
        ok = isinstance(value, pyoxigraph.NamedNode) and value.value in DATATYPES
        return None if ok else "one of the datatypes " + ", ".join(sorted(
            _short(d) for d in DATATYPES))
    if kind == "comparison":
        ok = isinstance(value, pyoxigraph.NamedNode) and value.value in COMPARISONS
        return None if ok else "one of " + ", ".join(_short(c) for c in COMPARISONS)
    raise ValueError(f"no kind {kind!r}")


def _short(iri: str) -> str:
    if iri.startswith(IOP):
        return "iop:" + iri[len(IOP):]
    return "xsd:" + iri[len(_XSD):] if iri.startswith(_XSD) else iri


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:60] + "..."


def problems(quads: Iterable[pyoxigraph.Quad], text: str, profile: Any) -> list[str]:
    """Every problem of the profile's use of its namespace: the profile node ``profile``
    and what it reaches, and every other use of a profile term in the file."""
    by_subject: dict[Any, list[tuple[str, Any]]] = {}
    terms_used: set[str] = set()
    for quad in quads:
        by_subject.setdefault(quad.subject, []).append((quad.predicate.value, quad.object))
        for term in (quad.subject, quad.predicate, quad.object):
            if isinstance(term, pyoxigraph.NamedNode) and term.value.startswith(IOP):
                terms_used.add(term.value[len(IOP):])
    lines = _Lines(text)
    found: list[str] = []
    for local in sorted(terms_used - known_terms()):
        found.append(f"{lines.of(local)}iop:{local} is not a term of the profile vocabulary"
                     f"{_nearest(local)}")
    reached = _walk(by_subject, profile, lines, found)
    for subject, pairs in by_subject.items():
        if subject in reached:
            continue
        for predicate, value in pairs:
            name = predicate[len(IOP):] if predicate.startswith(IOP) else None
            if name is not None and name in known_terms():
                found.append(f"{lines.of_subject(name, subject, value)}iop:{name} stands on "
                             f"{_shown(subject)}, which no setting of the profile reaches; "
                             "it would be ignored")
    return list(dict.fromkeys(found))


def unknown_terms(data: bytes) -> list[str]:
    """Every term of the profile namespace a shape file uses that the project does not
    define (``iop:TaskParameter`` for ``iop:TaskParameters``: a shape targeting it targets
    nothing, and its constraint would never be evaluated), each with its line and the
    nearest known term. A file that is not Turtle has none here (its reader says why)."""
    try:
        # Any base: relative references resolve outside the profile namespace.
        quads = pyoxigraph.parse(data, pyoxigraph.RdfFormat.TURTLE,
                                 base_iri="urn:ioa-semantic:shape-file",
                                 without_named_graphs=True)
        used = {term.value[len(IOP):] for quad in quads
                for term in (quad.subject, quad.predicate, quad.object)
                if isinstance(term, pyoxigraph.NamedNode) and term.value.startswith(IOP)}
    except (SyntaxError, ValueError, OSError):
        return []
    lines = _Lines(data.decode("utf-8", "replace"))
    return [f"{lines.of(local)}iop:{local} is not a term of the profile vocabulary"
            f"{_nearest(local)}" for local in sorted(used - known_terms())]


def _walk(by_subject: dict[Any, list[tuple[str, Any]]], profile: Any, lines: _Lines,
          found: list[str]) -> set[Any]:
    """Check the settings of the profile node and of every node they reach; the nodes
    reached."""
    settings = sections()
    owners: dict[str, list[str]] = {}
    for owner, owned in settings.items():
        for setting in owned:
            owners.setdefault(setting, []).append(owner)
    reached: set[Any] = set()
    pending: list[tuple[Any, str]] = [(profile, "Profile")]
    while pending:
        node, section = pending.pop()
        if (node, section) in reached:
            continue
        reached.add((node, section))
        allowed = settings[section]
        for predicate, value in by_subject.get(node, ()):
            if predicate in _DESCRIPTIVE:
                continue
            if not predicate.startswith(IOP):
                if section != "Profile":
                    # A setting node holds settings only: qudt:unit where iop:unit belongs,
                    # or sh:minCount meant as iop:required, would be dropped unread.
                    found.append(f"{lines.of_iri(predicate)}<{predicate}> is not a setting of "
                                 f"iop:{section}; only terms of the profile vocabulary (and "
                                 "rdf:type, rdfs:label, rdfs:comment) are read there")
                continue
            local = predicate[len(IOP):]
            if local not in known_terms():
                continue  # reported as unknown
            kind = allowed.get(local)
            if kind is None:
                where = " or ".join("iop:" + o if o != "Profile" else "the profile"
                                    for o in owners.get(local, ())) or "no node"
                found.append(f"{lines.of(local)}iop:{local} is not a setting of "
                             f"{'the profile' if section == 'Profile' else 'iop:' + section}"
                             f" (it belongs to {where})")
                continue
            problem = _kind_problem(kind, value)
            if problem is not None:
                found.append(f"{lines.of_setting(local, value)}iop:{local} must be {problem}, not "
                             f"{_shown(value)}")
            elif kind.startswith("node:"):
                pending.append((value, kind[len("node:"):]))
    return {node for node, _ in reached}
