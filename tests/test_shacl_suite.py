"""The W3C SHACL test suite (``core/`` and ``sparql/``) through the project's profile-shape
path (draft 5.4: a profile's required constraints, expressed in SHACL; R-5.4-2, R-5.4-5).

Each ``sht:Validate`` test goes the way a profile's shape file goes: its shapes graph as a
:class:`~ioa_semantic.sources.loader.ShapeFile` (read against the suite's published URL, as a
retrieved shape file is, so that ``<>`` and the test's relative IRIs resolve) →
:class:`~ioa_semantic.pipeline.constraints.ProfileShapes`, which routes each shape to the
compiled checks or to pySHACL → its data graph in a :class:`pyoxigraph.Store` (in a named
graph, as a check's graphs are: both routes read the union) → ``shapes.results(store)``.

The suite is not in the repository: ``python tests/fetch_shacl_suite.py`` extracts it from
the installed pySHACL's sdist. Without it the test fails, naming that script, unless
``IOA_SKIP_SHACL_SUITE=1`` says the run is offline on purpose (then it skips).

What is compared with the expected report:

* ``sh:conforms``: ours conforms when there is no result at all, whatever its severity
  (as SHACL's ``sh:conforms`` does);
* the results' ``sh:focusNode``, ``sh:resultPath``, ``sh:value``, ``sh:resultSeverity`` and
  the local name of ``sh:sourceConstraintComponent``, as a set (see :data:`REPEATED`):

  - a blank node is compared by identity when the data graph is the test's own file (the
    report's blank nodes are then the data's), otherwise only as being a blank node;
  - a path that is not one IRI (an inverse or sequence path) only as being complex: our
    :class:`~ioa_semantic.pipeline.constraints.Result` says "(a complex path)";
  - a severity other than ``sh:Warning``/``sh:Info`` reads as ``sh:Violation`` (the project
    has three severities; one it does not know decides, see :data:`READINGS`);

* ``sh:resultMessage`` where the expected report gives one: ours is one of them;
* not ``sh:sourceShape``: our ``Result.shape`` is the top-level shape (a property shape's
  results are named by the node shape that holds it, as a reason names what the profile
  author wrote); it is checked to be one of the routed shapes.

A test whose ``mf:result`` is ``sht:Failure`` passes when the shapes are
:class:`~ioa_semantic.pipeline.constraints.Unevaluable` (a check under them is
indeterminate: ``constraint.shape-unevaluable``).

The tests the compiled route evaluates run a second time with every compiled shape made
non-compilable (``sh:deactivated false``, a parameter outside the compiled subset that
changes no result), so the same tests hold the pySHACL route too.

Our reading of ``sh:pattern``'s ``$`` as the end of the string (not before a final newline,
see ``pipeline/constraints.py``) decides no test of the suite: no data value there ends in
a newline (asserted below).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections import Counter
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import fetch_shacl_suite as fetch
import pyoxigraph
import pytest
import shacl_suite as suite

from ioa_semantic._findings import Severity
from ioa_semantic.pipeline.constraints import (
    ROUTE_COMPILED,
    ROUTE_PYSHACL,
    ROUTE_UNSUPPORTED,
    ProfileShapes,
    Result,
    ShapesUnreadable,
    Unevaluable,
)
from ioa_semantic.sources.loader import ShapeFile

ROOT = suite.suite_root()
PRESENT = (ROOT / "manifest.ttl").is_file()
DATA_GRAPH = pyoxigraph.NamedNode("urn:shacl-suite:data")

# Tests whose outcome is not the suite's, each with the outcome we get and why. The test
# asserts that outcome, so a pySHACL that fixes one fails here until the entry goes.
UNEVALUABLE = "unevaluable"  # the shapes are Unevaluable where the suite expects a report
DIFFERS = "differs"  # a report that is not the expected one
DEVIATIONS: dict[str, tuple[str, str]] = {
    "core/property/datatype-ill-formed": (
        UNEVALUABLE, "sh:datatype xsd:byte: Oxigraph's store keeps a value it reads as an "
        "integer as xsd:integer (\"12\"^^xsd:byte is read back \"12\"^^xsd:integer, "
        "oxigraph/oxigraph#526), so the check's store cannot tell an xsd:byte and the shape "
        "is not evaluated"),
    "core/property/uniqueLang-002": (
        DIFFERS, "pySHACL reads sh:uniqueLang \"1\"^^xsd:boolean as true; SHACL activates the "
        "constraint for the literal true only, so the data conforms"),
    "sparql/pre-binding/pre-binding-003": (
        DIFFERS, "pySHACL over an Oxigraph store pre-binds $this as a substitution that a "
        "FILTER in a nested group does not see: the violation is missed (conforms)"),
    "sparql/pre-binding/pre-binding-004": (
        DIFFERS, "pySHACL over an Oxigraph store: BIND($this AS ?that) does not see the "
        "pre-bound $this, the violation is missed (conforms)"),
    "sparql/pre-binding/pre-binding-005": (
        DIFFERS, "pySHACL over an Oxigraph store: FILTER(bound($this)) in a nested group "
        "does not see the pre-bound $this, the violation is missed (conforms)"),
    "sparql/pre-binding/shapesGraph-001": (
        UNEVALUABLE, "pySHACL does not support $shapesGraph in a SPARQL constraint"),
    "sparql/node/prefixes-001": (
        UNEVALUABLE, "pySHACL over an Oxigraph store does not pass the sh:prefixes of an "
        "owl:imports'ed graph to the query (Oxigraph: prefix not found)"),
    "sparql/component/nodeValidator-001": (
        UNEVALUABLE, "pySHACL over an Oxigraph store cannot run a SPARQL-based constraint "
        "component: substituting its parameters takes them out of the SELECT projection"),
    "sparql/component/optional-001": (
        UNEVALUABLE, "pySHACL over an Oxigraph store cannot run a SPARQL-based constraint "
        "component (as nodeValidator-001)"),
    "sparql/component/propertyValidator-select-001": (
        UNEVALUABLE, "pySHACL over an Oxigraph store cannot run a SPARQL-based constraint "
        "component (as nodeValidator-001)"),
    "sparql/component/validator-001": (
        UNEVALUABLE, "pySHACL over an Oxigraph store cannot run a SPARQL-based constraint "
        "component (as nodeValidator-001)"),
}

# Tests whose expected report holds the same result (by the compared fields) more than once;
# ProfileShapes.results says a result once (a reason said twice is one reason), so these are
# compared as sets. Asserted to be exactly the tests with repeats.
REPEATED: dict[str, str] = {
    "core/node/class-003": "one result per sh:class value the focus node is not an instance of",
    "core/path/path-complex-002": "two results that differ only in their complex path",
    "core/property/lessThan-002": "one result per pair of values: sh:value 1 and 2 twice each",
    "core/property/nodeKind-001": "the same value failing the sh:nodeKind of several property "
    "shapes of one node shape",
    "core/property/property-001": "the same sh:class result reached through two values",
    "core/property/qualifiedValueShapesDisjoint-001": "two property shapes on one path, each "
    "with its sh:qualifiedMinCount",
    "core/property/uniqueLang-001": "one sh:uniqueLang result per repeated language",
    "core/validation-reports/shared": "a property shape shared by two property shapes",
    "sparql/component/optional-001": "the same result from two node shapes (counted as an "
    "unevaluable deviation all the same)",
}

# Tests that pass under a reading of the project's, asserted to be the only ones.
READINGS: dict[str, str] = {
    "core/misc/severity-002": "sh:severity ex:MySeverity is read as sh:Violation: the project "
    "has three severities, and one it does not know is not advisory",
}

# The suite is about what the shapes say, not how long they take: shacl-shacl validating
# itself takes pySHACL seconds, more than the default bound on a loaded machine
# (tests/test_hostile_shapes.py holds the bound).
SUITE_BOUND = 300.0

FIGURES_VERSION = "0.40.1"
# The figures for pySHACL 0.40.1's copy of the suite: how many tests, and how each ends.
# "compiled": every shape of the test is compiled; "pyshacl": every shape goes to pySHACL;
# "both": some of each. Update deliberately.
EXPECTED_FIGURES = {
    "tests": 121, "core": 98, "sparql": 23,
    # sh:in (core/property/in-001) is compiled since issue 35
    "passed compiled": 11, "passed pyshacl": 89, "passed both": 3,
    "passed sht:Failure (unevaluable)": 7,
    f"deviation {UNEVALUABLE}": 7, f"deviation {DIFFERS}": 4,
    "passed again with the compiled shapes on pySHACL": 14,
}


class Outcome(NamedTuple):
    passed: bool
    kind: str  # "pass", UNEVALUABLE, DIFFERS
    route: str  # "compiled", "pyshacl", "both", "unsupported", "none"
    detail: str


def _tests() -> list[suite.SuiteTest]:
    return suite.tests(ROOT) if PRESENT else []


TESTS = _tests()
BY_NAME = {t.name: t for t in TESTS}


def test_the_suite_is_present() -> None:
    if PRESENT:
        return
    if suite.skipped_by_request():
        pytest.skip(f"the W3C SHACL suite is not fetched and {suite.OPT_OUT} is set")
    pytest.fail(f"the W3C SHACL test suite is not at {ROOT}: run `python {suite.FETCH}` "
                f"(it extracts it from the installed pySHACL's sdist; set {suite.OPT_OUT}=1 "
                "to run the tests offline without it)", pytrace=False)


def _shape_file(test: suite.SuiteTest, data: bytes | None = None) -> ShapeFile:
    data = test.shapes.read_bytes() if data is None else data
    return ShapeFile(test.shapes.relative_to(ROOT).as_posix(), suite.url_of(ROOT, test.shapes),
                     data, hashlib.sha256(data).hexdigest())


def _store(test: suite.SuiteTest) -> pyoxigraph.Store:
    store = pyoxigraph.Store()
    store.extend(pyoxigraph.Quad(q.subject, q.predicate, q.object, DATA_GRAPH)
                 for q in suite.parse(ROOT, test.data))
    return store


def _route(shapes: ProfileShapes) -> str:
    engines = {r.engine for r in shapes.routes}
    if ROUTE_UNSUPPORTED in engines:
        return "unsupported"
    if engines == {ROUTE_COMPILED}:
        return "compiled"
    if engines == {ROUTE_PYSHACL}:
        return "pyshacl"
    return "both" if engines else "none"


_SEVERITY = {suite.SH + "Warning": Severity.WARNING, suite.SH + "Info": Severity.INFO}
Key = tuple[str | None, str | None, str | None, Severity, str]


def _expected_key(test: suite.SuiteTest, expected: suite.Expected) -> Key:
    identity = test.data == test.manifest

    def term(node: Any) -> str | None:
        if node is None:
            return None
        if isinstance(node, pyoxigraph.NamedNode):
            return node.value
        if isinstance(node, pyoxigraph.BlankNode):
            return f"_:{node.value}" if identity else "_:"
        return str(node)

    path = expected.path
    return (term(expected.focus),
            None if path is None else path.value if isinstance(path, pyoxigraph.NamedNode)
            else "(a complex path)",
            term(expected.value),
            _SEVERITY.get(expected.severity.value, Severity.ERROR),
            expected.component.value.rpartition("#")[2])


def _our_key(test: suite.SuiteTest, result: Result) -> Key:
    identity = test.data == test.manifest

    def term(text: str | None) -> str | None:
        if text is not None and text.startswith("_:") and not identity:
            return "_:"
        return text

    return (term(result.focus), result.path, term(result.value), result.severity,
            result.component)


def _compare(test: suite.SuiteTest, shapes: ProfileShapes, results: list[Result]) -> str:
    """What differs from the expected report ("" when nothing does)."""
    problems = []
    if (not results) != test.conforms:
        problems.append(f"conforms {not results}, expected {test.conforms}")
    expected = {_expected_key(test, e) for e in test.results}
    ours = {_our_key(test, r) for r in results}
    if expected - ours:
        problems.append(f"missing {sorted(expected - ours, key=str)}")
    if ours - expected:
        problems.append(f"unexpected {sorted(ours - expected, key=str)}")
    for e in test.results:
        if e.messages and not any(_our_key(test, r) == _expected_key(test, e)
                                  and r.message in e.messages for r in results):
            problems.append(f"no result says one of {e.messages}")
    routed = {r.shape for r in shapes.routes}
    problems.extend(f"a result of {r.shape}, which is not a routed shape"
                    for r in results if r.shape not in routed)
    return "; ".join(problems)


def _outcome(test: suite.SuiteTest, shapes: ProfileShapes) -> Outcome:
    route = _route(shapes)
    try:
        results = shapes.results(_store(test))
    except Unevaluable as exc:
        if test.failure:
            return Outcome(True, "pass", route, f"unevaluable: {exc}")
        return Outcome(False, UNEVALUABLE, route, str(exc))
    if test.failure:
        return Outcome(False, DIFFERS, route, f"{len(results)} result(s), expected a failure")
    problems = _compare(test, shapes, results)
    return Outcome(not problems, "pass" if not problems else DIFFERS, route, problems)


@cache
def run(name: str) -> Outcome:
    test = BY_NAME[name]
    try:
        shapes = ProfileShapes((_shape_file(test),), SUITE_BOUND)
    except ShapesUnreadable as exc:
        return Outcome(test.failure, "pass" if test.failure else UNEVALUABLE, "none", str(exc))
    return _outcome(test, shapes)


@cache
def run_on_pyshacl(name: str) -> Outcome | None:
    """The test again, with its compiled shapes made non-compilable (None when none is)."""
    test = BY_NAME[name]
    shapes = ProfileShapes((_shape_file(test),), SUITE_BOUND)
    compiled = {c.name for c in shapes.compiled}
    if not compiled:
        return None
    quads = list(suite.parse(ROOT, test.shapes))
    # Shapes are named by IRI (a blank one by its place in the file, not used here).
    subjects = {q.subject for q in quads if shapes.name_of(q.subject) in compiled}
    assert len(subjects) == len(compiled), "a compiled blank shape: name it another way"
    quads += [pyoxigraph.Quad(s, pyoxigraph.NamedNode(suite.SH + "deactivated"),
                              pyoxigraph.Literal(False), pyoxigraph.DefaultGraph())
              for s in subjects]
    forced = ProfileShapes((_shape_file(test, pyoxigraph.serialize(
        quads, format=pyoxigraph.RdfFormat.N_QUADS)),), SUITE_BOUND)
    assert {r.engine for r in forced.routes} == {ROUTE_PYSHACL}
    return _outcome(test, forced)


@pytest.mark.parametrize("name", [t.name for t in TESTS])
def test_suite_entry(name: str) -> None:
    outcome = run(name)
    if name in DEVIATIONS:
        kind, reason = DEVIATIONS[name]
        assert not outcome.passed, f"{name} passes now: take it out of DEVIATIONS ({reason})"
        assert outcome.kind == kind, f"{name}: {outcome.kind}, recorded {kind}: {outcome.detail}"
        return
    assert outcome.passed, f"{name} ({outcome.route} route): {outcome.detail}"


@pytest.mark.parametrize("name", [t.name for t in TESTS])
def test_suite_entry_on_pyshacl(name: str) -> None:
    outcome = run_on_pyshacl(name)
    if outcome is None:
        return
    assert name not in DEVIATIONS
    assert outcome.passed, f"{name} (compiled shapes on pySHACL): {outcome.detail}"


def test_the_figures() -> None:
    """How many tests there are and how each ends, by route and by reason: a change in the
    suite, in pySHACL or in the routing shows here."""
    if not PRESENT:
        pytest.skip("the suite is absent (test_the_suite_is_present says why)")
    figures: Counter[str] = Counter(tests=len(TESTS))
    for test in TESTS:
        figures[test.name.partition("/")[0]] += 1
        outcome = run(test.name)
        if not outcome.passed:
            figures[f"deviation {outcome.kind}"] += 1
        elif test.failure:
            figures["passed sht:Failure (unevaluable)"] += 1
        else:
            figures[f"passed {outcome.route}"] += 1
        again = run_on_pyshacl(test.name)
        if again is not None and again.passed:
            figures["passed again with the compiled shapes on pySHACL"] += 1
    assert {k: v for k, v in figures.items() if v} == {
        k: v for k, v in EXPECTED_FIGURES.items() if v}, (
        f"the figures are pySHACL {FIGURES_VERSION}'s; pySHACL {metadata.version('pyshacl')} "
        "is installed")


def test_the_tables_name_real_tests_exactly() -> None:
    if not PRESENT:
        pytest.skip("the suite is absent (test_the_suite_is_present says why)")
    assert set(DEVIATIONS) | set(REPEATED) | set(READINGS) <= set(BY_NAME)
    repeated = {t.name for t in TESTS
                if max(Counter(_expected_key(t, e) for e in t.results).values(), default=1) > 1}
    assert repeated == set(REPEATED)
    known = {suite.SH + "Violation", suite.SH + "Warning", suite.SH + "Info"}
    readings = {t.name for t in TESTS if any(e.severity.value not in known for e in t.results)}
    assert readings == set(READINGS)


def test_no_suite_test_depends_on_the_reading_of_dollar() -> None:
    """Our ``$`` ends the string, Python's also matches before a final newline: the suite
    cannot tell them apart, since none of its data values ends in a newline."""
    if not PRESENT:
        pytest.skip("the suite is absent (test_the_suite_is_present says why)")
    for test in TESTS:
        for q in suite.parse(ROOT, test.data):
            assert not (isinstance(q.object, pyoxigraph.Literal)
                        and q.object.value.endswith("\n")), test.name


def test_the_opt_out_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(suite.OPT_OUT, "1")
    assert suite.skipped_by_request()
    monkeypatch.setenv(suite.OPT_OUT, "0")
    assert not suite.skipped_by_request()
    monkeypatch.delenv(suite.OPT_OUT)
    assert not suite.skipped_by_request()


def _sdist(path: Path, members: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return path


def test_the_fetch_script_extracts_only_the_suite(tmp_path: Path) -> None:
    archive = _sdist(tmp_path / "pyshacl-9.tar.gz", {
        "pyshacl-9/test/resources/sht_tests/manifest.ttl": b"<> a <x> .",
        "pyshacl-9/test/resources/sht_tests/core/a.ttl": b"",
        "pyshacl-9/test/resources/sht_tests/../../../escape.ttl": b"",
        "pyshacl-9/pyshacl/__init__.py": b"",
    }, links=("pyshacl-9/test/resources/sht_tests/core/link.ttl",))
    target = tmp_path / "out"
    assert fetch.extract(archive, target) == 2
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")
                  if p.is_file()) == ["core/a.ttl", "manifest.ttl"]
    assert not (tmp_path / "escape.ttl").exists()


def test_the_fetch_script_does_nothing_when_the_suite_is_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "CACHE", tmp_path / "cache")
    archive = _sdist(tmp_path / "pyshacl-9.tar.gz", {
        "pyshacl-9/test/resources/sht_tests/manifest.ttl": b"<> a <x> ."})
    assert fetch.main(["--sdist", str(archive)]) == 0
    manifest = fetch.suite_dir(metadata.version("pyshacl")) / "manifest.ttl"
    assert manifest.read_bytes() == b"<> a <x> ."
    # there: not read again (the archive is gone)
    archive.unlink()
    assert fetch.main(["--sdist", str(archive)]) == 0


def test_the_fetch_script_says_why_it_cannot(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "CACHE", tmp_path / "cache")
    not_an_sdist = _sdist(tmp_path / "other.tar.gz", {"other/README": b""})
    with pytest.raises(SystemExit, match=r"holds no test/resources/sht_tests/manifest\.ttl"):
        fetch.main(["--sdist", str(not_an_sdist)])
    (tmp_path / "broken.tar.gz").write_bytes(b"not gzip")
    with pytest.raises(SystemExit, match="cannot read"):
        fetch.main(["--sdist", str(tmp_path / "broken.tar.gz")])
    assert not fetch.suite_dir(metadata.version("pyshacl")).exists()
