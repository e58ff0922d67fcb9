"""The shipped `legal-translation` profile and its SHACL shapes (draft 5.4), beyond what the
data-driven cases (tests/cases/compatibility/legal-* and shapes-*) can say: how its shapes
are routed, that it works by name from any folder, what a profile author is told when a shape
file cannot be read, and that the worked examples of docs/profiles.md run as written.

Requirements: R-5.4-2 (the accepted profile's required constraints are evaluated), R-5.4-5
(SHACL expresses them).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pyoxigraph
import pytest

from ioa_semantic import Checker, ConfigurationError, Verdict
from ioa_semantic.data import read_bytes, shipped_profiles

from support import AT, EXAMPLES, IOA_CHECK, ROOT

AT_INSTANT = datetime(2026, 6, 1, tzinfo=UTC)
SH = "http://www.w3.org/ns/shacl#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SHAPES = "https://example.org/profiles/legal-translation/shapes#"
SHAPES_FILE = "legal-translation.shapes.ttl"
# Where each shape of the shipped profile is evaluated, as its comments and the README's
# table say: in the compiled subset, or by pySHACL.
ROUTES = {
    "EnvelopeContextShape": "compiled",
    "TermBindingLimitShape": "compiled",
    "JurisdictionShape": "compiled",
    "TargetLanguageShape": "compiled",
    "DistinctLanguagesShape": "pyshacl",
    "TermBindingAdviceShape": "pyshacl",
}
# The examples, under --param jurisdiction=DE: verdict, the codes of their reasons.
EXAMPLE_OUTCOMES = {
    "legal-contract.jsonld": ("compatible", []),
    "legal-contract-into-japanese.jsonld": ("incompatible", ["constraint.shape-violated"]),
    "legal-contract-unbound-terms.jsonld": ("compatible", ["constraint.shape-warning"]),
}
EXIT = {"compatible": 0, "incompatible": 1, "indeterminate": 3, "invalid": 4}


def ioa_check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "NO_COLOR": "1"})


# --- the shipped profile -------------------------------------------------------------------


def test_the_shipped_shapes_are_routed_as_documented() -> None:
    checker = Checker("legal-translation")
    assert checker.constraints is not None
    routes = {r.shape.removeprefix(SHAPES): r.engine for r in checker.constraints.routes}
    assert routes == ROUTES
    assert {r.source for r in checker.constraints.routes} == {SHAPES_FILE}
    # The table of the shapes in docs/profiles.md says the same.
    page = (ROOT / "docs" / "profiles.md").read_text()
    for shape, engine in ROUTES.items():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{shape}` |"))
        assert row.rstrip(" |").endswith({"compiled": "compiled", "pyshacl": "pySHACL"}[engine]), row


def test_every_shipped_shape_is_named_labelled_explained_and_has_a_message() -> None:
    quads = list(pyoxigraph.parse(read_bytes("profiles", SHAPES_FILE),
                                  pyoxigraph.RdfFormat.TURTLE))
    by_subject: dict[object, dict[str, list[object]]] = {}
    for q in quads:
        by_subject.setdefault(q.subject, {}).setdefault(q.predicate.value, []).append(q.object)

    def messages(node: object) -> list[object]:
        props = by_subject.get(node, {})
        found = list(props.get(SH + "message", []))
        for key in (SH + "property", SH + "sparql"):
            for child in props.get(key, []):
                found.extend(messages(child))
        return found

    shapes = [s for s, p in by_subject.items() if SH + "targetClass" in p]
    assert sorted(s.value.removeprefix(SHAPES) for s in shapes  # type: ignore[attr-defined]
                  ) == sorted(ROUTES)
    for shape in shapes:
        assert isinstance(shape, pyoxigraph.NamedNode), shape
        props = by_subject[shape]
        assert props.get(RDFS + "label") and props.get(RDFS + "comment"), shape
        assert messages(shape), f"{shape} has no sh:message"


def test_the_shape_file_is_shipped_beside_the_profile_and_is_not_a_profile(tmp_path: Path) -> None:
    assert shipped_profiles()["legal-translation"] == "legal-translation.ttl"
    assert not any(name.endswith(".shapes") for name in shipped_profiles())
    listing = ioa_check("--list", cwd=tmp_path)
    assert listing.returncode == 0
    names = [line.strip() for line in listing.stdout.splitlines()]
    assert "legal-translation" in names and "legal-translation.shapes" not in names


def test_a_decision_depends_on_the_shape_file_by_its_digest() -> None:
    decision = Checker("legal-translation").check(
        (EXAMPLES / "legal-contract.jsonld").read_bytes(), params={"jurisdiction": "DE"},
        at=AT_INSTANT)
    assert decision.verdict is Verdict.COMPATIBLE
    digest = hashlib.sha256(read_bytes("profiles", SHAPES_FILE)).hexdigest()
    assert decision.as_dict()["dependencies"]["profile"]["shapes"] == [
        {"reference": SHAPES_FILE, "sha256": digest}]


@pytest.mark.parametrize("name", sorted(EXAMPLE_OUTCOMES))
def test_each_example_through_the_library_and_the_command_from_another_folder(
        name: str, tmp_path: Path) -> None:
    verdict, codes = EXAMPLE_OUTCOMES[name]
    decision = Checker("legal-translation").check(
        (EXAMPLES / name).read_bytes(), params={"jurisdiction": "DE"}, at=AT_INSTANT)
    assert decision.verdict.value == verdict
    assert sorted({f.code for f in decision.findings}) == codes
    # The installed command, by the profile's name, in a folder that is not the repository.
    run = ioa_check(str(EXAMPLES / name), "--profile", "legal-translation", "--param",
                    "jurisdiction=DE", "--at", AT, "--format", "json", cwd=tmp_path)
    assert run.returncode == EXIT[verdict], run.stderr
    result = json.loads(run.stdout)
    assert result["verdict"] == verdict
    assert sorted({r["code"] for r in result["reasons"]}) == codes


def test_every_violated_shape_is_a_reason_of_its_own() -> None:
    """Rule 14: a jurisdiction that is no code (compiled), a target outside the EU's
    languages (sh:in) and equal languages (SPARQL): three reasons, one a shape."""
    case = ROOT / "tests" / "cases" / "compatibility" / "legal-every-shape-reported"
    decision = Checker("legal-translation").check(
        (case / "envelope.jsonld").read_bytes(), params={"jurisdiction": "de"}, at=AT_INSTANT)
    assert decision.verdict is Verdict.INCOMPATIBLE
    violated = [f for f in decision.findings if f.code == "constraint.shape-violated"]
    assert len(violated) == 3
    for shape in ("JurisdictionShape", "TargetLanguageShape", "DistinctLanguagesShape"):
        assert sum(SHAPES + shape + " " in f.message for f in violated) == 1, shape
    assert {f.path for f in violated} == {"urn:ioa-semantic:task"}


# The 24 official languages of the EU (Regulation No 1, as amended), ISO 639-1.
EU_LANGUAGES = sorted([
    "bg", "cs", "da", "de", "el", "en", "es", "et", "fi", "fr", "ga", "hr", "hu", "it", "lt",
    "lv", "mt", "nl", "pl", "pt", "ro", "sk", "sl", "sv"])


@pytest.mark.parametrize("language", EU_LANGUAGES)
def test_each_official_language_of_the_eu_is_a_target_the_profile_permits(language: str) -> None:
    decision = Checker("legal-translation").check(
        (EXAMPLES / "legal-contract.jsonld").read_bytes(),
        params={"jurisdiction": "DE", "targetLang": language, "sourceLang": "ja"}, at=AT_INSTANT)
    assert "constraint.shape-violated" not in [f.code for f in decision.findings], language


def test_a_target_outside_them_is_renegotiated_towards_exactly_them() -> None:
    decision = Checker("legal-translation").check(
        (EXAMPLES / "legal-contract-into-japanese.jsonld").read_bytes(), at=AT_INSTANT)
    assert decision.verdict is Verdict.INCOMPATIBLE
    (renegotiate,) = [r for r in decision.remedies if r.action == "renegotiate"]
    assert renegotiate.codes == ("constraint.shape-violated",)
    assert dict(renegotiate.details) == {
        "field": "targetLang", "permitted": tuple(EU_LANGUAGES),
        "shape": "https://example.org/profiles/legal-translation/shapes#TargetLanguageShape"}


def test_a_sparql_constraint_is_renegotiated_by_its_shape_not_a_field() -> None:
    """Issue 34: a SHACL-SPARQL constraint has no path; its remedy named the shape's IRI as
    the "field" to change, and said "the profile permits none" although any two distinct
    languages pass. It now names the shape to meet and lists nothing."""
    folder = Path(__file__).parent / "cases" / "compatibility" / "legal-same-source-and-target-language"
    decision = Checker("legal-translation").check(
        (folder / "envelope.jsonld").read_bytes(), params={"jurisdiction": "DE"}, at=AT_INSTANT)
    (renegotiate,) = [r for r in decision.remedies if r.action == "renegotiate"]
    assert dict(renegotiate.details) == {
        "shape": "https://example.org/profiles/legal-translation/shapes#DistinctLanguagesShape",
        "permitted": ()}
    from ioa_semantic.reporters.check import describe

    assert describe(renegotiate) == ("renegotiate to meet the profile's shape "
                                     "https://example.org/profiles/legal-translation/shapes"
                                     "#DistinctLanguagesShape")


# --- what a profile author is told ---------------------------------------------------------


def _profile_naming(folder: Path, shapes: str) -> Path:
    text = read_bytes("profiles", "legal-translation.ttl").decode()
    text = text.replace(f'iop:shapes "{SHAPES_FILE}"', f'iop:shapes "{shapes}"')
    path = folder / "profile.ttl"
    path.write_text(text)
    return path


def test_a_shape_file_that_is_not_turtle_is_a_configuration_error(tmp_path: Path) -> None:
    profile = _profile_naming(tmp_path, "broken.shapes.ttl")
    (tmp_path / "broken.shapes.ttl").write_text("ex:Shape a sh:NodeShape ; this is not Turtle")
    with pytest.raises(ConfigurationError, match=r"broken\.shapes\.ttl: not valid Turtle"):
        Checker(str(profile))
    run = ioa_check(str(EXAMPLES / "legal-contract.jsonld"), "--profile", "profile.ttl",
                    "--at", AT, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert "broken.shapes.ttl" in run.stderr and "Traceback" not in run.stderr


def test_a_shape_file_that_is_missing_is_a_configuration_error(tmp_path: Path) -> None:
    _profile_naming(tmp_path, "absent.shapes.ttl")
    run = ioa_check(str(EXAMPLES / "legal-contract.jsonld"), "--profile", "profile.ttl",
                    "--at", AT, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert "absent.shapes.ttl" in run.stderr and "Traceback" not in run.stderr


def test_a_shape_file_is_read_beside_its_profile_whatever_the_working_folder(
        tmp_path: Path) -> None:
    """A relative iop:shapes is the profile's folder's, not the command's."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    _profile_naming(folder, "mine.shapes.ttl")
    shutil.copy(ROOT / "ioa_semantic" / "data" / "profiles" / SHAPES_FILE,
                folder / "mine.shapes.ttl")
    run = ioa_check(str(EXAMPLES / "legal-contract-into-japanese.jsonld"), "--profile",
                    "profiles/profile.ttl", "--param", "jurisdiction=DE", "--at", AT,
                    "--format", "json", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert [r["code"] for r in json.loads(run.stdout)["reasons"]] == ["constraint.shape-violated"]


# --- docs/profiles.md ----------------------------------------------------------------------


def _profiles_page_blocks() -> list[str]:
    """The sh blocks of docs/profiles.md's "Domain constraints in SHACL" (once the README's)."""
    page = (ROOT / "docs" / "profiles.md").read_text()
    start = page.index("## Domain constraints in SHACL")
    section = page[start:page.index("\n## ", start + 1)]
    blocks = []
    while "```sh\n" in section:
        start = section.index("```sh\n") + len("```sh\n")
        end = section.index("```\n", start)
        blocks.append(section[start:end])
        section = section[end + 4:]
    return blocks


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(IOA_CHECK).parent}{os.pathsep}{os.environ['PATH']}",
           "NO_COLOR": "1"}
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env, check=False)


def test_the_profiles_pages_worked_example_runs_as_written_in_an_empty_folder(tmp_path: Path) -> None:
    """The profile, its shape and the envelope are written by the example itself; the last
    check (French law) is incompatible, the one before (Austrian law) compatible."""
    worked, _ = _profiles_page_blocks()
    run = _bash(worked, tmp_path)
    assert run.returncode == 1, run.stderr
    out = run.stdout
    assert "legal-de.ttl: ok" in out
    verdicts = [line.split()[0] for line in out.splitlines() if line.endswith(" revision 1")]
    assert verdicts == ["COMPATIBLE", "INCOMPATIBLE"], out
    assert out.count("error constraint.shape-violated") == 1
    assert "the jurisdiction must be DE, AT, CH or LI" in out


def test_the_profiles_pages_shipped_profile_commands_run_as_written(tmp_path: Path) -> None:
    _, shipped = _profiles_page_blocks()
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    run = _bash(shipped, tmp_path)
    assert run.returncode == 0, run.stderr  # the last: compatible, with the advice
    out = run.stdout
    verdicts = [line.split()[0] for line in out.splitlines() if line.endswith(" revision 1")]
    assert verdicts == ["COMPATIBLE", "INCOMPATIBLE", "COMPATIBLE"], out
    assert "constraint.shape-violated" in out and "constraint.shape-warning" in out


def test_the_constraints_pages_worked_example_decides_as_it_says(tmp_path: Path) -> None:
    """docs/constraints.md's worked example, its blocks run in order in an empty folder (they
    write the profile, its shapes and the envelope): the four checks it lists, in order:
    compatible with the advice, compatible, incompatible (the jurisdiction), indeterminate
    (no jurisdiction)."""
    page = (ROOT / "docs" / "constraints.md").read_text()
    page = page[page.index("## A worked example"):]
    commands = "\n".join(block.split("```", 1)[0] for block in page.split("```sh\n")[1:])
    run = _bash(commands, tmp_path)
    assert run.returncode == 3, run.stderr
    verdicts = [line.split()[0] for line in run.stdout.splitlines() if line.endswith(" revision 1")]
    assert verdicts == ["COMPATIBLE", "COMPATIBLE", "INCOMPATIBLE", "INDETERMINATE"], run.stdout
    checks = run.stdout.split(" revision 1\n")[1:]
    assert "constraint.shape-warning" in checks[0] and "constraint." not in checks[1]
    assert "constraint.shape-violated" in checks[2]
    assert "constraint.missing-parameter" in checks[3] and "shape-violated" not in checks[3]
