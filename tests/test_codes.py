"""The code registry: every code the package can emit is registered, in a contract family,
and has a section; the shapes' derived codes exist too."""

from __future__ import annotations

import re
from pathlib import Path

from ioa_semantic._codes import CODES, FAMILIES
from ioa_semantic.pipeline.shapes import ShapeSet

PACKAGE = Path(__file__).resolve().parents[1] / "ioa_semantic"


def test_every_code_is_in_a_contract_family_and_has_a_section() -> None:
    for code, entry in CODES.items():
        assert entry.family in FAMILIES, code
        assert re.fullmatch(r"\d+(\.\d+)*", entry.section), code
        assert entry.meaning


def test_every_literal_code_in_the_package_is_registered() -> None:
    literal = re.compile(r'finding\(\s*"([a-z]+\.[a-z0-9.-]+)"')
    used = set()
    for path in PACKAGE.rglob("*.py"):
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


def _codes_only_in(pattern: str) -> set[str]:
    """Codes that the modules matching ``pattern`` emit and no other module does (the
    registry itself aside)."""
    literal = re.compile(r'"([a-z]+\.[a-z0-9.-]+)"')
    inside: set[str] = set()
    outside: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_codes.py":
            continue
        found = set(literal.findall(path.read_text())) & set(CODES)
        (inside if path.match(pattern) else outside).update(found)
    return (inside - outside) | {code for code in CODES if code.startswith("trace.")}


# Codes no data-driven case reaches through a check, each with where it is reached instead.
REACHED_ELSEWHERE = {
    # Codes of `ioa-check trace` alone: tests/test_trace_codes.py reaches each with a trace.
    **{code: "tests/test_trace_codes.py" for code in _codes_only_in("trace/*.py")},
    "json.unreadable": "a file the CLI cannot read (tests/test_cli.py)",
    "registration.conflict": "two registrations of one IRI in an audit (tests/test_audit.py)",
    "profile.revision-ambiguous": "two checks of one Checker (tests/test_checker.py)",
    # An audit's reading of a profile's own parameters (a check offered such a registration
    # refuses its file): tests/test_parameters.py audits each.
    "registration.parameter-type": "an audit under cs-translation-sized (tests/test_parameters.py)",
    "registration.unit-conflict": "an audit under cs-translation-sized (tests/test_parameters.py)",
    # Each needs a live server: tests/test_retrieval.py asserts every one of them against
    # real loopback servers, and checks its list equals the registry's retrieval family.
    **{code: "tests/test_retrieval.py" for code in CODES
       if code.startswith("retrieval.") and code != "retrieval.prohibited"},
}


def _registration_codes() -> set[str]:
    """Registration codes: --capability files stop the run, so they are checked directly."""
    from ioa_semantic._checker import shapes
    from ioa_semantic.pipeline.baseline import read_document
    from ioa_semantic.pipeline.contexts import ContextPolicy

    from support import registration_63

    broken = []
    for mutate in (
        lambda d: d.pop("inputs"),
        lambda d: d.__setitem__("outputs", ["text"]),
        lambda d: d.__setitem__("outputs", [5]),
        lambda d: d.__setitem__("@type", "ioa:Intent"),
        lambda d: d.__setitem__("@type", ["ioa:Capability", "ioa:Intent"]),
        lambda d: d.__setitem__("type", "Capability"),
        lambda d: d.pop("@id"),
        lambda d: (d["@context"].__setitem__("ontologyVersion", "ioa:ontologyVersion"),
                   d.__setitem__("ontologyVersion", [" ", "1"])),
        lambda d: (d["@context"].__setitem__("sourceLang", "ioa:sourceLang"),
                   d.__setitem__("sourceLang", "not a tag")),
        lambda d: (d["@context"].__setitem__("note", "https://ext.example/note"),
                   d.__setitem__("note", "x")),
        lambda d: d.__setitem__("@context", {}),
    ):
        doc = registration_63()
        mutate(doc)
        broken.append(doc)
    codes = set()
    for doc in broken:
        result = read_document(doc, "registration", shapes=shapes(), policy=ContextPolicy())
        codes |= {f.code for f in result.findings}
    return codes


def test_every_registered_code_is_reached_by_some_test_input() -> None:
    import json

    from ioa_semantic import Checker

    from support import case_options

    cases = Path(__file__).resolve().parent / "cases"
    reached: set[str] = set()
    for case_file in sorted(cases.glob("*/*/case.json")):
        spec = json.loads(case_file.read_text())
        folder = case_file.parent
        profile, options, params, at = case_options(folder, spec["args"])
        try:
            checker = Checker(profile, **options)
        except Exception:
            continue  # configuration-error cases are exercised by the CLI tests
        decision = checker.check((folder / spec["envelope"]).read_bytes(), params=params, at=at)
        reached |= {f.code for f in decision.findings}
    reached |= _registration_codes()
    missing = set(CODES) - reached - set(REACHED_ELSEWHERE)
    assert not missing, f"registered codes no test input reaches: {sorted(missing)}"


