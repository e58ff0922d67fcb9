"""No file that is not ours is ever overwritten, and a tampered store is refused (issue 35, 4).

Every option that writes a file (``trace --state`` and ``--emit-kg``, ``trace --store``,
``audit --output`` and ``--state`` with its journal, ``sign --output``, ``keygen --output``)
is pointed at someone else's file, a YAML manifest and a PEM key, and at a symbolic link to
one: the installed command, run as a subprocess, exits 2 naming the path, and the file is
byte for byte what it was. The same options replace their own previous output, atomically
(no temporary file is left beside it). A stored run record changed after it was written (a
call taken out of it through pyoxigraph) makes ``trace reaudit`` refuse the store: nothing
is judged, nothing in it is rewritten.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import EXAMPLES, IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import pyoxigraph
from test_trace import GOLDEN, MANIFESTS, TRACES

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

IOAT = "https://example.org/ioa/trace#"
REGISTRATION = EXAMPLES / "registration-6.3.jsonld"
MANIFEST = b"""# the trip planner's system manifest: hand-written, no copy elsewhere
name: trip-planner
agents:
  - name: moderator
    tools: [lookup_schedule]
"""
KEY = (b"-----BEGIN PRIVATE KEY-----\n"
       b"MC4CAQAwBQYDK2VwBCIEIHXm8yU3PHaXd1GGoQBJDuwn9ILFkMJoBR7Ii1WlUbYd\n"
       b"-----END PRIVATE KEY-----\n")
VICTIMS = {"manifest": MANIFEST, "key": KEY}


def ioa(args: list[Any], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=300, check=False)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def _trace(*more: Any) -> list[Any]:
    return ["trace", GOLDEN, "--no-shapes", "--format", "json", *more]


def _audit(*more: Any) -> list[Any]:
    return ["audit", REGISTRATION, "--profile", "cs-translation", "--jobs", "1", *more]


# Each writing option, as a command line writing to the path "{}" in the test's folder.
WRITERS: dict[str, list[Any]] = {
    "trace --state": _trace("--state", "{}"),
    "trace --emit-kg": _trace("--emit-kg", "{}"),
    "trace --store": _trace("--store", "{}"),
    "audit --output": _audit("--output", "{}"),
    "audit --output --format json": _audit("--output", "{}", "--format", "json"),
    "audit --output (resumable)": _audit("--output", "{}", "--format", "json", "--state",
                                         "new.state"),
    "audit --state": _audit("--output", "out.json", "--format", "json", "--state", "{}"),
    "sign --output": ["sign", "cs-doc-v1", "--key", "signing.pem",
                      "--created", "2026-06-01T00:00:00Z", "--output", "{}"],
    "keygen --output": ["keygen", "--output", "{}"],
}


def _line(writer: str, path: str) -> list[Any]:
    return [path if part == "{}" else part for part in WRITERS[writer]]


def _prepare(folder: Path) -> None:
    assert ioa(["keygen", "--output", "signing.pem"], folder).returncode == 0


def _name(writer: str) -> str:
    # --emit-kg takes a graph suffix; the victim is then someone's file of that name.
    return "victim.ttl" if writer == "trace --emit-kg" else "victim.yaml"


@pytest.mark.parametrize("victim", sorted(VICTIMS))
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_file_that_is_not_ours_is_refused_and_left_as_it_is(
        tmp_path: Path, writer: str, victim: str) -> None:
    _prepare(tmp_path)
    path = tmp_path / _name(writer)
    path.write_bytes(VICTIMS[victim])
    proc = ioa(_line(writer, path.name), tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr.decode())
    assert path.name.encode() in proc.stderr
    assert path.read_bytes() == VICTIMS[victim]
    assert proc.stdout == b""
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_symbolic_link_is_not_written_through(tmp_path: Path, writer: str) -> None:
    _prepare(tmp_path)
    target = tmp_path / "elsewhere" / _name(writer)
    target.parent.mkdir()
    target.write_bytes(MANIFEST)
    link = tmp_path / _name(writer)
    link.symlink_to(target)
    proc = ioa(_line(writer, link.name), tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr.decode())
    assert link.is_symlink() and target.read_bytes() == MANIFEST


def test_a_journal_path_holding_someone_elses_file_is_refused(tmp_path: Path) -> None:
    """``audit --state S`` keeps a journal at ``S.index``: a file there not a journal stays."""
    (tmp_path / "s.index").write_bytes(MANIFEST)
    proc = ioa(_audit("--output", "out.json", "--format", "json", "--state", "s"), tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()
    assert b"s.index" in proc.stderr and (tmp_path / "s.index").read_bytes() == MANIFEST
    assert not (tmp_path / "out.json").exists()


def test_a_store_folder_holding_other_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "mas.yaml").write_bytes(MANIFEST)
    proc = ioa(_trace("--store", "store"), tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()
    assert os.listdir(tmp_path / "store") == ["mas.yaml"]
    assert (tmp_path / "store" / "mas.yaml").read_bytes() == MANIFEST


# --- what is ours is replaced, atomically -------------------------------------------------------


@pytest.mark.parametrize("form", ["text", "json", "sarif", "html"])
def test_an_audit_report_is_replaced_by_the_next_one_of_any_format(
        tmp_path: Path, form: str) -> None:
    for before in ("text", "json", "sarif", "html"):
        (tmp_path / "report").unlink(missing_ok=True)
        assert ioa(_audit("--output", "report", "--format", before), tmp_path).returncode == 0
        proc = ioa(_audit("--output", "report", "--format", form), tmp_path)
        assert proc.returncode == 0, (before, proc.stderr.decode())
        alone = ioa(_audit("--format", form), tmp_path).stdout
        if form != "html":  # the page states the instant it was made
            assert (tmp_path / "report").read_bytes() == alone
    assert sorted(os.listdir(tmp_path)) == ["report"]


@pytest.mark.parametrize("suffix", [".ttl", ".nt", ".jsonld", ".json"])
def test_an_emitted_graph_is_replaced_by_the_next(tmp_path: Path, suffix: str) -> None:
    graph = tmp_path / f"kg{suffix}"
    for _ in range(2):
        proc = ioa(_trace("--emit-kg", graph.name), tmp_path)
        assert proc.returncode in (1, 3), proc.stderr.decode()
        assert b"urn:ioa-trace:" in graph.read_bytes()
    assert sorted(os.listdir(tmp_path)) == [graph.name]


def test_a_signed_artifact_is_replaced_and_an_unsigned_one_is_not(tmp_path: Path) -> None:
    _prepare(tmp_path)
    sign = ["sign", "cs-doc-v1", "--key", "signing.pem", "--created", "2026-05-01T00:00:00Z"]
    assert ioa([*sign, "--output", "signed.json"], tmp_path).returncode == 0
    assert ioa([*sign, "--output", "signed.json", "--created", "2026-06-01T00:00:00Z"],
               tmp_path).returncode == 0
    assert "2026-06-01" in json.loads((tmp_path / "signed.json").read_text())["proof"]["created"]
    unsigned = json.dumps(json.loads((tmp_path / "signed.json").read_text()) | {"proof": None})
    (tmp_path / "unsigned.json").write_text(unsigned)
    refused = ioa([*sign, "--output", "unsigned.json"], tmp_path)
    assert refused.returncode == 2 and (tmp_path / "unsigned.json").read_text() == unsigned
    assert sorted(os.listdir(tmp_path)) == ["signed.json", "signing.pem", "unsigned.json"]


def test_a_trace_state_of_ours_is_resumed(tmp_path: Path) -> None:
    first = ioa(_trace("--state", "st"), tmp_path)
    assert (tmp_path / "st").read_bytes().startswith(b'{"ioa-check-trace-state"')
    again = ioa(_trace("--state", "st"), tmp_path)
    assert again.returncode == first.returncode and again.stdout == first.stdout
    (tmp_path / "torn").write_bytes(b'{"ioa-check-tra')  # a header cut short by a kill
    assert ioa(_trace("--state", "torn"), tmp_path).stdout == first.stdout


def test_a_character_device_is_a_stream_written_into(tmp_path: Path) -> None:
    """``--output /dev/null`` (or ``/dev/stdout``, a link to one) stores nothing to lose: it
    is written into as it is, never replaced by a file of that name."""
    _prepare(tmp_path)
    assert ioa(_audit("--output", "/dev/null"), tmp_path).returncode == 0
    signed = ioa(["sign", "cs-doc-v1", "--key", "signing.pem", "--created", "2026-06-01T00:00:00Z",
                  "--output", "/dev/stdout"],
                 tmp_path)
    assert signed.returncode == 0 and b'"eddsa-jcs-2022"' in signed.stdout
    assert Path("/dev/null").is_char_device()


def test_a_graph_that_cannot_be_written_is_the_environments_exit_74(tmp_path: Path) -> None:
    proc = ioa(_trace("--emit-kg", "missing/kg.ttl"), tmp_path)
    assert proc.returncode == 74 and b"missing/kg.ttl" in proc.stderr
    assert os.listdir(tmp_path) == []


# --- a tampered store --------------------------------------------------------------------------


def _store_graphs(store: Path) -> set[tuple[str, str, str, str]]:
    opened = pyoxigraph.Store.read_only(str(store))
    quads = {(str(q.subject), str(q.predicate), str(q.object), str(q.graph_name))
             for q in opened}
    del opened
    gc.collect()
    return quads


def _take_a_call_out(store: Path) -> str:
    """The first stored run's record with its last call removed, its digest left as it was
    (what someone erasing an undeclared call from the history would do); the run's id."""
    opened = pyoxigraph.Store(str(store))
    record = pyoxigraph.NamedNode(IOAT + "runRecord")
    quad = sorted(opened.quads_for_pattern(None, record, None, None),
                  key=lambda q: str(q.graph_name))[0]
    assert isinstance(quad.object, pyoxigraph.Literal)
    value = json.loads(quad.object.value)
    assert len(value["run"]["calls"]) > 1
    value["run"]["calls"].pop()
    opened.remove(quad)
    opened.add(pyoxigraph.Quad(quad.subject, record, pyoxigraph.Literal(
        json.dumps(value, ensure_ascii=False)), quad.graph_name))
    opened.flush()
    assert isinstance(quad.graph_name, pyoxigraph.NamedNode)
    name = quad.graph_name.value.rpartition(":")[2]
    del opened
    gc.collect()
    return name


@pytest.mark.parametrize("mode", ["private", "plain"])
def test_a_changed_run_record_is_a_damaged_store_and_nothing_is_judged(
        tmp_path: Path, mode: str) -> None:
    plain = ["--store-plain-ids"] if mode == "plain" else []
    fed = ioa(_trace("--store", "s", "--manifests", MANIFESTS, *plain), tmp_path)
    assert fed.returncode in (1, 3), fed.stderr.decode()
    run = _take_a_call_out(tmp_path / "s")
    before = _store_graphs(tmp_path / "s")
    proc = ioa(["trace", "reaudit", "s", "--manifests", MANIFESTS, "--format", "json"],
               tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()
    assert run.encode() in proc.stderr and b"digest" in proc.stderr
    assert proc.stdout == b""
    assert _store_graphs(tmp_path / "s") == before
