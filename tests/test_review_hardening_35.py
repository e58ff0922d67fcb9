"""A fresh, hostile look at issue 35's hardening: what the hostile suites did not try.

Each test holds one finding of that review to the issue's item it belongs to: it failed
before its fix. Real parts only (the installed command as a subprocess, RE2 itself); no test
asserts on elapsed time (a subprocess ``timeout`` is a hang guard).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import build_kind
from ioa_semantic.pipeline.shapes import PatternNotTranslated, xpath_regex

from support import IOA_CHECK

HANG_GUARD = 300  # seconds: a hang guard, never a measure


def ioa(args: list[Any], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=HANG_GUARD, check=False)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


# --- shapes: a pattern RE2 would read otherwise is refused (item 1) ---------------------------


@pytest.mark.parametrize("pattern", [
    "a{,3}",     # no lower bound: Python's re reads {0,3}, RE2 the five characters "a{,3}"
    "a{1",       # an unclosed quantifier: RE2 reads it literally
    "a{ 1}",     # a space in a quantifier: RE2 reads it literally
    "a{1,x}",
    "{",
    "a}",        # '}' and ']' are metacharacters in XPath, never literal characters
    "a]",
])
def test_a_brace_or_bracket_xpath_does_not_allow_is_refused_not_read_literally(
        pattern: str) -> None:
    """Issue 35 item 1: a pattern RE2 cannot read as XPath does is refused as unsupported,
    never evaluated with another meaning. XPath (XML Schema 2 appendix F) has ``{``, ``}``
    and ``]`` only as quantifier and class syntax; RE2 reads a brace that does not open a
    well-formed quantifier as a literal character, so these patterns matched the literal
    text ("a{,3}" matched the string ``a{,3}`` and not ``aa``)."""
    with pytest.raises(PatternNotTranslated):
        xpath_regex(pattern)


@pytest.mark.parametrize(("pattern", "flags", "value", "matches"), [
    ("^a{2}$", "", "aa", True),
    ("^a{2,}$", "", "aaaa", True),
    ("^a{2,3}$", "", "aaaa", False),
    ("^a{0,1}?b$", "", "ab", True),
    ("^a{1, 3}$", "x", "aaa", True),   # the x flag takes the space out first
    ("a{,3}", "q", "xa{,3}", True),   # and under q every character is itself
    (r"^\{\}\]$", "", "{}]", True),
    ("^[{}]+$", "", "}{", True),
])
def test_well_formed_quantifiers_and_escaped_braces_still_read_as_xpath(
        pattern: str, flags: str, value: str, matches: bool) -> None:
    """Issue 35 item 1: the refusal above takes nothing XPath allows."""
    assert bool(xpath_regex(pattern, flags).search(value)) is matches


def test_the_work_of_translating_a_pattern_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35 item 1 ("the same bound for lint"): a pattern is translated where the profile
    is read (lint, check, serve's start), outside any worker and any --shape-timeout. A
    class subtracting one category from another (30 characters) cost some 400,000 steps
    (every pair of ranges), so a 100 kB pattern of them ran for a minute; and the escapes'
    code points had no bound. Counted in ranges passed through the translation's one
    merging step: refused, after a bounded amount of work (it was about 8 million)."""
    from ioa_semantic.pipeline import shapes

    merged = shapes._merged
    seen = [0]

    def counting(ranges: Any) -> Any:
        ranges = list(ranges)
        seen[0] += len(ranges)
        return merged(ranges)

    shapes._category_ranges(("Lu",))  # the categories, read once a process, not counted
    monkeypatch.setattr(shapes, "_merged", counting)
    hostile = r"[\p{Lu}\p{Mn}\p{Po}-[\p{Ll}\p{Mc}]]" * 3000
    with pytest.raises(PatternNotTranslated):
        shapes.xpath_pattern(hostile)
    # Compiled, the translation calls _merged directly and takes no patch: the refusal alone
    # is held there, and the pure build's run holds the count.
    if build_kind() == "pure":
        assert 0 < seen[0] < 2_000_000


def test_a_class_subtraction_is_the_difference_of_its_code_points() -> None:
    """Issue 35 item 1: the subtraction, now one walk over both classes, still takes away
    exactly the code points of the subtracted class (checked against sets)."""
    import random

    from ioa_semantic.pipeline.shapes import _merged, _minus

    rng = random.Random(35)

    def ranges() -> Any:
        return _merged((a, a + rng.randint(0, 9)) for a in
                       (rng.randint(0, 200) for _ in range(rng.randint(0, 12))))

    def points(rs: Any) -> set[int]:
        return {c for low, high in rs for c in range(low, high + 1)}

    for _ in range(500):
        base, sub = ranges(), ranges()
        assert points(_minus(base, sub)) == points(base) - points(sub)
    assert xpath_regex(r"^[\p{L}-[\p{Lu}]]+$").search("abcß")
    assert not xpath_regex(r"^[\p{L}-[\p{Lu}]]+$").search("abC")


def _profile_with_shapes(folder: Path, shapes: str) -> Path:
    from ioa_semantic import data as _resources

    text = _resources.read_text("profiles", "legal-translation.ttl").replace(
        'iop:shapes "legal-translation.shapes.ttl"', 'iop:shapes "deep.shapes.ttl"')
    assert "deep.shapes.ttl" in text
    (folder / "deep.shapes.ttl").write_text(shapes)
    (folder / "deep.ttl").write_text(text)
    return folder / "deep.ttl"


def test_a_chain_of_shapes_thousands_deep_is_judged_not_a_traceback(tmp_path: Path) -> None:
    """Issue 35 item 1 (and "bad input gets a verdict or a clear error, never a
    traceback"): the walk that finds recursive shapes recursed in Python, so a profile whose
    shapes refer to one another (sh:node) 5,000 deep made lint and every check end in a
    RecursionError traceback, exit 70. The walk keeps its own stack now: lint answers, and
    a check gets a verdict."""
    from support import AT, EXAMPLES

    depth = 5000
    lines = ["@prefix sh: <http://www.w3.org/ns/shacl#> .",
             "@prefix ex: <https://example.org/deep#> .",
             "ex:S0 a sh:NodeShape ; sh:targetClass "
             "<https://ioa-semantic.org/ns/profile#TaskParameters> ; sh:node ex:S1 ."]
    lines += [f"ex:S{i} a sh:NodeShape ; sh:node ex:S{i + 1} ." for i in range(1, depth)]
    lines.append(f"ex:S{depth} a sh:NodeShape ; sh:property [ sh:path "
                 "<https://ioa-semantic.org/ns/parameter#jurisdiction> ; sh:minLength 1 ] .")
    profile = _profile_with_shapes(tmp_path, "\n".join(lines) + "\n")
    linted = ioa(["lint", profile, tmp_path / "deep.shapes.ttl", "--shape-timeout", "5"],
                 tmp_path)
    assert linted.returncode in (0, 1), linted.stderr.decode()
    checked = ioa([EXAMPLES / "legal-contract.jsonld", "--profile", profile, "--at", AT,
                   "--shape-timeout", "5", "--param", "jurisdiction=x", "--param",
                   "sourceLang=en", "--param", "targetLang=de", "--format", "json"], tmp_path)
    assert checked.returncode in (0, 1, 3), checked.stderr.decode()[-2000:]


# --- no file not ours is overwritten (item 4) --------------------------------------------------


def _golden() -> Path:
    from test_trace import GOLDEN

    if not GOLDEN.is_dir():
        pytest.skip("../shared/reference is absent")
    return GOLDEN


# A user's own Turtle: shapes over the mas ontology (as oxp-ontology's own
# mas-shapes-custom.ttl is), naming the vocabularies an emitted graph uses.
USER_SHAPES = b"""# my shapes for the trip planner's traces: hand-written
@prefix mas: <https://outshift-open.github.io/oxp-ontology/mas#> .
@prefix ioat: <https://example.org/ioa/trace#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://example.org/mine#CallShape> a sh:NodeShape ; sh:targetClass mas:ProcessingCall ;
    sh:property [ sh:path ioat:agent ; sh:minCount 1 ] .
"""
USER_JSONLD = (b'{"@context": {"mas": "https://outshift-open.github.io/oxp-ontology/mas#"},\n'
               b' "@id": "https://example.org/mine#notes", "mas:description": "my notes"}\n')


@pytest.mark.parametrize(("name", "content"), [("mine.ttl", USER_SHAPES),
                                               ("mine.jsonld", USER_JSONLD)])
def test_emit_kg_refuses_a_users_file_that_names_the_trace_vocabularies(
        tmp_path: Path, name: str, content: bytes) -> None:
    """Issue 35 item 4: ``--emit-kg`` replaced any file that so much as named the mas or
    ioat vocabulary, such as a user's hand-written shapes over the mas ontology: a graph
    ``--emit-kg`` wrote is told by its first subject, one of the trace's own IRIs."""
    path = tmp_path / name
    path.write_bytes(content)
    proc = ioa(["trace", _golden(), "--no-shapes", "--format", "json", "--emit-kg", name],
               tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()
    assert name.encode() in proc.stderr
    assert path.read_bytes() == content


@pytest.mark.parametrize("content", [
    b'{"file": "rows.csv", "rows": 120}\n{"file": "more.csv", "rows": 7}\n',  # JSON Lines
    b'["north", "south", "east", "west"]\n',
    b'["north", "south"]',  # minified JSON, no line end: whole, so not a torn entry
])
def test_an_audit_journal_path_holding_a_users_json_lines_is_refused(
        tmp_path: Path, content: bytes) -> None:
    """Issue 35 item 4: ``audit --state S`` claimed ``S.index`` when its first line was any
    JSON object with a "file" member or any array of four, or when a one-line file began
    with "[": a user's JSON Lines or minified JSON there was emptied. A journal's line is
    told by its whole form; only a line that does not parse is a torn one."""
    from support import EXAMPLES

    (tmp_path / "s.index").write_bytes(content)
    proc = ioa(["audit", EXAMPLES / "registration-6.3.jsonld", "--profile", "cs-translation",
                "--jobs", "1", "--output", "out.json", "--format", "json", "--state", "s"],
               tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()
    assert b"s.index" in proc.stderr
    assert (tmp_path / "s.index").read_bytes() == content


def test_a_resumable_audit_refuses_a_stream_for_its_output(tmp_path: Path) -> None:
    """Issue 35 item 4 (and "bad input gets a clear error"): ``audit --state S --output P``
    re-reads and truncates its output to resume; with P a named pipe (or /dev/null, or
    /dev/stdout on a pipe) it failed as the environment's fault, "cannot write p: None"
    (exit 74), after opening the pipe. A stream cannot be resumed: a usage error that says
    so, before anything is opened or written, the pipe left as it was."""
    from support import EXAMPLES

    os.mkfifo(tmp_path / "p")
    for output in ("p", "/dev/null"):
        proc = ioa(["audit", EXAMPLES / "registration-6.3.jsonld", "--profile", "cs-translation",
                    "--jobs", "1", "--output", output, "--format", "json", "--state", "s"],
                   tmp_path)
        assert proc.returncode == 2, proc.stderr.decode()
        assert output.encode() in proc.stderr and b"None" not in proc.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


def test_output_to_dev_stdout_writes_the_standard_output_whatever_it_is(tmp_path: Path) -> None:
    """Issue 35 item 4, decided as a careful user expects: ``--output /dev/stdout`` (or
    /dev/stderr, /dev/fd/1) is the command's own standard output, written through the
    descriptor the shell opened, so ``>> log`` appends. It was refused ("a symbolic link")
    whenever standard output was a file, and reopening the name would have truncated the
    log the shell opened for appending."""
    from support import EXAMPLES

    assert ioa(["keygen", "--output", "signing.pem"], tmp_path).returncode == 0
    log = tmp_path / "log"
    for command in (["sign", "cs-doc-v1", "--key", "signing.pem", "--created",
                     "2026-06-01T00:00:00Z", "--output", "/dev/stdout"],
                    ["audit", EXAMPLES / "registration-6.3.jsonld", "--profile",
                     "cs-translation", "--jobs", "1", "--format", "json", "--output",
                     "/dev/fd/1"]):
        log.write_bytes(b"kept\n")
        with log.open("ab") as appended:
            proc = subprocess.run([IOA_CHECK, *map(str, command)], cwd=tmp_path,
                                  stdout=appended, stderr=subprocess.PIPE,
                                  timeout=HANG_GUARD, check=False)
        assert proc.returncode == 0, proc.stderr.decode()
        written = log.read_bytes()
        assert written.startswith(b"kept\n{") and len(written) > 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log", "signing.pem"]
    # A resumable audit still refuses it: its output must be read back.
    with log.open("ab") as appended:
        proc = subprocess.run([IOA_CHECK, "audit", EXAMPLES / "registration-6.3.jsonld",
                               "--profile", "cs-translation", "--format", "json", "--output",
                               "/dev/stdout", "--state", "s"], cwd=tmp_path, stdout=appended,
                              stderr=subprocess.PIPE, timeout=HANG_GUARD, check=False)
    assert proc.returncode == 2 and b"/dev/stdout" in proc.stderr


# --- the service (item 2) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from test_service import Service

    folder = tmp_path_factory.mktemp("served")
    with Service(["--profile", "cs-translation", "--threads", "1", "--header-timeout", "5"],
                 folder, folder / "stderr.log") as service:
        yield service


def _exchange(url: str, request: bytes, *, closes: bool) -> tuple[bytes, bool]:
    """``request`` sent whole on a connection of its own: everything answered, and whether
    the server closed the connection after it.

    Read until the server closes, or, when the test expects it not to (``closes`` false),
    until it has answered and then gone quiet for 2 s. Where a close is expected, only the
    hang guard ends the wait: a server slow to close on a loaded machine still closes, and
    a quiet spell of 2 s would have said it kept the connection open. Where it is not, a slow
    machine can only make the quiet spell come sooner, never a close."""
    import socket

    from test_service import HANG

    host, port = url.removeprefix("http://").rsplit(":", 1)
    answer = b""
    with socket.create_connection((host, int(port)), timeout=HANG) as sock:
        try:
            sock.sendall(request)
            while True:
                sock.settimeout(2 if b"\r\n\r\n" in answer and not closes else HANG)
                data = sock.recv(65536)
                if not data:
                    return answer, True
                answer += data
        except TimeoutError:
            return answer, False  # still open: the server waits for the next request
        except ConnectionResetError:  # closed while the request was still being sent
            return answer, True


def test_transfer_encoding_with_content_length_is_refused_and_the_connection_closed(
        served: Any) -> None:
    """Issue 35 item 2 (every ambiguous framing refused): a request with both
    ``Transfer-Encoding: chunked`` and ``Content-Length`` was read by its chunks (h11) and the
    connection kept open; a proxy in front that frames by Content-Length reads another
    request there (request smuggling). RFC 9112 6.1: reject it, or answer and close the
    connection; it is now 400 with ``Connection: close``, and the connection is closed."""
    import json

    from support import AT, envelope_62

    body = json.dumps(envelope_62()).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = (f"POST /v1/check?at={AT} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
            f"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n").encode()
    answer, closed = _exchange(served.url, head + chunked, closes=True)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:300]
    assert b"transfer-encoding" in answer.lower().partition(b"\r\n\r\n")[2]
    assert closed
    # The same body with chunked framing alone is judged, on a kept connection.
    alone = head.replace(b"Content-Length: 4\r\n", b"")
    answer, closed = _exchange(served.url, alone + chunked, closes=False)
    assert answer.startswith(b"HTTP/1.1 200 ") and not closed, answer[:300]


def test_a_head_of_many_fields_is_refused_cleanly(served: Any) -> None:
    """Issue 35 item 2 (held, no fix needed): a head of 100,000 header fields (900 kB, far
    past the 16 KiB h11 holds of an incomplete head) is a 4xx answer and a closed
    connection, never a crash; the server goes on."""
    import httpx

    head = b"GET /healthz HTTP/1.1\r\nHost: a\r\n" + b"X-A: b\r\n" * 100_000 + b"\r\n"
    answer, closed = _exchange(served.url, head, closes=True)
    # the answer may be lost to the reset of a connection closed while it still sent
    assert answer.startswith(b"HTTP/1.1 4") or answer == b"", answer[:300]
    assert closed
    assert httpx.get(f"{served.url}/healthz", timeout=60).status_code == 200


def test_a_worker_killed_from_outside_is_answered_503_or_replaced_never_500(
        tmp_path: Path) -> None:
    """Issue 35 item 2 (a check past its bound is stopped and the server goes on): a check
    worker killed by an outside signal (an operator, the OOM killer) while idle left a dead
    worker in the pool; the next check wrote to its pipe, and the broken pipe was a 500
    "internal error" with a traceback on stderr, as a bug. Now a dead idle worker is
    replaced before a check is given to it, a pipe that breaks under a check is a lost
    worker (503), and a worker killed in the middle of a check is 503 too, after which an
    ordinary check gets its verdict."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    import signal
    from concurrent.futures import ThreadPoolExecutor

    import httpx
    from test_service import HANG, Service, check, problem_of
    from test_service_hardening import (
        HOSTILE,
        NO_SHAPE_BOUND,
        ORDINARY,
        alive,
        contract,
        cpu,
        hostile_profile,
        needs_proc,
        wait_for,
        workers,
    )

    if needs_proc.args[0]:
        pytest.skip("needs Linux's /proc")
    with Service(["--profile", str(hostile_profile(tmp_path)), "--threads", "1",
                  "--timeout", str(HANG), *NO_SHAPE_BOUND], tmp_path,
                 tmp_path / "stderr.log") as service, \
            ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=HANG) as client:
        assert client.get(f"{service.url}/healthz").status_code == 200
        # Killed while idle: the next check is still judged.
        [idle] = workers(service.process.pid)
        os.kill(idle, signal.SIGKILL)
        wait_for(lambda: not alive(idle), "the idle worker's end")
        ordinary = check(client, service.url, contract(), ORDINARY)
        assert ordinary.status_code == 200, ordinary.text
        # Killed in the middle of a check: 503, then the next check is judged.
        before = cpu(service.process.pid)
        hostile = pool.submit(check, client, service.url, contract(), HOSTILE)
        wait_for(lambda: cpu(service.process.pid) > before + 1, "the hostile check")
        [busy] = workers(service.process.pid)
        os.kill(busy, signal.SIGKILL)
        stopped = hostile.result(HANG)
        assert stopped.status_code == 503 and stopped.headers["retry-after"] == "1"
        assert "could not be finished" in problem_of(stopped, 503, "check-lost")["detail"]
        for _ in range(10):  # a fresh worker starts within the check's bound (see the module)
            ordinary = check(client, service.url, contract(), ORDINARY)
            if ordinary.status_code == 200:
                break
        assert ordinary.status_code == 200 and ordinary.json()["verdict"] == "compatible"
    assert "internal error" not in service.log.read_text()
    assert "Traceback" not in service.log.read_text()


# --- IRIs (item 6) -----------------------------------------------------------------------------


def test_a_profile_iri_with_a_bidi_formatting_character_is_refused(tmp_path: Path) -> None:
    """Issue 35 item 6: an envelope's IRIs were held to RFC 3987 4.1, a profile's were not: a
    profile named ``<https://example.org/profiles/cs-\\u202etranslation>`` linted ``ok`` and
    every check's text report wrote the RIGHT-TO-LEFT OVERRIDE raw to the terminal,
    reordering what the reader saw. Such a profile is now an error (exit 2), the character
    named, never written raw."""
    from ioa_semantic import data as _resources

    text = _resources.read_text("profiles", "cs-translation.ttl")
    name = "<https://example.org/profiles/cs-translation>"
    assert name in text
    (tmp_path / "p.ttl").write_text(text.replace(name, name.replace("cs-", "cs-\u202e")))
    linted = ioa(["lint", "p.ttl"], tmp_path)
    assert linted.returncode != 0 and b"U+202E" in linted.stdout + linted.stderr
    from support import AT, EXAMPLES

    checked = ioa([EXAMPLES / "envelope-6.2.jsonld", "--profile", "./p.ttl", "--at", AT],
                  tmp_path)
    assert checked.returncode == 2 and b"U+202E" in checked.stderr
    assert "\u202e".encode() not in linted.stdout + linted.stderr + checked.stdout + checked.stderr


def test_a_shape_file_iri_with_a_bidi_formatting_character_is_refused(tmp_path: Path) -> None:
    """Issue 35 item 6: a shape named ``<https://example.org/s#H\\u202eX>`` linted ``ok``,
    and every finding it made wrote its name, the override raw, into the sender's text
    report. A shape file's IRIs are held to RFC 3987 4.1 as a profile's are: lint reports
    the file, and a check under the profile is a configuration error (exit 2)."""
    from support import AT, EXAMPLES

    profile = _profile_with_shapes(tmp_path, (
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "<https://example.org/s#H\u202eX> a sh:NodeShape ; sh:targetClass "
        "<https://ioa-semantic.org/ns/profile#TaskParameters> ; sh:property [ sh:path "
        "<https://ioa-semantic.org/ns/parameter#jurisdiction> ; sh:pattern \"^[0-9]+$\" ] .\n"))
    linted = ioa(["lint", profile, tmp_path / "deep.shapes.ttl"], tmp_path)
    assert linted.returncode == 1 and b"U+202E" in linted.stdout, linted.stdout
    checked = ioa([EXAMPLES / "legal-contract.jsonld", "--profile", profile, "--at", AT,
                   "--param", "jurisdiction=x", "--param", "sourceLang=en", "--param",
                   "targetLang=de"], tmp_path)
    assert checked.returncode == 2 and b"U+202E" in checked.stderr
    assert "\u202e".encode() not in linted.stdout + checked.stdout + checked.stderr


# --- traces: manifests a hostile author wrote (items 1 and 8) ----------------------------------


def _manifests_with(tmp_path: Path, before_spec: str) -> Path:
    import shutil

    from test_trace import MANIFESTS

    if not MANIFESTS.is_dir():
        pytest.skip("../shared/reference is absent")
    folder = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, folder)
    agent = folder / "agents" / "moderator.yaml"
    text = agent.read_text()
    assert "\nspec:\n" in text
    agent.write_text(text.replace("\nspec:\n", f"\n{before_spec}\nspec:\n", 1))
    return folder


BILLION_LAUGHS = "x-laughs:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  {b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))


def test_a_manifests_alias_bomb_is_read_in_steps_of_its_size(tmp_path: Path) -> None:
    """Issue 35 items 1 and 8 (no input a sender or an author chooses holds the tool): a
    "billion laughs" of YAML anchors (nine levels of ten aliases, 600 bytes) in an agent's
    manifest made the walk looking for repeated keys follow every alias, 10^9 steps, so
    ``trace`` ran for ever. The walk visits each shared object once: counted in the lists
    it iterates, one a level (it was 10^levels)."""
    from ioa_semantic.trace import declarations

    class Counted(list):  # type: ignore[type-arg]
        iterations = 0

        def __iter__(self) -> Any:
            Counted.iterations += 1
            return super().__iter__()

    level = Counted(["lol"] * 10)
    for _ in range(5):
        level = Counted([level] * 10)
    assert declarations._has_repeats({"x-laughs": level}) is False
    assert Counted.iterations <= 6
    # The command, on the nine-level bomb, ends (a hang guard, no timing) and judges the run.
    folder = _manifests_with(tmp_path, BILLION_LAUGHS)
    proc = ioa(["trace", _golden(), "--manifests", folder, "--no-shapes", "--format", "json"],
               tmp_path)
    assert proc.returncode in (0, 1, 3), proc.stderr.decode()


def test_a_manifest_nested_past_the_parsers_depth_is_a_finding_not_a_traceback(
        tmp_path: Path) -> None:
    """Issue 35 item 8 ("bad input gets a verdict or a clear error, never a traceback"): an
    agent manifest nesting 50,000 lists deep ended ``trace`` in PyYAML's RecursionError,
    exit 70. It is now a manifest that cannot be read, said as such in the run's verdict."""
    folder = _manifests_with(tmp_path, "x-deep: " + "[" * 50_000 + "]" * 50_000)
    proc = ioa(["trace", _golden(), "--manifests", folder, "--no-shapes", "--format", "json"],
               tmp_path)
    assert proc.returncode in (1, 3), proc.stderr.decode()[-2000:]
    assert b"moderator.yaml nests too deeply to be read" in proc.stdout


# A JSON line nested past what Python's json reads (it decodes by recursion).
DEEP_JSON = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"


@pytest.mark.parametrize("case", ["audit --output", "audit --state", "audit journal",
                                  "sign --output", "sign --key", "trace --bindings"])
def test_a_file_nested_past_jsons_depth_is_refused_not_a_traceback(
        tmp_path: Path, case: str) -> None:
    """Issue 35 item 4 ("exit 2, file untouched") and "bad input gets a clear error, never a
    traceback": the checks that tell our files from others' (and the readers of a key, a
    state and bindings) parsed a user's JSON with ``json.loads``, whose RecursionError on a
    line nested 100,000 deep was not caught: exit 70, a traceback. Each is now refused."""
    from support import AT, EXAMPLES

    registration = EXAMPLES / "registration-6.3.jsonld"
    audit: list[Any] = ["audit", registration, "--profile", "cs-translation", "--jobs", "1",
                        "--at", AT]
    victim = tmp_path / "deep.json"
    victim.write_bytes(DEEP_JSON)
    if case.startswith("sign"):
        assert ioa(["keygen", "--output", "signing.pem"], tmp_path).returncode == 0
    line: list[Any] = {
        "audit --output": [*audit, "--output", victim],
        "audit --state": [*audit, "--output", "out.json", "--format", "json", "--state", victim],
        "audit journal": [*audit, "--output", "out.json", "--format", "json", "--state",
                          tmp_path / "deep"],
        "sign --output": ["sign", "cs-doc-v1", "--key", "signing.pem", "--output", victim],
        "sign --key": ["sign", "cs-doc-v1", "--key", victim],
        "trace --bindings": ["trace", _golden() if case.startswith("trace") else "",
                             "--no-shapes", "--bindings", victim],
    }[case]
    if case == "audit journal":
        (tmp_path / "deep.index").write_bytes(DEEP_JSON)
        victim = tmp_path / "deep.index"
    proc = ioa(line, tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()[-2000:]
    assert victim.read_bytes() == DEEP_JSON


def test_a_check_text_report_shows_hidden_characters_of_a_shapes_message(
        tmp_path: Path) -> None:
    """Issue 35 item 6's reason (text that reads otherwise than it is), in the check's text
    report: a profile's ``sh:message`` (and any text a reason quotes as it is) went to the
    terminal raw, so a RIGHT-TO-LEFT OVERRIDE reordered the line and an ESC sequence could
    retitle or clear the terminal. The text report now shows each such character as its
    code point (``<U+202E>``), as the trace report does; JSON keeps the text as it is."""
    from support import AT, EXAMPLES

    profile = _profile_with_shapes(tmp_path, (
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "<https://example.org/s#Digits> a sh:NodeShape ; sh:targetClass "
        "<https://ioa-semantic.org/ns/profile#TaskParameters> ; sh:property [ sh:path "
        "<https://ioa-semantic.org/ns/parameter#jurisdiction> ; sh:pattern \"^[0-9]+$\" ; "
        "sh:message \"digits \\u202Eonly\\u001B]0;x\\u0007\" ] .\n"))
    checked = ioa([EXAMPLES / "legal-contract.jsonld", "--profile", profile, "--at", AT,
                   "--param", "jurisdiction=x", "--param", "sourceLang=en", "--param",
                   "targetLang=de"], tmp_path)
    assert checked.returncode == 1, checked.stderr.decode()
    assert b"digits <U+202E>only<U+001B>]0;x<U+0007>" in checked.stdout
    assert not any(c in checked.stdout for c in (b"\x1b", b"\x07", "\u202e".encode()))


def test_trace_state_and_emit_kg_at_one_path_is_a_usage_error(tmp_path: Path) -> None:
    """Issue 35 item 4 (no file lost): ``trace --state x.ttl --emit-kg x.ttl`` was run
    (exit 3) and the graph replaced the state it had just written, so the run could not be
    resumed and the next one refused the path. Two outputs at one path (or at two names of
    one file) are a usage error, before anything is written."""
    (tmp_path / "x.ttl").write_bytes(b"")
    (tmp_path / "link.ttl").symlink_to("x.ttl")
    for state, graph in (("x.ttl", "x.ttl"), ("x.ttl", "./x.ttl"), ("link.ttl", "x.ttl")):
        proc = ioa(["trace", _golden(), "--no-shapes", "--state", state, "--emit-kg", graph],
                   tmp_path)
        assert proc.returncode == 2, proc.stderr.decode()
        assert b"--emit-kg" in proc.stderr and (tmp_path / "x.ttl").read_bytes() == b""


@pytest.mark.parametrize("output", ["s.index", "./s", "s"])
def test_an_audit_report_at_its_states_path_is_a_usage_error(tmp_path: Path, output: str) -> None:
    """Issue 35 item 4 (no data lost): ``audit --output s.index --state s`` ran to the end,
    exit 0, and the report was gone: the journal, at the report's path, is removed once the
    audit is complete. ``--output s --state s`` left an empty ``s`` and said "cannot resume
    from s: it is not JSON". The report at the state's or the journal's path is a usage
    error, said before anything is written."""
    from support import AT, EXAMPLES

    proc = ioa(["audit", EXAMPLES / "registration-6.3.jsonld", "--profile", "cs-translation",
                "--jobs", "1", "--at", AT, "--format", "json", "--output", output, "--state",
                "s"], tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()
    assert b"--state s keeps" in proc.stderr
    assert list(tmp_path.iterdir()) == []
