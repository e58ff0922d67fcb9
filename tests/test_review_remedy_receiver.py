"""Review (h59): who can fix a retrieval that failed depends on who named the resource.

A remote context or an ``alignmentRef`` is the sender's: a fetch of it that failed is the
sender's to ``retry``, and its fix is to inline the context (the 6.1 baseline). The
receiver's own settings are not: its ``--profile`` URL, a shape file its profile pins, an
artifact it offers by ``--alignment`` URL. A fetch of one of those that failed stays
``retrieval.failed`` (or its own code), and its remedy and fix are the receiver's: correct
the URL or the allow-list, or name a local file or an installed profile or artifact. No
sender's action changes it, and no context of the sender's is involved.

Nothing is fetched from the network: a refused connection on loopback port 9 (as the case
``remedy-retry-refused-connection`` uses) and loopback servers (tests/retrieval_servers.py).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic import Checker, Verdict
from ioa_semantic import data as _resources
from ioa_semantic._codes import finding, fix_for
from ioa_semantic.pipeline import remedies

from retrieval_servers import LoopbackServer
from support import ACCEPTED_MAPPING, IOA_CHECK, dumps, envelope_62

AT = datetime(2026, 6, 1, tzinfo=UTC)
# Nothing answers there: every fetch is a refused connection, retrieval.failed at once.
REFUSING = "https://127.0.0.1:9"
PARAMS = {"sourceLang": "zh", "targetLang": "en"}
SHAPES = b"""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
<https://example.org/house#S> a sh:NodeShape ; sh:targetClass ioa:SemanticProfile ;
    sh:property [ sh:path ioa:capabilityRefs ; sh:minCount 1 ] .
"""
ANCHOR = "    iop:trustedIssuer <https://example.org/mapping-authority> ."
# What a fix for the sender's contexts says; never said of the receiver's own settings.
SENDERS_FIX = "inline the context"


def ioa_check(args: list[str], cwd: Path, form: str = "json") -> tuple[int, str]:
    proc = subprocess.run([IOA_CHECK, *args, "--at", "2026-06-01T00:00:00Z", "--format", form],
                          cwd=cwd, capture_output=True, timeout=120, text=True)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout


def one_result(args: list[str], cwd: Path) -> tuple[int, dict[str, Any]]:
    status, out = ioa_check(args, cwd)
    (line,) = out.splitlines()
    return status, json.loads(line)


def fix_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("fix:")]


@pytest.fixture
def envelope(tmp_path: Path) -> Path:
    (tmp_path / "e.jsonld").write_bytes(dumps(envelope_62()))
    return tmp_path


# --- the receiver's profile ------------------------------------------------------------------


def test_a_profile_url_that_cannot_be_fetched_is_the_receivers_to_fix(envelope: Path) -> None:
    url = f"{REFUSING}/p.ttl"
    args = ["e.jsonld", "--profile", url, "--allow-remote", REFUSING,
            "--allow-private-addresses"]
    status, result = one_result(args, envelope)
    assert (status, result["verdict"]) == (3, "indeterminate")
    assert [r["code"] for r in result["reasons"]] == ["retrieval.failed"]
    assert result["remedies"] == [
        {"action": "retry", "by": "receiver", "codes": ["retrieval.failed"], "url": url}]
    status, text = ioa_check(args, envelope, "text")
    assert status == 3
    assert "(by the receiver; answers retrieval.failed)" in text
    (fix,) = fix_lines(text)
    assert SENDERS_FIX not in fix and "--profile" in fix and "local file" in fix, fix


def test_a_profile_url_the_server_refuses_is_the_receivers_to_fix(envelope: Path) -> None:
    with LoopbackServer({}) as http:  # every path is 404
        url = http.url("/p.ttl", host="127.0.0.1")
        status, result = one_result(["e.jsonld", "--profile", url, "--allow-remote",
                                     http.origin("127.0.0.1"), "--allow-private-addresses"],
                                    envelope)
    assert (status, [r["code"] for r in result["reasons"]]) == (3, ["retrieval.http-status"])
    assert result["remedies"] == [
        {"action": "retry", "by": "receiver", "codes": ["retrieval.http-status"], "url": url}]


def test_a_profile_url_without_retrieval_names_the_receivers_policy(envelope: Path) -> None:
    url = "https://example.org/p.ttl"
    status, result = one_result(["e.jsonld", "--profile", url], envelope)
    assert (status, [r["code"] for r in result["reasons"]]) == (3, ["retrieval.prohibited"])
    assert result["remedies"] == [{"action": "allow-retrieval", "by": "receiver",
                                   "codes": ["retrieval.prohibited"], "url": url}]
    _, text = ioa_check(["e.jsonld", "--profile", url], envelope, "text")
    (fix,) = fix_lines(text)
    assert SENDERS_FIX not in fix and "--allow-remote" in fix, fix


def _pinning_profile(folder: Path, url: str, origin: str) -> Path:
    text = _resources.read_text("profiles", "cs-translation.ttl")
    assert ANCHOR in text
    pinned = (f'iop:shapes "{url}" ;\n    iop:retrieval [ iop:allowOrigin "{origin}" ; '
              f'iop:allowPrivateAddresses true ; iop:pin [ iop:url "{url}" ; '
              f'iop:sha256 "{hashlib.sha256(SHAPES).hexdigest()}" ] ]')
    path = folder / "house.ttl"
    path.write_text(text.replace(ANCHOR, ANCHOR[:-2] + f" ;\n    {pinned} ."))
    return path


def test_a_shape_file_the_profile_pins_that_cannot_be_fetched_is_the_receivers(
        envelope: Path) -> None:
    url = f"{REFUSING}/house.shapes.ttl"
    _pinning_profile(envelope, url, REFUSING)
    args = ["e.jsonld", "--profile", "house.ttl"]
    status, result = one_result(args, envelope)
    assert (status, [r["code"] for r in result["reasons"]]) == (3, ["retrieval.failed"])
    assert result["profile"]["id"] == "https://example.org/profiles/cs-translation"
    assert result["remedies"] == [
        {"action": "retry", "by": "receiver", "codes": ["retrieval.failed"], "url": url}]
    _, text = ioa_check(args, envelope, "text")
    (fix,) = fix_lines(text)
    assert SENDERS_FIX not in fix, fix


# --- an artifact the receiver offers by URL --------------------------------------------------


def test_an_offered_artifact_url_that_cannot_be_fetched_is_the_receivers() -> None:
    url = f"{REFUSING}/align.json"
    checker = Checker("cs-translation", capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                      alignments=[url], allow_remote=[REFUSING], allow_private_addresses=True)
    decision = checker.check((ACCEPTED_MAPPING / "envelope.jsonld").read_bytes(),
                             params=PARAMS, at=AT)
    assert decision.verdict is Verdict.INDETERMINATE
    assert [r.as_dict() for r in decision.remedies if r.action == "retry"] == [
        {"action": "retry", "by": "receiver", "codes": ["retrieval.failed"], "url": url}]
    (reason,) = [r for r in decision.reasons if r.code == "retrieval.failed"]
    assert reason.path == url
    assert SENDERS_FIX not in fix_for(reason.code, remedies.named_by_receiver(reason))


def test_an_offered_artifact_url_that_cannot_be_fetched_in_the_text_report(tmp_path: Path) -> None:
    url = f"{REFUSING}/align.json"
    status, text = ioa_check([str(ACCEPTED_MAPPING / "envelope.jsonld"), "--profile",
                              "cs-translation", "--capability",
                              str(ACCEPTED_MAPPING / "provider.jsonld"), "--alignment", url,
                              "--allow-remote", REFUSING, "--allow-private-addresses",
                              "--param", "sourceLang=zh", "--param", "targetLang=en"],
                             tmp_path, "text")
    assert status == 3
    assert "(by the receiver; answers retrieval.failed)" in text
    assert "(by the sender" not in text.split("to proceed:")[1].split("retry:")[1].splitlines()[0]
    assert all(SENDERS_FIX not in fix for fix in fix_lines(text)), text


# --- what the sender names keeps the sender's remedy -----------------------------------------


def test_the_senders_context_keeps_the_senders_remedy(tmp_path: Path) -> None:
    url = f"{REFUSING}/context.jsonld"
    document = envelope_62()
    document["@context"] = [url, {"cs": "https://example.org/onto/cs#"}]
    (tmp_path / "e.jsonld").write_bytes(dumps(document))
    args = ["e.jsonld", "--profile", "cs-translation", "--allow-remote", REFUSING,
            "--allow-private-addresses"]
    status, result = one_result(args, tmp_path)
    assert (status, result["remedies"]) == (3, [
        {"action": "retry", "by": "sender", "codes": ["retrieval.failed"], "url": url}])
    _, text = ioa_check(args, tmp_path, "text")
    (fix,) = fix_lines(text)
    assert SENDERS_FIX in fix


def test_the_senders_alignment_ref_keeps_the_senders_remedy() -> None:
    url = f"{REFUSING}/align.json"
    document = json.loads((ACCEPTED_MAPPING / "envelope.jsonld").read_text())
    document["@context"]["alignmentRef"] = {"@id": "ioa:alignmentRef", "@type": "@id"}
    document["alignmentRef"] = url
    checker = Checker("cs-translation", capabilities=[ACCEPTED_MAPPING / "provider.jsonld"],
                      allow_remote=[REFUSING], allow_private_addresses=True)
    decision = checker.check(dumps(document), params=PARAMS, at=AT)
    assert decision.verdict is Verdict.INDETERMINATE
    assert [r.as_dict() for r in decision.remedies if r.action == "retry"] == [
        {"action": "retry", "by": "sender", "codes": ["retrieval.failed"], "url": url}]


# --- the remedy of a reason by its kind ------------------------------------------------------


@pytest.mark.parametrize(("code", "action"), [("retrieval.failed", "retry"),
                                              ("retrieval.timeout", "retry"),
                                              ("retrieval.http-status", "retry"),
                                              ("retrieval.origin-not-allowed", "allow-retrieval"),
                                              ("retrieval.prohibited", "allow-retrieval")])
def test_a_reason_about_the_receivers_resource_has_the_receivers_remedy(code: str,
                                                                        action: str) -> None:
    url = "https://profiles.example/p.ttl"
    reason = finding(code, "not retrieved", url, subject=remedies.receivers(url))
    assert remedies.named_by_receiver(reason)
    assert remedies.of_reason(reason) == remedies.remedy(action, remedies.RECEIVER, (code,),
                                                         url=url)
    senders = finding(code, "not retrieved", "/@context", subject=url)
    assert not remedies.named_by_receiver(senders)
    assert remedies.of_reason(senders).by == (  # type: ignore[union-attr]
        remedies.SENDER if action == "retry" else remedies.RECEIVER)
    assert SENDERS_FIX not in fix_for(code, receivers=True)


def test_every_retrieval_code_has_a_fix_for_the_receivers_own_resources() -> None:
    from ioa_semantic._codes import CODES

    for code in CODES:
        if code.startswith("retrieval."):
            fix = fix_for(code, receivers=True)
            assert fix and SENDERS_FIX not in fix, code
