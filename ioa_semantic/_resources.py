"""Access to the data shipped inside the package: contexts, shapes, profiles, artifacts, queries.

The folders live at the top of the repository and are mapped into the wheel by
``pyproject.toml``; ``importlib.resources`` finds them in an installed package and in an
editable checkout alike.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

_PACKAGE = "ioa_semantic"


def folder(name: str) -> Traversable:
    return resources.files(f"{_PACKAGE}.{name}")


def read_text(kind: str, name: str) -> str:
    return (folder(kind) / name).read_text(encoding="utf-8")


@cache
def read_json(kind: str, name: str) -> Any:
    return json.loads(read_text(kind, name))


@cache
def query(name: str) -> str:
    """A named SPARQL query, from ``ioa_semantic/queries/<name>.rq``."""
    return read_text("queries", f"{name}.rq")


def shipped(kind: str, suffix: str) -> dict[str, Traversable]:
    """Shipped files of one kind by name (file name without the suffix)."""
    found = {}
    for entry in folder(kind).iterdir():
        if entry.is_file() and entry.name.endswith(suffix):
            found[entry.name[: -len(suffix)]] = entry
    return dict(sorted(found.items()))


def shipped_profiles() -> dict[str, Traversable]:
    return shipped("profiles", ".ttl")


def shipped_alignments() -> dict[str, Traversable]:
    return shipped("alignments", ".json")
