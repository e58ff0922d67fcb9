"""``POST /v1/impact`` on ``ioa-check serve`` (issue 40, item 5), on a real server process:
an uploaded decision log, its objects and a change are judged as ``ioa-check impact
--format json`` judges them (the same lines, byte for byte); what the service refuses is a
problem document; and the service reads no file a client names (a logged profile file, a
profile's shape files, an artifact by path)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_service import HANG, Service, problem_of

from ioa_semantic import Checker
from ioa_semantic.impact import DecisionLog
from ioa_semantic.service.impacts import NOT_KEPT

from support import IOA_CHECK, ROOT

EXAMPLES = ROOT / "examples"
ENVELOPE = (EXAMPLES / "envelope-12.1.jsonld").read_bytes()
PROVIDER = str(EXAMPLES / "provider-12.1.jsonld")
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
LANGUAGES = {"sourceLang": "zh", "targetLang": "en"}
SHIPPED_PROFILE = files("ioa_semantic.data").joinpath("profiles/cs-translation.ttl").read_text()


def second_revision() -> dict[str, Any]:
    shipped = json.loads(files("ioa_semantic.data").joinpath("alignments/cs-doc-v1.json")
                         .read_text())
    return {**shipped, "revision": "2", "validUntil": "2027-12-31T00:00:00Z"}


def write_log(folder: Path, profile: str = "cs-translation") -> Path:
    """``folder/log``: a decision judged with the shipped artifact, one without languages,
    and one judged with no artifact offered."""
    log = folder / "log"
    offered = Checker(profile, capabilities=[PROVIDER], alignments=["cs-doc-v1"],
                      recorder=DecisionLog(str(log)))
    offered.check(ENVELOPE, params=LANGUAGES, at=JUNE, source="a.jsonld")
    offered.check(ENVELOPE, params={}, at=JUNE, source="b.jsonld")
    Checker(profile, capabilities=[PROVIDER], recorder=DecisionLog(str(log))).check(
        ENVELOPE, params=LANGUAGES, at=JUNE, source="c.jsonld")
    return log


def upload(log: Path, change: dict[str, Any]) -> dict[str, Any]:
    """The body of /v1/impact for the log on disk and ``change``."""
    objects = {}
    for folder, _, names in os.walk(f"{log}.objects"):
        for name in names:
            objects[name] = base64.b64encode((Path(folder) / name).read_bytes()).decode()
    return {"log": log.read_text(encoding="utf-8"), "objects": objects, "change": change}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("impact-service")
    with Service(["--profile", "cs-translation", "--max-impact-bytes", "200000"], folder,
                 folder / "stderr.log") as served:
        yield served


def post(service: Service, body: Any, **options: Any) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = options.pop("headers", {"Content-Type": "application/json"})
    return httpx.post(f"{service.url}/v1/impact", content=content, headers=headers,
                      timeout=HANG, **options)


def test_the_answer_is_what_the_command_prints(service: Service, tmp_path: Path) -> None:
    log = write_log(tmp_path)
    artifact = second_revision()
    # The command line, in the folder the service lays the request out as: the log as log,
    # the added artifact as artifact-1.json.
    (tmp_path / "artifact-1.json").write_text(json.dumps(artifact, ensure_ascii=False),
                                              encoding="utf-8")
    printed = subprocess.run([IOA_CHECK, "impact", "log", "--artifact", "artifact-1.json",
                              "--withdraw", "https://example.org/align/cs-doc-v1",
                              "--at", "2027-06-01T00:00:00Z", "--format", "json"],
                             cwd=tmp_path, capture_output=True, timeout=HANG)
    assert printed.returncode == 1, printed.stderr
    answer = post(service, upload(log, {
        "artifacts": [artifact], "withdraw": ["https://example.org/align/cs-doc-v1"],
        "at": "2027-06-01T00:00:00Z"}))
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    assert answer.content == printed.stdout
    lines = [json.loads(line) for line in answer.content.splitlines()]
    assert lines[-1]["summary"]["flipped"] >= 1
    assert all(line["log"] == "log" for line in lines[:-1])
    assert str(tmp_path) not in answer.text and "ioa-impact-" not in answer.text


def test_a_shipped_artifact_may_be_named(service: Service, tmp_path: Path) -> None:
    log = tmp_path / "log"
    Checker("cs-translation", capabilities=[PROVIDER], recorder=DecisionLog(str(log))).check(
        ENVELOPE, params=LANGUAGES, at=JUNE, source="c.jsonld")
    answer = post(service, upload(log, {"artifacts": ["cs-doc-v1"]}))
    assert answer.status_code == 200, answer.text
    flip, summary = (json.loads(line) for line in answer.content.splitlines())
    assert flip["transition"] == "indeterminate -> compatible"
    assert summary["summary"]["causes"] == {
        "artifact added: https://example.org/align/cs-doc-v1 revision 1": 1}


def test_a_logged_profile_file_is_not_read_but_a_revision_of_it_in_the_change_is(
        service: Service, tmp_path: Path) -> None:
    profile = tmp_path / "mine.ttl"
    profile.write_text(SHIPPED_PROFILE, encoding="utf-8")
    log = write_log(tmp_path, str(profile))
    # The file is on the server's disk too (one machine): still, the service does not read it.
    answer = post(service, upload(log, {"at": "2027-01-01T00:00:00Z"}))
    assert answer.status_code == 200, answer.text
    summary = json.loads(answer.content.splitlines()[-1])["summary"]
    assert summary["flipped"] == 0 and summary["rejudged"] == 0
    (why,) = summary["unjudgeable"]
    assert NOT_KEPT in why and summary["unjudgeable"][why] == 2
    # The same profile sent in the change: the decisions are judged under it.
    answer = post(service, upload(log, {"profile": SHIPPED_PROFILE, "at": "2027-01-01T00:00:00Z"}))
    assert answer.status_code == 200, answer.text
    summary = json.loads(answer.content.splitlines()[-1])["summary"]
    assert summary["unjudgeable"] == {} and summary["flipped"] == 2
    assert any("profile.ttl" in part for part in summary["change"])


@pytest.mark.parametrize(("change", "said"), [
    ({}, "name a change"),
    ({"artifacts": ["/etc/hostname"]}, "is not a shipped artifact"),
    ({"at": "2027-01-01T00:00:00"}, "change.at"),
    ({"colour": "red"}, "unknown member 'colour'"),
    ({"profile": "this is not Turtle"}, "not valid Turtle"),
    ({"profile": files("ioa_semantic.data").joinpath("profiles/legal-translation.ttl")
      .read_text()}, "names shape files"),
])
def test_a_change_the_service_does_not_take_is_a_422_problem(
        service: Service, tmp_path: Path, change: dict[str, Any], said: str) -> None:
    log = tmp_path / "log"
    log.write_text("")
    answer = post(service, upload(log, change))
    detail = problem_of(answer, 422, "bad-impact-request")["detail"]
    assert said in detail
    assert str(tmp_path) not in detail and "ioa-impact-" not in detail


def test_a_body_the_service_does_not_take_is_a_problem(service: Service, tmp_path: Path) -> None:
    log = write_log(tmp_path)
    body = upload(log, {"at": "2027-01-01T00:00:00Z"})
    digest = next(iter(body["objects"]))
    forged = {**body, "objects": {**body["objects"], digest: base64.b64encode(b"other").decode()}}
    assert "sha256" in problem_of(post(service, forged), 422, "bad-impact-request")["detail"]
    assert "not JSON" in problem_of(post(service, b"{"), 422, "bad-impact-request")["detail"]
    assert "log" in problem_of(post(service, {"change": {"at": "2027-01-01T00:00:00Z"}}), 422,
                               "bad-impact-request")["detail"]
    problem_of(post(service, body, headers={"Content-Type": "text/plain"}), 415,
               "unsupported-media-type")
    over = {**body, "log": body["log"] + " " * 200_000}
    assert problem_of(post(service, over), 413, "body-too-large")["maxBytes"] == 200_000
    problem_of(post(service, body, params={"at": "x"}), 400, "bad-query")


def test_an_object_the_log_names_and_the_body_lacks_is_counted_not_judged(
        service: Service, tmp_path: Path) -> None:
    log = write_log(tmp_path)
    body = upload(log, {"at": "2027-01-01T00:00:00Z"})
    envelope = json.loads(log.read_text().splitlines()[0])["envelope"]["sha256"]
    del body["objects"][envelope]
    answer = post(service, body)
    assert answer.status_code == 200, answer.text
    summary = json.loads(answer.content.splitlines()[-1])["summary"]
    assert summary["flipped"] == 0
    assert sum(summary["unjudgeable"].values()) == 2


def test_a_run_stops_at_its_next_flip_once_stopped(tmp_path: Path) -> None:
    """What the service does to a run past --audit-timeout: it sets the run's event, and the
    run ends at its next flip (its folder removed), having written nothing."""
    import threading

    from ioa_semantic.reporters.impact import json_lines
    from ioa_semantic.service.impacts import ImpactStopped, read_request, run

    log = write_log(tmp_path)
    asked = read_request(json.dumps(upload(log, {"at": "2027-01-01T00:00:00Z"})).encode(),
                         datetime.fromisoformat)
    stopped = threading.Event()
    answered = run(asked, json_lines, shape_timeout=10.0, stopped=stopped)
    assert json.loads(answered.splitlines()[-1])["summary"]["flipped"] == 2
    stopped.set()
    with pytest.raises(ImpactStopped):
        run(asked, json_lines, shape_timeout=10.0, stopped=stopped)


def test_a_logged_limit_above_the_services_is_judged_under_the_services(
        tmp_path: Path) -> None:
    """A client's log does not lift what a request may cost: decisions logged under the
    default --max-bytes are judged under the service's smaller one, under which their
    registration is too large to be read."""
    log = write_log(tmp_path)
    with Service(["--profile", "cs-translation", "--max-bytes", "1200"], tmp_path,
                 tmp_path / "stderr.log") as small:
        answer = post(small, upload(log, {"at": "2027-01-01T00:00:00Z"}))
    assert answer.status_code == 200, answer.text
    summary = json.loads(answer.content.splitlines()[-1])["summary"]
    assert summary["flipped"] == 0
    (why,) = summary["unjudgeable"]
    assert "json.too-large" in why and "over the limit of 1200" in why
