"""Provenance: W3C Data Integrity proofs over alignment artifacts, cryptosuite eddsa-jcs-2022.

Draft 12.4 calls ``assertedBy`` "a claim requiring external provenance validation", and 7.2
asks that an artifact's provenance be available for validation. An artifact proves who
signed it with a Data Integrity ``proof`` made as "Data Integrity EdDSA Cryptosuites v1.0"
(W3C Recommendation, section 3.3) says: the document without its proof and the proof
configuration (the proof without ``proofValue``, with the document's ``@context`` when it has
one) each canonicalized with the JSON Canonicalization Scheme (RFC 8785) and hashed with
SHA-256; the proof configuration's hash then the document's, signed with Ed25519. The
verification method is a ``did:key`` whose multibase (base58btc) value is the multicodec
Ed25519 public key (0xed 0x01, then 32 bytes).

Everything here is a pure function of its arguments: :func:`read_proof` says what a
document's proof is and whether it verifies, as a value; :func:`sign` makes one. Whether a
verified proof makes an artifact acceptable is the receiver's trust policy, which the
decision applies (7.2: a valid signature never makes an issuer trusted). The foreign errors
(cryptography's, rfc8785's, base58's) are mapped here, at one boundary, to a proof's
problem or to :class:`~ioa_semantic.SigningKeyError`.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from .._exceptions import SigningKeyError
from .._instants import instant

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# cryptography, rfc8785 and base58 are imported where a proof or a key is met, not with the
# module: most checks meet none, and cryptography alone would cost a one-envelope command
# about a tenth of its run. So are hashlib (OpenSSL, about 2.5 ms) and base64, and the
# date-time pattern is compiled when a proof is first read.

PROOF_TYPE = "DataIntegrityProof"
CRYPTOSUITE = "eddsa-jcs-2022"
PROOF_PURPOSE = "assertionMethod"
DID_KEY = "did:key:"
# Multicodec prefixes (unsigned varints) of an Ed25519 public key and private key (seed).
_ED25519_PUBLIC = b"\xed\x01"
_ED25519_PRIVATE = b"\x80\x26"

# Why a proof does not hold, by kind: each is a code of the registry (section 7.2).
MALFORMED = "alignment.proof-malformed"
UNSUPPORTED = "alignment.proof-unsupported"
INVALID = "alignment.proof-invalid"

# XML Schema 1.1 dateTimeStamp: a date-time with a time zone offset, which created and
# expires must be (Data Integrity 2.1).
_DATE_TIME_STAMP = (r"-?[0-9]{4,}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                    r"(Z|[+-](?:(?:0[0-9]|1[0-3]):[0-5][0-9]|14:00))\Z")


class _Problem(Exception):
    """A proof that does not hold, with the code that says why (internal to this module)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Proof(NamedTuple):
    """A document's proof as read: its verification method, its validity limits, and why it
    does not hold (``code`` and ``problem``), or nothing when it verifies."""

    method: str = ""
    created: datetime | None = None
    expires: datetime | None = None
    code: str = ""
    problem: str = ""

    @property
    def verified(self) -> bool:
        return not self.code

    @property
    def controller(self) -> str:
        """The DID the verification method belongs to (a did:key controls its own key)."""
        return self.method.partition("#")[0]


# --- multibase and did:key ------------------------------------------------------------------


# The longest multibase value this cryptosuite has: an Ed25519 signature (64 bytes) is 88
# base58 characters at most, a did:key's multikey (34 bytes) 47; with room to spare. Base58
# decoding is quadratic in the length, so a longer value is refused before it is decoded.
_MULTIBASE_CHARS = 128


def _shown(value: Any) -> str:
    """A value as a message quotes it: whole when short, else its start and its length."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text):,} characters)"


def _multibase_decode(value: str, what: str) -> bytes:
    """The bytes of a base58btc multibase value (``z`` then base58, Bitcoin alphabet)."""
    if len(value) > _MULTIBASE_CHARS:
        raise _Problem(MALFORMED, f"{what} {_shown(value)} is longer than any value of the "
                                  f"eddsa-jcs-2022 cryptosuite ({_MULTIBASE_CHARS} characters)")
    import base58

    if not value.startswith("z") or len(value) < 2:
        raise _Problem(MALFORMED, f"{what} {_shown(value)} is not a base58btc multibase value "
                                  "(it must start with 'z')")
    try:
        raw = base58.b58decode(value[1:])
    except ValueError as exc:
        raise _Problem(MALFORMED, f"{what} {_shown(value)} is not base58btc: {exc}") from None
    if base58.b58encode(raw).decode("ascii") != value[1:]:
        raise _Problem(MALFORMED, f"{what} {_shown(value)} is not a canonical base58btc value")
    return raw


def _multibase(raw: bytes) -> str:
    import base58

    return "z" + base58.b58encode(raw).decode("ascii")


def did_key(public_key: bytes) -> str:
    """The ``did:key`` DID of a 32-byte Ed25519 public key."""
    return DID_KEY + _multibase(_ED25519_PUBLIC + public_key)


def method_of(did: str) -> str:
    """The verification method of a ``did:key`` DID: ``did:key:X#X``; a method stays itself."""
    if "#" in did:
        return did
    return f"{did}#{did.removeprefix(DID_KEY)}"


def is_did_key(iri: str) -> bool:
    return iri.startswith(DID_KEY)


def public_key_of(reference: str) -> bytes:
    """The Ed25519 public key a ``did:key`` DID or verification method names.

    Raises ValueError (its message says why) when it is not a ``did:key`` of an Ed25519 key:
    the one boundary the profile reader and the proof reader share.
    """
    try:
        return _public_key(reference)
    except _Problem as problem:
        raise ValueError(problem.message) from None


def _public_key(reference: str) -> bytes:
    if not is_did_key(reference):
        raise _Problem(UNSUPPORTED, f"the verification method {_shown(reference)} is not a did:key "
                                    "(the only kind this checker resolves, with no network)")
    did, hash_mark, fragment = reference.partition("#")
    value = did.removeprefix(DID_KEY)
    if hash_mark and fragment != value:
        raise _Problem(MALFORMED, f"the verification method {_shown(reference)} is not "
                                  f"{DID_KEY}X#X for its own key X")
    raw = _multibase_decode(value, "the did:key value")
    if raw[:2] != _ED25519_PUBLIC:
        raise _Problem(UNSUPPORTED, f"the did:key {_shown(did)} is not an Ed25519 key (multicodec "
                                    f"prefix 0x{raw[:2].hex()}, not 0xed01)")
    if len(raw) != 34:
        raise _Problem(MALFORMED, f"the did:key {_shown(did)} holds {len(raw) - 2} key bytes, not 32")
    problem = _point_problem(raw[2:])
    if problem is not None:
        raise _Problem(MALFORMED, f"the did:key {_shown(did)} is no Ed25519 public key: {problem}")
    return raw[2:]


# --- the public key as a point (RFC 8032 5.1.3) ---------------------------------------------

_P = 2 ** 255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _point_problem(key: bytes) -> str | None:
    """Why 32 bytes are not a key a signature can be checked with, or None.

    A key must be the canonical encoding of a point of the curve (RFC 8032 5.1.3: y below p,
    no negative zero), and the point must not be of small order: a small-order key (the
    identity, or a point of order 2, 4 or 8) "verifies" a signature made without any private
    key over any content, so an edited artifact would pass as signed. The point's order is
    tested as [8]P, the cofactor times P, which is the identity exactly for those points."""
    y = int.from_bytes(key, "little") & ((1 << 255) - 1)
    sign = key[31] >> 7
    if y >= _P:
        return "its y coordinate is not below p (a non-canonical encoding)"
    u, v = (y * y - 1) % _P, (_D * y * y + 1) % _P
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    if (v * x * x - u) % _P != 0:
        x = x * _SQRT_M1 % _P
        if (v * x * x - u) % _P != 0:
            return "it is not the encoding of a point of the curve"
    if x == 0 and sign:
        return "it encodes x = 0 with the sign bit set (a non-canonical encoding)"
    if x & 1 != sign:
        x = _P - x
    # [8]P in extended coordinates (X, Y, Z, T), three doublings; identity is (0, Y, Y, 0).
    point = (x, y, 1, x * y % _P)
    for _ in range(3):
        point = _double(point)
    if point[0] % _P == 0 and (point[1] - point[2]) % _P == 0:
        return "it is a point of small order, which verifies forged signatures"
    return None


def _double(point: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """Point doubling on the twisted Edwards curve (RFC 8032 5.1.4, a = -1)."""
    x1, y1, z1, _ = point
    a, b, c = x1 * x1 % _P, y1 * y1 % _P, 2 * z1 * z1 % _P
    h = (a + b) % _P
    e = (h - (x1 + y1) ** 2) % _P
    g = (a - b) % _P
    f = (c + g) % _P
    return e * f % _P, g * h % _P, f * g % _P, e * h % _P


# --- the cryptosuite's algorithms (EdDSA Cryptosuites v1.0, 3.3) ---------------------------


def canonical(value: Any) -> bytes:
    """RFC 8785 (JCS) of a JSON value: the cryptosuite's transformation (3.3.3)."""
    import rfc8785

    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise _Problem(MALFORMED, f"the document cannot be canonicalized (RFC 8785): {exc}") from None


def proof_configuration(options: Mapping[str, Any]) -> bytes:
    """The canonical proof configuration of proof options (3.3.5)."""
    if options.get("type") != PROOF_TYPE or options.get("cryptosuite") != CRYPTOSUITE:
        raise _Problem(UNSUPPORTED, f"the proof is of type {_shown(options.get('type'))} with "
                                    f"cryptosuite {_shown(options.get('cryptosuite'))}; this checker "
                                    f"verifies {PROOF_TYPE} with {CRYPTOSUITE} only")
    if "created" in options:
        _instant(options["created"], "created")
    return canonical(dict(options))


def hash_data(transformed_document: bytes, canonical_configuration: bytes) -> bytes:
    """The proof configuration's SHA-256 then the document's (3.3.4): 64 bytes."""
    import hashlib

    return (hashlib.sha256(canonical_configuration).digest()
            + hashlib.sha256(transformed_document).digest())


def _instant(value: Any, member: str) -> datetime:
    if not isinstance(value, str) or not re.match(_DATE_TIME_STAMP, value):
        raise _Problem(MALFORMED, f"the proof's {member} {_shown(value)} is not a date-time with a "
                                  "time zone offset (XML Schema dateTimeStamp)")
    try:
        return instant(value)
    except ValueError as exc:
        raise _Problem(MALFORMED, f"the proof's {member} {exc}") from None


def _context_values(context: Any) -> list[Any]:
    return list(context) if isinstance(context, list) else [context]


def read_proof(document: Mapping[str, Any]) -> Proof | None:
    """The document's ``proof`` read and verified (3.3.2, with Data Integrity 4.4's checks of
    the proof's members), or None when it has none."""
    if "proof" not in document:
        return None
    proof = document["proof"]
    method = proof.get("verificationMethod") if isinstance(proof, dict) else None
    method = method if isinstance(method, str) else ""
    try:
        return _verified(document, proof)
    except _Problem as problem:
        return Proof(method=method, code=problem.code, problem=problem.message)


def _verified(document: Mapping[str, Any], proof: Any) -> Proof:
    if isinstance(proof, list):
        raise _Problem(UNSUPPORTED, "the proof is a set of proofs; this checker verifies one "
                                    "proof object")
    if not isinstance(proof, dict):
        raise _Problem(MALFORMED, "the proof is not an object")
    for member in ("type", "cryptosuite", "verificationMethod", "proofPurpose", "proofValue"):
        if member not in proof:
            raise _Problem(MALFORMED, f"the proof has no {member}")
        if not isinstance(proof[member], str):
            raise _Problem(MALFORMED, f"the proof's {member} is not a string")
    if "previousProof" in proof:
        raise _Problem(UNSUPPORTED, "the proof names a previousProof (a proof chain); this "
                                    "checker verifies one proof")
    options = {k: v for k, v in proof.items() if k != "proofValue"}
    configuration = proof_configuration(options)  # type and cryptosuite first
    if proof["proofPurpose"] != PROOF_PURPOSE:
        raise _Problem(UNSUPPORTED, f"the proof's purpose is {_shown(proof['proofPurpose'])}; an "
                                    f"artifact's issuer asserts it ({PROOF_PURPOSE})")
    created = _instant(proof["created"], "created") if "created" in proof else None
    expires = _instant(proof["expires"], "expires") if "expires" in proof else None
    if created is not None and expires is not None and expires <= created:
        raise _Problem(MALFORMED, f"the proof expires ({proof['expires']}) no later than it was "
                                  f"created ({proof['created']}): it is evidence at no instant")
    method = proof["verificationMethod"]
    public_key = _public_key(method)
    if "#" not in method:
        raise _Problem(MALFORMED, f"the verification method {_shown(method)} names a DID, not one "
                                  f"of its keys ({method_of(method)})")
    signature = _multibase_decode(proof["proofValue"], "the proofValue")
    if len(signature) != 64:
        raise _Problem(MALFORMED, f"the proofValue holds {len(signature)} bytes, not the 64 "
                                  "of an Ed25519 signature")
    found = Proof(method=method, created=created, expires=expires)
    unsecured = {k: v for k, v in document.items() if k != "proof"}
    if "@context" in proof:
        expected = _context_values(proof["@context"])
        if _context_values(document.get("@context", []))[:len(expected)] != expected:
            return found._replace(code=INVALID, problem=(
                "the document's @context does not start with the proof's @context"))
        unsecured["@context"] = proof["@context"]
    data = hash_data(canonical(unsecured), configuration)
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, data)
    except (InvalidSignature, ValueError):
        return found._replace(code=INVALID, problem=(
            f"the signature does not verify under {method}: the artifact or its proof was "
            "changed after signing, or another key signed it"))
    return found


# --- making proofs ------------------------------------------------------------------------


def timestamp(instant: datetime) -> str:
    """An instant as a dateTimeStamp in UTC, to the second."""
    return instant.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def window_problem(created: datetime, expires: datetime | None) -> str | None:
    """Why a proof created at ``created`` and expiring at ``expires`` would be valid at no
    instant (its ``expires`` not after its ``created``, to the second), or None."""
    if expires is None or timestamp(expires) > timestamp(created):
        return None
    return (f"the proof would expire ({timestamp(expires)}) no later than it is created "
            f"({timestamp(created)}): it would be evidence at no instant")


def sign(document: Mapping[str, Any], key: "Ed25519PrivateKey", *, created: datetime,
         expires: datetime | None = None) -> dict[str, Any]:
    """The document with a proof by ``key`` (3.3.1, Create Proof); a proof it had is replaced.

    ValueError when ``expires`` is not after ``created`` as the proof writes them (to the
    second): such a proof would be evidence at no instant."""
    empty = window_problem(created, expires)
    if empty is not None:
        raise ValueError(empty)
    unsecured = {k: v for k, v in document.items() if k != "proof"}
    method = method_of(did_of(key))
    proof: dict[str, Any] = {"type": PROOF_TYPE, "cryptosuite": CRYPTOSUITE,
                             "created": timestamp(created), "verificationMethod": method,
                             "proofPurpose": PROOF_PURPOSE}
    if expires is not None:
        proof["expires"] = timestamp(expires)
    if "@context" in unsecured:
        proof["@context"] = unsecured["@context"]
    try:
        data = hash_data(canonical(unsecured), proof_configuration(proof))
    except _Problem as problem:
        raise ValueError(problem.message) from None
    return {**unsecured, "proof": {**proof, "proofValue": _multibase(key.sign(data))}}


# --- signing keys -------------------------------------------------------------------------


def new_key() -> "Ed25519PrivateKey":
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate()


def _raw_public(key: "Ed25519PrivateKey") -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw)


def did_of(key: "Ed25519PrivateKey") -> str:
    """The ``did:key`` of a signing key's public key."""
    return did_key(_raw_public(key))


def key_pem(key: "Ed25519PrivateKey") -> bytes:
    """The key as an unencrypted PKCS #8 PEM file."""
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def read_key(data: bytes, source: str) -> "Ed25519PrivateKey":
    """An Ed25519 private key from a PEM file (PKCS #8) or a JWK (``kty`` OKP, ``crv``
    Ed25519, ``d``; ``x``, when present, must be its public key)."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = data.lstrip()
    if text.startswith(b"{"):
        return _jwk_key(text, source)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise SigningKeyError(f"{source}: the key is encrypted; give an unencrypted key") from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise SigningKeyError(f"{source}: not a PEM private key or a JWK: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{source}: the key is not an Ed25519 key "
                              f"({type(key).__name__.removeprefix('_')})")
    return key


def _jwk_key(text: bytes, source: str) -> "Ed25519PrivateKey":
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        jwk = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SigningKeyError(f"{source}: not a JSON Web Key: {exc}") from None
    if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise SigningKeyError(f"{source}: the JWK is not an Ed25519 key (kty OKP, crv Ed25519)")
    if not isinstance(jwk.get("d"), str):
        raise SigningKeyError(f"{source}: the JWK has no private key (d)")
    seed = _base64url(jwk["d"], source, "d")
    if len(seed) != 32:
        raise SigningKeyError(f"{source}: the JWK's d holds {len(seed)} bytes, not 32")
    key = Ed25519PrivateKey.from_private_bytes(seed)
    public = _raw_public(key)
    if "x" in jwk and (not isinstance(jwk["x"], str) or _base64url(jwk["x"], source, "x") != public):
        raise SigningKeyError(f"{source}: the JWK's x is not the public key of its d")
    return key


def _base64url(value: str, source: str, member: str) -> bytes:
    import base64
    import binascii

    if not re.fullmatch(r"[A-Za-z0-9_-]*", value):
        raise SigningKeyError(f"{source}: the JWK's {member} is not base64url")
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise SigningKeyError(f"{source}: the JWK's {member} is not base64url") from None
