"""``ioa-check sign ARTIFACT --key KEYFILE``: an alignment artifact with a Data Integrity proof.

A mapping authority publishes signed artifacts with the tool its receivers check them with:
the artifact is read and validated as a check reads it, signed with the key (cryptosuite
eddsa-jcs-2022, contract 6) and written with its proof; a proof it had is replaced.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from .._exceptions import ConfigurationError, SigningKeyError
from .._files import KEY_BYTES, Unreadable, read_bounded
from .._status import ExitStatus
from ..pipeline import provenance
from ..sources.loader import read_artifact, resolve_artifact
from .parsing import _instant, say, write_output

DESCRIPTION = ("Sign an alignment artifact (12.4 shape) with an Ed25519 key: write it with a "
               "W3C Data Integrity proof (eddsa-jcs-2022) whose verification method is the "
               "key's did:key.")
EPILOG = ("--output replaces only a file sign wrote (a signed artifact), never another one, "
          "and never through a symbolic link. exit status: 0 written, 1 the artifact is "
          "malformed or asserted by another did:key (nothing written), 2 usage error, unreadable "
          "file, an --output that is not a signed artifact (left as it is), or a proof that "
          "would be valid at no instant (--expires not after --created, or no instant the "
          "artifact is valid at), 74 the output cannot be written")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", metavar="ARTIFACT|NAME",
                        help="the alignment artifact (a .json file, or a shipped one's name)")
    parser.add_argument("--key", required=True, metavar="KEYFILE",
                        help="the Ed25519 private key: PEM (PKCS #8, as ioa-check keygen "
                             "writes it) or a JWK (kty OKP, crv Ed25519)")
    parser.add_argument("--output", metavar="FILE",
                        help="write the signed artifact here (default: standard output)")
    parser.add_argument("--created", type=_instant, metavar="TIMESTAMP",
                        help="the proof's creation instant, ISO-8601 with a UTC offset "
                             "(default: now)")
    parser.add_argument("--expires", type=_instant, metavar="TIMESTAMP",
                        help="an instant from which receivers no longer accept the proof "
                             "(default: none; validUntil still limits the artifact)")


def _read(path: str) -> bytes:
    """The key file's bytes, read up to :data:`~ioa_semantic._files.KEY_BYTES` from a regular
    file (a named pipe is refused, never waited on)."""
    try:
        return read_bounded(path, KEY_BYTES, "for a key file")
    except Unreadable as exc:
        raise SigningKeyError(f"--key {path}: {exc}") from None


def _say(line: str) -> None:
    say("ioa-check sign", line)  # the artifact as given, shown, never obeyed


def _overlap_problem(valid_from: datetime | None, valid_until: datetime | None,
                     created: datetime, expires: datetime | None) -> str | None:
    """Why a proof valid from ``created`` until ``expires`` would be evidence at no instant
    the artifact is valid (7.2: the artifact is used only where every limit holds), or None.
    The proof's instants as it writes them (to the second), the artifact's as it states them."""
    def written(instant: datetime) -> datetime:
        return instant.astimezone(UTC).replace(microsecond=0)

    if valid_until is not None and written(created) >= valid_until:
        return (f"the proof would be created ({provenance.timestamp(created)}) when the "
                f"artifact has expired (validUntil {valid_until.isoformat()}): it would be "
                "evidence at no instant the artifact is valid (give an earlier --created)")
    if expires is not None and valid_from is not None and written(expires) <= valid_from:
        return (f"the proof would expire ({provenance.timestamp(expires)}) before the "
                f"artifact is valid (validFrom {valid_from.isoformat()}): it would be "
                "evidence at no instant the artifact is valid (give a later --expires)")
    return None


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The signed artifact written; the exit status."""
    created = opts.created or datetime.now(UTC)
    window = provenance.window_problem(created, opts.expires)
    if window is not None:
        parser.error(f"--expires: {window}")
    origin, data = resolve_artifact(opts.artifact)  # ArtifactError, SigningKeyError: usage
    key = provenance.read_key(_read(opts.key), opts.key)
    artifact = read_artifact(data, origin, 0)
    if artifact.malformed:
        for problem in artifact.problems:
            _say(f"{opts.artifact}: {problem}")
        _say(f"{opts.artifact} is not a well-formed artifact; not signed")
        return ExitStatus.INCOMPATIBLE
    did = provenance.did_of(key)
    if provenance.is_did_key(artifact.asserted_by) and (
            provenance.method_of(artifact.asserted_by) != provenance.method_of(did)):
        _say(f"{opts.artifact} is asserted by {artifact.asserted_by}, but the key is {did}: "
             "receivers would reject the proof; not signed")
        return ExitStatus.INCOMPATIBLE
    if artifact.proof is not None:
        _say(f"{opts.artifact}: its proof is replaced")
    try:
        signed = provenance.sign(artifact.document, key, created=created, expires=opts.expires)
    except ValueError as exc:  # a document RFC 8785 cannot canonicalize
        _say(f"{opts.artifact}: {exc}; not signed")
        return ExitStatus.INCOMPATIBLE
    # After the artifact's own problems, which a later --created would not cure.
    overlap = _overlap_problem(artifact.valid_from, artifact.valid_until, created, opts.expires)
    if overlap is not None:  # a usage error: other --created or --expires would sign it
        raise ConfigurationError(f"{opts.artifact}: {overlap}; not signed")
    text = json.dumps(signed, indent=2, ensure_ascii=False) + "\n"
    write_output(opts.output, text.encode("utf-8"), ours=is_signed,
                 what="an artifact ioa-check sign wrote (one with an eddsa-jcs-2022 proof)")
    return ExitStatus.COMPATIBLE


def is_signed(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is what sign writes: a JSON object with a Data
    Integrity proof of its cryptosuite. An unsigned artifact is not: signing it in place
    would replace the only copy of what was asserted, so its signed copy goes elsewhere."""
    try:
        value = json.loads(head)
    except (ValueError, RecursionError):  # not JSON, too deep, or longer than what is read
        return False
    proof = value.get("proof") if isinstance(value, dict) else None
    return isinstance(proof, dict) and proof.get("cryptosuite") == "eddsa-jcs-2022"
