"""Review: every artifact a decision considered is in its dependencies, and ``at`` is an instant.

Contract 3 rule 15: the JSON output's ``dependencies`` shows every validity limit a decision
depends on. An artifact retrieved for a check (an ``--alignment`` URL, an envelope's
``alignmentRef``) is considered as an offered one is, so its limits and the instant's side
of each are listed as an offered one's are: offered artifacts first, in the order offered,
then the retrieved ones, in the order retrieved. The servers are real, on loopback
(tests/retrieval_servers.py).

The library's ``at`` is an evaluation instant: a datetime with a UTC offset. A naive one (or
anything else) is a caller's bad argument, refused with :class:`ConfigurationError` as the
command line refuses ``--at`` without an offset, never a ``TypeError`` from deep inside nor a
decision dated at no instant.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker, ConfigurationError, Verdict, check

from retrieval_servers import LoopbackServer, Reply
from support import ACCEPTED_MAPPING, IOA_CHECK, artifact_124, dumps

PARAMS = {"sourceLang": "zh", "targetLang": "en"}
AT = datetime(2026, 6, 1, tzinfo=UTC)
VALID_FROM = "2026-03-01T00:00:00Z"
ENGINES = ("compiled", "reference")


def _artifact(**members: Any) -> bytes:
    """The 12.4 artifact with ``members`` set (an id of its own, a validFrom)."""
    return json.dumps({**artifact_124(), **members}, indent=2).encode()


def _served(body: bytes) -> Reply:
    return Reply(body, content_type="application/json")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    # Paths whose artifacts name themselves are filled in once the port is known.
    with LoopbackServer({"/later.json": _served(_artifact(validFrom=VALID_FROM))}) as running:
        yield running


def _url(server: LoopbackServer, path: str) -> str:
    return server.url(path, host="127.0.0.1")


def _checker(server: LoopbackServer, alignments: list[str | Path], engine: str) -> Checker:
    return Checker("cs-translation", capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                   alignments=alignments, allow_remote=[server.origin("127.0.0.1")],
                   allow_private_addresses=True, engine=engine)


def _limits(entry: dict[str, Any]) -> tuple[Any, ...]:
    return (entry["artifactId"], entry["validFrom"], entry["validUntil"],
            entry["notYetValidAtEvaluation"], entry["expiredAtEvaluation"])


@pytest.mark.parametrize("engine", ENGINES)
def test_an_artifact_offered_by_url_is_in_the_dependencies_with_its_limits(
        server: LoopbackServer, engine: str) -> None:
    checker = _checker(server, [_url(server, "/later.json")], engine)
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    served = _artifact(validFrom=VALID_FROM)

    valid = checker.check(envelope, params=PARAMS, at=AT)
    assert valid.verdict is Verdict.COMPATIBLE, valid.findings
    [entry] = valid.dependencies["artifacts"]
    assert _limits(entry) == ("https://example.org/align/cs-doc-v1", VALID_FROM,
                              "2026-12-31T00:00:00Z", False, False)
    # The same shape as an offered artifact's entry, and the bytes the retrieval recorded.
    assert entry["sha256"] == hashlib.sha256(served).hexdigest()
    assert entry["sha256"] == valid.dependencies["retrieved"][0]["sha256"]
    assert entry["revision"] == "1" and entry["verificationMethod"] is None
    assert entry["proofCreated"] is None and entry["proofExpires"] is None
    assert not entry["proofNotYetValidAtEvaluation"] and not entry["proofExpiredAtEvaluation"]

    # Before its validFrom it is excluded, and the dependencies say which side of it the
    # instant fell on.
    early = checker.check(envelope, params=PARAMS, at=datetime(2026, 2, 1, tzinfo=UTC))
    assert early.verdict is Verdict.INDETERMINATE
    [entry] = early.dependencies["artifacts"]
    assert entry["validFrom"] == VALID_FROM and entry["notYetValidAtEvaluation"] is True


@pytest.mark.parametrize("engine", ENGINES)
def test_offered_artifacts_come_first_then_the_retrieved_in_retrieval_order(
        server: LoopbackServer, engine: str, tmp_path: Path) -> None:
    referenced = _url(server, "/referenced.json")
    offered_url = _url(server, "/offered.json")
    # The artifact the alignmentRef names has that URL as its artifactId, so that it is the
    # one considered (the others are excluded as not referenced, and listed all the same).
    server.routes["/referenced.json"] = _served(_artifact(artifactId=referenced,
                                                          validFrom="2026-04-01T00:00:00Z"))
    server.routes["/offered.json"] = _served(_artifact(artifactId=offered_url,
                                                       validUntil="2026-09-01T00:00:00Z"))
    local = tmp_path / "local.json"
    local.write_bytes(_artifact(validFrom="2026-01-01T00:00:00Z"))
    envelope = json.loads((ACCEPTED_MAPPING / "envelope.jsonld").read_text())
    envelope["@context"]["alignmentRef"] = {"@id": "ioa:alignmentRef", "@type": "@id"}
    envelope["alignmentRef"] = referenced

    decision = _checker(server, [offered_url, local], engine).check(
        dumps(envelope), params=PARAMS, at=AT)
    assert decision.verdict is Verdict.COMPATIBLE, decision.findings
    assert decision.evidence[0]["artifactId"] == referenced
    assert [r["url"] for r in decision.dependencies["retrieved"]] == [offered_url, referenced]
    assert [_limits(e) for e in decision.dependencies["artifacts"]] == [
        ("https://example.org/align/cs-doc-v1", "2026-01-01T00:00:00Z", "2026-12-31T00:00:00Z",
         False, False),
        (offered_url, None, "2026-09-01T00:00:00Z", False, False),
        (referenced, "2026-04-01T00:00:00Z", "2026-12-31T00:00:00Z", False, False),
    ]


def test_the_command_line_lists_a_retrieved_artifact(server: LoopbackServer) -> None:
    """The reviewer's reproducer: ``--alignment URL`` with ``--format json``."""
    result = subprocess.run(
        [IOA_CHECK, str(ACCEPTED_MAPPING / "envelope.jsonld"), "--profile", "cs-translation",
         "--capability", str(ACCEPTED_MAPPING / "provider.jsonld"),
         "--alignment", _url(server, "/later.json"),
         "--allow-remote", server.origin("127.0.0.1"), "--allow-private-addresses",
         "--param", "sourceLang=zh", "--param", "targetLang=en",
         "--at", "2026-06-01T00:00:00Z", "--format", "json"],
        capture_output=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert decision["verdict"] == "compatible"
    assert [_limits(e) for e in decision["dependencies"]["artifacts"]] == [
        ("https://example.org/align/cs-doc-v1", VALID_FROM, "2026-12-31T00:00:00Z", False, False)]


# --- the evaluation instant ----------------------------------------------------------------

NOT_INSTANTS = [datetime(2026, 6, 1), "2026-06-01T00:00:00Z", date(2026, 6, 1)]


@pytest.mark.parametrize("at", NOT_INSTANTS, ids=["naive", "text", "date"])
@pytest.mark.parametrize("offered", [True, False], ids=["artifact-offered", "none-offered"])
def test_an_at_without_a_utc_offset_is_a_configuration_error(at: Any, offered: bool) -> None:
    checker = Checker("cs-translation", capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                      alignments=[ACCEPTED_MAPPING / "align0.json"] if offered else [])
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    with pytest.raises(ConfigurationError, match=r"at must be an aware datetime \(with a UTC offset"):
        checker.check(envelope, params=PARAMS, at=at)
    # Any offset names an instant: 01:00 two hours east of UTC is 23:00 the day before in
    # UTC, before the artifact's validUntil (2026-12-31T00:00:00Z), so it is still valid.
    east = checker.check(envelope, params=PARAMS,
                         at=datetime(2026, 12, 31, 1, tzinfo=timezone(timedelta(hours=2))))
    assert east.verdict is (Verdict.COMPATIBLE if offered else Verdict.INDETERMINATE)
    assert east.at == "2026-12-31T01:00:00+02:00"


def test_the_one_off_check_refuses_a_naive_at() -> None:
    envelope = (ACCEPTED_MAPPING / "envelope.jsonld").read_bytes()
    with pytest.raises(ConfigurationError, match="aware datetime"):
        check(envelope, capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
              alignments=[ACCEPTED_MAPPING / "align0.json"], params=PARAMS,
              at=datetime(2026, 6, 1))
