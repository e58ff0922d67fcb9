"""The documentation generated from code: docs/codes.md is what docs/gen_codes.py renders from
the code registry, as tests/test_traceability.py holds docs/conformance.md to the tests."""

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ioa_semantic._codes import CODES

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_codes", DOCS / "gen_codes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reason_codes_page_is_current() -> None:
    page = DOCS / "codes.md"
    assert page.exists() and page.read_text() == _generator().render(), (
        "docs/codes.md is stale: run python docs/gen_codes.py")


def test_the_reason_codes_page_lists_every_registered_code() -> None:
    text = (DOCS / "codes.md").read_text()
    for code in CODES:
        assert f"| <span id=\"{code}\"></span>`{code}` |" in text, code


def _commands_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_commands", DOCS / "gen_commands.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_command_reference_is_current() -> None:
    page = DOCS / "reference" / "commands.md"
    assert page.exists() and page.read_text() == _commands_generator().render(), (
        "docs/reference/commands.md is stale: run python docs/gen_commands.py")


def test_the_command_reference_has_every_command_and_subcommand() -> None:
    text = (DOCS / "reference" / "commands.md").read_text()
    for name in ("check", "audit", "lint", "trace", "trace query", "trace reaudit",
                 "trace serve", "sign", "keygen", "serve"):
        assert f"## `ioa-check {name}`" in text, name
        assert f"usage: ioa-check {name}" in text, name


# --- what the docs name of the package exists -------------------------------------------------

ROOT = DOCS.parent
PACKAGE = ROOT / "ioa_semantic"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
# A path of the package (``ioa_semantic/trace/store.py``, ``ioa_semantic/data/queries/``) or a
# dotted name (``ioa_semantic.service.openapi.document``), as the pages write them.
NAMED_PATH = re.compile(r"\bioa_semantic/[\w./*-]*")
NAMED_MODULE = re.compile(r"\bioa_semantic(?:\.\w+)+")
# In architecture.md's layout, the packages whose modules are listed by bare name.
LISTED_BY_NAME = ("audit", "trace", "cli")


def _named_paths() -> set[tuple[str, str]]:
    return {(page.name, match.rstrip(".,")) for page in PAGES
            for match in NAMED_PATH.findall(page.read_text())}


def test_every_package_path_the_docs_name_exists() -> None:
    missing = sorted((page, path) for page, path in _named_paths()
                     if not (list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()))
    assert not missing, f"paths named in the docs that do not exist: {missing}"


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a prefix is a module, not a package
        return False


def test_every_dotted_name_the_docs_give_of_the_package_resolves() -> None:
    missing = []
    for page in PAGES:
        for name in set(NAMED_MODULE.findall(page.read_text())):
            parts = name.split(".")
            # The longest prefix that is a module, then attributes of it.
            for cut in range(len(parts), 0, -1):
                module_name = ".".join(parts[:cut])
                if _is_module(module_name):
                    break
            value: object = importlib.import_module(module_name)
            for attribute in parts[cut:]:
                if not hasattr(value, attribute):
                    missing.append((page.name, name))
                    break
                value = getattr(value, attribute)
    assert not missing, f"names in the docs that do not resolve: {sorted(missing)}"


def _layout() -> dict[str, str]:
    """architecture.md's layout block: each top-level entry (a module or a package) with the
    text that describes it, its continuation lines joined."""
    page = (DOCS / "architecture.md").read_text()
    block = page[page.index("```\nioa_semantic/\n") + 4:]
    block = block[:block.index("```")]
    entries: dict[str, str] = {}
    current = ""
    for line in block.splitlines()[1:]:
        head = re.match(r"^  (\S+)", line)
        if head:
            current = head.group(1)
            entries[current] = line[len(head.group(0)):]
        else:
            entries[current] += " " + line.strip()
    return entries


def test_the_architecture_layout_names_only_modules_that_exist() -> None:
    entries = _layout()
    missing = []
    for entry, text in entries.items():
        folder = PACKAGE / entry.rstrip("/") if entry.endswith("/") else PACKAGE
        if not (PACKAGE / entry).exists():
            missing.append(entry)
        for module in re.findall(r"\b\w+\.py\b", entry + " " + text):
            if not list(PACKAGE.rglob(module)):
                missing.append(module)
        if entry.rstrip("/") in LISTED_BY_NAME:
            # "ioa-check trace: events (the fold), calls (...), formats, ...": the first word
            # of each item, once the command's name and the parentheses are set aside.
            listed = re.sub(r"\([^)]*\)", "", text).split(":", 1)[-1]
            for item in listed.split(","):
                word = item.split()[0] if item.split() else ""
                if word and not word.endswith(".py") and not (folder / f"{word}.py").exists():
                    missing.append(f"{entry}{word}")
    assert not missing, f"architecture.md's layout names what does not exist: {missing}"


def test_the_architecture_layout_covers_every_package() -> None:
    """Every subpackage of ioa_semantic, the service's included, has its entry."""
    entries = _layout()
    packages = {path.parent.name + "/" for path in PACKAGE.glob("*/__init__.py")}
    assert packages <= set(entries), sorted(packages - set(entries))


# --- the site as mkdocs builds it --------------------------------------------------------------

# A Sphinx role left as written, as Markdown renders it (``:class:`Checker``` becomes
# ``:class:<code>Checker</code>``) or untouched inside a code span.
ROLE_MARKUP = re.compile(r":(?:py:)?[a-z]+:(?:<code>|`)")
# Building the whole site takes seconds; a generous bound that only a hang reaches.
BUILD_DEADLINE = 600


# A site mkdocs has already built from this tree with --strict (.ci/run builds one before the
# tests run): the test reads its API page instead of building the whole site a second time.
BUILT_SITE_ENV = "IOA_DOCS_SITE"


def test_the_api_page_renders_the_docstrings_sphinx_roles(tmp_path: Path) -> None:
    """The API page shows the docstrings' Sphinx roles (``:class:`Checker```) as links to
    what the page documents, or as code, never as literal markup (docs/api_roles.py)."""
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed")
    built = os.environ.get(BUILT_SITE_ENV)
    if built:
        site = Path(built)
        assert (site / "reference" / "api" / "index.html").is_file(), (
            f"{BUILT_SITE_ENV}={built} names no site built by mkdocs")
    else:
        site = tmp_path
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                        "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                       check=True, timeout=BUILD_DEADLINE,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    page = (site / "reference" / "api" / "index.html").read_text()
    article = page[page.index("<article"):page.index("</article>")]
    assert 'id="ioa_semantic.Checker"' in article  # the docstrings are on the page
    assert not ROLE_MARKUP.findall(article), sorted(set(ROLE_MARKUP.findall(article)))
    # check()'s docstring names the Checker with a role: a link to it now.
    assert '<a class="autorefs autorefs-internal"' in article
    assert 'href="#ioa_semantic.Checker"><code>Checker</code></a>' in article
