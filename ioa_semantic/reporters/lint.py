"""``ioa-check lint`` rendered for people (text) or programs (JSON Lines).

Two reports: each linted file with its problems (profiles, artifacts, a profile's shape
files), and ``--explain``'s account of where each top-level shape of a set of shape files is
evaluated. The values are built by the command (``cli/lint``); reporters only render them.
Text: one line a problem, ``FILE: message`` (a warning's message starts ``warning:``), or
``FILE: ok``. JSON Lines: one object a file. The ``--format`` choices of ``ioa-check lint``
are the keys of :data:`REPORTERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import IO, Any, NamedTuple

from .._findings import Severity
from ..pipeline.constraints import ShapeRoute
from . import json_text, visible


class Problem(NamedTuple):
    """One thing wrong with a linted file. A warning does not fail the lint."""

    message: str
    severity: Severity = Severity.ERROR
    shape: str | None = None  # the shape (or shape node) at fault, when there is one
    line: int | None = None  # where in the file, when the parser knows

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": str(self.severity), "message": self.message}
        if self.shape is not None:
            out["shape"] = self.shape
        if self.line is not None:
            out["line"] = self.line
        return out


class Linted(NamedTuple):
    """A linted file: its problems, and what an ok line adds (how an artifact's issuer
    stands)."""

    file: str
    problems: tuple[Problem, ...] = ()
    note: str = ""

    @property
    def ok(self) -> bool:
        return not any(p.severity is Severity.ERROR for p in self.problems)


class Explained(NamedTuple):
    """One shape file of an explained set: where each of its top-level shapes is evaluated
    (``ProfileShapes.routes``, in a stable order)."""

    file: str  # where it was read from, as the report shows it
    reference: str  # as the profile (or the command line) names it
    routes: tuple[ShapeRoute, ...]


def _line(text: str) -> str:
    # File names and messages quote the input (a profile's terms, an artifact's members):
    # what a terminal would obey in them is shown, never written raw; lone surrogates (a file
    # name's undecodable bytes) are left to the stream's backslashreplace.
    return visible(text, surrogates=False) + "\n"


def lint_text(files: Iterable[Linted], stream: IO[str]) -> None:
    for linted in files:
        if not linted.problems:
            stream.write(_line(f"{linted.file}: ok{linted.note}"))
        for problem in linted.problems:
            mark = "warning: " if problem.severity is Severity.WARNING else ""
            stream.write(_line(f"{linted.file}: {mark}{problem.message}"))


def lint_json(files: Iterable[Linted], stream: IO[str]) -> None:
    for linted in files:
        record: dict[str, Any] = {"file": linted.file, "ok": linted.ok,
                                  "problems": [p.as_dict() for p in linted.problems]}
        if linted.note:
            record["note"] = linted.note.strip().removeprefix("(").removesuffix(")")
        stream.write(json_text(record) + "\n")


NO_TOP_LEVEL = "no shape in it has a target, so nothing in it is checked by itself"


def explain_text(files: Iterable[Explained], stream: IO[str]) -> None:
    for explained in files:
        if not explained.routes:
            stream.write(_line(f"{explained.file}: {NO_TOP_LEVEL}"))
        for route in explained.routes:
            stream.write(_line(f"{explained.file}: {route.shape}: {route.engine}: {route.why}"))


def explain_json(files: Iterable[Explained], stream: IO[str]) -> None:
    for explained in files:
        record = {"file": explained.file, "reference": explained.reference,
                  "shapes": [{"shape": r.shape, "engine": r.engine, "why": r.why}
                             for r in explained.routes]}
        stream.write(json_text(record) + "\n")


class Reporter(NamedTuple):
    lint: Callable[[Iterable[Linted], IO[str]], None]
    explain: Callable[[Iterable[Explained], IO[str]], None]


REPORTERS: dict[str, Reporter] = {
    "text": Reporter(lint_text, explain_text),
    "json": Reporter(lint_json, explain_json),
}
