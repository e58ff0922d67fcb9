"""The service as other tools expect it (issue 38, item 2): an OpenAPI 3.1 document that
openapi-spec-validator accepts, an interactive API page served from the package (no
network), CORS for the origins the operator names and for no other, and every error answer
as RFC 9457 problem details. The servers are ``ioa-check serve`` as real processes on
loopback (tests/test_service.py's :class:`Service`); what only a bug or a stop can cause is
shown on the application in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import html.parser
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_service import HANG, Service, _raw_request, dumps, problem_of

from ioa_semantic.service import api_page, openapi, problems
from ioa_semantic.service.limits import ServiceLimits

from support import AT, IOA_CHECK, envelope_62

APP = "https://app.example"
OTHER = "https://elsewhere.example"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The shipped profile, two origins named for CORS (one as an operator may write it)."""
    folder = tmp_path_factory.mktemp("served")
    with Service(["--profile", "cs-translation", "--cors-origin", "HTTPS://App.Example:443",
                  "--cors-origin", "http://localhost:3000"], folder,
                 folder / "stderr.log") as service:
        yield service


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """No --cors-origin."""
    folder = tmp_path_factory.mktemp("plain-api")
    with Service(["--profile", "cs-translation"], folder, folder / "stderr.log") as service:
        yield service


def _app(**options: Any) -> Any:
    from ioa_semantic import Checker
    from ioa_semantic.cli.serve import build_app

    return build_app(Checker("cs-translation"), **options)


# --- the OpenAPI document ---------------------------------------------------------------------


def test_the_running_services_document_passes_openapi_spec_validator(served: Service) -> None:
    from openapi_spec_validator import validate

    document = httpx.get(f"{served.url}/openapi.json", timeout=HANG).json()
    validate(document)
    assert document["openapi"].startswith("3.1.")


@pytest.mark.parametrize("limits", [ServiceLimits(), ServiceLimits(
    max_body_bytes=1000, timeout=2.5, header_timeout=1, audits=1)])
def test_the_document_passes_openapi_spec_validator(limits: ServiceLimits) -> None:
    """Every reference is the document's own: the check result's schema is embedded without
    the $id that made its references relative to itself (which the validator refused)."""
    from openapi_spec_validator import validate

    document = openapi.document(limits)
    validate(document)
    text = repr(document)
    assert "'$id'" not in text and "#/$defs/" not in text
    schemas = document["components"]["schemas"]
    assert {"CheckResult", "Reason", "Remedy", "Problem"} <= set(schemas)


def test_the_embedded_result_schema_judges_as_the_shipped_one(served: Service) -> None:
    """The shipped schema and the document's components accept and refuse the same results."""
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    from ioa_semantic import data as _resources

    document = openapi.document(ServiceLimits())
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    validator = jsonschema.Draft202012Validator(
        {"$ref": "urn:openapi#/components/schemas/CheckResult"},
        registry=Registry().with_resource("urn:openapi", resource))
    shipped = jsonschema.Draft202012Validator(_resources.read_json("", "output.schema.json"))
    result = httpx.post(f"{served.url}/v1/check", params={"at": AT}, content=dumps(envelope_62()),
                        headers={"Content-Type": "application/ld+json"}, timeout=HANG).json()
    assert validator.is_valid(result) and shipped.is_valid(result)
    broken = {**result, "reasons": [{"code": "x"}]}  # a reason without its members
    assert not validator.is_valid(broken) and not shipped.is_valid(broken)


def test_every_route_the_app_serves_is_in_the_document() -> None:
    from starlette.routing import Route

    app = _app()
    try:
        served = {(route.path, method.lower()) for route in app.routes
                  if isinstance(route, Route) for method in route.methods or ()
                  if method != "HEAD"}
    finally:
        app.state.service.close()
    document = openapi.document(ServiceLimits())
    described = {(path, method) for path, item in document["paths"].items() for method in item}
    assert served == described
    assert ("/docs", "get") in served and ("/docs/{asset}", "get") in served


def test_every_error_answer_in_the_document_is_problem_details() -> None:
    document = openapi.document(ServiceLimits())
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert response["content"] == {"application/problem+json": {"schema": {
                        "$ref": "#/components/schemas/Problem"}}}, (path, method, status)
    # Every type the service answers is one the schema lists.
    assert set(document["components"]["schemas"]["Problem"]["properties"]["type"]["enum"]) == {
        p.uri for p in problems.PROBLEMS.values()}


# --- the API page -----------------------------------------------------------------------------


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [value for name, value in attrs if name in ("src", "href") and value]


def test_the_api_page_and_its_assets_come_from_this_server(served: Service) -> None:
    with httpx.Client(base_url=served.url, timeout=HANG) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert not re.search(r"(?i)\bhttps?:|//[a-z]", page.text), "the page names a URL"
        parser = _Links()
        parser.feed(page.text)
        linked = [link for link in parser.links if not link.startswith("data:")]
        assert sorted(linked) == ["docs/api.js", "docs/swagger-ui-bundle.js",
                                  "docs/swagger-ui.css"]
        folder = api_page.vendor_folder()
        assert folder is not None
        for link in linked:
            url = page.url.join(link)
            assert (url.scheme, url.host, url.port) == (page.url.scheme, page.url.host,
                                                        page.url.port)
            asset = client.get(url)
            assert asset.status_code == 200, link
            assert asset.headers["x-content-type-options"] == "nosniff"
            name = link.rpartition("/")[2]
            assert asset.headers["content-type"] == api_page.ASSETS[name]
            if name in api_page.VENDOR_ASSETS:  # the package's own files, as they are
                assert asset.content == (folder / name).read_bytes()
        # The page's script loads this server's document, relative to the page.
        script = client.get("/docs/api.js").text
        assert re.search(r'url: "openapi\.json"', script)
        assert not re.search(r"(?i)https?:", script)
        assert page.url.join("openapi.json") == httpx.URL(f"{served.url}/openapi.json")
        # The policy lets the page fetch, load and run from this server only.
        policy = page.headers["content-security-policy"]
        sources = {token for directive in policy.split(";") for token in directive.split()[1:]}
        assert sources == {"'self'", "'none'", "'unsafe-inline'", "data:"}
        assert "default-src 'none'" in policy and "connect-src 'self'" in policy
        assert client.get("/docs/index.html").status_code == 404
        problem_of(client.get("/docs/swagger-ui.js"), 404, "")
        problem_of(client.get("/docs", params={"x": "1"}), 400, "bad-query")


def test_without_swagger_ui_py_the_api_page_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_page, "vendor_folder", lambda: None)
    app = _app()

    async def get(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get(path)

    try:
        for path in ("/docs", "/docs/swagger-ui.css", "/docs/api.js"):
            body = problem_of(asyncio.run(get(path)), 404, "")
            assert "pip install 'ioa-semantic[serve]'" in body["detail"], path
        assert asyncio.run(get("/healthz")).status_code == 200
    finally:
        app.state.service.close()


# --- CORS -------------------------------------------------------------------------------------


def _preflight(client: httpx.Client, origin: str, method: str = "POST",
               headers: str = "content-type") -> httpx.Response:
    return client.options("/v1/check", headers={
        "Origin": origin, "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers})


def test_a_named_origins_preflight_gets_the_cors_headers_and_another_does_not(
        served: Service) -> None:
    with httpx.Client(base_url=served.url, timeout=HANG) as client:
        allowed = _preflight(client, APP)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == APP
        assert "POST" in allowed.headers["access-control-allow-methods"]
        assert "content-type" in allowed.headers["access-control-allow-headers"].lower()
        local = _preflight(client, "http://localhost:3000")
        assert local.headers["access-control-allow-origin"] == "http://localhost:3000"
        for refused in (_preflight(client, OTHER), _preflight(client, "http://localhost:3001"),
                        _preflight(client, APP, method="DELETE"),
                        _preflight(client, APP, headers="content-type, x-secret")):
            assert not any(h.startswith("access-control-") for h in refused.headers), (
                refused.headers)
            problem_of(refused, 400, "cors-refused")
    # Each preflight has its access line.
    assert sum(m.group(1) == "OPTIONS" for m in served.access_lines()) >= 6


def test_a_named_origin_reads_answers_and_problems_and_another_does_not(
        served: Service) -> None:
    body = dumps(envelope_62())
    with httpx.Client(base_url=served.url, timeout=HANG) as client:
        for origin, allowed in ((APP, True), (OTHER, False)):
            answered = client.post("/v1/check", params={"at": AT}, content=body, headers={
                "Origin": origin, "Content-Type": "application/ld+json"})
            refused = client.post("/v1/check", content=body, headers={
                "Origin": origin, "Content-Type": "text/plain"})
            late = client.get("/nowhere", headers={"Origin": origin})
            assert answered.json()["verdict"] == "compatible"
            problem_of(refused, 415, "unsupported-media-type")
            problem_of(late, 404, "")
            for response in (answered, refused, late):
                assert response.headers.get("access-control-allow-origin") == (
                    origin if allowed else None)
                assert "origin" in response.headers.get("vary", "").lower()
            if allowed:
                exposed = refused.headers["access-control-expose-headers"].lower()
                assert "retry-after" in exposed


def test_without_cors_origins_no_cors_header_is_sent(plain: Service) -> None:
    with httpx.Client(base_url=plain.url, timeout=HANG) as client:
        preflight = _preflight(client, APP)
        problem_of(preflight, 405, "")
        simple = client.get("/healthz", headers={"Origin": APP})
        assert simple.status_code == 200
        for response in (preflight, simple):
            assert not any(h.startswith("access-control-") for h in response.headers)


def test_cors_origins_are_read_as_origins() -> None:
    from ioa_semantic.cli.serve import _origin

    assert _origin("HTTPS://App.Example:443") == "https://app.example"
    assert _origin("http://localhost:3000/") == "http://localhost:3000"
    assert _origin("http://[::1]:8000") == "http://[::1]:8000"
    for wrong in ("*", "app.example", "ftp://app.example", "https://app.example/path",
                  "https://user@app.example", "https://app.example:99999", "https://"):
        with pytest.raises(argparse.ArgumentTypeError):
            _origin(wrong)
    run = subprocess.run([IOA_CHECK, "serve", "--profile", "cs-translation", "--cors-origin",
                          "*"], capture_output=True, timeout=HANG, check=False)
    assert run.returncode == 2 and b"is not an origin" in run.stderr and not run.stdout


def test_worker_processes_are_given_the_cors_origins() -> None:
    from ioa_semantic.cli.serve import _argv_of, add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    opts = parser.parse_args(["--profile", "cs-translation", "--cors-origin", APP,
                              "--cors-origin", "http://localhost:3000"])
    again = parser.parse_args(_argv_of(opts))
    assert again.cors_origin == [APP, "http://localhost:3000"]


def test_serve_help_says_it_all() -> None:
    run = subprocess.run([IOA_CHECK, "serve", "--help"], capture_output=True, timeout=HANG,
                         check=True)
    text = " ".join(run.stdout.decode().split())
    for said in ("--cors-origin ORIGIN", "/docs", "OpenAPI 3.1", "problem details",
                 "application/problem+json"):
        assert said in text, said


# --- problem details for every status ---------------------------------------------------------


def test_a_head_h11_refuses_is_problem_details(plain: Service) -> None:
    sock, answer = _raw_request(plain.url, "GET /healthz HTTP/1.1\r\nHost a\r\n", b"")
    sock.close()
    assert "not valid HTTP/1.1" in problem_of(answer, 400, "bad-request-head")["detail"]


def test_a_head_that_never_arrives_is_a_408_problem(tmp_path: Path) -> None:
    with Service(["--profile", "cs-translation", "--header-timeout", "1"], tmp_path,
                 tmp_path / "stderr.log") as service:
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=HANG) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    problem_of(answer, 408, "late-request")


def test_audits_past_their_number_or_their_time_are_503_problems(tmp_path: Path) -> None:
    """One audit at once, its body held open (a line begun, never ended): another audit is
    refused (busy); the held one, having written nothing by --audit-timeout, is refused
    (audit-timed-out)."""
    with Service(["--profile", "cs-translation", "--audits", "1", "--audit-timeout", "2"],
                 tmp_path, tmp_path / "stderr.log") as service:
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=HANG) as held, \
                httpx.Client(timeout=HANG) as client:
            held.sendall(b"POST /v1/audit HTTP/1.1\r\nHost: a\r\nContent-Type: "
                         b"application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"5\r\n{\"a\":\r\n")
            # The held audit is counted once its head is read: until then another one runs.
            for _ in range(200):
                other = client.post(f"{service.url}/v1/audit", content=b"{}\n",
                                    headers={"Content-Type": "application/x-ndjson"})
                if other.status_code == 503:
                    break
            assert "1 audit(s) at once" in problem_of(other, 503, "busy")["detail"]
            assert other.headers["retry-after"] == "5"
            answer = b""
            while chunk := held.recv(65536):
                answer += chunk
                if answer.endswith(b"}\n"):
                    break
    assert "time bound of 2 s" in problem_of(answer, 503, "audit-timed-out")["detail"]


def test_a_bug_is_a_500_problem_and_a_stop_a_503_problem() -> None:
    """What the handlers let escape: a bug (its trace on stderr, not in the answer), and the
    cancellation uvicorn makes of what runs past --shutdown-timeout."""
    from ioa_semantic.service.app import Faults

    async def buggy(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a secret of the server")

    async def stopped(scope: Any, receive: Any, send: Any) -> None:
        raise asyncio.CancelledError

    async def get(app: Any) -> httpx.Response:
        transport = httpx.ASGITransport(app=Faults(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/")

    bug = asyncio.run(get(buggy))
    assert "secret" not in problem_of(bug, 500, "")["detail"]
    stop = asyncio.run(get(stopped))
    problem_of(stop, 503, "stopping")
    assert stop.headers["retry-after"] == "1"


def test_a_bugs_trace_in_the_log_shows_what_a_request_could_hide_in_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A bug's trace goes to the service's log (stderr); an exception's message may quote a
    request's text, whose escape sequences a terminal or a log viewer would obey (clear the
    screen, retitle the window, forge a line). Each is shown as its code point; the trace's
    own lines stay lines."""
    from ioa_semantic.service.app import Faults

    async def buggy(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a name \x1b]0;owned\x07 and \x1b[2J\rforged line")

    async def get(app: Any) -> httpx.Response:
        transport = httpx.ASGITransport(app=Faults(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/")

    problem_of(asyncio.run(get(buggy)), 500, "")
    log = capsys.readouterr().err
    assert "\x1b" not in log and "\x07" not in log and "\r" not in log
    assert "<U+001B>]0;owned<U+0007> and <U+001B>[2J<U+000D>forged line" in log
    assert "Traceback (most recent call last):\n" in log


def test_the_problem_types_are_documented() -> None:
    """docs/serve.md lists every problem type: its URI, status and title."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "serve.md").read_text()
    for kind in problems.PROBLEMS.values():
        row = f"| `{kind.uri}` | {kind.status} | {kind.title} |"
        assert row in page, row
