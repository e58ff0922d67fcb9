"""``ioa-check lint FILE...``: profiles (.ttl) and alignment artifacts (.json) on their own."""

from __future__ import annotations

import argparse

from .._exceptions import ProfileError
from .._status import ExitStatus
from ..sources.loader import read_artifact, read_profile, unknown_profile_terms

DESCRIPTION = "Validate profile (.ttl) and alignment artifact (.json) files."
EPILOG = "exit status: 0 every file ok, 1 a file has problems, 2 usage error"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="a profile (.ttl) or an alignment artifact (.json)")


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Each file's problems, or ok; the exit status."""
    status = ExitStatus.COMPATIBLE
    for name in opts.files:
        problems = _lint_problems(name)
        if problems:
            status = ExitStatus.INCOMPATIBLE
            for problem in problems:
                print(f"{name}: {problem}")
        else:
            print(f"{name}: ok")
    return status


def _lint_problems(path: str) -> list[str]:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return [f"cannot be read: {exc.strerror}"]
    if path.endswith(".ttl"):
        problems = [f"iop:{term} is not a profile setting any reader knows (misspelt?); it "
                    "would be ignored" for term in unknown_profile_terms(data)]
        try:
            read_profile(data, str(path))
        except ProfileError as exc:
            problems.append(str(exc).removeprefix(f"{path}: "))
        return problems
    return list(read_artifact(data, str(path), 0).problems)
