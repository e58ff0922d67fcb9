"""A mistyped word on the command line is refused with what it resembles, under the usage of
the command it was given to; and every command's help is its own and complete.

Each refusal is the usage status (2), on stderr, with nothing on stdout; the suggestion is
``difflib``'s (see ioa_semantic._nearest). The installed ``ioa-check`` is run as users run it.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from support import AT, EXAMPLES, IOA_CHECK

ENVELOPE = str(EXAMPLES / "envelope-6.2.jsonld")
TOP_USAGE = "usage: ioa-check [-h] [--version] COMMAND"


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def refused(proc: subprocess.CompletedProcess[str], usage: str, suggestion: str) -> None:
    """``proc`` is a usage error under ``usage`` that suggests ``suggestion``."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"usage: {usage} "), proc.stderr
    assert f"(did you mean {suggestion!r}?)" in proc.stderr, proc.stderr


# A mistyped option of each command (none an abbreviation argparse would accept), and the
# option it resembles; the other words are what the command needs besides.
MISTYPED_OPTIONS = [
    (["check", ENVELOPE, "--profle", "cs-translation"], "ioa-check check", "--profile"),
    (["audit", ENVELOPE, "--profile", "cs-translation", "--fromat", "json"], "ioa-check audit",
     "--format"),
    (["lint", "p.ttl", "--explian"], "ioa-check lint", "--explain"),
    (["trace", "run", "--manifets", "m"], "ioa-check trace", "--manifests"),
    (["sign", "cs-doc-v1", "--kye", "k.pem"], "ioa-check sign", "--key"),
    (["keygen", "--ouptut", "k.pem"], "ioa-check keygen", "--output"),
    (["serve", "--profile", "cs-translation", "--prot", "0"], "ioa-check serve", "--port"),
    (["trace", "query", "store", "runs", "--fromat", "table"], "ioa-check trace query",
     "--format"),
    (["trace", "reaudit", "store", "--manfiests", "m"], "ioa-check trace reaudit",
     "--manifests"),
    # --spool and --store are required: the mistyped one is said first, not their absence.
    (["trace", "serve", "--spol", "s", "--store", "t"], "ioa-check trace serve", "--spool"),
]


@pytest.mark.parametrize(("args", "usage", "meant"), MISTYPED_OPTIONS,
                         ids=[usage for _, usage, _ in MISTYPED_OPTIONS])
def test_a_mistyped_option_is_refused_under_its_commands_usage_with_the_option_meant(
        args: list[str], usage: str, meant: str, tmp_path: Path) -> None:
    proc = run(args, tmp_path)
    refused(proc, usage, meant)
    assert f"{usage}: error: unrecognized arguments: " in proc.stderr
    assert TOP_USAGE not in proc.stderr


def test_without_a_command_a_mistyped_option_is_refused_under_checks_usage(
        tmp_path: Path) -> None:
    refused(run([ENVELOPE, "--profle", "cs-translation"], tmp_path), "ioa-check check",
            "--profile")


def test_an_option_written_with_its_value_is_refused_by_its_name(tmp_path: Path) -> None:
    proc = run([ENVELOPE, "--profile", "cs-translation", "--fromat=json"], tmp_path)
    refused(proc, "ioa-check check", "--format")
    assert "unrecognized arguments: --fromat " in proc.stderr


def test_an_abbreviated_option_is_still_taken(tmp_path: Path) -> None:
    proc = run([ENVELOPE, "--prof", "cs-translation", "--at", AT], tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_word_after_a_double_dash_is_an_envelope_not_an_option(tmp_path: Path) -> None:
    proc = run(["--profile", "cs-translation", "--at", AT, "--", "--profle"], tmp_path)
    assert proc.returncode == 4, proc.stderr  # the envelope --profle cannot be read
    assert "json.unreadable" in proc.stdout


def test_a_mistyped_choice_is_refused_with_the_choice_meant(tmp_path: Path) -> None:
    proc = run([ENVELOPE, "--profile", "cs-translation", "--format", "jsno"], tmp_path)
    refused(proc, "ioa-check check", "json")
    assert "invalid choice: 'jsno'" in proc.stderr and "(choose from 'json', 'text')" in proc.stderr


@pytest.mark.parametrize(("args", "usage", "meant"), [
    (["chek", ENVELOPE, "--profile", "cs-translation"], "ioa-check [-h]", "check"),
    (["audti", "r.jsonl", "--profile", "cs-translation"], "ioa-check [-h]", "audit"),
    (["trace", "qurey", "store", "runs"], "ioa-check trace", "query"),
    (["trace", "reaudti", "store"], "ioa-check trace", "reaudit"),
])
def test_a_mistyped_command_is_refused_with_the_command_meant(
        args: list[str], usage: str, meant: str, tmp_path: Path) -> None:
    proc = run(args, tmp_path)
    refused(proc, usage, meant)
    mistyped = args[1] if args[0] == "trace" else args[0]
    assert f"{mistyped!r} is neither a" in proc.stderr


def test_a_file_named_like_a_command_is_still_the_envelope_it_names(tmp_path: Path) -> None:
    (tmp_path / "chek").write_bytes((EXAMPLES / "envelope-6.2.jsonld").read_bytes())
    proc = run(["chek", "--profile", "cs-translation", "--at", AT], tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_missing_envelope_like_no_command_is_still_unreadable_not_a_usage_error(
        tmp_path: Path) -> None:
    proc = run(["envelope", "--profile", "cs-translation", "--at", AT, "--format", "json"],
               tmp_path)
    assert proc.returncode == 4 and "json.unreadable" in proc.stdout


def test_a_mistyped_profile_name_suggests_the_installed_profile(tmp_path: Path) -> None:
    proc = run([ENVELOPE, "--profile", "cs-translaton"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "unknown profile 'cs-translaton'" in proc.stderr
    assert "(did you mean 'cs-translation'?)" in proc.stderr


@pytest.mark.parametrize("command", [["lint", "--profile", "cs-tanslation"],
                                     ["audit", ENVELOPE, "--profile", "cs-tanslation"]])
def test_every_command_that_takes_a_profile_name_suggests_one(command: list[str],
                                                              tmp_path: Path) -> None:
    proc = run(command, tmp_path)
    assert proc.returncode == 2 and "(did you mean 'cs-translation'?)" in proc.stderr


def test_a_missing_profile_path_suggests_no_name(tmp_path: Path) -> None:
    proc = run([ENVELOPE, "--profile", "./cs-translaton"], tmp_path)
    assert proc.returncode == 2 and "unknown profile" in proc.stderr
    assert "did you mean" not in proc.stderr


@pytest.mark.parametrize("command", [[ENVELOPE, "--profile", "cs-translation", "--at", AT,
                                      "--alignment", "cs-doc-v2"],
                                     ["sign", "cs-dco-v1", "--key", "k.pem"]])
def test_a_mistyped_artifact_name_suggests_the_shipped_artifact(command: list[str],
                                                                tmp_path: Path) -> None:
    proc = run(command, tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "unknown alignment artifact" in proc.stderr
    assert "(did you mean 'cs-doc-v1'?)" in proc.stderr


def test_a_mistyped_shipped_query_suggests_the_query_meant(tmp_path: Path) -> None:
    pytest.importorskip("rdflib")
    proc = run(["trace", "query", str(tmp_path / "store"), "undeclared-use"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no shipped query 'undeclared-use' (did you mean 'undeclared_uses'?)" in proc.stderr


# --- help --------------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _every_command() -> list[tuple[str, argparse.ArgumentParser]]:
    """Each command's parser with the words that run it, nested commands included (trace's
    history and serve commands have parsers of their own, which main hands ``trace ...`` to)."""
    from ioa_semantic.cli import trace_history, trace_serve
    from ioa_semantic.cli.main import build_parser

    top = build_parser()
    commands = [("ioa-check", top)]
    commands += [(f"ioa-check {name}", sub) for name, sub in _subcommands(top).items()]
    commands += [(f"ioa-check trace {name}", sub)
                 for name, sub in _subcommands(trace_history.build_parser()).items()]
    commands.append(("ioa-check trace serve", trace_serve.build_parser()))
    return commands


def test_the_walk_reaches_every_command() -> None:
    assert [words for words, _ in _every_command()] == [
        "ioa-check", "ioa-check check", "ioa-check audit", "ioa-check lint", "ioa-check trace",
        "ioa-check sign", "ioa-check keygen", "ioa-check serve", "ioa-check impact",
        "ioa-check trace query",
        "ioa-check trace reaudit", "ioa-check trace serve"]


@pytest.mark.parametrize(("words", "parser"), _every_command(),
                         ids=[words for words, _ in _every_command()])
def test_every_commands_help_is_named_after_it_and_shows_every_option(
        words: str, parser: argparse.ArgumentParser) -> None:
    assert parser.prog == words
    shown = parser.format_help()
    assert shown.startswith(f"usage: {words} ")
    missing = [flag for action in parser._actions for flag in action.option_strings
               if flag not in shown]
    missing += [str(action.metavar or action.dest) for action in parser._actions
                if not action.option_strings and str(action.metavar or action.dest) not in shown]
    assert missing == []


@pytest.mark.parametrize("words", [words for words, _ in _every_command()])
def test_the_installed_commands_help_says_its_own_usage(words: str, tmp_path: Path) -> None:
    proc = run([*words.split()[1:], "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {words} "), proc.stdout[:200]


def test_the_top_level_help_names_the_options_it_takes_without_a_command(
        tmp_path: Path) -> None:
    """``ioa-check --list`` and ``ioa-check ENVELOPE --profile NAME`` are check's words,
    taken without a command: the help a user reads first says so."""
    shown = run(["--help"], tmp_path).stdout
    assert "ioa-check --list" in shown and "--profile" in shown
    assert "ioa-check check --help" in shown
