"""What a hostile client cannot make ``ioa-check serve`` do (a review's findings, brief h76):
judge bytes that are not text, hold an audit's place past its time bound by not reading,
keep answers in memory for clients that never read them, or parse a costly impact body
on the event loop, uncounted. Each test runs a real server process; every wait is a hang
guard on a condition, never a claim of speed.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_service import HANG, Service, _raw_request, problem_of

from support import AT, EXAMPLES

ENVELOPE = (EXAMPLES / "envelope-12.1.jsonld").read_bytes()


def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition``, a hang guard: fail saying ``what`` did not happen."""
    deadline = time.monotonic() + HANG
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {HANG:g} s"
        time.sleep(0.2)


def _address(service: Service) -> tuple[str, int]:
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _not_reading(service: Service, head: str, body: bytes) -> socket.socket:
    """A connection that sends ``head`` and ``body`` and then reads nothing: its receive
    buffer as small as the system allows, so that the server's answer stays unsent."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.settimeout(HANG)
    sock.connect(_address(service))
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a reset ends it too)."""
    answer = b""
    try:
        while data := sock.recv(1 << 20):
            answer += data
    except ConnectionResetError:
        pass
    return answer


def _big_answer_envelope() -> bytes:
    """The 12.1 envelope with 16,000 members no context maps: some 300 KB that the checker
    answers ``invalid`` with a reason for each, some 4.7 MB."""
    document = json.loads(ENVELOPE)
    for number in range(16000):
        document[f"k{number:08d}"] = number
    return json.dumps(document).encode()


def _check_head(body: bytes, query: str = f"at={AT}") -> str:
    return (f"POST /v1/check?{query} HTTP/1.1\r\nHost: test\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n")


# --- A: a query is text --------------------------------------------------------------------


@pytest.mark.parametrize(("query", "named"), [
    ("param=sourceLang=%FF", "query parameter param"),
    ("param=%FF=x", "query parameter param"),
    ("param=sourceLang=%ED%A0%80", "query parameter param"),  # a lone surrogate's bytes
    ("%FF=x", "the query parameter name '%FF'"),
])
def test_query_bytes_that_are_not_utf8_are_refused_not_judged(tmp_path: Path, query: str,
                                                             named: str) -> None:
    """Starlette reads them as U+FFFD; the service refuses them (400 bad-query), as the
    command line refuses such --param bytes, on a route that takes none too."""
    with Service(["--profile", "cs-translation"], tmp_path, tmp_path / "stderr.log") as service, \
            httpx.Client(base_url=service.url, timeout=HANG) as client:
        sock, answer = _raw_request(service.url, _check_head(ENVELOPE, f"at={AT}&{query}"),
                                    ENVELOPE)
        sock.close()
        detail = problem_of(answer, 400, "bad-query")["detail"]
        assert detail.startswith(named) and "not UTF-8" in detail, detail
        assert "\ufffd" not in detail
        sock, answer = _raw_request(service.url, f"GET /healthz?{query} HTTP/1.1\r\nHost: test\r\n",
                                    b"")
        sock.close()
        assert "not UTF-8" in problem_of(answer, 400, "bad-query")["detail"]
        # Text escaped as UTF-8 is read as ever.
        judged = client.post(f"/v1/check?at={AT}&param=sourceLang%3D%C3%A9", content=ENVELOPE,
                             headers={"Content-Type": "application/ld+json"})
        assert judged.status_code == 200 and "'é'" in judged.text, judged.text[:300]


# --- B: an audit's answer is held to its time bound ----------------------------------------


def test_an_audit_whose_client_stops_reading_is_cut_at_its_time_bound(tmp_path: Path) -> None:
    """The audit's place (--audits 1) is free again once --audit-timeout has passed, though
    its client never reads; its connection is closed."""
    body = b"x\n" * 30000  # 30,000 invalid lines: an answer (some 13 MB) larger than any buffer
    with Service(["--profile", "cs-translation", "--audits", "1", "--audit-timeout", "10"],
                 tmp_path, tmp_path / "stderr.log") as service, \
            httpx.Client(base_url=service.url, timeout=HANG) as client:
        stuck = _not_reading(service, "POST /v1/audit HTTP/1.1\r\nHost: test\r\nContent-Type: "
                                      f"application/x-ndjson\r\nContent-Length: {len(body)}\r\n",
                             body)
        try:
            def another_audit_runs() -> bool:
                answer = client.post("/v1/audit", content=b"x\n",
                                     headers={"Content-Type": "application/x-ndjson"})
                assert answer.status_code in (200, 503), answer.text[:300]
                return answer.status_code == 200

            _until(another_audit_runs, "an audit run while the first client does not read")
            _until(lambda: any(m.group(1, 2, 4) == ("POST", "/v1/audit", "cut")
                               for m in service.access_lines()), "the first audit cut")
            answer = _read_all(stuck)  # what had been sent, then the end: not the whole answer
            assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
            assert not answer.endswith(b"0\r\n\r\n"), "the answer was not cut"
        finally:
            stuck.close()


# --- C: answers held against the budget, and to a time bound -------------------------------


def test_an_answer_not_taken_in_time_is_cut_and_its_bytes_given_back(tmp_path: Path) -> None:
    """A client that sends and never reads: its answer is cut --timeout seconds after it is
    ready (the connection closed before the whole answer), and holds nothing after."""
    body = _big_answer_envelope()
    with Service(["--profile", "cs-translation", "--timeout", "10"], tmp_path,
                 tmp_path / "stderr.log") as service:
        stuck = _not_reading(service, _check_head(body), body)
        try:
            _until(lambda: any(m.group(1, 2, 3, 4) == ("POST", "/v1/check", "200", "cut")
                               for m in service.access_lines()), "the answer cut")
            answer = _read_all(stuck)
        finally:
            stuck.close()
    head, _, content = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head[:200]
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))
    assert length > 4_000_000 and len(content) < length, (length, len(content))


def test_answers_not_taken_are_held_against_the_buffered_bytes(tmp_path: Path) -> None:
    """With room for one large answer (--max-buffered-bytes 6 MiB), a client that does not
    read holds it: another large answer is 503 busy, with Retry-After, until that client
    goes away; then it is answered."""
    body = _big_answer_envelope()
    with Service(["--profile", "cs-translation", "--max-buffered-bytes", str(6 << 20),
                  "--timeout", str(HANG)], tmp_path, tmp_path / "stderr.log") as service, \
            httpx.Client(base_url=service.url, timeout=HANG) as client:
        def large() -> httpx.Response:
            return client.post(f"/v1/check?at={AT}", content=body,
                               headers={"Content-Type": "application/json"})

        stuck = _not_reading(service, _check_head(body), body)
        try:
            refused: list[httpx.Response] = []

            def busy() -> bool:
                answer = large()
                assert answer.status_code in (200, 503), answer.text[:300]
                if answer.status_code == 503:
                    refused.append(answer)
                return bool(refused)

            _until(busy, "a large answer refused while another is held")
            assert "Retry-After" in refused[0].headers
            problem_of(refused[0], 503, "busy")
            # A small answer still fits.
            small = client.post(f"/v1/check?at={AT}", content=ENVELOPE,
                                headers={"Content-Type": "application/ld+json"})
            assert small.status_code == 200, small.text[:300]
        finally:
            stuck.close()
        _until(lambda: large().status_code == 200, "the held answer given back")


def test_an_answer_larger_than_the_whole_bound_is_answered_not_busy_forever(
        tmp_path: Path) -> None:
    """An answer no retry could ever fit (a 4.7 MB answer, --max-buffered-bytes 4,000,000)
    was 503 busy with Retry-After on an idle server, every time: a permanent condition said
    to be passing, and the check run again on each retry. It is answered, unheld."""
    body = _big_answer_envelope()
    with Service(["--profile", "cs-translation", "--max-buffered-bytes", "4000000"], tmp_path,
                 tmp_path / "stderr.log") as service, \
            httpx.Client(base_url=service.url, timeout=HANG) as client:
        answer = client.post(f"/v1/check?at={AT}", content=body,
                             headers={"Content-Type": "application/json"})
        assert answer.status_code == 200, answer.text[:300]
        assert len(answer.content) > 4_000_000 and answer.json()["verdict"] == "invalid"
        health = client.get("/healthz")
        assert health.status_code == 200


# --- D: an impact body's parse is counted ------------------------------------------------


def test_an_impact_body_costly_to_parse_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """``{"x":[{},{},...]}`` of 1 MiB parses into some 25 MiB of objects: with
    --max-buffered-bytes 16 MiB it is 413 (it never fits), not parsed and then refused for
    its member; a cheap body of the same size is parsed and answered as ever."""
    costly = b'{"x":[' + b",".join([b"{}"] * ((1 << 20) // 3)) + b"]}"
    cheap = json.dumps({"log": "a" * (1 << 20), "change": {"at": AT}}).encode()
    with Service(["--profile", "cs-translation", "--max-buffered-bytes", str(16 << 20)],
                 tmp_path, tmp_path / "stderr.log") as service, \
            httpx.Client(base_url=service.url, timeout=HANG) as client:
        refused = client.post("/v1/impact", content=costly,
                              headers={"Content-Type": "application/json"})
        detail = problem_of(refused, 413, "body-too-large")
        assert detail["maxBytes"] == 16 << 20, detail
        read = client.post("/v1/impact", content=cheap,
                           headers={"Content-Type": "application/json"})
        assert read.status_code == 200, read.text[:300]
        # And the server goes on.
        assert client.get("/healthz").status_code == 200
