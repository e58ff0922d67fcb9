"""``ioa-check lint`` of a profile's shape files, and ``ioa-check lint --explain``.

``lint --profile P`` reads each shape file P names as a check would: a file that is not
Turtle is an error with its line, SHACL that SHACL's own shapes (shacl-shacl) reject is an
error naming the shape node, a shape routed ``unsupported`` is an error (every check would
be indeterminate), and a file with no shape that has a target is a warning (exit 0).
``lint --explain FILE...`` (shape files) and ``lint --profile P --explain`` list each
top-level shape's engine: exit 0 when the files could be read, 2 when not.

The command runs as a subprocess (``python -m ioa_semantic`` from a folder of its own) where
the process matters (exit status, the two formats), and in-process through ``main(argv)``
for the rest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import data as _resources
from ioa_semantic.cli.main import main

PREFIXES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <https://ex.org/> .
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
@prefix param: <https://ioa-semantic.org/ns/parameter#> .
"""
CLEAN = PREFIXES + """
ex:Task a sh:NodeShape ;
    sh:targetClass iop:TaskParameters ;
    sh:property [ sh:path param:targetLang ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:message "name one target language" ] .
"""
# Line 6 lacks the ';' before sh:property: the parser stops at line 7.
BROKEN = PREFIXES + """<https://ex.org/S> a sh:NodeShape ;
    sh:targetClass ex:C
    sh:property [ sh:path ex:p ] .
"""
MIXED = PREFIXES + """
ex:Compiled a sh:NodeShape ; sh:targetClass ex:C ;
    sh:property [ sh:path ex:p ; sh:maxCount 1 ] .
ex:In a sh:NodeShape ; sh:targetClass ex:C ;
    sh:property [ sh:path ex:q ; sh:in ( "a" "b" ) ] .
ex:Or a sh:NodeShape ; sh:targetClass ex:C ;
    sh:or ( [ sh:class ex:A ] [ sh:class ex:B ] ) .
ex:Sparql a sh:NodeShape ; sh:targetClass ex:C ;
    sh:sparql [ sh:select "SELECT $this WHERE { $this <https://ex.org/p> ?v }" ] .
ex:Rule a sh:NodeShape ; sh:targetClass ex:C ;
    sh:rule [ a sh:TripleRule ; sh:subject sh:this ; sh:predicate ex:r ; sh:object ex:o ] .
[] a sh:NodeShape ; sh:targetClass ex:D ; sh:property [ sh:path ex:p ; sh:minCount 1 ] .
"""
MIXED_ENGINES = {"https://ex.org/Compiled": "compiled", "https://ex.org/In": "compiled",
                 "https://ex.org/Or": "pyshacl", "https://ex.org/Sparql": "pyshacl",
                 "https://ex.org/Rule": "unsupported", "mixed.shapes.ttl#blank-11": "compiled"}


def write_profile(folder: Path, shapes: dict[str, str], name: str = "p.ttl") -> Path:
    """The shipped profile, naming ``shapes`` (written beside it) as its shape files."""
    text = _resources.read_bytes("profiles", _resources.shipped_profiles()["cs-translation"])
    for file, body in shapes.items():
        (folder / file).write_text(body)
    named = ", ".join(f'"{file}"' for file in shapes)
    profile = folder / name
    profile.write_text(text.decode() + f"\n<https://example.org/profiles/cs-translation> "
                                       f"iop:shapes {named} .\n")
    return profile


def ioa_check(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ioa_semantic", *args], cwd=folder,
                          capture_output=True, text=True, timeout=120, check=False)


def lint_json(folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
              *args: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """``main(["lint", *args, "--format", "json"])`` run in ``folder``: the status and each
    file's record by its name."""
    monkeypatch.chdir(folder)
    status = main(["lint", *args, "--format", "json"])
    out = capsys.readouterr().out
    records = [json.loads(line) for line in out.splitlines()]
    return status, {r["file"]: r for r in records}


def components(record: dict[str, Any]) -> list[str]:
    return [p["message"].rpartition("[shacl-shacl ")[2].rstrip("]") for p in record["problems"]
            if "[shacl-shacl " in p["message"]]


# --- lint --profile: the shape files --------------------------------------------------------


def test_a_clean_shape_file_is_ok_in_both_formats(tmp_path: Path) -> None:
    write_profile(tmp_path, {"clean.shapes.ttl": CLEAN})
    text = ioa_check(tmp_path, "lint", "--profile", "p.ttl")
    assert (text.returncode, text.stdout) == (0, "clean.shapes.ttl: ok\n"), text.stderr
    as_json = ioa_check(tmp_path, "lint", "--profile", "p.ttl", "--format", "json")
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout) == {"file": "clean.shapes.ttl", "ok": True, "problems": []}


def test_a_turtle_syntax_error_is_an_error_with_its_line(tmp_path: Path) -> None:
    write_profile(tmp_path, {"broken.shapes.ttl": BROKEN, "clean.shapes.ttl": CLEAN})
    proc = ioa_check(tmp_path, "lint", "--profile", "p.ttl")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        "broken.shapes.ttl: line 7: not valid Turtle: A dot is expected at the end of statements",
        "clean.shapes.ttl: ok"]
    as_json = ioa_check(tmp_path, "lint", "--profile", "p.ttl", "--format", "json")
    broken = json.loads(as_json.stdout.splitlines()[0])
    assert broken["ok"] is False and broken["problems"][0]["line"] == 7


@pytest.mark.parametrize(("body", "node", "component"), [
    # sh:minCount must be an xsd:integer
    ('ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property [ sh:path ex:p ; '
     'sh:minCount "x" ] .', "bad.shapes.ttl#blank-1", "DatatypeConstraintComponent"),
    # a property shape needs exactly one sh:path
    ("ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property ex:P .\n"
     "ex:P sh:minCount 1 .", "https://ex.org/P", "MinCountConstraintComponent"),
    # a path is an IRI or a SHACL path, never a literal
    ('ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property [ sh:path "p" ] .',
     "bad.shapes.ttl#blank-1", "OrConstraintComponent"),
    # a target class is an IRI
    ('ex:S a sh:NodeShape ; sh:targetClass "C" .', "https://ex.org/S",
     "NodeKindConstraintComponent"),
])
def test_shacl_that_shacl_shacl_rejects_is_an_error_naming_the_shape_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        body: str, node: str, component: str) -> None:
    write_profile(tmp_path, {"bad.shapes.ttl": PREFIXES + body})
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    bad = files["bad.shapes.ttl"]
    assert status == 1 and bad["ok"] is False
    assert components(bad) == [component]
    assert [p["shape"] for p in bad["problems"]] == [node]


def test_a_property_shape_is_named_with_the_shape_it_belongs_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_profile(tmp_path, {"bad.shapes.ttl": PREFIXES + (
        'ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property [ sh:path ex:p ; '
        'sh:minCount "x" ] .')})
    _, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    (problem,) = files["bad.shapes.ttl"]["problems"]
    assert problem["message"].startswith(
        'shape bad.shapes.ttl#blank-1 (in shape https://ex.org/S): sh:minCount "x": ')


def test_a_shape_routed_unsupported_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_profile(tmp_path, {"rule.shapes.ttl": PREFIXES + (
        "ex:Rule a sh:NodeShape ; sh:targetClass ex:C ;\n"
        "    sh:rule [ a sh:TripleRule ; sh:subject sh:this ; sh:predicate ex:r ; "
        "sh:object ex:o ] .\n"), "clean.shapes.ttl": CLEAN})
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    assert status == 1 and files["clean.shapes.ttl"]["ok"] is True
    (problem,) = files["rule.shapes.ttl"]["problems"]
    assert problem["severity"] == "error" and problem["shape"] == "https://ex.org/Rule"
    assert "sh:rule" in problem["message"]
    assert "constraint.shape-unevaluable" in problem["message"]


@pytest.mark.parametrize(("query", "problem"), [
    ("SELECT $this WHERE { VALUES ?v { 1 } $this ex:p ?v }", "it uses VALUES"),
    ("SELECT $this WHERE { $this ex:p ?v MINUS { $this ex:q ?v } }", "it uses MINUS"),
    ("SELECT $this WHERE { SERVICE <https://elsewhere.example/sparql> { $this ex:p ?v } }",
     "it uses SERVICE"),
    ("SELECT $this WHERE { BIND (ex:x AS ?this) }", "binds the pre-bound variable ?this"),
    ("SELECT $this WHERE { { SELECT ?v WHERE { $this ex:p ?v } } }",
     "does not project the pre-bound variable $this"),
    ("SELECT $this WHERE { $this ex:p }", "is not SPARQL 1.1"),
])
def test_a_sparql_constraint_shacl_does_not_allow_is_named_by_lint_and_by_every_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        query: str, problem: str) -> None:
    """Issue 34: lint ran a SHACL-SPARQL query through nothing; one with VALUES (which
    SHACL forbids) passed, and every check under the profile was then indeterminate without
    naming the shape. Now lint names it and why, and so does every check's reason."""
    body = PREFIXES + (f'ex:Bad a sh:NodeShape ; sh:targetClass iop:TaskParameters ;\n'
                       f'    sh:prefixes ex: ;\n    sh:sparql [ sh:select """{query}""" ] .\n'
                       'ex: sh:declare [ sh:prefix "ex" ; sh:namespace "https://ex.org/" ] .\n')
    profile = write_profile(tmp_path, {"bad.shapes.ttl": body})
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    (found,) = files["bad.shapes.ttl"]["problems"]
    assert status == 1 and found["shape"] == "https://ex.org/Bad"
    assert problem in found["message"]
    from ioa_semantic import Checker, Verdict

    decision = Checker(str(profile)).check(
        (Path(__file__).parent / "cases" / "compatibility" / "draft-6.2-envelope"
         / "envelope.jsonld").read_bytes())
    assert decision.verdict is Verdict.INDETERMINATE
    (reason,) = [f for f in decision.findings if f.code == "constraint.shape-unevaluable"]
    assert "https://ex.org/Bad" in reason.message and problem in reason.message


def test_a_file_in_which_no_shape_has_a_target_is_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_profile(tmp_path, {"loose.shapes.ttl": PREFIXES + (
        "ex:P a sh:PropertyShape ; sh:path ex:p ; sh:minCount 1 .\n")})
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "--profile", "p.ttl"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("loose.shapes.ttl: warning: no shape in it has a target")
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    assert status == 0 and files["loose.shapes.ttl"]["ok"] is True
    assert [p["severity"] for p in files["loose.shapes.ttl"]["problems"]] == ["warning"]


def test_the_files_are_judged_together_as_the_check_routes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The node shape's property shape lives in the other file: judged alone, the first file
    # would hold a property shape without sh:path.
    write_profile(tmp_path, {
        "node.shapes.ttl": PREFIXES + "ex:S a sh:NodeShape ; sh:targetClass ex:C ; "
                                      "sh:property ex:P .\n",
        "property.shapes.ttl": PREFIXES + "ex:P a sh:PropertyShape ; sh:path ex:p ; "
                                          "sh:minCount 1 .\n"})
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    assert status == 0
    assert files["node.shapes.ttl"]["problems"] == []
    assert [p["severity"] for p in files["property.shapes.ttl"]["problems"]] == ["warning"]


def test_a_blank_shape_is_named_by_lint_as_explain_and_the_check_name_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Blank nodes are numbered across the files in order: the second file's blank shape is
    # not its own file's first.
    write_profile(tmp_path, {"a.shapes.ttl": CLEAN, "b.shapes.ttl": PREFIXES + (
        '[] a sh:NodeShape ; sh:targetNode ex:x ; sh:message 5 .\n')})
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    (problem,) = files["b.shapes.ttl"]["problems"]
    assert status == 1 and "sh:message" in problem["message"]
    explained = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl", "--explain")[1]
    (route,) = explained["b.shapes.ttl"]["shapes"]
    assert problem["shape"] == route["shape"] == "b.shapes.ttl#blank-2"


def test_a_shape_file_that_cannot_be_had_is_reported_and_the_others_linted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    profile = write_profile(tmp_path, {"clean.shapes.ttl": CLEAN})
    profile.write_text(profile.read_text() + (
        '<https://example.org/profiles/cs-translation> iop:shapes "missing.shapes.ttl", '
        '"https://shapes.example/pinned.shapes.ttl", "https://shapes.example/loose.shapes.ttl" ;\n'
        "  iop:retrieval [ iop:pin [ iop:url <https://shapes.example/pinned.shapes.ttl> ;\n"
        '    iop:sha256 "' + "0" * 64 + '" ] ] .\n'))
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    assert status == 1 and files["clean.shapes.ttl"]["ok"] is True
    assert "cannot be read" in files["missing.shapes.ttl"]["problems"][0]["message"]
    # Lint fetches nothing: a pinned remote file is left unchecked, and said so.
    pinned = files["https://shapes.example/pinned.shapes.ttl"]
    assert pinned["ok"] is True and pinned["problems"][0]["severity"] == "warning"
    loose = files["https://shapes.example/loose.shapes.ttl"]
    assert loose["ok"] is False and "not pinned" in loose["problems"][0]["message"]


def test_a_triple_term_is_an_error_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_profile(tmp_path, {"star.shapes.ttl": PREFIXES + (
        "ex:S a sh:NodeShape ; sh:targetClass ex:C ;\n"
        "    sh:property [ sh:path ex:p ; sh:hasValue <<( ex:a ex:b ex:c )>> ] .\n")})
    status, files = lint_json(tmp_path, monkeypatch, capsys, "--profile", "p.ttl")
    assert status == 1
    assert "triple term" in files["star.shapes.ttl"]["problems"][0]["message"]


def test_other_files_are_linted_as_before_and_the_profiles_shapes_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_profile(tmp_path, {"clean.shapes.ttl": CLEAN})
    (tmp_path / "plain.ttl").write_bytes(
        _resources.read_bytes("profiles", _resources.shipped_profiles()["cs-translation"]))
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "plain.ttl", "--profile", "p.ttl"]) == 0
    assert capsys.readouterr().out.splitlines() == ["plain.ttl: ok", "clean.shapes.ttl: ok"]
    # A profile that names no shape files adds nothing to a lint of other files.
    assert main(["lint", "plain.ttl", "--profile", "plain.ttl"]) == 0
    assert capsys.readouterr().out.splitlines() == ["plain.ttl: ok"]
    assert main(["lint", "--profile", "cs-translation"]) == 0
    assert capsys.readouterr().out == "cs-translation: ok (it names no shape files)\n"


# --- lint --explain -------------------------------------------------------------------------


def test_explain_names_each_shapes_engine_in_text_and_json(tmp_path: Path) -> None:
    (tmp_path / "mixed.shapes.ttl").write_text(MIXED)
    (tmp_path / "loose.shapes.ttl").write_text(
        PREFIXES + "ex:P a sh:PropertyShape ; sh:path ex:p .\n")
    text = ioa_check(tmp_path, "lint", "--explain", "mixed.shapes.ttl", "loose.shapes.ttl")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[-1].startswith("loose.shapes.ttl: no shape in it has a target")
    routes = [line.split(": ", 3) for line in lines[:-1]]
    assert {shape: engine for _, shape, engine, _ in routes} == MIXED_ENGINES
    assert {file for file, *_ in routes} == {"mixed.shapes.ttl"}
    assert [shape for _, shape, *_ in routes] == sorted(MIXED_ENGINES)  # stably ordered
    as_json = ioa_check(tmp_path, "lint", "--explain", "mixed.shapes.ttl", "loose.shapes.ttl",
                        "--format", "json")
    assert as_json.returncode == 0
    mixed, loose = (json.loads(line) for line in as_json.stdout.splitlines())
    assert {s["shape"]: s["engine"] for s in mixed["shapes"]} == MIXED_ENGINES
    assert all(s["why"] for s in mixed["shapes"])
    assert (mixed["file"], loose["file"], loose["shapes"]) == (
        "mixed.shapes.ttl", "loose.shapes.ttl", [])
    again = ioa_check(tmp_path, "lint", "--explain", "mixed.shapes.ttl", "loose.shapes.ttl")
    assert again.stdout == text.stdout


def test_explain_of_a_profile_explains_all_its_shape_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_profile(tmp_path, {"clean.shapes.ttl": CLEAN, "mixed.shapes.ttl": MIXED})
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "--profile", "p.ttl", "--explain"]) == 0
    by_profile = capsys.readouterr().out
    assert main(["lint", "--explain", "clean.shapes.ttl", "mixed.shapes.ttl"]) == 0
    assert capsys.readouterr().out == by_profile
    assert by_profile.splitlines()[0] == (
        "clean.shapes.ttl: https://ex.org/Task: compiled: SHACL Core in the compiled subset")
    # Unsupported shapes are explained, not failed: the profile could be read.
    assert "https://ex.org/Rule: unsupported: " in by_profile


@pytest.mark.parametrize("body", [None, BROKEN])
def test_explain_of_a_file_that_cannot_be_read_or_is_not_turtle_is_exit_2(
        tmp_path: Path, body: str | None) -> None:
    (tmp_path / "clean.shapes.ttl").write_text(CLEAN)
    if body is not None:
        (tmp_path / "x.shapes.ttl").write_text(body)
    proc = ioa_check(tmp_path, "lint", "--explain", "clean.shapes.ttl", "x.shapes.ttl")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "x.shapes.ttl" in proc.stderr and "Traceback" not in proc.stderr


def test_explain_of_a_profile_with_a_missing_shape_file_is_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    write_profile(tmp_path, {"clean.shapes.ttl": CLEAN, "gone.ttl": CLEAN})
    (tmp_path / "gone.ttl").unlink()
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "--profile", "p.ttl", "--explain"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "gone.ttl" in out.err


@pytest.mark.parametrize("args", [
    ["lint"],
    ["lint", "--explain"],
    ["lint", "--explain", "x.shapes.ttl", "--profile", "cs-translation"],
    ["lint", "--profile", "cs-translation", "--format", "yaml"],
])
def test_usage_errors_are_exit_2_with_nothing_on_stdout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert capsys.readouterr().out == ""


def test_the_format_choices_are_the_reporters() -> None:
    from ioa_semantic.cli import lint
    from ioa_semantic.reporters.lint import REPORTERS

    assert tuple(sorted(REPORTERS)) == lint.FORMATS


def test_a_shape_file_named_on_its_own_is_linted_as_a_shape_file(tmp_path: Path) -> None:
    (tmp_path / "clean.shapes.ttl").write_text(CLEAN)
    (tmp_path / "broken.shapes.ttl").write_text(BROKEN)
    proc = ioa_check(tmp_path, "lint", "clean.shapes.ttl", "broken.shapes.ttl", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    records = {r["file"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert records["clean.shapes.ttl"]["ok"] is True
    # Read as shapes, not as a profile (which would say it describes no iop:Profile).
    (problem,) = records["broken.shapes.ttl"]["problems"]
    assert problem["line"] == 7 and "iop:Profile" not in problem["message"]
