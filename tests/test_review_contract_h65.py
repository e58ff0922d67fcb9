"""A review of the contract's newest rules (9, 10, "Profiles are read strictly"), each finding
held here through the installed command:

* a provider capability that states a declared parameter in another unit conflicts with the
  task whether or not the task supplies the parameter (rule 10: "a value ... stated in
  another unit than the profile's is a conflict (S3), never converted: incompatible ... for
  an offered capability"); it was indeterminate, the remedy asking the sender for a value,
  and the message named the provider's 1 MB as "1 (in KiloBYTE)";
* a profile's ``iop:allowedValue`` typed with another datatype (a unit as its datatype, a
  language tag) was read as its bare text: ``"2"^^unit:MegaBYTE`` allowed 2 kB;
* a proof's members the checker does not read (a misspelt ``expiry``) and a malformed
  artifact's unknown members were silently ignored, and a malformed artifact's limits were
  recorded as null though it states them (rule 9: "A member the project does not define is
  reported as a warning that decides nothing, never silently ignored"; rule 15).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support import EXAMPLES, IOA_CHECK, ROOT

SIZED = ROOT / "ioa_semantic" / "data" / "profiles" / "cs-translation-sized.ttl"
SHIPPED = ROOT / "ioa_semantic" / "data" / "alignments" / "cs-doc-v1.json"


def ioa(*args: Any, cwd: Path) -> tuple[int, str, str]:
    proc = subprocess.run([IOA_CHECK, *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=60)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def _sized_without_required(tmp_path: Path) -> Path:
    text = SIZED.read_text()
    assert "iop:comparison iop:atMost ;\n          iop:required true ] ." in text
    path = tmp_path / "sized-optional.ttl"
    path.write_text(text.replace("iop:comparison iop:atMost ;\n          iop:required true ] .",
                                 "iop:comparison iop:atMost ] ."))
    return path


def test_a_provider_value_in_another_unit_conflicts_whether_or_not_the_task_supplies_it(
        tmp_path: Path) -> None:
    profile = _sized_without_required(tmp_path)
    provider = json.loads((EXAMPLES / "sized" / "provider.jsonld").read_text())
    provider["@context"]["qudt"] = "http://qudt.org/schema/qudt/"
    provider["documentSize"] = {"qudt:numericValue": 1,
                                "qudt:unit": {"@id": "http://qudt.org/vocab/unit/MegaBYTE"}}
    (tmp_path / "provider.jsonld").write_text(json.dumps(provider))
    envelope = json.loads((EXAMPLES / "sized" / "envelope.jsonld").read_text())
    for silent in (True, False):
        if silent:
            del envelope["profileContext"]["documentSize"]
        (tmp_path / "envelope.jsonld").write_text(json.dumps(envelope))
        status, out, _err = ioa("envelope.jsonld", "--profile", profile, "--capability",
                               "provider.jsonld", "--alignment", "cs-doc-v1", "--at",
                               "2026-06-01T00:00:00Z", "--format", "json", cwd=tmp_path)
        decision = json.loads(out)
        assert (status, decision["verdict"]) == (1, "incompatible"), (silent, decision)
        codes = [reason["code"] for reason in decision["reasons"]]
        assert "capability.unit-conflict" in codes and "constraint.missing-parameter" not in codes
        assert "MegaBYTE" in json.dumps(decision["reasons"])


_PROFILE = """
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix cs: <https://example.org/onto/cs#> .
@prefix unit: <http://qudt.org/vocab/unit/> .

<https://example.org/profiles/allowed> a iop:Profile ;
    iop:revision "1" ;
    iop:acceptsOntology [ iop:ontologyId <https://example.org/onto/agent-core> ;
                          iop:ontologyVersion "1.0" ] ;
    iop:permittedDomain cs:ComputerScience ;
    iop:taskParameter [ iop:name "x" ; iop:term cs:x ; iop:datatype xsd:DATATYPE UNIT ;
                        iop:allowedValue VALUE ] .

cs:ComputerScience a ioa:Domain .
cs:LargeLanguageModel a ioa:Concept ; ioa:inDomain cs:ComputerScience ; ioa:abbr "LLM" .
cs:TranslateTechDoc a ioa:Intent ; ioa:requiresCapability cs:TechTranslation ;
    ioa:appliesToDomain cs:ComputerScience .
cs:TechTranslation a ioa:Capability ; ioa:inputs "text/plain" ; ioa:outputs "text/plain" .
"""


def _profile(tmp_path: Path, datatype: str, value: str, unit: str = "") -> Path:
    path = tmp_path / f"{datatype}-{len(list(tmp_path.iterdir()))}.ttl"
    path.write_text(_PROFILE.replace("DATATYPE", datatype).replace("VALUE", value)
                    .replace("UNIT", f"; iop:unit {unit}" if unit else ""))
    return path


def test_an_allowed_value_typed_otherwise_than_its_parameter_is_a_configuration_error(
        tmp_path: Path) -> None:
    for datatype, value, unit in (("decimal", '"2"^^unit:MegaBYTE', "unit:KiloBYTE"),
                                  ("integer", '"5"@en', ""),
                                  ("integer", '"5"^^xsd:decimal', ""),
                                  ("integer", "<https://example.org/five>", ""),
                                  ("integer", "[ iop:name \"five\" ]", "")):
        profile = _profile(tmp_path, datatype, value, unit)
        status, out, err = ioa(EXAMPLES / "envelope-6.2.jsonld", "--profile", profile,
                               "--param", "x=2", "--at", "2026-06-01T00:00:00Z", cwd=tmp_path)
        assert (status, out) == (2, ""), (value, status, out, err)
        assert "allowedValue" in err and str(profile.name) in err, err
        status, out, _err = ioa("lint", profile, cwd=tmp_path)
        assert status != 0 and "allowedValue" in out, (value, out)


def test_an_allowed_value_written_plain_or_typed_as_its_parameter_is_read(
        tmp_path: Path) -> None:
    for datatype, value in (("integer", '"5"'), ("integer", '"5"^^xsd:integer'),
                            ("decimal", '"5"^^xsd:integer'), ("anyURI", '"https://e.org/5"'),
                            ("anyURI", '"https://e.org/5"^^xsd:anyURI')):
        profile = _profile(tmp_path, datatype, value)
        allowed = "https://e.org/5" if datatype == "anyURI" else "5"
        status, out, err = ioa(EXAMPLES / "envelope-6.2.jsonld", "--profile", profile,
                               "--param", f"x={allowed}", "--at", "2026-06-01T00:00:00Z",
                               cwd=tmp_path)
        assert status == 0, (value, out, err)


def _artifact(tmp_path: Path, change: dict[str, Any], drop: tuple[str, ...] = ()) -> Path:
    artifact = {**json.loads(SHIPPED.read_text()), **change}
    for member in drop:
        del artifact[member]
    path = tmp_path / "artifact.json"
    path.write_text(json.dumps(artifact))
    return path


def _checked(tmp_path: Path, artifact: Path) -> dict[str, Any]:
    _status, out, _err = ioa(EXAMPLES / "envelope-12.1.jsonld", "--profile", "cs-translation",
                           "--capability", EXAMPLES / "provider-12.1.jsonld", "--alignment",
                           artifact, "--param", "sourceLang=zh", "--param", "targetLang=en",
                           "--at", "2026-06-01T00:00:00Z", "--format", "json", cwd=tmp_path)
    result: dict[str, Any] = json.loads(out)
    return result


def test_a_proofs_members_the_checker_does_not_read_are_reported(tmp_path: Path) -> None:
    proof = {"type": "DataIntegrityProof", "cryptosuite": "eddsa-jcs-2022",
             "verificationMethod": "did:key:z6Mk#z6Mk", "proofPurpose": "assertionMethod",
             "created": "2026-01-01T00:00:00Z", "expiry": "2026-02-01T00:00:00Z",
             "nonce": "1", "proofValue": "z1"}
    artifact = _artifact(tmp_path, {"proof": proof})
    decision = _checked(tmp_path, artifact)
    unknown = [reason for reason in decision["reasons"]
               if reason["code"] == "alignment.unknown-member"]
    assert {"proof/expiry", "proof/nonce"} <= {m for r in unknown for m in
                                               ("proof/expiry", "proof/nonce")
                                               if repr(m) in r["message"]}, unknown
    assert all(r["severity"] == "warning" for r in unknown)
    status, out, _err = ioa("lint", artifact, cwd=tmp_path)
    assert status != 0 and "'proof/expiry'" in out and "did you mean 'expires'" in out, out


def test_a_malformed_artifact_reports_its_unknown_members_and_records_its_limits(
        tmp_path: Path) -> None:
    artifact = _artifact(tmp_path, {"validUntill": "2026-12-31T00:00:00Z",
                                    "validFrom": "2026-01-01T00:00:00Z"}, drop=("direction",))
    decision = _checked(tmp_path, artifact)
    codes = [reason["code"] for reason in decision["reasons"]]
    assert "alignment.malformed" in codes and "alignment.unknown-member" in codes, codes
    entry = decision["dependencies"]["artifacts"][0]
    assert (entry["validFrom"], entry["validUntil"]) == ("2026-01-01T00:00:00Z",
                                                         "2026-12-31T00:00:00Z")
    status, out, _ = ioa("lint", artifact, cwd=tmp_path)
    assert status != 0 and "'direction' is a required property" in out and "'validUntill'" in out


def test_a_declaration_with_two_units_or_comparisons_names_them(tmp_path: Path) -> None:
    """Exit 2 naming the term and what stands there (profiles are read strictly): it said
    "more than one term or unit", neither which nor what."""
    for extra, named in (("; iop:unit unit:KiloBYTE ; iop:unit unit:MegaBYTE",
                          ("iop:unit", "KiloBYTE", "MegaBYTE")),
                         ("; iop:comparison iop:atMost ; iop:comparison iop:atLeast",
                          ("iop:comparison", "atMost", "atLeast"))):
        profile = tmp_path / f"p{len(extra)}.ttl"
        profile.write_text(_PROFILE.replace("DATATYPE", "decimal").replace("UNIT", extra)
                           .replace("VALUE", '"5"'))
        status, out, err = ioa(EXAMPLES / "envelope-6.2.jsonld", "--profile", profile,
                               "--at", "2026-06-01T00:00:00Z", cwd=tmp_path)
        assert (status, out) == (2, ""), err
        assert all(word in err for word in named) and "'x'" in err, err
