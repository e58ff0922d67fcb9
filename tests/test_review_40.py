"""A hostile review of issue 40's surfaces (review40): the decision log as a writer meets the
user's files and a full disk, the log and its objects folder as an attacker may leave them,
and ``POST /v1/impact`` as a client may call it. Each test drives the installed command, or
the service as a real process, or the library where only it can stage the fault.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker
from ioa_semantic.impact import DecisionLog, read_log
from ioa_semantic.impact.log import Logged, object_path

from support import IOA_CHECK, PEAK_PROBE, ROOT

EXAMPLES = ROOT / "examples"
ENVELOPE = (EXAMPLES / "envelope-12.1.jsonld").read_bytes()
# Another envelope, judged otherwise (incompatible: outside the profile's domains).
OTHER = (EXAMPLES / "legal-contract.jsonld").read_bytes()
PROVIDER = str(EXAMPLES / "provider-12.1.jsonld")
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
LANGUAGES = {"sourceLang": "zh", "targetLang": "en"}
# Past the shipped artifact's validUntil: the logged decision flips when judged again.
LATER = "2027-06-01T00:00:00Z"
HANG = 120.0  # a liveness deadline only: a run that hangs fails instead of blocking


def write_log(folder: Path) -> Path:
    """``folder/log``: one compatible decision, with the shipped artifact offered."""
    log = folder / "log"
    Checker("cs-translation", capabilities=[PROVIDER], alignments=["cs-doc-v1"],
            recorder=DecisionLog(str(log))).check(ENVELOPE, params=LANGUAGES, at=JUNE,
                                                  source="a.jsonld")
    return log


def envelope_object(log: Path) -> Path:
    (entry,) = [e for e in read_log(str(log)) if isinstance(e, Logged)]
    return Path(object_path(str(log), entry.entry["envelope"]["sha256"]))


def impact(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, "impact", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=HANG, env={**os.environ, "NO_COLOR": "1"})


def summary_of(output: str) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads(output.splitlines()[-1])["summary"]
    return summary


# --- the objects folder: a name is not a proof (high) ------------------------------------------

def test_an_object_whose_bytes_do_not_have_its_sha256_is_not_judged(tmp_path: Path) -> None:
    """The envelope kept under the logged digest replaced by another: judging those bytes
    reported a flip (compatible -> incompatible, "caused by" the instant) of a decision that
    was never made. The object is refused and the decision counted as not judged again."""
    log = write_log(tmp_path)
    envelope_object(log).write_bytes(OTHER)
    done = impact("log", "--at", LATER, "--format", "json", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    summary = summary_of(done.stdout)
    assert summary["flipped"] == 0 and summary["rejudged"] == 0
    (why,) = summary["unjudgeable"]
    assert "sha256" in why


def test_a_large_file_under_an_object_s_name_is_refused_without_being_held(
        tmp_path: Path) -> None:
    """What stands under an object's name may be any size (a file swapped in); it was read
    whole before its sha256 was compared. Its digest is now taken as it is read, and only
    bytes of the logged sha256 are held: a 512 MiB file (sparse, so the disk holds none of
    it) is refused within a fraction of its size."""
    log = write_log(tmp_path)
    kept = envelope_object(log)
    with open(kept, "r+b") as swapped:
        swapped.truncate(512 << 20)
    probe = subprocess.run([sys.executable, "-c", PEAK_PROBE, IOA_CHECK, "impact", "log",
                            "--at", LATER, "--format", "json"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=HANG)
    peak_kib = probe.stdout.split()[0]
    assert int(peak_kib) < 256 << 10, probe.stdout  # KiB: half the file's size
    done = impact("log", "--at", LATER, "--format", "json", cwd=tmp_path)
    (why,) = summary_of(done.stdout)["unjudgeable"]
    assert "sha256" in why and done.returncode == 3


def test_a_link_out_of_the_objects_folder_is_not_followed(tmp_path: Path) -> None:
    """A symbolic link under an object's name is not followed, whatever it points at (here
    the right bytes, elsewhere: the folder holds objects, not pointers to the user's files)."""
    log = write_log(tmp_path)
    kept = envelope_object(log)
    outside = tmp_path / "elsewhere.jsonld"
    outside.write_bytes(kept.read_bytes())
    kept.unlink()
    kept.symlink_to(outside)
    done = impact("log", "--at", LATER, "--format", "json", cwd=tmp_path)
    summary = summary_of(done.stdout)
    assert summary["flipped"] == 0
    (why,) = summary["unjudgeable"]
    assert "symbolic link" in why


def test_a_named_pipe_under_an_objects_name_does_not_hang_the_run(tmp_path: Path) -> None:
    log = write_log(tmp_path)
    kept = envelope_object(log)
    kept.unlink()
    os.mkfifo(kept)
    done = impact("log", "--at", LATER, "--format", "json", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    (why,) = summary_of(done.stdout)["unjudgeable"]
    assert "not a file" in why


@pytest.mark.parametrize("segment", ["log", "log.1"])
def test_a_named_pipe_under_a_log_s_name_is_refused_not_waited_on(
        tmp_path: Path, segment: str) -> None:
    # The log's segments are found by their names in its folder: a named pipe there held the
    # run for good, as one under an object's name did (the writer refuses one as its path).
    write_log(tmp_path)
    if segment == "log":
        (tmp_path / "log").unlink()
    os.mkfifo(tmp_path / segment)
    done = impact("log", "--at", LATER, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert f"{segment}: the decision log cannot be read: not a file" in done.stderr


# --- the exit status: "nothing flips" only when it is established (medium) -------------------

def test_nothing_flips_is_exit_0_only_when_every_decision_was_read_and_judged(
        tmp_path: Path) -> None:
    """A log damaged after its first line (the rest not read) answered exit 0, "nothing
    flips", to a gate that publishes on 0: the unread decisions may flip. Exit 3 says it is
    not established (as an indeterminate verdict does), and a clean run is still 0."""
    log = write_log(tmp_path)
    same_side = ("log", "--at", "2026-07-01T00:00:00Z", "--format", "json")
    assert impact(*same_side, cwd=tmp_path).returncode == 0
    with log.open("ab") as handle:
        handle.write(b"\x00 a line no decision log holds\n")
    done = impact(*same_side, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    summary = summary_of(done.stdout)
    assert summary["flipped"] == 0 and summary["warnings"]


# --- the writer and the user's files (high, medium) ----------------------------------------------

def check_logged(log: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [IOA_CHECK, str(EXAMPLES / "envelope-12.1.jsonld"), "--profile", "cs-translation",
         "--at", "2026-06-01T00:00:00Z", "--format", "json", "--log", log],
        cwd=cwd, capture_output=True, text=True, timeout=HANG)


def test_check_log_never_appends_to_a_file_that_is_not_a_decision_log(tmp_path: Path) -> None:
    """``--log`` given the envelope's own name (or any file of the user's): a decision line was
    appended to it, and rotation would have renamed it. It is refused (exit 2), untouched."""
    mine = tmp_path / "notes.json"
    mine.write_bytes(b'{"mine": true}\n')
    done = check_logged(str(mine), tmp_path)
    assert done.returncode == 2, done.stderr
    assert "is not a decision log" in done.stderr and "Traceback" not in done.stderr
    assert mine.read_bytes() == b'{"mine": true}\n'
    assert not Path(f"{mine}.objects").exists()


def test_check_log_does_not_write_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses"
    target.write_bytes(b"")
    (tmp_path / "link").symlink_to(target)
    done = check_logged("link", tmp_path)
    assert done.returncode == 2 and "symbolic link" in done.stderr
    assert target.read_bytes() == b""


def test_check_log_appends_to_its_own_log(tmp_path: Path) -> None:
    for _ in range(2):
        assert check_logged("log", tmp_path).returncode == 0
    assert [type(e) for e in read_log(str(tmp_path / "log"))] == [Logged, Logged]


# A Checker logs a decision, the file size limit (a full disk, as the process sees it) makes
# the next append fail half way, and once it is lifted a third decision is logged.
_FULL_DISK = """
import resource, signal, sys
from datetime import UTC, datetime
from ioa_semantic import Checker
from ioa_semantic._exceptions import WriteFailed
from ioa_semantic.impact import DecisionLog
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
log, envelope = sys.argv[1], open(sys.argv[2], "rb").read()
checker = Checker("cs-translation", recorder=DecisionLog(log))
june = datetime(2026, 6, 1, tzinfo=UTC)
checker.check(envelope, params={"sourceLang": "zh"}, at=june)
size = open(log, "rb").seek(0, 2)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 300, resource.RLIM_INFINITY))
try:
    checker.check(envelope, params={"sourceLang": "en"}, at=june)
except WriteFailed:
    print("write failed")
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
checker.check(envelope, params={"sourceLang": "de"}, at=june)
"""


def test_a_write_that_fails_half_way_leaves_no_torn_line(tmp_path: Path) -> None:
    """A full disk cut a line: the reader stopped there, and every decision logged after the
    disk had room again was lost to impact. The torn part is cut back off."""
    log = tmp_path / "log"
    done = subprocess.run([sys.executable, "-c", _FULL_DISK, str(log),
                           str(EXAMPLES / "envelope-12.1.jsonld")],
                          capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "write failed\n"
    read = list(read_log(str(log)))
    assert all(isinstance(e, Logged) for e in read), read
    assert [e.entry["params"]["sourceLang"] for e in read if isinstance(e, Logged)] == [
        "zh", "de"]


# --- a line's members of the wrong kind (medium) ---------------------------------------------

def _set(path: tuple[str, ...], value: Any) -> Any:
    def change(entry: dict[str, Any]) -> None:
        *parents, last = path
        for name in parents:
            entry = entry[name]
        entry[last] = value
    return change


@pytest.mark.parametrize(("member", "value"), [
    (("envelope", "source"), ["a.jsonld"]),
    (("configuration", "limits", "max_bytes"), "10"),
    (("configuration", "limits", "max_bytes"), float("nan")),
    (("configuration", "capabilities", 0, "origin"), [1]),
    (("configuration", "alignments", 0, "artifactId"), {"x": 1}),
    (("configuration", "shapeTimeout"), float("nan")),
], ids=["source", "limit-string", "limit-nan", "origin", "artifact-id", "timeout-nan"])
@pytest.mark.parametrize("format_", ["text", "html"])
def test_a_member_of_the_wrong_kind_is_damage_not_a_traceback(
        tmp_path: Path, member: tuple[Any, ...], value: Any, format_: str) -> None:
    """Such lines ended in a traceback (exit 70), or were judged under no limit at all (a
    NaN ``max_bytes`` compares false with every size)."""
    log = write_log(tmp_path)
    entry = json.loads(log.read_text())
    _set(member, value)(entry)
    log.write_text(json.dumps(entry) + "\n")
    done = impact("log", "--at", LATER, "--format", format_, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "line 1: a member is missing or of the wrong kind" in done.stderr


# --- POST /v1/impact ----------------------------------------------------------------------

def upload(log: Path, change: dict[str, Any], edit: Any = None) -> dict[str, Any]:
    objects = {}
    for folder, _, names in os.walk(f"{log}.objects"):
        for name in names:
            objects[name] = base64.b64encode((Path(folder) / name).read_bytes()).decode()
    lines = log.read_text(encoding="utf-8")
    if edit is not None:
        entry = json.loads(lines)
        edit(entry)
        lines = json.dumps(entry) + "\n"
    return {"log": lines, "objects": objects, "change": change}


def test_a_limit_the_log_omits_or_writes_as_no_number_is_the_services(tmp_path: Path) -> None:
    """The service holds a logged limit above its own to its own, but a limit the line leaves
    out was judged under the library's default, and a NaN one under none (NaN > ceiling is
    false): either way a client's log lifted ``--max-bytes``. Under the service's 1200 bytes
    the logged registration is too large to be read, whatever the line says."""
    pytest.importorskip("uvicorn")
    import httpx
    from test_service import Service

    log = write_log(tmp_path)
    edits = {"omitted": lambda e: e["configuration"].pop("limits"),
             "max-bytes-omitted": lambda e: e["configuration"]["limits"].pop("max_bytes"),
             "nan": _set(("configuration", "limits", "max_bytes"), float("nan"))}
    with Service(["--profile", "cs-translation", "--max-bytes", "1200"], tmp_path,
                 tmp_path / "stderr.log") as small:
        for name, edit in edits.items():
            answer = httpx.post(f"{small.url}/v1/impact", timeout=HANG,
                                content=json.dumps(upload(log, {"at": LATER}, edit)).encode(),
                                headers={"Content-Type": "application/json"})
            assert answer.status_code == 200, (name, answer.text)
            summary = json.loads(answer.content.splitlines()[-1])["summary"]
            assert summary["flipped"] == 0, name
            (why,) = summary["unjudgeable"]
            assert "json.too-large" in why, (name, why)


def test_a_stopped_run_ends_at_the_next_decision_even_when_nothing_flips(
        tmp_path: Path) -> None:
    """Past --audit-timeout the service answers 503 and sets the run's event; the run looked
    at it only at a flip, so a log whose decisions flip nothing was judged to its end on the
    audit's thread (holding one of --audits) after the answer. It stops at the next decision."""
    from ioa_semantic.reporters.impact import json_lines
    from ioa_semantic.service.impacts import ImpactStopped, read_request, run

    log = write_log(tmp_path)
    # The same instant's side of every limit: read, then skipped; nothing flips.
    asked = read_request(json.dumps(upload(log, {"at": "2026-07-01T00:00:00Z"})).encode(),
                         datetime.fromisoformat)
    stopped = threading.Event()
    answered = run(asked, json_lines, shape_timeout=10.0, stopped=stopped)
    assert json.loads(answered.splitlines()[-1])["summary"]["decisions"] == 1
    stopped.set()
    with pytest.raises(ImpactStopped):
        run(asked, json_lines, shape_timeout=10.0, stopped=stopped)



# --- scale: a profile revision compared once, not once a decision (medium) -------------------

def test_two_revisions_of_a_profile_are_compared_once_for_a_whole_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a revision differs only in what no decision reads (its revision number, its
    trust) compares the two graphs, some 20 ms for the shipped profile: it ran for every
    logged decision, five hours of a million-decision log before anything was judged."""
    from importlib.resources import files

    from ioa_semantic.impact import Change, Impact
    from ioa_semantic.impact import change as change_module

    log = tmp_path / "log"
    checker = Checker("cs-translation", capabilities=[PROVIDER], alignments=["cs-doc-v1"],
                      recorder=DecisionLog(str(log)))
    for language in ("zh", "de", "fr", "es"):
        checker.check(ENVELOPE, params={**LANGUAGES, "sourceLang": language}, at=JUNE)
    shipped = files("ioa_semantic.data").joinpath("profiles/cs-translation.ttl").read_text()
    revised = tmp_path / "revision-2.ttl"
    revised.write_text(shipped.replace('iop:revision "1"', 'iop:revision "2"'))
    compared: list[str] = []
    original = change_module.differences_of

    def counted(before: Any, after: Any) -> str:
        compared.append(before.source)
        return original(before, after)

    monkeypatch.setattr(change_module, "differences_of", counted)
    run = Impact([str(log)], Change(profile=str(revised)))
    assert list(run) == []
    assert run.summary is not None and run.summary.decisions == 4
    assert run.summary.skipped == {
        "the profile differs only in what no decision reads (its revision)": 4}
    assert len(compared) == 1, compared


# --- a line without end (low) ----------------------------------------------------------------

def test_a_line_longer_than_the_readers_limit_is_damage_not_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file without line ends (gigabytes of it) was read into memory whole as one line."""
    from ioa_semantic.impact import log as log_module

    log = write_log(tmp_path)
    with log.open("ab") as handle:
        handle.write(b"x" * 5000 + b"\n")
    monkeypatch.setattr(log_module, "LINE_LIMIT", 4096)
    (first, damage) = read_log(str(log))
    assert isinstance(first, Logged)
    assert damage == log_module.Damage(str(log), 2, "a line longer than 4096 bytes")


# --- a Checker's configuration is its own (high) -------------------------------------------

def test_each_checker_sharing_a_log_is_logged_with_its_own_configuration(
        tmp_path: Path) -> None:
    """The log kept each Checker's configuration by id(): a Checker collected leaves its id
    to the next one made (CPython reuses the memory at once), whose decisions were then logged
    as the first one's, with its artifacts and its Checker identifier, and judged again so.
    A gate that builds a Checker per request and shares one log did exactly this."""
    log = DecisionLog(str(tmp_path / "log"))
    offered = [("cs-doc-v1",), ()] * 4
    for alignments in offered:
        checker = Checker("cs-translation", capabilities=[PROVIDER], alignments=alignments,
                          recorder=log)
        checker.check(ENVELOPE, params=LANGUAGES, at=JUNE)
        del checker
    lines = [e.entry for e in read_log(str(tmp_path / "log")) if isinstance(e, Logged)]
    assert [len(e["configuration"]["alignments"]) for e in lines] == [
        len(a) for a in offered]
    assert len({e["checker"] for e in lines}) == len(offered)


# --- a body's member twice (low) ------------------------------------------------------------

@pytest.mark.parametrize("body", [
    b'{"log": "", "change": {"at": "2027-01-01T00:00:00Z"}, "change": {"withdraw": ["x"]}}',
    b'{"log": "", "change": {"artifacts": [{"artifactId": "a", "artifactId": "b"}]}}',
], ids=["change", "inside-an-artifact"])
def test_a_member_twice_in_an_impact_body_is_refused(body: bytes) -> None:
    """The last of two members was taken (a proxy that reads the first sees another
    request), and an artifact's duplicate was lost when it was written out for the run."""
    from ioa_semantic.service.impacts import ImpactRefused, read_request

    with pytest.raises(ImpactRefused, match="twice in one object"):
        read_request(body, datetime.fromisoformat)


# --- a profile revision whose blank nodes are a bomb (high, on the service) ------------------

def test_a_revision_with_statements_the_profile_lacks_is_other_without_labelling_its_blank_nodes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A revision of the shipped profile, to /v1/impact, with two cycles of forty blank nodes
    in a foreign vocabulary (what the loader reads of it unchanged): the graphs were compared
    by canonical labelling, minutes (exponential in the cycles' length) on an audit's thread
    that the time bound does not stop. Statements the profile lacks decide it unlabelled."""
    from importlib.resources import files

    import rdflib.compare

    from ioa_semantic.impact.change import profile_difference
    from ioa_semantic.sources.loader import load_profile

    def labelled(*graphs: Any) -> bool:
        raise AssertionError("the blank nodes were labelled")

    monkeypatch.setattr(rdflib.compare, "isomorphic", labelled)
    cycles = "\n".join(f"_:{name}{i} <https://example.com/x#next> _:{name}{(i + 1) % 40} ."
                       for name in "ab" for i in range(40))
    shipped = files("ioa_semantic.data").joinpath("profiles/cs-translation.ttl").read_text()
    revised = tmp_path / "revision-2.ttl"
    revised.write_text(shipped.replace('iop:revision "1"', 'iop:revision "2"') + "\n" + cycles)
    assert profile_difference(load_profile("cs-translation"), load_profile(str(revised))) == (
        "other")


def test_a_stopped_run_does_not_go_on_judging_a_flips_causes_part_by_part(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decision that flips under a change of several parts is judged again once per part to
    find its causes (a thousand judgements for a thousand artifacts added): a run stopped
    meanwhile went on with all of them. Here the event is set as the first judgement is
    compared; the run ends before the causes are judged."""
    from ioa_semantic.impact import rejudge
    from ioa_semantic.reporters.impact import json_lines
    from ioa_semantic.service.impacts import ImpactStopped, read_request, run

    log = write_log(tmp_path)
    # Both parts flip the decision: the artifact expires, and it is withdrawn.
    asked = read_request(json.dumps(upload(log, {
        "at": LATER, "withdraw": ["https://example.org/align/cs-doc-v1"]})).encode(),
        datetime.fromisoformat)
    stopped = threading.Event()
    compare = rejudge.compared

    def compared(item: Any, after: Any) -> Any:
        stopped.set()
        return compare(item, after)

    monkeypatch.setattr(rejudge, "compared", compared)
    with pytest.raises(ImpactStopped):
        run(asked, json_lines, shape_timeout=10.0, stopped=stopped)


@pytest.mark.parametrize("change", [
    b'{"profile": "@prefix x: <https://example.com/> . x:a x:b \\"\\ud800\\" ."}',
    b'{"artifacts": [{"artifactId": "https://example.com/\\udfff"}]}',
], ids=["profile", "artifact"])
def test_a_lone_surrogate_in_the_change_is_a_422_problem_not_a_500(
        tmp_path: Path, change: bytes) -> None:
    """JSON may escape half a surrogate pair; writing the profile or the artifact out as UTF-8
    for the run raised UnicodeEncodeError, answered 500 (internal error)."""
    pytest.importorskip("uvicorn")
    import httpx
    from test_service import Service, problem_of

    with Service(["--profile", "cs-translation"], tmp_path, tmp_path / "stderr.log") as served:
        answer = httpx.post(f"{served.url}/v1/impact", timeout=HANG,
                            content=b'{"log": "", "change": ' + change + b"}",
                            headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert "lone surrogate" in problem_of(answer, 422, "bad-impact-request")["detail"]


# --- the OpenAPI document says what the route refuses (low) ---------------------------------

@pytest.mark.parametrize("change", [{}, {"artifacts": []}, {"withdraw": [], "artifacts": []}])
def test_a_change_that_names_nothing_is_refused_by_the_openapi_schema_as_by_the_route(
        change: dict[str, Any]) -> None:
    """The route answers 422 to a change that names nothing; the document's ImpactRequest
    took it ("at least one of its members" in prose only)."""
    import jsonschema

    from ioa_semantic.service import openapi
    from ioa_semantic.service.impacts import ImpactRefused, read_request
    from ioa_semantic.service.limits import ServiceLimits

    body = {"log": "", "change": change}
    with pytest.raises(ImpactRefused, match="name a change"):
        read_request(json.dumps(body).encode(), datetime.fromisoformat)
    schema = openapi.document(ServiceLimits())["components"]["schemas"]["ImpactRequest"]
    assert not jsonschema.Draft202012Validator(schema).is_valid(body)
    assert jsonschema.Draft202012Validator(schema).is_valid(
        {"log": "", "change": {**change, "at": LATER}})
