"""The SHACL rules for SPARQL-based constraints, held before a query is ever run.

SHACL 1.0 (section 5 and Appendix A, "Pre-binding of Variables") pre-binds ``$this`` (and
``$currentShape``, ``$shapesGraph``, ``$value`` where they apply) and therefore allows only
queries that pre-binding can mean: no ``MINUS``, no ``VALUES``, no ``SERVICE`` (a federated
call from a validator is also a request to anywhere), no pre-bound variable bound again by
``AS``, and a sub-select that projects every pre-bound variable the query uses. A query that
breaks one of them is no constraint SHACL defines; a processor that ran it anyway would
answer something the shape's author did not write, and a profile would quietly make every
check under it indeterminate. :func:`problems` says what is wrong with one query's text, and
:func:`parse_problem` whether SPARQL can read it at all; ``ioa-check lint`` and the routing of a
profile's shapes (``pipeline/constraints.py``) use both, so such a shape is named, never run.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import re
from collections.abc import Iterator

# Pre-bound variables of SHACL-SPARQL, by name (``?this`` and ``$this`` are one variable).
PRE_BOUND = ("this", "currentShape", "shapesGraph", "value")
_FORBIDDEN = ("MINUS", "VALUES", "SERVICE")

_TOKENS = re.compile(r'''
    (?P<comment>\#[^\n]*)
  | (?P<string>"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^'\\]|\\.|'(?!''))*\'\'\'
              |"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<var>[?$][A-Za-z0-9_\u00b7\u00c0-\ufffd]+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_-]*(?::[A-Za-z0-9_.-]*)?)
  | (?P<open>\{) | (?P<close>\}) | (?P<star>\*) | (?P<space>\s+) | (?P<other>.)
''', re.VERBOSE | re.DOTALL)


# SPARQL 1.1 (19.2): codepoint escapes are processed before the query is parsed, so an
# escaped keyword is the keyword.
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def _unescaped(query: str) -> str:
    def char(match: "re.Match[str]") -> str:
        point = int(match.group(1) or match.group(2), 16)
        return chr(point) if point <= 0x10FFFF else match.group()
    return _ESCAPE.sub(char, query)


def _tokens(query: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of each token outside comments, strings and IRIs (whose contents are
    no keywords), codepoint escapes expanded first (an IRI ends where SPARQL's IRIREF does:
    at a character up to U+0020, never at U+00A0)."""
    for match in _TOKENS.finditer(_unescaped(query)):
        kind = match.lastgroup or "other"
        if kind not in ("comment", "space"):
            yield kind, match.group()


def problems(query: str) -> list[str]:
    """What the SHACL rules forbid in ``query`` (a SELECT or ASK of a SPARQL-based
    constraint), each in words; none when it keeps them."""
    tokens = list(_tokens(query))
    found: list[str] = []
    for keyword in _FORBIDDEN:
        if any(kind == "word" and text.upper() == keyword for kind, text in tokens):
            found.append(f"it uses {keyword}, which SHACL-SPARQL does not allow")
    used = {text[1:] for kind, text in tokens if kind == "var" and text[1:] in PRE_BOUND}
    for at, (kind, text) in enumerate(tokens[:-1]):
        after = tokens[at + 1]
        if kind == "word" and text.upper() == "AS" and after[0] == "var" and (
                after[1][1:] in PRE_BOUND):
            found.append(f"it binds the pre-bound variable {after[1]} again (AS {after[1]})")
    # What the SHACL engine here (pySHACL over the check's Oxigraph store) cannot run,
    # though SHACL allows it: found here so that the shape is named (by lint, and in the
    # reason of every check it makes indeterminate), never met as a bare exception there.
    if "shapesGraph" in used:
        found.append("it uses $shapesGraph, which the SHACL engine here (pySHACL) does not "
                     "support")
    top = next((at for at, (kind, text) in enumerate(tokens)
                if kind == "word" and text.upper() == "SELECT"), None)
    if "currentShape" in used and top is not None:
        projected = _projection(tokens, top + 1)
        if projected is not None and "currentShape" not in projected:
            found.append("it uses $currentShape without selecting it, which the SHACL engine "
                         "here (pySHACL over Oxigraph) cannot pre-bind")
    depth = 0
    for at, (kind, text) in enumerate(tokens):
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        elif kind == "word" and text.upper() == "SELECT" and depth > 0:
            projected = _projection(tokens, at + 1)
            if projected is not None:
                missing = sorted(used - projected)
                if missing:
                    found.append("a sub-select does not project the pre-bound variable"
                                 f"{'s' if len(missing) > 1 else ''} "
                                 + ", ".join(f"${name}" for name in missing))
    return list(dict.fromkeys(found))


def _projection(tokens: list[tuple[str, str]], start: int) -> set[str] | None:
    """The variables the SELECT before ``tokens[start]`` projects (None for ``SELECT *``),
    read up to its WHERE or its group; an expression's own variables are not projected, its
    ``AS`` target is. Reads only the projection, never a copy of the rest."""
    projected: set[str] = set()
    depth = 0
    for at in range(start, len(tokens)):
        kind, text = tokens[at]
        if kind == "star" and depth == 0 and not projected:
            return None
        if kind == "open" or (kind == "word" and text.upper() == "WHERE"):
            break
        if text == "(":
            depth += 1
        elif text == ")":
            depth -= 1
        elif kind == "var" and depth == 0:
            projected.add(text[1:])
        elif kind == "word" and text.upper() == "AS" and at + 1 < len(tokens):
            projected.add(tokens[at + 1][1][1:])
    return projected


# The parsed forms of what SHACL-SPARQL forbids (rdflib's parser's names for them).
_FORBIDDEN_FORMS = {"ServiceGraphPattern": "SERVICE", "MinusGraphPattern": "MINUS",
                    "InlineData": "VALUES", "ValuesClause": "VALUES"}


def parse_problem(query: str, prefixes: dict[str, str]) -> str | None:
    """Why SPARQL cannot read ``query`` with the shape's declared ``prefixes`` (rdflib's
    parser, which reads and never runs it), or uses, as SPARQL reads it, a form SHACL-SPARQL
    forbids; or None. The parsed query is the authority: a text scan can be fooled by what
    SPARQL reads otherwise (an IRI holding U+00A0, a ``\\u`` escape in a keyword)."""
    from rdflib.plugins.sparql.parser import parseQuery

    head = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in sorted(prefixes.items()))
    try:
        parsed = parseQuery(head + query)
    except Exception as exc:  # pyparsing's and rdflib's own; a query is only text here
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"it is not SPARQL 1.1: {first[:200]}"
    found = sorted({_FORBIDDEN_FORMS[name] for name in _forms(parsed) if name in _FORBIDDEN_FORMS})
    if found:
        return f"it uses {', '.join(found)}, which SHACL-SPARQL does not allow"
    return None


def _forms(tree: object) -> set[str]:
    """The names of every parsed form in rdflib's parse tree (walked without recursion)."""
    from rdflib.plugins.sparql.parserutils import CompValue

    names: set[str] = set()
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, CompValue):
            names.add(node.name)
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list | tuple) or type(node).__name__ == "ParseResults":
            pending.extend(node)  # type: ignore[arg-type]
    return names
