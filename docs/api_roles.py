"""A Griffe extension for the API page (docs/reference/api.md): Sphinx roles become links.

The package's docstrings name other objects with Sphinx roles (``:class:`Checker```,
``:meth:`of```, ``:func:`~ioa_semantic.check```), which read well in ``help()`` and editors
but which mkdocstrings' Markdown would show literally. Before the docstrings are rendered,
each role becomes an optional cross-reference that mkdocs-autorefs turns into a link when the
site documents its target and into plain code when it does not (a private helper): the site
never shows role markup, and a reference to an undocumented name never fails the strict build.
mkdocs.yml loads this file (the Python handler's ``extensions`` option); ``tests/test_docs.py``
builds the site and holds the API page to it.

Rewriting the docstrings at build time, rather than rewriting them in Markdown cross-reference
style, keeps one docstring style across the package for every reader, the site included.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

# The Python domain's cross-reference roles, with or without the ``py:`` domain; ``!`` (no
# link) and ``~`` (show the last component) are Sphinx's prefixes of the target.
ROLE = re.compile(r":(?:py:)?(?P<role>class|exc|func|meth|attr|data|const|obj|mod):"
                  r"`(?P<target>[^`]+)`")
# Sphinx shows a function's or method's name with parentheses (add_function_parentheses).
CALLABLE_ROLES = frozenset({"func", "meth"})


def title(role: str, target: str) -> str:
    """What Sphinx shows for a role's target: its last component after ``~``, with
    parentheses for a callable."""
    shown = target.lstrip("!")
    if shown.startswith("~"):
        shown = shown[1:].rsplit(".", 1)[-1]
    return shown + ("()" if role in CALLABLE_ROLES and not shown.endswith(")") else "")


def identifier(obj: griffe.Object, target: str) -> str:
    """The full path a role's target names, resolved as Python would from the object whose
    docstring holds it (its members, then its parents' scopes); the target as written when
    it cannot be resolved (the reference is then optional and shows as code)."""
    path = target.lstrip("!~")
    head, _, rest = path.partition(".")
    if head == obj.package.name:
        return path
    try:
        resolved = obj.resolve(head)
    except griffe.NameResolutionError:
        return path
    return f"{resolved}.{rest}" if rest else resolved


def cross_references(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference."""

    def replace(match: re.Match[str]) -> str:
        target = match["target"]
        code = f"<code>{html.escape(title(match['role'], target))}</code>"
        if target.startswith("!"):  # Sphinx's "do not link"
            return code
        return (f'<autoref identifier="{html.escape(identifier(obj, target))}" optional>'
                f"{code}</autoref>")

    return ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring Griffe loads (see the module)."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader,
                  **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = cross_references(obj, obj.docstring.value)
