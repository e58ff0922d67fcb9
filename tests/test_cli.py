"""The installed ``ioa-check`` as a subprocess, run from a folder outside the repository.

Covers the contract's command line: formats, several envelopes, standard input, exit
statuses, usage errors (exit 2 with nothing on stdout), --version and --list.
"""

from __future__ import annotations

import json
import os
import subprocess
import typing
from pathlib import Path

import jsonschema
import pytest

import ioa_semantic
from ioa_semantic import data as _resources

from support import AT, CONFORMANCE, IOA_CHECK, dumps, envelope_62, run_python, write_registrations

OUTPUT_SCHEMA = jsonschema.Draft202012Validator(
    json.loads((Path(ioa_semantic.__file__).parent / "data" / "output.schema.json").read_text()))


def run(args: list[str], cwd: Path, stdin: bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, input=stdin, capture_output=True,
                          timeout=60, env=env)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "ok.jsonld").write_bytes(dumps(envelope_62()))
    bad = envelope_62()
    del bad["intentRef"]
    (tmp_path / "bad.jsonld").write_bytes(dumps(bad))
    law = envelope_62()
    law["profileContext"]["termBindings"][0]["sense"] = "https://example.org/onto/law#MasterOfLaws"
    (tmp_path / "law.jsonld").write_bytes(dumps(law))
    return tmp_path


def lines(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, typing.Any]]:
    out: list[dict[str, typing.Any]] = [json.loads(line) for line in proc.stdout.decode().splitlines()
                                        if line.strip()]
    for item in out:
        OUTPUT_SCHEMA.validate(item)
    return out


def test_json_lines_one_per_envelope_and_the_highest_status(folder: Path) -> None:
    proc = run(["ok.jsonld", "law.jsonld", "bad.jsonld", "--profile", "cs-translation",
                "--at", AT, "--format", "json"], folder)
    results = lines(proc)
    assert [r["verdict"] for r in results] == ["compatible", "incompatible", "invalid"]
    assert [r["source"] for r in results] == ["ok.jsonld", "law.jsonld", "bad.jsonld"]
    assert proc.returncode == 4


def test_standard_input(folder: Path) -> None:
    proc = run(["-", "--profile", "cs-translation", "--at", AT, "--format", "json"], folder,
               stdin=dumps(envelope_62()))
    (result,) = lines(proc)
    assert result["source"] == "-" and result["verdict"] == "compatible"
    assert proc.returncode == 0


def test_an_unreadable_envelope_is_a_result_and_the_others_are_checked(folder: Path) -> None:
    proc = run(["missing.jsonld", "ok.jsonld", "--profile", "cs-translation", "--at", AT,
                "--format", "json"], folder)
    missing, ok = lines(proc)
    assert missing["verdict"] == "invalid" and missing["reasons"][0]["code"] == "json.unreadable"
    assert ok["verdict"] == "compatible"
    assert proc.returncode == 4


def test_text_output_has_verdict_first_and_no_colour_off_a_terminal(folder: Path) -> None:
    proc = run(["law.jsonld", "--profile", "cs-translation", "--at", AT], folder)
    text = proc.stdout.decode()
    assert text.startswith("INCOMPATIBLE law.jsonld")
    assert "domain.binding-not-permitted" in text and "section 5.4" in text
    assert "\x1b[" not in text
    assert proc.returncode == 1


def test_no_color_is_honoured_even_when_colour_is_forced(folder: Path) -> None:
    env = {**os.environ, "FORCE_COLOR": "1", "NO_COLOR": "1"}
    proc = run(["law.jsonld", "--profile", "cs-translation", "--at", AT], folder, env=env)
    assert "\x1b[3" not in proc.stdout.decode()


@pytest.mark.parametrize("args", [
    ["ok.jsonld", "--profile", "no-such-profile"],
    ["ok.jsonld"],
    ["ok.jsonld", "--profile", "cs-translation", "--capability", "nope.jsonld"],
    ["ok.jsonld", "--profile", "cs-translation", "--param", "a=1", "--param", "a=2"],
    ["ok.jsonld", "--profile", "cs-translation", "--at", "2026-06-01T00:00:00"],
    ["ok.jsonld", "--profile", "cs-translation", "--format", "yaml"],
    ["ok.jsonld", "--profile", "cs-translation", "--alignment", "no-such-artifact"],
])
def test_usage_errors_exit_2_with_nothing_on_stdout(folder: Path, args: list[str]) -> None:
    proc = run(args, folder)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr.strip()
    assert b"Traceback" not in proc.stderr


def test_unknown_profile_message_names_the_installed_ones(folder: Path) -> None:
    proc = run(["ok.jsonld", "--profile", "nope"], folder)
    assert b"cs-translation" in proc.stderr


def test_broken_profile_file_is_exit_2_naming_the_file(folder: Path) -> None:
    (folder / "p.ttl").write_text("this is not turtle")
    proc = run(["ok.jsonld", "--profile", "p.ttl"], folder)
    assert proc.returncode == 2 and b"p.ttl" in proc.stderr and proc.stdout == b""


def test_version_and_list(folder: Path) -> None:
    assert run(["--version"], folder).stdout.startswith(b"ioa-check ")
    listing = run(["--list"], folder).stdout.decode()
    assert "cs-translation" in listing and "cs-doc-v1" in listing


def test_shipped_alignment_by_name(folder: Path) -> None:
    case = CONFORMANCE / "draft-12.1-accepted-mapping"
    if not case.exists():
        pytest.skip("../shared is not present")
    proc = run([str(case / "envelope.jsonld"), "--profile", "cs-translation", "--capability",
                str(case / "provider.jsonld"), "--alignment", "cs-doc-v1", "--param",
                "sourceLang=zh", "--param", "targetLang=en", "--at", AT, "--format", "json"],
               folder)
    (result,) = lines(proc)
    assert result["verdict"] == "compatible"
    assert result["evidence"][0]["artifactId"] == "https://example.org/align/cs-doc-v1"


@pytest.mark.parametrize("case", sorted(p.name for p in CONFORMANCE.glob("*")) or ["none"])
def test_public_conformance_outputs_match_the_published_schema(tmp_path: Path, case: str) -> None:
    folder = CONFORMANCE / case
    if not folder.exists():
        pytest.skip("../shared is not present")
    spec = json.loads((folder / "case.json").read_text())
    proc = run([spec["envelope"], *spec["args"], "--format", "json"], folder)
    (result,) = lines(proc)
    assert result["verdict"] == spec["expect"]["verdict"]


def test_lint_lists_every_problem_with_its_place(folder: Path) -> None:
    (folder / "art.json").write_text(json.dumps({
        "artifactId": "https://a.example/x", "revision": "", "direction": "sideways",
        "mappingRules": [{"from": "x", "to": "https://b.example/y", "conditions": {"k": True}}]}))
    (folder / "p.ttl").write_text("@prefix iop: <https://ioa-semantic.org/ns/profile#> .\n"
                                  "<https://p.example/> a iop:Profile .\n")
    proc = run(["lint", "art.json", "p.ttl"], folder)
    out = proc.stdout.decode()
    assert proc.returncode == 1
    for place in ("/direction", "/revision", "/mappingRules/0/from",
                  "/mappingRules/0/conditions/k", "'assertedBy' is a required property"):
        assert place in out, place
    assert "p.ttl: the profile must have exactly one revision" in out


def test_lint_accepts_the_shipped_files(folder: Path) -> None:
    profile = _resources.shipped_profiles()["cs-translation"]
    artifact = _resources.shipped_alignments()["cs-doc-v1"]
    (folder / "p.ttl").write_bytes(_resources.read_bytes("profiles", profile))
    (folder / "a.json").write_bytes(_resources.read_bytes("alignments", artifact))
    proc = run(["lint", "p.ttl", "a.json"], folder)
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines() == ["p.ttl: ok", "a.json: ok"]


def test_lint_names_a_mapping_rules_unknown_member_and_its_nearest(folder: Path) -> None:
    """Contract rule 9: a member the project does not define is reported, never silently
    ignored, in a mapping rule as at the top (a misspelt ``condition`` would leave the rule
    unconditional); lint fails on it and names the rule member it resembles."""
    artifact = json.loads(_resources.read_bytes(
        "alignments", _resources.shipped_alignments()["cs-doc-v1"]))
    artifact["mappingRules"][0]["condition"] = {"sourceLang": "zh"}
    (folder / "a.json").write_text(json.dumps(artifact))
    proc = run(["lint", "a.json"], folder)
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines() == [
        "a.json: alignment.unknown-member: 'mappingRules/0/condition' is not a member this "
        "checker defines; checks ignore it (did you mean 'conditions'?)"]


def test_lint_reports_every_iop_term_it_does_not_know(folder: Path) -> None:
    profile = _resources.read_bytes("profiles", _resources.shipped_profiles()["cs-translation"])
    text = profile.decode().replace("iop:trustedIssuer", "iop:trustedIsuer")
    text += "\n<https://example.org/profiles/cs-translation> iop:allowVocabulary true .\n"
    (folder / "p.ttl").write_text(text)
    proc = run(["lint", "p.ttl"], folder)
    out = proc.stdout.decode().splitlines()
    assert proc.returncode == 1
    lines = text.splitlines()
    where = {term: next(n for n, line in enumerate(lines, 1) if term in line)
             for term in ("iop:allowVocabulary", "iop:trustedIsuer")}
    assert out == [
        f"p.ttl: line {where['iop:allowVocabulary']}: iop:allowVocabulary is not a term of the "
        "profile vocabulary (did you mean iop:allowVocab?)",
        f"p.ttl: line {where['iop:trustedIsuer']}: iop:trustedIsuer is not a term of the "
        "profile vocabulary (did you mean iop:trustedIssuer?)"]


def test_a_misspelt_profile_is_a_configuration_error_naming_term_line_and_nearest(
        folder: Path) -> None:
    """Contract 3, "Profiles are read strictly": a check under a profile with a misspelt
    setting, a setting on the wrong node or a value of the wrong kind is refused (exit 2),
    never read as if the setting were absent."""
    profile = _resources.read_bytes("profiles", _resources.shipped_profiles()["cs-translation"])
    text = profile.decode()
    for change, expected in (
            (("iop:permittedDomain", "iop:permitedDomain"),
             "iop:permitedDomain is not a term of the profile vocabulary (did you mean "
             "iop:permittedDomain?)"),
            (("iop:trustedIssuer <https://example.org/mapping-authority>",
              'iop:trustedIssuer "https://example.org/mapping-authority"'),
             "iop:trustedIssuer must be an IRI"),
            (('iop:revision "1"', 'iop:revision "1" ; iop:rank 2'),
             "iop:rank is not a setting of the profile (it belongs to iop:preferIssuer)")):
        changed = text.replace(*change)
        assert changed != text
        (folder / "p.ttl").write_text(changed)
        line = next(n for n, row in enumerate(changed.splitlines(), 1)
                    if change[1].split(" ; ")[-1] in row)
        proc = run([str(Path(__file__).parent / "cases" / "compatibility" / "draft-6.2-envelope"
                        / "envelope.jsonld"), "--profile", "p.ttl", "--format", "json"], folder)
        assert proc.returncode == 2 and proc.stdout == b""
        assert f"line {line}: {expected}" in proc.stderr.decode()


def test_every_iop_term_the_loader_reads_is_one_lint_knows() -> None:
    import re

    from ioa_semantic.sources.vocabulary import known_terms

    PROFILE_TERMS = known_terms()

    source = Path(__file__).resolve().parents[1] / "ioa_semantic"
    read = set(re.findall(r'IOP \+ "([A-Za-z0-9]+)"', (source / "sources" / "loader.py").read_text()))
    read |= {term for query in (source / "data" / "queries").glob("*.rq")
             for term in re.findall(r"iop:([A-Za-z0-9]+)", query.read_text())}
    assert read and read <= PROFILE_TERMS, sorted(read - PROFILE_TERMS)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path, fmt: str) -> None:
    """``ioa-check audit ... | head -1``: the closed pipe ends the run quietly with status 141,
    in text (where rich would exit 1, which reads as "incompatible") as in JSON."""
    corpus = write_registrations(tmp_path / "many.jsonl", 3000)
    if fmt == "text":  # text prints what is not valid: make every registration so
        corpus.write_text(corpus.read_text().replace('"cs:Capability', '"Capability'))
    proc = subprocess.Popen([IOA_CHECK, "audit", str(corpus), "--profile", "cs-translation",
                             "--format", fmt, "--jobs", "1"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    with proc.stderr:
        stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert b"many.jsonl" in first
    assert b"Traceback" not in stderr, stderr.decode()


@pytest.mark.parametrize("columns", ["0", "50", "120", "wide", ""])
def test_help_is_as_wide_as_argparse_would_make_it(columns: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI measures the terminal itself (importing shutil costs a cold check about 4 ms);
    it must wrap help exactly as argparse's own formatter does."""
    import argparse

    from ioa_semantic.cli.main import build_parser

    monkeypatch.setenv("COLUMNS", columns)
    ours = build_parser()
    theirs = build_parser()
    theirs.formatter_class = argparse.HelpFormatter
    assert ours.format_help() == theirs.format_help()


def test_a_check_read_by_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    """``ioa-check *.jsonld | head -1``: the process ends as soon as its output is flushed
    (see ``_cli.entry``); a reader gone before that is status 141, quietly."""
    (tmp_path / "ok.jsonld").write_bytes(dumps(envelope_62()))
    proc = subprocess.Popen([IOA_CHECK, *["ok.jsonld"] * 400, "--profile", "cs-translation",
                             "--at", AT, "--format", "json"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()
    with proc.stderr:
        stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert first["verdict"] == "compatible"
    assert b"Traceback" not in stderr, stderr.decode()


def test_every_line_of_a_long_run_is_written_before_the_quick_exit(tmp_path: Path) -> None:
    (tmp_path / "ok.jsonld").write_bytes(dumps(envelope_62()))
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = run([*["ok.jsonld"] * 300, "--profile", "cs-translation", "--at", AT,
                "--format", "json"], tmp_path, env=buffered)
    assert proc.returncode == 0, proc.stderr
    assert len(lines(proc)) == 300  # far more than one buffer: the last flush is not lost


def test_a_one_envelope_command_does_not_import_orjson(tmp_path: Path) -> None:
    """Its import is a sixth of a one-envelope run; the first document of a Checker is read
    with the stdlib's strict parser instead."""
    import sys

    (tmp_path / "ok.jsonld").write_bytes(dumps(envelope_62()))
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "ioa_semantic", "ok.jsonld",
                           "--profile", "cs-translation", "--at", AT], cwd=tmp_path,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()]
    assert "ioa_semantic._checker" in imported
    assert not [name for name in imported if name.startswith("orjson")]


@pytest.mark.parametrize("collecting", [True, False])
def test_importing_the_package_and_checking_leave_the_collector_as_they_found_it(collecting: bool) -> None:

    script = ("import contextlib, gc, io\n"
              f"{'gc.enable()' if collecting else 'gc.disable()'}\n"
              "import ioa_semantic\n"
              "print(gc.isenabled())\n"
              "from ioa_semantic.cli.main import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    status = main(['examples/envelope-6.2.jsonld', '--profile', 'cs-translation'])\n"
              "print(gc.isenabled(), status)\n")
    proc = run_python(script)
    # The installed package (-P: not the source tree), and a check that ran (status 0).
    assert proc.stdout.decode().split() == [str(collecting), str(collecting), "0"], proc.stderr


def test_options_before_a_subcommand_are_a_usage_error_not_a_file_named_audit(
        tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text("{}\n")
    proc = subprocess.run([IOA_CHECK, "--profile", "cs-translation", "audit", "r.jsonl"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "'audit' is a subcommand: write it first" in proc.stderr


def _commands() -> list[tuple[str, typing.Any]]:
    import argparse

    from ioa_semantic.cli.main import build_parser

    top = build_parser()
    (subparsers,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return [("ioa-check", top), *subparsers.choices.items()]


def test_every_command_and_option_has_help_text() -> None:
    import argparse

    commands = _commands()
    assert [name for name, _ in commands] == ["ioa-check", "check", "audit", "lint", "trace",
                                              "sign", "keygen", "serve", "impact"]
    silent = [f"{name} {'/'.join(action.option_strings) or action.dest}"
              for name, parser in commands for action in parser._actions
              if not isinstance(action, argparse._SubParsersAction) and not action.help]
    assert silent == []


def test_check_is_the_command_run_without_one(tmp_path: Path) -> None:
    (tmp_path / "e.jsonld").write_bytes(dumps(envelope_62()))
    args = ["e.jsonld", "--profile", "cs-translation", "--at", AT, "--format", "json"]
    plain, named = run(args, tmp_path), run(["check", *args], tmp_path)
    assert plain.returncode == named.returncode == 0
    assert plain.stdout == named.stdout and json.loads(plain.stdout)["verdict"] == "compatible"
    top = run(["--help"], tmp_path)
    assert top.returncode == 0
    assert all(name in top.stdout.decode()
               for name in ("check", "audit", "lint", "trace", "sign", "keygen"))


def test_the_trace_choices_are_the_trace_writers_own() -> None:
    """The command line spells the trace's --format and --emit-kg choices, so that building
    its parser imports nothing of the trace audit; they must be the writers' own."""
    from ioa_semantic.cli import trace as trace_cli
    from ioa_semantic.reporters.trace import REPORTERS
    from ioa_semantic.trace.graph import FORMATS

    assert tuple(sorted(REPORTERS)) == trace_cli.FORMATS
    assert tuple(sorted(FORMATS)) == trace_cli.GRAPH_SUFFIXES
