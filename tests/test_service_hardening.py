"""The service cannot be frozen or starved (issue 35): ``ioa-check serve`` as a real process.

A hostile profile is one whose shapes hold a SHACL-SPARQL constraint that, for one value of
the task's jurisdiction, joins every triple of the check's graph with every other four times
over (some 10^9 rows, hours of work; ``sh:pattern`` runs on RE2 now, so a catastrophic
pattern is no longer one);
a hostile request is a check whose task parameter is that string. The service is started
with a shape bound far past its --timeout, so that it is the service that must stop such a
check: only a process can be stopped, and a stopped check's work must end with it. Which
process is busy, and whether it still exists, is read in ``/proc``: that the hostile check is
running is shown by its workers' CPU time, not assumed after a sleep. Every wait here is a
hang guard, never a claim of speed.
"""

from __future__ import annotations

import contextlib
import select
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_service import HANG, Service, _raw_request, check, dumps, problem_of

from ioa_semantic import data as _resources

from support import AT, EXAMPLES, envelope_62

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
HOSTILE_JURISDICTION = "a" * 40 + "!"
HOSTILE_SHAPES = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <https://example.org/hostile#> .
ex:Hostile a sh:NodeShape ;
    sh:targetClass <https://ioa-semantic.org/ns/profile#TaskParameters> ;
    sh:sparql [ a sh:SPARQLConstraint ; sh:message "never reported" ;
        sh:select \"\"\"SELECT $this WHERE {{
            $this <https://ioa-semantic.org/ns/parameter#jurisdiction> "{HOSTILE_JURISDICTION}" .
            ?a ?p ?b . ?c ?q ?d . ?e ?r ?f . ?g ?s ?h .
            FILTER (STR(?b) = CONCAT(STR(?d), STR(?f), STR(?h), "never")) }}\"\"\" ] .
"""
# The shapes' own bound far past the service's --timeout: the service must stop the check.
NO_SHAPE_BOUND = ["--shape-timeout", "86400"]
HOSTILE = [("at", AT), ("param", "jurisdiction=" + HOSTILE_JURISDICTION),
           ("param", "sourceLang=en"), ("param", "targetLang=de")]
ORDINARY = [("at", AT), ("param", "jurisdiction=aaa"), ("param", "sourceLang=en"),
            ("param", "targetLang=de")]


def hostile_profile(folder: Path) -> Path:
    """The shipped legal-translation profile, its shapes replaced by the hostile one."""
    text = _resources.read_text("profiles", "legal-translation.ttl").replace(
        'iop:shapes "legal-translation.shapes.ttl"', 'iop:shapes "hostile.shapes.ttl"')
    assert "hostile.shapes.ttl" in text
    (folder / "hostile.shapes.ttl").write_text(HOSTILE_SHAPES)
    path = folder / "hostile.ttl"
    path.write_text(text)
    return path


def contract() -> bytes:
    return (EXAMPLES / "legal-contract.jsonld").read_bytes()


def _cpu(stat: str) -> float:
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / 100


def cpu(pid: int) -> float:
    """CPU seconds used by the server and every process under it (its check workers and
    their shapes workers, where pySHACL runs) together."""
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
        used[int(entry.name)] = _cpu(stat)
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        total += used.get(current, 0.0)
        pending.extend(child for child, parent in parents.items() if parent == current)
    return total


def workers(pid: int) -> dict[int, float]:
    """The server's check workers (spawned children) and the CPU seconds each has used."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == pid and b"spawn_main" in command:
            found[int(entry.name)] = _cpu(stat)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen")


# --- the hostile check ------------------------------------------------------------------------


@needs_proc
def test_with_a_hostile_check_in_flight_the_server_answers_and_sigterm_stops_it(
        tmp_path: Path) -> None:
    service = Service(["--profile", str(hostile_profile(tmp_path)), "--threads", "2",
                       "--timeout", str(HANG), *NO_SHAPE_BOUND], tmp_path,
                      tmp_path / "stderr.log")
    try:
        with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=HANG) as client:
            assert client.get(f"{service.url}/healthz").status_code == 200  # started
            before = cpu(service.process.pid)
            hostile = pool.submit(check, client, service.url, contract(), HOSTILE)
            # The hostile check is running once the server has spent a second of CPU on it.
            wait_for(lambda: cpu(service.process.pid) > before + 1, "the hostile check")
            assert client.get(f"{service.url}/healthz").json() == {"status": "ok"}
            ordinary = check(client, service.url, contract(), ORDINARY)
            assert ordinary.status_code == 200 and ordinary.json()["verdict"] == "compatible"
            assert client.get(f"{service.url}/v1/profile").status_code == 200
            assert not hostile.done()
            busy = workers(service.process.pid)
            # SIGTERM: the hostile check is not let finish (it would run for days): past
            # --shutdown-timeout it is answered 503, its worker is killed, the process ends.
            status = service.stop()
            stopped = hostile.result(HANG)
            assert "stopping" in problem_of(stopped, 503, "stopping")["detail"]
    finally:
        service.stop()
    assert status == 0, service.log.read_text()[-2000:]
    assert "ioa-check serve: stopped" in service.log.read_text()
    assert not any(alive(pid) for pid in busy)


@needs_proc
def test_hostile_checks_are_stopped_at_the_time_bound_and_later_checks_answered(
        tmp_path: Path) -> None:
    """As many hostile checks as the server runs at once: each is 503 at --timeout, its
    worker is killed (not left running), and a check sent after them gets its verdict."""
    with Service(["--profile", str(hostile_profile(tmp_path)), "--threads", "2",
                  "--timeout", "3", *NO_SHAPE_BOUND], tmp_path,
                 tmp_path / "stderr.log") as service, \
            ThreadPoolExecutor(max_workers=2) as pool, httpx.Client(timeout=HANG) as client:
        assert client.get(f"{service.url}/healthz").status_code == 200  # started
        first = set(workers(service.process.pid))
        hostile = [pool.submit(check, client, service.url, contract(), HOSTILE)
                   for _ in range(2)]
        answers = [future.result(HANG) for future in hostile]
        assert [a.status_code for a in answers] == [503, 503]
        assert all("time bound of 3 s" in problem_of(a, 503, "check-timed-out")["detail"]
                   for a in answers)
        assert answers[0].headers["retry-after"] == "1"
        # Their places are taken by fresh workers; a check waits for one (within its bound,
        # which a loaded machine may pass while they start: then it is tried again).
        for _ in range(10):
            ordinary = check(client, service.url, contract(), ORDINARY)
            if ordinary.status_code == 200:
                break
        assert ordinary.status_code == 200 and ordinary.json()["verdict"] == "compatible"
        # The hostile checks were stopped, not left running: their workers are gone.
        assert len(first) == 2
        wait_for(lambda: not any(alive(pid) for pid in first), "the hostile workers' end")
        assert len(workers(service.process.pid)) == 2


# --- headers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("plain")
    with Service(["--profile", "cs-translation", "--threads", "1", "--header-timeout", "1"],
                 folder, folder / "stderr.log") as service:
        yield service


def _answer(url: str, path: str, headers: list[str], body: bytes = b"") -> bytes:
    head = f"POST {path} HTTP/1.1\r\n" + "".join(h + "\r\n" for h in headers)
    if body and not any(h.lower().startswith("content-length") for h in headers):
        head += f"Content-Length: {len(body)}\r\n"
    sock, answer = _raw_request(url, head, body)
    sock.close()
    return answer


@pytest.mark.parametrize(("headers", "status"), [
    (["Host: a", "Content-Type: application/json"], 200),
    (["Host: a", "Host: b", "Content-Type: application/json"], 400),
    (["Host: a", "Content-Type: application/json", "Content-Type: application/ld+json"], 400),
    (["Host: a", "Content-Type: application/json", "Content-type: text/plain"], 400),
    (["Host: a", "Content-Type: application/json", "User-Agent: x", "User-Agent: y"], 400),
    (["Host: a", "Content-Type: application/json", "Accept: a/b", "Accept: c/d"], 200),
    (["Host: a", "Content-Type: application/json", "Content-Encoding: identity"], 200),
    (["Host: a", "Content-Type: application/json", "Content-Encoding: identity",
      "Content-Encoding: identity"], 200),
    (["Host: a", "Content-Type: application/json", "Content-Encoding: identity",
      "Content-Encoding: gzip"], 415),
    (["Host: a", "Content-Type: application/json", "Content-Encoding: identity, GZip"], 415),
    (["Host: a", "Content-Type: application/json", "Content-Encoding: br"], 415),
])
def test_a_repeated_single_valued_header_is_400_and_any_coding_415(
        plain: Service, headers: list[str], status: int) -> None:
    answer = _answer(plain.url, f"/v1/check?at={AT}", headers, dumps(envelope_62()))
    assert int(answer.split()[1]) == status, answer
    if status != 200:
        problem_of(answer, status, "bad-request-head" if status == 400
                   else "unsupported-content-coding")


def test_a_repeated_header_is_refused_on_every_route(plain: Service) -> None:
    sock, answer = _raw_request(plain.url, "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: a\r\n",
                                b"")
    sock.close()
    problem_of(answer, 400, "bad-request-head")


def _until_closed(sock: socket.socket, trickle: bytes) -> tuple[bytes, int]:
    """``trickle`` sent a byte at a time (a byte every 50 ms) until the server closes the
    connection: what it answered, and how many bytes went before it did."""
    answer = b""
    sent = 0
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.05)
        if readable:
            data = sock.recv(65536)
            if not data:
                return answer, sent
            answer += data
            continue
        if sent < len(trickle):
            try:
                sock.sendall(trickle[sent:sent + 1])
            except OSError:
                return answer, sent
            sent += 1
    raise AssertionError("the server never cut the connection off")


def test_a_client_trickling_its_head_is_cut_off_with_408(plain: Service) -> None:
    host, port = plain.url.removeprefix("http://").rsplit(":", 1)
    # Header lines for ever (far more than a second's worth at a byte every 50 ms).
    trickle = b"POST /v1/check HTTP/1.1\r\n" + b"X-Slow: " + b"a" * 100_000
    with socket.create_connection((host, int(port)), timeout=HANG) as sock:
        answer, sent = _until_closed(sock, trickle)
    problem_of(answer, 408, "late-request")
    assert sent < len(trickle)
    # A connection that says nothing at all is cut off the same way.
    with socket.create_connection((host, int(port)), timeout=HANG) as sock:
        answer, sent = _until_closed(sock, b"")
    assert answer.startswith(b"HTTP/1.1 408 ")
    # And a keep-alive connection's next head is held to the bound too.
    with socket.create_connection((host, int(port)), timeout=HANG) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        first = b""
        while not first.endswith(b"}\n"):
            first += sock.recv(65536)
        answer, sent = _until_closed(sock, b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 100_000)
    assert first.startswith(b"HTTP/1.1 200 ") and answer.startswith(b"HTTP/1.1 408 ")
    # The server goes on.
    assert httpx.get(f"{plain.url}/healthz", timeout=HANG).status_code == 200


# --- bodies held at once ----------------------------------------------------------------------


def test_bodies_held_at_once_are_capped_with_503(tmp_path: Path) -> None:
    """Twelve slow bodies of 1 MiB, each within --max-body-bytes, against a cap of 4 MiB held
    at once: while they are all incomplete, at most four are held and the rest are refused
    (503, Retry-After), and the held ones are judged once they end."""
    mib = 1 << 20
    body = b"{" + b" " * (mib - 2) + b"}"
    with Service(["--profile", "cs-translation", "--max-buffered-bytes", str(4 * mib),
                  "--timeout", str(HANG)], tmp_path, tmp_path / "stderr.log") as service:
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        sockets = [socket.create_connection((host, int(port)), timeout=HANG) for _ in range(12)]
        answers: dict[socket.socket, bytes] = {}
        try:
            def send(sock: socket.socket) -> None:
                head = ("POST /v1/check HTTP/1.1\r\nHost: a\r\nContent-Type: application/json"
                        f"\r\nContent-Length: {len(body)}\r\n\r\n").encode()
                with contextlib.suppress(OSError):  # refused while sending: read below
                    sock.sendall(head + body[:-1])  # all but the last byte

            senders = [threading.Thread(target=send, args=(s,)) for s in sockets]
            for thread in senders:
                thread.start()

            def refused() -> bool:
                readable, _, _ = select.select([s for s in sockets if s not in answers], [],
                                               [], 0.05)
                for sock in readable:
                    answers[sock] = _read_all(sock)
                return len(answers) >= 8

            wait_for(refused, "eight refusals")
            for thread in senders:
                thread.join(HANG)
            for sock in sockets:
                if sock not in answers:
                    sock.sendall(body[-1:])
                    answers[sock] = _read_all(sock)
        finally:
            for sock in sockets:
                sock.close()
        statuses = sorted(int(a.split()[1]) for a in answers.values())
        assert statuses.count(503) >= 8 and set(statuses) <= {200, 503}, statuses
        refusal = next(a for a in answers.values() if a.startswith(b"HTTP/1.1 503 "))
        assert b"retry-after: 1" in refusal.lower()
        problem_of(refusal, 503, "busy")
        # The cap is given back: the server holds nothing now, and takes bodies again.
        with httpx.Client(timeout=HANG) as client:
            for _ in range(4):
                assert check(client, service.url, body, [("at", AT)]).status_code == 200


def _read_all(sock: socket.socket) -> bytes:
    """One answer: until the server closes, or its Content-Length of body has arrived."""
    data = b""
    while True:
        head, _, rest = data.partition(b"\r\n\r\n")
        if _:
            length = [line.split(b":", 1)[1] for line in head.lower().split(b"\r\n")
                      if line.startswith(b"content-length:")]
            if length and len(rest) >= int(length[0]):
                return data
        try:
            chunk = sock.recv(65536)
        except OSError:
            return data
        if not chunk:
            return data
        data += chunk


@needs_proc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_server_killed_outright_leaves_no_worker_at_its_check(tmp_path: Path) -> None:
    """SIGKILL gives the server no say: its workers end with it (the kernel kills them), and
    the one at a hostile check does not run on for days."""
    service = Service(["--profile", str(hostile_profile(tmp_path)), "--threads", "2",
                       "--timeout", str(HANG), *NO_SHAPE_BOUND], tmp_path,
                      tmp_path / "stderr.log")
    try:
        with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=HANG) as client:
            assert client.get(f"{service.url}/healthz").status_code == 200  # started
            before = cpu(service.process.pid)
            hostile = pool.submit(check, client, service.url, contract(), HOSTILE)
            wait_for(lambda: cpu(service.process.pid) > before + 1, "the hostile check")
            busy = workers(service.process.pid)
            service.process.kill()
            service.process.wait(HANG)
            with pytest.raises(httpx.HTTPError):
                hostile.result(HANG)
    finally:
        service.stop()
    assert len(busy) == 2
    wait_for(lambda: not any(alive(pid) for pid in busy), "the workers' end")
