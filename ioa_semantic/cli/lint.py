"""``ioa-check lint [FILE...] [--profile NAME|PATH] [--explain] [--format text|json]``:
profiles (.ttl) and alignment artifacts (.json) on their own; an artifact's proof by its
structure, and with a profile by whether the profile's trust policy accepts its provenance;
the profile's own shape files (``iop:shapes``, see ``lint_shapes``). ``--explain`` tells, for
each top-level shape of the shape files named (or of the profile's), which engine evaluates
it and why."""

from __future__ import annotations

import argparse
import os
import sys

from .._exceptions import ProfileError
from .._files import CONFIGURATION_BYTES, Unreadable, read_bounded
from .._nearest import SUGGESTED, did_you_mean
from .._status import ExitStatus
from ..data import SHAPES_SUFFIX
from ..pipeline.decision import provenance_problem
from ..pipeline.provenance import INVALID
from ..sources.loader import (
    PROOF_MEMBERS,
    Artifact,
    Profile,
    artifact_members,
    load_profile,
    read_artifact,
    read_profile,
    rule_members,
)
from ..sources.parameters import describe, key, unit_problem
from .parsing import add_shape_timeout

DESCRIPTION = ("Validate profile (.ttl) and alignment artifact (.json) files, and a profile's "
               "shape files.")
EPILOG = ("an artifact's proof is checked for its structure; with --profile, also whether it "
          "verifies and the profile accepts its provenance (the issuer trusted, a required "
          "proof present, made by a key the profile accepts), and the profile's shape files "
          "are checked (Turtle, SHACL by SHACL's own shapes, no shape left unevaluated). "
          "--explain FILE... (shape files) or --profile P --explain: where each top-level "
          "shape is evaluated (compiled, pyshacl or unsupported) and why. exit status: 0 "
          "every file ok (warnings allowed), 1 a file has problems, 2 usage error, a "
          "--profile that cannot be read, or (--explain) a shape file that cannot be read "
          "or is not Turtle")
# The choices of --format, spelled here so that building the command line's parser imports
# no reporter (tests hold them to reporters.lint.REPORTERS).
FORMATS = ("json", "text")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="a profile (.ttl) or an alignment artifact (.json); with "
                             "--explain, a shape file")
    parser.add_argument("--profile", metavar="NAME|PATH",
                        help="judge each artifact's provenance under this profile's trust "
                             "policy (installed name or profile file), and lint its shape "
                             "files")
    parser.add_argument("--explain", action="store_true",
                        help="say where each top-level shape of the shape files (FILE..., or "
                             "--profile's) is evaluated and why, instead of linting")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (one line a problem) or json (JSON Lines, one object a "
                             "file); default text")
    add_shape_timeout(parser)


def run(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Each file's problems, or ok; the exit status."""
    if opts.explain:
        return _explain(opts, parser)
    if not opts.files and not opts.profile:
        parser.error("name a FILE to lint, or a --profile whose shape files to lint")
    from ..reporters.lint import REPORTERS, Linted, Problem
    from .lint_shapes import lint_shape_files

    # A profile that cannot be loaded is a ConfigurationError: the usage status (cli.main).
    profile = load_profile(opts.profile) if opts.profile else None
    reports = []
    for name in opts.files:
        if name.endswith(SHAPES_SUFFIX):
            # A shape file on its own (named as shipped ones are): linted as a profile's.
            reports.extend(lint_shape_files(Profile(id="", revision="", source=name,
                                                    shapes=(os.path.abspath(name),)),
                                            opts.shape_timeout))
            continue
        problems, note = _lint_problems(name, profile)
        reports.append(Linted(name, tuple(Problem(p) for p in problems), note))
    if profile is not None:
        if profile.shapes:
            reports.extend(lint_shape_files(profile, opts.shape_timeout))
        elif not opts.files:
            reports.append(Linted(opts.profile, (), " (it names no shape files)"))
    REPORTERS[opts.format].lint(reports, sys.stdout)
    return ExitStatus.COMPATIBLE if all(r.ok for r in reports) else ExitStatus.INCOMPATIBLE


def _explain(opts: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if bool(opts.files) == bool(opts.profile):
        parser.error("--explain takes shape files (FILE...) or a --profile, one of the two")
    from ..reporters.lint import REPORTERS
    from ..sources.loader import load_shape_files
    from .lint_shapes import explain, read_shape_file

    # What cannot be read (ShapesUnreadable among them) is a ConfigurationError: the usage
    # status (cli.main).
    if opts.profile:
        files = load_shape_files(load_profile(opts.profile))
    else:
        files = tuple(read_shape_file(name) for name in opts.files)
    explained = explain(files)
    if not files and opts.format == "text":
        print(f"{opts.profile}: the profile names no shape files")
    REPORTERS[opts.format].explain(explained, sys.stdout)
    return ExitStatus.COMPATIBLE


def _condition_problems(artifact: Artifact, profile: Profile) -> list[str]:
    """What a check under ``profile`` will say of the artifact's rule conditions, said before
    a receiver meets it (7.2: a rule's parameter and unit conditions must be defined for its
    use): a condition on a parameter the profile does not declare cannot be evaluated (rule
    10); a value not of the declared datatype, or in another unit (S3, never converted),
    never holds."""
    found = []
    for index, rule in enumerate(artifact.rules):
        for name, lexical, unit in rule.conditions:
            where = f"mappingRules/{index}/conditions/{name}"
            if name not in profile.known_parameters:
                hint = did_you_mean(name, profile.known_parameters)
                found.append(f"alignment.condition-unevaluable: {where}: the profile "
                             f"{profile.id} declares no parameter {name!r}{hint}")
                continue
            parameter = profile.parameter(name)
            try:
                key(parameter, lexical)
            except ValueError as exc:
                found.append(f"alignment.condition-unevaluable: {where}: {exc}, which "
                             f"{describe(parameter)} must be; the condition never holds")
                continue
            conflict = unit_problem(parameter, unit)
            if conflict is not None:
                found.append(f"alignment.condition-unevaluable: {where}: {conflict}; the "
                             "condition never holds")
    return list(dict.fromkeys(found))


def _did_you_mean_member(member: str) -> str:
    """The defined member an unknown one resembles, among the members of its place (the
    artifact's top level, or a mapping rule's for ``mappingRules/N/name``)."""
    if member.startswith("mappingRules/"):
        return did_you_mean(member.rsplit("/", 1)[-1], rule_members())
    if member.startswith("proof/"):
        return did_you_mean(member.removeprefix("proof/"), PROOF_MEMBERS)
    return did_you_mean(member, artifact_members())


def _lint_problems(path: str, profile: Profile | None) -> tuple[list[str], str]:
    """The file's problems, and what an ok line adds (how an artifact's issuer stands)."""
    try:
        # A profile or an artifact is read as a check reads it: a regular file, up to the
        # limit of a configuration file (a named pipe is a problem, never waited on).
        data = read_bounded(path, CONFIGURATION_BYTES, "for a configuration file")
    except Unreadable as exc:
        return [str(exc)], ""
    if path.endswith(".ttl"):
        try:
            read_profile(data, str(path))
        except ProfileError as exc:
            return [p.removeprefix(f"{path}: ") for p in exc.problems], ""
        return [], ""
    artifact = read_artifact(data, str(path), 0)
    if artifact.malformed or artifact.unknown_members:
        # A check reports these as warnings and goes on; an author wants to hear of a
        # misspelt limit (validUntill) before a receiver silently ignores it.
        # Each one is said; the first few with the member they resemble (an artifact of
        # thousands of unknown members costs as many similarity searches otherwise).
        return [*artifact.problems, *(
            f"alignment.unknown-member: {member!r} is not a member this checker defines; "
            f"checks ignore it{_did_you_mean_member(member) if n < SUGGESTED else ''}"
            for n, member in enumerate(artifact.unknown_members))], ""
    proof = artifact.proof
    if profile is None:
        # The structure alone: whether it verifies is asked with a profile.
        if proof is None:
            return [], ""
        if proof.code and proof.code != INVALID:
            return [f"{proof.code}: {proof.problem}"], ""
        return [], f" (a well-formed proof by {proof.method}; --profile verifies it)"
    conditions = _condition_problems(artifact, profile)
    if conditions:
        return conditions, ""
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
