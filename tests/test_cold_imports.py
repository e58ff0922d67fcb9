"""A check's cold start imports what a check uses, nothing of the other commands (issue 39,
item 4: what the command does not use, it does not import). Counted in modules, never timed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# What a check of a shipped profile no longer imports (issue 39, item 4): hashlib, which
# loads OpenSSL (the interpreter's own SHA-256 makes a cold check's few digests:
# _runtime.sha256), decimal (a number written as its float's text needs none) and base64
# (a signing key's encoding). pyoxigraph stays: the shipped profile is Turtle, and the
# compiled tables are queries over an Oxigraph store.
# Nor threading (its Lock and local are _thread's: _runtime.Lock, _runtime.local) and
# cachetools (the instance memory is a BoundedCache), with what cachetools brought (random).
NOT_IMPORTED_BY_A_CHECK = ("hashlib", "_hashlib", "decimal", "_decimal", "base64", "binascii",
                           "threading", "cachetools", "random")


def test_a_check_imports_only_its_own_commands_modules() -> None:
    """The command line imports a command's module when that command runs: a check imports
    neither the others' parsers (serve's brought urllib.parse, ipaddress and signal) nor trace's
    subcommands."""
    assert imported_by_a_check("m.startswith('ioa_semantic.cli.')") == (
        "['ioa_semantic.cli.check', 'ioa_semantic.cli.main', 'ioa_semantic.cli.parsing']")


def test_a_check_of_a_shipped_profile_imports_no_hashlib_decimal_or_base64() -> None:
    assert imported_by_a_check(f"m.split('.')[0] in {NOT_IMPORTED_BY_A_CHECK!r}") == "[]"


# What the ioa-check process imported when it ends (its quick exit, os._exit, is where).
ENDED_WITH_MODULES = (
    "import os, sys\n"
    "real_exit = os._exit\n"
    "def ended(status):\n"
    "    print(status, sorted(m for m in sys.modules if m in {modules!r}), flush=True)\n"
    "    real_exit(status)\n"
    "os._exit = ended\n"
    "sys.argv = ['ioa-check', *{argv!r}]\n"
    "from ioa_semantic.cli.main import entry\n"
    "entry()\n")


def test_the_commands_check_asks_gettext_for_no_translation_of_argparses_messages() -> None:
    """argparse asks gettext for each message a parser is built with, and gettext's first
    look for a catalogue imports locale: the command takes them as written
    (_runtime.untranslated_argparse)."""
    argv = ["examples/envelope-6.2.jsonld", "--profile", "cs-translation",
            "--at", "2026-06-01T00:00:00Z"]
    proc = run_python(ENDED_WITH_MODULES.format(modules=("locale",), argv=argv))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines()[-1] == "0 []"


def test_argparses_messages_untranslated_are_what_gettext_gives_without_a_catalogue() -> None:
    """The command's help and its usage errors are the same text with and without
    _runtime.untranslated_argparse, singular and plural messages alike."""
    script = (
        "import contextlib, io, sys\n"
        "from ioa_semantic import _runtime\n"
        "from ioa_semantic.cli.main import main\n"
        "def said(argv):\n"
        "    out, err = io.StringIO(), io.StringIO()\n"
        "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        "        try:\n"
        "            status = main(argv)\n"
        "        except SystemExit as exc:\n"
        "            status = exc.code\n"
        "    return status, out.getvalue(), err.getvalue()\n"
        "cases = [['--help'], ['trace', '--help'], ['--param'], ['--format', 'x', 'f'],\n"
        "         ['audit', '--jobs', 'x', 'f'], ['sign', '--nope']]\n"
        "before = [said(argv) for argv in cases]\n"
        "_runtime.untranslated_argparse()\n"
        "after = [said(argv) for argv in cases]\n"
        "print(before == after, all(b[1] or b[2] for b in before))\n")
    proc = run_python(script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().split() == ["True", "True"]


def test_the_command_line_and_the_package_import_no_checker_until_a_command_builds_one() -> None:
    """The package's names are imported when first asked for: ``ioa-check keygen`` (or sign,
    or a trace audit) imports nothing of the Checker, and every name of the API is still
    there, the same object wherever it is asked for."""
    script = (
        "import sys\n"
        "import ioa_semantic, ioa_semantic.cli.main\n"
        "print(sorted(m for m in sys.modules if m == 'ioa_semantic._checker'"
        " or m.startswith(('ioa_semantic.compiled', 'ioa_semantic.sources'))))\n"
        "from ioa_semantic import Checker, Limits, check\n"
        "from ioa_semantic._checker import Checker as Defined\n"
        "from ioa_semantic.pipeline.intake import Limits as Defined2\n"
        "print(Checker is Defined, Limits is Defined2, ioa_semantic.check is check,\n"
        "      all(getattr(ioa_semantic, n) is not None for n in ioa_semantic.__all__),\n"
        "      set(ioa_semantic.__all__) <= set(dir(ioa_semantic)))\n"
        "try:\n"
        "    ioa_semantic.not_a_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n")
    proc = run_python(script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines() == [
        "[]", "True True True True True",
        "module 'ioa_semantic' has no attribute 'not_a_name'"]


@pytest.mark.parametrize("owned", [False, True], ids=["library", "command"])
def test_a_cold_check_leaves_what_it_imported_and_built_out_of_the_collectors_passes(
        owned: bool) -> None:
    """In the ``ioa-check`` process (``cli.main.entry`` says the process is the command's),
    the modules a check imports and the Checker it builds are frozen as each pause ends
    (_runtime.paused): the collector's passes see a few hundred objects, not the ~17,000 of
    the modules and the Checker. A library's caller (``main`` alone) has nothing frozen."""
    script = (
        "import contextlib, gc, io\n"
        "from ioa_semantic import _runtime\n"
        "from ioa_semantic.cli.main import main\n"
        f"{'_runtime.own_process()' if owned else ''}\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    status = main(['examples/envelope-6.2.jsonld', '--profile', 'cs-translation'])\n"
        "print(status, gc.isenabled(), gc.get_freeze_count(), len(gc.get_objects()))\n")
    proc = run_python(script)
    assert proc.returncode == 0, proc.stderr
    status, enabled, frozen, tracked = proc.stdout.decode().split()
    assert (status, enabled) == ("0", "True")
    if owned:
        assert int(frozen) > 10_000 and int(tracked) < 2_000, (frozen, tracked)
    else:
        assert int(frozen) == 0 and int(tracked) > 10_000, (frozen, tracked)


def test_the_digests_made_without_hashlib_are_hashlibs() -> None:
    """_runtime.sha256: the interpreter's own SHA-256 for a process's first small inputs,
    OpenSSL's for the others; the same digest either way."""
    import hashlib
    import random

    from ioa_semantic import _runtime

    inputs = [b"", b"a", bytes(range(256)) * 4, b"x" * _runtime.BUILTIN_BYTES,
              b"x" * (_runtime.BUILTIN_BYTES + 1), random.Random(7).randbytes(100_000)]
    for data in inputs * (_runtime.BUILTIN_DIGESTS // len(inputs) + 2):
        assert _runtime.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        assert _runtime.sha256(data).digest() == hashlib.sha256(data).digest()


def test_a_number_read_without_decimal_is_read_as_before() -> None:
    """The intake takes a number written as its float's own text ("1.1") without decimal;
    every other is read as before: a float when the float is the number's value, else an
    ExactNumber keeping its text."""
    import random
    from decimal import Decimal

    from ioa_semantic.pipeline.intake import ExactNumber, parse

    def before(text: str) -> object:
        number = float(text)
        if number in (float("inf"), float("-inf")) or Decimal(repr(number)) != Decimal(text):
            return ExactNumber(text)
        return number

    rng = random.Random(39)
    texts = ["1.1", "1.10", "0.1", "-0.0", "0.0", "1e3", "1E-7", "1.5e300", "1e400", "-1e400",
             "1e-400", "1024.0000000000000001", "123456789012345678.5", "2.5", "0.30000000000000004",
             *(repr(rng.uniform(-1e6, 1e6)) for _ in range(200)),
             *(f"{rng.uniform(-10, 10):.{rng.randint(1, 20)}f}" for _ in range(200))]
    for text in texts:
        read = parse(f'{{"n": {text}}}'.encode()).document["n"]
        expected = before(text)
        assert type(read) is type(expected) and repr(read) == repr(expected), text
        assert getattr(read, "text", None) == getattr(expected, "text", None), text


# Every character the class names, each end of its ranges, and their neighbours.
_HIDDEN_EDGES = "\x00\x08\x09\x0a\x1f\x20\x7e\x7f\x80\x9f\xa0\u061b\u061c\u061d\u200a\u200b" \
    "\u200f\u2010\u2027\u2028\u202e\u202f\u205f\u2060\u2069\u206a\ufeff\ufff8\ufff9\ufffb" \
    "\ufffc\U000dffff\U000e0000\U000e007f\U000e0080\ud7ff\ud800\udfff\ue000 aZ~<>"


@given(st.text(alphabet=st.sampled_from(_HIDDEN_EDGES) | st.characters(), max_size=40),
       st.booleans())
def test_a_line_printable_in_ascii_is_shown_as_the_pattern_shows_it(line: str,
                                                                    surrogates: bool) -> None:
    """_visible.visible takes a line of printable ASCII as it is and compiles its pattern
    only for another: the same text the pattern alone makes of any line."""
    import re

    from ioa_semantic import _visible

    pattern = re.compile(f"[{_visible._HIDDEN_CLASS}\ud800-\udfff]" if surrogates
                         else f"[{_visible._HIDDEN_CLASS}]")
    expected = pattern.sub(lambda m: f"<U+{ord(m.group()):04X}>", line)
    assert _visible.visible(line, surrogates=surrogates) == expected


@given(st.text(alphabet=st.sampled_from(_HIDDEN_EDGES) | st.characters(), max_size=40))
def test_a_lone_surrogate_is_found_without_a_pattern_as_the_pattern_finds_it(text: str) -> None:
    """_visible.has_lone_surrogate (an ASCII string at once, else whether UTF-8 encodes
    it), which the reporters and --param ask, answers as the class of surrogates does."""
    import re

    from ioa_semantic._visible import has_lone_surrogate

    assert has_lone_surrogate(text) is (re.search("[\ud800-\udfff]", text) is not None)


def test_a_check_in_ascii_compiles_none_of_the_wide_classes() -> None:
    """A check whose IRIs, arguments and report are ASCII compiles neither the bidirectional
    marks (_iri._bidi), the lone surrogates (_visible.has_lone_surrogate asks UTF-8) nor the
    hidden characters of a report (_visible._hidden): each took a cold check about half a
    millisecond to a millisecond."""
    proc = run_python(
        "import contextlib, io, re._compiler as compiler\n"
        "seen = []\n"
        "original = compiler.compile\n"
        "def compile(pattern, flags=0):\n"
        "    seen.append(pattern)\n"
        "    return original(pattern, flags)\n"
        "compiler.compile = compile\n"
        "from ioa_semantic import _visible\n"
        "from ioa_semantic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    main(['examples/envelope-6.2.jsonld', '--profile', 'cs-translation',"
        " '--param', 'a=b', '--at', '2026-06-01T00:00:00Z'])\n"
        "print(bool(out.getvalue()), len(seen) > 5, _visible._hidden.cache_info().currsize,"
        " [p for p in seen if isinstance(p, str) and ('\\u202a' in p or '\\ud800' in p)])\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().split() == ["True", "True", "0", "[]"]
