"""The data shipped inside the package, read one way: contexts, shapes, profiles, alignment
artifacts, SPARQL queries, the HTML report's template, the service's web page and the
output schema, each kind a folder of this package.

In an installed wheel and in an editable checkout alike the folder is next to this file, and
it is read with plain file access. Importing ``importlib.resources`` would cost the command
line more than a tenth of its start-up (it brings in ``tempfile`` and ``shutil``), so it is
only the fallback for a package that is not a plain folder (a zip, say).
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

_FOLDER = os.path.dirname(os.path.abspath(__file__))
_KINDS = frozenset({"alignments", "contexts", "profiles", "queries", "report", "shapes",
                    "trace", "web"})


def _plain_folder() -> bool:
    return os.path.isdir(os.path.join(_FOLDER, "contexts"))


def read_bytes(kind: str, name: str) -> bytes:
    """One shipped file: ``kind`` is its folder ("" for the top of the data package)."""
    if kind and kind not in _KINDS:
        raise ValueError(f"no shipped data of kind {kind!r}")
    if not _plain_folder():
        from importlib import resources

        folder = resources.files(__name__)
        return (folder.joinpath(kind, name) if kind else folder.joinpath(name)).read_bytes()
    with open(os.path.join(_FOLDER, kind, name), "rb") as handle:
        return handle.read()


def read_text(kind: str, name: str) -> str:
    return read_bytes(kind, name).decode("utf-8")


@cache
def read_json(kind: str, name: str) -> Any:
    return json.loads(read_bytes(kind, name))


@cache
def query(name: str) -> str:
    """A named SPARQL query, from ``ioa_semantic/data/queries/<name>.rq``."""
    return read_text("queries", f"{name}.rq")


def shipped(kind: str, suffix: str) -> dict[str, str]:
    """Shipped files of one kind: their names without the suffix, to their file names."""
    if kind not in _KINDS:
        raise ValueError(f"no shipped data of kind {kind!r}")
    if not _plain_folder():
        from importlib import resources

        names = [entry.name for entry in resources.files(__name__).joinpath(kind).iterdir()]
    else:
        names = os.listdir(os.path.join(_FOLDER, kind))
    return {name[: -len(suffix)]: name for name in sorted(names) if name.endswith(suffix)}


# A shipped profile's shape files sit beside it, named <profile>.shapes.ttl (or any
# <name>.shapes.ttl): they are not profiles.
SHAPES_SUFFIX = ".shapes.ttl"


def shipped_profiles() -> dict[str, str]:
    return {name: file for name, file in shipped("profiles", ".ttl").items()
            if not file.endswith(SHAPES_SUFFIX)}


def shipped_alignments() -> dict[str, str]:
    return shipped("alignments", ".json")
