"""The A2A gate with the real a2a-sdk server (uvicorn on a loopback port) and client.

A compatible task is accepted and answered; incompatible, indeterminate, invalid and
missing-envelope tasks are refused with A2A errors before any task exists (the agent never
runs); both extension header spellings; each disclosure level; many concurrent requests of
mixed verdicts. Covers R-7.1-5, R-7.1-7, R-7.1-9, R-11-I1 (issue: A2A integration). A raw
part is judged as its exact bytes, two envelope parts are refused, and an envelope sent
without activation is told how to activate (issue: Trust at the boundary, item 7). The check
runs off the event loop, so a slow envelope does not hold up others, and a check past the
time limit is refused as timed out without the agent running (issue: Bounded cost, item 5).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

a2a = pytest.importorskip("a2a")
uvicorn = pytest.importorskip("uvicorn")

import httpx  # noqa: E402
from a2a.client.client import ClientCallContext, ClientConfig  # noqa: E402
from a2a.client.client_factory import create_client  # noqa: E402
from a2a.client.service_parameters import ServiceParametersFactory  # noqa: E402
from a2a.server.agent_execution.agent_executor import AgentExecutor  # noqa: E402
from a2a.server.routes.agent_card_routes import create_agent_card_routes  # noqa: E402
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import a2a_pb2 as pb  # noqa: E402
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, VERSION_HEADER  # noqa: E402
from google.protobuf import json_format, struct_pb2  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from ioa_semantic import Checker  # noqa: E402
from ioa_semantic.a2a import (  # noqa: E402
    DEFAULT_EXTENSION_URI,
    SemanticGateHandler,
    activation,
    attach_envelope,
    context_builder,
    profile_extension,
    read_profile_extension,
)

from support import dumps, envelope_62  # noqa: E402

AT = datetime(2026, 6, 1, tzinfo=UTC)
# A hang guard, never a measure: how long a test waits for an agent to start or stop, a
# request to be answered or a held check to finish, and the gate's time limit wherever the
# test is not about that limit. The gate's default limit (10 s) and the SDK client's (5 s)
# are limits a loaded machine can reach: 200 concurrent checks queue on the gate's 4 threads.
HANG = 600.0


class Translator(AgentExecutor):
    """The agent's own logic: counts its runs, so a test can see it never ran."""

    def __init__(self) -> None:
        self.runs = 0

    async def execute(self, context: Any, event_queue: Any) -> None:
        self.runs += 1
        await event_queue.enqueue_event(pb.Message(
            role=pb.Role.ROLE_AGENT, message_id=f"answer-{self.runs}",
            parts=[pb.Part(text="translated")]))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        return None


class Agent:
    def __init__(self, disclosure: str, checker: Checker | None = None, **gate: Any) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.url = f"http://127.0.0.1:{self.port}"
        checker = checker or Checker("cs-translation")
        self.card = pb.AgentCard(
            name="translator", description="technical translation", version="1",
            default_input_modes=["text/plain"], default_output_modes=["text/plain"],
            skills=[pb.AgentSkill(id="translate", name="translate", description="d",
                                  tags=["translation"])],
            capabilities=pb.AgentCapabilities(
                extensions=[profile_extension(checker.profile, required=True)]),
            supported_interfaces=[pb.AgentInterface(url=self.url + "/a2a",
                                                    protocol_binding="JSONRPC",
                                                    protocol_version="1.0")])
        self.executor = Translator()
        self.store = InMemoryTaskStore()
        gate.setdefault("check_timeout", HANG)
        self.handler = SemanticGateHandler(agent_executor=self.executor, task_store=self.store,
                                           agent_card=self.card, checker=checker,
                                           disclosure=disclosure, clock=lambda: AT, **gate)
        app = Starlette(routes=create_agent_card_routes(self.card) + create_jsonrpc_routes(
            self.handler, "/a2a", context_builder=context_builder()))
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Agent:
        self.thread.start()
        deadline = time.monotonic() + HANG
        while not self.server.started:
            assert time.monotonic() < deadline, "the agent did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(HANG)


@pytest.fixture(scope="module")
def agent() -> Iterator[Agent]:
    with Agent("codes") as running:
        yield running


def message(envelope: bytes | None, *, extensions: bool = True) -> pb.Message:
    msg = pb.Message(role=pb.Role.ROLE_USER, message_id=f"m-{time.monotonic_ns()}",
                     parts=[pb.Part(text="please translate")])
    if envelope is not None:
        attach_envelope(msg, envelope)
        if not extensions:
            del msg.extensions[:]
    return msg


async def send(url: str, msg: pb.Message, *, header: bool = True) -> list[Any]:
    # The SDK's own HTTP client would wait 5 s for an answer: a hang guard instead.
    async with httpx.AsyncClient(timeout=HANG,
                                 headers={VERSION_HEADER: PROTOCOL_VERSION_CURRENT}) as http:
        client = await create_client(url, ClientConfig(httpx_client=http))
        parameters = ServiceParametersFactory.create([activation()]) if header else None
        context = ClientCallContext(service_parameters=parameters)
        try:
            return [event async for event in client.send_message(
                pb.SendMessageRequest(message=msg), context=context)]
        finally:
            await client.close()


def refusal(url: str, msg: pb.Message, *, header: bool = True) -> Any:
    with pytest.raises(Exception) as info:
        asyncio.run(send(url, msg, header=header))
    return info.value


def test_the_card_advertises_the_profile_as_a_hint(agent: Agent) -> None:
    card = httpx.get(agent.url + "/.well-known/agent-card.json", timeout=HANG).json()
    parsed = json_format.ParseDict(card, pb.AgentCard(), ignore_unknown_fields=True)
    assert read_profile_extension(parsed) == {
        "required": True, "ontologyIds": ["https://example.org/onto/agent-core"],
        "ontologyVersions": ["1.0"]}


def test_a_compatible_task_is_accepted_and_answered(agent: Agent) -> None:
    before = agent.executor.runs
    events = asyncio.run(send(agent.url, message(dumps(envelope_62()))))
    assert any("translated" in str(e) for e in events)
    assert agent.executor.runs == before + 1


def _mutated(change: str) -> bytes:
    doc = envelope_62()
    if change == "incompatible":
        doc["profileContext"]["termBindings"][0]["sense"] = \
            "https://example.org/onto/law#MasterOfLaws"
    elif change == "indeterminate":
        doc["ontologyVersion"] = "1.1"
    else:
        return dumps(doc).replace(b'"intentRef"', b'"intentRef": "cs:X", "intentRef"', 1)
    return dumps(doc)


@pytest.mark.parametrize(("change", "code"), [
    ("incompatible", "domain.binding-not-permitted"),
    ("indeterminate", "profile.version-not-accepted"),
    ("invalid", "json.duplicate-key"),
])
def test_other_verdicts_are_refused_before_any_task(agent: Agent, change: str, code: str) -> None:
    before = agent.executor.runs
    error = refusal(agent.url, message(_mutated(change)))
    text = str(error) + repr(getattr(error, "data", ""))
    assert change in text and code in text, text
    assert agent.executor.runs == before


def test_a_missing_envelope_is_extension_support_required(agent: Agent) -> None:
    before = agent.executor.runs
    error = refusal(agent.url, message(None))
    assert "requires the extension" in str(error)
    assert "not activated" not in str(error)
    assert agent.executor.runs == before


def test_an_envelope_sent_but_not_activated_is_told_how_to_activate(agent: Agent) -> None:
    """The envelope is there but neither the header nor message.extensions names the URI:
    the refusal says activation is missing, with the header and the URI that fix it."""
    before = agent.executor.runs
    error = refusal(agent.url, message(dumps(envelope_62()), extensions=False), header=False)
    text = str(error)
    assert "not activated" in text and "A2A-Extensions" in text, text
    assert f"header with {DEFAULT_EXTENSION_URI}" in text, text
    assert agent.executor.runs == before


def raw_part(envelope: bytes) -> pb.Part:
    """The envelope as a raw (bytes) part bound to the extension."""
    metadata = struct_pb2.Struct()
    metadata.update({"extension": DEFAULT_EXTENSION_URI})
    return pb.Part(raw=envelope, media_type="application/ld+json", metadata=metadata)


@pytest.mark.parametrize("second", ["text", "raw"])
def test_two_envelope_parts_are_refused(agent: Agent, second: str) -> None:
    """A compatible envelope first and an incompatible one second: the gate does not pick."""
    before = agent.executor.runs
    msg = message(dumps(envelope_62()))
    if second == "text":
        attach_envelope(msg, _mutated("incompatible"))
    else:
        msg.parts.append(raw_part(_mutated("incompatible")))
    error = refusal(agent.url, msg)
    assert "exactly one SemanticProfile envelope part is allowed" in str(error), str(error)
    assert "the message carries 2" in str(error), str(error)
    answer = _raw_send(agent.url, msg, {"A2A-Extensions": DEFAULT_EXTENSION_URI})
    assert answer["error"]["code"] == -32602, answer
    assert agent.executor.runs == before


def _raw_send(url: str, msg: pb.Message, headers: dict[str, str]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": json_format.MessageToDict(msg)}}
    answer: dict[str, Any] = httpx.post(url + "/a2a", json=body, timeout=HANG,
                                        headers={"A2A-Version": "1.0", **headers}).json()
    return answer


@pytest.mark.parametrize("header", ["A2A-Extensions", "X-A2A-Extensions"])
def test_both_header_spellings_activate_the_extension(agent: Agent, header: str) -> None:
    msg = message(dumps(envelope_62()), extensions=False)
    answer = _raw_send(agent.url, msg, {header: DEFAULT_EXTENSION_URI})
    assert "result" in answer, answer
    without = _raw_send(agent.url, msg, {})
    assert "error" in without and "requires the extension" in json.dumps(without)


@pytest.mark.parametrize(("level", "keys"), [
    ("verdict", {"verdict"}), ("codes", {"verdict", "codes", "remedies"}),
    ("full", {"verdict", "reasons", "remedies"}),
    ("collapsed", {"verdict"}),
])
def test_each_disclosure_level(level: str, keys: set[str]) -> None:
    """R-7.1-9, R-11-I1: the carrier's policy decides what the peer learns; "collapsed"
    hides even incompatible versus indeterminate, while the agent's own decision keeps it."""
    with Agent(level) as running:
        answer = _raw_send(running.url, message(_mutated("incompatible")),
                           {"A2A-Extensions": DEFAULT_EXTENSION_URI})
    # The SDK carries the error's data as google.rpc.ErrorInfo metadata.
    (info,) = answer["error"]["data"]
    data = info["metadata"]
    assert answer["error"]["code"] == -32602
    assert data["verdict"] == ("not-compatible" if level == "collapsed" else "incompatible")
    assert set(data) == keys


def test_concurrent_requests_of_mixed_verdicts(agent: Agent) -> None:
    kinds = ["compatible", "incompatible", "indeterminate", "invalid"] * 50

    async def one(kind: str, client: httpx.AsyncClient) -> tuple[str, bool]:
        msg = message(dumps(envelope_62()) if kind == "compatible" else _mutated(kind))
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": json_format.MessageToDict(msg)}}
        answer = (await client.post(agent.url + "/a2a", json=body, headers={
            "A2A-Version": "1.0", "A2A-Extensions": DEFAULT_EXTENSION_URI})).json()
        return kind, "result" in answer

    async def run() -> list[tuple[str, bool]]:
        async with httpx.AsyncClient(timeout=HANG) as client:
            return await asyncio.gather(*(one(k, client) for k in kinds))

    results = asyncio.run(run())
    assert all(accepted == (kind == "compatible") for kind, accepted in results)


def test_a_data_part_is_accepted_but_weaker(agent: Agent) -> None:
    """A structured data part carries the envelope too; its duplicate keys are already gone."""
    from google.protobuf import struct_pb2

    data = struct_pb2.Value()
    json_format.ParseDict(envelope_62(), data.struct_value)
    metadata = struct_pb2.Struct()
    metadata.update({"extension": DEFAULT_EXTENSION_URI})
    msg = pb.Message(role=pb.Role.ROLE_USER, message_id="data-part", extensions=[
        DEFAULT_EXTENSION_URI], parts=[pb.Part(data=data, media_type="application/ld+json",
                                               metadata=metadata)])
    events = asyncio.run(send(agent.url, msg))
    assert any("translated" in str(e) for e in events)


def test_a_raw_part_is_accepted(agent: Agent) -> None:
    before = agent.executor.runs
    msg = message(None)
    msg.parts.append(raw_part(dumps(envelope_62())))
    msg.extensions.append(DEFAULT_EXTENSION_URI)
    events = asyncio.run(send(agent.url, msg))
    assert any("translated" in str(e) for e in events)
    assert agent.executor.runs == before + 1


def test_a_raw_part_that_is_not_utf8_is_invalid(agent: Agent) -> None:
    """The bytes reach the checker's strict intake: decoded with replacement characters,
    this envelope (one stray byte in a term) would read as compatible."""
    before = agent.executor.runs
    envelope = dumps(envelope_62()).replace(b'"term": "LLM"', b'"term": "LLM\xff"', 1)
    assert b"\xff" in envelope
    msg = message(None)
    msg.parts.append(raw_part(envelope))
    msg.extensions.append(DEFAULT_EXTENSION_URI)
    error = refusal(agent.url, msg)
    text = str(error) + repr(getattr(error, "data", ""))
    assert "invalid" in text and "json.encoding" in text, text
    assert agent.executor.runs == before


def test_the_example_runs_as_the_readme_says(tmp_path: Any) -> None:
    """examples/a2a: the agent on a loopback port, the client's two tasks."""
    import subprocess
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples" / "a2a"
    if not examples.exists():
        pytest.skip("examples/ is not next to the tests")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    agent_process = subprocess.Popen([sys.executable, str(examples / "agent.py"), str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + HANG
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the example agent did not start"
                time.sleep(0.1)
        out = subprocess.run([sys.executable, str(examples / "client.py"),
                              f"http://127.0.0.1:{port}"], capture_output=True, text=True,
                             timeout=HANG).stdout
    finally:
        agent_process.terminate()
        agent_process.wait(timeout=HANG)
    assert "compatible: accepted" in out
    assert "incompatible: refused" in out and "incompatible" in out.split("refused:")[1]
    # The refusal says why: the reason code the gate discloses (its default, codes).
    assert "(domain.binding-not-permitted)" in out.split("refused:")[1]


HOLD = "HOLD-THIS-CHECK"


class HeldChecker(Checker):
    """A checker whose check of an envelope with the term ``HOLD`` blocks until released:
    a slow check the test controls with events rather than sleeps."""

    def __init__(self) -> None:
        super().__init__("cs-translation")
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.checked: list[bool] = []

    def check(self, envelope: Any, **options: Any) -> Any:
        held = isinstance(envelope, str) and HOLD in envelope
        self.checked.append(held)
        if held:
            self.entered.set()
            self.release.wait(HANG)
        try:
            return super().check(envelope, **options)
        finally:
            if held:
                self.finished.set()


def held_envelope() -> bytes:
    doc = envelope_62()
    doc["profileContext"]["termBindings"][0]["term"] = HOLD
    return dumps(doc)


@pytest.fixture
def held() -> Iterator[tuple[Agent, HeldChecker]]:
    checker = HeldChecker()
    with Agent("codes", checker) as running:
        try:
            yield running, checker
        finally:
            checker.release.set()  # a check still held ends, whatever the test did


def _post(client: httpx.AsyncClient, url: str, msg: pb.Message) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": json_format.MessageToDict(msg)}}
    return client.post(url + "/a2a", json=body, headers={
        "A2A-Version": "1.0", "A2A-Extensions": DEFAULT_EXTENSION_URI})


def test_a_slow_check_does_not_hold_up_another_request(held: tuple[Agent, HeldChecker]) -> None:
    """While one request's check is held, another request is answered: its check runs on
    another worker thread and the event loop is free (inline, it would wait for the release)."""
    agent, checker = held

    async def run() -> tuple[dict[str, Any], dict[str, Any], bool]:
        async with httpx.AsyncClient(timeout=HANG) as client:
            slow = asyncio.ensure_future(_post(client, agent.url, message(held_envelope())))
            assert await asyncio.to_thread(checker.entered.wait, HANG), "the slow check never began"
            normal = (await _post(client, agent.url, message(dumps(envelope_62())))).json()
            still_held = not checker.finished.is_set()
            checker.release.set()
            return normal, (await slow).json(), still_held

    normal, slow, still_held = asyncio.run(run())
    assert "translated" in json.dumps(normal["result"]), normal
    assert still_held, "the other request was only answered once the slow check had finished"
    # The slow one, released within its time limit, is judged and answered as usual.
    assert "translated" in json.dumps(slow["result"]), slow
    assert agent.executor.runs == 2


def test_a_check_past_the_time_limit_is_refused_and_the_agent_does_not_run(
        held: tuple[Agent, HeldChecker]) -> None:
    agent, checker = held
    agent.handler.check_timeout = 0.5
    error = refusal(agent.url, message(held_envelope()))
    assert "timed out" in str(error) and "did not finish within 0.5 s" in str(error), str(error)
    # The check is still running when the refusal arrives: its thread cannot be stopped.
    assert checker.entered.is_set() and not checker.finished.is_set()
    answer = _raw_send(agent.url, message(held_envelope()),
                       {"A2A-Extensions": DEFAULT_EXTENSION_URI})
    (info,) = answer["error"]["data"]
    assert answer["error"]["code"] == -32602
    assert info["metadata"] == {"verdict": "indeterminate", "codes": [], "remedies": [],
                                "timeout": 0.5}
    checker.release.set()
    assert checker.finished.wait(HANG)
    assert agent.executor.runs == 0


def test_a_request_that_waits_past_the_limit_for_a_busy_gate_is_never_checked() -> None:
    """With one check thread held by a timed-out check, the next request waits for it, is
    refused when its own limit passes, and its check is cancelled: at most ``max_checks``
    checks ever pile up."""
    checker = HeldChecker()
    with Agent("full", checker, check_timeout=0.5, max_checks=1) as agent:
        try:
            assert "did not finish" in str(refusal(agent.url, message(held_envelope())))
            answer = _raw_send(agent.url, message(dumps(envelope_62())),
                               {"A2A-Extensions": DEFAULT_EXTENSION_URI})
            assert "all 1 of the gate's checks were busy" in answer["error"]["message"], answer
            (info,) = answer["error"]["data"]
            assert info["metadata"] == {"verdict": "indeterminate", "reasons": [],
                                        "remedies": [], "timeout": 0.5}
        finally:
            checker.release.set()
        assert checker.finished.wait(HANG)
        agent.handler.check_timeout = HANG
        events = asyncio.run(send(agent.url, message(dumps(envelope_62()))))
        assert any("translated" in str(e) for e in events)
    # The held envelope and the last one were checked; the one refused while waiting was not.
    assert checker.checked == [True, False]
    assert agent.executor.runs == 1


@pytest.mark.parametrize(("options", "problem"), [
    ({"check_timeout": 0}, "check_timeout"), ({"check_timeout": -1.0}, "check_timeout"),
    ({"max_checks": 0}, "max_checks")])
def test_the_bounds_are_checked(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        SemanticGateHandler(agent_executor=Translator(), task_store=InMemoryTaskStore(),
                            agent_card=pb.AgentCard(name="a"), checker=Checker(), **options)
