"""The code registry: every code the package can emit is registered, in a contract family,
and has a section; the shapes' derived codes exist too."""

from __future__ import annotations

import re
from pathlib import Path

from ioa_semantic._codes import CODES, FAMILIES
from ioa_semantic._shapes import ShapeSet

PACKAGE = Path(__file__).resolve().parents[1] / "ioa_semantic"


def test_every_code_is_in_a_contract_family_and_has_a_section() -> None:
    for code, entry in CODES.items():
        assert entry.family in FAMILIES, code
        assert re.fullmatch(r"\d+(\.\d+)*", entry.section), code
        assert entry.meaning


def test_every_literal_code_in_the_package_is_registered() -> None:
    literal = re.compile(r'finding\(\s*"([a-z]+\.[a-z0-9.-]+)"')
    used = set()
    for path in PACKAGE.glob("*.py"):
        used |= set(literal.findall(path.read_text()))
    assert used, "no finding() calls found"
    assert used <= set(CODES), used - set(CODES)


def test_every_code_the_shapes_can_produce_is_registered() -> None:
    shapes = ShapeSet()
    suffixes = {"missing", "cardinality", "type", "rdf-type", "unknown-property"}
    for shape in shapes.shapes.values():
        codes = {f"{shape.family}.{s}" for s in suffixes}
        codes |= {f"{shape.family}.{p.pattern_code}" for p in shape.properties if p.pattern}
        assert codes <= set(CODES), codes - set(CODES)
