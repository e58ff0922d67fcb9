"""``ioa-check trace --store``: a durable trace knowledge graph, its cursor, history, reaudit.

Everything runs through the installed command in real subprocesses: a store fed the
trip-planner samples and a tampered copy is killed with SIGKILL at exact points (the
process kills itself after its Nth transaction, through the test hook of
``ioa_semantic.trace.store``) and resumed, and must equal a store fed without interruption,
graph for graph; a second process must be refused while this one holds the store; the
shipped history queries are checked on a store of generated runs against what the test
computes from the runs' specifications alone; reaudit turns a tampered run compatible once a
manifest declares its renamed tool, keeping the older verdict.
"""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from support import IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import pyoxigraph
import trace_runs
from test_trace import GOLDEN, MANIFESTS, MAS_LAB, TRACES

from ioa_semantic.trace.history import iso_instant
from ioa_semantic.trace.privacy import Private
from ioa_semantic.trace.store import HOLD_ENV, KEY_FILE, KILL_AFTER_ENV

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

AT = "2026-12-02T00:00:00Z"
LATER = "2026-12-03T00:00:00Z"
SMOKE = MAS_LAB / "golden-lab-smoke"
TUTORIALS = [MAS_LAB / "tutorials" / "tutorial-01-traces-events.jsonl",
             MAS_LAB / "tutorials" / "tutorial-02-fixture-events.jsonl"]
IOAT = "https://example.org/ioa/trace#"
# A store key the tests give two stores they compare graph for graph (each new store makes a
# random one of its own).
KEY = bytes(range(32))
PLAIN = "--store-plain-ids"


def ioa(args: list[Any], cwd: Path, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=300, env={**os.environ, **(env or {})})
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def feed(paths: list[Any], store: Path | str, cwd: Path, *more: Any,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return ioa(["trace", *paths, "--store", store, "--no-shapes", "--format", "json", "--at",
                AT, *more], cwd, env)


def rows(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def query(store: Path | str, cwd: Path, name: str | None, *more: Any) -> list[dict[str, Any]]:
    return rows(ioa(["trace", "query", store, *([name] if name else []), *more], cwd))


def graphs(store: Path) -> dict[str, set[tuple[str, str, str]]]:
    """Every named graph of the store, as sets of triples in N-Triples terms."""
    opened = pyoxigraph.Store(str(store))
    out: dict[str, set[tuple[str, str, str]]] = {}
    for quad in opened:
        out.setdefault(str(quad.graph_name), set()).add(
            (str(quad.subject), str(quad.predicate), str(quad.object)))
    del opened  # the lock goes with the store object
    gc.collect()
    return out


def keyed(folder: Path, key: bytes = KEY) -> Path:
    """A folder holding a store key only, as a creation cut short after writing its key
    leaves one: the store made there uses that key."""
    folder.mkdir(parents=True)
    (folder / KEY_FILE).write_bytes(key)
    (folder / KEY_FILE).chmod(0o600)
    return folder


def ref(store: Path, kind: str, value: str) -> str:
    """``value``'s reference of ``kind`` in the private store at ``store``, from its key file."""
    return Private((store / KEY_FILE).read_bytes()).keyed(kind, value)


def consumer_graph(store: Path) -> str:
    """The name of the store's one consumer graph (keyed in a private store), or ""."""
    names = [g for g in graphs(store) if g.startswith("<urn:ioa-trace:consumer:")]
    assert len(names) <= 1, names
    return names[0] if names else ""


def positions(store: Path, consumer: str | None = "ioa-check-trace") -> dict[str, int]:
    """The cursor: each input's greatest checkpoint (of the one consumer, for None)."""
    out: dict[str, int] = {}
    name = consumer_graph(store) if consumer is None else f"<urn:ioa-trace:consumer:{consumer}>"
    graph = graphs(store).get(name, set())
    inputs = {s: o for s, p, o in graph if p == f"<{IOAT}input>"}
    for s, p, o in graph:
        if p == f"<{IOAT}line>":
            line = int(o.split('"')[1])
            out[inputs[s]] = max(out.get(inputs[s], 0), line)
    return out


def tampered(folder: Path) -> Path:
    """golden-extensions with schedule_agent's lookup_schedule renamed book_hotel, and the
    model every LLM call used recorded (the sample records none, which alone keeps a run
    indeterminate)."""
    run = folder / "tampered-run"
    (run / "traces").mkdir(parents=True)
    shutil.copy(GOLDEN / "run_info.json", run / "run_info.json")
    info = json.loads((GOLDEN / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "run_hash": "tampered-" + info["run_hash"]}))
    text = (GOLDEN / "events.jsonl").read_text()
    assert text.count('"tool_name": "lookup_schedule"') == 2
    text = text.replace('"tool_name": "lookup_schedule"', '"tool_name": "book_hotel"')
    text = text.replace('"kind": "llm_call_start",', '"kind": "llm_call_start", "model": '
                                                     '"azure/gpt-4o",')
    (run / "traces" / "events.jsonl").write_text(text)
    return run


def revised_manifests(folder: Path) -> Path:
    """The trip-planner manifests with book_hotel, the tampered run's tool, declared by
    schedule_agent."""
    revised = folder / "manifests"
    shutil.copytree(MANIFESTS, revised)
    (revised / "tools" / "book_hotel.tool.yaml").write_text(
        "apiVersion: mas/v1\nkind: Tool\nmetadata:\n  name: book_hotel\n")
    schedule = revised / "agents" / "schedule.yaml"
    schedule.write_text(schedule.read_text().replace(
        "  - ref: ../tools/lookup_schedule.tool.yaml\n",
        "  - ref: ../tools/lookup_schedule.tool.yaml\n  - ref: ../tools/book_hotel.tool.yaml\n"))
    return revised


# --- crash safety and the cursor ---------------------------------------------------------------


# Where each feed below is killed: the number of its transactions before the kill, a list a
# group of inputs, every one of which must land (the feed then ends uninterrupted). Counted:
# the store made (1), a checkpoint every 20 lines (25 for the first group, 4 for the
# tutorials), then one write for the runs of a group (new and small, they are gathered and
# written together, their graphs too few quads for a bulk load: store._Batch; a feed of
# them cut short is tests/test_trace_store_batches.py's). A private store's checkpoints hold
# no fold, so each feed reads its inputs again from their start and commits their
# checkpoints again; a plain one reads on from its cursor. Either way the kills fall after
# the store was made only, among the checkpoints, and just before or just after the runs'
# write.
KILLS = {"private": ([1, 12, 26], [2, 5]),  # 26: the 25 checkpoints, not the runs
         "plain": ([1, 12, 14], [2, 3])}  # 14: the 13 checkpoints left and the runs


@pytest.mark.parametrize("mode", ["private", "plain"])
def test_killed_with_sigkill_at_several_points_it_resumes_to_the_store_fed_whole(
        tmp_path: Path, mode: str) -> None:
    """A private store's checkpoints hold no fold (an input is read again from its start);
    a plain one's do (it is read on from its checkpoint): both resume to the store fed
    whole. The private stores share a key, so that their graphs can be compared."""
    bad = tampered(tmp_path)
    groups = [[GOLDEN, SMOKE, bad], TUTORIALS]
    options = ["--manifests", MANIFESTS, "--batch-size", "20"]
    if mode == "plain":
        options.append(PLAIN)
    whole = keyed(tmp_path / "whole") if mode == "private" else tmp_path / "whole"
    expected = []
    for group in groups:
        proc = feed(group, whole, tmp_path, *options)
        assert proc.returncode in (1, 3), proc.stderr
        expected.append(proc.stdout)

    killed = keyed(tmp_path / "killed") if mode == "private" else tmp_path / "killed"
    cursor: dict[str, int] = {}
    for group, output, kills in zip(groups, expected, KILLS[mode], strict=True):
        for after in [*kills, None]:
            env = {KILL_AFTER_ENV: str(after)} if after is not None else {}
            proc = feed(group, killed, tmp_path, *options, env=env)
            now = positions(killed, None)
            assert all(now.get(key, 0) >= line for key, line in cursor.items()), (cursor, now)
            cursor = now
            assert (proc.returncode == -9) is (after is not None), (after, proc.stderr)
        assert proc.stdout == output  # the report of the whole input, as uninterrupted
    assert graphs(killed) == graphs(whole)
    assert feed(groups[0], killed, tmp_path, *options).stdout == expected[0]
    assert graphs(killed) == graphs(whole)  # a rerun over consumed inputs writes nothing


def test_the_cursor_is_sequence_addressed_checkpoints_in_the_store(tmp_path: Path) -> None:
    """In a plain store, where the checkpoints name the input and carry the fold."""
    store = tmp_path / "store"
    plain = ioa(["trace", GOLDEN, "--manifests", MANIFESTS, "--no-shapes", "--format", "json"],
                tmp_path)
    first = feed([GOLDEN], store, tmp_path, "--manifests", MANIFESTS, "--batch-size", "50",
                 PLAIN)
    assert first.returncode == plain.returncode == 3 and first.stdout == plain.stdout
    stored = graphs(store)
    checkpoints = stored["<urn:ioa-trace:consumer:ioa-check-trace>"]
    lines = sorted(int(o.split('"')[1]) for _, p, o in checkpoints if p == f"<{IOAT}line>")
    assert lines == [50, 100, 150, 193]
    key = str(GOLDEN / "events.jsonl")
    assert positions(store) == {f'"{key}"': 193}
    # Another consumer has a cursor of its own; the run is not judged again by it.
    other = feed([GOLDEN], store, tmp_path, "--manifests", MANIFESTS, "--consumer", "team b",
                 PLAIN)
    assert other.stdout == plain.stdout
    after = graphs(store)
    assert after["<urn:ioa-trace:verdicts>"] == stored["<urn:ioa-trace:verdicts>"]
    assert positions(store, "team%20b") == {f'"{key}"': 193}


def test_a_second_process_is_refused_while_the_first_holds_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert feed([GOLDEN], store, tmp_path).returncode == 3
    before = graphs(store)
    holder = pyoxigraph.Store(str(store))  # this process holds it now
    try:
        for args in (["trace", SMOKE, "--store", store, "--no-shapes"],
                     ["trace", "query", store, "runs"], ["trace", "reaudit", store]):
            proc = ioa(args, tmp_path)
            assert proc.returncode == 74, proc.stderr
            assert proc.stdout == b""
            message = proc.stderr.decode()
            assert str(store) in message and "held by another process" in message
            assert message.count("\n") == 1
    finally:
        del holder
        gc.collect()
    assert graphs(store) == before  # nothing was written by the refused ones
    assert feed([SMOKE], store, tmp_path).returncode == 3


# Loads chunk after chunk into a store (in a graph of its own) until it is killed.
_LOADER = """
import sys, pyoxigraph as ox
store = ox.Store(sys.argv[1])
chunk = "".join(f"<http://e/{i}> <http://p/{i % 7}> \\"v{i}\\" <http://junk/> .\\n"
                for i in range(400_000)).encode()
print("loading", flush=True)
while True:
    store.bulk_load(chunk, format=ox.RdfFormat.N_QUADS)
"""


def _abandoned(store: Path) -> list[str]:
    return sorted(p.name for p in store.iterdir() if re.fullmatch(r"bulk-[0-9]+\.sst", p.name))


def test_the_files_of_a_bulk_load_killed_midway_are_removed_by_the_next_writer(
        tmp_path: Path) -> None:
    """Oxigraph's bulk loader writes each chunk to ``bulk-<number>.sst`` in the store's folder
    before RocksDB takes it in: a process killed between the two leaves the file, which
    nothing else removes. The next process to open the store for writing removes it
    (``store.forget_abandoned_loads``), and nothing else of the folder."""
    import sys

    store = tmp_path / "store"
    assert feed([GOLDEN], store, tmp_path, PLAIN).returncode == 3
    for _ in range(20):  # until a kill lands between a chunk's file and its ingestion
        loader = subprocess.Popen([sys.executable, "-c", _LOADER, str(store)],
                                  stdout=subprocess.PIPE)
        assert loader.stdout is not None and loader.stdout.readline() == b"loading\n"
        while not _abandoned(store) and loader.poll() is None:
            time.sleep(0.01)
        loader.kill()
        loader.communicate()
        if _abandoned(store):
            break
    left = _abandoned(store)
    assert left, "no kill landed inside a bulk load"
    others = {"bulk-12a.sst": b"x", "bulk-.sst": b"x", "bulk-1.sst.keep": b"x",
              "notes.txt": b"mine"}
    for name, data in others.items():
        (tmp_path / "store" / name).write_bytes(data)
    outside = tmp_path / "outside.sst"
    outside.write_bytes(b"not the store's")
    (store / "bulk-7.sst").symlink_to(outside)
    assert feed([SMOKE], store, tmp_path, PLAIN).returncode == 3
    assert _abandoned(store) == ["bulk-7.sst"]  # the link stays, and what it names
    assert outside.read_bytes() == b"not the store's"
    assert all((store / name).read_bytes() == data for name, data in others.items())
    reference = tmp_path / "reference"
    assert feed([GOLDEN], reference, tmp_path, PLAIN).returncode == 3
    assert feed([SMOKE], reference, tmp_path, PLAIN).returncode == 3
    fed = {graph: triples for graph, triples in graphs(store).items() if graph != "<http://junk/>"}
    assert fed == graphs(reference)


def test_a_second_ioa_check_is_refused_while_a_first_one_feeds_the_store(tmp_path: Path) -> None:
    store, flag = tmp_path / "store", tmp_path / "held"
    first = subprocess.Popen(
        [IOA_CHECK, "trace", str(GOLDEN), "--store", str(store), "--no-shapes", "--format",
         "json"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, HOLD_ENV: str(flag)})
    try:
        deadline = time.monotonic() + 60
        while not flag.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert flag.exists(), first.communicate()
        second = feed([SMOKE], store, tmp_path)
        assert second.returncode == 74 and second.stdout == b""
        assert b"held by another process" in second.stderr
    finally:
        flag.unlink(missing_ok=True)
        out, err = first.communicate(timeout=120)
    assert first.returncode == 3, err  # the first one went on, undisturbed
    assert b'"run": "7cc4f1e6780b4c6d2eb0"' in out
    assert [r["runId"] for r in query(store, tmp_path, "runs")] == [
        ref(store, "run", "7cc4f1e6780b4c6d2eb0")]


def test_appended_events_rebuild_the_run_graph_and_add_a_verdict(tmp_path: Path) -> None:
    lines = (GOLDEN / "events.jsonl").read_text().splitlines(keepends=True)
    grown, whole = tmp_path / "grown", tmp_path / "whole"
    keyed(grown / "s")
    keyed(whole / "s")
    (grown / "events.jsonl").write_text("".join(lines[:120]))
    (whole / "events.jsonl").write_text("".join(lines))
    feed(["events.jsonl"], grown / "s", grown, "--batch-size", "32")
    with (grown / "events.jsonl").open("a") as handle:
        handle.write("".join(lines[120:]))
    resumed = feed(["events.jsonl"], grown / "s", grown, "--batch-size", "32")
    reference = feed(["events.jsonl"], whole / "s", whole, "--batch-size", "32")
    assert resumed.stdout == reference.stdout
    runs = {name: graph for name, graph in graphs(grown / "s").items()
            if name.startswith("<urn:ioa-trace:run:")}
    assert len(runs) == 1
    [(name, graph)] = runs.items()
    assert graph == graphs(whole / "s")[name]
    verdicts = query(grown / "s", tmp_path, "runs")
    assert [r["verdicts"] for r in verdicts] == [2]  # one verdict a record of the run


def test_a_rewritten_input_is_refused(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_bytes((GOLDEN / "events.jsonl").read_bytes())
    assert feed(["events.jsonl"], tmp_path / "s", tmp_path).returncode == 3
    stream.write_bytes(stream.read_bytes().replace(b'"agent_id": "moderator"',
                                                   b'"agent_id": "moderat0r"', 1))
    proc = feed(["events.jsonl"], tmp_path / "s", tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"rewritten, not appended to" in proc.stderr and b"--consumer" in proc.stderr
    assert feed(["events.jsonl"], tmp_path / "s", tmp_path, "--consumer", "fresh",
                ).returncode == 3


# --- what is stored ----------------------------------------------------------------------------


def _dump(store: Path) -> str:
    return "\n".join(" ".join(t) for g in graphs(store).values() for t in g)


def test_the_store_holds_digests_not_trace_text_unless_content_was_asked(tmp_path: Path) -> None:
    feed([GOLDEN], tmp_path / "plain", tmp_path, "--batch-size", "40", PLAIN)
    plain = _dump(tmp_path / "plain")
    assert "What is 2+2" not in plain and "Celestia" not in plain
    assert "sha256" in plain
    feed([GOLDEN], tmp_path / "content", tmp_path, "--include-content", PLAIN)
    assert "What is 2+2" in _dump(tmp_path / "content")
    # A store keeps the disclosure it was made with: another one is refused.
    proc = feed([GOLDEN], tmp_path / "plain", tmp_path, "--include-content", PLAIN)
    assert proc.returncode == 2 and proc.stdout == b"" and b"disclosed as plain" in proc.stderr
    # A private store never holds the text: --include-content is the report's only.
    private = feed([GOLDEN], tmp_path / "private", tmp_path, "--include-content")
    assert private.returncode == 3 and b"What is 2+2" in private.stdout
    assert "What is 2+2" not in _dump(tmp_path / "private")


def _judged(proc: subprocess.CompletedProcess[bytes]) -> set[tuple[Any, ...]]:
    out = set()
    for line in proc.stdout.decode().splitlines():
        item = json.loads(line)
        item = item.get("summary", item)
        out.add((item["run"], item.get("agent"), item["verdict"],
                 json.dumps(item.get("aspects"), sort_keys=True),
                 tuple(sorted((r["code"], r["path"]) for r in item["reasons"]))))
    return out


def test_opaque_ids_word_the_report_and_the_store_keeps_its_own_key(tmp_path: Path) -> None:
    """``--opaque-ids`` words the report through the user's key; the store is private under
    its own key whatever the report's: the same run fed with or without --opaque-ids is the
    same stored run, and reaudit needs no key."""
    key = tmp_path / "key"
    key.write_bytes(b"a key that lasts")
    store = tmp_path / "store"
    proc = feed([GOLDEN], store, tmp_path, "--manifests", MANIFESTS, "--opaque-ids",
                "--opaque-key", key, "--batch-size", "40")
    assert proc.returncode == 3, proc.stderr
    assert b"7cc4f1e6780b4c6d2eb0" not in proc.stdout and b"schedule_agent" not in proc.stdout
    dump = _dump(store)
    for name in ("7cc4f1e6780b4c6d2eb0", "9b6c8503-4d2b-4e8f-a7d2-29e6884d283c",
                 "golden-extensions", "trip-planner-", "moderator-u1-exec"):
        assert name not in dump, name
    # Tool names stay, and agents the manifests declare (they publish them).
    assert "lookup_schedule" in dump and "<urn:ioa-trace:agent:schedule_agent>" in dump
    before = graphs(store)
    for more in (["--opaque-ids"], []):  # another report key (a random one), or none
        again = feed([GOLDEN], store, tmp_path, "--manifests", MANIFESTS, "--batch-size", "40",
                     *more)
        assert again.returncode == 3 and graphs(store) == before
    same = ioa(["trace", "reaudit", store, "--manifests", MANIFESTS, "--format", "json"],
               tmp_path)
    assert same.returncode == 3 and graphs(store) == before
    bad = tampered(tmp_path)
    assert feed([bad], store, tmp_path, "--manifests", MANIFESTS, "--opaque-ids",
                "--opaque-key", key).returncode == 1
    fixed = ioa(["trace", "reaudit", store, "--manifests", revised_manifests(tmp_path),
                 "--format", "json", "--at", LATER], tmp_path)
    verdicts = [json.loads(line)["summary"]["verdict"] for line in fixed.stdout.decode(
        ).splitlines() if "summary" in line]
    assert sorted(verdicts) == ["compatible", "indeterminate"]
    assert "tampered-" not in _dump(store)


@pytest.mark.parametrize("opaque", [False, True])
def test_a_stored_run_whose_nesting_is_ambiguous_is_reaudited_alike(tmp_path: Path,
                                                                    opaque: bool) -> None:
    """An id-less run whose nesting the order of events leaves open keeps, in the store, the
    calls that may have made each unplaced call (keyed with the other calls in a private
    store, ``opaque``; as they are in a plain one): reaudit judges their delegations as the
    load did."""
    import mas_lab_run
    from test_trace_nesting import EXAMPLE, run_folder

    events = mas_lab_run.events()
    at = mas_lab_run.LOOKUP_LINE - 1
    intruder = [{**events[mas_lab_run.SCHEDULE_START_LINE - 1], "agent_id": "intruder"},
                {**events[at + 4], "agent_id": "intruder", "kind": "execution_end"}]
    run = run_folder(tmp_path / "run", events[:at] + intruder + events[at:])
    mode = [] if opaque else ["--store-plain-ids"]
    store = tmp_path / "store"
    fed = ioa(["trace", run, "--store", store, *mode, "--no-shapes", "--format", "json",
               "--at", "2026-06-01T00:00:00Z", "--manifests", EXAMPLE / "manifests"], tmp_path)
    assert fed.returncode == 1, fed.stderr
    again = ioa(["trace", "reaudit", store, "--manifests", EXAMPLE / "manifests",
                 "--format", "json"], tmp_path)
    assert again.returncode == 1

    def judged(proc: subprocess.CompletedProcess[bytes]) -> list[Any]:
        # A private store names runs, calls and undeclared agents by references the feed's
        # own report does not use: compared by what was judged, not by how it is named.
        found = _judged(proc)
        return sorted(found, key=repr) if not opaque else sorted(
            (verdict, aspects, tuple(code for code, _ in reasons))
            for _, _, verdict, aspects, reasons in found)

    assert judged(again) == judged(fed)
    ambiguous = [r for line in again.stdout.decode().splitlines()
                 for r in json.loads(line).get("reasons", [])
                 if r["code"] == "trace.nesting-ambiguous"]
    # Who called the intruder, and its candidates' delegations to it; who called
    # schedule_agent, whose events the intruder's interleave, and moderator's delegation.
    assert len(ambiguous) == 5
    assert ("intruder" in _dump(store)) is not opaque


def test_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text("")
    both = ioa(["trace", GOLDEN, "--store", "st", "--state", "s.json"], tmp_path)
    assert both.returncode == 2 and b"--state" in both.stderr
    assert ioa(["trace", GOLDEN, "--at", AT], tmp_path).returncode == 2
    alone = ioa(["trace", GOLDEN, PLAIN], tmp_path)
    assert alone.returncode == 2 and PLAIN.encode() in alone.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    crowded = feed([GOLDEN], tmp_path / "other", tmp_path)
    assert crowded.returncode == 2 and b"holds other files" in crowded.stderr
    assert ioa(["trace", "query", "nowhere", "runs"], tmp_path).returncode == 2
    feed([GOLDEN], tmp_path / "st", tmp_path)
    (tmp_path / "unselected.rq").write_text("SELECT ?s WHERE { ?s ?p ?run }")
    for args in (["nope"], ["verdict_changes"], ["--sparql", "missing.rq"],
                 ["--sparql", "unselected.rq", "--param", "run=x"]):
        proc = ioa(["trace", "query", "st", *args], tmp_path)
        assert proc.returncode == 2 and proc.stdout == b"", (args, proc.stderr)
    (tmp_path / "bad.rq").write_text("SELECT * WHERE {")
    bad = ioa(["trace", "query", "st", "--sparql", "bad.rq"], tmp_path)
    assert bad.returncode == 2 and b"not SPARQL" in bad.stderr


def test_a_trace_in_a_folder_named_query_is_given_as_dot_slash(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "query")
    proc = ioa(["trace", "./query", "--no-shapes", "--format", "json"], tmp_path)
    assert proc.returncode == 3 and b'"run": "7cc4f1e6780b4c6d2eb0"' in proc.stdout


def test_the_stored_graph_is_the_emitted_graph(tmp_path: Path) -> None:
    """A run's named graph in a plain store holds exactly what --emit-kg writes of it, and
    its record (a private store's names what the emitted graph names by its references)."""
    store = tmp_path / "store"
    feed([GOLDEN], store, tmp_path, "--manifests", MANIFESTS, "--emit-kg", "kg.nt", PLAIN)
    emitted = pyoxigraph.Store()
    emitted.load((tmp_path / "kg.nt").read_bytes(), pyoxigraph.RdfFormat.N_TRIPLES)
    expected = {(str(q.subject), str(q.predicate), str(q.object)) for q in emitted}
    graph = graphs(store)["<urn:ioa-trace:run:7cc4f1e6780b4c6d2eb0>"]
    extra = {t for t in graph if t[1] in (f"<{IOAT}runRecord>", f"<{IOAT}recordSha256>")}
    assert len(extra) == 2 and graph - extra == expected


# --- reaudit -----------------------------------------------------------------------------------


def test_reaudit_turns_the_tampered_run_compatible_and_keeps_the_old_verdict(
        tmp_path: Path) -> None:
    bad = tampered(tmp_path)
    store = tmp_path / "store"
    fed = feed([GOLDEN, bad], store, tmp_path, "--manifests", MANIFESTS)
    summaries = [json.loads(line)["summary"] for line in fed.stdout.decode().splitlines()
                 if "summary" in line]
    assert [s["verdict"] for s in summaries] == ["indeterminate", "incompatible"]
    uses = query(store, tmp_path, "undeclared_uses")
    assert [(u["agentId"], u["name"], u["runs"]) for u in uses] == [
        ("schedule_agent", "book_hotel", 1)]

    revised = revised_manifests(tmp_path)
    # The run named by its id, as the trace has it: the store keys it with its own key.
    run = ref(store, "run", "tampered-7cc4f1e6780b4c6d2eb0")
    proc = ioa(["trace", "reaudit", store, "--manifests", revised, "--run",
                "tampered-7cc4f1e6780b4c6d2eb0", "--at", LATER, "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [summary] = [json.loads(line)["summary"] for line in proc.stdout.decode().splitlines()
                 if "summary" in line]
    assert summary["run"] == run and summary["verdict"] == "compatible"
    assert summary["agents"] == {"moderator": "compatible", "schedule_agent": "compatible"}

    assert query(store, tmp_path, "undeclared_uses") == []
    history = tmp_path / "history.rq"
    history.write_text(
        "PREFIX ioat: <https://example.org/ioa/trace#>\n"
        "SELECT ?run ?n ?result ?judgedBy ?at WHERE { GRAPH <urn:ioa-trace:verdicts> {\n"
        "  ?v ioat:runId ?run ; ioat:sequence ?n ; ioat:result ?result ;\n"
        "     ioat:judgedBy ?judgedBy ; ioat:auditedAt ?at } } ORDER BY ?n")
    verdicts = query(store, tmp_path, None, "--sparql", history, "--param", f"run={run}")
    assert [(v["result"], v["judgedBy"], v["at"]) for v in verdicts] == [
        ("incompatible", "trace", AT), ("compatible", "reaudit", LATER)]
    current = {r["runId"]: (r["result"], r["verdicts"]) for r in query(store, tmp_path, "runs")}
    assert current == {run: ("compatible", 2),
                       ref(store, "run", "7cc4f1e6780b4c6d2eb0"): ("indeterminate", 1)}


def test_reaudit_against_the_same_declarations_says_what_the_load_said(tmp_path: Path) -> None:
    """Line for line in a plain store; in a private one, with its references (below)."""
    store = tmp_path / "store"
    fed = feed([GOLDEN, SMOKE], store, tmp_path, "--manifests", MANIFESTS, PLAIN)
    before = graphs(store)
    again = ioa(["trace", "reaudit", store, "--manifests", MANIFESTS, "--format", "json"],
                tmp_path)
    assert again.returncode == fed.returncode == 3
    # Stored runs come back in run-IRI order; the load's report is in input order.
    by_run = sorted(fed.stdout.decode().splitlines(keepends=True),
                    key=lambda line: 0 if "4d9a5f525c7f0e823615" in line else 1)
    assert again.stdout.decode().splitlines(keepends=True) == by_run
    assert graphs(store) == before  # the current verdicts were judged so already


def _judgments(proc: subprocess.CompletedProcess[bytes]) -> list[tuple[Any, ...]]:
    """A report's verdicts, agents, aspects and reason codes, without what it names."""
    out = []
    for line in proc.stdout.decode().splitlines():
        item = json.loads(line)
        item = item.get("summary", item)
        out.append(("agent" in item, item["verdict"], json.dumps(item.get("aspects"),
                                                                   sort_keys=True),
                    tuple(sorted(r["code"] for r in item["reasons"]))))
    return sorted(out, key=str)


def test_a_private_reaudit_against_the_same_declarations_judges_as_the_load(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    fed = feed([GOLDEN, SMOKE], store, tmp_path, "--manifests", MANIFESTS)
    before = graphs(store)
    again = ioa(["trace", "reaudit", store, "--manifests", MANIFESTS, "--format", "json"],
                tmp_path)
    assert again.returncode == fed.returncode == 3
    assert _judgments(again) == _judgments(fed)
    assert graphs(store) == before


# --- the history queries ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["private", "plain"])
def test_each_shipped_query_against_an_independent_computation(tmp_path: Path,
                                                               mode: str) -> None:
    """On a private store the runs and the manifests' folders are named by their references
    (every agent is declared, so named), and verdict_changes takes the runs' own ids."""
    specs = trace_runs.generate(40)
    runs = [trace_runs.write_run(tmp_path / "runs", spec) for spec in specs]
    first = trace_runs.write_manifests(tmp_path / "rev1")
    declared2 = {**trace_runs.DECLARED, "booker": ("reserve", "cancel", "pay")}
    second = trace_runs.write_manifests(tmp_path / "rev2", declared2)
    store = tmp_path / "store"
    fed = feed(runs, store, tmp_path, "--manifests", first, *([PLAIN] if mode == "plain" else []))
    assert fed.returncode == 1, fed.stderr
    assert ioa(["trace", "reaudit", store, "--manifests", second, "--at", LATER],
               tmp_path).returncode == 1
    by_time = sorted(specs, key=lambda s: s.start)

    def named(kind: str, value: str) -> str:
        return ref(store, kind, value) if mode == "private" else value

    def run_id(spec: trace_runs.Spec) -> str:
        return named("run", spec.run_id)

    listed = ioa(["trace", "query", "--list"], tmp_path).stdout.decode()
    assert {line.split(":")[0].split()[0] for line in listed.splitlines()} == {
        "runs", "undeclared_uses", "violation_span", "manifest_revisions", "verdict_changes",
        "undeclared_flow"}

    assert [(r["runId"], r["result"], r["verdicts"], r["judgedBy"])
            for r in query(store, tmp_path, "runs")] == [
        (run_id(s), trace_runs.run_result(s, declared2), 2, "reaudit") for s in by_time]

    undeclared: dict[tuple[str, str], list[trace_runs.Spec]] = {}
    for spec in specs:
        for agent, tools in spec.uses.items():
            for tool in sorted(set(tools) - set(declared2[agent])):
                undeclared.setdefault((agent, tool), []).append(spec)
    assert len(undeclared) >= 4
    assert query(store, tmp_path, "undeclared_uses") == [
        {"agentId": agent, "aspect": "tools", "name": tool, "runs": len(found),
         "calls": sum(s.uses[agent].count(tool) for s in found),
         "reasonCodes": "capability.undeclared-tool"}
        for (agent, tool), found in sorted(undeclared.items())]

    spans = query(store, tmp_path, "violation_span")
    assert [(r["agentId"], r["name"], r["runs"], r["firstRun"], r["lastRun"]) for r in spans] == [
        (agent, tool, len(found), run_id(min(found, key=lambda s: s.start)),
         run_id(max(found, key=lambda s: s.start)))
        for (agent, tool), found in sorted(undeclared.items())]

    def counts(declared: dict[str, tuple[str, ...]]) -> dict[str, int]:
        results = [trace_runs.run_result(s, declared) for s in specs]
        return {v: results.count(v) for v in ("compatible", "incompatible", "indeterminate")}

    assert [(r["manifests"], r["runs"], r["compatible"], r["incompatible"], r["indeterminate"],
             r["firstAudit"]) for r in query(store, tmp_path, "manifest_revisions")] == [
        (named("file", str(folder)), 40,
         *counts(declared).values(), at)
        for folder, declared, at in ((first, trace_runs.DECLARED, AT), (second, declared2, LATER))]

    for a, b in ((by_time[0], by_time[1]), (by_time[3], by_time[17]), (by_time[5], by_time[5]),
                 (by_time[8], by_time[39])):
        results_a = trace_runs.agent_results(a, declared2)
        results_b = trace_runs.agent_results(b, declared2)
        expected = [{"runA": run_id(a), "runB": run_id(b), "agentId": agent,
                     "resultA": results_a.get(agent, "absent"),
                     "resultB": results_b.get(agent, "absent")}
                    for agent in sorted(set(results_a) | set(results_b))
                    if results_a.get(agent, "absent") != results_b.get(agent, "absent")]
        assert query(store, tmp_path, "verdict_changes", "--param", f"runA={a.run_id}",
                     "--param", f"runB={b.run_id}") == expected

    (tmp_path / "ask.rq").write_text("PREFIX ioat: <https://example.org/ioa/trace#>\n"
                                     "ASK { GRAPH ?g { ?v ioat:judgedBy \"reaudit\" } }")
    assert query(store, tmp_path, None, "--sparql", tmp_path / "ask.rq") == [{"ask": True}]
    table = ioa(["trace", "query", store, "runs", "--format", "table"], tmp_path).stdout.decode()
    assert table.splitlines()[0].split() == ["runId", "start", "result", "verdicts", "auditedAt",
                                             "judgedBy"]
    assert table.splitlines()[-1] == "(40 rows)"
    # For people, the runs' starts (Unix seconds in the store, and in JSON) as ISO-8601.
    starts = [json.loads(line)["start"] for line in ioa(
        ["trace", "query", store, "runs"], tmp_path).stdout.decode().splitlines()]
    shown = [line.split()[1] for line in table.splitlines()[2:-1]]
    assert shown == [iso_instant(start) for start in starts]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", s) for s in shown)


@pytest.mark.parametrize(("value", "shown"), [
    ("1784619197.114939", "2026-07-21T07:33:17.114939Z"),
    ("1784619197", "2026-07-21T07:33:17Z"),
    ("1784619197.500", "2026-07-21T07:33:17.5Z"),
    (1784619197, "2026-07-21T07:33:17Z"),
    ("-0.25", "1969-12-31T23:59:59.75Z"),
    ("0.000000001", "1970-01-01T00:00:00.000000001Z"),
    ("abc", None), ("NaN", None), ("Infinity", None), ("1e400", None), (True, None), (None, None),
])
def test_unix_seconds_are_shown_as_iso_8601(value: Any, shown: str | None) -> None:
    """Every digit the trace wrote is kept; what is no time is shown as it is."""
    assert iso_instant(value) == shown
