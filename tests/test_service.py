"""The validation service (contract 7), as a real process on loopback called with httpx.

Each server is ``ioa-check serve ... --port 0`` started as the installed command, which says
the address it bound on stderr (``listening on http://127.0.0.1:PORT``); its stderr goes to
a file, read for that line and, at the end, for the access log. Every answer is held to the
command line's own: a conformance case through ``POST /v1/check`` gives the bytes of
``ioa-check - ARGS --format json`` for the same case, an audit through ``POST /v1/audit`` the
bytes of ``ioa-check audit - --format json``. A slow check is a remote context served by a
loopback server that answers only when the test lets it (a gate), so "the others do not wait
for it" is shown by the order of events, not by a clock: the fast requests are all answered
while the slow one cannot be. Timeouts here only catch hangs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html.parser
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from ioa_semantic import data as _resources
from ioa_semantic._codes import fix_for

from retrieval_servers import LoopbackServer, Reply, _Handler
from support import AT, CONFORMANCE, EXAMPLES, IOA_CHECK, ROOT, envelope_62

sys.path.insert(0, str(ROOT / "bench"))
import traffic

# Generous bounds that only catch a hang.
START_TIMEOUT = 90.0
HANG = 120.0
LOG_LINE = re.compile(r"^(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) (\S+) (\d{3}|-) (\S+) "
                      r"(\d+\.\d) ms$")
BASELINE = _resources.read_text("contexts", "baseline.jsonld").encode()
LAW = "https://example.org/onto/law#MasterOfLaws"
needs_shared = pytest.mark.skipif(not CONFORMANCE.exists(), reason="../shared is not present")


class Service:
    """``ioa-check serve ARGS --port 0`` in ``cwd``, its stderr in ``log``."""

    def __init__(self, args: list[str], cwd: Path, log: Path) -> None:
        self.log = log
        with log.open("wb") as handle:
            self.process = subprocess.Popen(
                [IOA_CHECK, "serve", *args, "--port", "0"], cwd=cwd,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=handle,
                env={**os.environ, "NO_COLOR": "1"})
        self.url = self._bound_url()

    def _bound_url(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            found = re.search(r"listening on (http://\S+)", self.log.read_text(errors="replace"))
            if found:
                return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.process.kill()
        self.process.wait()
        raise AssertionError(f"the service did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> int:
        """SIGTERM, and the exit status once the process has ended."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(HANG)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("the service did not stop on SIGTERM") from None

    def access_lines(self) -> list[re.Match[str]]:
        return [m for line in self.log.read_text().splitlines() if (m := LOG_LINE.match(line))]

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def check(client: httpx.Client, base: str, body: bytes, params: list[tuple[str, str]] | None = None,
          content_type: str = "application/ld+json") -> httpx.Response:
    return client.post(f"{base}/v1/check", content=body, params=tuple(params or ()),
                       headers={"Content-Type": content_type}, timeout=HANG)


def problem_of(answer: httpx.Response | bytes, status: int, name: str) -> dict[str, Any]:
    """The answer's problem details (RFC 9457), held to the service's problem type ``name``
    (``""``: about:blank) and to the schema the OpenAPI document gives them: the media type,
    ``type``, ``title``, ``status``, a ``detail``, and ``error``, the same as ``detail`` (the
    member error answers had before). ``answer`` is a response, or the raw bytes of one."""
    import jsonschema

    from ioa_semantic.service import problems

    if isinstance(answer, bytes):
        head, _, content = answer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        got = int(lines[0].split()[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        media = fields.get("content-type", "")
    else:
        got, media, content = answer.status_code, answer.headers["content-type"], answer.content
    assert (got, media) == (status, "application/problem+json"), (got, media, content[:300])
    body: dict[str, Any] = json.loads(content)
    jsonschema.validate(body, problems.schema())
    kind = problems.PROBLEMS[name or str(status)]
    assert (body["type"], body["title"], body["status"]) == (kind.uri, kind.title, status), body
    assert body["detail"].strip() and body["error"] == body["detail"], body
    return body


def dumps(document: Any) -> bytes:
    return json.dumps(document).encode()


def law_envelope() -> dict[str, Any]:
    """The 12.3 envelope: the 6.2 one with LLM bound to law:MasterOfLaws."""
    document = envelope_62()
    document["profileContext"]["termBindings"][0]["sense"] = LAW
    return document


def cli(args: list[str], stdin: bytes, cwd: Path) -> bytes:
    run = subprocess.run([IOA_CHECK, *args], input=stdin, cwd=cwd, capture_output=True,
                         timeout=HANG, check=False)
    assert run.stdout, run.stderr.decode(errors="replace")[-1000:]
    return run.stdout


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The shipped profile, the default limits."""
    folder = tmp_path_factory.mktemp("plain")
    with Service(["--profile", "cs-translation"], folder, folder / "stderr.log") as service:
        yield service


# --- the conformance cases: the command line's bytes ------------------------------------------

# Options a case gives per check (query parameters), and options without a value.
_PER_CHECK = {"--param": "param", "--at": "at"}
_FLAGS = {"--allow-private-addresses"}


def _split(args: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    setup: list[str] = []
    query: list[tuple[str, str]] = []
    rest = list(args)
    while rest:
        flag = rest.pop(0)
        if flag in _FLAGS:
            setup.append(flag)
        elif flag in _PER_CHECK:
            query.append((_PER_CHECK[flag], rest.pop(0)))
        else:
            setup.extend([flag, rest.pop(0)])
    return setup, query


def _setup_key(folder: Path, setup: list[str]) -> tuple[str, ...]:
    """A setup by its arguments and the bytes of every file they name (two folders' files
    of one name may differ)."""
    key = []
    for value in setup:
        path = folder / value
        key.append(f"{value}#{hashlib.sha256(path.read_bytes()).hexdigest()}"
                   if path.is_file() else value)
    return tuple(key)


@needs_shared
def test_every_public_conformance_case_gives_the_clis_bytes(tmp_path: Path) -> None:
    """One server per distinct setup (profile, registrations, artifacts, retrieval, limits),
    started in the first of its cases' folders (the paths its messages name are then the
    command line's); each case's envelope through /v1/check is, byte for byte, what the
    command prints for it read from standard input."""
    groups: dict[tuple[str, ...], list[tuple[Path, list[str], list[tuple[str, str]]]]] = {}
    for case_file in sorted(CONFORMANCE.glob("*/case.json")):
        folder = case_file.parent
        case = json.loads(case_file.read_text())
        setup, query = _split(list(case["args"]))
        groups.setdefault(_setup_key(folder, setup), []).append((folder, setup, query))
    assert sum(len(cases) for cases in groups.values()) >= 18
    expected: dict[Path, Any] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for folder in (f for cases in groups.values() for f, _, _ in cases):
            case = json.loads((folder / "case.json").read_text())
            envelope = (folder / case["envelope"]).read_bytes()
            expected[folder] = pool.submit(cli, ["-", *case["args"], "--format", "json"],
                                           envelope, folder)
        answered = 0
        for number, cases in enumerate(groups.values()):
            first, setup, _ = cases[0]
            with Service(setup, first, tmp_path / f"stderr-{number}.log") as service, \
                    httpx.Client() as client:
                for folder, _, query in cases:
                    case = json.loads((folder / "case.json").read_text())
                    response = check(client, service.url,
                                     (folder / case["envelope"]).read_bytes(), query)
                    assert response.status_code == 200, (folder.name, response.text)
                    assert response.headers["content-type"] == "application/json"
                    want = expected[folder].result()
                    assert response.content == want, folder.name
                    assert json.loads(response.content)["verdict"] == case["expect"]["verdict"]
                    answered += 1
                if "--alignment" in setup:  # the page's near-expiry note reads these
                    artifacts = client.get(f"{service.url}/v1/profile").json()["artifacts"]
                    assert artifacts and all("validUntil" in a for a in artifacts)
    assert answered == sum(len(cases) for cases in groups.values())


# --- the audit: the command line's bytes, streamed ---------------------------------------------


def test_an_audit_of_a_generated_corpus_is_the_clis_streamed(plain: Service,
                                                              tmp_path: Path) -> None:
    corpus = tmp_path / "registrations.jsonl"
    traffic.write(corpus, traffic.registrations(2000, 50))
    want = cli(["audit", "-", "--profile", "cs-translation", "--format", "json"],
               corpus.read_bytes(), tmp_path)

    def upload() -> Iterator[bytes]:  # chunked, in pieces that cut lines anywhere
        data = corpus.read_bytes()
        for start in range(0, len(data), 7919):
            yield data[start:start + 7919]

    got = bytearray()
    with httpx.Client() as client, client.stream(
            "POST", f"{plain.url}/v1/audit", content=upload(), timeout=HANG,
            headers={"Content-Type": "application/x-ndjson"}) as response:
        assert response.status_code == 200
        assert response.headers["transfer-encoding"] == "chunked"
        assert response.headers["content-type"] == "application/x-ndjson"
        for chunk in response.iter_bytes():
            got.extend(chunk)
    assert bytes(got) == want
    summary = json.loads(want.splitlines()[-1])["summary"]
    assert summary["total"] == 2000 and summary["status"]["invalid"] > 0


def test_an_audit_with_a_bad_line_and_a_conflict_is_the_clis(plain: Service,
                                                             tmp_path: Path) -> None:
    registration = json.loads((EXAMPLES / "registration-6.3.jsonld").read_text())
    other = {**registration, "outputs": ["text/html"]}
    body = b"\n".join([dumps(registration), b"{ not json", dumps(other), b""])
    want = cli(["audit", "-", "--profile", "cs-translation", "--format", "json"], body, tmp_path)
    with httpx.Client() as client:
        response = client.post(f"{plain.url}/v1/audit", content=body, timeout=HANG,
                               headers={"Content-Type": "application/jsonl"})
    assert response.status_code == 200 and response.content == want
    assert b'"conflict"' in want


# --- HTTP-level faults ------------------------------------------------------------------------


def test_faults_are_4xx_problem_details(plain: Service) -> None:
    body = dumps(envelope_62())
    with httpx.Client(base_url=plain.url, timeout=HANG) as client:
        faults = {
            "unsupported media type": check(client, "", body, content_type="text/plain"),
            "no media type": client.post("/v1/check", content=body),
            "compressed": client.post("/v1/check", content=body, headers={
                "Content-Type": "application/json", "Content-Encoding": "gzip"}),
            "unknown query parameter": check(client, "", body, [("parm", "a=b")]),
            "param not KEY=VALUE": check(client, "", body, [("param", "sourceLang")]),
            "param with an empty key": check(client, "", body, [("param", "=zh")]),
            "param key twice": check(client, "", body, [("param", "a=1"), ("param", "a=2")]),
            "at without an offset": check(client, "", body, [("at", "2026-06-01T00:00:00")]),
            "at not a time": check(client, "", body, [("at", "tomorrow")]),
            "at twice": check(client, "", body, [("at", AT), ("at", AT)]),
            "over the body limit": check(client, "", b" " * (4 * 1024 * 1024 + 1)),
            "audit media type": client.post("/v1/audit", content=b"{}\n",
                                            headers={"Content-Type": "application/ld+json"}),
            "audit query": client.post("/v1/audit?at=" + AT, content=b"{}\n",
                                       headers={"Content-Type": "application/x-ndjson"}),
            "no such route": client.get("/v2/check"),
            "method": client.get("/v1/check"),
        }
    expected = {
        "unsupported media type": (415, "unsupported-media-type"),
        "no media type": (415, "unsupported-media-type"),
        "compressed": (415, "unsupported-content-coding"),
        "unknown query parameter": (400, "bad-query"),
        "param not KEY=VALUE": (400, "bad-query"), "param with an empty key": (400, "bad-query"),
        "param key twice": (400, "bad-query"), "at without an offset": (400, "bad-query"),
        "at not a time": (400, "bad-query"), "at twice": (400, "bad-query"),
        "over the body limit": (413, "body-too-large"),
        "audit media type": (415, "unsupported-media-type"), "audit query": (400, "bad-query"),
        "no such route": (404, ""), "method": (405, "")}
    assert set(faults) == set(expected)
    problems = {name: problem_of(faults[name], *expected[name]) for name in faults}
    # Members a client acts on: the limit, the media types taken, the methods allowed.
    assert problems["over the body limit"]["maxBytes"] == 4 * 1024 * 1024
    assert problems["unsupported media type"]["accepted"] == ["application/ld+json",
                                                              "application/json"]
    assert problems["audit media type"]["accepted"] == [
        "application/x-ndjson", "application/jsonl", "application/json-lines"]
    assert faults["method"].headers["allow"] == "POST"
    # The command line's own sentences, for the values it refuses the same way.
    assert faults["param not KEY=VALUE"].json()["error"].endswith("'sourceLang' is not KEY=VALUE")
    assert "has no UTC offset" in faults["at without an offset"].json()["error"]


def test_an_envelope_over_the_checkers_limit_but_within_the_bodys_is_judged(
        plain: Service) -> None:
    """Over --max-bytes (1 MiB) and within --max-body-bytes: the command line's answer."""
    body = b" " * (1024 * 1024) + dumps(envelope_62())
    with httpx.Client() as client:
        response = check(client, plain.url, body, [("at", AT)])
    assert response.status_code == 200
    result = response.json()
    assert result["verdict"] == "invalid"
    assert [r["code"] for r in result["reasons"]] == ["json.too-large"]


def _raw_request(url: str, head: str, body: bytes) -> tuple[socket.socket, bytes]:
    """``head`` and ``body`` written on a socket of their own; the answer read until the
    server closes or a complete JSON body has arrived (the socket is left open)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=HANG)
    sock.sendall(head.encode() + b"\r\n" + body)
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        data = sock.recv(65536)
        if not data:
            break
        answer += data
    return sock, answer


def test_a_chunked_body_over_the_limit_is_refused_before_it_ends(plain: Service) -> None:
    """413 while the client is still sending: the server stopped reading at the limit."""
    chunk = b" " * 65536
    head = ("POST /v1/check HTTP/1.1\r\nHost: test\r\nContent-Type: application/ld+json\r\n"
            "Transfer-Encoding: chunked\r\n")
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(65))  # 4 MiB + 64 KiB
    sock, answer = _raw_request(plain.url, head, body)  # no last chunk: the body never ends
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert problem_of(answer, 413, "body-too-large")["maxBytes"] == 4 * 1024 * 1024


# --- a slow check among many ------------------------------------------------------------------


class Gate:
    """A loopback server holding ``/slow.jsonld`` (the baseline context) until opened."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.asked = threading.Event()
        self.server = LoopbackServer({"/slow.jsonld": self._serve,
                                      "/ctx.jsonld": Reply(BASELINE)})

    def _serve(self, handler: _Handler) -> None:
        self.asked.set()
        if self.opened.wait(HANG):
            handler.reply(Reply(BASELINE))

    @property
    def origin(self) -> str:
        return self.server.origin("127.0.0.1")

    def envelope(self) -> bytes:
        """The 6.2 envelope with its context at the gate (compatible once it is served)."""
        document = envelope_62()
        document["@context"] = [self.server.url("/slow.jsonld", host="127.0.0.1"),
                                {"cs": "https://example.org/onto/cs#"}]
        return dumps(document)

    def __enter__(self) -> Gate:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.opened.set()
        self.server.__exit__(None, None, None)


def gated_profile(folder: Path, gate: Gate) -> Path:
    """The shipped profile with retrieval from the gate, its budgets long enough that only
    the gate decides when the slow context arrives."""
    text = _resources.read_text("profiles", "cs-translation.ttl").replace(
        "iop:trustedIssuer <https://example.org/mapping-authority> .",
        "iop:trustedIssuer <https://example.org/mapping-authority> ;\n    iop:retrieval [ "
        f'iop:allowOrigin "{gate.origin}" ; iop:allowPrivateAddresses true ; '
        f"iop:totalTimeout {HANG:g} ; iop:checkTimeout {HANG:g} ] .")
    path = folder / "gated.ttl"
    path.write_text(text)
    return path


def _wait(event: threading.Event, what: str) -> None:
    assert event.wait(HANG), f"{what} did not happen"


def test_200_concurrent_requests_are_answered_and_none_waits_for_the_slow_one(
        tmp_path: Path) -> None:
    fast = [(dumps(envelope_62()), "compatible"), (dumps(law_envelope()), "incompatible"),
            (b'{"@type": "ioa:SemanticProfile"', "invalid")]
    with Gate() as gate, Service(["--profile", str(gated_profile(tmp_path, gate)),
                                  "--timeout", str(HANG)], tmp_path,
                                 tmp_path / "stderr.log") as service:

        async def run() -> tuple[list[tuple[int, str]], bool, tuple[int, str]]:
            limits = httpx.Limits(max_connections=250, max_keepalive_connections=250)
            async with httpx.AsyncClient(base_url=service.url, timeout=HANG,
                                         limits=limits) as client:
                async def one(body: bytes) -> tuple[int, str]:
                    response = await client.post("/v1/check", content=body, params={"at": AT},
                                                 headers={"Content-Type": "application/ld+json"})
                    return response.status_code, response.json().get("verdict", "")

                slow = asyncio.create_task(one(gate.envelope()))
                await asyncio.to_thread(_wait, gate.asked, "the slow check's fetch")
                answers = await asyncio.gather(*(one(fast[i % 3][0]) for i in range(199)))
                # Every fast request is answered, and the slow one cannot have been: its
                # context is still held at the gate.
                slow_pending = not slow.done()
                gate.opened.set()
                return list(answers), slow_pending, await slow

        answers, slow_pending, slow_answer = asyncio.run(run())
    assert answers == [(200, fast[i % 3][1]) for i in range(199)]
    assert slow_pending
    assert slow_answer == (200, "compatible")
    assert len(service.access_lines()) == 200


def test_a_check_past_the_time_bound_is_503_and_the_server_goes_on(tmp_path: Path) -> None:
    """The gated check is held past the bound, however fast the machine; the bound is long
    enough that the ordinary check after it, with a fresh worker to take the killed one's
    place, cannot reach it on a loaded machine (at 1 s it could)."""
    bound = 10
    with Gate() as gate, Service(["--profile", str(gated_profile(tmp_path, gate)),
                                  "--timeout", str(bound)], tmp_path,
                                 tmp_path / "stderr.log") as service, httpx.Client() as client:
        response = check(client, service.url, gate.envelope(), [("at", AT)])
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        assert f"time bound of {bound} s" in problem_of(response, 503, "check-timed-out")["detail"]
        gate.opened.set()  # its worker was killed: the fetch it made is left unread
        assert check(client, service.url, dumps(envelope_62()), [("at", AT)]).json()[
            "verdict"] == "compatible"


def test_a_body_that_does_not_arrive_in_time_is_408(tmp_path: Path) -> None:
    with Service(["--profile", "cs-translation", "--timeout", "1"], tmp_path,
                 tmp_path / "stderr.log") as service:
        head = ("POST /v1/check HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                "Content-Length: 1000\r\n")
        sock, answer = _raw_request(service.url, head, b"{")
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    problem_of(answer, 408, "late-request")


def test_an_audit_body_over_its_limit_is_413(tmp_path: Path) -> None:
    registration = (EXAMPLES / "registration-6.3.jsonld").read_text()
    line = json.dumps(json.loads(registration)).encode() + b"\n"
    with Service(["--profile", "cs-translation", "--max-audit-bytes", "20000"], tmp_path,
                 tmp_path / "stderr.log") as service, httpx.Client(timeout=HANG) as client:
        declared = client.post(f"{service.url}/v1/audit", content=line * 100,
                               headers={"Content-Type": "application/x-ndjson"})

        def chunks() -> Iterator[bytes]:
            yield from (line for _ in range(100))

        streamed = client.post(f"{service.url}/v1/audit", content=chunks(),
                               headers={"Content-Type": "application/x-ndjson"})
        within = client.post(f"{service.url}/v1/audit", content=line * 10,
                             headers={"Content-Type": "application/x-ndjson"})
    assert (declared.status_code, streamed.status_code, within.status_code) == (413, 413, 200)
    assert problem_of(declared, 413, "body-too-large") == problem_of(streamed, 413,
                                                                     "body-too-large")


# --- shutdown and the access log --------------------------------------------------------------


def test_sigterm_lets_the_request_in_flight_finish_and_exits_0(tmp_path: Path) -> None:
    with Gate() as gate:
        service = Service(["--profile", str(gated_profile(tmp_path, gate)),
                           "--timeout", str(HANG)], tmp_path, tmp_path / "stderr.log")
        try:
            with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client() as client:
                in_flight = pool.submit(check, client, service.url, gate.envelope(),
                                        [("at", AT)])
                _wait(gate.asked, "the check's fetch")
                service.process.send_signal(signal.SIGTERM)
                # Shutting down, the server closes its socket: new connections are refused.
                deadline = time.monotonic() + HANG
                while time.monotonic() < deadline:
                    try:
                        httpx.get(f"{service.url}/healthz", timeout=1)
                    except httpx.TransportError:
                        break
                    time.sleep(0.05)
                else:
                    raise AssertionError("the server still accepts connections after SIGTERM")
                assert not in_flight.done()
                gate.opened.set()
                response = in_flight.result(HANG)
            assert response.status_code == 200 and response.json()["verdict"] == "compatible"
        finally:
            status = service.stop()
    assert status == 0, service.log.read_text()[-2000:]
    assert "ioa-check serve: stopped" in service.log.read_text()


def test_the_access_log_has_one_line_per_request_and_never_the_envelope(tmp_path: Path) -> None:
    marker = "Zq7xMarkerOfTheEnvelope"
    envelope = envelope_62()
    envelope["profileContext"]["termBindings"][0]["term"] = marker
    with Service(["--profile", "cs-translation"], tmp_path, tmp_path / "stderr.log") as service, \
            httpx.Client(base_url=service.url, timeout=HANG) as client:
        sent = [
            ("POST", "/v1/check", check(client, "", dumps(envelope),
                                        [("at", AT), ("param", f"domain={marker}")])),
            ("POST", "/v1/check", check(client, "", dumps(law_envelope()), [("at", AT)])),
            ("POST", "/v1/check", check(client, "", marker.encode(), [("at", AT)])),
            ("POST", "/v1/check", check(client, "", b"{}", [("nope", marker)])),
            ("POST", "/v1/audit", client.post("/v1/audit", content=dumps(envelope) + b"\n",
                                              headers={"Content-Type": "application/x-ndjson"})),
            ("GET", "/v1/profile", client.get("/v1/profile")),
            ("GET", "/healthz", client.get("/healthz")),
            ("GET", "/", client.get("/")),
            ("GET", f"/{marker}", client.get(f"/{marker}")),
        ]
    log = service.log.read_text()
    lines = service.access_lines()
    # A line is written once its request is done: a streamed answer's, after its last chunk
    # (which the client may have read before a later request's line is written).
    assert sorted((m[1], m[2], m[3]) for m in lines) == sorted(
        (method, path, str(response.status_code)) for method, path, response in sent)
    checks = [m[4] for m in lines if m[2] == "/v1/check"]
    assert checks == [sent[0][2].json()["verdict"], "incompatible", "invalid", "-"]
    assert {m[4] for m in lines if m[2] != "/v1/check"} == {"-"}
    # Only the path, which the client chose, can name the marker: never a body or a query.
    assert log.count(marker) == 1 and f"GET /{marker} 404" in log


# --- what the service says of itself ----------------------------------------------------------


def test_the_profile_and_its_12_2_fragment(plain: Service) -> None:
    profile = httpx.get(f"{plain.url}/v1/profile", timeout=HANG).json()
    assert profile["id"] == "https://example.org/profiles/cs-translation"
    assert profile["revision"] == "1"
    assert profile["accepted"] == [{"ontologyId": "https://example.org/onto/agent-core",
                                    "ontologyVersion": "1.0"}]
    assert profile["extension"] == {"capabilities": {"extensions": [{
        "uri": "https://example.org/extensions/semantic-profile/v1", "required": False,
        "params": {"ontologyIds": ["https://example.org/onto/agent-core"],
                   "ontologyVersions": ["1.0"]}}]}}  # the draft's 12.2 fragment
    assert profile["artifacts"] == []
    assert httpx.get(f"{plain.url}/healthz", timeout=HANG).json() == {"status": "ok"}


def _routes() -> set[tuple[str, str]]:
    """The application's own routes and methods (HEAD, which Starlette adds to every GET,
    left out)."""
    from starlette.routing import Route

    from ioa_semantic import Checker
    from ioa_semantic.cli.serve import build_app

    app = build_app(Checker("cs-translation"))
    return {(route.path, method) for route in app.routes if isinstance(route, Route)
            for method in route.methods or () if method != "HEAD"}


def concrete(path: str) -> str:
    """A path of the document with its parameters given (an asset of the API page)."""
    return path.format(asset="api.js")


def test_the_openapi_document_is_what_the_server_does(plain: Service) -> None:
    import jsonschema

    document = httpx.get(f"{plain.url}/openapi.json", timeout=HANG).json()
    assert document["openapi"] == "3.1.0"
    operations = {(path, method.upper()): operation
                  for path, item in document["paths"].items()
                  for method, operation in item.items()}
    assert set(operations) == _routes()
    observed: dict[tuple[str, str], set[int]] = {key: set() for key in operations}
    body = dumps(envelope_62())
    # An impact run of an empty log: a summary of nothing.
    impact_body = dumps({"log": "", "change": {"at": AT}})
    with httpx.Client(base_url=plain.url, timeout=HANG) as client:
        def call(path: str, method: str, params: Any = None, content: bytes | None = None,
                 media: str | None = None) -> httpx.Response:
            headers = {"Content-Type": media} if media else {}
            response = client.request(method, concrete(path), params=params, content=content,
                                      headers=headers)
            if (path, method) in observed:
                observed[(path, method)].add(response.status_code)
            return response

        for path, method in operations:
            operation = operations[(path, method)]
            media = next(iter(operation["requestBody"]["content"])) if (
                "requestBody" in operation) else None
            content = ({"/v1/check": body, "/v1/impact": impact_body}.get(path, body + b"\n")
                       if media else None)
            assert call(path, method, content=content, media=media).status_code == 200
            assert call(path, method, {"unknown": "1"}, content, media).status_code == 400
            # A header that takes one value, given twice (here From: RFC 9110 10.1.2).
            twice = client.request(method, concrete(path), content=content, headers=[
                *([("Content-Type", media)] if media else []), ("From", "a@example.org"),
                ("From", "b@example.org")])
            assert "from" in problem_of(twice, 400, "bad-request-head")["detail"]
            for other in ("GET", "POST", "PUT", "DELETE"):
                if (path, other) not in operations:
                    assert client.request(other, concrete(path)).status_code == 405
                    observed[(path, method)].add(405)
            if media:
                assert call(path, method, content=content, media="text/plain").status_code == 415
                coded = client.request(method, concrete(path), content=content, headers=[
                    ("Content-Type", media), ("Content-Encoding", "identity"),
                    ("Content-Encoding", "identity, gzip")])
                assert "gzip" in problem_of(coded, 415, "unsupported-content-coding")["detail"]
                over = (document["paths"][path]["post"]["requestBody"]["description"])
                assert "bytes" in over
        # The check's parameters: exactly those documented, each taken when well formed.
        parameters = {p["name"]: p for p in operations[("/v1/check", "POST")]["parameters"]}
        assert set(parameters) == {"param", "at"}
        assert all(p["in"] == "query" for p in parameters.values())
        taken = call("/v1/check", "POST", [("param", "sourceLang=zh"), ("at", AT)], body,
                     "application/ld+json")
        assert taken.status_code == 200
        assert taken.json()["dependencies"]["parameters"]["sourceLang"] == "zh"
        jsonschema.validate(taken.json(), document["components"]["schemas"]["CheckResult"])
        call("/v1/check", "POST", None, b" " * (4 * 1024 * 1024 + 1), "application/json")
    # An audit declared over its limit (1 GiB), refused before a byte of it is sent.
    sock, answer = _raw_request(plain.url, "POST /v1/audit HTTP/1.1\r\nHost: test\r\n"
                                "Content-Type: application/x-ndjson\r\n"
                                f"Content-Length: {(1 << 30) + 1}\r\n", b"")
    sock.close()
    observed[("/v1/audit", "POST")].add(int(answer.split()[1]))
    sock, answer = _raw_request(plain.url, "POST /v1/impact HTTP/1.1\r\nHost: test\r\n"
                                "Content-Type: application/json\r\n"
                                f"Content-Length: {(16 << 20) + 1}\r\n", b"")
    sock.close()
    observed[("/v1/impact", "POST")].add(int(answer.split()[1]))
    with httpx.Client(base_url=plain.url, timeout=HANG) as client:
        refused = client.post("/v1/impact", content=dumps({"log": "", "change": {}}),
                              headers={"Content-Type": "application/json"})
        observed[("/v1/impact", "POST")].add(problem_of(refused, 422, "bad-impact-request")[
            "status"])
    with httpx.Client(base_url=plain.url, timeout=HANG) as client:
        assert client.get("/no/such/route").status_code == 404
    for key, statuses in observed.items():
        documented = {int(status) for status in operations[key]["responses"]}
        assert statuses <= documented, (key, statuses - documented)
        # The rest are shown by the tests of the time bounds, or are a bug's 500.
        assert documented - statuses <= {404, 408, 500, 503}, (key, documented - statuses)
        assert 404 in documented


# --- the page ---------------------------------------------------------------------------------

PAGE_IDS = ("check-form", "envelope", "envelope-file", "sample", "file-status", "params",
            "add-param", "result-heading", "download-report",
            "at", "at-now", "expiry-note", "submit", "status", "outcome", "verdict",
            "verdict-hint", "summary", "error", "evaluated", "reasons", "remedies", "evidence",
            "excluded", "candidates", "raw-json", "profile-id", "profile-revision",
            "profile-accepted")


class _Elements(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.labelled: set[str] = set()
        self.controls: list[str] = []
        self.links: list[str] = []
        self.inline: dict[str, list[str]] = {"script": [], "style": []}
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        if tag == "label" and found.get("for"):
            self.labelled.add(str(found["for"]))
        if tag in ("input", "textarea", "select"):
            self.controls.append(str(found.get("id")))
        for name in ("src", "href", "action"):
            if found.get(name):
                self.links.append(str(found[name]))
        if tag in self.inline and "type" not in found and "src" not in found:
            self._open = tag

    def handle_data(self, data: str) -> None:
        if self._open:
            self.inline[self._open].append(data)
            self._open = None


def test_the_page_is_self_contained_labelled_and_has_its_ids(plain: Service) -> None:
    response = httpx.get(f"{plain.url}/", timeout=HANG)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    page = _Elements()
    page.feed(response.text)
    assert set(PAGE_IDS) <= set(page.ids)
    assert len(page.ids) == len(set(page.ids)), "ids are unique"
    assert page.controls and set(page.controls) <= page.labelled, "every control has a label"
    assert page.links == ["data:,"], page.links  # nothing fetched from anywhere else
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    for kind in ("script", "style"):
        (content,) = page.inline[kind]
        digest = base64.b64encode(hashlib.sha256(content.encode()).digest()).decode()
        assert f"{kind}-src 'sha256-{digest}'" in policy
    facts = re.search(r'<script type="application/json" id="service-facts">(.*?)</script>',
                      response.text, re.S)
    assert facts is not None
    parsed = json.loads(facts.group(1))
    assert parsed["profile"]["id"] == "https://example.org/profiles/cs-translation"
    assert parsed["fixes"]["domain"] and parsed["fixes"]["json.too-large"]
    # What the page says of a URL the receiver names itself (its --alignment URL).
    assert parsed["receiverFixes"]["retrieval"] == fix_for("retrieval.failed", receivers=True)
    # The sample envelope travels inside the page (package data, no path of the server).
    assert json.loads(parsed["sample"]["text"]) == json.loads(
        (EXAMPLES / "envelope-6.2.jsonld").read_text())


def test_serve_without_its_extra_says_so_and_exits_2(tmp_path: Path) -> None:
    script = ("import sys; sys.modules['uvicorn'] = None; sys.modules['starlette'] = None\n"
              "from ioa_semantic.cli.main import main\n"
              "sys.exit(main(['serve', '--profile', 'cs-translation']))")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=HANG, check=False)
    assert run.returncode == 2 and run.stdout == ""
    assert "pip install 'ioa-semantic[serve]'" in run.stderr


def test_serve_configuration_errors_exit_2_and_a_bound_port_74(plain: Service,
                                                               tmp_path: Path) -> None:
    unknown = subprocess.run([IOA_CHECK, "serve", "--profile", "no-such-profile"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=HANG, check=False)
    assert unknown.returncode == 2 and "cs-translation" in unknown.stderr
    port = plain.url.rsplit(":", 1)[1]
    taken = subprocess.run([IOA_CHECK, "serve", "--profile", "cs-translation", "--port", port],
                           cwd=tmp_path, capture_output=True, text=True, timeout=HANG,
                           check=False)
    assert taken.returncode == 74 and f"cannot listen on 127.0.0.1:{port}" in taken.stderr
    assert "Traceback" not in unknown.stderr + taken.stderr


def test_two_workers_answer_as_one_process_does_and_stop_on_sigterm(plain: Service,
                                                                     tmp_path: Path) -> None:
    bodies = [dumps(envelope_62()), dumps(law_envelope()), b"{"] * 10
    with httpx.Client(timeout=HANG) as client:
        want = [check(client, plain.url, body, [("at", AT)]).content for body in bodies]
        service = Service(["--profile", "cs-translation", "--workers", "2"], tmp_path,
                          tmp_path / "stderr.log")
        try:
            got = [check(client, service.url, body, [("at", AT)]).content for body in bodies]
        finally:
            status = service.stop()
    assert got == want
    assert status == 0
    assert len(service.access_lines()) == len(bodies)


# --- the service tutorial, run as written --------------------------------------------------------


def _tutorial_blocks() -> list[str]:
    page = (ROOT / "docs" / "tutorials" / "service.md").read_text()
    start = page.index("## 1. Start the service")
    section = page[start:page.index("\n## 3.", start + 1)]
    return re.findall(r"```sh\n(.*?)```\n", section, re.S)


def test_the_service_tutorials_commands_run_as_written(tmp_path: Path) -> None:
    """The server's command as the service tutorial gives it (on a free port instead of 8080,
    which may be taken here), then its curl commands, in a folder holding the examples (the
    docs' command test skips both blocks: one starts a server, the other calls it)."""
    serve, calls = _tutorial_blocks()
    serve = serve.replace("\\\n", " ")
    (command,) = [line for line in serve.splitlines() if line.startswith("ioa-check serve ")]
    args = command.removeprefix("ioa-check serve ").replace("--port 8080", "").split()
    import shutil

    shutil.copytree(EXAMPLES, tmp_path / "examples")
    with Service(args, tmp_path, tmp_path / "stderr.log") as service:
        script = calls.replace("http://127.0.0.1:8080", service.url)
        run = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                             text=True, timeout=HANG, check=False)
    assert run.returncode == 0, run.stderr
    decoder = json.JSONDecoder()
    answers, rest = [], run.stdout
    while rest.strip():
        value, end = decoder.raw_decode(rest.lstrip())
        answers.append(value)
        rest = rest.lstrip()[end:]
    without, within, registration, summary, profile, document = answers
    assert without["verdict"] == "indeterminate"
    assert [r["action"] for r in without["remedies"]] == ["supply-parameter"] * 2
    assert within["verdict"] == "compatible" and within["evidence"]
    assert registration["status"] == "valid" and summary["summary"]["total"] == 1
    assert profile["artifacts"][0]["validUntil"] == "2026-12-31T00:00:00Z"
    assert document["openapi"] == "3.1.0"


def _memory(pid: int) -> dict[str, int]:
    """The process's resident set now and at its peak, in kB (Linux)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_an_audit_holds_neither_its_body_nor_its_results(plain: Service) -> None:
    """45 MB of registrations in and 16 MB of lines out, the client sending all of its body
    before it reads any of the answer (as httpx does): the answer is whole, and the server's
    peak resident set grows by a few MB, far from the body's or the answer's size. Each line
    is invalid (an array), so the audit itself keeps nothing of it: no place in the conflict
    index, which is the one thing an audit keeps per registration."""
    line = b"[1]" + b" " * 896 + b"\n"
    blocks = 50

    def upload() -> Iterator[bytes]:
        for _ in range(blocks):
            yield line * 1000

    with httpx.Client() as client:  # warm: the first audit builds what every audit reuses
        client.post(f"{plain.url}/v1/audit", content=line * 2000, timeout=HANG,
                    headers={"Content-Type": "application/x-ndjson"})
        before = _memory(plain.process.pid)
        size = 0
        with client.stream("POST", f"{plain.url}/v1/audit", content=upload(), timeout=HANG,
                           headers={"Content-Type": "application/x-ndjson"}) as response:
            for chunk in response.iter_bytes():
                size += len(chunk)
                last = chunk
    after = _memory(plain.process.pid)
    summary = json.loads(last.splitlines()[-1])["summary"]
    assert summary["total"] == summary["status"]["invalid"] == blocks * 1000
    assert size > 15_000_000 and len(line) * blocks * 1000 == 45_000_000
    grown = after["VmHWM"] - before["VmRSS"]
    assert grown < 8_000, f"the peak grew by {grown} kB over {before}"


def test_the_page_shows_only_offered_urls_that_carry_no_secret() -> None:
    """The page's facts name the URLs the service offers (so that it gives the receiver's fix
    for them), but never one with credentials or a query (a signed URL's token): whoever
    opens the page would read it."""
    from ioa_semantic.service.app import page
    from ioa_semantic.service.limits import ServiceLimits

    offered = ("https://example.org/a.json", "https://user:pw@example.org/b.json",
               "https://example.org/c.json?sig=abc", "https://example.org/d.json#x",
               "https://token@example.org/e.json")
    text = page({"id": "p"}, ServiceLimits(), offered)[0].decode()
    facts = re.search(r'<script type="application/json" id="service-facts">(.*?)</script>',
                      text, re.S)
    assert facts is not None
    assert json.loads(facts.group(1))["offeredUrls"] == ["https://example.org/a.json"]
    assert "pw@" not in text and "sig=abc" not in text and "token@" not in text
