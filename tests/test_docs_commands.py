"""Every command the README and the docs show runs as shown.

The convention, which the pages follow (docs/testing.md, "Commands in the docs"):

* a fenced block opened with ```` ```sh ```` holds commands a reader types; every other
  block (```` ```text ````, ```` ```python ````, a bare fence) is output or code, not run;
* a command is expected to exit 0 unless its line (or, for a command continued over
  several lines, one of them) carries a comment naming its status: ``# exit 1``, or words
  around it (``# incompatible (exit 1)``);
* a ``text`` block right after a ``sh`` block, preceded by ``<!-- docs-test: output -->``, is
  the standard output of that block's last command, compared line by line (trailing spaces
  aside); an unmarked one is an illustration (it may be shortened) and is not compared;
* a block that cannot run in CI (it installs from a network, starts a server, runs the test
  suite itself) is preceded by ``<!-- docs-test: skip (REASON) -->``, and is not run;
* a page's blocks run in order, in one fresh folder per page that holds a copy of
  ``examples/`` (so a later block may use what an earlier one wrote), with the installed
  ``ioa-check`` first on ``PATH``, and with the repository's sibling ``../shared`` beside the
  folder when it exists (without it, a page runs up to its first command that names
  ``../shared``, as the tests that need it skip: a reader without it can follow the page that
  far).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import ROOT, SHARED

OUTPUT_MARKER = "<!-- docs-test: output -->"
SKIP_MARKER = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")
EXIT_COMMENT = re.compile(r"#.*\bexit (?:status )?(?P<status>\d+)\b")
HEREDOC = re.compile(r"<<-?\s*(?P<quote>['\"]?)(?P<word>\w+)(?P=quote)")
OPENERS = ("for ", "while ", "until ", "if ", "case ")
CLOSERS = ("done", "fi", "esac")
# A page's commands all together, generously: they take seconds each.
PAGE_TIMEOUT = 600


@dataclass(frozen=True)
class Command:
    """One command a page shows: its text (continuation and here-document lines included),
    where it starts, and the exit status the page states for it."""

    text: str
    line: int
    status: int
    output: str | None = None


@dataclass(frozen=True)
class Block:
    line: int
    commands: tuple[Command, ...]
    skip: str | None


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The ``sh`` blocks of a page, each with its commands, in order."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```sh":
            index += 1
            continue
        start = index
        end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "```")
        before = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        marker = SKIP_MARKER.search(before)
        commands = _commands(lines[start + 1:end], start + 2)
        output = _output(lines, end + 1)
        if output is not None and commands:
            commands[-1] = dataclasses.replace(commands[-1], output=output)
        found.append(Block(start + 1, tuple(commands),
                           marker.group("reason") if marker else None))
        index = end + 1
    return found


def _output(lines: list[str], index: int) -> str | None:
    """The output a page shows for the command before ``index``: a ``text`` block marked
    ``<!-- docs-test: output -->`` that follows its ``sh`` block."""
    following = [i for i in range(index, min(index + 4, len(lines))) if lines[i].strip()]
    if len(following) < 2 or lines[following[0]].strip() != OUTPUT_MARKER \
            or lines[following[1]].strip() != "```text":
        return None
    start = following[1] + 1
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "```")
    return "\n".join(lines[start:end])


def _commands(lines: list[str], first: int) -> list[Command]:
    commands: list[Command] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip() or line.strip().startswith("#"):
            index += 1
            continue
        start, own, depth, heredoc = index, [], 0, None
        while index < len(lines):
            line = lines[index]
            index += 1
            if heredoc is not None:  # a here-document's body is data, not the command
                if line != heredoc:
                    continue
                heredoc = None
                if depth <= 0:
                    break
                continue
            own.append(line)
            stripped = line.strip()
            depth += stripped.startswith(OPENERS) - (stripped.split("#")[0].split(";")[0].strip() in CLOSERS)
            opened = HEREDOC.search(line)
            if opened:
                heredoc = opened.group("word")
            elif depth <= 0 and not line.endswith("\\"):
                break
        stated = [match for part in own if (match := EXIT_COMMENT.search(part))]
        commands.append(Command("\n".join(lines[start:index]), first + start,
                                int(stated[-1].group("status")) if stated else 0))
    return commands


def runnable(page: Path, shared: bool) -> list[Command]:
    """The commands of a page that run: those of its blocks not marked skip and, without
    ``../shared``, only those before the first that names it (the later ones may use what it
    made)."""
    commands = [command for block in blocks(page) if block.skip is None
                for command in block.commands]
    if not shared:
        cut = next((index for index, command in enumerate(commands)
                    if "../shared" in command.text), len(commands))
        commands = commands[:cut]
    return commands


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


PAGES = [page for page in pages() if any(blocks(page))]


def test_the_pages_show_commands() -> None:
    """The test below is not vacuous: the README and the getting-started page are in it."""
    names = {_page_id(page) for page in PAGES}
    assert {"README.md", "docs/getting-started.md"} <= names


def test_a_block_is_split_into_commands_with_their_stated_status(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n\n```sh\n# a comment\nioa-check a \\\n    --at T   # exit 3\n"
                    "cat > f <<'EOF'\nfor x\nEOF\nfor f in a b; do\n  echo $f   # exit 1\n"
                    "done\n```\n\n<!-- docs-test: skip (a server) -->\n```sh\nserve\n```\n")
    first, second = blocks(page)
    assert [(c.line, c.status) for c in first.commands] == [(5, 3), (7, 0), (10, 1)]
    assert first.commands[1].text == "cat > f <<'EOF'\nfor x\nEOF"
    assert first.skip is None and second.skip == "a server"
    assert all(command.output is None for command in first.commands)


def test_an_output_block_marked_as_such_is_the_last_commands_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\necho a\necho b\n```\n\n<!-- docs-test: output -->\n```text\nb\n```\n"
                    "\n```sh\necho c\n```\n\n```text\nc\n```\n")
    first, second = blocks(page)
    assert [c.output for c in first.commands] == [None, "b"]
    assert [c.output for c in second.commands] == [None]  # not marked: an illustration


def test_without_shared_a_page_runs_up_to_its_first_command_naming_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\necho a\n```\n\n```sh\necho b\nls ../shared/x\necho c\n```\n\n"
                    "```sh\necho d\n```\n")
    assert [c.text for c in runnable(page, shared=False)] == ["echo a", "echo b"]
    assert [c.text for c in runnable(page, shared=True)] == [
        "echo a", "echo b", "ls ../shared/x", "echo c", "echo d"]


def _script(commands: list[Command], statuses: Path) -> str:
    parts = []
    for command in commands:
        text = command.text
        if command.output is not None:  # its standard output kept, to compare with the page's
            text = f"{{ {text}\n}} > {statuses.parent / f'output-{command.line}'}"
        parts += [text, f'echo "{command.line} $?" >> {statuses}']
    return "\n".join(parts) + "\n"


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_command_shown_runs_as_shown(page: Path, tmp_path: Path) -> None:
    commands = runnable(page, shared=SHARED.is_dir())
    if not commands:
        pytest.skip("the page's first command names ../shared, which is absent"
                    if runnable(page, shared=True) else
                    "every block of the page is marked docs-test: skip")
    folder = tmp_path / "ioa-semantic"
    shutil.copytree(ROOT / "examples", folder / "examples")
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    statuses = tmp_path / "statuses"
    env = {**os.environ, "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    # Output goes to a file, not a pipe (a process a command leaves behind would hold a pipe
    # open), and the page's process group is ended once its commands are done.
    with (tmp_path / "output").open("w+") as output:
        proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-c",
                                 _script(commands, statuses)], cwd=folder, env=env,
                                stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=PAGE_TIMEOUT)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        output.seek(0)
        printed = output.read()
    got = dict(line.split() for line in statuses.read_text().splitlines()) \
        if statuses.exists() else {}
    wrong = [f"{_page_id(page)}:{c.line}: exit {got.get(str(c.line), 'none')}, the page says "
             f"{c.status}: {c.text.splitlines()[0]}" for c in commands
             if got.get(str(c.line)) != str(c.status)]
    for command in commands:
        shown = tmp_path / f"output-{command.line}"
        if command.output is not None and (not shown.exists() or
                                           _lines(shown.read_text()) != _lines(command.output)):
            wrong.append(f"{_page_id(page)}:{command.line}: printed otherwise than the page "
                         f"shows:\n{shown.read_text() if shown.exists() else '(nothing)'}")
    assert not wrong, "\n".join(wrong) + f"\n--- output:\n{printed[-4000:]}"
