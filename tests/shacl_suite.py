"""The W3C SHACL test suite (w3c/data-shapes ``core/`` and ``sparql/``), read from its
manifests: where it is kept, its tests, and each test's expected validation report.

The suite is not in the repository: ``tests/fetch_shacl_suite.py`` extracts it from pySHACL's
sdist into ``.cache/shacl-suite/pyshacl-<version>/sht_tests/``. Its documents are Turtle
with relative IRIs (``<>`` is the manifest, ``<pattern-001>`` a test), read against the
suite's published location (:data:`BASE`) as the W3C harness reads them, so that a test's
IRIs are the same whichever file names them.

A manifest is an ``mf:Manifest`` with ``mf:include`` (other manifests) and ``mf:entries`` (a
list of tests); each test is an ``sht:Validate`` whose ``mf:action`` names a
``sht:dataGraph`` and a ``sht:shapesGraph`` (often the manifest's own file, ``<>``) and whose
``mf:result`` is either ``sht:Failure`` (the validator must report a failure) or an
``sh:ValidationReport`` with ``sh:conforms`` and its ``sh:result`` entries.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import pyoxigraph

ROOT = Path(__file__).resolve().parents[1]
FETCH = "tests/fetch_shacl_suite.py"
#: Set to 1 to run the tests without the suite (offline, no pySHACL sdist at hand); the
#: suite's test then skips, saying so, instead of failing.
OPT_OUT = "IOA_SKIP_SHACL_SUITE"
#: Where the suite is published; its relative IRIs are read against it.
BASE = "https://w3c.github.io/data-shapes/data-shapes-test-suite/tests/"

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
SHT = "http://www.w3.org/ns/shacl-test#"
SH = "http://www.w3.org/ns/shacl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"


def suite_root() -> Path:
    """The folder of the suite's root manifest, for the installed pySHACL (it may not
    exist: see :data:`FETCH`)."""
    return ROOT / ".cache" / "shacl-suite" / f"pyshacl-{metadata.version('pyshacl')}" / "sht_tests"


class Expected(NamedTuple):
    """One ``sh:result`` of an expected report, its fields as pyoxigraph terms (None when
    the report leaves one out)."""

    focus: Any
    path: Any
    value: Any
    severity: Any
    component: Any
    source_shape: Any
    messages: tuple[str, ...]


class SuiteTest(NamedTuple):
    """One ``sht:Validate`` test."""

    name: str  # its path below the suite's root without ".ttl", e.g. "core/node/and-001"
    label: str
    status: str  # the local name of mf:status: approved, proposed
    data: Path
    shapes: Path
    failure: bool  # mf:result sht:Failure: the validator must fail to validate
    conforms: bool | None
    results: tuple[Expected, ...]
    manifest: Path  # the file the test is written in (its expected report is there)


def url_of(root: Path, path: Path) -> str:
    return BASE + path.relative_to(root).as_posix()


def path_of(root: Path, url: str) -> Path:
    if not url.startswith(BASE):
        raise ValueError(f"{url} is not in the suite")
    return root / url[len(BASE):]


@cache
def parse(root: Path, path: Path) -> tuple[pyoxigraph.Quad, ...]:
    """A suite file's triples, read once (a test's data graph is often its manifest, and
    their blank nodes are then the same terms)."""
    return tuple(pyoxigraph.parse(path.read_bytes(), pyoxigraph.RdfFormat.TURTLE,
                                  base_iri=url_of(root, path), without_named_graphs=True))


class _Graph:
    def __init__(self, quads: tuple[pyoxigraph.Quad, ...]) -> None:
        self.by_subject: dict[Any, dict[str, list[Any]]] = {}
        for q in quads:
            self.by_subject.setdefault(q.subject, {}).setdefault(q.predicate.value, []).append(
                q.object)

    def all(self, subject: Any, predicate: str) -> list[Any]:
        return self.by_subject.get(subject, {}).get(predicate, [])

    def one(self, subject: Any, predicate: str) -> Any:
        values = self.all(subject, predicate)
        if len(values) > 1:
            raise ValueError(f"{subject} has {len(values)} values of {predicate}")
        return values[0] if values else None

    def items(self, head: Any) -> list[Any]:
        out = []
        while head is not None and head != pyoxigraph.NamedNode(RDF + "nil"):
            out.append(self.one(head, RDF + "first"))
            head = self.one(head, RDF + "rest")
        return out


def tests(root: Path | None = None) -> list[SuiteTest]:
    """Every test of the suite's ``core/`` and ``sparql/`` manifests, in manifest order."""
    root = root or suite_root()
    found: list[SuiteTest] = []
    seen: set[Path] = set()

    def read(manifest: Path) -> None:
        if manifest in seen:
            return
        seen.add(manifest)
        graph = _Graph(parse(root, manifest))
        this = pyoxigraph.NamedNode(url_of(root, manifest))
        for included in graph.all(this, MF + "include"):
            read(path_of(root, included.value))
        for head in graph.all(this, MF + "entries"):
            for entry in graph.items(head):
                found.append(_test(root, manifest, graph, entry))

    read(root / "manifest.ttl")
    return found


def _test(root: Path, manifest: Path, graph: _Graph, entry: Any) -> SuiteTest:
    kinds = {t.value for t in graph.all(entry, RDF + "type")}
    if SHT + "Validate" not in kinds:
        raise ValueError(f"{entry}: not an sht:Validate test ({kinds})")
    action = graph.one(entry, MF + "action")
    result = graph.one(entry, MF + "result")
    status = graph.one(entry, MF + "status")
    label = graph.one(entry, RDFS + "label")
    name = entry.value[len(BASE):]
    failure = result == pyoxigraph.NamedNode(SHT + "Failure")
    conforms: bool | None = None
    results: tuple[Expected, ...] = ()
    if not failure:
        flag = graph.one(result, SH + "conforms")
        conforms = flag is not None and flag.value == "true"
        results = tuple(
            Expected(graph.one(r, SH + "focusNode"), graph.one(r, SH + "resultPath"),
                     graph.one(r, SH + "value"), graph.one(r, SH + "resultSeverity"),
                     graph.one(r, SH + "sourceConstraintComponent"),
                     graph.one(r, SH + "sourceShape"),
                     tuple(sorted(m.value for m in graph.all(r, SH + "resultMessage"))))
            for r in graph.all(result, SH + "result"))
    return SuiteTest(
        name, label.value if label is not None else "",
        status.value.rpartition("#")[2] if status is not None else "",
        path_of(root, graph.one(action, SHT + "dataGraph").value),
        path_of(root, graph.one(action, SHT + "shapesGraph").value),
        failure, conforms, results, manifest)


def skipped_by_request() -> bool:
    return os.environ.get(OPT_OUT, "") not in ("", "0")
