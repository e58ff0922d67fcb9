"""A trace store is private by default (issue 33): stable opaque references under a key of
its own, no raw run id, user name or machine path anywhere in it.

The canonical trace ontology (seeds/agent-utilities-trace-ontology.txt, "Identity and
privacy"): "Run identifiers are converted to stable opaque references before persistence ...
durable rows contain keyed opaque references, character counts, and a redaction report,
never the free text itself ... a run id, user name, or machine path is not copied into node
ids." Everything runs through the installed command, as a user would; the store is read back
byte for byte (every file of its folder) and term for term (pyoxigraph, and ``trace query
--sparql``), since the bytes alone could pass on compressed data.
"""

from __future__ import annotations

import base64
import gc
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from support import EXAMPLES

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import pyoxigraph
from test_trace import GOLDEN, MANIFESTS, TRACES
from test_trace_store import (
    AT,
    KEY,
    LATER,
    PLAIN,
    SMOKE,
    feed,
    graphs,
    ioa,
    keyed,
    query,
    ref,
    rows,
)

from ioa_semantic.trace.privacy import Private
from ioa_semantic.trace.store import KEY_FILE, key_fingerprint, record_digest

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

OTEL = EXAMPLES / "trace" / "otel"
RUN_ID = "f52df92b"
USER = "alice-secret"
HOME_PATH = f"/home/{USER}/.mas/runs/trip-planner/20260223-232448-baseline-{RUN_ID}"
IOAT = "https://example.org/ioa/trace#"


def secret_run(root: Path) -> Path:
    """A mas-lab run folder as mas-runtime writes it, under a user's home folder: run.json
    (seeds/mas-lab-trajectory-schema.txt) with run id f52df92b and the folder it was written
    in, and the golden-extensions events with that run id, whose call ids embed agent names
    (``moderator-u1-exec``)."""
    folder = root / "home" / USER / ".mas" / "runs" / "trip-planner" / Path(HOME_PATH).name
    (folder / "traces").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "run_id": RUN_ID, "mas_id": "trip-planner", "scenario": "baseline",
        "created_at": "2026-02-23T23:24:48.694866+00:00", "folder": HOME_PATH,
        "env": {"python": "3.14.3", "platform": "macOS-26.3-arm64-arm-64bit-Mach-O",
                "packages": {"mas-runtime": "0.1.16"}, "git_commit": "d2909f0",
                "git_dirty": True},
        "prompt": "what trains go from Celestia to Verdantia?", "flavour": "local",
        "mas_yaml": "library-samples/apps/trip-planner/mas.yaml", "verbosity": 0,
        "status": "success", "duration_secs": 24.87}, indent=2))
    events = (GOLDEN / "events.jsonl").read_text()
    assert events.count('"run_id": ""') > 100
    (folder / "traces" / "events.jsonl").write_text(
        events.replace('"run_id": ""', f'"run_id": "{RUN_ID}"'))
    return folder


def _identifiers_of_events(path: Path) -> set[str]:
    out: set[str] = set()
    for line in path.read_text().splitlines():
        event = json.loads(line)
        for name, value in event.items():
            # Short ids ("call-1", "llm-3") are prefixes of references ("call-1f0...").
            if name.endswith("_id") and name != "agent_id" and isinstance(value, str) and len(
                    value) >= 12:
                out.add(value)
    return out


def _identifiers_of_otlp() -> set[str]:
    """Trace, span and parent ids (hex, and base64 as otlp.jsonl spells them), response and
    tool call ids of the example's spans."""
    out: set[str] = set()
    document = json.loads((OTEL / "otlp-collector.json").read_text())
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if span.get(name):
                        out.add(span[name])
                        out.add(base64.b64encode(bytes.fromhex(span[name])).decode())
                for attribute in span.get("attributes", []):
                    if attribute["key"] in ("gen_ai.response.id", "gen_ai.tool.call.id",
                                            "gen_ai.conversation.id"):
                        out.add(attribute["value"]["stringValue"])
    return out


def _terms(store: Path) -> list[str]:
    """Every graph name, IRI and literal the store holds, read back with pyoxigraph."""
    opened = pyoxigraph.Store(str(store))
    out = []
    for quad in opened:
        for term in (quad.graph_name, quad.subject, quad.predicate, quad.object):
            out.append(str(term.value) if hasattr(term, "value") else str(term))
    del opened
    gc.collect()
    return out


def _bytes(store: Path) -> list[tuple[Path, bytes]]:
    return [(path, path.read_bytes()) for path in sorted(store.rglob("*")) if path.is_file()]


def _secrets_in(store: Path, cwd: Path, secrets: set[str]) -> list[str]:
    """The secrets found in the store: in any file of its folder, raw bytes, recursively; in
    any term read back with pyoxigraph; in any value ``trace query --sparql`` returns."""
    found = []
    for path, data in _bytes(store):
        found += [f"{path.name}: {s}" for s in secrets if s.encode() in data]
    terms = _terms(store)
    found += [f"term: {s}" for s in secrets if any(s in t for t in terms)]
    (cwd / "all.rq").write_text("SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }")
    answer = json.dumps(query(store, cwd, None, "--sparql", cwd / "all.rq",
                              "--max-rows", "1000000"), ensure_ascii=False)
    found += [f"query: {s}" for s in secrets if s in answer]
    return found


def test_a_new_store_holds_no_run_id_user_name_or_machine_path(tmp_path: Path) -> None:
    run = secret_run(tmp_path)
    store = tmp_path / "store"
    fed = feed([run], store, tmp_path, "--manifests", MANIFESTS, "--consumer",
               f"{USER}-laptop")
    assert fed.returncode == 3, fed.stderr
    assert f'"run": "{RUN_ID}"'.encode() in fed.stdout  # the report is the user's own
    for name in ("events.jsonl", "otlp.jsonl", "otlp-collector.json"):
        proc = feed([OTEL / name], store, tmp_path, "--manifests", OTEL / "manifests")
        assert proc.returncode == 1, (name, proc.stderr)

    secrets = {RUN_ID, USER, str(run), str(tmp_path), str(MANIFESTS), str(OTEL),
               "What is 2+2", "Celestia", "Zürich"}
    secrets |= _identifiers_of_events(run / "traces" / "events.jsonl")
    secrets |= _identifiers_of_events(OTEL / "events.jsonl") | _identifiers_of_otlp()
    assert {"moderator-u1-exec", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba9020b",
            "chatcmpl-rail-0001"} <= secrets
    assert _secrets_in(store, tmp_path, secrets) == []
    # What the store keeps readable: declared agents, tools and models, and the references.
    terms = set(_terms(store))
    assert {"schedule_agent", "lookup_schedule", "booking_agent", "issue_refund",
            "gpt-4o"} <= terms
    assert ref(store, "run", RUN_ID) in terms

    # The shipped queries answer, and name the runs by their references.
    names = {r["runId"] for r in query(store, tmp_path, "runs")}
    assert names == {ref(store, "run", RUN_ID),
                     ref(store, "run", "4bf92f3577b34da6a3ce929d0e0e4736")}
    assert [(u["agentId"], u["name"]) for u in query(store, tmp_path, "undeclared_uses")] == [
        ("booking_agent", "issue_refund")]
    for name in ("violation_span", "manifest_revisions"):
        assert query(store, tmp_path, name)
    # A run is named by its own id: the store keys it.
    changes = query(store, tmp_path, "verdict_changes", "--param", f"runA={RUN_ID}",
                    "--param", "runB=4bf92f3577b34da6a3ce929d0e0e4736")
    assert {c["agentId"] for c in changes} == {"moderator", "schedule_agent", "front_desk",
                                               "booking_agent"}
    assert {c["runA"] for c in changes} == {ref(store, "run", RUN_ID)}

    # Reaudit needs no key of the user's, and names the run by its id.
    again = ioa(["trace", "reaudit", store, "--manifests", MANIFESTS, "--run", RUN_ID,
                 "--format", "json", "--at", LATER], tmp_path)
    assert again.returncode == 3, again.stderr
    assert [json.loads(line)["summary"]["run"] for line in again.stdout.splitlines()
            if b"summary" in line] == [ref(store, "run", RUN_ID)]
    every = ioa(["trace", "reaudit", store, "--manifests", OTEL / "manifests", "--at", LATER],
                tmp_path)
    assert every.returncode == 1, every.stderr
    assert _secrets_in(store, tmp_path, secrets) == []

    # Opted out, the store holds the run id as the trace has it.
    plain = feed([run], tmp_path / "plain", tmp_path, "--manifests", MANIFESTS, PLAIN)
    assert plain.returncode == 3
    assert RUN_ID in _terms(tmp_path / "plain")
    assert [r["runId"] for r in query(tmp_path / "plain", tmp_path, "runs")] == [RUN_ID]
    assert not (tmp_path / "plain" / KEY_FILE).exists()
    # The digests of the run's text and of its input's bytes, which the plain store holds as
    # SHA-256 (a guess of a short prompt is confirmed by its digest), are keyed in the
    # private one.
    digests = {o for g in graphs(tmp_path / "plain").values() for _, p, o in g
               if p.removeprefix(f"<{IOAT}").rstrip(">") in (
                   "inputSha256", "outputSha256", "prefixSha256")}
    assert len(digests) > 10
    assert _secrets_in(store, tmp_path, {d.strip('"') for d in digests}) == []


def test_a_new_store_makes_its_key_and_records_its_mode_and_version(tmp_path: Path) -> None:
    store = tmp_path / "deep" / "store"
    assert feed([SMOKE], store, tmp_path).returncode == 3
    key = store / KEY_FILE
    info = key.lstat()
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert len(key.read_bytes()) == 32 and key.read_bytes() != KEY
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    (tmp_path / "store.rq").write_text(
        "PREFIX ioat: <https://example.org/ioa/trace#>\n"
        "SELECT ?version ?mode WHERE { GRAPH <urn:ioa-trace:store> {\n"
        "  <urn:ioa-trace:store> ioat:storeVersion ?version ; ioat:mode ?mode } }")
    [held] = query(store, tmp_path, None, "--sparql", tmp_path / "store.rq")
    assert held == {"version": 2, "mode": f"private:{key_fingerprint(key.read_bytes())}"}
    # Each new store a key of its own.
    assert feed([SMOKE], tmp_path / "other", tmp_path).returncode == 3
    assert (tmp_path / "other" / KEY_FILE).read_bytes() != key.read_bytes()


def test_a_folder_holding_only_a_store_key_is_made_a_store_with_it(tmp_path: Path) -> None:
    """A creation cut short after the key was written leaves the key alone in the folder (or
    its partial copy, never linked): the next feed makes the store with that key."""
    store = keyed(tmp_path / "s")
    (store / f".{KEY_FILE}.partial").write_bytes(b"cut short")
    assert feed([SMOKE], store, tmp_path).returncode == 3
    assert (store / KEY_FILE).read_bytes() == KEY
    assert not (store / f".{KEY_FILE}.partial").exists()
    assert ref(store, "run", "4d9a5f525c7f0e823615") in _terms(store)


def test_the_consumer_key_is_a_reference(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert feed([SMOKE], store, tmp_path, "--consumer", "team-of-alice").returncode == 3
    assert [g for g in graphs(store) if "consumer" in g] == [
        f"<urn:ioa-trace:consumer:{ref(store, 'consumer', 'team-of-alice')}>"]
    assert not any("team-of-alice" in t for t in _terms(store))


# --- the key file, held to its rules ----------------------------------------------------------


@pytest.fixture(scope="module")
def runs_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private store fed golden-extensions against the trip-planner manifests, built once:
    each test takes a copy (:func:`_store_with_runs`)."""
    folder = tmp_path_factory.mktemp("runs-store")
    assert feed([GOLDEN], folder / "s", folder, "--manifests", MANIFESTS).returncode == 3
    return folder / "s"


@pytest.fixture(scope="module")
def plain_runs_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same, made with ``--store-plain-ids``."""
    folder = tmp_path_factory.mktemp("plain-runs-store")
    assert feed([GOLDEN], folder / "s", folder, "--manifests", MANIFESTS, PLAIN
                ).returncode == 3
    return folder / "s"


def _store_with_runs(tmp_path: Path, built: Path, name: str = "s") -> Path:
    """A copy of ``built`` of the test's own, with its key (the copy keeps the key's 0600 and
    the folder's 0700), which the test may damage or feed."""
    store = tmp_path / name
    shutil.copytree(built, store)
    return store


def _refused(args: list[Any], cwd: Path, store: Path, *words: str) -> None:
    """``args`` exit 2 with one line naming the key and each of ``words``, print nothing,
    and leave every graph of the store as it was."""
    before = graphs(store)
    proc = ioa(args, cwd)
    message = proc.stderr.decode()
    assert proc.returncode == 2, message
    assert proc.stdout == b"" and message.count("\n") == 1, message
    assert KEY_FILE in message and all(w in message for w in words), message
    assert graphs(store) == before


def _feeds(store: Path) -> list[list[Any]]:
    return [["trace", SMOKE, "--store", store, "--no-shapes", "--at", AT],
            ["trace", "reaudit", store, "--manifests", MANIFESTS],
            ["trace", "query", store, "verdict_changes", "--param", "runA=x", "--param",
             "runB=y"]]


def test_a_key_file_others_can_read_is_refused(tmp_path: Path, runs_store: Path) -> None:
    store = _store_with_runs(tmp_path, runs_store)
    key = store / KEY_FILE
    for mode in (0o644, 0o640, 0o606):
        key.chmod(mode)
        for args in _feeds(store):
            _refused(args, tmp_path, store, f"{mode:04o}", "chmod 600")
        assert stat.S_IMODE(key.stat().st_mode) == mode  # the user's file is as it was
    key.chmod(0o600)
    assert feed([SMOKE], store, tmp_path).returncode == 3


@pytest.mark.parametrize("damage", ["replaced", "removed", "truncated", "longer", "symlink",
                                    "folder"])
def test_a_damaged_key_file_is_refused_and_nothing_is_written(tmp_path: Path,
                                                              runs_store: Path,
                                                              damage: str) -> None:
    store = _store_with_runs(tmp_path, runs_store)
    key = store / KEY_FILE
    own = key.read_bytes()
    (tmp_path / "elsewhere").write_bytes(own)
    (tmp_path / "elsewhere").chmod(0o600)
    key.unlink()
    word = {"replaced": "replaced", "removed": "missing", "truncated": "truncated",
            "longer": "more than 32", "symlink": "symbolic link", "folder": "regular file"}
    if damage == "replaced":
        key.write_bytes(os.urandom(32))
    elif damage == "truncated":
        key.write_bytes(own[:31])
    elif damage == "longer":
        key.write_bytes(own + b"\n")
    elif damage == "symlink":
        key.symlink_to(tmp_path / "elsewhere")  # the store's own key, by a link
    elif damage == "folder":
        key.mkdir(mode=0o700)
    if key.is_file() and not key.is_symlink():
        key.chmod(0o600)
    for args in _feeds(store):
        _refused(args, tmp_path, store, word[damage])
    # The queries that name no run by its id read the store without the key.
    assert query(store, tmp_path, "runs")
    if key.is_dir() and not key.is_symlink():
        key.rmdir()
    else:
        key.unlink(missing_ok=True)
    key.write_bytes(own)
    key.chmod(0o600)
    assert feed([SMOKE], store, tmp_path).returncode == 3


def test_store_paths_that_are_no_store_are_refused_and_left_as_they_were(
        tmp_path: Path) -> None:
    (tmp_path / "a-file").write_bytes(b"mine")
    proc = feed([SMOKE], tmp_path / "a-file", tmp_path)
    assert proc.returncode == 2 and b"not a folder" in proc.stderr
    assert (tmp_path / "a-file").read_bytes() == b"mine"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    for more in ([], [PLAIN]):
        proc = feed([SMOKE], tmp_path / "mine", tmp_path, *more)
        assert proc.returncode == 2 and b"holds other files" in proc.stderr
        assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
    # A folder holding a key and no store was being made private: not a plain store.
    keyed(tmp_path / "k")
    proc = feed([SMOKE], tmp_path / "k", tmp_path, PLAIN)
    assert proc.returncode == 2 and b"--store-plain-ids" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == [KEY_FILE]
    # A key that others can read is refused before a store is made beside it.
    (tmp_path / "k" / KEY_FILE).chmod(0o644)
    assert feed([SMOKE], tmp_path / "k", tmp_path).returncode == 2
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == [KEY_FILE]


def test_two_modes_never_mix(tmp_path: Path, runs_store: Path, plain_runs_store: Path) -> None:
    private = _store_with_runs(tmp_path, runs_store)
    plain = _store_with_runs(tmp_path, plain_runs_store, "plain")
    for store, more, says in ((private, [PLAIN], b"without --store-plain-ids"),
                              (plain, [], b"give --store-plain-ids")):
        before = graphs(store)
        proc = feed([SMOKE], store, tmp_path, *more)
        assert proc.returncode == 2 and proc.stdout == b"" and says in proc.stderr
        assert graphs(store) == before


# --- reaudit and query on a private store --------------------------------------------------------


def test_reaudit_names_an_agent_declared_since_its_run_was_stored(tmp_path: Path) -> None:
    """The traces tutorial's example (once the README's): the smoke run's agent is no
    trip-planner agent, so the store holds it by its reference; judged again against a
    manifest that declares it, the store's own key matches it to its declaration, and the
    new verdict names it."""
    store = tmp_path / "s"
    assert feed([GOLDEN, SMOKE], store, tmp_path, "--manifests", MANIFESTS).returncode == 3
    hidden = ref(store, "agent", "qa-agent")
    assert {(u["agentId"], u["name"]) for u in query(store, tmp_path, "undeclared_uses")} == {
        (hidden, "mas"), (hidden, "calc")}
    (tmp_path / "qa-agent.yaml").write_text(
        "apiVersion: mas/v1\nkind: Agent\nmetadata:\n  name: qa-agent\nspec:\n  tools:\n"
        "    - name: calc\n")
    proc = ioa(["trace", "reaudit", store, "--manifests", "qa-agent.yaml", "--run",
                "4d9a5f525c7f0e823615", "--format", "json", "--at", LATER], tmp_path)
    assert proc.returncode == 3, proc.stderr
    summary = [json.loads(line)["summary"] for line in proc.stdout.splitlines()
               if b"summary" in line]
    assert summary[0]["agents"] == {"qa-agent": "indeterminate"}
    assert query(store, tmp_path, "undeclared_uses") == []
    # The record is as it was: references only.
    records = _records(store)
    assert len(records) == 2 and not any("qa-agent" in r for r in records)


def _records(store: Path) -> list[str]:
    opened = pyoxigraph.Store(str(store))
    out = [str(getattr(q.object, "value", "")) for q in opened.quads_for_pattern(
        None, pyoxigraph.NamedNode(IOAT + "runRecord"), None, None)]
    del opened
    gc.collect()
    return out


def test_naming_a_run_by_its_id_needs_the_key_and_a_reference_does_not(
        tmp_path: Path, runs_store: Path) -> None:
    store = _store_with_runs(tmp_path, runs_store)
    run = ref(store, "run", "7cc4f1e6780b4c6d2eb0")
    by_id = query(store, tmp_path, "verdict_changes", "--param", "runA=7cc4f1e6780b4c6d2eb0",
                  "--param", "runB=7cc4f1e6780b4c6d2eb0")
    assert by_id == []  # one run against itself: nothing changed
    (store / KEY_FILE).rename(tmp_path / "away")
    proc = ioa(["trace", "query", store, "verdict_changes", "--param",
                "runA=7cc4f1e6780b4c6d2eb0", "--param", f"runB={run}"], tmp_path)
    assert proc.returncode == 2 and b"missing" in proc.stderr
    assert query(store, tmp_path, "verdict_changes", "--param", f"runA={run}", "--param",
                 f"runB={run}") == []
    # A query of one's own declares its run parameters the same way.
    (tmp_path / "mine.rq").write_text(
        "#param run:run a run id\nPREFIX ioat: <https://example.org/ioa/trace#>\n"
        "SELECT ?run ?n WHERE { GRAPH <urn:ioa-trace:verdicts> {\n"
        "  ?v ioat:runId ?run ; ioat:sequence ?n } }")
    assert query(store, tmp_path, None, "--sparql", tmp_path / "mine.rq", "--param",
                 f"run={run}") == [{"run": run, "n": 1}]
    (tmp_path / "away").rename(store / KEY_FILE)
    assert query(store, tmp_path, None, "--sparql", tmp_path / "mine.rq", "--param",
                 "run=7cc4f1e6780b4c6d2eb0") == [{"run": run, "n": 1}]
    (tmp_path / "odd.rq").write_text("#param run:person someone\nSELECT ?run WHERE {}")
    odd = ioa(["trace", "query", store, "--sparql", tmp_path / "odd.rq", "--param", "run=x"],
              tmp_path)
    assert odd.returncode == 2 and b"kinds" in odd.stderr


# --- stores of version 1 ------------------------------------------------------------------------


def _as_version_1(store: Path, mode: str | None) -> None:
    """``store`` rewritten as an ioa-check of before private stores left it: version 1, the
    mode ``mode`` (None: a store older than the mode) in the store's graph and its records."""
    opened = pyoxigraph.Store(str(store))
    graph = pyoxigraph.NamedNode("urn:ioa-trace:store")
    for quad in list(opened.quads_for_pattern(graph, None, None, graph)):
        opened.remove(quad)
    opened.add(pyoxigraph.Quad(graph, pyoxigraph.NamedNode(IOAT + "storeVersion"),
                               pyoxigraph.Literal("1", datatype=pyoxigraph.NamedNode(
                                   "http://www.w3.org/2001/XMLSchema#integer")), graph))
    if mode is not None:
        opened.add(pyoxigraph.Quad(graph, pyoxigraph.NamedNode(IOAT + "mode"),
                                   pyoxigraph.Literal(mode), graph))
    record = pyoxigraph.NamedNode(IOAT + "runRecord")
    digest = pyoxigraph.NamedNode(IOAT + "recordSha256")
    for quad in list(opened.quads_for_pattern(None, record, None, None)):
        value = {**json.loads(str(getattr(quad.object, "value", ""))), "mode": mode or "plain"}
        opened.remove(quad)
        opened.add(pyoxigraph.Quad(quad.subject, record, pyoxigraph.Literal(json.dumps(
            value)), quad.graph_name))
        # A record is stored with the digest of what it holds, as that ioa-check wrote it.
        for held in list(opened.quads_for_pattern(quad.subject, digest, None, quad.graph_name)):
            opened.remove(held)
        opened.add(pyoxigraph.Quad(quad.subject, digest, pyoxigraph.Literal(
            record_digest(value)), quad.graph_name))
    opened.flush()
    del opened
    gc.collect()


@pytest.mark.parametrize("mode", ["plain", None])
def test_a_plain_store_of_version_1_is_fed_with_store_plain_ids_only(
        tmp_path: Path, plain_runs_store: Path, mode: str | None) -> None:
    store = _store_with_runs(tmp_path, plain_runs_store)
    _as_version_1(store, mode)
    before = graphs(store)
    refused = feed([SMOKE], store, tmp_path)
    assert refused.returncode == 2 and b"version 1" in refused.stderr
    assert b"--store-plain-ids" in refused.stderr and graphs(store) == before
    assert feed([SMOKE], store, tmp_path, PLAIN).returncode == 3
    assert [r["runId"] for r in query(store, tmp_path, "runs")] == [
        "7cc4f1e6780b4c6d2eb0", "4d9a5f525c7f0e823615"]
    assert not (store / KEY_FILE).exists()
    again = ioa(["trace", "reaudit", store, "--manifests", MANIFESTS], tmp_path)
    assert again.returncode == 3, again.stderr


def test_an_opaque_store_of_version_1_is_read_and_reaudited_under_its_key_not_fed(
        tmp_path: Path) -> None:
    """A store made with ``--opaque-ids --opaque-key K`` held what a private store made with
    K holds in its records (every agent, run and call keyed with K, as :class:`Disclosure`
    keys them): rewritten as version 1, that is such a store."""
    store = keyed(tmp_path / "s")
    assert feed([GOLDEN], store, tmp_path, "--manifests", MANIFESTS).returncode == 3
    fingerprint = key_fingerprint(KEY)
    _as_version_1(store, f"opaque:{fingerprint}")
    (store / KEY_FILE).unlink()
    (tmp_path / "k").write_bytes(KEY)
    before = graphs(store)
    for more in ([], ["--opaque-ids", "--opaque-key", "k"], [PLAIN]):
        refused = feed([SMOKE], store, tmp_path, *more)
        assert refused.returncode == 2 and b"--opaque-ids" in refused.stderr
        assert b"version 1" in refused.stderr and graphs(store) == before
    assert [r["runId"] for r in query(store, tmp_path, "runs")] == [
        ref_of(KEY, "run", "7cc4f1e6780b4c6d2eb0")]
    keyless = ioa(["trace", "reaudit", store, "--manifests", MANIFESTS], tmp_path)
    assert keyless.returncode == 2 and b"--opaque-key" in keyless.stderr
    judged = ioa(["trace", "reaudit", store, "--manifests", MANIFESTS, "--opaque-key", "k",
                  "--format", "json", "--at", LATER], tmp_path)
    assert judged.returncode == 3, judged.stderr
    [summary] = [json.loads(line)["summary"] for line in judged.stdout.splitlines()
                 if b"summary" in line]
    assert summary["agents"] == {ref_of(KEY, "agent", "moderator"): "indeterminate",
                                 ref_of(KEY, "agent", "schedule_agent"): "indeterminate"}


def ref_of(key: bytes, kind: str, value: str) -> str:
    return Private(key).keyed(kind, value)


def test_a_query_of_a_private_store_whose_key_is_away_still_answers(
        tmp_path: Path, runs_store: Path) -> None:
    """The graph needs no key to be read: a copy of the folder without its key file can be
    queried (only naming a run by its id needs the key)."""
    store = _store_with_runs(tmp_path, runs_store)
    copy = tmp_path / "copy"
    shutil.copytree(store, copy, ignore=shutil.ignore_patterns(KEY_FILE, "LOCK"))
    assert rows(ioa(["trace", "query", copy, "runs"], tmp_path))
