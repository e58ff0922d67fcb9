"""The compiled build's extensions (see build_backend/backend.py, which decides whether to
compile and says why); everything else about the package is in pyproject.toml."""

import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_backend"))
from backend import COMPILE_NOW, compiled_modules  # noqa: E402

if os.environ.get(COMPILE_NOW):
    from mypyc.build import mypycify

    # The package is strict-mypy in development (.ci/run holds it so, with the runtime
    # dependencies installed); the build's environment has none of them (their types are Any,
    # pyproject.toml's ignore_missing_imports), so the checks that Any trips are off here.
    relaxed = ["--no-warn-return-any", "--allow-subclassing-any", "--no-warn-unused-ignores"]
    paths = [os.path.join(*name.split(".")) + ".py" for name in compiled_modules()]
    setup(ext_modules=mypycify([*relaxed, *paths], opt_level="3"))
else:
    setup()
