"""What a hostile review of 2026-12-01 found, held as behaviour: each test failed when it
was written and passes since the fix.

Two areas were attacked: the signed alignment artifacts (contract 6) and the reporting
path's restricted walk (``ioa_semantic/compiled/walk.py``, ``as_written``). Each test's
docstring says what went wrong before and why it matters.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker, Verdict
from ioa_semantic._checker import shapes
from ioa_semantic.compiled.engine import restricted_expansion
from ioa_semantic.pipeline.baseline import read_document
from ioa_semantic.pipeline.contexts import ContextPolicy
from ioa_semantic.pipeline.expansion import expand

from support import ACCEPTED_MAPPING, artifact_124, envelope_62, registration_63

AT = datetime(2026, 6, 1, tzinfo=UTC)
POLICY = ContextPolicy()
PARAMS = {"sourceLang": "zh", "targetLang": "en"}
# The command of this checkout (the venv's ioa-check belongs to another one).
COMMAND = (sys.executable, "-m", "ioa_semantic")


def _envelope(extra_context: dict[str, Any], **members: Any) -> dict[str, Any]:
    doc = envelope_62()
    doc["@context"] = {**doc["@context"], **extra_context}
    doc.update(members)
    return doc


def _both(doc: dict[str, Any], **options: Any) -> tuple[Any, Any]:
    data = json.dumps(doc).encode()
    compiled = Checker("cs-translation", engine="compiled", cache_size=0, **options)
    reference = Checker("cs-translation", engine="reference", cache_size=0, **options)
    return compiled.check(data, at=AT), reference.check(data, at=AT)


# --- 2. the reporting path's restricted walk -----------------------------------------------
#
# Root cause of the three findings below: ``active_context`` counts a simple term as a
# prefix only when its IRI does not start with another term (``scheme not in raw``), but
# pyld (JSON-LD 1.1) sets a term's prefix flag from its *expanded* IRI: "urn": "cs:sub/"
# expands to https://example.org/onto/cs#sub/, which ends with a gen-delim, so "urn" is a
# prefix and "urn:x" expands to https://example.org/onto/cs#sub/x. The compiled path
# declines such a reference, but the reporting walk's ``as_written`` then keeps "urn:x" as
# written (its prefix is not in ``active.prefixes``), which is not pyld's expansion, and
# ``read_document`` trusts the walk's node.


def test_a_compact_iri_whose_prefix_is_defined_through_another_prefix_is_not_kept_as_written(
        tmp_path: Path) -> None:
    """Was a wrong acceptance of the compiled engine (the default): the envelope defines
    ``"urn": "cs:sub/"`` and requests ``capabilityRefs: ["cs:TechTranslation",
    "urn:svc:Extra"]``; the receiver offers registrations of cs:TechTranslation and of
    urn:svc:Extra. JSON-LD expands the second reference to
    https://example.org/onto/cs#sub/svc:Extra, which nobody provides and no vocabulary
    knows: the reference engine says indeterminate (capability.unknown,
    alignment.no-accepted-mapping). The compiled engine's reporting walk keeps
    "urn:svc:Extra" as written, finds it provided, and says ``compatible`` for a capability
    the sender never requested as the receiver understood it."""
    first, second = tmp_path / "reg0.json", tmp_path / "reg1.json"
    first.write_text(json.dumps(registration_63()))
    second.write_text(json.dumps({**registration_63(), "@id": "urn:svc:Extra"}))
    doc = _envelope({"urn": "cs:sub/"},
                    capabilityRefs=["cs:TechTranslation", "urn:svc:Extra"])
    expanded = expand(doc).nodes[0]["https://example.org/ioa/semantic#capabilityRefs"]
    assert {"@id": "https://example.org/onto/cs#sub/svc:Extra"} in expanded  # pyld's reading
    compiled, reference = _both(doc, capabilities=[first, second])
    assert reference.verdict is Verdict.INDETERMINATE
    assert compiled.verdict is not Verdict.COMPATIBLE, "the compiled engine accepts it"
    assert compiled.as_dict() == reference.as_dict()


def test_an_envelope_id_whose_expansion_is_no_allowed_iri_is_not_compatible() -> None:
    """Was a wrong acceptance of the compiled engine: ``"f": "ftp://h/", "urn": "f:sub/"`` and
    ``"@id": "urn:x"``: JSON-LD expands the @id to ftp://h/sub/x, a scheme the profile does
    not allow (the reference says invalid, jsonld.scheme-not-allowed); and with
    ``"urn": "cs:sub/"``, ``"@id": "urn:x#y"`` expands to
    https://example.org/onto/cs#sub/x#y, which has a second '#' and is no IRI (reference:
    invalid, jsonld.invalid-iri). The compiled engine reads both @ids as written ("urn:x",
    "urn:x#y"), which pass, and says ``compatible`` (exit 0 from ioa-check): rule 1's
    "references that are not absolute IRIs after expansion are invalid" is bypassed."""
    for doc in (_envelope({"f": "ftp://h/", "urn": "f:sub/"}, **{"@id": "urn:x"}),
                _envelope({"urn": "cs:sub/"}, **{"@id": "urn:x#y"})):
        compiled, reference = _both(doc)
        assert reference.verdict is Verdict.INVALID
        assert compiled.verdict is Verdict.INVALID, (doc["@context"], doc["@id"])


def test_the_reporting_walk_expands_a_prefix_defined_through_another_prefix_as_pyld_does(
) -> None:
    """Was an engine mismatch (the same cause, the other direction): ``"cs2": "cs:"`` with
    ``capabilityRefs: ["cs2:TechTranslation"]`` is cs:TechTranslation to JSON-LD and the
    reference says compatible; the reporting walk gives {"@id": "cs2:TechTranslation"}
    (not pyld's node, though restricted_expansion must give exactly pyld's expansion or
    decline), so the compiled engine says invalid (jsonld.scheme-not-allowed), and
    read_document with the walk reports a reason read_document without it does not."""
    doc = _envelope({"cs2": "cs:"}, capabilityRefs=["cs2:TechTranslation"])
    walked = restricted_expansion(doc, POLICY)
    reference_nodes = expand(doc).nodes
    assert walked is None or json.dumps(walked.nodes) == json.dumps(reference_nodes)
    data = json.dumps(doc).encode()
    with_walk = read_document(data, "envelope", shapes=shapes(), policy=POLICY,
                              expand_with=restricted_expansion)
    alone = read_document(data, "envelope", shapes=shapes(), policy=POLICY)
    assert with_walk == alone
    compiled, reference = _both(doc)
    assert compiled.as_dict() == reference.as_dict()


# --- 1. signed alignment artifacts ---------------------------------------------------------


def test_a_huge_multibase_value_in_a_proof_is_refused_without_quadratic_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Was a hang: ``_multibase_decode`` base58-decoded the whole verificationMethod (and
    proofValue) value, then re-encoded it for the canonical check, before any length check;
    both are quadratic (80,000 characters took about 9 s, the 1 MiB an artifact may hold
    about 20 minutes). A did:key of Ed25519 is 48 characters and a proofValue about 88, so
    an artifact offered with ``--alignment`` (read when the Checker is built) or fetched by
    an envelope's alignmentRef hung the check. Now refused at once
    (alignment.proof-malformed) by its length: held here by base58 failing if it is asked
    to decode or encode anything that long, so that no wall-clock bound is needed."""
    import base58

    from ioa_semantic.sources.loader import read_artifact

    for name in ("b58decode", "b58encode"):
        original = getattr(base58, name)

        def bounded(value: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            assert len(value) <= 256, "a multibase value past the bound was decoded"
            return _original(value, *args, **kwargs)

        monkeypatch.setattr(base58, name, bounded)
    for member in ("verificationMethod", "proofValue"):
        proof = {"type": "DataIntegrityProof", "cryptosuite": "eddsa-jcs-2022",
                 "created": "2026-05-01T00:00:00Z", "proofPurpose": "assertionMethod",
                 "verificationMethod": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
                                       "#z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
                 "proofValue": "z" + "2" * 80}
        proof[member] = ("did:key:z" if member == "verificationMethod" else "z") + "2" * 300_000
        artifact = read_artifact(json.dumps({**artifact_124(), "proof": proof}).encode(), "a", 0)
        assert artifact.proof is not None
        assert artifact.proof.code == "alignment.proof-malformed", (member, artifact.proof)

def test_sign_with_an_instant_out_of_range_in_utc_is_refused_not_a_crash(
        tmp_path: Path) -> None:
    """Was a crash (minor, operator input): ``ioa-check sign A --key K --created
    9999-12-31T23:00:00-05:00`` (or ``--expires 0001-01-01T00:00:00+05:00``) passes the
    option parser, then ``provenance.timestamp`` converts it to UTC, which is out of
    datetime's range: OverflowError, exit 70 with a traceback ("internal error: a bug").
    Expected: a usage error (exit 2) naming the option, nothing written."""
    key = tmp_path / "k.pem"
    subprocess.run([*COMMAND, "keygen", "--output", str(key)], check=True,
                   capture_output=True, timeout=60)
    artifact = ACCEPTED_MAPPING / "align0.json"
    for option in (["--created", "9999-12-31T23:00:00-05:00"],
                   ["--expires", "0001-01-01T00:00:00+05:00"]):
        done = subprocess.run([*COMMAND, "sign", str(artifact), "--key", str(key), *option],
                              capture_output=True, timeout=60)
        assert b"Traceback" not in done.stderr, option
        assert done.returncode == 2, (option, done.returncode)


def test_a_cached_decision_reports_the_instant_it_is_asked_for() -> None:
    """Was minor (rule 15, the output): the decision cache keys on the side of each validity limit,
    not the instant, and returns the stored decision unchanged but for its source; so the
    same envelope checked at 2026-06-01 and then at 2026-07-01 reports ``"at":
    "2026-06-01T00:00:00Z"`` the second time. A served check (``POST /v1/check?at=...``)
    shares the cache, so a client is told its answer was evaluated at an instant it did not
    ask for."""
    checker = Checker("cs-translation", capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                      alignments=[str(ACCEPTED_MAPPING / "align0.json")])
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    checker.check(envelope, params=PARAMS, at=AT)
    later = checker.check(envelope, params=PARAMS, at=datetime(2026, 7, 1, tzinfo=UTC))
    assert later.as_dict()["at"] == "2026-07-01T00:00:00Z"
