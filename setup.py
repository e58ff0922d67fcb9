"""The compiled build's extensions (see build_backend/backend.py, which decides whether to
compile and says why); everything else about the package is in pyproject.toml."""

import atexit
import os
import shutil
import sys
import tempfile

from setuptools import setup

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_backend"))
from backend import COMPILE_NOW, compiled_modules  # noqa: E402

# A build folder of its own each time, never the clone's build/: setuptools packs whatever
# build/lib holds, so an extension left there by an earlier compiled build (of a module no
# longer compiled, or by a pure build's run) would be installed with this one.
BUILD = tempfile.mkdtemp(prefix="ioa-semantic-build-")
atexit.register(shutil.rmtree, BUILD, True)
OPTIONS = {"build": {"build_base": BUILD}}

if os.environ.get(COMPILE_NOW):
    from mypyc.build import mypycify

    # The package is strict-mypy in development (.ci/run holds it so, with the runtime
    # dependencies installed); the build's environment has none of them (their types are Any,
    # pyproject.toml's ignore_missing_imports), so the checks that Any trips are off here.
    relaxed = ["--no-warn-return-any", "--allow-subclassing-any", "--no-warn-unused-ignores"]
    paths = [os.path.join(*name.split(".")) + ".py" for name in compiled_modules()]
    # Three shared libraries, one a command loads whole: a check loads the core's, not the
    # trace audit's and the audit's too (a library's load makes every literal of its
    # modules, and the trace audit's were more than half of one library's 6.3 MB).
    # Calls between them stay native.
    trace = [p for p in paths if p.startswith(os.path.join("ioa_semantic", "trace", ""))]
    audit = [p for p in paths if p.startswith(os.path.join("ioa_semantic", "audit", ""))]
    core = [p for p in paths if p not in trace and p not in audit]
    groups = [(core, "ioa_semantic_core"), (audit, "ioa_semantic_audit"),
              (trace, "ioa_semantic_trace")]
    setup(ext_modules=mypycify([*relaxed, *paths], opt_level="3", separate=groups,
                               target_dir=os.path.join(BUILD, "mypyc")),
          options=OPTIONS)
else:
    setup(options=OPTIONS)
