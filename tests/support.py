"""Shared test inputs: the draft's own examples, read from the shipped examples folder."""

from __future__ import annotations

import copy
import json
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


def dumps(document: Any) -> bytes:
    return json.dumps(document).encode()
