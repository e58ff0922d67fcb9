"""Provenance of alignment artifacts (contract 6; draft 7.2, 12.4; R-7.2-2, R-7.2-4).

* The W3C test vectors of eddsa-jcs-2022 (tests/data/w3c-eddsa-jcs-2022/): the published
  signed document verifies; every intermediate the vectors publish (the canonical proof
  configuration and document, their hashes, the hash data, the signature in hex and as the
  proofValue) is what the verifier computes; signing the vectors' document with their key
  and proof options gives the published proof, proofValue included (Ed25519 is
  deterministic).
* Keys made in the tests: a signed 12.4 artifact under a profile that requires its issuer's
  proof makes the 12.1 check compatible; each way a proof can fail excludes the artifact
  with its code and leaves the check indeterminate, through both engines and the command.
* The trust policy: a did:key issuer, a bound issuer with and without a required proof, an
  issuer trusted by claim, and an untrusted issuer whose proof verifies (still untrusted).
* ``sign`` and ``keygen``, ``lint`` of a proof, remote artifacts (a pin and a proof both
  required), and a property: every single-member change of a signed artifact fails to
  verify.

``python tests/test_provenance.py`` writes the signed cases of tests/cases/compatibility/
(signed-*) from the test keys; a test holds the folders to what it writes.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioa_semantic import Checker, ConfigurationError, Verdict
from ioa_semantic.pipeline import provenance
from ioa_semantic.sources.loader import read_artifact, read_profile

from retrieval_servers import LoopbackServer, Reply
from support import (
    ACCEPTED_MAPPING,
    AT,
    IOA_CHECK,
    ISSUER_SEED,
    MAPPING_AUTHORITY,
    OTHER_SEED,
    ROOT,
    SIGNED_AT,
    artifact_124,
    bound_profile,
    did_of_seed,
    profile_binding,
    signed_artifact,
    signing_key,
)

VECTORS = Path(__file__).resolve().parent / "data" / "w3c-eddsa-jcs-2022"
CASES = Path(__file__).resolve().parent / "cases" / "compatibility"
INSTANT = datetime.fromisoformat(AT.replace("Z", "+00:00"))
PARAMS = {"sourceLang": "zh", "targetLang": "en"}
ENGINES = ("compiled", "reference")


def vector(name: str) -> bytes:
    return (VECTORS / name).read_bytes()


def vector_json(name: str) -> Any:
    return json.loads(vector(name))


# --- the W3C vectors ------------------------------------------------------------------------


def test_the_published_signed_document_verifies() -> None:
    signed = vector_json("signedJCS.json")
    proof = provenance.read_proof(signed)
    assert proof is not None and proof.verified, proof
    public = vector_json("keyPair.json")["publicKeyMultibase"]
    assert proof.method == f"did:key:{public}#{public}"
    assert proof.controller == f"did:key:{public}"
    assert proof.created == datetime(2023, 2, 24, 23, 36, 38, tzinfo=UTC)


def test_every_published_intermediate_is_what_the_verifier_computes() -> None:
    signed = vector_json("signedJCS.json")
    unsigned = {k: v for k, v in signed.items() if k != "proof"}
    options = {k: v for k, v in signed["proof"].items() if k != "proofValue"}
    # The proof configuration: the proof without its value, with the document's @context.
    assert options == vector_json("proofConfigJCS.json")
    assert options["@context"] == unsigned["@context"]
    canonical_config = provenance.proof_configuration(options)
    canonical_document = provenance.canonical(unsigned)
    assert canonical_config == vector("proofCanonJCS.txt")
    assert canonical_document == vector("canonDocJCS.txt")
    assert hashlib.sha256(canonical_config).hexdigest() == vector("proofHashJCS.txt").decode()
    assert hashlib.sha256(canonical_document).hexdigest() == vector("docHashJCS.txt").decode()
    data = provenance.hash_data(canonical_document, canonical_config)
    assert data.hex() == vector("combinedHashJCS.txt").decode()
    # The signature: the proofValue decodes (multibase base58btc) to the published bytes.
    assert signed["proof"]["proofValue"] == vector("sigBTC58JCS.txt").decode()
    signature = provenance._multibase_decode(signed["proof"]["proofValue"], "the proofValue")
    assert signature.hex() == vector("sigHexJCS.txt").decode()


def _vector_key() -> Any:
    """The vectors' private key: multibase, multicodec 0x8026 then the 32-byte seed."""
    raw = provenance._multibase_decode(vector_json("keyPair.json")["privateKeyMultibase"], "key")
    assert raw[:2] == b"\x80\x26" and len(raw) == 34
    return signing_key(raw[2:])


def test_the_vector_key_pair_is_one_did_key() -> None:
    public = vector_json("keyPair.json")["publicKeyMultibase"]
    assert provenance.did_of(_vector_key()) == f"did:key:{public}"
    assert provenance.public_key_of(f"did:key:{public}") == provenance.public_key_of(
        f"did:key:{public}#{public}")


def test_signing_the_vector_document_reproduces_the_published_proof() -> None:
    signed = vector_json("signedJCS.json")
    unsigned = {k: v for k, v in signed.items() if k != "proof"}
    made = provenance.sign(unsigned, _vector_key(),
                           created=datetime(2023, 2, 24, 23, 36, 38, tzinfo=UTC))
    assert made["proof"]["proofValue"] == vector("sigBTC58JCS.txt").decode()
    assert made == signed


def test_a_changed_vector_document_does_not_verify() -> None:
    signed = vector_json("signedJCS.json")
    signed["credentialSubject"]["alumniOf"] = "The School of Examples."
    proof = provenance.read_proof(signed)
    assert proof is not None and proof.code == provenance.INVALID


def test_a_proof_context_the_document_does_not_start_with_does_not_verify() -> None:
    signed = vector_json("signedJCS.json")
    signed["@context"] = list(reversed(signed["@context"]))
    proof = provenance.read_proof(signed)
    assert proof is not None and proof.code == provenance.INVALID


# --- proofs read: what each problem is ------------------------------------------------------


def _proof_changed(change: dict[str, Any] | None = None, drop: str = "") -> dict[str, Any]:
    doc = signed_artifact()
    doc["proof"].update(change or {})
    doc["proof"].pop(drop, None)
    return doc


@pytest.mark.parametrize(("document", "code"), [
    (_proof_changed(drop="proofValue"), provenance.MALFORMED),
    (_proof_changed(drop="type"), provenance.MALFORMED),
    (_proof_changed({"created": 5}), provenance.MALFORMED),
    (_proof_changed({"created": "2026-05-01T00:00:00"}), provenance.MALFORMED),
    (_proof_changed({"expires": "tomorrow"}), provenance.MALFORMED),
    (_proof_changed({"proofValue": "u" + "A" * 86}), provenance.MALFORMED),
    (_proof_changed({"proofValue": "z0OIl"}), provenance.MALFORMED),
    (_proof_changed({"proofValue": "z" + "2" * 40}), provenance.MALFORMED),
    (_proof_changed({"verificationMethod": "did:key:z6MkI0lO#z6MkI0lO"}), provenance.MALFORMED),
    (_proof_changed({"verificationMethod": did_of_seed()}), provenance.MALFORMED),
    (_proof_changed({"verificationMethod": f"{did_of_seed()}#key-1"}), provenance.MALFORMED),
    (_proof_changed({"cryptosuite": "eddsa-rdfc-2022"}), provenance.UNSUPPORTED),
    (_proof_changed({"type": "Ed25519Signature2020"}), provenance.UNSUPPORTED),
    (_proof_changed({"proofPurpose": "authentication"}), provenance.UNSUPPORTED),
    (_proof_changed({"verificationMethod": "https://issuer.example/keys#1"}),
     provenance.UNSUPPORTED),
    # A P-256 did:key (multicodec 0x1200): a key, but not one this suite verifies with.
    (_proof_changed({"verificationMethod":
                     "did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169#"
                     "zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169"}),
     provenance.UNSUPPORTED),
    (_proof_changed({"previousProof": "urn:uuid:1"}), provenance.UNSUPPORTED),
    ({**signed_artifact(), "proof": [signed_artifact()["proof"]]}, provenance.UNSUPPORTED),
    ({**signed_artifact(), "proof": "z123"}, provenance.MALFORMED),
    (_proof_changed({"created": "2026-05-01T00:00:01Z"}), provenance.INVALID),
    ({**signed_artifact(), "confidence": 0.92}, provenance.INVALID),
    ({**signed_artifact(), "revision": "2"}, provenance.INVALID),
])
def test_each_proof_problem_has_its_code(document: dict[str, Any], code: str) -> None:
    proof = provenance.read_proof(document)
    assert proof is not None and proof.code == code, proof
    assert proof.problem


def test_an_artifact_without_a_proof_has_none() -> None:
    assert provenance.read_proof(artifact_124()) is None
    assert read_artifact(json.dumps(artifact_124()).encode(), "a", 0).proof is None


def test_a_document_that_cannot_be_canonicalized_is_malformed() -> None:
    doc = signed_artifact()
    doc["extension"] = 2 ** 60  # beyond the integers RFC 8785 (I-JSON) represents exactly
    proof = provenance.read_proof(doc)
    assert proof is not None and proof.code == provenance.MALFORMED


def test_the_proof_is_no_part_of_the_artifacts_rdf() -> None:
    from ioa_semantic.sources.loader import artifact_quads

    unsigned = read_artifact(json.dumps(artifact_124()).encode(), "a", 0)
    signed = read_artifact(json.dumps(signed_artifact()).encode(), "a", 0)
    assert signed.proof is not None and signed.proof.verified

    def shape(artifact: Any) -> list[str]:  # blank node labels differ from one parse to another
        return sorted(re.sub(r"_:\w+", "_:b", str(q)) for q in artifact_quads(artifact))

    assert shape(unsigned) == shape(signed)


# --- hypothesis: every single-member change of a signed artifact fails -----------------------


def _members(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every member and array item under ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _members(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index)
            yield from _members(item, (*path, index))


SIGNED = signed_artifact()
MEMBER_PATHS = sorted(_members(SIGNED), key=repr)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 53), 2 ** 53) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=3),
    max_leaves=6)


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


@settings(max_examples=300)
@given(path=st.sampled_from(MEMBER_PATHS), value=JSON_VALUES,
       how=st.sampled_from(("replace", "remove", "add")))
def test_every_single_member_change_of_a_signed_artifact_fails_to_verify(
        path: tuple[Any, ...], value: Any, how: str) -> None:
    doc = copy.deepcopy(SIGNED)
    parent = _at(doc, path[:-1])
    if how == "replace":
        if provenance.canonical(value) == provenance.canonical(parent[path[-1]]):
            return  # the same JSON value: no change
        parent[path[-1]] = value
    elif how == "remove":
        del parent[path[-1]]
    else:
        if isinstance(parent, list):
            parent.insert(path[-1], value)
        else:
            parent[f"{path[-1]}-added"] = value
    proof = provenance.read_proof(doc)
    assert proof is None or not proof.verified, (how, path, value)


def test_the_unchanged_signed_artifact_verifies() -> None:
    proof = provenance.read_proof(copy.deepcopy(SIGNED))
    assert proof is not None and proof.verified


# --- the trust policy, through both engines -------------------------------------------------


def _checker(profile: str, artifacts: list[dict[str, Any]], engine: str, tmp: Path) -> Checker:
    path = tmp / f"profile-{hashlib.sha256(profile.encode()).hexdigest()[:12]}.ttl"
    path.write_text(profile)
    return Checker(str(path), capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                   alignments=[json.dumps(a).encode() for a in artifacts], engine=engine)


def _decide(profile: str, artifacts: list[dict[str, Any]], tmp: Path,
            at: datetime = INSTANT) -> Any:
    """The 12.1 check under ``profile`` with ``artifacts``: the decision, the same for both
    engines."""
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    decisions = [_checker(profile, artifacts, engine, tmp).check(envelope, params=PARAMS, at=at)
                 for engine in ENGINES]
    assert decisions[0].as_dict() == decisions[1].as_dict()
    return decisions[0]


def _excluded_codes(decision: Any) -> list[str]:
    return [item["code"] for item in decision.excluded]


def _changed_rule() -> dict[str, Any]:
    doc = signed_artifact()
    doc["mappingRules"][0]["to"] = doc["mappingRules"][0]["to"].replace("Text", "Test")
    return doc


def _with_proof(change: dict[str, Any]) -> dict[str, Any]:
    doc = signed_artifact()
    doc["proof"].update(change)
    return doc


UNACCEPTED = {
    "one byte changed in a mapping rule": (_changed_rule, "alignment.proof-invalid"),
    "a proof by another key": (lambda: signed_artifact(seed=OTHER_SEED),
                               "alignment.proof-key-not-accepted"),
    "no proof": (artifact_124, "alignment.proof-missing"),
    "the wrong cryptosuite": (lambda: _with_proof({"cryptosuite": "eddsa-rdfc-2022"}),
                              "alignment.proof-unsupported"),
    "a did:key that does not decode": (
        lambda: _with_proof({"verificationMethod": "did:key:z6MkI0lO#z6MkI0lO"}),
        "alignment.proof-malformed"),
    "an expired proof": (lambda: signed_artifact(expires="2026-05-15T00:00:00Z"),
                         "alignment.proof-expired"),
}


def test_a_signed_artifact_under_a_profile_requiring_its_issuers_proof_is_accepted(
        tmp_path: Path) -> None:
    decision = _decide(bound_profile(did_of_seed()), [signed_artifact()], tmp_path)
    assert decision.verdict is Verdict.COMPATIBLE, decision.findings
    (evidence,) = decision.evidence
    method = provenance.method_of(did_of_seed())
    assert (evidence["provenance"], evidence["verificationMethod"]) == ("signed", method)
    (entry,) = decision.dependencies["artifacts"]
    assert entry["verificationMethod"] == method


@pytest.mark.parametrize("name", sorted(UNACCEPTED))
def test_an_artifact_whose_required_proof_fails_is_excluded_with_its_code(
        name: str, tmp_path: Path) -> None:
    make, code = UNACCEPTED[name]
    decision = _decide(bound_profile(did_of_seed()), [make()], tmp_path)
    assert decision.verdict is Verdict.INDETERMINATE
    assert _excluded_codes(decision) == [code]
    assert code in {f.code for f in decision.findings}
    assert decision.evidence == ()


def test_the_signed_artifact_and_a_tampered_copy_leave_the_signed_one(tmp_path: Path) -> None:
    # Exclusion comes before alternatives are resolved (7.3): the tampered copy of the same
    # artifactId and revision is excluded, not ambiguous with the one that verifies.
    decision = _decide(bound_profile(did_of_seed()), [_changed_rule(), signed_artifact()],
                       tmp_path)
    assert decision.verdict is Verdict.COMPATIBLE, decision.findings
    assert _excluded_codes(decision) == ["alignment.proof-invalid"]


def test_a_did_key_issuer_needs_a_proof_by_its_own_key(tmp_path: Path) -> None:
    did = did_of_seed()
    profile = profile_binding(trust=did)
    own = {**artifact_124(), "assertedBy": did}
    ok = _decide(profile, [signed_artifact(own)], tmp_path)
    assert ok.verdict is Verdict.COMPATIBLE, ok.findings
    assert ok.evidence[0]["provenance"] == "signed"
    for artifact, code in ((own, "alignment.proof-missing"),
                           (signed_artifact(own, OTHER_SEED), "alignment.proof-key-not-accepted")):
        decision = _decide(profile, [artifact], tmp_path)
        assert decision.verdict is Verdict.INDETERMINATE
        assert _excluded_codes(decision) == [code]


def test_a_verified_proof_from_an_untrusted_issuer_stays_untrusted(tmp_path: Path) -> None:
    """R-7.2-4: a correct signature by an issuer the profile does not trust."""
    own = signed_artifact({**artifact_124(), "assertedBy": did_of_seed()})
    assert provenance.read_proof(own) is not None
    decision = _decide(profile_binding(), [own], tmp_path)
    assert decision.verdict is Verdict.INDETERMINATE
    assert _excluded_codes(decision) == ["alignment.untrusted"]


def test_an_issuer_trusted_by_claim_needs_no_proof_but_a_proof_it_carries_is_checked(
        tmp_path: Path) -> None:
    shipped = profile_binding()
    unsigned = _decide(shipped, [artifact_124()], tmp_path)
    assert unsigned.verdict is Verdict.COMPATIBLE
    assert (unsigned.evidence[0]["provenance"], unsigned.evidence[0]["verificationMethod"]) == (
        "claim", None)
    signed = _decide(shipped, [signed_artifact(seed=OTHER_SEED)], tmp_path)
    assert signed.verdict is Verdict.COMPATIBLE
    assert (signed.evidence[0]["provenance"], signed.evidence[0]["verificationMethod"]) == (
        "claim", provenance.method_of(did_of_seed(OTHER_SEED)))
    tampered = _decide(shipped, [_changed_rule()], tmp_path)
    assert tampered.verdict is Verdict.INDETERMINATE
    assert _excluded_codes(tampered) == ["alignment.proof-invalid"]


def test_a_binding_without_a_required_proof_accepts_claims_and_bound_keys_only(
        tmp_path: Path) -> None:
    profile = bound_profile(did_of_seed(), require=False)
    claim = _decide(profile, [artifact_124()], tmp_path)
    assert claim.verdict is Verdict.COMPATIBLE and claim.evidence[0]["provenance"] == "claim"
    signed = _decide(profile, [signed_artifact()], tmp_path)
    assert signed.verdict is Verdict.COMPATIBLE and signed.evidence[0]["provenance"] == "signed"
    other = _decide(profile, [signed_artifact(seed=OTHER_SEED)], tmp_path)
    assert _excluded_codes(other) == ["alignment.proof-key-not-accepted"]


def test_a_binding_accepts_any_of_its_keys(tmp_path: Path) -> None:
    both = profile_binding(binding=(
        f"[ iop:issuer <{MAPPING_AUTHORITY}> ; iop:verificationMethod <{did_of_seed()}>, "
        f"<{provenance.method_of(did_of_seed(OTHER_SEED))}> ]"))
    for seed in (ISSUER_SEED, OTHER_SEED):
        decision = _decide(both, [signed_artifact(seed=seed)], tmp_path)
        assert decision.verdict is Verdict.COMPATIBLE, decision.findings


def test_a_proofs_expiry_is_a_validity_limit_of_the_cached_decision(tmp_path: Path) -> None:
    artifact = signed_artifact(expires="2026-06-15T00:00:00Z")
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    for engine in ENGINES:
        checker = _checker(bound_profile(did_of_seed()), [artifact], engine, tmp_path)
        before = checker.check(envelope, params=PARAMS, at=INSTANT)
        after = checker.check(envelope, params=PARAMS,
                              at=datetime(2026, 6, 15, tzinfo=UTC))  # at the limit: expired
        assert before.verdict is Verdict.COMPATIBLE, before.findings
        assert after.verdict is Verdict.INDETERMINATE
        assert _excluded_codes(after) == ["alignment.proof-expired"]
        entries = [d.dependencies["artifacts"][0] for d in (before, after)]
        assert [e["proofExpires"] for e in entries] == ["2026-06-15T00:00:00Z"] * 2
        assert [e["proofExpiredAtEvaluation"] for e in entries] == [False, True]


VARIANTS: dict[str, Callable[[], dict[str, Any]]] = {
    "signed": signed_artifact, "changed": _changed_rule,
    "other key": lambda: signed_artifact(seed=OTHER_SEED), "unsigned": artifact_124,
    "expiring": lambda: signed_artifact(expires="2026-06-15T00:00:00Z"),
    "revision 2": lambda: signed_artifact({**artifact_124(), "revision": "2"})}


@settings(max_examples=60, deadline=None)
@given(offered=st.lists(st.sampled_from(sorted(VARIANTS)), min_size=1, max_size=3, unique=True),
       require=st.booleans(),
       at=st.sampled_from([INSTANT, datetime(2026, 6, 15, tzinfo=UTC),
                           datetime(2027, 1, 1, tzinfo=UTC)]),
       params=st.sampled_from([PARAMS, {"sourceLang": "zh"}, {**PARAMS, "targetLang": "fr"}]))
def test_the_compiled_decision_applies_the_references_provenance_rule(
        offered: list[str], require: bool, at: datetime, params: dict[str, str]) -> None:
    """Both engines, several artifacts at once (each way a proof stands), both binding
    modes, instants around the proof's expiry and the artifact's validUntil: the same
    decision; and the compiled engine answers the clean envelope itself (it does not
    decline to the reference), so its own path is the one held: the reference's evaluate,
    which the compiled engine calls where its decision declines, is never called (patched
    where the compiled engine names it, a global that either build reads at each call)."""
    from ioa_semantic.compiled.engine import CompiledEngine
    from ioa_semantic.pipeline.decision import evaluate as original

    profile = read_profile(bound_profile(did_of_seed(), require=require).encode(), "p.ttl")
    artifacts = [json.dumps(VARIANTS[name]()).encode() for name in offered]
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    declined: list[Any] = []

    def recorded(*args: Any) -> Any:
        declined.append(args)
        return original(*args)

    decisions = []
    for engine in ENGINES:
        checker = Checker(profile, capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                          alignments=artifacts, engine=engine, cache_size=0)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("ioa_semantic.compiled.engine.evaluate", recorded)
            decisions.append(checker.check(envelope, params=params, at=at).as_dict())
        if engine == "compiled":
            assert isinstance(checker.stages, CompiledEngine)
            assert checker.stages.constraints is None  # no profile shapes: the decision is its own
    assert decisions[0] == decisions[1]
    assert declined == []


# --- the profile's bindings ---------------------------------------------------------------


@pytest.mark.parametrize(("binding", "trust", "message"), [
    ("[ iop:issuer <https://elsewhere.example/issuer> ; iop:verificationMethod <{did}> ]", "",
     "does not trust"),
    ("[ iop:issuer <{did}> ; iop:verificationMethod <{did}> ]", "{did}", "did:key"),
    ("[ iop:issuer <{issuer}> ; iop:verificationMethod <did:key:z6MkI0lO> ]", "",
     "not base58btc"),
    ("[ iop:issuer <{issuer}> ; iop:verificationMethod <https://issuer.example/k> ]", "",
     "not a did:key"),
    ("[ iop:issuer <{issuer}> ]", "", "names no iop:verificationMethod"),
    ("[ iop:issuer <{issuer}> ; iop:verificationMethod <{did}> ; iop:requireProof \"yes\" ]",
     "", "iop:requireProof must be true or false"),
    ("[ iop:issuer <{issuer}> ; iop:verificationMethod <{did}> ]\n"
     "[ iop:issuer <{issuer}> ; iop:verificationMethod <{did}> ]", "", "more than one"),
])
def test_a_binding_the_profile_cannot_mean_is_a_configuration_error(
        binding: str, trust: str, message: str) -> None:
    names = {"did": did_of_seed(), "issuer": MAPPING_AUTHORITY}
    text = profile_binding(trust=trust.format(**names), binding=binding.format(**names))
    with pytest.raises(ConfigurationError, match=message):
        read_profile(text.encode(), "profile.ttl")


def test_a_binding_is_read_with_its_keys_as_verification_methods() -> None:
    did = did_of_seed()
    profile = read_profile(bound_profile(did).encode(), "profile.ttl")
    binding = profile.issuer_bindings[MAPPING_AUTHORITY]
    assert binding.methods == {provenance.method_of(did)} and binding.require_proof
    assert profile.requires_proof(MAPPING_AUTHORITY)
    assert profile.requires_proof(did)
    assert profile.accepted_methods(did) == frozenset({provenance.method_of(did)})
    assert profile.accepted_methods("https://elsewhere.example/issuer") is None


# --- signing keys ---------------------------------------------------------------------------


def test_a_key_reads_back_from_its_pem_and_from_a_jwk() -> None:
    key = signing_key()
    assert provenance.did_of(provenance.read_key(provenance.key_pem(key), "k")) == did_of_seed()

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    public = provenance.public_key_of(did_of_seed())
    jwk = {"kty": "OKP", "crv": "Ed25519", "d": b64(ISSUER_SEED), "x": b64(public)}
    assert provenance.did_of(provenance.read_key(json.dumps(jwk).encode(), "k")) == did_of_seed()
    without_x = {k: v for k, v in jwk.items() if k != "x"}
    assert provenance.did_of(provenance.read_key(json.dumps(without_x).encode(), "k")) == (
        did_of_seed())


def _refused_key(make: str) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    seed = base64.urlsafe_b64encode(ISSUER_SEED).rstrip(b"=").decode()
    if make == "rsa":
        return rsa.generate_private_key(65537, 1024).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption())
    if make == "encrypted":
        return signing_key().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"))
    jwk = {"jwk-x": {"kty": "OKP", "crv": "Ed25519", "d": seed, "x": "AAAA"},
           "jwk-kty": {"kty": "EC", "crv": "P-256", "d": seed},
           "jwk-d": {"kty": "OKP", "crv": "Ed25519", "d": "AAAA"}}.get(make)
    return json.dumps(jwk).encode() if jwk is not None else b"not a key"


@pytest.mark.parametrize("make", ["rsa", "encrypted", "garbage", "jwk-x", "jwk-kty", "jwk-d"])
def test_a_key_that_is_not_an_ed25519_private_key_is_refused(make: str) -> None:
    from ioa_semantic import IoaSemanticError

    with pytest.raises(IoaSemanticError):
        provenance.read_key(_refused_key(make), "k")


# --- the command: keygen, sign, lint, check ------------------------------------------------


def ioa_check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_whole_round_from_the_installed_command(tmp_path: Path) -> None:
    """A mapping authority makes a key and signs; a receiver whose profile requires that
    authority's proof accepts what it signed, and excludes what it did not."""
    made = ioa_check("keygen", "--output", "authority.pem", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    did = made.stdout.strip()
    assert did.startswith("did:key:z6Mk") and "\n" not in did
    assert stat.S_IMODE((tmp_path / "authority.pem").stat().st_mode) == 0o600
    (tmp_path / "align0.json").write_bytes((ACCEPTED_MAPPING / "align0.json").read_bytes())
    signed = ioa_check("sign", "align0.json", "--key", "authority.pem", "--output",
                       "signed.json", "--created", "2026-05-01T00:00:00Z", cwd=tmp_path)
    assert signed.returncode == 0 and signed.stdout == "", signed.stderr
    (tmp_path / "profile.ttl").write_text(bound_profile(did))
    linted = ioa_check("lint", "signed.json", "profile.ttl", "--profile", "profile.ttl",
                       cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout
    assert f"signed.json: ok (signed by {provenance.method_of(did)}" in linted.stdout
    check = ["--profile", "profile.ttl", "--capability", str(ACCEPTED_MAPPING / "provider.jsonld"),
             "--param", "sourceLang=zh", "--param", "targetLang=en", "--at", AT]
    envelope = str(ACCEPTED_MAPPING / "envelope.jsonld")
    for alignment, status, verdict in (("signed.json", 0, "compatible"),
                                       ("align0.json", 3, "indeterminate")):
        run = ioa_check(envelope, *check, "--alignment", alignment, "--format", "json",
                        cwd=tmp_path)
        assert run.returncode == status, run.stderr
        result = json.loads(run.stdout)
        assert result["verdict"] == verdict
        if verdict == "compatible":
            assert result["evidence"][0]["verificationMethod"] == provenance.method_of(did)
        else:
            assert [e["code"] for e in result["excluded"]] == ["alignment.proof-missing"]
    text = ioa_check(envelope, *check, "--alignment", "signed.json", cwd=tmp_path)
    assert f"signed by {provenance.method_of(did)}" in text.stdout
    claim = ioa_check(envelope, *check[:1], "cs-translation", *check[2:], "--alignment",
                      "align0.json", cwd=tmp_path)
    assert claim.returncode == 0 and "trusted by claim" in claim.stdout, claim.stdout


def test_the_signed_artifacts_round_runs_as_written(tmp_path: Path) -> None:
    """docs/provenance.md's round (once the README's), run as it stands with the installed
    command, in a folder holding the examples (the shipped profile is found by the installed
    package's path, as the page does it)."""
    page = (ROOT / "docs" / "provenance.md").read_text()
    section = page[page.index("## The whole round, from key to check"):]
    script = section[section.index("```sh\n") + 6:section.index("```\n", section.index("```sh"))]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": f"{Path(IOA_CHECK).parent}{os.pathsep}{os.environ['PATH']}",
           "NO_COLOR": "1"}
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=env, check=False)
    assert run.returncode == 3, run.stderr  # the last check: indeterminate
    out = run.stdout
    assert "cs-doc-v1.signed.json: ok (signed by did:key:z6Mk" in out, out
    assert out.count("COMPATIBLE ") == 1 and out.count("INDETERMINATE ") == 2, out
    assert ", signed by did:key:z6Mk" in out
    assert "alignment.proof-missing" in out and "alignment.proof-invalid" in out


@pytest.mark.parametrize("name", sorted(UNACCEPTED))
def test_each_unaccepted_proof_through_the_command(name: str, tmp_path: Path) -> None:
    make, code = UNACCEPTED[name]
    (tmp_path / "profile.ttl").write_text(bound_profile(did_of_seed()))
    (tmp_path / "align.json").write_text(json.dumps(make()))
    run = ioa_check(str(ACCEPTED_MAPPING / "envelope.jsonld"), "--profile", "profile.ttl",
                    "--capability", str(ACCEPTED_MAPPING / "provider.jsonld"), "--alignment",
                    "align.json", "--param", "sourceLang=zh", "--param", "targetLang=en",
                    "--at", AT, "--format", "json", cwd=tmp_path)
    assert run.returncode == 3, run.stderr
    result = json.loads(run.stdout)
    assert result["verdict"] == "indeterminate"
    assert [e["code"] for e in result["excluded"]] == [code]


def test_keygen_without_output_writes_the_key_to_stdout_and_the_did_to_stderr(
        tmp_path: Path) -> None:
    run = ioa_check("keygen", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    key = provenance.read_key(run.stdout.encode(), "stdout")
    assert run.stderr.strip() == provenance.did_of(key)


def test_keygen_never_overwrites_a_key(tmp_path: Path) -> None:
    (tmp_path / "key.pem").write_text("precious")
    run = ioa_check("keygen", "--output", "key.pem", cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert (tmp_path / "key.pem").read_text() == "precious"


def _key_files(tmp: Path) -> None:
    (tmp / "issuer.pem").write_bytes(provenance.key_pem(signing_key()))
    (tmp / "align0.json").write_bytes((ACCEPTED_MAPPING / "align0.json").read_bytes())


def test_sign_writes_to_stdout_and_replaces_a_proof(tmp_path: Path) -> None:
    _key_files(tmp_path)
    first = ioa_check("sign", "align0.json", "--key", "issuer.pem", "--created", SIGNED_AT,
                      cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == signed_artifact()
    (tmp_path / "signed.json").write_text(first.stdout)
    other = tmp_path / "other.pem"
    other.write_bytes(provenance.key_pem(signing_key(OTHER_SEED)))
    again = ioa_check("sign", "signed.json", "--key", "other.pem", "--created", SIGNED_AT,
                      cwd=tmp_path)
    assert again.returncode == 0 and "replaced" in again.stderr
    assert json.loads(again.stdout) == signed_artifact(seed=OTHER_SEED)


@pytest.mark.parametrize(("argv", "status", "stderr"), [
    (["sign", "missing.json", "--key", "issuer.pem"], 2, "no such file"),
    (["sign", "align0.json", "--key", "missing.pem"], 2, "cannot be read"),
    (["sign", "align0.json", "--key", "align0.json"], 2, "not an Ed25519 key"),
    (["sign", "align0.json"], 2, "--key"),
    (["sign", "align0.json", "--key", "issuer.pem", "--created", "2026-05-01"], 2, "UTC offset"),
    (["sign", "align0.json", "--key", "issuer.pem", "--created", SIGNED_AT, "--expires",
      "2026-04-30T00:00:00Z"], 2, "evidence at no instant"),
    (["sign", "align0.json", "--key", "issuer.pem", "--created", SIGNED_AT, "--expires",
      "2026-05-01T00:00:00.900Z"], 2, "evidence at no instant"),
    (["sign", "broken.json", "--key", "issuer.pem"], 1, "not a well-formed artifact"),
    (["sign", "foreign.json", "--key", "issuer.pem"], 1, "receivers would reject"),
    (["sign", "huge.json", "--key", "issuer.pem"], 1, "cannot be canonicalized"),
    (["sign", "align0.json", "--key", "issuer.pem", "--created", "2026-05-01T00:00:00Z",
      "--output", "no/such/folder/f.json"], 74,
     "cannot write no/such/folder/f.json"),
])
def test_sign_refuses_what_it_cannot_sign(argv: list[str], status: int, stderr: str,
                                          tmp_path: Path) -> None:
    _key_files(tmp_path)
    (tmp_path / "broken.json").write_text(json.dumps({**artifact_124(), "direction": "up"}))
    (tmp_path / "huge.json").write_text(json.dumps({**artifact_124(), "extension": 2 ** 60}))
    (tmp_path / "foreign.json").write_text(json.dumps(
        {**artifact_124(), "assertedBy": did_of_seed(OTHER_SEED)}))
    run = ioa_check(*argv, cwd=tmp_path)
    assert run.returncode == status, run.stderr
    assert run.stdout == "" and stderr in run.stderr and "Traceback" not in run.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_signed_artifact_that_cannot_be_written_is_the_environments_fault(
        tmp_path: Path) -> None:
    _key_files(tmp_path)
    # --created pinned: align0.json expires on 2026-12-31, after which a proof made "now"
    # would be valid at no instant the artifact is, and sign refuses it.
    to_file = ioa_check("sign", "align0.json", "--key", "issuer.pem", "--output", "/dev/full",
                        "--created", "2026-05-01T00:00:00Z", cwd=tmp_path)
    assert to_file.returncode == 74 and "cannot write /dev/full" in to_file.stderr
    with open("/dev/full", "w") as full:
        to_stdout = subprocess.run([IOA_CHECK, "sign", "align0.json", "--key", "issuer.pem",
                                    "--created", "2026-05-01T00:00:00Z"],
                                   cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True,
                                   timeout=120, check=False)
    assert to_stdout.returncode == 74 and "cannot write standard output" in to_stdout.stderr


def test_lint_checks_a_proofs_structure_and_with_a_profile_its_provenance(
        tmp_path: Path) -> None:
    files = {"signed.json": signed_artifact(), "changed.json": _changed_rule(),
             "unsupported.json": _with_proof({"cryptosuite": "eddsa-rdfc-2022"}),
             "other.json": signed_artifact(seed=OTHER_SEED), "unsigned.json": artifact_124(),
             "untrusted.json": {**artifact_124(), "assertedBy": "https://elsewhere.example/i"}}
    for name, document in files.items():
        (tmp_path / name).write_text(json.dumps(document))
    (tmp_path / "profile.ttl").write_text(bound_profile(did_of_seed()))
    alone = ioa_check("lint", *files, cwd=tmp_path)
    assert alone.returncode == 1
    lines = dict(line.split(": ", 1) for line in alone.stdout.splitlines())
    assert lines["signed.json"].startswith("ok (a well-formed proof by")
    assert lines["changed.json"].startswith("ok (a well-formed proof by")  # not verified alone
    assert lines["unsupported.json"].startswith("alignment.proof-unsupported")
    assert lines["unsigned.json"] == "ok"
    judged = ioa_check("lint", *files, "--profile", "profile.ttl", cwd=tmp_path)
    assert judged.returncode == 1
    lines = dict(line.split(": ", 1) for line in judged.stdout.splitlines())
    assert lines["signed.json"].startswith("ok (signed by ")
    assert lines["changed.json"].startswith("alignment.proof-invalid")
    assert lines["other.json"].startswith("alignment.proof-key-not-accepted")
    assert lines["unsigned.json"].startswith("alignment.proof-missing")
    assert lines["untrusted.json"].startswith("alignment.untrusted")
    missing = ioa_check("lint", "signed.json", "--profile", "no-such-profile", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stdout == ""


def test_a_one_envelope_command_imports_no_cryptography(tmp_path: Path) -> None:
    """Proofs are verified where one is met: an unsigned artifact costs no crypto import."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ioa_semantic",
         str(ACCEPTED_MAPPING / "envelope.jsonld"), "--profile", "cs-translation",
         "--capability", str(ACCEPTED_MAPPING / "provider.jsonld"), "--alignment", "cs-doc-v1",
         "--param", "sourceLang=zh", "--param", "targetLang=en", "--at", AT],
        cwd=tmp_path, capture_output=True, timeout=60, env={**os.environ})
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()]
    assert "ioa_semantic.pipeline.provenance" in imported
    assert not [n for n in imported if n.split(".")[0] in ("cryptography", "rfc8785", "base58")]


# --- remote artifacts: a pin and a proof both required ------------------------------------


def test_a_remote_artifact_is_verified_as_a_local_one(tmp_path: Path) -> None:
    signed = json.dumps(signed_artifact()).encode()
    routes = {"/signed.json": Reply(signed, content_type="application/json"),
              "/changed.json": Reply(json.dumps(_changed_rule()).encode(),
                                     content_type="application/json")}
    digest = hashlib.sha256(signed).hexdigest()
    pinned = bound_profile(did_of_seed()).replace(
        "iop:issuerBinding", 'iop:artifactPin [ iop:artifact "https://example.org/align/cs-doc-v1"'
        f' ; iop:revision "1" ; iop:sha256 "{digest}" ] ;\n    iop:issuerBinding')
    (tmp_path / "pinned.ttl").write_text(pinned)
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    with LoopbackServer(routes) as server:
        def check(path: str) -> Any:
            checker = Checker(str(tmp_path / "pinned.ttl"),
                              capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                              alignments=[server.url(path, host="127.0.0.1")],
                              allow_remote=[server.origin("127.0.0.1")],
                              allow_private_addresses=True)
            return checker.check(envelope, params=PARAMS, at=INSTANT)

        accepted = check("/signed.json")
        assert accepted.verdict is Verdict.COMPATIBLE, accepted.findings
        assert accepted.evidence[0]["verificationMethod"] == provenance.method_of(did_of_seed())
        assert accepted.dependencies["retrieved"][0]["sha256"] == digest
        # The changed copy fails its pin before its proof is asked.
        changed = check("/changed.json")
        assert changed.verdict is Verdict.INDETERMINATE
        assert _excluded_codes(changed) == ["alignment.pin-mismatch"]
    unpinned = bound_profile(did_of_seed())
    (tmp_path / "unpinned.ttl").write_text(unpinned)
    with LoopbackServer(routes) as server:
        checker = Checker(str(tmp_path / "unpinned.ttl"),
                          capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                          alignments=[server.url("/changed.json", host="127.0.0.1")],
                          allow_remote=[server.origin("127.0.0.1")], allow_private_addresses=True)
        decision = checker.check(envelope, params=PARAMS, at=INSTANT)
        assert _excluded_codes(decision) == ["alignment.proof-invalid"]


# --- the signed cases of tests/cases/compatibility ----------------------------------------


def _case(name: str, why: str, verdict: str, codes: list[str], artifact: dict[str, Any],
          profile: str | None, requirements: list[str]) -> dict[str, Any]:
    args = ["--profile", "profile.ttl" if profile is not None else "cs-translation",
            "--capability", "provider.jsonld", "--alignment", "align0.json",
            "--param", "sourceLang=zh", "--param", "targetLang=en", "--at", AT]
    spec = {"id": name, "ref": "7.2, 12.4", "requirements": requirements, "why": why,
            "envelope": "envelope.jsonld", "args": args,
            "expect": {"verdict": verdict, "codes": codes}}
    return {"case.json": json.dumps(spec, indent=2) + "\n",
            "align0.json": json.dumps(artifact, indent=2) + "\n",
            **({"profile.ttl": profile} if profile is not None else {})}


def signed_cases() -> dict[str, dict[str, str]]:
    """Each signed case folder's files (besides the 12.1 envelope and provider)."""
    did = did_of_seed()
    bound = bound_profile(did, ident="https://example.org/profiles/test/bound-issuer",
                          note="Written by tests/test_provenance.py: the mapping authority bound "
                               "to the test key, a proof required")
    own = {**artifact_124(), "assertedBy": did}
    excluded = ["alignment.no-accepted-mapping"]
    return {
        "signed-bound-issuer-accepted": _case(
            "signed-bound-issuer-accepted",
            "Contract 6: the profile requires the mapping authority's proof by its bound key; "
            "the 12.4 artifact carries one that verifies: compatible, signed by that key.",
            "compatible", [], signed_artifact(), bound, ["R-7.2-2"]),
        "signed-rule-changed": _case(
            "signed-rule-changed",
            "Contract 6: one byte of a mapping rule changed after signing; the required proof "
            "does not verify, so the artifact is excluded before alternatives: indeterminate.",
            "indeterminate", ["alignment.proof-invalid", *excluded], _changed_rule(), bound,
            ["R-7.2-2"]),
        "signed-by-another-key": _case(
            "signed-by-another-key",
            "Contract 6: a proof that verifies, but by a key the profile does not bind to the "
            "issuer: excluded, indeterminate.",
            "indeterminate", ["alignment.proof-key-not-accepted", *excluded],
            signed_artifact(seed=OTHER_SEED), bound, ["R-7.2-2"]),
        "signed-proof-missing": _case(
            "signed-proof-missing",
            "Contract 6: the profile requires the issuer's proof and the artifact carries "
            "none: excluded, indeterminate.",
            "indeterminate", ["alignment.proof-missing", *excluded], artifact_124(), bound,
            ["R-7.2-2"]),
        "signed-wrong-cryptosuite": _case(
            "signed-wrong-cryptosuite",
            "Contract 6: the proof names a cryptosuite other than eddsa-jcs-2022: not "
            "verified, excluded, indeterminate.",
            "indeterminate", ["alignment.proof-unsupported", *excluded],
            _with_proof({"cryptosuite": "eddsa-rdfc-2022"}), bound, ["R-7.2-2"]),
        "signed-undecodable-did-key": _case(
            "signed-undecodable-did-key",
            "Contract 6: the proof's verification method is a did:key that does not decode "
            "(not base58btc): malformed, excluded, indeterminate.",
            "indeterminate", ["alignment.proof-malformed", *excluded],
            _with_proof({"verificationMethod": "did:key:z6MkI0lO#z6MkI0lO"}), bound,
            ["R-7.2-2"]),
        "signed-proof-expired": _case(
            "signed-proof-expired",
            "Rule 9 and contract 6: the proof expires before the evaluation instant, a "
            "validity limit evaluated before use (7.2): excluded, indeterminate.",
            "indeterminate", ["alignment.proof-expired", *excluded],
            signed_artifact(expires="2026-05-15T00:00:00Z"), bound, ["R-7.2-3"]),
        "signed-proof-not-yet-created": _case(
            "signed-proof-not-yet-created",
            "Rule 9 and contract 6: the required proof was created after the evaluation "
            "instant, so at that instant it is no evidence (7.2, validity limits evaluated "
            "before use): excluded, indeterminate.",
            "indeterminate", ["alignment.proof-not-yet-valid", *excluded],
            signed_artifact(created="2026-06-02T00:00:00Z"), bound, ["R-7.2-3"]),
        "signed-did-key-issuer-trusted": _case(
            "signed-did-key-issuer-trusted",
            "Contract 6: a did:key issuer the profile trusts, with a proof by that key: "
            "compatible, signed by it.",
            "compatible", [], signed_artifact(own),
            profile_binding(trust=did, ident="https://example.org/profiles/test/did-key-issuer",
                            note="Written by tests/test_provenance.py: the test key's did:key "
                                 "trusted too"), ["R-7.2-2"]),
        "signed-did-key-issuer-untrusted": _case(
            "signed-did-key-issuer-untrusted",
            "7.2 and contract 6: a correct signature by a did:key issuer the shipped profile "
            "does not trust: a valid proof never makes an issuer trusted; indeterminate.",
            "indeterminate", ["alignment.untrusted", *excluded], signed_artifact(own), None,
            ["R-7.2-4"]),
        "signed-claim-issuer-proof-verifies": _case(
            "signed-claim-issuer-proof-verifies",
            "Contract 6: the shipped profile trusts the mapping authority by claim; the "
            "artifact's proof verifies (by a key no binding names): compatible, by claim.",
            "compatible", [], signed_artifact(seed=OTHER_SEED), None, ["R-7.2-2"]),
    }


def _write_cases(root: Path) -> None:
    for name, files in signed_cases().items():
        folder = root / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for shared in ("envelope.jsonld", "provider.jsonld"):
            (folder / shared).write_bytes((ACCEPTED_MAPPING / shared).read_bytes())
        for file, text in files.items():
            (folder / file).write_text(text)


def test_under_a_key_binding_the_offer_of_an_alignment_names_the_key() -> None:
    """Issue 34: an artifact of a bound issuer counts only with a proof by its key; the
    remedy that asks for an artifact says so (proofRequired), so that the sender does not
    offer an unsigned one and meet the same refusal."""
    folder = CASES / "signed-proof-missing"
    checker = Checker(str(folder / "profile.ttl"), capabilities=[folder / "provider.jsonld"],
                      alignments=[folder / "align0.json"])
    decision = checker.check((folder / "envelope.jsonld").read_bytes(),
                             params={"sourceLang": "zh", "targetLang": "en"},
                             at=datetime.fromisoformat(AT.replace("Z", "+00:00")))
    [offer] = [r.as_dict() for r in decision.remedies if r.action == "offer-alignment"]
    assert offer["proofRequired"] == [{"issuer": MAPPING_AUTHORITY, "verificationMethods": [
        provenance.method_of(did_of_seed())]}]
    # A profile that trusts by claim asks for no proof.
    plain = Checker("cs-translation", capabilities=[folder / "provider.jsonld"])
    decided = plain.check((folder / "envelope.jsonld").read_bytes(),
                          params={"sourceLang": "zh", "targetLang": "en"})
    assert all("proofRequired" not in r.as_dict() for r in decided.remedies)


def test_the_signed_cases_are_what_the_test_keys_make(tmp_path: Path) -> None:
    _write_cases(tmp_path)
    for name in signed_cases():
        written = {p.name: p.read_bytes() for p in (tmp_path / name).iterdir()}
        committed = {p.name: p.read_bytes() for p in (CASES / name).iterdir()}
        assert committed == written, (
            f"tests/cases/compatibility/{name} is stale: run python tests/test_provenance.py")


if __name__ == "__main__":
    _write_cases(CASES)


# --- keys checked as keys (issue 35) ---------------------------------------------------------

# Encodings of small-order points (the identity, and points of order 2, 4 and 8) and
# non-canonical encodings (y at or above p): none is a key a signature can be checked with.
WEAK_KEYS = {
    "identity": "01" + "00" * 31,
    "order 4 (y = 0)": "00" * 32,
    "order 8": "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "order 2 (y = p - 1)": "ec" + "ff" * 30 + "7f",
    "non-canonical (y = p)": "ed" + "ff" * 30 + "7f",
    "non-canonical (y = p + 1)": "ee" + "ff" * 30 + "7f",
}


def _forged(key: str) -> tuple[str, dict[str, Any]]:
    """A did:key of ``key`` and the 12.4 artifact, changed, with a 'proof' made without any
    private key: R the identity point, S zero, which a small-order key 'verifies'."""
    did = provenance.did_key(bytes.fromhex(key))
    artifact = {**artifact_124(), "assertedBy": did}
    artifact["mappingRules"][0]["to"] = "https://example.net/onto/doc#SomethingElse"
    proof = {"type": "DataIntegrityProof", "cryptosuite": "eddsa-jcs-2022",
             "created": "2026-05-01T00:00:00Z", "verificationMethod": provenance.method_of(did),
             "proofPurpose": "assertionMethod"}
    signature = bytes.fromhex("01" + "00" * 31) + bytes(32)
    proof["proofValue"] = "z" + __import__("base58").b58encode(signature).decode()
    artifact["proof"] = proof
    return did, artifact


@pytest.mark.parametrize("kind", WEAK_KEYS)
def test_a_small_order_or_non_canonical_key_is_refused_where_a_profile_is_read(kind: str) -> None:
    """Issue 35: a profile could trust a did:key whose Ed25519 key is a small-order point, and
    lint called it ok; a signature made with no private key then verified for any content."""
    did = provenance.did_key(bytes.fromhex(WEAK_KEYS[kind]))
    text = profile_binding(binding=f"[ iop:issuer <{MAPPING_AUTHORITY}> ; "
                                   f"iop:verificationMethod <{did}> ]")
    with pytest.raises(ConfigurationError, match="is no Ed25519 public key"):
        read_profile(text.encode(), "p.ttl")
    # Trusted as an issuer of its own (a did:key issuer is trusted by its key).
    with pytest.raises(ConfigurationError, match="is no Ed25519 public key"):
        read_profile(profile_binding(trust=did).encode(), "p.ttl")


@pytest.mark.parametrize("kind", WEAK_KEYS)
def test_a_proof_by_a_small_order_key_is_no_proof(kind: str, tmp_path: Path) -> None:
    """At verification: the forged proof over an edited artifact is malformed, never
    "signed", whatever the profile trusts."""
    _, artifact = _forged(WEAK_KEYS[kind])
    read = read_artifact(json.dumps(artifact).encode(), "a.json", 0)
    assert read.proof is not None and read.proof.code == "alignment.proof-malformed", read.proof
    assert "is no Ed25519 public key" in read.proof.problem
    (tmp_path / "a.json").write_text(json.dumps(artifact))
    lint = subprocess.run([str(Path(sys.executable).parent / "ioa-check"), "lint", "a.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert lint.returncode == 1 and "alignment.proof-malformed" in lint.stdout
    # A check under a profile that trusts the mapping authority by claim: the forged proof
    # excludes the artifact; it never comes out "signed".
    decision = Checker("cs-translation", capabilities=[CASES / "signed-proof-missing" /
                                                        "provider.jsonld"],
                       alignments=[json.dumps({**artifact, "assertedBy": MAPPING_AUTHORITY,
                                               "mappingRules": artifact_124()["mappingRules"]}
                                              ).encode()]).check(
        (CASES / "signed-proof-missing" / "envelope.jsonld").read_bytes(),
        params={"sourceLang": "zh", "targetLang": "en"},
        at=datetime.fromisoformat(AT.replace("Z", "+00:00")))
    assert decision.verdict is not Verdict.COMPATIBLE
    assert "alignment.proof-malformed" in [f.code for f in decision.findings]


def test_the_forged_proof_verifies_under_the_bare_library() -> None:
    """The attack is real: OpenSSL's Ed25519 accepts the forgery under the identity key,
    so only the point check above keeps it out."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(WEAK_KEYS["identity"]))
    forged = bytes.fromhex("01" + "00" * 31) + bytes(32)
    key.verify(forged, b"any content at all")  # raises InvalidSignature if it refused
