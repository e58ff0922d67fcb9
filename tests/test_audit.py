"""``ioa-check audit``: capability registrations in bulk, through the installed command.

Contract sections 1 and 2: files, folders (sorted) and stdin; one line per registration in
input order; conflicts between registrations valid on their own; a closing summary; exit
statuses 0, 1, 2 and 3 (never 4). Nothing is lost: a bad line or file is a result of its
own. Covers R-6.3-1, R-6.3-2, R-6.4-1, R-6.1-1, R-6.1-4.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioa_semantic import Checker
from ioa_semantic.audit.inputs import documents
from ioa_semantic.audit.run import Audit
from ioa_semantic.reporters.audit import is_report, result_line

from support import IOA_CHECK, registration_63, sarif_of, write_registrations


def audit(args: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[int, list[dict[str, Any]]]:
    proc = subprocess.run([IOA_CHECK, "audit", *args, "--profile", "cs-translation",
                           "--format", "json"], cwd=cwd, input=stdin, capture_output=True,
                          timeout=60)
    assert b"Traceback" not in proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def line(doc: Any) -> str:
    return json.dumps(doc) + "\n"


def variant(**changes: Any) -> dict[str, Any]:
    doc = registration_63()
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


INVALID = {
    "no @id": (variant(**{"@id": None}), "registration.missing"),
    "relative @id": (variant(**{"@id": "TechTranslation"}), "jsonld.relative-iri"),
    "undefined prefix": (variant(**{"@id": "xx:TechTranslation"}), "jsonld.scheme-not-allowed"),
    "wrong type": (variant(**{"@type": "ioa:Intent"}), "registration.rdf-type"),
    "legacy type": (variant(**{"@type": None, "type": "ioa:Capability"}), "registration.legacy-key"),
    "no inputs": (variant(inputs=None), "registration.missing"),
    "empty outputs": (variant(outputs=[]), "registration.missing"),
    "bad media type": (variant(inputs=["text"]), "registration.media-type"),
    "number as media type": (variant(outputs=[5]), "registration.type"),
    "no context": (variant(**{"@context": None}), "registration.missing"),
}


def test_every_invalid_class_is_reported_and_the_rest_audited(tmp_path: Path) -> None:
    body = line(registration_63())
    for doc, _ in INVALID.values():
        body += line(doc)
    body += "\n"  # a blank line is skipped, but still counts for the line numbers
    body += "\x0c\x0b\n"  # not blank: JSON's whitespace is neither
    body += "{not json\n"
    body += '{"@context": {}, "a": 1, "a": 2}\n'
    body += line(variant(**{"@id": "cs:Summarize"}))  # unknown to the vocabulary: not a fault
    (tmp_path / "regs.jsonl").write_text(body)
    status, out = audit(["regs.jsonl"], tmp_path)
    results, summary = out[:-1], out[-1]["summary"]
    assert status == 1
    assert [r["index"] for r in results] == [*range(len(INVALID) + 1), *range(
        len(INVALID) + 2, len(INVALID) + 6)]
    assert results[0]["status"] == "valid" and results[-1]["status"] == "valid"
    for result, (name, (_, code)) in zip(results[1:], INVALID.items(), strict=False):
        assert result["status"] == "invalid", name
        assert any(r["code"].startswith(code) for r in result["reasons"]), (name, result)
    assert results[-4]["reasons"][0]["code"] == "json.syntax"
    assert results[-3]["reasons"][0]["code"] == "json.syntax"
    assert results[-2]["reasons"][0]["code"] == "json.duplicate-key"
    assert summary["total"] == len(results)
    assert summary["status"] == {"valid": 2, "invalid": len(INVALID) + 3, "indeterminate": 0}
    assert sum(summary["codes"].values()) >= len(INVALID) + 3


def test_folders_are_walked_in_sorted_order_and_arrays_have_positions(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.json").write_text(json.dumps([registration_63(), registration_63()]))
    (tmp_path / "a.jsonld").write_text(json.dumps(registration_63()))
    (tmp_path / "notes.txt").write_text("not audited")
    (tmp_path / "c.jsonl").write_text(line(registration_63()))
    status, out = audit(["."], tmp_path)
    assert status == 0
    assert [(r["source"], r["index"]) for r in out[:-1]] == [
        ("./a.jsonld", None), ("./b/two.json", 0), ("./b/two.json", 1), ("./c.jsonl", 0)]
    assert out[-1] == {"summary": {"total": 4, "status": {"valid": 4, "invalid": 0,
                                                          "indeterminate": 0},
                                   "codes": {}, "conflicts": 0}}


def test_standard_input_is_json_lines(tmp_path: Path) -> None:
    status, out = audit(["-"], tmp_path, stdin=(line(registration_63()) * 3).encode())
    assert status == 0
    assert [(r["source"], r["index"]) for r in out[:-1]] == [("-", 0), ("-", 1), ("-", 2)]


def test_unreadable_and_binary_files_are_named_and_the_audit_goes_on(tmp_path: Path) -> None:
    (tmp_path / "bin.jsonld").write_bytes(b"\xff\xfe\x00\x01")
    (tmp_path / "ok.jsonld").write_text(json.dumps(registration_63()))
    status, out = audit(["missing.jsonl", "bin.jsonld", "ok.jsonld"], tmp_path)
    assert status == 1
    assert [(r["source"], r["status"], r["reasons"][0]["code"] if r["reasons"] else None)
            for r in out[:-1]] == [("missing.jsonl", "invalid", "json.unreadable"),
                                   ("bin.jsonld", "invalid", "json.encoding"),
                                   ("ok.jsonld", "valid", None)]


def test_conflicting_declarations_name_every_registration(tmp_path: Path) -> None:
    pdf = variant(inputs=["application/pdf"])
    same_but_case = variant(inputs=["TEXT/plain"])  # media types compare case-insensitively
    other = variant(**{"@id": "cs:Other"})
    broken = variant(outputs=["x"])  # invalid on its own: never part of a conflict
    (tmp_path / "r.jsonl").write_text(
        line(registration_63()) + line(other) + line(same_but_case) + line(broken) + line(pdf))
    status, out = audit(["r.jsonl"], tmp_path)
    conflicts = [o["conflict"] for o in out if "conflict" in o]
    assert status == 1
    assert conflicts == [{"id": "https://example.org/onto/cs#TechTranslation",
                          "code": "registration.conflict",
                          "registrations": [{"source": "r.jsonl", "index": 0},
                                            {"source": "r.jsonl", "index": 2},
                                            {"source": "r.jsonl", "index": 4}],
                          "differences": [{"member": "/inputs", "values": [
                              ["text/plain"], ["text/plain"], ["application/pdf"]]}]}]
    assert out[-1]["summary"]["conflicts"] == 1
    assert [r["status"] for r in out[:5]] == ["valid", "valid", "valid", "invalid", "valid"]


def test_identical_registrations_are_not_a_conflict(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(line(registration_63()) * 2)
    status, out = audit(["r.jsonl"], tmp_path)
    assert status == 0 and out[-1]["summary"]["conflicts"] == 0


def test_a_different_ontology_is_a_conflict(tmp_path: Path) -> None:
    named = registration_63()
    named["@context"]["ontologyId"] = {"@id": "ioa:ontologyId", "@type": "@id"}
    named["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
    named["ontologyId"] = "https://example.net/onto/doc"
    named["ontologyVersion"] = "2.0"
    (tmp_path / "r.jsonl").write_text(line(registration_63()) + line(named))
    status, out = audit(["r.jsonl"], tmp_path)
    assert status == 1 and out[-1]["summary"]["conflicts"] == 1


def test_only_indeterminate_is_exit_3(tmp_path: Path) -> None:
    remote = registration_63()
    remote["@context"] = "https://example.org/ioa/context.jsonld"
    (tmp_path / "r.jsonl").write_text(line(registration_63()) + line(remote))
    status, out = audit(["r.jsonl"], tmp_path)
    assert status == 3
    assert out[1]["status"] == "indeterminate"
    assert out[1]["reasons"][0]["code"] == "retrieval.prohibited"


def test_usage_errors_are_exit_2_with_nothing_on_stdout(tmp_path: Path) -> None:
    proc = subprocess.run([IOA_CHECK, "audit", "x.jsonl", "--profile", "nope"], cwd=tmp_path,
                          capture_output=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b"" and b"cs-translation" in proc.stderr
    proc = subprocess.run([IOA_CHECK, "audit", "x.jsonl"], cwd=tmp_path, capture_output=True,
                          timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""


def test_text_output_and_output_file(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(line(registration_63()) + line(variant(inputs=None)))
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation"],
                          cwd=tmp_path, capture_output=True, timeout=60, text=True)
    assert proc.returncode == 1
    assert "INVALID r.jsonl:2" in proc.stdout  # the second line: people count from 1
    assert "2 registrations: 1 valid, 1 invalid, 0 indeterminate; 0 conflicts" in proc.stdout
    (tmp_path / "c.jsonl").write_text(line(registration_63())
                                      + line(variant(outputs=["application/pdf"])))
    proc = subprocess.run([IOA_CHECK, "audit", "c.jsonl", "--profile", "cs-translation"],
                          cwd=tmp_path, capture_output=True, timeout=60, text=True)
    assert "CONFLICT" in proc.stdout and "c.jsonl:1, c.jsonl:2" in proc.stdout
    assert "2 registrations: 2 valid, 0 invalid, 0 indeterminate; 1 conflict\n" in proc.stdout
    to_file = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                              "--format", "json", "--output", "out.jsonl"], cwd=tmp_path,
                             capture_output=True, timeout=60)
    assert to_file.returncode == 1 and to_file.stdout == b""
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 3
    (tmp_path / "broken.jsonl").write_text('{"@type": "ioa:Capability"\n')
    proc = subprocess.run([IOA_CHECK, "audit", "broken.jsonl", "--profile", "cs-translation"],
                          cwd=tmp_path, capture_output=True, timeout=60, text=True)
    # A line with no id to show is named by its place alone, no blank after it.
    assert proc.stdout.startswith("INVALID broken.jsonl:1\n"), proc.stdout


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_both_engines_audit_alike(tmp_path: Path, engine: str) -> None:
    body = line(registration_63()) + "".join(line(doc) for doc, _ in INVALID.values())
    (tmp_path / "r.jsonl").write_text(body)
    reference = Audit(Checker("cs-translation", engine="reference"))
    expected = [reference.registration(doc, source, index) if doc is not None else None
                for source, index, doc, _ in documents([str(tmp_path / "r.jsonl")])]
    other = Audit(Checker("cs-translation", engine=engine))
    got = [other.registration(doc, source, index) if doc is not None else None
           for source, index, doc, _ in documents([str(tmp_path / "r.jsonl")])]
    assert got == expected


def test_worker_processes_give_the_same_output_in_the_same_order(tmp_path: Path) -> None:
    """Several batches (of 1,024), one of them across two files, invalid lines and a
    conflict across batches: --jobs changes nothing."""
    body = ""
    for i in range(2500):
        doc = variant(**{"@id": f"cs:Cap{i % 650}"})
        if i % 97 == 5:
            doc["inputs"] = ["text"]
        if i == 1990:
            doc["outputs"] = ["application/pdf"]  # conflicts with line 40, two batches before
        body += line(doc) if i % 211 != 3 else "{broken\n"
    (tmp_path / "r.jsonl").write_text(body)
    (tmp_path / "s.jsonl").write_text("".join(
        line(variant(**{"@id": f"cs:Other{i}"})) for i in range(300)))
    outputs = {}
    for jobs in ("1", "2"):
        proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "s.jsonl", "--profile",
                               "cs-translation", "--format", "json", "--jobs", jobs],
                              cwd=tmp_path, capture_output=True, timeout=120)
        assert proc.returncode == 1
        outputs[jobs] = proc.stdout
    assert outputs["1"] == outputs["2"]
    records = [json.loads(x) for x in outputs["2"].splitlines()]
    assert [(r["source"], r["index"]) for r in records if "index" in r] == [
        *(("r.jsonl", i) for i in range(2500)), *(("s.jsonl", i) for i in range(300))]
    conflicts = [r["conflict"] for r in records if "conflict" in r]
    registrations = [{"source": "r.jsonl", "index": i} for i in range(40, 2500, 650)]
    assert conflicts == [{"id": "https://example.org/onto/cs#Cap40",
                          "code": "registration.conflict", "registrations": registrations,
                          "differences": [{"member": "/outputs", "values": [
                              ["text/plain"], ["text/plain"], ["text/plain"],
                              ["application/pdf"]]}]}]


def test_an_input_of_one_piece_is_judged_without_starting_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--jobs N starts its workers only for an input of more than one piece (a JSON Lines
    file is read in blocks of 512 KiB): a small audit costs no forks, and says the same."""
    import multiprocessing

    from ioa_semantic.audit.inputs import pieces

    started: list[str] = []
    real = multiprocessing.get_context

    def get_context(method: str | None = None) -> Any:
        started.append(str(method))
        return real(method)

    monkeypatch.setattr(multiprocessing, "get_context", get_context)
    checker = Checker("cs-translation")
    one = len(line(variant(**{"@id": "cs:Cap100"})).encode())
    for size, pools in ((1, []), (512 * 1024 // one - 10, []), (512 * 1024 // one + 10, ["fork"])):
        started.clear()
        path = tmp_path / f"r{size}.jsonl"
        path.write_text("".join(line(variant(**{"@id": f"cs:Cap{100 + i % 900}"}))
                                for i in range(size)))
        by_worker = [(b.size, b.lines) for b in Audit(checker).batches(
            pieces([str(path)]), jobs=2, render=result_line)]
        here = [(b.size, b.lines) for b in Audit(checker).batches(
            pieces([str(path)]), jobs=1, render=result_line)]
        assert by_worker == here and sum(n for n, _ in here) == size
        assert started == pools


def test_a_killed_audit_resumes_to_the_same_output(tmp_path: Path) -> None:
    """SIGKILL mid-run, each time once the run has made a checkpoint of its own; rerunning
    with the same --state resumes where it was and finishes the audit, and the output equals
    an uninterrupted run's: no registration missing, none counted twice.

    Each kill waits for the state file to record progress, not for a fixed time (a faster
    audit finished before the sleep was over, and the test passed without a kill), and leaves
    several pieces undone, so that the run is always interrupted mid-run.
    """
    import signal
    import time

    from ioa_semantic.audit.inputs import pieces

    body = ""
    for i in range(15000):
        # 5,000 kinds (see Kinds), each judged in full once: about 12 pieces of 512 KiB.
        doc = variant(**{"@id": f"cs:Cap{i % 5000}", "inputs": [f"text/x-v{i % 5000}"]})
        if i % 173 == 9:
            doc["inputs"] = ["text"]
        if i == 14990:
            doc["outputs"] = ["application/pdf"]  # a conflict that spans the interruptions
        body += line(doc)
    (tmp_path / "r.jsonl").write_text(body)
    total = sum(1 for _ in pieces([str(tmp_path / "r.jsonl")]))
    kill_at = (1, 3, 5)  # pieces done when a run is killed; the rest left to do
    assert total - kill_at[-1] >= 6
    base = [IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation", "--format", "json",
            "--jobs", "1"]
    reference = subprocess.run([*base, "--output", "whole.jsonl"], cwd=tmp_path,
                               capture_output=True, timeout=300)
    assert reference.returncode == 1
    expected = (tmp_path / "whole.jsonl").read_text()
    resumable = [*base, "--output", "out.jsonl", "--state", "state.json"]
    state = tmp_path / "state.json"

    def pieces_done() -> int | None:
        try:  # the state is replaced atomically: an old one or a new one, never half of one
            return int(json.loads(state.read_text())["pieces"])
        except FileNotFoundError:
            return None

    seen: list[int] = []  # every state observed, across the runs
    for target in kill_at:
        proc = subprocess.Popen(resumable, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while (done := pieces_done()) is None or done < target:
                if done is not None and (not seen or seen[-1] != done):
                    seen.append(done)
                assert proc.poll() is None, (
                    f"the audit ended (status {proc.returncode}) before its checkpoint at "
                    f"{target} pieces: {proc.stderr.read().decode() if proc.stderr else ''}")
                assert time.monotonic() < deadline, f"no checkpoint at {target} pieces in time"
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
        seen.append(done)
        # Killed mid-run: the signal ended it, not the end of the audit, whose state stays.
        assert proc.returncode == -signal.SIGKILL, (proc.returncode, stderr.decode())
        assert target <= done < total - 2
        assert pieces_done() == done
    # Each rerun went on from the state the last one left (a run started over would write
    # a state of one piece again).
    assert seen == sorted(seen) and seen[0] >= 1 and len(seen) >= len(kill_at)
    finished = subprocess.run(resumable, cwd=tmp_path, capture_output=True, timeout=300)
    assert finished.returncode == 1, finished.stderr.decode()
    assert (tmp_path / "out.jsonl").read_text() == expected
    assert not state.exists()


def test_state_needs_an_output_file(tmp_path: Path) -> None:
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--state", "s.json"], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""


def test_sarif_output(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(line(registration_63()) + line(variant(inputs=None))
                                      + line(variant(outputs=["application/pdf"])))
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--format", "sarif"], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == b""
    sarif = sarif_of(proc.stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    rules = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert [r["ruleId"] for r in run["results"]] == ["registration.missing",
                                                      "registration.conflict"]
    assert {r["ruleId"] for r in run["results"]} <= rules
    missing = run["results"][0]
    assert missing["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "r.jsonl"}, "region": {"startLine": 2, "startColumn": 1}}
    assert [loc["physicalLocation"]["region"]["startLine"]
            for loc in run["results"][1]["locations"]] == [1, 3]
    assert run["properties"]["summary"]["conflicts"] == 1


def _decided_by_shapes() -> list[dict[str, Any]]:
    """The valid registration and every invalid class the shapes decide (pyshacl sees no
    context review, IRI scheme or legacy key)."""
    return [registration_63()] + [doc for doc, _ in INVALID.values()
                                  if isinstance(doc.get("@id", "cs:x"), str)
                                  and ":" in doc.get("@id", "cs:x")
                                  and not str(doc.get("@id", "")).startswith("xx:")
                                  and "@context" in doc and "type" not in doc]


def test_the_audit_reports_what_pyshacl_reports_per_registration() -> None:
    """A corpus with every invalid class: for each registration, the shape results behind the
    audit's reasons are exactly pyshacl's on the same document (R-5.4-5, R-6.3-1)."""
    pytest.importorskip("pyshacl")
    from test_shapes_differential import _ours, _pyshacl

    corpus = _decided_by_shapes()
    assert len(corpus) >= 7
    for doc in corpus:
        assert _ours(doc, "registration") == _pyshacl(doc, "registration"), doc


def test_the_progress_bar_goes_to_a_terminal_stderr_never_into_the_results(
        tmp_path: Path) -> None:
    """With stderr a terminal and stdout a pipe, stdout holds only the JSON lines."""
    import os
    import pty

    corpus = write_registrations(tmp_path / "many.jsonl", 2000)
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run([IOA_CHECK, "audit", str(corpus), "--profile", "cs-translation",
                               "--format", "json", "--jobs", "1"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=terminal, timeout=120,
                              env={**os.environ, "TERM": "xterm", "COLUMNS": "100"})
        os.close(terminal)
        drawn = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other side is closed: all is read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(controller)
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 2001 and all(json.loads(line) for line in lines)
    assert b"2000 registrations audited" in drawn  # counted by batch, every one


def test_an_array_file_is_held_to_max_bytes_as_given(tmp_path: Path) -> None:
    """An array file is one document: the default 1 MiB refuses a large one, and
    ``--max-bytes`` admits it, every element then judged on its own."""
    registration = registration_63()
    elements = []
    for i in range(3000):
        registration["@id"] = f"cs:Capability{i}"
        elements.append(json.loads(json.dumps(registration)))
    (tmp_path / "big.json").write_text(json.dumps(elements))
    assert (tmp_path / "big.json").stat().st_size > 1 << 20

    def audit(*extra: str) -> list[dict[str, Any]]:
        proc = subprocess.run([IOA_CHECK, "audit", "big.json", "--profile", "cs-translation",
                               "--format", "json", "--jobs", "1", *extra], cwd=tmp_path,
                              capture_output=True, timeout=120)
        return [json.loads(line) for line in proc.stdout.decode().splitlines()]

    refused = audit()
    assert [r["code"] for r in refused[0]["reasons"]] == ["json.too-large"]
    admitted = audit("--max-bytes", str(4 << 20))
    assert admitted[-1]["summary"]["status"]["valid"] == 3000


@settings(max_examples=300, deadline=None)
@given(source=st.text(), position=st.none() | st.integers(0, 2**40), ident=st.none() | st.text(),
       status=st.sampled_from(["valid", "invalid", "indeterminate"]),
       reasons=st.sampled_from([(), ("registration.missing",)]))
def test_a_result_line_is_exactly_what_json_writes_for_the_result(
        source: str, position: int | None, ident: str | None, status: str,
        reasons: tuple[str, ...]) -> None:
    """The writer spells most lines without json.dumps; the text must not change for that."""
    from ioa_semantic._codes import finding
    from ioa_semantic.audit.judge import Result
    from ioa_semantic.reporters.audit import result_line

    result = Result(source, position, ident, status,
                    tuple(finding(code, "missing", "/inputs") for code in reasons))
    assert result_line(result) == json.dumps(result.as_dict(), ensure_ascii=False) + "\n"


# --- the pieces an audit judges ---------------------------------------------------------------


@pytest.mark.parametrize("block", [7, 64, 1000, 512 * 1024])
def test_the_pieces_of_an_audit_hold_the_items_documents_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """JSON Lines go to workers in blocks of whole lines, cut without looking at each line:
    whatever the block size (lines longer than a block, blank lines, a last line without
    its newline, CRLF, a file between two JSON Lines files), the items are those
    ``documents`` reads, numbered alike and in the same order."""
    from ioa_semantic.audit import inputs as _inputs

    monkeypatch.setattr(_inputs, "_BLOCK_BYTES", block)
    good = json.dumps(registration_63())
    (tmp_path / "a.jsonl").write_text(f"{good}\n\n{{broken\n   \n\x0c\n{good}\r\n" + good)
    (tmp_path / "b.json").write_text(good)
    (tmp_path / "c.jsonl").write_text("".join(line(variant(**{"@id": f"cs:C{i}"}))
                                              for i in range(40)))
    (tmp_path / "d.jsonl").write_text("")
    (tmp_path / "e.json").write_text(f"[{good}, 5, {good}]")
    # A line's bytes are the document (its line break is whitespace around it).
    paths = [str(tmp_path), str(tmp_path / "a.jsonl")]
    expected = [(source, index, doc.strip() if isinstance(doc, bytes) else doc, problems)
                for source, index, doc, problems in documents(paths)]
    got = [(source, index, doc.strip() if isinstance(doc, bytes) else doc, problems)
           for piece in _inputs.pieces(paths) for source, index, doc, problems in
           _inputs.items_of(piece)]
    assert len(expected) == 2 * 5 + 1 + 40 + 3 and got == expected


def test_a_state_written_for_other_pieces_is_not_resumed(tmp_path: Path) -> None:
    """A state records the block size its pieces were cut with: pieces cut otherwise would
    skip the wrong registrations, so such a state (or one without) is refused, and the output
    it would have resumed is left as it is (it used to be started over, emptying it)."""
    from ioa_semantic.audit.checkpoint import Checkpoint, Refused
    from ioa_semantic.audit.inputs import _BLOCK_BYTES

    inputs = ["r.jsonl"]
    for state in ({"inputs": inputs, "block": _BLOCK_BYTES + 1, "pieces": 3},
                  {"inputs": inputs, "items": 3000}):
        (tmp_path / "s.json").write_text(json.dumps({**state, "output": 5, "journal": 0,
                                                     "total": 3000, "statuses": {}, "codes": {}}))
        (tmp_path / "s.json.index").write_text("")
        with open(tmp_path / "out.jsonl", "w+", encoding="utf-8") as out:
            out.write("earlier output\n")
            out.flush()
            run = Audit(Checker("cs-translation"))
            checkpoint = Checkpoint(str(tmp_path / "s.json"), inputs, out)
            with pytest.raises(Refused, match="written by another version"):
                checkpoint.resume(run)
            assert run.total == 0
        assert (tmp_path / "out.jsonl").read_text() == "earlier output\n"


# --- registrations judged by kind -------------------------------------------------------------


_IDS = st.one_of(st.sampled_from(["cs:A", "cs:B", "https://example.org/x", "TechTranslation",
                                  "xx:Thing", "_:b0", "cs:", "cs:a:b", "@type", ""]),
                 st.text(max_size=12).map(lambda s: "cs:" + s))
_TEXT = st.one_of(st.text(max_size=20),
                  st.sampled_from(["a:b", "{\"x\": 1}", "\\u003a", "", "é ü", "\", \"x\": \""]))


@st.composite
def _registration_texts(draw: st.DrawFn) -> list[bytes]:
    """Registrations of one sender: alike in their layout and context, each differing in
    what a kind masks (@id, label) and, often, in what it must not mask (a media type, an
    ontology version, a second spelling of the label, the label's type), with texts whose
    parse hides a repeated member name or an escaped colon."""
    base = registration_63()
    if draw(st.booleans()):
        base["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
        base["ontologyVersion"] = "1.0"
    if draw(st.booleans()):
        base["@context"]["name"] = "rdfs:label"  # a second spelling of the label
        base["name"] = "x"
    if draw(st.booleans()):
        base["inputs"] = "text/plain"  # one media type, a string
    order = draw(st.permutations(list(base)))
    ascii_only = draw(st.booleans())
    texts = []
    for _ in range(draw(st.integers(1, 12))):
        doc = {key: base[key] for key in order}
        doc["@id"] = draw(_IDS)
        doc["label"] = draw(st.one_of(_TEXT, _TEXT, st.integers(),
                                      st.lists(st.one_of(_TEXT, st.integers()), max_size=2)))
        if "ontologyVersion" in doc:
            doc["ontologyVersion"] = draw(st.sampled_from(["1.0", "1.0", " ", "2.0"]))
        if "name" in doc:
            doc["name"] = draw(st.one_of(_TEXT, st.integers()))
        if draw(st.integers(0, 3)) == 0:
            doc["inputs"] = draw(st.sampled_from(["text", "text/html", ["text"], [], 5]))
        # Texts of one sender are written alike; some are not (another writer, raw UTF-8).
        text = json.dumps(doc, ensure_ascii=ascii_only) if draw(st.integers(0, 5)) else \
            json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        trick = draw(st.integers(0, 10))
        if trick == 0:  # a member name repeated: the parse keeps the last
            text = text[:-1] + ', "inputs": ["text/plain"]}'
        elif trick == 1:
            text = text[:-1] + ', "label": "again"}'
        elif trick == 2 and '"label": "' in text:  # an escaped colon in a masked string
            text = text.replace('"label": "', '"label": "\\u003a', 1)
        elif trick == 3 and '"label": "' in text:  # bytes JSON does not allow in a string
            text = text.replace('"label": "', '"label": "\x01', 1)
        elif trick == 4:
            text += " \r"
        elif trick == 6:
            text += "]"  # not one JSON text
        data = text.encode()
        if trick == 5 and b'"label": "' in data:  # not UTF-8
            data = data.replace(b'"label": "', b'"label": "\xff', 1)
        texts.append(data)
    return texts


@settings(max_examples=300, deadline=None)
@given(_registration_texts())
def test_registrations_judged_by_kind_are_judged_as_in_full(texts: list[bytes]) -> None:
    """A registration of a kind judged clean is answered from its kind: every answer, in any
    order of registrations, is the full judgement's (result and declaration)."""
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    for index, text in enumerate([*texts, *texts]):  # the second pass meets known kinds
        assert judge(checker, text, "r.jsonl", index, kinds) == judge(
            checker, text, "r.jsonl", index), text


def test_registrations_alike_but_for_their_iri_and_label_are_judged_once() -> None:
    """Without this the test above could pass by kinds never answering: one full judgement
    for a kind, then only the IRI (and the colon proof) for each registration of it. Read
    from the kinds' own counts, which hold in either build (compiled code calls the
    baseline directly, past any patch)."""
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    assert kinds is not None  # the default engine, the one that has kinds
    texts = [json.dumps(variant(**{"@id": f"cs:C{i}", "label": f"number {i}: a label"})).encode()
             for i in range(50)]
    results = [judge(checker, text, "r.jsonl", i, kinds) for i, text in enumerate(texts)]
    assert [r.id for r, _ in results] == [f"https://example.org/onto/cs#C{i}" for i in range(50)]
    ontology = checker.profile.single_ontology()
    assert ontology is not None
    declared = (("text/plain",), ("text/plain",), ((ontology[0],), (ontology[1],)))
    assert all(r.status == "valid" and d == declared for r, d in results)
    # Every registration asked its kind; all but the first were answered by it (the first
    # was judged in full, its compiled baseline remembered as the kind's).
    assert (kinds.asked, kinds.answered) == (50, 49)


@pytest.mark.parametrize("invalid", [{"inputs": ["text"]}, {"outputs": []}, {"outputs": [5]},
                                     {"@type": "ioa:Intent"}, {"type": "Capability"}])
def test_invalid_registrations_alike_but_for_their_iri_and_label_are_reported_once(
        invalid: dict[str, Any]) -> None:
    """An invalid registration of a kind reported once gets the same reasons without the
    reporting path (several times a clean registration's cost): the first is reported in
    full, the others answered by the kind, each answer the full judgement's."""
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    assert kinds is not None
    texts = [json.dumps(variant(**{"@id": f"cs:C{i}", "label": f"number {i}: a label",
                                   **invalid})).encode() for i in range(20)]
    for index, text in enumerate(texts):
        result = judge(checker, text, "r.jsonl", index, kinds)
        assert result == judge(checker, text, "r.jsonl", index)
        assert result[0].status == "invalid"
    assert (kinds.asked, kinds.answered) == (20, 19)


def test_a_kind_reported_about_its_iri_is_not_answered_by_kind() -> None:
    """Reasons about a member the kind masks (here the @id's scheme) are that registration's
    own: the kind is not remembered, and every registration of it is reported in full."""
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    assert kinds is not None
    texts = [json.dumps(variant(**{"@id": f"xx:C{i}", "inputs": ["text"]})).encode()
             for i in range(5)]
    for index, text in enumerate(texts):
        assert judge(checker, text, "r", index, kinds) == judge(checker, text, "r", index)
    assert kinds.answered == 0


@pytest.mark.parametrize("tail", [', "inputs": ["text/plain"]}', ', "@id": "cs:Other"}'])
def test_a_repeated_member_name_is_never_answered_by_kind(tail: str) -> None:
    """orjson keeps the last of repeated names, so such a text parses as a registration of
    a known kind; the colon proof sends it to the full judgement, which reports it."""
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    plain = json.dumps(variant(**{"inputs": ["text"]}))
    valid = json.dumps(variant())
    for i in range(3):
        judge(checker, json.dumps(variant(**{"@id": f"cs:K{i}"})).encode(), "r", i, kinds)
    repeated = (plain[:-1] + tail).encode() if "inputs" in tail else (valid[:-1] + tail).encode()
    result, _ = judge(checker, repeated, "r", 9, kinds)
    assert result == judge(checker, repeated, "r", 9)[0]
    assert result.status == "invalid" and "json.duplicate-key" in {f.code for f in result.reasons}


def test_kinds_stop_being_asked_where_they_answer_too_few(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations each of a kind of its own gain nothing from kinds: past a trial, kinds
    are not asked (and every registration is judged in full, as before)."""
    from ioa_semantic.audit import kinds as _kinds
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    monkeypatch.setattr(_kinds, "_KINDS_TRIAL", 8)
    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    assert kinds is not None
    texts = [json.dumps(variant(inputs=[f"text/x-v{i}"])).encode() for i in range(12)]
    for index, text in enumerate(texts):
        assert judge(checker, text, "r", index, kinds) == judge(checker, text, "r", index)
    assert kinds.judged(texts[0]) is None  # a kind it knows, no longer asked


def _label_starting(text: bytes, start: bytes) -> bytes:
    """``text`` with ``start`` before the label's value (the member's, not the context's)."""
    head, member, tail = text.rpartition(b'"label": "')
    return head + member + start + tail


@pytest.mark.parametrize("changed", [
    lambda text: text + b"]",  # not one JSON text
    lambda text: text + b" \r",  # white space after it: the same registration
    lambda text: text + b"\x0c",  # a form feed after it: white space to Python, not to JSON
    lambda text: text + b"\x00",  # a NUL after it
    lambda text: _label_starting(text, b"\\u0001"),  # an escape (of a control character)
    lambda text: _label_starting(text, b"\x01"),  # a raw control byte
    lambda text: _label_starting(text, b"\xff"),  # not UTF-8
    lambda text: _label_starting(text, b'a", "label": "'),  # a member name repeated
    lambda text: text.replace(b'"@id": "cs:', b'"@id": "xx:', 1),  # an IRI the walk refuses
    lambda text: text.replace(b", ", b",", 1),  # written otherwise: parsed, not matched
    lambda text: text.replace(b'"ioa:Capability"', b'"ioa:Intent"'),  # between masked strings
    lambda text: text.replace(b'["text/plain"]', b'["text"]', 1),  # after them
    lambda text: text.replace(b"onto/cs#", b"onto/xs#"),  # before them: another context
], ids=["trailing", "space", "form-feed", "nul", "escape", "control", "utf-8", "repeated", "iri",
        "spacing", "type", "media-type", "context"])
def test_a_kind_met_again_answers_as_the_full_judgement(changed: Any) -> None:
    """A registration of a kind already judged twice, changed anywhere (inside or outside
    what the kind masks, after the text), is judged as the full judgement judges it: the
    kinds read every registration with a JSON parser, never by its text alone."""
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    assert kinds is not None
    judge(checker, json.dumps(variant()).encode(), "r", 0, kinds)
    judge(checker, json.dumps(variant(**{"@id": "cs:Second"})).encode(), "r", 0, kinds)
    text = changed(json.dumps(variant(**{"@id": "cs:Other", "label": "other"})).encode())
    assert judge(checker, text, "r", 1, kinds) == judge(checker, text, "r", 1)


def test_registrations_answered_by_kind_are_those_pyshacl_finds_conforming() -> None:
    """The differential test for the whole fast path: a corpus with every invalid class the
    shapes decide, each class and the valid registration written for several capabilities,
    judged in order with kinds (so that most are answered by their kind or their text):
    each registration is valid exactly where pyshacl finds its document conforming
    (R-5.4-5, R-6.3-1)."""
    pytest.importorskip("pyshacl")
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    from test_shapes_differential import _pyshacl

    classes = _decided_by_shapes()
    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    answered = 0
    for i in range(4):
        for doc in classes:
            doc = {**doc, "@id": f"cs:Capability{i}"} if "@id" in doc else dict(doc)
            doc["label"] = f"capability {i}"
            if i and kinds is not None and kinds.judged(json.dumps(doc).encode()) is not None:
                answered += 1
            result, _ = judge(checker, json.dumps(doc).encode(), "r", i, kinds)
            assert (result.status == "valid") == (_pyshacl(doc, "registration") == set()), doc
    assert answered >= 3  # the valid registration, again and again, from its kind


def test_kinds_remember_within_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What kinds remember is bounded: past the bound, a registration of a kind not known is
    judged in full, with the same result."""
    from ioa_semantic.audit import kinds as _kinds
    from ioa_semantic.audit.judge import judge
    from ioa_semantic.audit.workers import kinds_for

    monkeypatch.setattr(_kinds, "_KINDS_BYTES", 270)  # a layout and its context, no kind
    checker = Checker("cs-translation")
    kinds = kinds_for(checker)
    assert kinds is not None
    texts = [json.dumps(variant(**{"@id": f"cs:C{i}"})).encode() for i in range(3)]
    for index, text in enumerate(texts):
        assert judge(checker, text, "r", index, kinds) == judge(checker, text, "r", index)
    assert kinds.plans and not any(plan and plan.kinds for plan in kinds.plans.values())


# --- a resume proves its files ----------------------------------------------------------------
#
# The audit runs in this process with blocks of 4 KiB (about ten registrations a piece), and
# "killed" after a checkpoint: the next piece's lines are written, its checkpoint never made,
# as a SIGKILL between the two leaves them. Then a file changes, and the same command runs
# again: it either resumes to exactly what an uninterrupted run writes over the files as they
# are now, or refuses (exit 2, one line naming the file and the state to delete), writing
# nothing. test_a_killed_audit_resumes_to_the_same_output kills the installed command.


class _Killed(BaseException):
    """The run ended where a kill would have ended it (not an Exception: main lets it by)."""


def _regs(count: int, start: int = 0, conflict: int | None = None) -> str:
    body = ""
    for i in range(start, start + count):
        doc = variant(**{"@id": f"cs:Cap{i % 40}", "label": f"capability {i}"})
        if i % 13 == 5:
            doc["inputs"] = ["text"]  # invalid: a line with reasons
        if i == conflict:
            doc["outputs"] = ["application/pdf"]
        body += line(doc)
    return body


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder the audit walks: a.jsonl (120 lines, 12 pieces or so), b.json (an array),
    c.jsonl (80 lines, a conflict with a.jsonl); blocks of 4 KiB."""
    from ioa_semantic.audit import inputs as _inputs

    monkeypatch.setattr(_inputs, "_BLOCK_BYTES", 4096)
    monkeypatch.chdir(tmp_path)
    regs = tmp_path / "regs"
    regs.mkdir()
    (regs / "a.jsonl").write_text(_regs(120))
    (regs / "b.json").write_text(json.dumps([variant(**{"@id": f"cs:B{i}"}) for i in range(3)]))
    (regs / "c.jsonl").write_text(_regs(80, start=120, conflict=150))
    return regs


_RESUMABLE = ["audit", "regs", "--profile", "cs-translation", "--format", "json", "--jobs", "1",
              "--output", "out.jsonl", "--state", "state.json"]


def _run(args: list[str], capsys: pytest.CaptureFixture[str],
         kill_after: int | None = None) -> tuple[int | None, str]:
    """``ioa-check`` in this process: its status (None if killed) and its stderr."""
    from ioa_semantic.audit import checkpoint as _checkpoint
    from ioa_semantic.cli import main as _cli

    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        if kill_after is not None:
            advance = _checkpoint.Checkpoint.advance

            def advancing(self: Any, audit: Any) -> None:
                if self.done == kill_after:
                    raise _Killed  # the piece after this checkpoint is written, not checkpointed
                advance(self, audit)

            patch.setattr(_checkpoint.Checkpoint, "advance", advancing)
        try:
            status: int | None = _cli.main(args)
        except _Killed:
            status = None
    return status, capsys.readouterr().err


def _uninterrupted(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status, _ = _run([*_RESUMABLE[:-4], "--output", "whole.jsonl"], capsys)
    assert status is not None
    return status, Path("whole.jsonl").read_text()


def _killed(capsys: pytest.CaptureFixture[str], after: int) -> dict[str, Any]:
    status, err = _run(_RESUMABLE, capsys, kill_after=after)
    assert status is None, err
    state: dict[str, Any] = json.loads(Path("state.json").read_text())
    assert state["pieces"] == after
    # The output holds more than the state records: what a kill leaves past the checkpoint.
    assert Path("out.jsonl").stat().st_size > state["output"]["length"]
    return state


def _assert_resumes(capsys: pytest.CaptureFixture[str]) -> None:
    expected_status, expected = _uninterrupted(capsys)
    status, err = _run(_RESUMABLE, capsys)
    assert (status, err) == (expected_status, "")
    assert Path("out.jsonl").read_text() == expected
    assert not Path("state.json").exists() and not Path("state.json.index").exists()


def _assert_refused(capsys: pytest.CaptureFixture[str], *named: str) -> str:
    before = {name: Path(name).read_bytes() for name in ("out.jsonl", "state.json",
                                                         "state.json.index")
              if Path(name).exists()}
    status, err = _run(_RESUMABLE, capsys)
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("ioa-check: cannot resume from state.json: ")
    assert err.rstrip().endswith(("; delete state.json to start the audit over",
                                  "; if it is this audit's state, delete state.json to start "
                                  "the audit over, else give --state a path of its own"))
    for name in named:
        assert name in err, (name, err)
    # Nothing written: the output, the state and its journal are as the kill left them.
    assert {name: Path(name).read_bytes() for name in before} == before
    # As the message says: without the state, the audit starts over and is whole.
    Path("state.json").unlink()
    output = Path("out.jsonl")
    if output.exists() and output.stat().st_size and not is_report(output.read_bytes()):
        # An output replaced by what is not an audit report is no longer the audit's: a new
        # run refuses to write over it, and writes once it is removed.
        status, again = _run(_RESUMABLE, capsys)
        assert status == 2 and "--output out.jsonl exists and is not an audit report" in again
        assert output.read_bytes() == before["out.jsonl"]
        output.unlink()
    _assert_resumes(capsys)
    return err


def test_a_resume_after_a_kill_writes_the_uninterrupted_output(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Killed in a.jsonl, in c.jsonl (b.json behind it) and after the last piece: each
    resume ends in the uninterrupted output, the conflict across the kill included."""
    from ioa_semantic.audit.inputs import pieces

    total = sum(1 for _ in pieces(["regs"]))
    assert total >= 18
    for after in (3, total - 3, total - 1):
        _killed(capsys, after)
        _assert_resumes(capsys)
    expected_status, expected = _uninterrupted(capsys)
    assert expected_status == 1 and '"conflict"' in expected


def _edit(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) >= 1, old
    path.write_bytes(data.replace(old, new, 1))


def test_lines_appended_past_what_was_read_are_audited_on_resume(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lines appended to the file being read, and to one not reached: the pieces already
    judged read back the same, so the resume goes on, into the lines added."""
    _killed(capsys, 3)
    with open(corpus / "a.jsonl", "a") as handle:
        handle.write(_regs(30, start=500))
    with open(corpus / "c.jsonl", "a") as handle:
        handle.write(_regs(5, start=700))
    _assert_resumes(capsys)


def test_lines_appended_to_a_file_read_to_its_end_are_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """a.jsonl was read to its end (its last block cut at the end of the file): what it
    holds now would be cut into other pieces than those judged, and that is a change."""
    from ioa_semantic.audit.inputs import pieces

    _killed(capsys, sum(1 for _ in pieces(["regs"])) - 3)
    with open(corpus / "a.jsonl", "a") as handle:
        handle.write(_regs(3, start=500))
    _assert_refused(capsys, "regs/a.jsonl: changed where it was already audited")


def test_a_file_shortened_below_what_was_judged_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = _killed(capsys, 5)
    judged = state["reading"][1]
    assert state["reading"][0] == "regs/a.jsonl"
    data = (corpus / "a.jsonl").read_bytes()
    cut = data.rindex(b"\n", 0, judged - 100) + 1  # whole lines, fewer than were judged
    (corpus / "a.jsonl").write_bytes(data[:cut])
    _assert_refused(capsys, f"regs/a.jsonl: now {cut} bytes, shorter than the {judged} already "
                            "audited")


def test_a_file_shortened_past_what_was_read_is_resumed(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _killed(capsys, 3)
    data = (corpus / "a.jsonl").read_bytes()
    (corpus / "a.jsonl").write_bytes(data[:data.rindex(b"\n", 0, len(data) - 2000) + 1])
    _assert_resumes(capsys)


@pytest.mark.parametrize(("old", "new"), [
    (b'"capability 7"', b'"capability 7, grown"'),  # a grown line
    (b'"capability 7"', b'"capability X"'),  # a changed line, of the same length
    (b'"capability 7"', b'"capability 7"\n'),  # a line cut in two
])
def test_a_line_changed_where_it_was_judged_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str], old: bytes, new: bytes) -> None:
    state = _killed(capsys, 4)
    _edit(corpus / "a.jsonl", old, new)
    _assert_refused(capsys, "regs/a.jsonl: changed where it was already audited "
                            f"(its first {state['reading'][1]} bytes)")


def test_a_line_changed_past_what_was_read_is_audited_as_it_is_now(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _killed(capsys, 3)
    _edit(corpus / "a.jsonl", b'"capability 110"', b'"capability 110 and more"')
    _edit(corpus / "c.jsonl", b'"capability 190"', b'"capability 190"\n{broken')
    _assert_resumes(capsys)


def test_a_file_read_before_the_kill_that_changed_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """b.json and a.jsonl were read to their end: an array file is one document, any change
    to it (or its removal) is refused; so is a file added to the folder before the point
    reached."""
    from ioa_semantic.audit.inputs import pieces

    after = sum(1 for _ in pieces(["regs"])) - 3
    _killed(capsys, after)
    (corpus / "b.json").write_text(json.dumps([variant(**{"@id": f"cs:B{i}"}) for i in range(4)]))
    _assert_refused(capsys, "regs/b.json: changed where it was already audited")
    _killed(capsys, after)
    (corpus / "b.json").unlink()
    _assert_refused(capsys, "regs/b.json: no longer where it was among the inputs "
                            "(regs/c.jsonl is there now)")
    (corpus / "b.json").write_text("[]")
    _killed(capsys, after)
    (corpus / "0.json").write_text(json.dumps(registration_63()))
    _assert_refused(capsys, "regs/a.jsonl: no longer where it was among the inputs "
                            "(regs/0.json is there now)")


def test_a_file_added_past_the_point_reached_is_audited(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _killed(capsys, 3)
    (corpus / "d.jsonl").write_text(_regs(4, start=900))
    _assert_resumes(capsys)


def test_an_input_that_could_not_be_read_and_now_can_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [*_RESUMABLE[:1], "missing.jsonl", *_RESUMABLE[1:]]
    status, err = _run(args, capsys, kill_after=3)
    assert status is None, err
    Path("missing.jsonl").write_text(_regs(2))
    status, err = _run(args, capsys)
    assert status == 2
    assert "missing.jsonl: could not be read when it was audited, and now can" in err


def test_a_journal_that_begins_with_an_unreadable_input_is_the_audits_own(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An input that could not be read is journaled with no length and no digest: a journal
    that begins with one is still the audit's, so a resume proves it, and a run started over
    (its state deleted, as a refusal says) writes over it rather than refusing it as a
    file of the user's."""
    args = [*_RESUMABLE[:1], "missing.jsonl", *_RESUMABLE[1:]]
    status, err = _run(args, capsys, kill_after=3)
    assert status is None, err
    assert json.loads(Path("state.json.index").read_text().splitlines()[0]) == {
        "file": "missing.jsonl", "length": None, "sha256": None}
    status, err = _run(args, capsys)
    assert status == 1 and err == "", err
    resumed = Path("out.jsonl").read_bytes()
    status, err = _run(args, capsys, kill_after=3)
    assert status is None, err
    Path("state.json").unlink()
    Path("out.jsonl").unlink()
    status, err = _run(args, capsys)
    assert status == 1 and err == "", err
    assert Path("out.jsonl").read_bytes() == resumed


@pytest.mark.parametrize(("change", "named"), [
    (lambda out: out.unlink(), "out.jsonl is 0 bytes, shorter than the"),
    (lambda out: out.write_bytes(out.read_bytes()[:1000]), "out.jsonl is 1000 bytes, shorter"),
    (lambda out: out.write_bytes(out.read_bytes().replace(b"Cap", b"Cax", 1)),
     "out.jsonl: its first"),
    (lambda out: out.write_bytes(b"x" * out.stat().st_size), "out.jsonl: its first"),
], ids=["deleted", "truncated", "changed", "replaced"])
def test_an_output_not_as_written_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str], change: Any, named: str) -> None:
    _killed(capsys, 4)
    change(Path("out.jsonl"))
    _assert_refused(capsys, named)


@pytest.mark.parametrize(("change", "named"), [
    (lambda journal: journal.unlink(),
     "state.json.index (the journal of state.json) is missing"),
    (lambda journal: journal.write_bytes(journal.read_bytes()[:-10]),
     "state.json.index (the journal of state.json) is "),
    (lambda journal: journal.write_bytes(journal.read_bytes().replace(b"Cap1", b"Cap2", 1)),
     "state.json.index (the journal of state.json): its first"),
], ids=["deleted", "truncated", "replaced"])
def test_a_journal_not_as_written_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str], change: Any, named: str) -> None:
    _killed(capsys, 4)
    change(Path("state.json.index"))
    _assert_refused(capsys, named)


def _reseal_journal(entry: Any) -> None:
    """The journal's first entry replaced by ``entry``, the state sealed again over it (its
    journal's length and hash, its own check), as one who edits both files would."""
    import hashlib

    from ioa_semantic.audit.checkpoint import _seal

    journal = Path("state.json.index")
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[0] = (entry if isinstance(entry, bytes) else json.dumps(entry).encode()) + b"\n"
    journal.write_bytes(b"".join(lines))
    state = json.loads(Path("state.json").read_text())
    state.pop("check")
    state["journal"] = {"length": journal.stat().st_size,
                        "sha256": hashlib.sha256(journal.read_bytes()).hexdigest()}
    state["check"] = _seal(state)
    Path("state.json").write_text(json.dumps(state))


_NOT_WRITTEN_BY_THE_AUDIT = "line 1 of its journal state.json.index is not an entry the audit writes"


@pytest.mark.parametrize("entry", [
    ["urn:cap:x", {"a": 1}, "regs/a.jsonl", 0],  # a declaration no registration makes
    ["urn:cap:x", [["text/plain"], ["text/plain"]], "regs/a.jsonl", 0],
    ["urn:cap:x", [[True], ["text/plain"], None], "regs/a.jsonl", 0],
    ["urn:cap:x", [[], [], None], "regs/a.jsonl", -1],
    {"file": "regs/a.jsonl", "length": "12", "sha256": None},
    "not an entry",
    b"[" * 100_000 + b"]" * 100_000,  # nested past what the parser reads
], ids=["object", "two-parts", "not-strings", "negative-index", "file-entry", "string",
        "nested"])
def test_a_journal_resealed_with_an_entry_of_another_form_is_refused_and_kept(
        corpus: Path, capsys: pytest.CaptureFixture[str], entry: Any) -> None:
    """A journal's hash proves it as written only if the state's own record is: a state
    sealed again over an edited journal is read entry by entry, and an entry of another
    form is refused when it is replayed (exit 2, its line named), never indexed (where it
    failed as an internal error when the conflicts were reported, after the whole audit).
    The journal, which no longer begins as one the audit writes, is kept (a run without
    the state will not write over it either)."""
    _killed(capsys, 4)
    _reseal_journal(entry)
    journal = Path("state.json.index").read_bytes()
    status, err = _run(_RESUMABLE, capsys)
    assert status == 2 and _NOT_WRITTEN_BY_THE_AUDIT in err, err
    Path("state.json").unlink()
    status, err = _run(_RESUMABLE, capsys)
    assert status == 2 and "state.json.index exists and is not" in err, err
    assert Path("state.json.index").read_bytes() == journal


def _replace_state(change: Any) -> None:
    state = json.loads(Path("state.json").read_text())
    result = change(state)
    Path("state.json").write_text(result if isinstance(result, str) else json.dumps(state))


@pytest.mark.parametrize(("change", "named"), [
    (lambda s: "{not json", "it is not JSON"),
    (lambda s: json.dumps(s)[:-20], "it is not JSON"),
    (lambda s: "[]", "not a JSON object"),
    (lambda s: s.update(version=1), "written by another version"),
    (lambda s: json.dumps({"inputs": ["regs"], "block": 4096, "pieces": 3, "output": 5,
                           "journal": 0, "total": 30, "statuses": {}, "codes": {}}),
     "written by another version"),  # a state of the previous version
    (lambda s: s.pop("pieces"), "it lacks a valid 'pieces' field"),
    (lambda s: s.update(output=s["output"]["length"]), "it lacks a valid 'output' field"),
    (lambda s: s.update(total=s["total"] + 1), "it is corrupt"),
    (lambda s: s.update(inputs=["regs", "more"]), "it is corrupt"),
], ids=["not-json", "cut-short", "not-an-object", "version", "old-version", "missing-field",
        "wrong-type", "a-count-changed", "inputs-changed"])
def test_a_corrupt_or_foreign_state_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str], change: Any, named: str) -> None:
    _killed(capsys, 4)
    _replace_state(change)
    _assert_refused(capsys, named)


def test_a_state_of_other_inputs_is_refused(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _killed(capsys, 4)
    args = [*_RESUMABLE[:1], "regs/a.jsonl", *_RESUMABLE[2:]]
    status, err = _run(args, capsys)
    assert status == 2
    assert err == ("ioa-check: cannot resume from state.json: it was written for other "
                   "inputs: regs; delete state.json to start the audit over\n")


def test_an_unreadable_state_is_refused(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("state.json").mkdir()
    status, err = _run(_RESUMABLE, capsys)
    assert status == 2 and "cannot resume from state.json: it cannot be read: " in err


def test_a_refused_state_is_exit_2_from_the_installed_command(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(line(registration_63()))
    (tmp_path / "state.json").write_text("{not json")
    (tmp_path / "out.jsonl").write_text("kept\n")
    proc = subprocess.run([IOA_CHECK, *_RESUMABLE[:1], "r.jsonl", *_RESUMABLE[2:]],
                          cwd=tmp_path, capture_output=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr == (b"ioa-check: cannot resume from state.json: it is not JSON; if it "
                           b"is this audit's state, delete state.json to start the audit over, "
                           b"else give --state a path of its own\n")
    assert (tmp_path / "out.jsonl").read_text() == "kept\n"


def test_standard_input_with_a_state_is_refused_at_the_start(tmp_path: Path) -> None:
    """A pipe cannot be read again to prove it the same on a resume."""
    proc = subprocess.run([IOA_CHECK, *_RESUMABLE[:1], "-", *_RESUMABLE[2:]], cwd=tmp_path,
                          input=line(registration_63()).encode(), capture_output=True,
                          timeout=60)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert b"--state cannot be used with - (standard input)" in proc.stderr
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "state.json").exists()


def test_an_audit_leaves_the_collector_unfrozen_as_it_found_it(tmp_path: Path) -> None:
    """The audit freezes what lives as long as its run; a library caller's process is left
    as it was once the run ends."""
    import gc

    from ioa_semantic.audit.inputs import pieces
    from ioa_semantic.audit.run import Audit

    path = write_registrations(tmp_path / "r.jsonl", 20)
    gc.unfreeze()
    run = Audit(Checker("cs-translation"))
    assert sum(batch.size for batch in run.batches(pieces([str(path)]))) == 20
    assert gc.get_freeze_count() == 0
