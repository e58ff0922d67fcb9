"""What a second hostile review of 2026-12-01 (the audit, the caches, the IRI pattern, the
reporting walk) found, held as behaviour: each test failed when it was written and passes
since the fix; its docstring says what went wrong before and why it matters.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker
from ioa_semantic.audit.run import Audit

from support import envelope_62, registration_63, shipped_profile_text

AT = datetime(2026, 6, 1, tzinfo=UTC)


def _registration(**changes: Any) -> dict[str, Any]:
    doc = registration_63()
    for key, value in changes.items():
        doc[key] = value
    return doc


def _with_ontology_terms(doc: dict[str, Any]) -> dict[str, Any]:
    doc["@context"]["ontologyId"] = {"@id": "ioa:ontologyId", "@type": "@id"}
    doc["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
    return doc


def _audited(docs: list[dict[str, Any]], engine: str = "compiled") -> Audit:
    audit = Audit(Checker("cs-translation", engine=engine))
    for index, doc in enumerate(docs):
        audit.registration(json.dumps(doc).encode(), "-", index)
    return audit


# --- wrong acceptance ---------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["compiled", "reference"])
@pytest.mark.parametrize("media", ["text/plain\n", "text/plain;charset=utf-8\n"])
def test_a_media_type_with_a_trailing_newline_is_not_a_media_type(engine: str, media: str) -> None:
    """A registration whose ``inputs`` is ``"text/plain\\n"`` is judged valid by both engines.

    The shapes' media-type pattern ends in ``$`` and is run with Python's ``re.search``,
    where ``$`` also matches before a final newline (SHACL/XPath regexes do not: there ``$``
    is the end of the string). ``"text/plain\\n"`` is no RFC 6838 media type, so this is
    malformed input judged valid; in an audit it is then also keyed as ``text/plain`` (the
    key strips it), so it silently joins that declaration.
    """
    doc = _registration(inputs=[media])
    baseline = Checker("cs-translation", engine=engine).baseline(
        json.dumps(doc).encode(), "registration")
    assert any(f.code == "registration.media-type" for f in baseline.findings), baseline.findings


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_a_language_tag_with_a_trailing_newline_is_not_a_language_tag(engine: str) -> None:
    """An envelope whose ``profileContext`` has ``sourceLang: "zh\\n"`` is ``compatible``.

    Same cause as the media type (``^...$`` searched with Python's ``re``, where ``$``
    matches before a final newline): ``"zh\\n"`` is no BCP 47 tag, so the envelope is
    malformed and must be ``invalid`` (``envelope.language-tag``), never ``compatible``.
    """
    envelope = envelope_62()
    envelope["@context"]["sourceLang"] = "ioa:sourceLang"
    envelope["profileContext"]["sourceLang"] = "zh\n"
    result = Checker("cs-translation", engine=engine).check(json.dumps(envelope).encode(), at=AT)
    assert result.verdict.value == "invalid", (result.verdict, [r.code for r in result.reasons])


# --- engine mismatch ----------------------------------------------------------------------


def _https_only_profile(tmp_path: Path) -> str:
    text = shipped_profile_text()
    anchor = '    iop:allowedScheme "https", "http", "urn" ;'
    assert anchor in text
    path = tmp_path / "https-only.ttl"
    path.write_text(text.replace(anchor, '    iop:allowedScheme "https" ;').replace(
        "<https://example.org/profiles/cs-translation> a iop:Profile",
        "<https://example.org/profiles/review/https-only> a iop:Profile"))
    return str(path)


def test_a_property_of_a_disallowed_scheme_is_judged_alike_by_both_engines(tmp_path: Path) -> None:
    """Under a profile that allows only ``https``, the 6.3 registration itself (its
    ``label`` is ``rdfs:label``, an ``http:`` IRI) is ``invalid`` for the reference engine
    (``jsonld.scheme-not-allowed`` at ``/label``) and clean for the compiled engine.

    The compiled walk expands a member's key through the sender's terms
    (``_expand_reference`` with ``vocab``) and returns the term's IRI without holding its
    scheme to the policy, so the compiled engine (the default, and the audit's kinds built
    on it) accepts what the reference rejects: ``ioa-check audit`` gives ``valid`` or
    ``invalid`` depending on ``--engine``.
    """
    profile = _https_only_profile(tmp_path)
    data = json.dumps(registration_63()).encode()
    compiled = Checker(profile, engine="compiled").baseline(data, "registration")
    reference = Checker(profile, engine="reference").baseline(data, "registration")
    assert [f.code for f in reference.findings] == ["jsonld.scheme-not-allowed"]
    assert sorted((f.code, f.path) for f in compiled.findings) == sorted(
        (f.code, f.path) for f in reference.findings)


# --- missed conflicts ---------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_quoted_parameter_values_that_differ_are_a_conflict(engine: str) -> None:
    """``text/plain;a="1 ; 2"`` and ``text/plain;a="1;2"`` (both valid media types: a
    quoted parameter value may hold ``;`` and spaces) are keyed alike by
    ``audit.judge._media_key``, which splits the parameters on every ``;`` (inside quotes
    too) and strips each piece. The contract compares parameters exactly, so one capability
    IRI registered with the two is a conflict, which the audit does not report.
    """
    audit = _audited([_registration(inputs=['text/plain;a="1 ; 2"']),
                      _registration(inputs=['text/plain;a="1;2"'])], engine)
    assert audit.statuses["valid"] == 2
    assert [c.id for c in audit.conflicts()] == ["https://example.org/onto/cs#TechTranslation"]


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_an_ontology_id_is_not_the_same_declaration_as_an_equal_version(engine: str) -> None:
    """A registration naming ``ontologyId X`` (no version) and one naming
    ``ontologyVersion "X"`` (no id) are given the same declaration: ``_declaration``
    concatenates the ids and the versions into one tuple, ``(X,)`` for both. They declare
    different ontologies (an id is not a version), so the same capability IRI registered
    with the two is a conflict the audit misses.
    """
    other = "https://example.org/onto/other"
    audit = _audited([_with_ontology_terms(_registration(ontologyId=other)),
                      _with_ontology_terms(_registration(ontologyVersion=other))], engine)
    assert audit.statuses["valid"] == 2
    assert [c.id for c in audit.conflicts()] == ["https://example.org/onto/cs#TechTranslation"]
