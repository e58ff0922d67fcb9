"""What ``pip install ioa-semantic`` installs is what its commands import.

A library imported by the package but declared nowhere, or only in an extra while a command
of the plain install uses it, works in the development environment (the test extras pull it
in) and fails for a new user. Two holds:

* every third-party module the package imports, anywhere, comes from a distribution that
  ``pyproject.toml`` names itself, in its dependencies or in an extra (a library reached
  only through another's dependencies can be dropped by that other's next release);
* the commands of the plain install (check, audit and impact in each format, lint, sign,
  keygen) run with every module outside the dependencies' closure refused at import, as
  in an environment where no extra is installed; and what needs an extra says which.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from support import ROOT

EXAMPLES = ROOT / "examples"
AT = "2026-06-01T00:00:00Z"


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def _names(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` name, and those an extra they ask for names
    (``dask[distributed]`` names distributed)."""
    names: set[str] = set()
    for text in requirements:
        requirement = Requirement(text)
        names.add(canonicalize_name(requirement.name))
        try:
            listed = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:  # an extra not installed here (docs, say)
            listed = []
        for extra in requirement.extras:
            for inner in listed:
                wanted = Requirement(inner)
                if wanted.marker is not None and wanted.marker.evaluate({"extra": extra}):
                    names.add(canonicalize_name(wanted.name))
    return names


def _core() -> set[str]:
    return _names(_project()["dependencies"])  # type: ignore[arg-type]


def _declared() -> set[str]:
    extras: dict[str, list[str]] = _project()["optional-dependencies"]  # type: ignore[assignment]
    own = canonicalize_name("ioa-semantic")
    return _core() | {name for texts in extras.values() for name in _names(texts)} - {own}


def _closure(roots: set[str]) -> set[str]:
    """The distributions ``roots`` need when installed without extras, as installed here."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(requirement.name))
    return seen


def _third_party_imports() -> dict[str, set[str]]:
    """Each top-level module the package imports that is neither the standard library's nor
    its own, with the files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "ioa_semantic").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                # _sha2: the standard library's own since Python 3.12, tried before 3.11's.
                if top in sys.stdlib_module_names or top in ("ioa_semantic", "_sha2"):
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_library_the_package_imports_is_declared_by_its_own_name() -> None:
    providers = metadata.packages_distributions()
    declared = _declared()
    undeclared = {}
    for module, files in _third_party_imports().items():
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & declared:
            undeclared[module] = (sorted(dists), sorted(files))
    assert undeclared == {}


# A hook for the commands below: a module of a distribution outside the closure of the plain
# install (and of the extras named) is refused at import, as where no other extra is
# installed. Then the command line, or the code given.
_REFUSER = """
import importlib.abc, sys
REFUSED = frozenset({refused!r})
class Refuser(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed here)",
                                      name=name)
        return None
sys.meta_path.insert(0, Refuser())
{body}
"""
_COMMAND = """sys.argv = ["ioa-check", *sys.argv[1:]]
from ioa_semantic.cli.main import entry
entry()"""


def _refusing(folder: Path, extras: tuple[str, ...] = (), body: str = _COMMAND) -> Path:
    """A script that runs ``body`` with only the modules of the plain install and of
    ``extras`` importable."""
    optional: dict[str, list[str]] = _project()["optional-dependencies"]  # type: ignore[assignment]
    roots = _core() | {name for extra in extras for name in _names(optional[extra])}
    allowed = _closure(roots) | {canonicalize_name("ioa-semantic")}
    refused = sorted(module for module, dists in metadata.packages_distributions().items()
                     if module not in sys.stdlib_module_names
                     and not {canonicalize_name(d) for d in dists} & allowed)
    script = folder / f"refusing_{'_'.join(extras) or 'plain'}_{abs(hash(body))}.py"
    script.write_text(_REFUSER.format(refused=refused, body=body))
    return script


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A script that runs ``ioa-check`` with only the plain install's modules importable."""
    script = _refusing(tmp_path_factory.mktemp("plain"))
    assert "'starlette'" in script.read_text() and "'yaml'" in script.read_text()
    return script


def _run(script: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", str(script), *args], cwd=folder,
                          capture_output=True, text=True, timeout=120)


def test_the_refuser_refuses_what_an_extra_brings(plain_install: Path, tmp_path: Path) -> None:
    """The hold below would pass vacuously if nothing were refused: serve is the serve
    extra's, and says so (exit 2), as it does where the extra is not installed."""
    proc = _run(plain_install, tmp_path, "serve", "--profile", "cs-translation", "--port", "0")
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'ioa-semantic[serve]'" in proc.stderr


@pytest.mark.parametrize("report", ["text", "json", "sarif", "html"])
def test_the_plain_install_runs_check_audit_and_impact(plain_install: Path, tmp_path: Path,
                                                       report: str) -> None:
    envelope = str(EXAMPLES / "envelope-6.2.jsonld")
    registration = str(EXAMPLES / "registration-6.3.jsonld")
    check = _run(plain_install, tmp_path, envelope, "--profile", "cs-translation", "--at", AT,
                 "--format", report if report in ("text", "json") else "json", "--log",
                 "decisions.log")
    assert check.returncode == 0, check.stderr
    audit = _run(plain_install, tmp_path, "audit", registration, "--profile", "cs-translation",
                 "--at", AT, "--format", report)
    assert audit.returncode == 0, audit.stderr
    assert audit.stdout.strip()
    impact = _run(plain_install, tmp_path, "impact", "decisions.log", "--at",
                  "2027-01-02T00:00:00Z", "--format", report)
    assert impact.returncode == 0, impact.stderr
    if report == "html":
        assert audit.stdout.startswith("<!DOCTYPE html>")
        assert impact.stdout.startswith("<!DOCTYPE html>")


def test_the_plain_install_lints_signs_and_makes_keys(plain_install: Path,
                                                      tmp_path: Path) -> None:
    keygen = _run(plain_install, tmp_path, "keygen", "--output", "issuer.pem")
    assert keygen.returncode == 0, keygen.stderr
    artifact = json.loads((EXAMPLES / "sized" / "alignment.json").read_text())
    artifact.pop("proof", None)
    (tmp_path / "unsigned.json").write_text(json.dumps(artifact))
    sign = _run(plain_install, tmp_path, "sign", "unsigned.json", "--key", "issuer.pem",
                "--output", "signed.json")
    assert sign.returncode == 0, sign.stderr
    lint = _run(plain_install, tmp_path, "lint", "--profile", "cs-translation")
    assert lint.returncode == 0, lint.stderr


def test_the_a2a_gate_without_its_extra_says_which_to_install(tmp_path: Path) -> None:
    """The gate is imported, not run as a command: its import error names the extra (not a
    bare "No module named 'a2a'", which read from ioa_semantic/a2a.py looks like a broken
    package)."""
    script = _refusing(tmp_path, body="import ioa_semantic.a2a")
    proc = _run(script, tmp_path)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ioa_semantic.a2a needs the a2a extra"), last
    assert "pip install 'ioa-semantic[a2a]'" in last


def test_a_protobuf_trace_without_the_otlp_extra_says_which_to_install(tmp_path: Path) -> None:
    pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")
    trace_pb2 = pytest.importorskip("opentelemetry.proto.trace.v1.trace_pb2",
                                    reason="the otlp extra is not installed")
    message = trace_pb2.TracesData(resource_spans=[{}]).SerializeToString()
    (tmp_path / "spans.binpb").write_bytes(len(message).to_bytes(4, "big") + message)
    script = _refusing(tmp_path, ("trace",))
    proc = _run(script, tmp_path, "trace", "spans.binpb", "--format", "json")
    assert proc.returncode == 4, proc.stderr
    assert "needs opentelemetry-proto, the otlp extra (pip install 'ioa-semantic[otlp]')" in (
        proc.stdout)
