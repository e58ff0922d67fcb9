"""``ioa-check lint FILE... [--profile NAME|PATH]``: profiles (.ttl) and alignment artifacts
(.json) on their own; an artifact's proof by its structure, and with a profile by whether
the profile's trust policy accepts its provenance."""

from __future__ import annotations

import argparse
import sys

from .._exceptions import ConfigurationError, ProfileError
from .._status import ExitStatus
from ..pipeline.decision import provenance_problem
from ..pipeline.provenance import INVALID
from ..sources.loader import Profile, load_profile, read_artifact, read_profile, unknown_profile_terms

DESCRIPTION = "Validate profile (.ttl) and alignment artifact (.json) files."
EPILOG = ("an artifact's proof is checked for its structure; with --profile, also whether it "
          "verifies and the profile accepts its provenance (the issuer trusted, a required "
          "proof present, made by a key the profile accepts). exit status: 0 every file ok, "
          "1 a file has problems, 2 usage error or a --profile that cannot be read")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="a profile (.ttl) or an alignment artifact (.json)")
    parser.add_argument("--profile", metavar="NAME|PATH",
                        help="judge each artifact's provenance under this profile's trust "
                             "policy (installed name or profile file)")


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Each file's problems, or ok; the exit status."""
    profile = None
    if opts.profile:
        try:
            profile = load_profile(opts.profile)
        except ConfigurationError as exc:
            print(f"ioa-check lint: {exc}", file=sys.stderr)
            return ExitStatus.USAGE
    status = ExitStatus.COMPATIBLE
    for name in opts.files:
        problems, note = _lint_problems(name, profile)
        if problems:
            status = ExitStatus.INCOMPATIBLE
            for problem in problems:
                print(f"{name}: {problem}")
        else:
            print(f"{name}: ok{note}")
    return status


def _lint_problems(path: str, profile: Profile | None) -> tuple[list[str], str]:
    """The file's problems, and what an ok line adds (how an artifact's issuer stands)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return [f"cannot be read: {exc.strerror}"], ""
    if path.endswith(".ttl"):
        problems = [f"iop:{term} is not a profile setting any reader knows (misspelt?); it "
                    "would be ignored" for term in unknown_profile_terms(data)]
        try:
            read_profile(data, str(path))
        except ProfileError as exc:
            problems.append(str(exc).removeprefix(f"{path}: "))
        return problems, ""
    artifact = read_artifact(data, str(path), 0)
    if artifact.malformed:
        return list(artifact.problems), ""
    proof = artifact.proof
    if profile is None:
        # The structure alone: whether it verifies is asked with a profile.
        if proof is None:
            return [], ""
        if proof.code and proof.code != INVALID:
            return [f"{proof.code}: {proof.problem}"], ""
        return [], f" (a well-formed proof by {proof.method}; --profile verifies it)"
    if artifact.asserted_by not in profile.trusted_issuers:
        return [f"alignment.untrusted: issuer {artifact.asserted_by} is not trusted by profile "
                f"{profile.id}"], ""
    problem = provenance_problem(artifact, profile, None)
    if problem is not None:
        return [f"{problem[0]}: {problem[1]}"], ""
    if proof is None:
        return [], f" (trusted by claim under profile {profile.id})"
    if profile.accepted_methods(artifact.asserted_by) is None:
        return [], (f" (trusted by claim under profile {profile.id}; its proof by {proof.method} "
                    "verifies)")
    return [], f" (signed by {proof.method}, accepted by profile {profile.id})"
