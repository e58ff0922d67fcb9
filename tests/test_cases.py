"""Data-driven cases: every folder ``tests/cases/<stage>/<case>/`` is one check.

A case folder holds ``case.json`` in the form of the public conformance cases (``envelope``,
``args``, ``expect.verdict``, ``expect.codes``: code prefixes that must each match some reason
code), plus ``requirements`` (the checklist IDs it covers), ``why`` (the reasoning from the
contract that fixes the expected outcome), optionally ``expect.absent`` (code prefixes that no
reason may match) and ``xfail`` (a known disagreement with the contract, kept visible), and
the files its arguments name, with paths relative to the folder.

Each case runs twice: through the library (a :class:`ioa_semantic.Checker` built from the
case's arguments) and through the installed ``ioa-check`` command in the case folder, as the
hidden conformance suites do. Both must give the expected verdict and codes; the command must
also print exactly one JSON line and exit with the status that goes with the verdict, and the
two must report the same reasons. Codes are asserted, never message text.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker, ConfigurationError, Limits, Verdict
from ioa_semantic._codes import CODES
from ioa_semantic.pipeline.bounded import SHAPE_TIMEOUT

CASES = Path(__file__).parent / "cases"
STAGES = ("intake", "expansion", "shapes", "compatibility", "fuzz")
VERDICTS = ("compatible", "incompatible", "indeterminate", "invalid")
EXIT_STATUS = {"compatible": 0, "incompatible": 1, "indeterminate": 3, "invalid": 4}
FAMILIES = ("json", "jsonld", "envelope", "registration", "profile", "domain", "intent",
            "capability", "alignment", "retrieval", "constraint")
SEVERITIES = ("error", "warning", "info")
REASON_FIELDS = ("code", "severity", "message", "section", "path")
REQUIREMENT = re.compile(r"^R-\d+(\.\d+)?-(\d+[a-z]?|I\d+)$")
CLI = Path(sys.executable).parent / "ioa-check"
CLI_TIMEOUT = 120


# --- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    stage: str
    folder: Path
    spec: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.stage}/{self.folder.name}"

    @property
    def envelope(self) -> Path:
        return self.folder / str(self.spec["envelope"])

    @property
    def args(self) -> list[str]:
        return list(self.spec.get("args", []))

    @property
    def verdict(self) -> str:
        return str(self.spec["expect"]["verdict"])

    @property
    def codes(self) -> list[str]:
        return list(self.spec["expect"].get("codes", []))

    @property
    def absent(self) -> list[str]:
        return list(self.spec["expect"].get("absent", []))


def load_cases() -> list[Case]:
    found = []
    for path in sorted(CASES.glob("*/*/case.json")):
        found.append(Case(path.parent.parent.name, path.parent,
                          json.loads(path.read_text(encoding="utf-8"))))
    return found


ALL_CASES = load_cases()


def _params() -> Iterator[Any]:
    for case in ALL_CASES:
        reason = case.spec.get("xfail")
        marks = [pytest.mark.xfail(strict=True, reason=str(reason))] if reason else []
        yield pytest.param(case, id=case.id, marks=marks)


# --- the case's arguments, as the library takes them --------------------------------------


@dataclass(frozen=True)
class Arguments:
    profile: str
    capabilities: list[str]
    alignments: list[str]
    params: dict[str, str]
    at: datetime
    limits: Limits
    allow_remote: list[str]
    allow_private_addresses: bool
    shape_timeout: float = SHAPE_TIMEOUT


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("--profile", required=True)
    parser.add_argument("--capability", action="append", default=[])
    parser.add_argument("--alignment", action="append", default=[])
    parser.add_argument("--param", action="append", default=[])
    parser.add_argument("--at", required=True)
    parser.add_argument("--allow-remote", action="append", default=[])
    parser.add_argument("--allow-private-addresses", action="store_true")
    parser.add_argument("--shape-timeout", type=float, default=SHAPE_TIMEOUT)
    for field in Limits._fields:
        parser.add_argument("--" + field.replace("_", "-"), type=int, dest=field,
                            default=getattr(Limits(), field))
    return parser


def _in_folder(folder: Path, value: str) -> str:
    """A path relative to the case folder when such a file exists, else the value (a name)."""
    candidate = folder / value
    return str(candidate) if candidate.is_file() else value


def arguments(case: Case) -> Arguments:
    opts = _parser().parse_args(case.args)
    params: dict[str, str] = {}
    for item in opts.param:
        key, sep, value = item.partition("=")
        assert sep and key, f"{case.id}: --param {item!r} is not KEY=VALUE"
        assert key not in params, f"{case.id}: --param {key} given twice"
        params[key] = value
    at = datetime.fromisoformat(opts.at.replace("Z", "+00:00"))
    assert at.tzinfo is not None, f"{case.id}: --at {opts.at!r} has no UTC offset"
    return Arguments(
        profile=_in_folder(case.folder, opts.profile),
        capabilities=[str(case.folder / c) for c in opts.capability],
        alignments=[_in_folder(case.folder, a) for a in opts.alignment],
        params=params,
        at=at,
        limits=Limits(**{field: getattr(opts, field) for field in Limits._fields}),
        allow_remote=list(opts.allow_remote),
        allow_private_addresses=opts.allow_private_addresses,
        shape_timeout=opts.shape_timeout,
    )


# --- what every result must satisfy ------------------------------------------------------


def assert_result(result: dict[str, Any], case: Case, where: str) -> None:
    reasons = result.get("reasons")
    assert isinstance(reasons, list), f"{where}: reasons is not a list"
    codes = [r.get("code", "") for r in reasons if isinstance(r, dict)]
    assert result.get("verdict") == case.verdict, (
        f"{where}: verdict {result.get('verdict')!r}, expected {case.verdict!r}; "
        f"reasons {_brief(reasons)}")
    assert result.get("authorization") == "not-evaluated", f"{where}: authorization"
    profile = result.get("profile")
    assert isinstance(profile, dict) and {"id", "revision"} <= set(profile), (
        f"{where}: profile {profile!r}")
    for reason in reasons:
        assert isinstance(reason, dict), f"{where}: reason {reason!r} is not an object"
        missing = [f for f in REASON_FIELDS if not isinstance(reason.get(f), str)]
        assert not missing, f"{where}: reason {reason!r} lacks string field(s) {missing}"
        assert reason["severity"] in SEVERITIES, f"{where}: severity of {reason!r}"
        assert reason["code"].partition(".")[0] in FAMILIES, f"{where}: family of {reason!r}"
        assert reason["message"].strip(), f"{where}: empty message in {reason!r}"
    if case.verdict != "compatible":
        assert any(r["severity"] == "error" for r in reasons), (
            f"{where}: a {case.verdict} result carries no reason of severity error: "
            f"{_brief(reasons)}")
    else:
        assert not any(r["severity"] == "error" for r in reasons), (
            f"{where}: a compatible result carries an error: {_brief(reasons)}")
    missing = [p for p in case.codes if not any(c.startswith(p) for c in codes)]
    assert not missing, f"{where}: no reason code starts with {missing}; reasons {_brief(reasons)}"
    present = [p for p in case.absent if any(c.startswith(p) for c in codes)]
    assert not present, f"{where}: reason codes start with {present}; reasons {_brief(reasons)}"
    assert_remedies(result, case, where)


# The members each action of the contract's "Remedies" table carries.
REMEDY_MEMBERS = {
    "correct-input": {"path"}, "supply-parameter": {"name"}, "use-accepted-version": {"accepted"},
    "offer-alignment": {"capability", "source", "target", "trustedIssuers", "conditions"},
    "select-alignment": {"candidates"}, "allow-retrieval": {"url"}, "retry": {"url"},
    "renegotiate": {"permitted"},
}


def assert_remedies(result: dict[str, Any], case: Case, where: str) -> None:
    """The contract's remedies: none on a compatible result; each with an action, who can
    take it and the deciding codes it answers; every invalid reason answered by a
    ``correct-input`` at its path; and the case's ``expect.remedies`` (each a subset of the
    members of some remedy)."""
    remedies = result.get("remedies")
    assert isinstance(remedies, list), f"{where}: remedies {remedies!r} is not an array"
    if case.verdict == "compatible":
        assert remedies == [], f"{where}: a compatible result carries remedies {remedies}"
    deciding = {r["code"] for r in result["reasons"] if r["severity"] == "error"}
    for item in remedies:
        action = item.get("action")
        assert action in REMEDY_MEMBERS, f"{where}: remedy action {action!r}"
        assert item.get("by") in ("sender", "receiver"), f"{where}: remedy by {item.get('by')!r}"
        assert item.get("codes") and set(item["codes"]) <= deciding, (
            f"{where}: remedy {item} answers no deciding reason ({sorted(deciding)})")
        assert REMEDY_MEMBERS[action] <= set(item), f"{where}: remedy {item} lacks members"
    answered = {item["path"] for item in remedies if item["action"] == "correct-input"}
    unanswered = [r for r in result["reasons"] if r["severity"] == "error"
                  and CODES[r["code"]].effect is Verdict.INVALID and r["path"] not in answered]
    assert not unanswered, f"{where}: invalid reasons without correct-input: {unanswered}"
    for expected in case.spec["expect"].get("remedies", []):
        assert any(all(item.get(k) == v for k, v in expected.items()) for item in remedies), (
            f"{where}: no remedy has {expected}; remedies {remedies}")


def _brief(reasons: list[Any]) -> list[str]:
    return [f"{r.get('severity')}:{r.get('code')}" if isinstance(r, dict) else repr(r)
            for r in reasons]


def _remedy_keys(result: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((r["action"], r["by"], tuple(r["codes"])) for r in result["remedies"])


def _reason_keys(result: dict[str, Any]) -> list[tuple[str, str]]:
    # Paths may name files, which the command sees relative to its working directory.
    return sorted((r["code"], r["severity"]) for r in result["reasons"])


# --- the command, run concurrently for every selected case ---------------------------------


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_cli(case: Case, env: dict[str, str] | None = None) -> Run:
    """The command for ``case``, in an environment of its own: ``env``, or a copy of this
    process's taken now (call it so only on the thread that changes ``os.environ``).

    Never the inherited environment (``env=None``): the commands start on pool threads while
    pytest rewrites ``os.environ`` on the main thread (``PYTEST_CURRENT_TEST``, at every phase
    of every test), and a child started with vfork execs with the parent's ``environ`` as it
    is then, which ``putenv`` may have freed: ``OSError: [Errno 14] Bad address``, now and then,
    for whichever case it hits.
    """
    argv = [str(CLI), case.spec["envelope"], *case.args, "--format", "json"]
    proc = subprocess.run(argv, cwd=case.folder, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT, check=False,
                          env=dict(os.environ) if env is None else env)
    return Run(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="session")
def cli_runs(request: pytest.FixtureRequest) -> Iterator[dict[str, Future[Run]]]:
    """Start the command for every selected case at once; each test waits for its own."""
    selected = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if getattr(item, "originalname", None) == "test_case" and callspec is not None:
            selected.append(callspec.params["case"])
    env = dict(os.environ)  # taken here, on the main thread (see run_cli)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        yield {case.id: pool.submit(run_cli, case, env) for case in selected}


# --- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(_params()))
def test_case(case: Case, cli_runs: dict[str, Future[Run]]) -> None:
    # (a) the library
    args = arguments(case)
    checker = Checker(args.profile, capabilities=args.capabilities, alignments=args.alignments,
                      limits=args.limits, allow_remote=args.allow_remote,
                      allow_private_addresses=args.allow_private_addresses,
                      shape_timeout=args.shape_timeout)
    decision = checker.check(case.envelope.read_bytes(), params=args.params, at=args.at,
                             source=case.spec["envelope"])
    assert decision.verdict.value == case.verdict, (
        f"library: verdict {decision.verdict.value!r}, expected {case.verdict!r}; "
        f"reasons {[f'{f.severity}:{f.code}' for f in decision.findings]}")
    library = decision.as_dict()
    json.dumps(library)  # the library's result is JSON as it stands
    assert_result(library, case, "library")

    # (b) the installed command, from inside the case folder
    future = cli_runs.get(case.id)
    run = future.result() if future is not None else run_cli(case)
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, (
        f"cli: expected one JSON line on stdout, got {len(lines)} (exit {run.returncode}; "
        f"stderr: {run.stderr.strip()[-500:]})")
    result = json.loads(lines[0])
    assert isinstance(result, dict), "cli: the line is not a JSON object"
    assert_result(result, case, "cli")
    assert result.get("source") == case.spec["envelope"], f"cli: source {result.get('source')!r}"
    assert run.returncode == EXIT_STATUS[case.verdict], (
        f"cli: exit status {run.returncode}, expected {EXIT_STATUS[case.verdict]} for "
        f"{case.verdict}; stderr: {run.stderr.strip()[-500:]}")

    # (c) one checker, one answer: the command and the library report the same reasons
    assert _reason_keys(result) == _reason_keys(library), "cli and library disagree on reasons"
    assert _remedy_keys(result) == _remedy_keys(library), "cli and library disagree on remedies"


def test_commands_started_on_threads_survive_the_environment_changing_meanwhile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases' commands start on pool threads while the main thread changes ``os.environ``,
    as pytest does between and within tests: each is given the environment taken before
    (never the live one, see run_cli), and every one starts and answers (none fails to start
    with ``OSError: [Errno 14] Bad address``)."""
    (case,) = [c for c in ALL_CASES if c.id == "intake/lone-surrogate-in-term"]
    env = dict(os.environ)
    name = "IOA_SEMANTIC_TEST_CHURN"
    given: list[Any] = []
    start = subprocess.run

    def recorded(*args: Any, **options: Any) -> Any:
        given.append(options.get("env"))
        return start(*args, **options)

    monkeypatch.setattr(subprocess, "run", recorded)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(run_cli, case, env) for _ in range(24)]
        try:
            changes = 0
            while not all(run.done() for run in runs):
                # A value of a new length each time, and the variable gone now and then, so
                # that the environment's strings and its array are both replaced.
                os.environ[name] = "x" * (changes % 64)
                changes += 1
                if changes % 3 == 0:
                    del os.environ[name]
        finally:
            os.environ.pop(name, None)
    for run in runs:
        result = run.result()
        assert result.returncode == EXIT_STATUS["invalid"], result.stderr[-500:]
        assert json.loads(result.stdout)["verdict"] == "invalid"
    assert len(given) == len(runs) and all(e is env for e in given)


def test_case_folders_are_well_formed() -> None:
    """Every case names its files, pins --at, covers requirements and expects a verdict."""
    assert {c.stage for c in ALL_CASES} == set(STAGES), "every stage has cases"
    names = [c.folder.name for c in ALL_CASES]
    assert len(names) == len(set(names)), "case names are unique across stages"
    for case in ALL_CASES:
        where = case.id
        assert case.stage in STAGES, f"{where}: unknown stage"
        assert case.spec.get("id") == case.folder.name, f"{where}: id differs from the folder"
        assert case.envelope.is_file(), f"{where}: envelope file missing"
        assert case.verdict in VERDICTS, f"{where}: verdict {case.verdict!r}"
        assert all(isinstance(p, str) and p for p in case.codes), f"{where}: codes"
        if case.verdict != "compatible":
            assert case.codes or case.spec.get("xfail"), f"{where}: expects no code"
        reqs = case.spec.get("requirements")
        assert isinstance(reqs, list) and reqs, f"{where}: no requirements"
        assert all(REQUIREMENT.match(r) for r in reqs), f"{where}: requirement IDs {reqs}"
        assert isinstance(case.spec.get("why"), str) and case.spec["why"], f"{where}: no why"
        assert case.args.count("--at") == 1, f"{where}: --at must be pinned exactly once"
        opts = _parser().parse_args(case.args)
        files = [*opts.capability, opts.profile, *opts.alignment]
        for name in files:
            if name in opts.capability or name.endswith((".ttl", ".json", ".jsonld")):
                assert (case.folder / name).is_file(), f"{where}: {name} is not in the folder"
        arguments(case)  # parses, with a UTC offset on --at


# --- configuration and usage errors (exit 2, nothing on stdout) ---------------------------

ENVELOPE = CASES / "compatibility" / "draft-6.2-envelope" / "envelope.jsonld"
AT = ["--at", "2026-06-01T00:00:00Z"]
BROKEN_TURTLE = """\
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
<https://example.org/profiles/broken> a iop:Profile ;
    iop:revision "1" ;
    iop:acceptsOntology [ iop:ontologyId <https://example.org/onto/agent-core>
"""
NOT_A_REGISTRATION = {"@context": {"ioa": "https://example.org/ioa/semantic#"},
                      "@type": "ioa:SemanticProfile"}


def _usage_cases(tmp: Path) -> dict[str, tuple[list[str], str | None]]:
    """Arguments of each usage error, and a text stderr must contain (or None)."""
    (tmp / "broken.ttl").write_text(BROKEN_TURTLE, encoding="utf-8")
    (tmp / "not-a-registration.jsonld").write_text(json.dumps(NOT_A_REGISTRATION))
    (tmp / "not-json.jsonld").write_text("{ not json")
    env = str(ENVELOPE)
    return {
        "broken-profile-file": ([env, "--profile", "broken.ttl", *AT], None),
        "unknown-profile-name": ([env, "--profile", "no-such-profile", *AT], "cs-translation"),
        "missing-capability-file": (
            [env, "--profile", "cs-translation", "--capability", "missing.jsonld", *AT], None),
        "capability-not-a-registration": (
            [env, "--profile", "cs-translation", "--capability", "not-a-registration.jsonld",
             *AT], None),
        "capability-not-json": (
            [env, "--profile", "cs-translation", "--capability", "not-json.jsonld", *AT], None),
        "repeated-param": (
            [env, "--profile", "cs-translation", "--param", "a=1", "--param", "a=2", *AT], None),
        "at-without-offset": (
            [env, "--profile", "cs-translation", "--at", "2026-06-01T00:00:00"], None),
        "at-not-a-timestamp": ([env, "--profile", "cs-translation", "--at", "tomorrow"], None),
        "unknown-format": ([env, "--profile", "cs-translation", *AT, "--format", "yaml"], None),
        "no-profile": ([env, *AT], None),
    }


USAGE_NAMES = [
    "broken-profile-file", "unknown-profile-name", "missing-capability-file",
    "capability-not-a-registration", "capability-not-json", "repeated-param",
    "at-without-offset", "at-not-a-timestamp", "unknown-format", "no-profile",
]


@pytest.mark.parametrize("name", USAGE_NAMES)
def test_cli_usage_error(name: str, tmp_path: Path) -> None:
    assert set(USAGE_NAMES) == set(_usage_cases(tmp_path))
    argv, stderr_names = _usage_cases(tmp_path)[name]
    if "--format" not in argv:
        argv = [*argv, "--format", "json"]
    proc = subprocess.run([str(CLI), *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT, check=False)
    assert proc.returncode == 2, (
        f"exit status {proc.returncode}, expected 2; stdout {proc.stdout[:300]!r}; "
        f"stderr {proc.stderr[-300:]!r}")
    assert proc.stdout == "", f"nothing is printed on stdout, got {proc.stdout[:300]!r}"
    assert proc.stderr.strip(), "a usage error says why on stderr"
    assert "Traceback" not in proc.stderr
    if stderr_names:
        assert stderr_names in proc.stderr, f"stderr names {stderr_names!r}: {proc.stderr!r}"


def test_library_configuration_errors(tmp_path: Path) -> None:
    (tmp_path / "broken.ttl").write_text(BROKEN_TURTLE, encoding="utf-8")
    with pytest.raises(ConfigurationError):
        Checker(str(tmp_path / "broken.ttl"))
    with pytest.raises(ConfigurationError, match="cs-translation"):
        Checker("no-such-profile")
    with pytest.raises(ConfigurationError):
        Checker("cs-translation", capabilities=[str(tmp_path / "missing.jsonld")])
    (tmp_path / "not-a-registration.jsonld").write_text(json.dumps(NOT_A_REGISTRATION))
    with pytest.raises(ConfigurationError):
        Checker("cs-translation", capabilities=[str(tmp_path / "not-a-registration.jsonld")])


# --- several envelopes in one run: one line each, the highest exit status -------------------


def _case_envelope(case_id: str) -> str:
    return str(CASES / case_id / "envelope.jsonld")


SEVERAL = {
    "compatible-and-incompatible": (["compatibility/draft-6.2-envelope",
                                     "compatibility/law-sense"], 1),
    "incompatible-and-indeterminate": (["compatibility/law-sense",
                                        "compatibility/unknown-intent"], 3),
    "indeterminate-and-invalid": (["compatibility/unknown-intent",
                                   "intake/duplicate-key-top-level"], 4),
    "unreadable-file-among-others": (["compatibility/draft-6.2-envelope", "no-such-file",
                                      "compatibility/unknown-intent"], 4),
}


@pytest.mark.parametrize("name", sorted(SEVERAL))
def test_cli_several_envelopes(name: str, tmp_path: Path) -> None:
    """One JSON line per envelope in order; the exit status is the highest (section 2)."""
    ids, status = SEVERAL[name]
    paths = [str(tmp_path / i) if i == "no-such-file" else _case_envelope(i) for i in ids]
    proc = subprocess.run([str(CLI), *paths, "--profile", "cs-translation", *AT,
                           "--format", "json"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT, check=False)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [r["source"] for r in lines] == paths
    for i, result in zip(ids, lines, strict=True):
        if i == "no-such-file":
            assert result["verdict"] == "invalid"
            assert any(r["code"].startswith("json.") and r["severity"] == "error"
                       for r in result["reasons"])
            assert result["authorization"] == "not-evaluated"
        else:
            expected = json.loads((CASES / i / "case.json").read_text())["expect"]["verdict"]
            assert result["verdict"] == expected
    assert proc.returncode == status, proc.stderr[-500:]


def test_cli_reads_standard_input(tmp_path: Path) -> None:
    proc = subprocess.run([str(CLI), "-", "--profile", "cs-translation", *AT, "--format", "json"],
                          input=ENVELOPE.read_bytes(), cwd=tmp_path, capture_output=True,
                          timeout=CLI_TIMEOUT, check=False)
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1 and proc.returncode == 0, proc.stderr[-500:]
    result = json.loads(lines[0])
    assert (result["source"], result["verdict"]) == ("-", "compatible")


def test_cli_text_format_keeps_the_exit_status(tmp_path: Path) -> None:
    proc = subprocess.run([str(CLI), _case_envelope("compatibility/law-sense"), "--profile",
                           "cs-translation", *AT, "--format", "text"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False)
    assert proc.returncode == 1 and proc.stdout.strip(), proc.stderr[-500:]
