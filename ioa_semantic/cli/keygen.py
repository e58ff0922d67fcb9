"""``ioa-check keygen [--output KEYFILE]``: a new Ed25519 signing key and its did:key.

The key signs artifacts (``ioa-check sign``); its ``did:key`` is what an artifact names as
``assertedBy`` or what a receiver's profile binds to the issuer (contract 6).
"""

from __future__ import annotations

import argparse
import sys

from .._status import ExitStatus
from ..pipeline import provenance
from .parsing import write_output

DESCRIPTION = ("Make an Ed25519 signing key for alignment artifacts (PEM, PKCS #8, "
               "unencrypted) and print its did:key.")
EPILOG = ("with --output, the key is written to a new file only its owner can read and the "
          "did:key is printed on standard output; without it, the key goes to standard output "
          "and the did:key to standard error. exit status: 0 written, 2 usage error or the "
          "file exists, 74 the key cannot be written")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", metavar="KEYFILE",
                        help="write the key to this new file (default: standard output)")


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The key written and its did:key said; the exit status."""
    key = provenance.new_key()
    write_output(opts.output, provenance.key_pem(key), private=True)
    print(provenance.did_of(key), file=sys.stdout if opts.output else sys.stderr)
    return ExitStatus.COMPATIBLE
