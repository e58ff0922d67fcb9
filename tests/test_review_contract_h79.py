"""A review of the whole contract through the installed command, each finding held here:

* an ``incompatible`` result from a unit conflict (the task's value, or an offered
  capability's, stated in another unit than the profile's) carried no remedy, where the
  contract's table says ``renegotiate`` answers "a completed check found a conflict
  (``incompatible``)": it now names the parameter and the profile's unit;
* a blank version in a profile was read as a version (draft 5.2: non-empty);
* an offered capability whose ``@context`` is remote was refused as "remote retrieval is off
  by policy" whatever ``--allow-remote`` allowed (contract 1: retrieval "is only enabled by
  an explicit allow-list", and then it is): it is retrieved under the Checker's policy and
  recorded in every decision's dependencies (rule 15), and one that cannot be retrieved is a
  configuration error naming its ``retrieval.`` reason;
* an offered artifact that is malformed, untrusted or not yet valid went unreported when no
  capability was offered (contract 1: "a readable artifact that is malformed is excluded at
  check time with its reasons"; rule 9: each exclusion is reported): artifacts are screened
  whatever is offered, in both engines;
* a registration's ``"inputs": [5]`` was said to be "/inputs has the wrong JSON type: an
  array" (an array is what it must be): each item of the wrong type is said at its place;
* an integer of 5,000 digits (valid JSON) was "not JSON", with the interpreter's advice to
  raise ``sys.set_int_max_str_digits()``: it is over a limit, said in the input's words;
* a domain the carrier gave (``--param domain=``) that the profile does not permit was
  reported at ``/profileContext/domain``, where the envelope's own (permitted) domain stands:
  no path of the envelope holds the carrier's value;
* a profile term standing on a node no setting reaches was said to be at the line where the
  term is first used (rightly, on the profile), not where it stands wrongly.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from retrieval_servers import LoopbackServer, Reply
from support import ACCEPTED_MAPPING, EXAMPLES, IOA_CHECK, ROOT

MB = "http://qudt.org/vocab/unit/MegaBYTE"
KB = "http://qudt.org/vocab/unit/KiloBYTE"
AT = "2026-06-01T00:00:00Z"


def ioa(*args: Any, cwd: Path) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([IOA_CHECK, *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=60)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def _in_megabytes(document: dict[str, Any]) -> dict[str, Any]:
    document["@context"]["qudt"] = "http://qudt.org/schema/qudt/"
    document.setdefault("profileContext", document)["documentSize"] = {
        "qudt:numericValue": 2, "qudt:unit": {"@id": MB}}
    return document


def test_a_unit_conflict_is_answered_by_renegotiating_the_parameter_in_the_profiles_unit(
        tmp_path: Path) -> None:
    envelope = json.loads((EXAMPLES / "sized" / "envelope.jsonld").read_text())
    (tmp_path / "task-mb.jsonld").write_text(json.dumps(_in_megabytes(json.loads(
        json.dumps(envelope)))))
    (tmp_path / "envelope.jsonld").write_text(json.dumps(envelope))
    provider = json.loads((EXAMPLES / "sized" / "provider.jsonld").read_text())
    del provider["documentSize"]
    provider["@context"]["qudt"] = "http://qudt.org/schema/qudt/"
    provider["documentSize"] = {"qudt:numericValue": 1, "qudt:unit": {"@id": MB}}
    (tmp_path / "provider-mb.jsonld").write_text(json.dumps(provider))
    for args, code in ((["task-mb.jsonld"], "constraint.unit-conflict"),
                       (["envelope.jsonld", "--capability", "provider-mb.jsonld",
                         "--alignment", "cs-doc-v1"], "capability.unit-conflict")):
        status, decision = ioa(*args, "--profile", "cs-translation-sized", "--at", AT,
                               "--format", "json", cwd=tmp_path)
        assert (status, decision["verdict"]) == (1, "incompatible"), decision
        assert code in [reason["code"] for reason in decision["reasons"]]
        assert {"action": "renegotiate", "by": "sender", "codes": [code],
                "field": "documentSize", "comparison": "atMost", "unit": KB, "permitted": []
                } in decision["remedies"], decision["remedies"]


def test_a_blank_version_in_a_profile_is_a_configuration_error_naming_the_term(
        tmp_path: Path) -> None:
    """Draft 5.2: "one non-empty version string"; the contract: a value of the wrong kind in
    a profile is exit 2, naming the term."""
    shipped = (ROOT / "ioa_semantic" / "data" / "profiles" / "cs-translation.ttl").read_text()
    for old, new, term in (('iop:ontologyVersion "1.0"', 'iop:ontologyVersion ""',
                            "iop:ontologyVersion"),
                           ('iop:ontologyVersion "1.0"', 'iop:ontologyVersion "  "',
                            "iop:ontologyVersion"),
                           ('iop:revision "', 'iop:revision " "; rdfs:comment "', "iop:revision")):
        assert old in shipped
        (tmp_path / "p.ttl").write_text(shipped.replace(old, new, 1))
        proc = subprocess.run([IOA_CHECK, str(EXAMPLES / "sized" / "envelope.jsonld"),
                               "--profile", "p.ttl", "--at", AT], cwd=tmp_path,
                              capture_output=True, timeout=60)
        assert (proc.returncode, proc.stdout) == (2, b""), (new, proc.stderr)
        assert term in proc.stderr.decode() and "blank" in proc.stderr.decode()


def test_a_capability_with_a_remote_context_is_read_where_the_allow_list_allows_it(
        tmp_path: Path) -> None:
    provider = json.loads((ACCEPTED_MAPPING / "provider.jsonld").read_text())
    context = json.dumps({"@context": provider["@context"]}).encode()
    with LoopbackServer({"/p.jsonld": Reply(context, content_type="application/ld+json")}
                        ) as server:
        url = server.url("/p.jsonld", host="127.0.0.1")
        (tmp_path / "remote.jsonld").write_text(json.dumps({**provider, "@context": url}))
        base = [ACCEPTED_MAPPING / "envelope.jsonld", "--profile", "cs-translation",
                "--capability", "remote.jsonld", "--alignment", ACCEPTED_MAPPING / "align0.json",
                "--param", "sourceLang=zh", "--param", "targetLang=en", "--at", AT,
                "--format", "json"]
        status, decision = ioa(*base, "--allow-remote", server.origin("127.0.0.1"),
                               "--allow-private-addresses", cwd=tmp_path)
        assert (status, decision["verdict"]) == (0, "compatible"), decision
        (capability,) = decision["dependencies"]["capabilities"]
        assert capability["retrieved"] == [{"url": url, "finalUrl": url, "sha256": hashlib.sha256(
            context).hexdigest()}]
        # Without the allow-list: not retrieved, the registration unread, exit 2.
        proc = subprocess.run([IOA_CHECK, *map(str, base)], cwd=tmp_path, capture_output=True,
                              timeout=60)
        assert (proc.returncode, proc.stdout) == (2, b"")
        assert b"retrieval.prohibited" in proc.stderr


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_an_offered_artifact_is_screened_and_its_exclusion_reported_without_capabilities(
        tmp_path: Path, engine: str) -> None:
    (tmp_path / "empty.json").write_bytes(b"")
    future = json.loads((ACCEPTED_MAPPING / "align0.json").read_text())
    future["validFrom"] = "2026-09-01T00:00:00Z"
    (tmp_path / "future.json").write_text(json.dumps(future))
    status, decision = ioa(ACCEPTED_MAPPING / "envelope.jsonld", "--profile", "cs-translation",
                           "--alignment", "empty.json", "--alignment", "future.json",
                           "--engine", engine, "--param", "sourceLang=zh", "--param",
                           "targetLang=en", "--at", AT, "--format", "json", cwd=tmp_path)
    assert (status, decision["verdict"]) == (0, "compatible"), decision
    assert sorted((item["source"], item["code"]) for item in decision["excluded"]) == [
        ("empty.json", "alignment.malformed"), ("future.json", "alignment.not-yet-valid")]
    assert {r["code"] for r in decision["reasons"] if r["severity"] == "info"} >= {
        "alignment.malformed", "alignment.not-yet-valid"}


def test_an_integer_longer_than_the_interpreter_converts_is_over_a_limit_in_the_inputs_words(
        tmp_path: Path) -> None:
    """Valid JSON, never "not JSON", and never the interpreter's advice to the operator."""
    (tmp_path / "big.json").write_text('{"a": ' + "9" * 5000 + "}")
    status, decision = ioa("big.json", "--profile", "cs-translation", "--at", AT,
                           "--format", "json", cwd=tmp_path)
    assert (status, decision["verdict"]) == (4, "invalid")
    ((code, message),) = [(r["code"], r["message"]) for r in decision["reasons"]]
    assert code == "json.too-large" and "integer of more than 4300 digits" in message
    assert "sys." not in message


def test_an_item_of_the_wrong_json_type_is_said_at_its_place_not_its_arrays(
        tmp_path: Path) -> None:
    provider = json.loads((ACCEPTED_MAPPING / "provider.jsonld").read_text())
    provider["inputs"] = ["text/plain", 5, None]
    (tmp_path / "r.jsonl").write_text(json.dumps(provider) + "\n")
    proc = subprocess.run([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                           "--format", "json"], cwd=tmp_path, capture_output=True, timeout=60)
    result = json.loads(proc.stdout.splitlines()[0])
    typed = [(r["path"], r["message"]) for r in result["reasons"]
             if r["code"] == "registration.type"]
    assert typed == [("/inputs/1", "/inputs/1 has the wrong JSON type: a number"),
                     ("/inputs/2", "/inputs/2 has the wrong JSON type: null")], result


def test_a_carriers_domain_is_reported_at_no_path_of_the_envelope(tmp_path: Path) -> None:
    status, decision = ioa(ACCEPTED_MAPPING / "envelope.jsonld", "--profile", "cs-translation",
                           "--param", "domain=https://example.org/onto/law#Law", "--param",
                           "sourceLang=zh", "--param", "targetLang=en", "--at", AT,
                           "--format", "json", cwd=tmp_path)
    assert (status, decision["verdict"]) == (1, "incompatible")
    (reason,) = [r for r in decision["reasons"] if r["code"] == "domain.context-not-permitted"]
    assert reason["path"] == "" and "given by the carrier" in reason["message"]


@pytest.mark.parametrize("issuer", ["<https://a.example/>",
                                    "<https://example.org/mapping-authority>"])
def test_a_term_on_a_node_no_setting_reaches_is_named_at_its_own_line(
        tmp_path: Path, issuer: str) -> None:
    """Also where the node is named before (as an object) and the value is the profile's
    own (the line of the profile's rightful use is not the one to name)."""
    shipped = (ROOT / "ioa_semantic" / "data" / "profiles" / "cs-translation.ttl").read_text()
    head, _, rest = shipped.partition("\n\n")
    shipped = (head + "\n<https://example.org/z> <https://example.org/p> "
               "<https://example.org/y> .\n\n" + rest)
    lines = shipped.rstrip("\n").splitlines()
    (tmp_path / "p.ttl").write_text(
        shipped.rstrip("\n") + f"\n<https://example.org/y> iop:trustedIssuer {issuer} .\n")
    proc = subprocess.run([IOA_CHECK, str(EXAMPLES / "sized" / "envelope.jsonld"), "--profile",
                           "p.ttl", "--at", AT], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 2
    assert f"line {len(lines) + 1}: iop:trustedIssuer stands on <https://example.org/y>" in (
        proc.stderr.decode()), proc.stderr
