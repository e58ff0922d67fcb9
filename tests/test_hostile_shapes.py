"""Shapes that would freeze a check (issue 35): every evaluation is bounded.

A pattern with nested repetition runs on RE2 (linear in the value) in both routes; pySHACL's
evaluations (SHACL-SPARQL, Core constraints outside the compiled subset) and lint's
SHACL-for-SHACL run in a worker process killed at the bound (``shape_timeout``,
``--shape-timeout``); ``sh:in`` is a set. The hostile profiles are data-driven cases too
(``tests/cases/compatibility/shapes-pattern-*``, ``shapes-sparql-join-past-bound``,
``shapes-in-thousand-values``); here they are pushed further (a 10,000-character value) and
what stops the work is checked: the worker is killed, not left running.

No test asserts on elapsed time. A subprocess's ``timeout`` of 60 s is a hang guard only: a
check that never finishes fails the test instead of freezing the suite.
"""

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest

from ioa_semantic import Checker, Verdict
from ioa_semantic.pipeline import bounded, constraints
from ioa_semantic.pipeline.constraints import ProfileShapes
from ioa_semantic.sources.loader import ShapeFile

from support import children, running

CASES = Path(__file__).parent / "cases" / "compatibility"
CLI = [sys.executable, "-m", "ioa_semantic"]
HANG_GUARD = 60  # seconds: a hang guard, never a measure (see the module)
AT = "2026-06-01T00:00:00Z"


def run_cli(case: str, *args: str) -> tuple[int, dict[str, Any]]:
    folder = CASES / case
    done = subprocess.run([*CLI, str(folder / "envelope.jsonld"), "--profile",
                           str(folder / "profile.ttl"), "--at", AT, "--format", "json", *args],
                          capture_output=True, timeout=HANG_GUARD, check=False)
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("case", ["shapes-pattern-nested-repetition",
                                  "shapes-pattern-nested-repetition-pyshacl"])
@pytest.mark.parametrize(("value", "verdict"), [
    ("a" * 9_999 + "b", "incompatible"),  # Python's re: 2^9999 steps to say no
    ("a" * 10_000, "compatible"),
])
def test_a_nested_repetition_pattern_finishes_on_a_long_value_in_both_routes(
        case: str, value: str, verdict: str) -> None:
    _, result = run_cli(case, "--param", f"jurisdiction={value}")
    codes = [r["code"] for r in result["reasons"]]
    assert (result["verdict"], codes) == (
        verdict, ["constraint.shape-violated"] if verdict == "incompatible" else [])


def test_a_pattern_rE2_cannot_express_is_refused_at_routing_and_by_lint(tmp_path: Path) -> None:
    """A back-reference has no linear-time match: the shape is unsupported (every check
    indeterminate) and lint says so, without evaluating the pattern."""
    profile = _profile_with(tmp_path, """
ex:Twice a sh:NodeShape ; sh:targetClass iop:TaskParameters ;
    sh:property [ sh:path param:jurisdiction ; sh:pattern "^(a+)\\\\1$" ] .
""")
    checker = Checker(str(profile))
    assert checker.constraints is not None
    (route,) = checker.constraints.routes
    assert route.engine == "unsupported" and "back-reference" in route.why
    done = subprocess.run([*CLI, "lint", "--profile", str(profile)], capture_output=True,
                          text=True, timeout=HANG_GUARD, check=False)
    assert done.returncode == 1 and "back-reference" in done.stdout, done.stdout


def test_a_sparql_join_past_the_bound_is_stopped_and_its_worker_killed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    killed: list[Any] = []
    real_kill = bounded._Worker.kill

    def kill(worker: bounded._Worker) -> None:
        killed.append(worker.process)
        real_kill(worker)

    monkeypatch.setattr(bounded._Worker, "kill", kill)
    # Workers other tests left idle would be taken first: the count below is of this test's.
    bounded._close_idle()
    folder = CASES / "shapes-sparql-join-past-bound"
    checker = Checker(str(folder / "profile.ttl"), shape_timeout=0.5, cache_size=0)
    decision = checker.check((folder / "envelope.jsonld").read_bytes())
    assert decision.verdict is Verdict.INDETERMINATE
    (reason,) = decision.findings
    assert reason.code == "constraint.shape-unevaluable"
    assert "EndlessJoinShape" in reason.message and "0.5 s" in reason.message
    # The work really stopped: its process was killed and has exited (no thread left behind).
    (process,) = killed
    assert process.returncode is not None
    # The next evaluation gets a new worker and is stopped the same way.
    before = bounded.started
    assert checker.check((folder / "envelope.jsonld").read_bytes()).verdict is (
        Verdict.INDETERMINATE)
    assert bounded.started == before + 1 and len(killed) == 2


def test_a_decision_stopped_at_the_bound_is_not_served_from_the_cache() -> None:
    """A check cut short by the shape bound reflects the machine's load as much as its
    input: the same envelope is judged afresh (a new evaluation, another worker), not
    answered from the decision cache, which would keep it indeterminate for good."""
    folder = CASES / "shapes-sparql-join-past-bound"
    checker = Checker(str(folder / "profile.ttl"), shape_timeout=0.5)
    envelope = (folder / "envelope.jsonld").read_bytes()
    before = bounded.stops()
    assert checker.check(envelope).verdict is Verdict.INDETERMINATE
    assert checker.check(envelope).verdict is Verdict.INDETERMINATE
    assert bounded.stops() == before + 2  # evaluated (and stopped) twice: no cache hit


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_a_worker_ends_when_its_caller_is_killed_in_the_middle_of_a_call(
        tmp_path: Path) -> None:
    """"A thread left running is not" fine (issue 35): a caller killed outright (a service's
    check worker stopped at its --timeout) must not leave its worker in the middle of a
    call (a join that runs for minutes) holding a core. The worker watches its parent and
    ends with it. The call here is one that waits, and says when it has begun."""
    import os
    import signal
    import time

    mark = tmp_path / "in-call"
    script = ("import subprocess\nfrom ioa_semantic.pipeline import bounded\n"
              "bounded.run(subprocess.call, (['sh', '-c', 'echo $$ > " + str(mark)
              + "; exec sleep 3600'],), 7200)\n")
    caller = subprocess.Popen([sys.executable, "-c", script])
    guard = time.monotonic() + HANG_GUARD  # a hang guard, never a measure
    try:
        while not (mark.exists() and mark.read_text().strip()) and time.monotonic() < guard:
            time.sleep(0.1)
        assert mark.exists(), "the call did not begin"
        workers = children(caller.pid)
        assert workers, "no worker"
    finally:
        caller.kill()
        caller.wait()
    try:
        while any(running(w) for w in workers) and time.monotonic() < guard:
            time.sleep(0.1)
        assert not any(running(w) for w in workers), "the worker outlived its caller"
    finally:
        os.kill(int(mark.read_text()), signal.SIGKILL)  # the call's own child, an orphan


def test_the_cli_takes_the_bound_in_every_command_that_evaluates_shapes() -> None:
    for command in (["check"], ["audit"], ["serve"], ["lint"]):
        done = subprocess.run([*CLI, *command, "--help"], capture_output=True, text=True,
                              timeout=HANG_GUARD, check=False)
        assert "--shape-timeout" in done.stdout, command
    _, result = run_cli("shapes-sparql-join-past-bound", "--shape-timeout", "0.5")
    assert result["verdict"] == "indeterminate"
    done = subprocess.run([*CLI, "check", "--shape-timeout", "0", "--profile", "cs-translation",
                           "x.jsonld"], capture_output=True, text=True, timeout=HANG_GUARD,
                          check=False)
    assert done.returncode == 2 and "--shape-timeout" in done.stderr


def test_a_worker_is_kept_between_evaluations() -> None:
    """The ordinary pySHACL evaluation costs a round trip to a kept worker, not a start."""
    folder = CASES / "shapes-pattern-nested-repetition-pyshacl"
    checker = Checker(str(folder / "profile.ttl"), cache_size=0)
    envelope = (folder / "envelope.jsonld").read_bytes()
    checker.check(envelope, params={"jurisdiction": "a"})
    before = bounded.started
    for value in ("aa", "ab", "aaa"):
        checker.check(envelope, params={"jurisdiction": value})
    assert bounded.started == before


# --- sh:in as a set ---------------------------------------------------------------------------


PREFIXES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix ex: <https://ex.org/> .
"""


def shapes_with_in(values: list[str]) -> ProfileShapes:
    data = (PREFIXES + "ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path "
            f"ex:p ; sh:in ( {' '.join(values)} ) ] .\n").encode()
    return ProfileShapes((ShapeFile("t.ttl", "/t.ttl", data, hashlib.sha256(data).hexdigest()),))


class CountingSet(frozenset[Any]):
    lookups = 0

    def __contains__(self, item: object) -> bool:
        CountingSet.lookups += 1
        return frozenset.__contains__(self, item)


@pytest.mark.parametrize("size", [10, 1_000])
def test_sh_in_is_one_set_lookup_a_value_whatever_the_lists_length(size: int) -> None:
    shapes = shapes_with_in([f'"v{i}"' for i in range(size)])
    (shape,) = shapes.compiled
    (prop,) = shape.properties
    assert type(prop.members) is frozenset and len(prop.members) == size
    counting = CountingSet(prop.members)
    shapes.compiled = (shape._replace(properties=(prop._replace(members=counting),)),)
    store = pyoxigraph.Store()
    store.load(b'<https://ex.org/n> a <https://ex.org/A> ; <https://ex.org/p> "x", "v3", "y" .',
               pyoxigraph.RdfFormat.TURTLE)
    CountingSet.lookups = 0
    results = shapes.results(store)
    assert sorted(r.value or "" for r in results) == ['"x"', '"y"']
    assert CountingSet.lookups == 3  # one a value: the list's length does not count


def test_sh_in_keeps_rdf_term_equality() -> None:
    shapes = shapes_with_in(['"en"', "ex:o", '"7"^^xsd:string'])
    assert [r.engine for r in shapes.routes] == ["compiled"]
    store = pyoxigraph.Store()
    store.load(b'<https://ex.org/n> a <https://ex.org/A> ; <https://ex.org/p> "en", "en"@en, '
               b'"EN", <https://ex.org/o>, "7" .', pyoxigraph.RdfFormat.TURTLE)
    assert sorted(r.value or "" for r in shapes.results(store)) == ['"EN"', '"en"@en']


def test_a_numeric_sh_in_stays_with_pyshacl() -> None:
    """Oxigraph stores numbers normalised, which a term lookup would not see as pySHACL
    does: such a list is not compiled."""
    shapes = shapes_with_in(['"01"^^xsd:integer'])
    assert [r.engine for r in shapes.routes] == ["pyshacl"]


def test_a_violated_long_sh_in_walks_its_list_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The remedy's permitted values are read once for the shape, not once a violation."""
    walks: list[int] = []
    real = constraints._list_items

    def counted(*args: Any) -> Any:
        walks.append(1)
        return real(*args)

    folder = CASES / "shapes-in-thousand-values"
    checker = Checker(str(folder / "profile.ttl"), cache_size=0)
    monkeypatch.setattr(constraints, "_list_items", counted)
    envelope = (folder / "envelope.jsonld").read_bytes()
    for language in ("xx", "yy", "zz"):
        decision = checker.check(envelope, params={"targetLang": language})
        assert [f.code for f in decision.findings] == ["constraint.shape-violated"]
        (remedy,) = decision.remedies
        assert len(remedy.details["permitted"]) == 1_000
    assert len(walks) == 1


def test_lint_of_a_thousand_value_sh_in_finishes_within_the_bound() -> None:
    folder = CASES / "shapes-in-thousand-values"
    done = subprocess.run([*CLI, "lint", "--profile", str(folder / "profile.ttl"),
                           "--shape-timeout", "0.5", "--format", "json"],
                          capture_output=True, text=True, timeout=HANG_GUARD, check=False)
    # Finished, with no error: SHACL's own shapes were either evaluated or stopped at the
    # bound, which lint reports as a warning.
    assert done.returncode == 0, done.stdout + done.stderr
    for line in done.stdout.splitlines():
        for problem in json.loads(line).get("problems", []):
            assert problem["severity"] == "warning" and "0.5 s" in problem["message"]


def _profile_with(folder: Path, shapes: str) -> Path:
    source = CASES / "shapes-pattern-nested-repetition"
    (folder / "profile.ttl").write_text((source / "profile.ttl").read_text())
    head = "".join(line for line in (source / "shapes.ttl").read_text().splitlines(True)
                   if line.startswith("@prefix"))
    (folder / "shapes.ttl").write_text(head + shapes)
    return folder / "profile.ttl"
