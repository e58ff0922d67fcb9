"""The negotiating client (``ioa_semantic.a2a.negotiate``) against the real gate: a real
a2a-sdk server on a loopback port and the SDK's own client. A refusal's remedies are acted on
only with what the sender holds; the agent's own code runs exactly once, on the round that
is accepted; a refusal whose only fix is not the sender's to make ends the negotiation
without another send. And :func:`ioa_semantic.negotiation.changes_for` on its own: it never
invents a value, relaxes a constraint or chooses for the sender.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("a2a")

from a2a.client.client_factory import create_client
from test_a2a import Agent

from ioa_semantic import Checker
from ioa_semantic.a2a import Negotiation, negotiate
from ioa_semantic.negotiation import SenderPolicy, changes_for

CASES = Path(__file__).resolve().parent / "cases" / "compatibility"
CASE_121 = CASES / "remedy-12.1-without-language-pair"
TWO = CASES / "custom-no-selection-rule-two-issuers"
LAW = CASES / "law-sense"
CORE = "https://example.org/onto/agent-core"


def _envelope(folder: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((folder / "envelope.jsonld").read_text())
    return document


def _negotiated(agent: Agent, envelope: dict[str, Any], policy: SenderPolicy,
                **options: Any) -> Negotiation:
    async def run() -> Negotiation:
        client = await create_client(agent.url)
        try:
            return await negotiate(client, envelope, policy, text="please translate", **options)
        finally:
            await client.close()
    return asyncio.run(run())


def test_a_task_without_its_language_pair_is_sent_again_with_it_and_accepted() -> None:
    checker = Checker("cs-translation", capabilities=[CASE_121 / "provider.jsonld"],
                      alignments=[CASE_121 / "align0.json"])
    policy = SenderPolicy(parameters={"sourceLang": "zh", "targetLang": "en"})
    with Agent("codes", checker=checker) as agent:
        result = _negotiated(agent, _envelope(CASE_121), policy)
        assert agent.executor.runs == 1
    assert result.accepted and result.ended == "accepted"
    first, second = result.rounds
    assert not first.accepted and first.refusal is not None
    assert first.refusal["verdict"] == "indeterminate"
    assert {(r["action"], r["name"]) for r in first.refusal["remedies"]} == {
        ("supply-parameter", "sourceLang"), ("supply-parameter", "targetLang")}
    assert {(c.member, c.value) for c in first.changes} == {
        ("profileContext/sourceLang", "zh"), ("profileContext/targetLang", "en")}
    assert second.accepted and second.envelope["profileContext"]["sourceLang"] == "zh"
    assert "sourceLang" not in _envelope(CASE_121)["profileContext"]  # the caller's is kept


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_legal_translation_behind_the_gate_supplies_its_jurisdiction_and_is_accepted() -> None:
    """Issue 34: the gate passes no --param, so a profile-required parameter must travel in
    the envelope: the refusal names the property that carries it (the profile's
    iop:taskParameter term), the sender writes its own value there, and the next round is
    accepted. Before, the jurisdiction could not be carried at all and every task was
    refused."""
    envelope = _envelope_of(EXAMPLES / "legal-contract.jsonld")
    policy = SenderPolicy(parameters={"jurisdiction": "DE"})
    with Agent("codes", checker=Checker("legal-translation")) as agent:
        result = _negotiated(agent, envelope, policy)
        assert agent.executor.runs == 1
    assert result.accepted, result
    first, second = result.rounds
    assert first.refusal is not None and first.refusal["codes"] == ["constraint.missing-parameter"]
    [supply] = first.refusal["remedies"]
    assert (supply["action"], supply["name"], supply["term"]) == (
        "supply-parameter", "jurisdiction", "https://example.org/onto/law#jurisdiction")
    assert second.envelope["profileContext"]["jurisdiction"] == "DE"
    assert second.envelope["@context"]["jurisdiction"] == "https://example.org/onto/law#jurisdiction"


def test_task_parameters_in_the_envelope_part_reach_the_check() -> None:
    """The A2A part's metadata carries the task's parameters as --param gives them."""
    envelope = json.dumps(_envelope_of(EXAMPLES / "legal-contract.jsonld"))
    with Agent("codes", checker=Checker("legal-translation")) as agent:
        accepted = asyncio.run(_send(agent, envelope, {"jurisdiction": "DE"}))
        refused = asyncio.run(_send(agent, envelope, {"jurisdiction": "Germany"}))
        malformed = asyncio.run(_send(agent, envelope, {"jurisdiction": ["DE"]}))
    assert accepted == "accepted"
    assert "constraint.shape-violated" in refused
    assert "'parameters' must be an object" in malformed


async def _send(agent: Agent, envelope: str, parameters: dict[str, Any]) -> str:
    from a2a.client.client import ClientCallContext
    from a2a.client.service_parameters import ServiceParametersFactory
    from a2a.types import a2a_pb2 as pb
    from a2a.utils.errors import A2AError
    from google.protobuf import struct_pb2

    from ioa_semantic.a2a import activation, attach_envelope

    client = await create_client(agent.url)
    message = pb.Message(role=pb.Role.ROLE_USER, message_id="m1", parts=[pb.Part(text="hi")])
    attach_envelope(message, envelope)
    metadata = struct_pb2.Struct()
    metadata.update({"extension": "https://example.org/extensions/semantic-profile/v1",
                     "parameters": parameters})
    message.parts[-1].metadata.CopyFrom(metadata)
    context = ClientCallContext(service_parameters=ServiceParametersFactory.create([activation()]))
    try:
        [_ async for _ in client.send_message(pb.SendMessageRequest(message=message),
                                              context=context)]
        return "accepted"
    except A2AError as refused:
        return f"{refused}: {refused.data}"
    finally:
        await client.close()


def _envelope_of(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_a_sender_whose_task_is_another_language_pair_does_not_pretend() -> None:
    checker = Checker("cs-translation", capabilities=[CASE_121 / "provider.jsonld"],
                      alignments=[CASE_121 / "align0.json"])
    policy = SenderPolicy(parameters={"sourceLang": "fr", "targetLang": "en"})
    with Agent("codes", checker=checker) as agent:
        result = _negotiated(agent, _envelope(CASE_121), policy)
        assert agent.executor.runs == 0
    assert not result.accepted
    assert result.ended == "refused; no remedy is one the sender can apply"
    # It supplies what is true of its task (targetLang en), never the zh it does not have.
    sent = [r.envelope["profileContext"] for r in result.rounds]
    assert all(c.get("sourceLang") in (None, "fr") for c in sent)
    assert sent[-1].get("targetLang") == "en" and len(result.rounds) == 2


def test_a_refusal_whose_only_fix_is_another_sense_ends_without_another_send() -> None:
    with Agent("full") as agent:
        result = _negotiated(agent, _envelope(LAW),
                             SenderPolicy(parameters={"sourceLang": "zh", "targetLang": "en"}))
        assert agent.executor.runs == 0
    (only,) = result.rounds
    assert only.refusal is not None and only.refusal["verdict"] == "incompatible"
    assert [r["action"] for r in only.refusal["remedies"]] == ["renegotiate"]
    assert only.changes == () and result.ended == "refused; no remedy is one the sender can apply"


def test_two_applicable_artifacts_are_resolved_by_the_senders_own_choice() -> None:
    profile = str(TWO / "profile.ttl")
    checker = Checker(profile, capabilities=[TWO / "provider.jsonld"],
                      alignments=[TWO / "align0.json", TWO / "align1.json"])
    chosen: list[list[str]] = []

    def choose(candidates: Any) -> str:
        names = sorted(str(c["artifactId"]) for c in candidates)
        chosen.append(names)
        return names[-1]

    envelope = _envelope(TWO)
    envelope["profileContext"].update({"sourceLang": "zh", "targetLang": "en"})
    envelope["@context"].update({"sourceLang": "ioa:sourceLang", "targetLang": "ioa:targetLang"})
    with Agent("codes", checker=checker) as agent:
        result = _negotiated(agent, envelope, SenderPolicy(choose_alignment=choose))
        assert agent.executor.runs == 1
    assert result.accepted and len(chosen) == 1 and len(chosen[0]) == 2
    assert result.rounds[-1].envelope["alignmentRef"] == chosen[0][-1]


REVISIONS = CASES / "two-revisions-ambiguous"


def test_two_revisions_of_one_artifact_are_told_apart_by_the_revision_and_accepted() -> None:
    """Issue 34: alignmentRef (an id) cannot tell two revisions of one artifact apart, so a
    sender that named the id re-sent the same refusal; the client now names the revision
    too (alignmentRevision), and the next round is accepted."""
    checker = Checker("cs-translation", capabilities=[REVISIONS / "provider.jsonld"],
                      alignments=[REVISIONS / "align0.json", REVISIONS / "align1.json"])
    newest = SenderPolicy(parameters={"sourceLang": "zh", "targetLang": "en"},
                          choose_alignment=lambda candidates: max(
                              candidates, key=lambda c: int(c["revision"])))
    by_id = SenderPolicy(parameters={"sourceLang": "zh", "targetLang": "en"},
                         choose_alignment=lambda candidates: candidates[0]["artifactId"])
    with Agent("codes", checker=checker) as agent:
        chosen = _negotiated(agent, _envelope(REVISIONS), newest)
        undecided = _negotiated(agent, _envelope(REVISIONS), by_id)
    assert chosen.accepted, chosen
    sent = chosen.rounds[-1].envelope
    assert (sent["alignmentRef"], sent["alignmentRevision"]) == (
        "https://example.org/align/cs-doc-v1", "2")
    # An id alone names neither revision: nothing is chosen for the sender.
    assert not undecided.accepted
    assert undecided.ended == "refused; no remedy is one the sender can apply"


def test_without_a_selection_policy_no_artifact_is_chosen_for_the_sender() -> None:
    profile = str(TWO / "profile.ttl")
    checker = Checker(profile, capabilities=[TWO / "provider.jsonld"],
                      alignments=[TWO / "align0.json", TWO / "align1.json"])
    envelope = _envelope(TWO)
    envelope["profileContext"].update({"sourceLang": "zh", "targetLang": "en"})
    envelope["@context"].update({"sourceLang": "ioa:sourceLang", "targetLang": "ioa:targetLang"})
    with Agent("codes", checker=checker) as agent:
        result = _negotiated(agent, envelope, SenderPolicy())
        assert agent.executor.runs == 0
    assert len(result.rounds) == 1 and not result.accepted


@pytest.mark.parametrize("speaks", [frozenset({(CORE, "1.0")}), frozenset()])
def test_a_version_is_switched_only_to_one_the_sender_speaks(speaks: frozenset[Any]) -> None:
    envelope = json.loads((Path(__file__).resolve().parents[1] / "examples"
                           / "envelope-6.2.jsonld").read_text())
    envelope["ontologyVersion"] = "1.1"
    with Agent("codes") as agent:
        result = _negotiated(agent, envelope, SenderPolicy(speaks=speaks))
        runs = agent.executor.runs
    assert result.accepted is bool(speaks) and runs == int(bool(speaks))
    if speaks:
        assert result.rounds[-1].envelope["ontologyVersion"] == "1.0"


def test_rounds_are_bounded() -> None:
    checker = Checker("cs-translation", capabilities=[CASE_121 / "provider.jsonld"],
                      alignments=[CASE_121 / "align0.json"])
    policy = SenderPolicy(parameters={"sourceLang": "zh", "targetLang": "en"})
    with Agent("codes", checker=checker) as agent:
        result = _negotiated(agent, _envelope(CASE_121), policy, max_rounds=1)
        assert agent.executor.runs == 0
    assert len(result.rounds) == 1 and result.ended == "refused; 1 rounds were sent"


# --- changes_for alone --------------------------------------------------------------------


def test_a_listed_value_the_task_lacks_is_never_invented() -> None:
    remedies = [{"action": "supply-parameter", "name": "sourceLang", "values": ["zh"]}]
    sent, changes = changes_for(_envelope(CASE_121), remedies, SenderPolicy())
    assert changes == () and "sourceLang" not in sent["profileContext"]


def test_a_value_the_envelope_already_states_is_not_overwritten() -> None:
    envelope = _envelope(CASE_121)
    envelope["profileContext"]["sourceLang"] = "fr"
    envelope["@context"]["sourceLang"] = "ioa:sourceLang"
    remedies = [{"action": "supply-parameter", "name": "sourceLang", "values": ["zh"]}]
    _, changes = changes_for(envelope, remedies, SenderPolicy(parameters={"sourceLang": "zh"}))
    assert changes == ()


def test_what_is_not_the_senders_to_change_is_left_alone() -> None:
    remedies = [{"action": a} for a in ("correct-input", "offer-alignment", "allow-retrieval",
                                        "retry", "renegotiate")]
    envelope = _envelope(CASE_121)
    sent, changes = changes_for(envelope, remedies, SenderPolicy(
        parameters={"sourceLang": "zh"}, speaks=frozenset({(CORE, "1.0")}),
        choose_alignment=lambda c: "x"))
    assert changes == () and sent == envelope
