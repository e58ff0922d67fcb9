"""The two builds: the hot modules compiled by mypyc, or the pure package, from one source.

Which one is installed is told at run time (``ioa_semantic.build_kind()``, ``ioa-check
--version``), and CI holds each install to the build it asked for (``IOA_EXPECT_BUILD``,
set by .ci/run). The build backend's choice (``build_backend/backend.py``) is tested here
without building: what ``IOA_SEMANTIC_BUILD`` and an editable install ask for.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

import pytest

import ioa_semantic
from ioa_semantic import _build

from support import IOA_CHECK, ROOT

BACKEND = Path(__file__).resolve().parents[1] / "build_backend" / "backend.py"


def _backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ioa_build_backend", BACKEND)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_kind_is_what_the_modules_are() -> None:
    """build_kind() says compiled exactly when every hot module is a native extension."""
    import ioa_semantic.compiled.walk as walk

    native = any(str(walk.__file__).endswith(suffix) for suffix in EXTENSION_SUFFIXES)
    assert ioa_semantic.build_kind() == ("compiled" if native else "pure")


@pytest.mark.skipif(not os.environ.get("IOA_EXPECT_BUILD"), reason="set by .ci/run per install")
def test_the_install_is_the_build_ci_asked_for() -> None:
    """A compiled install that fell back to pure (or the reverse) fails CI, not silently."""
    assert ioa_semantic.build_kind() == os.environ["IOA_EXPECT_BUILD"]


def test_version_names_the_build() -> None:
    """ioa-check --version says the release and which build answers."""
    done = subprocess.run([IOA_CHECK, "--version"], capture_output=True, check=True)
    assert done.stdout.decode() == (
        f"ioa-check {ioa_semantic.__version__} ({ioa_semantic.build_kind()})\n")


def test_the_backend_compiles_what_the_package_names() -> None:
    """The backend reads the list of compiled modules from the package's own file, and every
    module named exists in the source."""
    names = _backend().compiled_modules()
    assert names == _build.COMPILED_MODULES
    root = BACKEND.parents[1]
    for name in names:
        assert (root / Path(*name.split("."))).with_suffix(".py").is_file(), name


@pytest.mark.parametrize(("asked", "editable", "compiles"), [
    ("pure", False, False), ("pure", True, False), ("auto", True, False), ("", True, False)])
def test_pure_when_asked_or_editable(monkeypatch: pytest.MonkeyPatch, asked: str,
                                     editable: bool, compiles: bool) -> None:
    """IOA_SEMANTIC_BUILD=pure and editable installs never compile (an edit takes effect
    without building again)."""
    monkeypatch.setenv("IOA_SEMANTIC_BUILD", asked)
    assert _backend()._compiles(editable=editable) is compiles


@pytest.mark.parametrize(("asked", "editable"), [("compiled", True), ("native", False)])
def test_a_build_that_cannot_be_given_is_refused(monkeypatch: pytest.MonkeyPatch, asked: str,
                                                 editable: bool) -> None:
    """An editable compiled build, or a choice the backend does not know, fails the build
    rather than giving another build than asked."""
    monkeypatch.setenv("IOA_SEMANTIC_BUILD", asked)
    with pytest.raises(SystemExit):
        _backend()._compiles(editable=editable)


def test_compiled_without_a_compiler_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """IOA_SEMANTIC_BUILD=compiled where no C compiler works fails; auto builds pure."""
    backend = _backend()
    monkeypatch.setattr(backend, "_compiler_found", lambda: "no compiler (a test)")
    monkeypatch.setenv("IOA_SEMANTIC_BUILD", "compiled")
    with pytest.raises(SystemExit, match="no compiler"):
        backend._compiles(editable=False)
    monkeypatch.setenv("IOA_SEMANTIC_BUILD", "auto")
    assert backend._compiles(editable=False) is False


def test_a_number_kept_by_its_text_is_copied_and_pickled_with_it() -> None:
    """A JSON number whose float is not its value keeps its text through pyld's deep copy
    and a worker's pickle, in either build (the compiled one held a float as a C double and
    refused float's own way of copying the subclass: the check then failed in pyld)."""
    import copy
    import pickle

    from ioa_semantic.pipeline.intake import ExactNumber, number_text, parse

    document = parse(b'{"size": 1024.0000000000000001}').document
    for again in (copy.deepcopy(document), pickle.loads(pickle.dumps(document))):
        assert type(again["size"]) is ExactNumber
        assert number_text(again["size"]) == "1024.0000000000000001"


def test_every_subpackage_is_installed() -> None:
    # The packages are listed by name (pyproject.toml); one left out installs without it, and
    # only a non-editable install shows it (an editable one maps the whole source tree).
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for init in (ROOT / "ioa_semantic").rglob("__init__.py")}
    assert found == listed
