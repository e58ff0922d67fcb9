"""Profile-declared task parameters (contract rule 10; draft 6.4, 7.2, 12.5 S3): datatypes,
units and comparisons, read and compared in one place (``sources/parameters.py``), and the
shipped ``cs-translation-sized`` profile through every surface: the library, ``check``,
``audit``, the service and the A2A gate. The case folders ``tests/cases/compatibility/sized-*``
hold the check's verdicts; this file holds the comparisons themselves and the other surfaces.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from ioa_semantic import Checker, ProfileError, Verdict
from ioa_semantic.pipeline.intake import number_text, parse
from ioa_semantic.sources import parameters
from ioa_semantic.sources.loader import read_profile
from ioa_semantic.sources.parameters import Parameter

from support import shipped_profile_text

ROOT = Path(__file__).resolve().parents[1]
SIZED = ROOT / "examples" / "sized"
KB = "http://qudt.org/vocab/unit/KiloBYTE"
MB = "http://qudt.org/vocab/unit/MegaBYTE"
IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")
AT = "2026-06-01T00:00:00Z"


# --- the comparisons ---------------------------------------------------------------------


@pytest.mark.parametrize(("declared", "value", "bound", "holds"), [
    # Numbers compare as numbers, never as strings ("10000" < "5000" as text).
    (Parameter("n", "integer", "atMost"), "10000", "5000", False),
    (Parameter("n", "integer", "atMost"), "900", "1024", True),
    (Parameter("n", "integer", "atLeast"), "+7", "7", True),
    (Parameter("n", "integer", "equal"), "007", "7", True),
    (Parameter("d", "decimal", "atMost"), "1024.0", "1024", True),
    (Parameter("d", "decimal", "atMost"), "1024.000001", "1024", False),
    (Parameter("d", "decimal", "equal"), ".5", "0.50", True),
    # Instants compare as instants, whatever their offsets.
    (Parameter("t", "dateTime", "atMost"), "2026-06-01T02:00:00+02:00", "2026-06-01T00:00:00Z",
     True),
    (Parameter("t", "dateTime", "atLeast"), "2026-05-31T23:59:59Z", "2026-06-01T00:00:00Z",
     False),
    # The contract's table: language tags and media types.
    (Parameter("l", "language"), "ZH", "zh", True),
    (Parameter("l", "language"), "en-GB", "en", False),
    (Parameter("m", "mediaType"), "Text/Plain", "text/plain", True),
    (Parameter("m", "mediaType"), "text/plain; charset=UTF-8", "text/plain; charset=utf-8",
     False),
    (Parameter("s", "string"), "DE", "de", False),
    (Parameter("i", "iri"), "https://a.example/x", "https://a.example/x", True),
])
def test_a_value_compares_by_its_declared_datatype_and_comparison(
        declared: Parameter, value: str, bound: str, holds: bool) -> None:
    assert parameters.holds(declared, value, bound) is holds


@pytest.mark.parametrize(("datatype", "lexical"), [
    ("integer", "1.5"), ("integer", "ten"), ("integer", "1" * 65), ("decimal", "1e3"),
    ("decimal", "NaN"), ("dateTime", "2026-06-01T00:00:00"), ("dateTime", "2026-02-30T00:00:00Z"),
    ("language", "en_GB"), ("mediaType", "text"), ("iri", "not an iri"),
])
def test_a_lexical_form_not_of_the_datatype_is_refused(datatype: str, lexical: str) -> None:
    with pytest.raises(ValueError, match="is not"):
        parameters.key(Parameter("p", datatype), lexical)


def test_a_unit_is_never_converted() -> None:
    size = Parameter("documentSize", "decimal", "atMost", unit=KB)
    assert parameters.unit_problem(size, None) is None  # no unit stated: the declaration's
    assert parameters.unit_problem(size, KB) is None
    assert "no conversion" in str(parameters.unit_problem(size, MB))
    assert "has no unit" in str(parameters.unit_problem(Parameter("n", "integer"), KB))


def test_a_json_number_keeps_its_exact_decimal_text() -> None:
    value = parameters.value_of({"@value": 0.1})
    assert value is not None and Decimal(value.lexical) == Decimal("0.1")


def test_a_json_number_past_double_precision_is_read_by_its_text() -> None:
    """docs/parameters.md: a JSON number is read by its exact decimal text; one whose binary
    float is another value keeps its text from the parser on (1e-400 is not 0), and one
    whose text would be absurdly long written out is kept as written (no lexical form of a
    decimal, so refused as one rather than expanded to a billion digits)."""
    parsed = parse(b'{"a": 1024.0000000000000001, "b": 1e-400, "c": 0.1, "d": 1e999999999}')
    document = parsed.document
    assert document is not None
    texts = {k: number_text(v) for k, v in document.items()}
    assert Decimal(texts["a"]) == Decimal("1024.0000000000000001")
    assert Decimal(texts["b"]) == Decimal("1e-400") and texts["c"] == "0.1"
    assert texts["d"] == "1e999999999"
    size = Parameter("documentSize", "decimal", "atMost", unit=KB)
    with pytest.raises(ValueError):
        parameters.key(size, texts["d"])


def test_a_typed_literal_states_its_datatype_or_its_unit() -> None:
    """Draft 6.4 (values use the profile's types and units) and S3 (no implicit
    conversion): a literal's @type is never dropped. An XML Schema datatype must be the
    declaration's (an integer is a decimal); any other datatype names the value's unit, as
    UCUM and CDT literals do; a language-tagged literal is no decimal."""
    size = Parameter("documentSize", "decimal", "atMost", unit=KB)
    xsd = "http://www.w3.org/2001/XMLSchema#"
    typed = parameters.value_of({"@value": "2", "@type": MB})
    assert typed == parameters.Value("2", MB) and parameters.unit_problem(size, MB)
    for datatype, problem in ((xsd + "decimal", False), (xsd + "integer", False),
                              (xsd + "string", True), (xsd + "double", True)):
        value = parameters.value_of({"@value": "2", "@type": datatype})
        assert value is not None
        assert bool(parameters.datatype_problem(size, value)) is problem, datatype
    tagged = parameters.value_of({"@value": "2", "@language": "en"})
    assert tagged is not None and parameters.datatype_problem(size, tagged)


def test_an_audit_reports_a_registration_value_typed_otherwise(tmp_path: Path) -> None:
    """The same reading for a registration: "1024"^^xsd:string is no decimal of kB."""
    provider = json.loads((SIZED / "provider.jsonld").read_text())
    provider["documentSize"] = {"@value": "1024",
                                "@type": "http://www.w3.org/2001/XMLSchema#string"}
    (tmp_path / "directory.jsonl").write_text(json.dumps(provider) + "\n")
    run = _run(["audit", "directory.jsonl", "--profile", "cs-translation-sized", "--format",
                "json"], tmp_path)
    result = json.loads(run.stdout.splitlines()[0])
    assert [x["code"] for x in result["reasons"]] == ["registration.parameter-type"], result


# --- declarations in a profile ---------------------------------------------------------------


def _profile(declaration: str) -> bytes:
    text = shipped_profile_text().replace(
        '    iop:allowedScheme "https", "http", "urn" ;',
        f'    iop:allowedScheme "https", "http", "urn" ;\n    iop:taskParameter {declaration} ;')
    text = "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n" + text
    return text.encode()


@pytest.mark.parametrize(("declaration", "problem"), [
    ('[ iop:name "n" ; iop:datatype xsd:string ; iop:comparison iop:atMost ]', "has no order"),
    ('[ iop:name "n" ; iop:datatype xsd:string ; iop:unit <http://qudt.org/vocab/unit/NUM> ]',
     "no quantity"),
    ('[ iop:name "sourceLang" ; iop:term <https://ioa.example/lang> ; iop:datatype xsd:string ]',
     "restates a built-in"),
    ('[ iop:name "n" ; iop:term <https://example.org/ioa/semantic#capabilityRefs> ; '
     'iop:datatype xsd:string ]', "baseline vocabulary"),
    ('[ iop:name "a" ; iop:term <https://e.example/t> ; iop:datatype xsd:string ], '
     '[ iop:name "b" ; iop:term <https://e.example/t> ; iop:datatype xsd:string ]',
     "same term"),
    ('[ iop:name "n" ; iop:datatype xsd:integer ; iop:allowedValue "ten" ]', "is not an integer"),
    ('[ iop:name "n" ; iop:datatype xsd:float ]', "iop:datatype must be one of the datatypes"),
    ('[ iop:name "n" ; iop:datatype xsd:integer ; iop:comparison iop:lessThan ]',
     "iop:lessThan is not a term of the profile vocabulary"),
    ('[ iop:name "a=b" ; iop:datatype xsd:integer ]', "a name is a word"),
])
def test_a_declaration_the_profile_cannot_mean_is_a_configuration_error(
        declaration: str, problem: str) -> None:
    with pytest.raises(ProfileError, match=problem):
        read_profile(_profile(declaration), "p.ttl")


def test_the_shipped_profiles_declare_their_parameters() -> None:
    sized = Checker("cs-translation-sized").profile
    assert sized.parameters["documentSize"] == Parameter(
        "documentSize", "decimal", "atMost", "https://example.org/onto/cs#documentSize", KB)
    assert sized.parameters["sourceLang"] == parameters.BUILT_IN["sourceLang"]
    legal = Checker("legal-translation").profile
    assert legal.parameters["jurisdiction"].term == "https://example.org/onto/law#jurisdiction"


# --- the surfaces --------------------------------------------------------------------------


def _envelope(size: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SIZED / "envelope.jsonld").read_text())
    if size is None:
        del document["profileContext"]["documentSize"]
    else:
        document["profileContext"]["documentSize"] = size
    return document


def _run(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, input=stdin.decode() if stdin else None,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_readme_of_the_example_runs_as_written(tmp_path: Path) -> None:
    run = _run([str(SIZED / "envelope.jsonld"), "--profile", "cs-translation-sized",
                "--capability", str(SIZED / "provider.jsonld"), "--alignment",
                str(SIZED / "alignment.json"), "--at", AT, "--format", "json"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["verdict"] == "compatible"


def test_an_audit_reports_a_registration_value_not_of_its_datatype_or_unit(tmp_path: Path) -> None:
    provider = json.loads((SIZED / "provider.jsonld").read_text())
    provider["@context"]["qudt"] = "http://qudt.org/schema/qudt/"
    lines = []
    for size in (1024, "huge", {"qudt:numericValue": 1, "qudt:unit": {"@id": MB}},
                 {"qudt:numericValue": 1024, "qudt:unit": {"@id": KB}}):
        lines.append(json.dumps({**provider, "documentSize": size}))
    (tmp_path / "directory.jsonl").write_text("\n".join(lines) + "\n")
    run = _run(["audit", "directory.jsonl", "--profile", "cs-translation-sized", "--format",
                "json"], tmp_path)
    results = [json.loads(line) for line in run.stdout.splitlines()][:-1]
    assert [(r["status"], [x["code"] for x in r["reasons"]]) for r in results] == [
        ("valid", []), ("invalid", ["registration.parameter-type"]),
        ("invalid", ["registration.unit-conflict"]), ("valid", [])]
    # Under a profile that declares no such parameter, the member is not the baseline's.
    other = _run(["audit", "directory.jsonl", "--profile", "cs-translation", "--format", "json"],
                 tmp_path)
    assert json.loads(other.stdout.splitlines()[0])["reasons"][0]["code"] == (
        "registration.unknown-property")


def test_the_service_judges_the_declared_parameter(tmp_path: Path) -> None:
    from test_service import Service

    args = ["--profile", "cs-translation-sized", "--capability", str(SIZED / "provider.jsonld"),
            "--alignment", str(SIZED / "alignment.json")]
    with Service(args, tmp_path, tmp_path / "stderr.log") as service, httpx.Client() as client:
        def verdict(document: dict[str, Any], *query: tuple[str, str]) -> tuple[str, list[str]]:
            answer = client.post(f"{service.url}/v1/check", content=json.dumps(document).encode(),
                                 params=(("at", AT), *query),
                                 headers={"Content-Type": "application/ld+json"}, timeout=60)
            body = answer.json()
            return body["verdict"], [r["code"] for r in body["reasons"]]

        assert verdict(_envelope(300)) == ("compatible", [])
        assert verdict(_envelope(1500)) == ("incompatible", ["capability.parameter-conflict"])
        assert verdict(_envelope(None), ("param", "documentSize=300")) == ("compatible", [])
        assert verdict(_envelope(None), ("param", "documentSize=3MB"))[1][0] == (
            "constraint.parameter-type")


def test_the_a2a_gate_judges_the_declared_parameter() -> None:
    pytest.importorskip("a2a")
    from test_a2a import Agent
    from test_negotiation import _send

    checker = Checker("cs-translation-sized", capabilities=[SIZED / "provider.jsonld"],
                      alignments=[SIZED / "alignment.json"])
    with Agent("codes", checker=checker) as agent:
        inside = asyncio.run(_send(agent, json.dumps(_envelope(300)), {}))
        from_part = asyncio.run(_send(agent, json.dumps(_envelope(None)), {"documentSize": "300"}))
        too_large = asyncio.run(_send(agent, json.dumps(_envelope(1500)), {}))
    assert (inside, from_part) == ("accepted", "accepted")
    assert "capability.parameter-conflict" in too_large


def test_a_library_check_and_the_cli_agree_on_every_sized_case() -> None:
    """The sized cases run through both engines: the compiled engine declines an envelope
    carrying a profile's own parameter to the reference, which decides it."""
    for folder in sorted((ROOT / "tests" / "cases" / "compatibility").glob("sized-*")):
        spec = json.loads((folder / "case.json").read_text())
        from support import case_options

        profile, options, params, at = case_options(folder, spec["args"])
        verdicts = {engine: Checker(profile, engine=engine, **options).check(
            (folder / "envelope.jsonld").read_bytes(), params=params, at=at).verdict
            for engine in ("compiled", "reference")}
        assert set(verdicts.values()) == {Verdict(spec["expect"]["verdict"])}, folder.name
