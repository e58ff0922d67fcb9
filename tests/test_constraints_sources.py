"""Where a profile's shape files come from (issue 23, item 1): beside the profile, by an
absolute path, or by URL under the retrieval policy, pinned; through the library and the
installed command, from another folder. A remote file is fetched from a real server on
loopback (tests/retrieval_servers.py).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker, ConfigurationError, Verdict
from ioa_semantic import data as _resources

from retrieval_servers import LoopbackServer, Reply
from support import IOA_CHECK, dumps, envelope_62

AT = datetime(2026, 6, 1, tzinfo=UTC)
SHAPES = b"""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix ex: <https://example.org/house-rules#> .
ex:OneCapability a sh:NodeShape ; sh:targetClass ioa:SemanticProfile ;
    sh:property [ sh:path ioa:capabilityRefs ; sh:minCount 2 ; sh:message "two capabilities" ] .
"""
ANCHOR = "    iop:trustedIssuer <https://example.org/mapping-authority> ."


def profile_text(extra: str) -> str:
    text = _resources.read_text("profiles", "cs-translation.ttl")
    assert ANCHOR in text
    return text.replace(ANCHOR, ANCHOR[:-2] + f" ;\n    {extra} .")


def pinned(url: str, digest: str, origin: str) -> str:
    return (f'iop:shapes "{url}" ;\n    iop:retrieval [ iop:allowOrigin "{origin}" ; '
            f'iop:allowPrivateAddresses true ; iop:pin [ iop:url "{url}" ; iop:sha256 "{digest}" ] ]')


def codes(decision: object) -> list[str]:
    return [f.code for f in decision.findings]  # type: ignore[attr-defined]


@pytest.fixture
def http() -> Iterator[LoopbackServer]:
    routes = {"/house.shapes.ttl": Reply(SHAPES, content_type="text/turtle"),
              "/dir/house.shapes.ttl": Reply(SHAPES, content_type="text/turtle")}
    with LoopbackServer(routes) as server:
        yield server


def run(args: list[str], cwd: Path) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run([IOA_CHECK, *args, "--at", "2026-06-01T00:00:00Z", "--format", "json"],
                          cwd=cwd, capture_output=True, timeout=60, text=True)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, [json.loads(x) for x in proc.stdout.splitlines()], proc.stderr


def test_a_relative_shape_file_is_read_beside_the_profile_from_any_folder(tmp_path: Path) -> None:
    folder, elsewhere = tmp_path / "profiles", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    (folder / "house.shapes.ttl").write_bytes(SHAPES)
    (folder / "house.ttl").write_text(profile_text('iop:shapes "house.shapes.ttl"'))
    (elsewhere / "envelope.jsonld").write_bytes(dumps(envelope_62()))
    status, (out,), _ = run(["envelope.jsonld", "--profile", "../profiles/house.ttl"], elsewhere)
    assert status == 1 and out["verdict"] == "incompatible"
    assert [r["code"] for r in out["reasons"]] == ["constraint.shape-violated"]
    (shapes,) = out["dependencies"]["profile"]["shapes"]
    assert shapes == {"reference": "house.shapes.ttl",
                      "sha256": hashlib.sha256(SHAPES).hexdigest()}


def test_an_absolute_shape_file(tmp_path: Path) -> None:
    (tmp_path / "house.shapes.ttl").write_bytes(SHAPES)
    path = tmp_path / "house.ttl"
    path.write_text(profile_text(f'iop:shapes "{tmp_path / "house.shapes.ttl"}"'))
    decision = Checker(str(path)).check(dumps(envelope_62()), at=AT)
    assert codes(decision) == ["constraint.shape-violated"]


@pytest.mark.parametrize(("content", "says"), [(None, "cannot be read"),
                                               (b"not turtle <<", "not valid Turtle")])
def test_a_shape_file_that_cannot_be_read_is_a_configuration_error(
        tmp_path: Path, content: bytes | None, says: str) -> None:
    if content is not None:
        (tmp_path / "house.shapes.ttl").write_bytes(content)
    path = tmp_path / "house.ttl"
    path.write_text(profile_text('iop:shapes "house.shapes.ttl"'))
    with pytest.raises(ConfigurationError, match=says):
        Checker(str(path))
    (tmp_path / "envelope.jsonld").write_bytes(dumps(envelope_62()))
    status, out, error = run(["envelope.jsonld", "--profile", str(path)], tmp_path)
    assert (status, out) == (2, [])
    assert "house.shapes.ttl" in error


def test_a_pinned_url_is_fetched_once_when_the_checker_is_built(http: LoopbackServer,
                                                                tmp_path: Path) -> None:
    url = http.url("/house.shapes.ttl", host="127.0.0.1")
    path = tmp_path / "house.ttl"
    path.write_text(profile_text(pinned(url, hashlib.sha256(SHAPES).hexdigest(),
                                        http.origin("127.0.0.1"))))
    checker = Checker(str(path))
    for _ in range(3):
        assert codes(checker.check(dumps(envelope_62()), at=AT)) == ["constraint.shape-violated"]
    assert http.requests == ["/house.shapes.ttl"]


def test_an_unpinned_url_is_refused_before_anything_is_fetched(http: LoopbackServer,
                                                               tmp_path: Path) -> None:
    url = http.url("/house.shapes.ttl", host="127.0.0.1")
    path = tmp_path / "house.ttl"
    path.write_text(profile_text(
        f'iop:shapes "{url}" ;\n    iop:retrieval [ iop:allowOrigin "{http.origin("127.0.0.1")}" ; '
        'iop:allowPrivateAddresses true ]'))
    with pytest.raises(ConfigurationError, match="not pinned"):
        Checker(str(path))
    assert http.requests == []


def test_a_changed_remote_shape_file_makes_every_check_indeterminate(http: LoopbackServer,
                                                                     tmp_path: Path) -> None:
    url = http.url("/house.shapes.ttl", host="127.0.0.1")
    path = tmp_path / "house.ttl"
    path.write_text(profile_text(pinned(url, "0" * 64, http.origin("127.0.0.1"))))
    (tmp_path / "envelope.jsonld").write_bytes(dumps(envelope_62()))
    status, (out,), _ = run(["envelope.jsonld", "--profile", str(path)], tmp_path)
    assert status == 3 and out["verdict"] == "indeterminate"
    assert [r["code"] for r in out["reasons"]] == ["retrieval.pin-mismatch"]
    # The profile was read: the decision names it, not the shape file.
    assert out["profile"] == {"id": "https://example.org/profiles/cs-translation", "revision": "1"}


def test_a_remote_profile_names_its_shapes_relative_to_its_own_url(tmp_path: Path) -> None:
    with LoopbackServer({}) as server:
        shapes_url = server.url("/dir/house.shapes.ttl", host="127.0.0.1")
        text = profile_text(pinned("house.shapes.ttl", hashlib.sha256(SHAPES).hexdigest(),
                                   server.origin("127.0.0.1")))
        # The pin names the URL the relative reference resolves to.
        text = text.replace('iop:url "house.shapes.ttl"', f'iop:url "{shapes_url}"')
        server.routes["/dir/house.ttl"] = Reply(text.encode(), content_type="text/turtle")
        server.routes["/dir/house.shapes.ttl"] = Reply(SHAPES, content_type="text/turtle")
        checker = Checker(server.url("/dir/house.ttl", host="127.0.0.1"),
                          allow_remote=[server.origin("127.0.0.1")], allow_private_addresses=True)
        decision = checker.check(dumps(envelope_62()), at=AT)
    assert decision.verdict is Verdict.INCOMPATIBLE
    assert codes(decision) == ["constraint.shape-violated"]
    assert server.requests == ["/dir/house.ttl", "/dir/house.shapes.ttl"]
