"""A hostile review of the profile-shape feature (issue 23): each test states a behaviour the
contract or docs/constraints.md requires and that the feature does not have today. Each
fails now for the reason in its docstring and passes once the bug is fixed; the one test
that passes today is marked as a regression guard.

The data-driven halves of some findings are case folders, ``tests/cases/fuzz/review23-*``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pyoxigraph
import pytest

from ioa_semantic import Checker, ConfigurationError
from ioa_semantic.audit.workers import judge_batch

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "ioa_semantic" / "data" / "profiles"
LEGAL_ENVELOPE = ROOT / "examples" / "legal-contract.jsonld"
REGISTRATION = ROOT / "examples" / "registration-6.3.jsonld"
AT = datetime(2026, 6, 1, tzinfo=UTC)
PREFIXES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
@prefix param: <https://ioa-semantic.org/ns/parameter#> .
@prefix law: <https://example.org/onto/law#> .
@prefix ex: <https://example.org/review#> .
"""


def legal_like(folder: Path, shapes: str, vocabulary: str = "") -> Path:
    """A copy of the shipped legal-translation profile whose shape file is ``shapes`` (and
    whose vocabulary has ``vocabulary`` added), in ``folder``."""
    profile = (PROFILES / "legal-translation.ttl").read_text(encoding="utf-8").replace(
        'iop:shapes "legal-translation.shapes.ttl"', 'iop:shapes "review.shapes.ttl"')
    assert "review.shapes.ttl" in profile
    (folder / "review.ttl").write_text(profile + "\n" + vocabulary, encoding="utf-8")
    (folder / "review.shapes.ttl").write_text(PREFIXES + shapes, encoding="utf-8")
    return folder / "review.ttl"


def legal_envelope(**changes: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(LEGAL_ENVELOPE.read_text(encoding="utf-8"))
    envelope["profileContext"].update(changes)
    return envelope


def first_term(term: str) -> bytes:
    envelope = legal_envelope()
    envelope["profileContext"]["termBindings"][0]["term"] = term
    return json.dumps(envelope).encode()


def only_term(term: str) -> bytes:
    envelope = legal_envelope()
    envelope["profileContext"]["termBindings"] = [
        dict(envelope["profileContext"]["termBindings"][0], term=term)]
    return json.dumps(envelope).encode()


def decide(profile: str | Path, envelope: bytes, params: dict[str, str],
           engine: str = "compiled") -> dict[str, Any]:
    decision = Checker(str(profile), engine=engine).check(envelope, params=params, at=AT)
    result: dict[str, Any] = decision.as_dict()
    return result


def codes(result: dict[str, Any]) -> list[str]:
    return [r["code"] for r in result["reasons"]]


def cli(*args: str | bytes, cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ioa_semantic", *args], cwd=cwd,
                          capture_output=True, timeout=120, check=False)


# --- 1. wrong acceptance ---------------------------------------------------------------------


def test_a_term_bindings_list_is_not_a_way_around_the_binding_limit() -> None:
    """High. ``"termBindings": {"@list": [...]}`` (no context change: the value is a list
    object) passes the baseline, and envelope_quads drops every @list value, so the shapes
    (and the domain checks of the senses) see no binding at all: eleven bindings, which
    TermBindingLimitShape (sh:maxCount 10) forbids, come out compatible with only the
    "bind your terms" warning. Expected: not compatible (the baseline refuses the list, or
    the shape sees its eleven bindings)."""
    envelope = legal_envelope()
    binding = envelope["profileContext"]["termBindings"][0]
    envelope["profileContext"]["termBindings"] = {
        "@list": [dict(binding, term=f"term {i}") for i in range(11)]}
    for engine in ("compiled", "reference"):
        result = decide("legal-translation", json.dumps(envelope).encode(),
                        {"jurisdiction": "DE"}, engine)
        assert result["verdict"] != "compatible", (engine, codes(result))


def test_sh_pattern_dot_does_not_match_a_carriage_return() -> None:
    """Low. XPath's ``.`` (XML Schema 2, F.1) matches any character but \\n and \\r; Python's
    matches \\r, and python_pattern translates only ``$``. A shape saying a term is one line
    (``^.+$``) lets ``"LL.M.\\rX"`` through. Expected: incompatible."""
    with _folder() as folder:
        profile = legal_like(folder, """
ex:OneLineTerm a sh:NodeShape ; sh:targetClass ioa:TermBinding ;
    sh:property [ sh:path ioa:term ; sh:pattern "^.+$" ; sh:message "a term is one line" ] .
""")
        # the shape is evaluated: a line feed breaks the line
        assert decide(profile, first_term("LL.M.\nX"), {"jurisdiction": "DE"})[
            "verdict"] == "incompatible"
        result = decide(profile, first_term("LL.M.\rX"), {"jurisdiction": "DE"})
        assert result["verdict"] == "incompatible", codes(result)
        assert "constraint.shape-violated" in codes(result)


def test_sh_pattern_backslash_w_is_xpaths() -> None:
    """Low. XPath's ``\\w`` is every character but punctuation, separators and others
    (\\p{P}, \\p{Z}, \\p{C}), so ``_`` (Pc) is not one; Python's ``\\w`` includes ``_``. A
    one-word term shape (``^\\w+$``) accepts ``force_majeure``. Expected: incompatible."""
    with _folder() as folder:
        profile = legal_like(folder, r"""
ex:OneWordTerm a sh:NodeShape ; sh:targetClass ioa:TermBinding ;
    sh:property [ sh:path ioa:term ; sh:pattern "^\\w+$" ; sh:message "a term is one word" ] .
""")
        # the shape is evaluated: a space is no word character in either reading
        assert decide(profile, only_term("force majeure"), {"jurisdiction": "DE"})[
            "verdict"] == "incompatible"
        result = decide(profile, only_term("force_majeure"), {"jurisdiction": "DE"})
        assert result["verdict"] == "incompatible", codes(result)


def test_sh_pattern_class_subtraction_is_xpaths() -> None:
    """Low. XPath writes class subtraction ``[A-Z-[Q]]`` (any capital but Q); Python reads
    the class ``[A-Z-[Q]`` followed by a literal ``]``, so the jurisdiction shape
    ``^[A-Z-[Q]]{2}$`` accepts ``A]]`` and refuses ``DE``. Expected: DE compatible, A]]
    incompatible."""
    with _folder() as folder:
        profile = legal_like(folder, """
ex:Jurisdiction a sh:NodeShape ; sh:targetClass iop:TaskParameters ;
    sh:property [ sh:path param:jurisdiction ; sh:pattern "^[A-Z-[Q]]{2}$" ] .
""")
        envelope = LEGAL_ENVELOPE.read_bytes()
        assert decide(profile, envelope, {"jurisdiction": "DE"})["verdict"] == "compatible"
        assert decide(profile, envelope, {"jurisdiction": "A]]"})["verdict"] == "incompatible"


# --- the compiled engine held to the reference -------------------------------------------------


def test_the_engines_agree_on_a_literal_oxigraph_normalises() -> None:
    """Medium. The reference evaluates compiled shapes over an Oxigraph store, which keeps
    ``"01"^^xsd:integer`` as ``"1"``; the compiled engine's ShapesStore indexes the quads as
    parsed and keeps ``"01"``. A compiled pattern shape on the vocabulary's capability
    (``^0``) is violated under the reference and met under the compiled engine: verdicts
    incompatible vs compatible for the same check. Expected: the same decision."""
    with _folder() as folder:
        profile = legal_like(folder, """
ex:Rank a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path ex:rank ; sh:pattern "^0" ; sh:message "a rank has a leading zero" ] .
""", 'law:LegalTranslation <https://example.org/review#rank> '
     '"01"^^<http://www.w3.org/2001/XMLSchema#integer> .\n')
        shapes = Checker(str(profile)).constraints
        assert shapes is not None and shapes.routes[0].engine == "compiled"
        envelope = LEGAL_ENVELOPE.read_bytes()
        compiled = decide(profile, envelope, {"jurisdiction": "DE"}, "compiled")
        reference = decide(profile, envelope, {"jurisdiction": "DE"}, "reference")
        assert (compiled["verdict"], compiled["reasons"]) == (
            reference["verdict"], reference["reasons"])


# --- 2. crashes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [
    {"jurisdiction": "DE", "x\udcff": "1"},  # a name that is not UTF-8 (quote() raises)
    {"jurisdiction": "D\udcffE"},  # a value that is not UTF-8 (pyoxigraph.Literal raises)
], ids=["name", "value"])
def test_a_parameter_that_is_not_unicode_text_gets_a_verdict(params: dict[str, str]) -> None:
    """Medium. task_quads percent-encodes the name with quote() (UnicodeEncodeError on a
    lone surrogate) and makes a pyoxigraph Literal of the value (ValueError): a check under
    a profile with shapes raises, where cs-translation (no shapes) decides. Expected: a
    Decision (the parameter refused, or the shapes unevaluable), never an exception."""
    for engine in ("compiled", "reference"):
        result = decide("legal-translation", LEGAL_ENVELOPE.read_bytes(), params, engine)
        assert result["verdict"] in ("incompatible", "indeterminate", "invalid"), result


def test_the_command_does_not_crash_on_a_parameter_that_is_not_utf8() -> None:
    """Medium. ``ioa-check ENV --profile legal-translation --param jurisdiction=$'\\xff'``
    (the argument is bytes the locale cannot decode, surrogate-escaped by Python) exits 70
    with a traceback. Expected: one verdict line, an exit status of a verdict (or 2, a
    usage error, with nothing on stdout)."""
    run = cli(str(LEGAL_ENVELOPE), "--profile", "legal-translation", "--at",
              "2026-06-01T00:00:00Z", "--format", "json", b"--param", b"jurisdiction=\xff")
    assert run.returncode != 70, run.stderr.decode(errors="replace")[-400:]
    assert b"Traceback" not in run.stderr


ILL_TYPED_COUNT = """
ex:Limit a sh:NodeShape ; sh:targetClass ioa:Context ;
    sh:property [ sh:path ioa:termBindings ; sh:maxCount "abc"^^xsd:integer ] .
"""


def test_an_ill_typed_count_in_a_shape_file_is_a_configuration_error() -> None:
    """Medium. ``sh:maxCount "abc"^^xsd:integer`` passes _compile_property's datatype test
    and reaches ``int("abc")``: building the Checker raises a bare ValueError (exit 70 from
    the command). Expected: a ConfigurationError naming the file (exit 2), as for any shape
    file the project cannot route."""
    with _folder() as folder:
        profile = legal_like(folder, ILL_TYPED_COUNT)
        with pytest.raises(ConfigurationError):
            Checker(str(profile))
        run = cli(str(LEGAL_ENVELOPE), "--profile", str(profile), "--param", "jurisdiction=DE",
                  "--at", "2026-06-01T00:00:00Z", "--format", "json")
        assert run.returncode == 2, run.stderr.decode(errors="replace")[-400:]
        assert run.stdout == b""


def test_lint_reports_an_ill_typed_count_instead_of_crashing() -> None:
    """Medium. ``ioa-check lint --profile P`` and ``ioa-check lint S.shapes.ttl`` exit 70
    with a traceback on the same file (and ``lint P`` says ok). Expected: exit 1 naming the
    problem (the file lints as not ok), no traceback."""
    with _folder() as folder:
        profile = legal_like(folder, ILL_TYPED_COUNT)
        for args in (("lint", "--profile", str(profile)),
                     ("lint", str(folder / "review.shapes.ttl"))):
            run = cli(*args)
            assert run.returncode == 1, (args, run.stderr.decode(errors="replace")[-400:])
            assert b"Traceback" not in run.stderr


# --- 4. audit ------------------------------------------------------------------------------------


def _registration(ident: str, **members: Any) -> bytes:
    document: dict[str, Any] = json.loads(REGISTRATION.read_text(encoding="utf-8"))
    document["@id"] = ident
    document.update(members)
    return json.dumps(document).encode()


def test_an_audited_registrations_result_does_not_depend_on_its_batch() -> None:
    """Medium. audit.constraints shares one store between a batch's registrations when no
    registration names another's subject, but a Core path can still join them through a
    node none of them is the subject of: two registrations provided by the same agent meet
    ``( ioa:providedBy [ sh:inversePath ioa:providedBy ] )`` twice in a batch and once
    alone. Each is invalid in a file with the other and valid on its own (or in a file of
    its own, or split by --jobs). Expected: the same status alone and in the batch."""
    with _folder() as folder:
        profile = legal_like(folder, """
ex:OneCapabilityAnAgent a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path ( ioa:providedBy [ sh:inversePath ioa:providedBy ] ) ;
                  sh:maxCount 1 ; sh:message "an agent provides one capability" ] .
""")
        checker = Checker(str(profile))
        agent = {"ioa:providedBy": {"@id": "https://agents.example.org/a"}}
        first = _registration("https://example.org/cap/0", **agent)
        second = _registration("https://example.org/cap/1", **agent)
        alone = judge_batch(checker, [("r.jsonl", 0, first, ())])[0][0]
        together = judge_batch(checker, [("r.jsonl", 0, first, ()),
                                         ("r.jsonl", 1, second, ())])[0][0]
        assert (together.status, together.reasons) == (alone.status, alone.reasons)


def test_an_audit_reports_a_shape_on_a_node_a_registration_brings() -> None:
    """Medium. A result whose focus node is not a registration's subject "belongs to no
    registration" and is dropped, so a registration whose provider violates
    ``sh:targetObjectsOf ioa:providedBy`` (a node the registration alone makes a target) is
    audited valid. Expected: not valid (the registration violates the profile's shape)."""
    with _folder() as folder:
        profile = legal_like(folder, r"""
ex:RegistryAgents a sh:NodeShape ; sh:targetObjectsOf ioa:providedBy ;
    sh:pattern "^https://registry\\.example\\.org/" ;
    sh:message "a provider is an agent of the registry" .
""")
        checker = Checker(str(profile))
        assert checker.constraints is not None
        # the shape is evaluated, and its focus is the provider the registration names
        store = pyoxigraph.Store()
        store.add(pyoxigraph.Quad(
            pyoxigraph.NamedNode("https://example.org/cap/0"),
            pyoxigraph.NamedNode("https://example.org/ioa/semantic#providedBy"),
            pyoxigraph.NamedNode("https://agents.example.org/a")))
        assert [r.focus for r in checker.constraints.results(store)] == [
            "https://agents.example.org/a"]
        registration = _registration("https://example.org/cap/0", **{
            "ioa:providedBy": {"@id": "https://agents.example.org/a"}})
        result = judge_batch(checker, [("r.jsonl", 0, registration, ())])[0][0]
        assert result.status != "valid", result


# --- 6. the contract -----------------------------------------------------------------------------


def test_a_shape_conflict_has_a_renegotiate_remedy() -> None:
    """Low. CONTRACT.md 2 (Remedies): ``renegotiate`` is the remedy when "a completed check
    found a conflict (incompatible)", and constraint.shape-violated is such a conflict; but
    remedies.ANSWERS leaves it out, so an incompatible result decided by a shape alone has
    ``remedies: []``. Expected: a renegotiate remedy answering constraint.shape-violated."""
    result = decide("legal-translation", LEGAL_ENVELOPE.read_bytes(), {"jurisdiction": "de"})
    assert result["verdict"] == "incompatible"
    assert codes(result) == ["constraint.shape-violated"]
    assert any(r["action"] == "renegotiate" and "constraint.shape-violated" in r["codes"]
               for r in result["remedies"]), result["remedies"]


_ABSOLUTE_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$")


def test_a_literal_focus_nodes_reason_path_is_a_pointer_or_an_iri() -> None:
    """Low. CONTRACT.md 2: a reason's ``path`` is a JSON Pointer into the input or an IRI.
    as_finding writes the focus node's text whatever it is, so a shape whose focus nodes are
    literals (``sh:targetObjectsOf ioa:term``, SHACL 2.1.3.5) gives the path ``"LL.M."``,
    quotes included. Expected: a JSON Pointer (``/profileContext/termBindings/0/term``, or
    at least ``""``) or an IRI."""
    with _folder() as folder:
        profile = legal_like(folder, """
ex:ShortTerms a sh:NodeShape ; sh:targetObjectsOf ioa:term ; sh:maxLength 4 ;
    sh:message "a term is short" .
""")
        result = decide(profile, LEGAL_ENVELOPE.read_bytes(), {"jurisdiction": "DE"})
        paths = [r["path"] for r in result["reasons"] if r["code"] == "constraint.shape-violated"]
        assert paths
        bad = [p for p in paths if not (p == "" or p.startswith("/") or _ABSOLUTE_IRI.match(p))]
        assert not bad, bad


def test_a_shape_reason_on_the_task_context_points_at_it() -> None:
    """Low. A violation on the envelope's profileContext (a blank node) gets the path ``""``,
    which the contract reserves for "the whole document"; the reason names no field but in
    its message (as an IRI of a predicate). The baseline tracks the JSON Pointer of every
    node (Located), so the violation of TermBindingLimitShape can name
    ``/profileContext`` (or ``/profileContext/termBindings``). Expected: the path names
    the member in conflict."""
    envelope = legal_envelope()
    binding = envelope["profileContext"]["termBindings"][0]
    envelope["profileContext"]["termBindings"] = [
        dict(binding, term=f"term {i}") for i in range(11)]
    result = decide("legal-translation", json.dumps(envelope).encode(), {"jurisdiction": "DE"})
    paths = [r["path"] for r in result["reasons"] if r["code"] == "constraint.shape-violated"]
    assert paths and all(p.startswith("/profileContext") for p in paths), paths


def test_regression_guard_shape_outputs_validate_against_the_output_schema() -> None:
    """Regression guard (passes today): every line the command prints for the shipped
    profile's shape reasons (violation, warning, unevaluable past the pySHACL bound)
    validates against the published output schema."""
    schema = json.loads((ROOT / "ioa_semantic" / "data" / "output.schema.json").read_text())
    envelope = legal_envelope()
    binding = envelope["profileContext"]["termBindings"][0]
    envelope["profileContext"]["termBindings"] = [
        dict(binding, term=f"term {i}") for i in range(700)]
    with _folder() as folder:
        big = folder / "big.jsonld"
        big.write_text(json.dumps(envelope), encoding="utf-8")
        unbound = folder / "unbound.jsonld"
        without = legal_envelope()
        del without["profileContext"]["termBindings"]
        unbound.write_text(json.dumps(without), encoding="utf-8")
        for path, param in ((LEGAL_ENVELOPE, "jurisdiction=de"), (big, "jurisdiction=DE"),
                            (unbound, "jurisdiction=DE")):
            run = cli(str(path), "--profile", "legal-translation", "--param", param,
                      "--at", "2026-06-01T00:00:00Z", "--format", "json")
            assert run.returncode in (0, 1, 3), run.stderr[-400:]
            for line in run.stdout.decode().splitlines():
                jsonschema.validate(json.loads(line), schema)


# --- helpers ---------------------------------------------------------------------------------


class _folder:
    """A temporary folder for a profile and its shape file (a context manager, so that the
    tests above read top to bottom without fixtures)."""

    def __enter__(self) -> Path:
        import tempfile

        self._dir = tempfile.TemporaryDirectory(prefix="review23-")
        return Path(self._dir.name)

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()
