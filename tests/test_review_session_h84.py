"""A review of the session's own changes, each finding held here:

* ``audit --jobs N``'s workers, once a process pool's, outlived a parent that was killed
  (SIGKILL, the system out of memory), asleep on the pool's pipes, holding their memory: they
  now end with it (the service's workers already did);
* the repeated registrations the conflict index writes aside went to a temporary folder
  whose filling was a traceback (exit 70): it is the environment's failure, exit 74, naming
  the folder;
* a ``--state`` that is a JSON file with a ``version`` (a package.json) was called a state
  of another version, to delete;
* an attribute of another convention (OpenInference's ``llm.token_count.prompt``) of the
  wrong type was reported at a place past the span's attributes, under the GenAI name it is
  read as: it is reported where it stands, under its own name.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ioa_semantic.trace import maslab_otel, otlp

from support import (
    IOA_CHECK,
    children,
    running,
    terminated_while_writing_aside,
    write_registrations,
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal")
def test_the_workers_end_with_a_parent_that_is_killed(tmp_path: Path) -> None:
    write_registrations(tmp_path / "r.jsonl", 200_000)
    proc = subprocess.Popen([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                             "--format", "json", "--jobs", "2", "--output", "out.jsonl"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    while len(workers) < 2 and proc.poll() is None:
        workers = children(proc.pid)
    proc.kill()
    proc.wait()
    assert workers, "the audit ended before its workers could be seen"
    # The kernel ends them at once; the guard is only against a hang (the old pool's
    # workers slept here forever), never a bound on how fast.
    guard = time.monotonic() + 60
    while any(running(pid) for pid in workers) and time.monotonic() < guard:
        time.sleep(0.05)
    assert not [pid for pid in workers if running(pid)]


def test_a_full_temporary_folder_is_the_environments_failure_named(tmp_path: Path) -> None:
    """60,000 registrations of one IRI: 3 MB of repeats written aside, past a file-size
    limit of 1 MB (as a full disk answers a write)."""
    write_registrations(tmp_path / "r.jsonl", 60_000, one_iri=True)

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--format", "json", "--jobs", "1"], cwd=tmp_path,
                          capture_output=True, timeout=120, preexec_fn=limited)
    assert proc.returncode == 74, proc.stderr.decode()
    err = proc.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "cannot write the audit's file of repeated registrations" in err[0]


def test_a_json_file_with_a_version_is_no_state_to_delete(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "my-app", "version": "1.0.0"}\n')
    write_registrations(tmp_path / "r.jsonl", 3)
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--format", "json", "--output", "o.jsonl", "--state",
                           "package.json"], cwd=tmp_path, capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "it is not an audit's state" in err and "delete" not in err


def _attribute(key: str, value: dict[str, object]) -> dict[str, object]:
    return {"key": key, "value": value}


def test_another_conventions_attribute_is_reported_where_it_stands_under_its_name() -> None:
    llm = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203332",
           "name": "llm", "startTimeUnixNano": "1700000001000000000",
           "endTimeUnixNano": "1700000002000000000",
           "attributes": [_attribute("openinference.span.kind", {"stringValue": "LLM"}),
                          _attribute("llm.model_name", {"stringValue": "gpt-4o"}),
                          _attribute("llm.token_count.prompt", {"doubleValue": 12.5})]}
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [llm]}]}]}
    problems = [(p.pointer, p.detail) for p in maslab_otel.spans(request, False)
                if isinstance(p, otlp.Problem)]
    assert problems == [("/resourceSpans/0/scopeSpans/0/spans/0/attributes/2",
                         "llm.token_count.prompt (read as gen_ai.usage.input_tokens) is not a "
                         "count (an integer, not negative); it is not used")]


def test_conventions_that_disagree_on_the_operation_are_reported_at_the_span_kind() -> None:
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203332",
            "name": "x", "attributes": [
                _attribute("openinference.span.kind", {"stringValue": "LLM"}),
                _attribute("traceloop.span.kind", {"stringValue": "tool"})]}
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    problems = [(p.pointer, p.detail) for p in maslab_otel.spans(request, False)
                if isinstance(p, otlp.Problem) and p.code == "trace.attribute-malformed"]
    assert problems == [("/resourceSpans/0/scopeSpans/0/spans/0/attributes/0",
                         "openinference.span.kind (read as gen_ai.operation.name) is given "
                         "twice with different values; it is not used")]


def test_sigterm_during_a_trace_leaves_no_partial_graph(tmp_path: Path) -> None:
    """The plain trace audit writes its report and graph aside too; the services alone keep
    handlers of their own."""
    events = tmp_path / "events.jsonl"
    with events.open("w") as out:
        for n in range(1_000):  # the graph's default bound: seconds of rdflib's writing
            out.write(json.dumps({"kind": "tool_call_start", "agent_id": "a",
                                  "call_id": f"c{n}", "tool_name": "t", "run_id": "r",
                                  "timestamp": 1.0 + n}) + "\n")
    status = terminated_while_writing_aside(
        ["trace", "events.jsonl", "--no-shapes", "--emit-kg", "kg.ttl"], tmp_path)
    assert status in (0, 1, 3, 143), status  # never a default SIGTERM end
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]
