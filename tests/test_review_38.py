"""A hostile review of issue 38's surfaces (review38): what a sender, a file name or a
command line can put through the terminal reports, SARIF, the service and the pre-commit
hooks. Each test drives the installed command (or the service as a real process) as a user
or an attacker would.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest
import yaml

from ioa_semantic.reporters.table import write_table

from support import AT, IOA_CHECK, ROOT, registration_63, sarif_of

# What a terminal obeys: OSC 0 sets the window's title (ended by BEL), CSI 2J clears the
# screen, CSI 31m colours what follows; U+202E reverses what follows.
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31m\u202e"
OBEYED = ("\x1b", "\x07", "\u202e")


def _run(args: list[str], cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, input=stdin.decode(), capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})


def _obeyed(text: str) -> list[str]:
    return [c for c in OBEYED if c in text]


# --- terminal output ---------------------------------------------------------------------------


def test_the_audits_text_report_shows_escape_sequences_and_its_json_keeps_them(
        tmp_path: Path) -> None:
    """A file name and an @id with escape sequences: the text report shows each hidden
    character as its code point (as the check's text report does); the JSON keeps them."""
    name = f"regs{HOSTILE}.jsonl"
    bad = registration_63()
    bad["@id"] = f"https://example.org/caps/{HOSTILE}"
    del bad["inputs"]
    (tmp_path / name).write_text(json.dumps(bad) + "\n", encoding="utf-8")

    text = _run(["audit", name, "--profile", "cs-translation", "--at", AT], tmp_path)
    assert text.returncode == 1, text.stderr
    assert _obeyed(text.stdout) == [], text.stdout
    assert "regs<U+001B>]0;owned<U+0007><U+001B>[2J" in text.stdout
    assert "https://example.org/caps/<U+001B>" in text.stdout

    lines = _run(["audit", name, "--profile", "cs-translation", "--at", AT, "--format", "json"],
                 tmp_path).stdout.splitlines()
    assert json.loads(lines[0])["source"] == name


def test_lints_text_report_shows_escape_sequences_in_file_names(tmp_path: Path) -> None:
    name = f"artifact{HOSTILE}.json"
    (tmp_path / name).write_text("{}", encoding="utf-8")
    text = _run(["lint", name], tmp_path)
    assert text.returncode == 1, text.stderr
    assert _obeyed(text.stdout) == [] and "artifact<U+001B>]0;owned" in text.stdout
    record = json.loads(_run(["lint", name, "--format", "json"], tmp_path).stdout)
    assert record["file"] == name


def test_the_commands_errors_show_escape_sequences(tmp_path: Path) -> None:
    """What argparse refuses and what a command fails on are quoted on stderr as given:
    shown, never obeyed."""
    refused = _run(["audit", "-", "--profile", "cs-translation", f"--x{HOSTILE}"], tmp_path)
    assert refused.returncode == 2
    assert _obeyed(refused.stderr) == [] and "--x<U+001B>]0;owned" in refused.stderr

    profile = f"profile{HOSTILE}.ttl"
    (tmp_path / profile).write_text("@prefix : <urn:x#> .\n:a :b :c .\n", encoding="utf-8")
    failed = _run(["audit", "-", "--profile", profile], tmp_path)
    assert failed.returncode == 2
    assert _obeyed(failed.stderr) == [] and "profile<U+001B>]0;owned" in failed.stderr


def test_a_tables_cells_and_names_show_escape_sequences() -> None:
    """trace query's table: a span's name is the sender's."""
    stream = io.StringIO()
    write_table([f"n{HOSTILE}"], [{f"n{HOSTILE}": f"call{HOSTILE}\rx"}], stream)
    printed = stream.getvalue()
    assert _obeyed(printed) == [] and "\r" not in printed
    assert "call<U+001B>]0;owned<U+0007><U+001B>[2J<U+001B>[31m<U+202E><U+000D>x" in printed
    assert printed.startswith("n<U+001B>]0;owned")


# --- SARIF -------------------------------------------------------------------------------------


NAMES = ["a b.json", "50%#1.json", "é ü.jsonl", "C:\\win\\x.json", "a:b.json", "-x.json"]


def _uris(log: dict[str, Any]) -> set[str]:
    return {location["physicalLocation"]["artifactLocation"]["uri"]
            for result in log["runs"][0]["results"] for location in result["locations"]}


def test_sarif_locations_are_uri_references_whatever_the_file_names(tmp_path: Path) -> None:
    """Spaces, ``#``, ``%``, non-ASCII, backslashes, a colon that would read as a scheme, a
    leading dash; an absolute path as a file: URI. The schema's uri-reference format is
    checked (support.sarif_problems), and each URI decodes back to the path as found."""
    bad = registration_63()
    del bad["inputs"]
    folder = tmp_path / "regs dir"
    folder.mkdir()
    for name in NAMES:
        (folder / name).write_text(json.dumps(bad), encoding="utf-8")
    absolute = folder / "a b.json"
    proc = subprocess.run([IOA_CHECK, "audit", "regs dir", str(absolute), "--profile",
                           "cs-translation", "--at", AT, "--format", "sarif"], cwd=tmp_path,
                          capture_output=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    uris = _uris(sarif_of(proc.stdout))
    relative = {unquote_to_bytes(uri).decode() for uri in uris if not uri.startswith("file:")}
    assert relative == {f"regs dir/{name}" for name in NAMES}
    assert {uri for uri in uris if uri.startswith("file:")} == {absolute.as_uri()}
    assert "file:///" in absolute.as_uri() and "%20" in absolute.as_uri()


def test_sarif_of_no_registration_and_of_many_is_valid(tmp_path: Path) -> None:
    empty = subprocess.run([IOA_CHECK, "audit", "-", "--profile", "cs-translation",
                            "--format", "sarif"], input=b"", capture_output=True, timeout=120)
    assert empty.returncode == 0, empty.stderr
    assert sarif_of(empty.stdout)["runs"][0]["results"] == []

    bad = registration_63()
    del bad["inputs"]
    (tmp_path / "many regs.jsonl").write_text(json.dumps(bad) + "\n" * 1, encoding="utf-8")
    with (tmp_path / "many regs.jsonl").open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(bad) + "\n" for _ in range(1999))
    many = subprocess.run([IOA_CHECK, "audit", "many regs.jsonl", "--profile", "cs-translation",
                           "--at", AT, "--format", "sarif"], cwd=tmp_path, capture_output=True,
                          timeout=300)
    log = sarif_of(many.stdout)
    assert len(log["runs"][0]["results"]) == 2000
    assert _uris(log) == {"many%20regs.jsonl"}


# --- the service -------------------------------------------------------------------------------


def test_a_trailing_slash_is_a_404_problem_never_a_redirect_built_from_host(
        tmp_path: Path) -> None:
    """Every route of the OpenAPI document, with a slash after it and any Host: a 404
    problem document, as the document says an unknown route is (Starlette redirected to
    ``http://{Host}/...``, an answer the document does not list)."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    import httpx
    from test_service import HANG, Service, problem_of

    with Service(["--profile", "cs-translation"], tmp_path, tmp_path / "stderr.log") as served:
        document = httpx.get(f"{served.url}/openapi.json", timeout=HANG).json()
        asked = 0
        for path, methods in document["paths"].items():
            for method, operation in methods.items():
                if path == "/" or not isinstance(operation, dict) or (
                        "responses" not in operation):
                    continue
                route = path.replace("{asset}", "api.js")
                answer = httpx.request(method.upper(), f"{served.url}{route}/", content=b"{}",
                                       headers={"Host": "evil.example",
                                                "Content-Type": "application/json"},
                                       timeout=HANG, follow_redirects=False)
                assert "location" not in answer.headers, (path, answer.headers)
                problem_of(answer, 404, "")
                assert "404" in operation["responses"]
                asked += 1
        assert asked == len(document["paths"]) - 1  # every route but the root


# --- the pre-commit hooks ----------------------------------------------------------------------


def test_the_hooks_check_files_named_with_spaces_and_leading_dashes(tmp_path: Path) -> None:
    """The real pre-commit runs each hook's entry as .pre-commit-hooks.yaml gives it (as a
    local hook on this environment's ioa-check), with the user's options, then the files at
    the repository's top: ``-x.jsonld`` and ``--r.jsonl`` are files to check, not options to
    refuse, and ``a b.jsonld`` one file."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hooks = {hook["id"]: hook for hook in yaml.safe_load(
        (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    local = [{"id": hooks[name]["id"], "name": hooks[name]["name"],
              "entry": hooks[name]["entry"], "language": "system", "files": files,
              "args": ["--profile", "cs-translation", "--at", AT]}
             for name, files in (("ioa-check-envelopes", r"\.jsonld$"),
                                 ("ioa-check-registrations", r"\.jsonl$"))]
    sample = tmp_path / "sample"
    sample.mkdir()
    envelope = (ROOT / "examples" / "envelope-6.2.jsonld").read_text(encoding="utf-8")
    for name in ("-x.jsonld", "a b.jsonld"):
        (sample / name).write_text(envelope, encoding="utf-8")
    (sample / "--r.jsonl").write_text(json.dumps(registration_63()) + "\n", encoding="utf-8")
    (sample / ".pre-commit-config.yaml").write_text(yaml.safe_dump(
        {"repos": [{"repo": "local", "hooks": local}]}), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=sample, check=True, timeout=60)
    subprocess.run(["git", "add", "--", "."], cwd=sample, check=True, timeout=60)
    environment = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home"),
                   "PRE_COMMIT_COLOR": "never", "NO_COLOR": "1",
                   "PATH": f"{Path(IOA_CHECK).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files",
                          "--verbose"], cwd=sample, capture_output=True, text=True,
                         timeout=600, env=environment)
    assert run.returncode == 0, run.stdout + run.stderr
    for shown in ("COMPATIBLE -x.jsonld", "COMPATIBLE a b.jsonld",
                  "1 registration: 1 valid"):
        assert shown in run.stdout, run.stdout


# --- did you mean ------------------------------------------------------------------------------


def test_a_command_line_of_thousands_of_unknown_options_costs_a_few_suggestions(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Each suggestion is a similarity search over the options: the refusal names the first
    ten unknown options with theirs and counts the rest, however many there are."""
    from ioa_semantic._nearest import did_you_mean as real
    from ioa_semantic.cli import main, parsing

    searched: list[str] = []

    def counted(word: str, known: Any, *rest: Any) -> str:
        searched.append(word)
        return real(word, known, *rest)

    monkeypatch.setattr(parsing, "did_you_mean", counted)
    unknown = [f"--fromat{n}" for n in range(20_000)]
    with pytest.raises(SystemExit) as ended:
        main.run(["check", "x.json", "--profile", "cs-translation", *unknown])
    assert ended.value.code == 2
    said = capsys.readouterr().err
    assert len(searched) == 10
    assert said.count("(did you mean '--format'?)") == 10
    assert said.rstrip().endswith("--fromat9 (did you mean '--format'?) and 19990 more")


def test_an_artifact_of_thousands_of_unknown_members_costs_a_few_suggestions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """lint (the artifacts' hook) says every unknown member; the first ten with the member
    they resemble."""
    from ioa_semantic._nearest import did_you_mean as real
    from ioa_semantic.cli import lint, main

    searched: list[str] = []

    def counted(word: str, known: Any, *rest: Any) -> str:
        searched.append(word)
        return real(word, known, *rest)

    monkeypatch.setattr(lint, "did_you_mean", counted)
    artifact = json.loads((ROOT / "ioa_semantic" / "data" / "alignments" / "cs-doc-v1.json")
                          .read_text(encoding="utf-8"))
    artifact.update({f"validUntill{n}": 1 for n in range(5_000)})
    (tmp_path / "artifact.json").write_text(json.dumps(artifact), encoding="utf-8")
    assert main.run(["lint", str(tmp_path / "artifact.json")]) == 1
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 5_000 and len(searched) == 10
    assert sum("(did you mean 'validUntil'?)" in line for line in said) == 10
