"""A hostile suite for signed alignment artifacts (issue 35: "a hostile suite of your own for
each surface ... signatures"; draft 7.2, 7.3, 12.4; contract 6).

The invariant held over every input: **an artifact counts as signed evidence only if its
canonical content is the content its issuer's key signed.** The attacker holds the signed
12.4 artifact, the issuer's public key (its did:key) and keys of their own, and may change
anything:

* bytes of the artifact file (flips, insertions, deletions, truncation) and JSON-level edits
  of its members, several at once;
* the proof: its value re-encoded (a signature made malleable by adding the group order L to
  S, other multibase prefixes, padding), another key's valid proof, a proof copied onto
  other content, the verification method swapped for a small-order point, an identity point
  or a non-canonical encoding of the issuer's key, the proof's ``created`` moved;
* encodings that are *the same JSON value* (escapes, member order, whitespace) must keep a
  valid proof valid: JCS signs the value, not the spelling.

Each input goes through the library's proof reading and through a whole check under a
profile that binds the issuer's key and requires its proof, in both engines, which must
agree. The default run keeps a small budget; ``pytest -m slow`` runs thousands. The
counter-examples kept as cases are the ``signed-*`` folders of tests/cases/compatibility/
(written by ``python tests/test_provenance.py``) and the explicit inputs below.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import base58
import pytest
from test_provenance import _members

from ioa_semantic import Checker, Verdict
from ioa_semantic.pipeline import provenance

from support import (
    ACCEPTED_MAPPING,
    AT,
    OTHER_SEED,
    bound_profile,
    did_of_seed,
    signed_artifact,
)

INSTANT = datetime.fromisoformat(AT.replace("Z", "+00:00"))
PARAMS = {"sourceLang": "zh", "targetLang": "en"}
SIGNED = signed_artifact()
CANONICAL = provenance.canonical({k: v for k, v in SIGNED.items() if k != "proof"})
# The Ed25519 group order: S and S + L verify the same in a lax verifier (malleability).
L = 2 ** 252 + 27742317777372353535851937790883648493


def _content(document: Any) -> bytes | None:
    """The canonical content an artifact document carries, proof aside (None: not one)."""
    if not isinstance(document, dict):
        return None
    try:
        return provenance.canonical({k: v for k, v in document.items() if k != "proof"})
    except Exception:  # a value JCS cannot canonicalize carries no content
        return None


class Judge:
    """The 12.1 check under a profile binding the issuer's key and requiring its proof, in
    both engines, built once (a Checker per engine and artifact set would dominate)."""

    def __init__(self, tmp: Path) -> None:
        self.profile = tmp / "bound.ttl"
        self.profile.write_text(bound_profile(did_of_seed()))
        self.envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()

    def signed_evidence(self, artifact: bytes) -> bool:
        """Whether a check counts ``artifact`` as signed evidence (both engines agree)."""
        answers = []
        for engine in ("compiled", "reference"):
            checker = Checker(str(self.profile), capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                              alignments=[artifact], engine=engine)
            decision = checker.check(self.envelope, params=PARAMS, at=INSTANT)
            answers.append(decision.as_dict())
        assert answers[0] == answers[1], "the engines disagree"
        evidence = answers[0].get("evidence", ())
        signed = any(item.get("provenance") == "signed" for item in evidence)
        assert not signed or answers[0]["verdict"] == Verdict.COMPATIBLE.value
        return signed


def _holds(judge: Judge, artifact: bytes) -> None:
    """The invariant for one input: signed evidence only for the signed content."""
    try:
        document = json.loads(artifact)
    except (ValueError, RecursionError):
        document = None
    proof = provenance.read_proof(copy.deepcopy(document)) if isinstance(document, dict) else None
    same = _content(document) == CANONICAL
    if proof is not None and proof.verified:
        assert same, f"a proof verifies for changed content: {artifact[:300]!r}"
    if judge.signed_evidence(artifact):
        assert same, f"changed content counted as signed evidence: {artifact[:300]!r}"


# --- proofs forged from the public key alone ------------------------------------------------


def _proof_value(document: dict[str, Any]) -> bytes:
    value = document["proof"]["proofValue"]
    assert value.startswith("z")
    return bytes(base58.b58decode(value[1:]))


def _multibase(raw: bytes) -> str:
    return "z" + base58.b58encode(raw).decode("ascii")


def _with_signature(signature: bytes) -> dict[str, Any]:
    doc = copy.deepcopy(SIGNED)
    doc["proof"]["proofValue"] = _multibase(signature)
    return doc


def _malleable() -> dict[str, Any]:
    """S + L in place of S: the same signature to a verifier that does not check S < L."""
    signature = _proof_value(SIGNED)
    s = int.from_bytes(signature[32:], "little") + L
    return _with_signature(signature[:32] + s.to_bytes(32, "little"))


def _identity_key_method() -> str:
    """A did:key of the identity point (y = 1), whose "signature" R=identity, S=0 verifies
    for any message in a verifier that accepts small-order keys."""
    return provenance.did_key((1).to_bytes(32, "little"))


def _foreign_proof_on_content() -> dict[str, Any]:
    """Another key's valid proof over changed content, under the issuer's method."""
    changed = copy.deepcopy(SIGNED)
    del changed["proof"]
    changed["mappingRules"][0]["to"] += "Evil"
    forged = signed_artifact(changed, seed=OTHER_SEED)
    forged["proof"]["verificationMethod"] = SIGNED["proof"]["verificationMethod"]
    return forged


def _proof_moved() -> dict[str, Any]:
    """The issuer's genuine proof copied onto changed content."""
    changed = copy.deepcopy(SIGNED)
    changed["mappingRules"][0]["from"] += "Evil"
    return changed


def _identity_signed() -> dict[str, Any]:
    doc = _proof_moved()
    doc["proof"]["verificationMethod"] = provenance.method_of(_identity_key_method())
    doc["proof"]["proofValue"] = _multibase((1).to_bytes(32, "little") + bytes(32))
    return doc


FORGERIES: dict[str, Callable[[], dict[str, Any]]] = {
    "S + L (malleable signature)": _malleable,
    "another key's proof under the issuer's method": _foreign_proof_on_content,
    "the genuine proof on changed content": _proof_moved,
    "an identity-point key and an all-but-zero signature": _identity_signed,
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forgery_from_the_public_key_is_never_signed_evidence(name: str,
                                                                 tmp_path: Path) -> None:
    document = FORGERIES[name]()
    proof = provenance.read_proof(copy.deepcopy(document))
    assert proof is None or not proof.verified, name
    assert not Judge(tmp_path).signed_evidence(json.dumps(document).encode()), name


def test_the_same_json_value_spelt_otherwise_stays_signed(tmp_path: Path) -> None:
    """JCS signs the JSON value: escapes, member order and whitespace change nothing, so a
    relay that re-serialises a signed artifact does not break its proof."""
    judge = Judge(tmp_path)
    spelt = json.dumps(dict(reversed(list(SIGNED.items()))), ensure_ascii=True, indent=3)
    assert judge.signed_evidence(spelt.encode())
    assert judge.signed_evidence(json.dumps(SIGNED).encode())


# --- a mutation fuzzer over the signed artifact ---------------------------------------------


_VALUES: list[Any] = [None, True, 0, 1.5, "", "x", [], {}, "did:key:z6Mk",
                      "2026-01-01T00:00:00Z", "https://example.org/onto/cs#Text"]


def _json_mutant(rng: random.Random) -> bytes:
    doc = copy.deepcopy(SIGNED)
    for _ in range(rng.randint(1, 3)):
        paths = list(_members(doc))
        if not paths:
            break
        path = rng.choice(paths)
        parent: Any = doc
        for step in path[:-1]:
            parent = parent[step]
        how = rng.choice(("replace", "remove", "duplicate", "swap"))
        if how == "replace":
            old = parent[path[-1]]
            parent[path[-1]] = rng.choice([*_VALUES, old * 2 if isinstance(old, str) else None])
        elif how == "remove":
            del parent[path[-1]]
        elif how == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        elif how == "swap":
            other = rng.choice(paths)
            holder: Any = doc
            try:
                for step in other[:-1]:
                    holder = holder[step]
                parent[path[-1]], holder[other[-1]] = holder[other[-1]], parent[path[-1]]
            except (KeyError, IndexError, TypeError):
                pass
    return json.dumps(doc).encode()


def _byte_mutant(rng: random.Random) -> bytes:
    data = bytearray(json.dumps(SIGNED).encode())
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data))
        how = rng.randrange(4)
        if how == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif how == 1:
            del data[at]
        elif how == 2:
            data.insert(at, rng.choice(b'"{}[],:\\ 0aZ\x00\xff'))
        else:
            del data[at:]
            break
    return bytes(data)


def _fuzz(tmp: Path, count: int, seed: int) -> None:
    judge = Judge(tmp)
    rng = random.Random(seed)
    for _ in range(count):
        mutant = _json_mutant(rng) if rng.random() < 0.6 else _byte_mutant(rng)
        _holds(judge, mutant)


def test_mutants_of_a_signed_artifact_are_never_signed_evidence(tmp_path: Path) -> None:
    _fuzz(tmp_path, 40, seed=20261202)


@pytest.mark.slow
def test_mutants_of_a_signed_artifact_are_never_signed_evidence_many(tmp_path: Path) -> None:
    _fuzz(tmp_path, 1500, seed=int(datetime.now(UTC).strftime("%Y%m%d")))


def test_the_seed_itself_is_signed_evidence(tmp_path: Path) -> None:
    """The suite's reference point: the unchanged artifact is signed evidence (without it,
    every assertion above could hold vacuously)."""
    assert Judge(tmp_path).signed_evidence(json.dumps(SIGNED).encode())
