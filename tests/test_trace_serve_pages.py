"""``trace serve``'s pages for people (issue 37, item 5): ``GET /runs`` lists the judged
runs, ``GET /runs/{run}`` draws a run's report (the page of ``trace --format html``) from
the store, read while the judge may hold it.

The service runs as a process and the real OpenTelemetry SDK's OTLP/HTTP exporter feeds it
(as in test_trace_serve.py); the pages are fetched over loopback. A private store (the
default) shows its references only: the trace's own id is neither shown nor taken.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                    reason="the OTLP/HTTP exporter is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")

import httpx
from test_trace_formats import write_manifests
from test_trace_html import Rows
from test_trace_otel_layouts import WEATHER, agent, chat, manifests, otlp, tool
from test_trace_serve import Service, export

import otel_agents
from support import IOA_CHECK

HOSTILE = "<script>alert(1)</script>"


def _secure(answer: httpx.Response, media: str) -> None:
    """The headers every page answers with."""
    assert answer.headers["content-type"] == media, answer.headers
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert answer.headers["x-content-type-options"] == "nosniff"


def _runs(url: str) -> list[dict[str, Any]]:
    answer = httpx.get(url + "/runs?format=json", timeout=60)
    assert answer.status_code == 200, answer.text
    rows: list[dict[str, Any]] = answer.json()["runs"]
    return rows


@pytest.fixture
def service(tmp_path: Path) -> Any:
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False))
    yield running
    if running.process.poll() is None:
        running.kill()


def test_the_judged_run_is_listed_and_drawn_with_its_undeclared_use_marked(
        service: Service) -> None:
    assert _runs(service.url) == []  # no store yet: an empty list, not an error
    export(service.url)
    service.judged()
    (listed,) = _runs(service.url)
    assert listed["verdict"] == "incompatible" and listed["verdicts"] == 1, listed
    # A private store's reference, never the trace's own id.
    assert listed["run"].startswith("run-") and listed["href"] == "/runs/" + listed["run"]
    # As HTML (a browser's Accept), with a link to the run's page.
    answer = httpx.get(service.url + "/runs", timeout=60,
                       headers={"accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert answer.status_code == 200
    _secure(answer, "text/html; charset=utf-8")
    assert f'href="{listed["href"]}"' in answer.text and "incompatible" in answer.text
    # Asked for JSON by Accept alone.
    assert httpx.get(service.url + "/runs", timeout=60, headers={
        "accept": "application/json"}).json()["runs"] == [listed]

    answer = httpx.get(service.url + listed["href"], timeout=60)
    assert answer.status_code == 200, answer.text
    _secure(answer, "text/html; charset=utf-8")
    rows = Rows()
    rows.feed(answer.text)
    assert rows.scripts == 0 and len(rows.rows) >= 5
    undeclared = [text for classes, text in rows.rows if "undeclared" in classes]
    assert undeclared and all("issue_refund" in text for text in undeclared), rows.rows
    assert 'class="verdict incompatible"' in answer.text
    assert "capability.undeclared-tool" in answer.text  # the current verdict's reasons
    assert otel_agents.TRACE_HEX not in answer.text
    # The trace's own id is not a name the store holds.
    assert httpx.get(service.url + "/runs/" + otel_agents.TRACE_HEX,
                     timeout=60).status_code == 404
    service.stop()


def test_hostile_names_and_requests(tmp_path: Path) -> None:
    root = agent(WEATHER, 0, 50, chat("gpt-4o-mini", 1, 10), tool(HOSTILE, 11, 20))
    declared = manifests(tmp_path, {WEATHER: []}, {WEATHER: "gpt-4o-mini"}, {}, entry=WEATHER)
    running = Service(tmp_path / "spool", tmp_path / "store", declared)
    try:
        answer = httpx.post(running.url + "/v1/traces", content=otlp(root).encode(),
                            headers={"content-type": "application/json"}, timeout=60)
        assert answer.status_code == 200, answer.text
        running.judged()
        (listed,) = _runs(running.url)
        page = httpx.get(running.url + listed["href"], timeout=60).text
        # Autoescaped: the tool's name is text, never an element.
        assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        rows = Rows()
        rows.feed(page)
        assert rows.scripts == 0
        assert any("undeclared" in classes and "<script>" in text for classes, text in rows.rows)

        def status(path: str) -> int:
            return httpx.get(running.url + path, timeout=60).status_code

        assert status("/runs/run-" + "0" * 20) == 404  # well formed, not held
        assert status("/runs/..%2F..%2Fetc%2Fpasswd") == 404
        assert status("/runs/%2e%2e/%2e%2e/spool") == 404
        assert status("/runs/" + "a" * 5000) == 404
        assert status("/runs?page=" + "9" * 8000) == 414
        assert status("/runs?page=abc") == 400 and status("/runs?page=0") == 400
        assert status("/runs?format=xml") == 400
        assert status("/runs?page=2") == 200  # past the last page: an empty page
        answer = httpx.get(running.url + "/runs/run-" + "0" * 20, timeout=60)
        _secure(answer, "application/problem+json")
    finally:
        running.stop()


def test_a_browser_follows_the_list_to_the_run_and_runs_nothing(tmp_path: Path,
                                                                 browser: Any) -> None:
    """Headless Chromium: /runs links to the run's page, which draws the hostile tool's
    name as text, marked undeclared, and logs no error (a Content-Security-Policy refusal
    would be one)."""
    from selenium.webdriver.common.by import By

    root = agent(WEATHER, 0, 50, chat("gpt-4o-mini", 1, 10), tool(HOSTILE, 11, 20))
    declared = manifests(tmp_path, {WEATHER: []}, {WEATHER: "gpt-4o-mini"}, {}, entry=WEATHER)
    running = Service(tmp_path / "spool", tmp_path / "store", declared)
    try:
        httpx.post(running.url + "/v1/traces", content=otlp(root).encode(),
                   headers={"content-type": "application/json"}, timeout=60)
        running.judged()
        driver = browser.open(running.url + "/runs")
        (link,) = driver.find_elements(By.CSS_SELECTOR, "table.runs a")
        link.click()
        undeclared = driver.find_elements(By.CSS_SELECTOR, "tr.call.undeclared td.name")
        assert undeclared and HOSTILE in undeclared[0].text
        assert driver.find_elements(By.TAG_NAME, "script") == []
        browser.screenshot("run-page")
        assert browser.console_errors() == []
    finally:
        running.stop()


def test_the_store_is_read_while_a_writer_holds_it_and_snapshots_are_reused(
        tmp_path: Path) -> None:
    """The judge holds the store's lock while it judges: the pages read it meanwhile
    (read-only, no lock), and open it again only when the judge's rounds move."""
    from ioa_semantic.trace.browse import Reader, rebuilt
    from ioa_semantic.trace.store import TraceStore

    # Seven calls of the undeclared tool: more than a verdict node links (five), all marked.
    root = agent(WEATHER, 0, 100, chat("gpt-4o-mini", 1, 10),
                 *(tool("forecast", 11 + 10 * n, 20 + 10 * n) for n in range(7)))
    trace = tmp_path / "run.jsonl"
    trace.write_text(otlp(root))
    declared = manifests(tmp_path, {WEATHER: []}, {WEATHER: "gpt-4o-mini"}, {}, entry=WEATHER)
    store = tmp_path / "store"
    proc = subprocess.run([IOA_CHECK, "trace", str(trace), "--manifests", str(declared),
                           "--store", str(store), "--no-shapes", "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    rounds = [0]
    reader = Reader(str(store), generation=lambda: rounds[0], max_age=3600)
    writer = TraceStore(str(store))  # holds the lock, as the judge does
    try:
        for _ in range(5):
            (summary,), more = reader.latest(10)
            assert not more and summary.verdict == "incompatible"
        assert reader.opened == 1
        stored = reader.run(summary.run)
        assert stored is not None and reader.run("no-such-run") is None
        page = rebuilt(stored)
        (weather,) = page.audit.agents
        marked = {use.name: (str(use.verdict), len(use.calls)) for use in weather.uses}
        assert marked["forecast"] == ("incompatible", 7), marked
        assert reader.opened == 1
        from ioa_semantic.reporters.trace_html import calls_view

        rows, _ = calls_view(page.audit, page.disclose)
        assert [row["mark"] for row in rows if row["cls"] == "tool"] == ["undeclared"] * 7
        rounds[0] += 1  # a judging round ended: the next read opens a new snapshot
        reader.latest(10)
        assert reader.opened == 2
    finally:
        del writer
    assert json.loads(proc.stdout.splitlines()[-1])["summary"]["verdict"] == "incompatible"


def test_the_store_is_read_between_judging_rounds_only(tmp_path: Path) -> None:
    """A snapshot read while the judging process writes the store is not safe (its
    compactions delete files the snapshot names: a count over them grew without bound):
    no page reads it while a round is in flight, and a round waits for the reads begun.
    Told by what is held, never by how long anything took."""
    import threading

    from ioa_semantic.trace.browse import BrowseError, Quiet, Reader

    trace = tmp_path / "run.jsonl"
    trace.write_text(otlp(agent(WEATHER, 0, 100, chat("gpt-4o-mini", 1, 10))))
    store = tmp_path / "store"
    proc = subprocess.run([IOA_CHECK, "trace", str(trace), "--store", str(store), "--no-shapes",
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1, 3), proc.stderr
    quiet = Quiet()
    reader = Reader(str(store), quiet=quiet, wait=0.2, max_age=3600)
    assert len(reader.latest(10)[0]) == 1 and reader.opened == 1
    began, ended = threading.Event(), threading.Event()

    def judging_round() -> None:
        with quiet.writing():
            began.set()
            ended.wait(60)

    judge = threading.Thread(target=judging_round)
    judge.start()
    try:
        assert began.wait(60)
        with pytest.raises(BrowseError, match="being judged"):
            reader.latest(10)
        assert reader.opened == 1  # no snapshot opened, none read
    finally:
        ended.set()
        judge.join(60)
    assert len(reader.latest(10)[0]) == 1
    assert reader.opened == 2  # a round ended: a snapshot of after it
    # A round asked for while a read is in progress begins once the read has ended.
    began.clear()
    ended.set()
    judge = threading.Thread(target=judging_round)
    with quiet.reading(60):
        judge.start()
        assert not began.wait(0.3)
    assert began.wait(60)
    judge.join(60)
    assert quiet.generation == 2


def test_reads_are_bounded_and_a_read_given_up_on_frees_its_place(tmp_path: Path) -> None:
    """A read that hangs (a store that answers slowly) holds one place: past MAX_READS the
    answer is 503 with Retry-After at once; a request that waited read_timeout is 503 too,
    and once the read ends its place is free again (never lost to the request that left)."""
    import threading
    import time

    from starlette.applications import Starlette
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from ioa_semantic.service.runs import Renderers, RunPages
    from ioa_semantic.trace.browse import Reader, Summary

    release = threading.Event()
    entered = threading.Semaphore(0)

    class Slow(Reader):
        def latest(self, limit: int, offset: int = 0) -> tuple[list[Summary], bool]:
            entered.release()
            release.wait(120)
            return [], False

    pages = RunPages(Slow(str(tmp_path / "none")), Renderers(lambda *a: "", lambda r: ""),
                     read_timeout=0.2, max_reads=1, retry_after=7)
    app = Starlette(routes=[Route("/runs", pages.runs)])
    with TestClient(app) as client:
        waited = client.get("/runs?format=json")
        assert waited.status_code == 503 and "within" in waited.text
        assert entered.acquire(timeout=60)  # the read is still running, holding its place
        busy = client.get("/runs?format=json")
        assert busy.status_code == 503 and busy.headers["retry-after"] == "7"
        assert "as many pages" in busy.text
        release.set()
        deadline = time.monotonic() + 60
        while (answer := client.get("/runs?format=json")).status_code != 200:
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.05)
        assert answer.json()["runs"] == []
