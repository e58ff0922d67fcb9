"""A check's cold start imports what a check uses, nothing of the other commands (issue 39,
item 4: what the command does not use, it does not import). Counted in modules, never timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import run_python

# The machinery of the other commands: their libraries and their reporters.
OTHERS = ("ioa_semantic.impact", "ioa_semantic.audit", "ioa_semantic.trace",
          "ioa_semantic.service", "ioa_semantic.a2a", "ioa_semantic.reporters.audit",
          "ioa_semantic.reporters.impact", "ioa_semantic.reporters.trace",
          "ioa_semantic.reporters.lint")
# What no check of one envelope uses: multiprocessing (a shapes worker's pipe: a profile with
# patterns pySHACL must evaluate starts one, the shipped profile none), tempfile and the
# archives shutil imports (a command's output file), the network (serve's listening socket).
UNUSED_BY_A_CHECK = ("multiprocessing", "tempfile", "shutil", "bz2", "lzma", "socket",
                     "subprocess")


def imported_by_a_check(selected: str) -> str:
    """The modules a check of one envelope imported that ``selected`` (an expression over
    ``m``, a module's name) picks, as the list's text."""
    script = (
        "import io, sys, contextlib\n"
        "from ioa_semantic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['examples/envelope-6.2.jsonld', '--profile', 'cs-translation',"
        " '--at', '2026-06-01T00:00:00Z'])\n"
        f"print(sorted(m for m in sys.modules if {selected}))\n")
    proc = run_python(script)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().strip()


def test_a_check_imports_none_of_the_other_commands_machinery() -> None:
    assert imported_by_a_check(f"m.startswith({OTHERS!r})") == "[]"


def test_a_check_imports_none_of_the_standard_librarys_machinery_it_does_not_use() -> None:
    assert imported_by_a_check(f"m.split('.')[0] in {UNUSED_BY_A_CHECK!r}") == "[]"


def test_a_text_report_off_a_terminal_imports_no_rich() -> None:
    """Rich styles nothing off a terminal, and its import was half of a cold check: the
    report's lines are written as their text (reporters.lines)."""
    assert imported_by_a_check("m.split('.')[0] == 'rich'") == "[]"


def test_a_trace_audit_without_shapes_imports_neither_pyshacl_nor_rdflib() -> None:
    """The trace extra is found installed, not imported to learn it: pySHACL and rdflib took
    a third of a second of every ``ioa-check trace``, and a feed without shapes (and without
    a graph file) uses neither."""
    pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")
    script = (
        "import io, sys, contextlib\n"
        "from ioa_semantic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    status = main(['trace', 'examples/trace/mas-lab/run', '--no-shapes',"
        " '--manifests', 'examples/trace/mas-lab/manifests'])\n"
        "print(status, sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('pyshacl', 'rdflib')))\n")
    proc = run_python(script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip() == "0 []"


@pytest.mark.parametrize("trajectory", [False, True], ids=["graph", "with-trajectory"])
def test_a_feed_to_a_store_without_shapes_imports_no_rdflib(tmp_path: Path,
                                                            trajectory: bool) -> None:
    """A store is given its graphs as N-Quads text the builder spells (graph.quad_chunks):
    rdflib, whose import held 8 MiB of a long run's feed to its end, is not imported."""
    pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")
    options = [*(["--trajectory"] if trajectory else []), "--store", str(tmp_path / "s"),
               "--at", "2026-12-02T00:00:00Z"]
    script = (
        "import io, sys, contextlib\n"
        "from ioa_semantic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    status = main(['trace', 'examples/trace/mas-lab/run', '--no-shapes',"
        f" '--manifests', 'examples/trace/mas-lab/manifests', *{options!r}])\n"
        "print(status, sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('pyshacl', 'rdflib')))\n")
    proc = run_python(script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip() == "0 []"
