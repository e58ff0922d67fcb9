"""Access to the data shipped inside the package: contexts, shapes, profiles, artifacts, queries.

The folders live at the top of the repository and are mapped into the wheel by
``pyproject.toml`` as packages of their own (``ioa_semantic.contexts`` and so on). The
import system finds each one in an installed package and in an editable checkout alike, and
its ``__path__`` is the folder to read. Importing ``importlib.resources`` would cost the
command line more than a tenth of its start-up (it brings in ``tempfile`` and ``shutil``), so it
is only the fallback for a package that is not a plain folder (a zip, say).
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib import import_module
from typing import Any

_PACKAGE = "ioa_semantic"


@cache
def _folder(kind: str) -> str | None:
    package = import_module(f"{_PACKAGE}.{kind}")
    for location in getattr(package, "__path__", ()):
        if os.path.isdir(location):
            return str(location)
    return None


def read_bytes(kind: str, name: str) -> bytes:
    folder = _folder(kind)
    if folder is None:
        from importlib import resources

        return resources.files(f"{_PACKAGE}.{kind}").joinpath(name).read_bytes()
    with open(os.path.join(folder, name), "rb") as handle:
        return handle.read()


def read_text(kind: str, name: str) -> str:
    return read_bytes(kind, name).decode("utf-8")


@cache
def read_json(kind: str, name: str) -> Any:
    return json.loads(read_bytes(kind, name))


@cache
def query(name: str) -> str:
    """A named SPARQL query, from ``ioa_semantic/queries/<name>.rq``."""
    return read_text("queries", f"{name}.rq")


def shipped(kind: str, suffix: str) -> dict[str, str]:
    """Shipped files of one kind: their names without the suffix, to their file names."""
    folder = _folder(kind)
    if folder is None:
        from importlib import resources

        names = [entry.name for entry in resources.files(f"{_PACKAGE}.{kind}").iterdir()]
    else:
        names = os.listdir(folder)
    return {name[: -len(suffix)]: name for name in sorted(names) if name.endswith(suffix)}


def shipped_profiles() -> dict[str, str]:
    return shipped("profiles", ".ttl")


def shipped_alignments() -> dict[str, str]:
    return shipped("alignments", ".json")
