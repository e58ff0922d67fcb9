"""The documentation generated from code: docs/codes.md is what docs/gen_codes.py renders from
the code registry, as tests/test_traceability.py holds docs/conformance.md to the tests."""

import importlib.util
from pathlib import Path
from types import ModuleType

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
