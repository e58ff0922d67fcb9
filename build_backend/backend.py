"""The package's build backend: setuptools, with the hot modules compiled by mypyc.

``pip install .`` builds a wheel whose modules named in ``ioa_semantic/_build.py`` are native
extensions compiled by mypyc from the same source (no second implementation), when a C
compiler that can build extensions for this Python exists; otherwise, or when asked, the
pure package. ``IOA_SEMANTIC_BUILD`` chooses:

* unset or ``auto``: compiled where a C compiler and Python's headers are found, pure where
  not (said on the build's output);
* ``pure``: pure, wherever;
* ``compiled``: compiled, or the build fails (CI insists on it this way).

Editable installs (``pip install -e .``) are always pure, so that an edit takes effect
without building again; asking for ``compiled`` there is an error.

mypy (with mypyc) is asked of the build only when it compiles: a pure or editable install
fetches nothing more than setuptools.
"""

import os
import runpy
import sys
import tempfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the hooks passed on unchanged)
    build_sdist,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

# mypyc's C differs from release to release; the range is the one CI builds and measures.
MYPYC_REQUIREMENT = "mypy[mypyc]>=2.4.1,<2.5"
CHOICE = "IOA_SEMANTIC_BUILD"
# Read by setup.py, which setuptools runs in this process: the choice already made here.
COMPILE_NOW = "_IOA_SEMANTIC_COMPILE_NOW"
ROOT = Path(__file__).resolve().parents[1]


def _asked() -> str:
    asked = os.environ.get(CHOICE, "auto").strip().lower() or "auto"
    if asked not in ("auto", "pure", "compiled"):
        raise SystemExit(f"{CHOICE}={asked!r}: expected auto, pure or compiled")
    return asked


def _compiler_found() -> str | None:
    """None when a C extension for this Python can be compiled here, or why it cannot: a
    tiny extension including Python.h, compiled (not linked) with setuptools' own compiler."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.errors import CCompilerError, DistutilsError
    from setuptools._distutils.sysconfig import customize_compiler, get_python_inc

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder, "probe.c")
        source.write_text("#include <Python.h>\nint ioa_probe(void) { return 0; }\n")
        compiler = new_compiler()
        customize_compiler(compiler)
        try:
            compiler.compile([str(source)], output_dir=folder, include_dirs=[get_python_inc()])
        except (CCompilerError, DistutilsError, OSError) as failure:
            return f"no C compiler could build an extension here ({failure})"
    return None


def _compiles(editable: bool) -> bool:
    asked = _asked()
    if editable:
        if asked == "compiled":
            raise SystemExit(f"{CHOICE}=compiled: an editable install is pure (install with "
                             "`pip install .` for the compiled build)")
        return False
    if asked == "pure":
        return False
    why_not = _compiler_found()
    if why_not is None:
        return True
    if asked == "compiled":
        raise SystemExit(f"{CHOICE}=compiled: {why_not}")
    print(f"ioa-semantic: building the pure package: {why_not}", file=sys.stderr)
    return False


def compiled_modules() -> tuple[str, ...]:
    """The modules the compiled build compiles, as ioa_semantic/_build.py names them."""
    names = runpy.run_path(str(ROOT / "ioa_semantic" / "_build.py"))["COMPILED_MODULES"]
    return tuple(names)


def get_requires_for_build_wheel(config_settings=None):  # type: ignore[no-untyped-def]
    requires = list(_setuptools.get_requires_for_build_wheel(config_settings))
    return [*requires, MYPYC_REQUIREMENT] if _compiles(editable=False) else requires


def get_requires_for_build_editable(config_settings=None):  # type: ignore[no-untyped-def]
    _compiles(editable=True)  # an explicit compiled fails here, before anything is fetched
    return _setuptools.get_requires_for_build_editable(config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):  # type: ignore[no-untyped-def]
    os.environ[COMPILE_NOW] = "1" if _compiles(editable=False) else ""
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):  # type: ignore[no-untyped-def]
    os.environ[COMPILE_NOW] = "1" if _compiles(editable=True) else ""
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
