"""Shared test inputs: the draft's own examples, read from the shipped examples folder."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "cases"
IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")
AT = "2026-06-01T00:00:00Z"


def envelope_62() -> dict[str, Any]:
    """The 6.2 envelope (E0 of the requirements checklist)."""
    return copy.deepcopy(json.loads((EXAMPLES / "envelope-6.2.jsonld").read_text()))


def registration_63() -> dict[str, Any]:
    return copy.deepcopy(json.loads((EXAMPLES / "registration-6.3.jsonld").read_text()))


def write_registrations(path: Path, count: int) -> Path:
    """``count`` valid 6.3 registrations as JSON Lines, each with an IRI of its own."""
    registration = registration_63()
    with path.open("w") as handle:
        for i in range(count):
            registration["@id"] = f"cs:Capability{i}"
            handle.write(json.dumps(registration) + "\n")
    return path


def dumps(document: Any) -> bytes:
    return json.dumps(document).encode()


def case_options(folder: Path, args: list[str]) -> tuple[str, dict[str, Any], dict[str, str], Any]:
    """A case's command-line arguments as Checker arguments: profile, options, params, instant."""
    from datetime import datetime

    from ioa_semantic import Limits

    opts: dict[str, list[str]] = {}
    rest = list(args)
    while rest:
        flag = rest.pop(0)
        if flag == "--allow-private-addresses":  # the one option without a value
            opts[flag] = ["true"]
            continue
        opts.setdefault(flag, []).append(rest.pop(0))
    profile = opts["--profile"][0]
    if (folder / profile).exists():
        profile = str(folder / profile)
    options: dict[str, Any] = {
        "capabilities": [folder / p for p in opts.get("--capability", [])],
        "alignments": [str(folder / a) if (folder / a).exists() else a
                       for a in opts.get("--alignment", [])],
        "limits": Limits(**{field: int(opts[flag][0]) for field in Limits._fields
                            if (flag := "--" + field.replace("_", "-")) in opts}),
        "allow_remote": opts.get("--allow-remote", []),
        "allow_private_addresses": "--allow-private-addresses" in opts,
    }
    params = dict(p.split("=", 1) for p in opts.get("--param", []))
    at = datetime.fromisoformat(opts["--at"][0].replace("Z", "+00:00"))
    return profile, options, params, at


def run_python(script: str) -> subprocess.CompletedProcess[bytes]:
    """``script`` in a fresh interpreter, from the repository's folder (for ``examples/``),
    importing the installed package: ``-P`` keeps the source tree, which has no package
    data, off the path."""
    return subprocess.run([sys.executable, "-P", "-c", script], cwd=ROOT, capture_output=True,
                          timeout=60)

