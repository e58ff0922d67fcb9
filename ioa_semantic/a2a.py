"""A2A integration: advertise, carry and gate the SemanticProfile envelope (draft 12.2).

Needs the optional extra: ``pip install 'ioa-semantic[a2a]'`` (a2a-sdk 1.x).

* **Advertise**: :func:`profile_extension` builds the Agent Card extension entry of 12.2 from
  the receiver's profile; :func:`read_profile_extension` reads a peer's back. Its parallel
  ``ontologyIds`` / ``ontologyVersions`` lists are a discovery hint only: they never
  establish compatibility (7.1).
* **Carry**: the envelope travels as a text part of media type ``application/ld+json``
  whose metadata names the extension URI, so the gate sees the sender's exact JSON text and
  strict intake (duplicate keys, limits) applies. A structured data part is accepted too,
  but is weaker: the SDK has parsed it already, so duplicate keys are gone. The extension
  is activated by the ``A2A-Extensions`` header, the older ``X-A2A-Extensions`` spelling
  (with :func:`context_builder`), or ``message.extensions``; :func:`attach_envelope` and
  :func:`activation` do it for clients. A raw (bytes) part reaches the checker as the exact
  bytes, so bytes that are not UTF-8 are ``invalid`` rather than repaired. A message carries
  exactly one envelope part: with more, which one counts would be the gate's guess.
* **Negotiate**: :func:`negotiate` is the sender's side. It sends a task with its envelope,
  reads a refusal's remedies, and sends again with the changes the sender can make
  mechanically and honestly from what it holds (:mod:`ioa_semantic.negotiation`), for a
  bounded number of rounds; it returns every round, so the caller sees why it ended.
* **Gate**: :class:`SemanticGateHandler` is the SDK's request handler with the envelope
  checked in ``on_message_send`` / ``on_message_send_stream`` before any task exists. Only
  a compatible envelope goes through; anything else is an A2A error whose data carries what
  the disclosure policy allows, and the agent's own logic never runs. The check runs on one
  of the gate's worker threads, within a time limit, so that a slow envelope does not stall
  the agent's other requests.

The extension URI is configuration (the draft calls its URI an example).
"""

from __future__ import annotations

import asyncio
import enum
import json
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

try:
    from a2a.client.client import Client, ClientCallContext
    from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
    from a2a.compat.v0_3.context_builders import V03ServerCallContextBuilder
    from a2a.server.context import ServerCallContext
    from a2a.server.request_handlers.default_request_handler_v2 import DefaultRequestHandlerV2
    from a2a.server.routes.common import DefaultServerCallContextBuilder, ServerCallContextBuilder
    from a2a.types import a2a_pb2 as pb
    from a2a.utils.errors import A2AError, ExtensionSupportRequiredError, InvalidParamsError
    from google.protobuf import json_format, struct_pb2
except ImportError as exc:
    # "No module named 'a2a'", read from this module, would look like the package broken.
    raise ImportError(f"ioa_semantic.a2a needs the a2a extra ({exc}): "
                      "pip install 'ioa-semantic[a2a]'", name=exc.name) from exc

from ._checker import Checker
from ._findings import Decision, Verdict
from .negotiation import Change, SenderPolicy, changes_for
from .sources.loader import Profile

DEFAULT_EXTENSION_URI = "https://example.org/extensions/semantic-profile/v1"
ENVELOPE_MEDIA_TYPE = "application/ld+json"
# A check of the 6.2 envelope takes well under a millisecond; ten seconds is room for a
# remote context (one fetch may take 5 s) and still an answer a sender can wait for.
DEFAULT_CHECK_TIMEOUT = 10.0
# Checks are mostly Python holding the GIL, so more threads add little throughput; four keep
# a few slow envelopes from taking every thread from the ordinary ones.
DEFAULT_MAX_CHECKS = 4
# Remedies a refusal's error data lists at most (the rest are counted in remediesOmitted).
MAX_DISCLOSED_REMEDIES = 32
# Rounds a negotiation sends at most: the first, and two more with what remedies changed.
DEFAULT_MAX_ROUNDS = 3

__all__ = [
    "DEFAULT_CHECK_TIMEOUT",
    "DEFAULT_EXTENSION_URI",
    "DEFAULT_MAX_CHECKS",
    "DEFAULT_MAX_ROUNDS",
    "ENVELOPE_MEDIA_TYPE",
    "Disclosure",
    "Negotiation",
    "Round",
    "SemanticGateHandler",
    "activation",
    "attach_envelope",
    "context_builder",
    "envelope_of",
    "negotiate",
    "profile_extension",
    "read_profile_extension",
]


def profile_extension(profile: Profile, *, uri: str = DEFAULT_EXTENSION_URI,
                      required: bool = False) -> pb.AgentExtension:
    """The ``capabilities.extensions[]`` entry of 12.2 for a receiver's profile."""
    pairs = sorted(profile.accepted)
    params = struct_pb2.Struct()
    params.update({"ontologyIds": [o for o, _ in pairs], "ontologyVersions": [v for _, v in pairs]})
    return pb.AgentExtension(uri=uri, required=required, params=params,
                             description="SemanticProfile envelope (draft-zhang-dmsc-ioa-"
                                         "semantic-interaction-03), checked before a task")


def read_profile_extension(card: pb.AgentCard, *,
                           uri: str = DEFAULT_EXTENSION_URI) -> dict[str, Any] | None:
    """A peer's advertisement, as a discovery hint: it never establishes compatibility."""
    for extension in card.capabilities.extensions:
        if extension.uri == uri:
            params = json_format.MessageToDict(extension.params)
            return {"required": extension.required,
                    "ontologyIds": list(params.get("ontologyIds", [])),
                    "ontologyVersions": list(params.get("ontologyVersions", []))}
    return None


def attach_envelope(message: pb.Message, envelope: bytes | str, *,
                    uri: str = DEFAULT_EXTENSION_URI,
                    parameters: Mapping[str, str] | None = None) -> pb.Message:
    """Add the envelope's exact JSON text to ``message`` and activate the extension on it;
    ``parameters`` are the task's parameters (as ``--param`` gives them), carried in the
    part's metadata."""
    text = envelope.decode("utf-8") if isinstance(envelope, bytes) else envelope
    metadata = struct_pb2.Struct()
    metadata.update({"extension": uri, **({"parameters": dict(parameters)} if parameters else {})})
    message.parts.append(pb.Part(text=text, media_type=ENVELOPE_MEDIA_TYPE, metadata=metadata))
    if uri not in message.extensions:
        message.extensions.append(uri)
    return message


def activation(uri: str = DEFAULT_EXTENSION_URI) -> Any:
    """The client-side update that sends the ``A2A-Extensions`` header for ``uri``."""
    return with_a2a_extensions([uri])


def context_builder() -> ServerCallContextBuilder:
    """A server context builder that also honours the older ``X-A2A-Extensions`` header."""
    # The SDK's v0.3 builder has the builder's one method without subclassing it; typed as
    # what create_jsonrpc_routes takes, so that the documented use passes a type checker.
    return cast(ServerCallContextBuilder,
                V03ServerCallContextBuilder(DefaultServerCallContextBuilder()))


def envelope_of(message: pb.Message,
                uri: str = DEFAULT_EXTENSION_URI) -> bytes | str | dict[str, Any] | None:
    """The envelope a message carries for ``uri``: its JSON text or bytes, else a data part's
    object; ``ValueError`` if it carries more than one envelope part."""
    parts = _envelope_parts(message, uri)
    if len(parts) > 1:
        raise ValueError(_one_part_only(uri, len(parts)))
    return _content(parts[0]) if parts else None


def _envelope_parts(message: pb.Message, uri: str) -> list[pb.Part]:
    """The parts that carry an envelope for ``uri``: application/ld+json text, raw or data,
    bound to ``uri`` by their metadata (a part that names no extension is bound to any)."""
    return [part for part in message.parts
            if part.media_type.split(";")[0].strip().lower() == ENVELOPE_MEDIA_TYPE
            and part.WhichOneof("content") in ("text", "raw", "data")
            and json_format.MessageToDict(part.metadata).get("extension", uri) == uri]


def _content(part: pb.Part) -> bytes | str | dict[str, Any] | None:
    """The envelope in one envelope part; ``None`` for a data part that is not an object."""
    kind = part.WhichOneof("content")
    if kind == "text":
        return str(part.text)
    if kind == "raw":
        # The exact bytes: the checker's intake is strict UTF-8, and decoding here with
        # replacement characters would turn bytes that are not text into a readable envelope.
        return bytes(part.raw)
    data = json_format.MessageToDict(part.data)
    return data if isinstance(data, dict) else None


# The task parameters one envelope part may carry, and the longest name and value.
MAX_PARAMETERS = 64
_MAX_PARAMETER_CHARS = 4096


def task_parameters(part: pb.Part) -> dict[str, str] | str:
    """The task parameters an envelope part carries in its metadata (``parameters``, an
    object of strings, as ``--param`` gives them), or why they cannot be read."""
    carried = json_format.MessageToDict(part.metadata).get("parameters", {})
    if not isinstance(carried, dict) or len(carried) > MAX_PARAMETERS or not all(
            isinstance(k, str) and isinstance(v, str) and 0 < len(k) <= _MAX_PARAMETER_CHARS
            and len(v) <= _MAX_PARAMETER_CHARS for k, v in carried.items()):
        return (f"the envelope part's metadata 'parameters' must be an object of at most "
                f"{MAX_PARAMETERS} task parameters, each a name and a value that are strings of "
                f"at most {_MAX_PARAMETER_CHARS} characters")
    return dict(carried)


def _one_part_only(uri: str, found: int) -> str:
    return (f"exactly one SemanticProfile envelope part is allowed for the extension {uri}; "
            f"the message carries {found}")


class Disclosure(enum.StrEnum):
    """How much of a rejection the peer learns (draft 7.1 leaves this to the carrier)."""

    FULL = "full"  # verdict and every reason
    CODES = "codes"  # verdict and reason codes
    VERDICT = "verdict"  # the verdict alone
    COLLAPSED = "collapsed"  # "not-compatible": the peer cannot tell incompatible from the rest


class SemanticGateHandler(DefaultRequestHandlerV2):
    """The SDK's request handler, admitting only tasks whose envelope is compatible.

    ``checker`` is built once at start-up with the agent's profile, its own capability
    registrations and its accepted artifacts. ``required``: a message without the envelope
    is refused with the SDK's extension-support-required error (one that carries it without
    activating the extension is told how to activate it). ``clock`` gives the evaluation
    instant (tests pin it).

    The check runs on a worker thread of the gate's own pool of ``max_checks`` threads, not
    on the event loop, so the agent keeps serving its other requests while one envelope is
    slow. ``check_timeout`` (seconds, ``None`` for none) bounds each request's wait for its
    decision, the wait for a free thread included: past it the task is refused with an
    invalid-params error that says the check timed out (an ``indeterminate`` outcome in the
    error's data, as far as the disclosure policy shows data), and the agent's own logic
    does not run. A thread cannot be stopped: a check that was running goes on in the
    background, holding its thread, and its result is dropped when it finishes; a check that
    had not started yet is cancelled. So at most ``max_checks`` checks run at any time,
    timed-out ones included; while they all run, further requests wait for a thread within
    their own limit. :meth:`aclose` also shuts the pool down.
    """

    def __init__(self, *args: Any, checker: Checker, uri: str = DEFAULT_EXTENSION_URI,
                 required: bool = True, disclosure: Disclosure | str = Disclosure.CODES,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 check_timeout: float | None = DEFAULT_CHECK_TIMEOUT,
                 max_checks: int = DEFAULT_MAX_CHECKS, **kwargs: Any) -> None:
        if check_timeout is not None and not check_timeout > 0:
            raise ValueError(f"check_timeout must be positive seconds or None, not {check_timeout!r}")
        if max_checks < 1:
            raise ValueError(f"max_checks must be at least 1, not {max_checks!r}")
        super().__init__(*args, **kwargs)
        self.checker = checker
        self.uri = uri
        self.required = required
        self.disclosure = Disclosure(disclosure)
        self.clock = clock
        self.check_timeout = check_timeout
        self.max_checks = max_checks
        self._checks = ThreadPoolExecutor(max_checks, thread_name_prefix="ioa-semantic-gate")

    async def on_message_send(self, params: pb.SendMessageRequest,
                              context: ServerCallContext) -> Any:
        await self.admit(params.message, context)
        return await super().on_message_send(params, context)

    async def on_message_send_stream(self, params: pb.SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Any, None]:
        await self.admit(params.message, context)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def aclose(self) -> None:
        """The SDK's shutdown, then the check threads': checks still waiting are cancelled,
        running ones finish on their own threads."""
        await super().aclose()
        self._checks.shutdown(wait=False, cancel_futures=True)

    async def admit(self, message: pb.Message, context: ServerCallContext) -> Decision | None:
        """Raise the A2A error that refuses ``message``, or return the compatible decision
        (``None`` when the extension is not required and the message carries no envelope)."""
        activated = self.uri in context.requested_extensions or self.uri in message.extensions
        parts = _envelope_parts(message, self.uri)
        if activated and len(parts) > 1:
            # Which part counts would be the gate's guess, and another reader of the same
            # message may guess differently: refuse rather than judge one of them.
            raise InvalidParamsError(
                message=_one_part_only(self.uri, len(parts)) + "; the task was not accepted")
        envelope = _content(parts[0]) if activated and parts else None
        if envelope is None:
            if self.required:
                raise ExtensionSupportRequiredError(message=self._requirement(activated, parts))
            return None
        parameters = task_parameters(parts[0])
        if isinstance(parameters, str):
            raise InvalidParamsError(message=parameters + "; the task was not accepted")
        decision = await self._judged(envelope, parameters, self.clock())
        if decision.verdict is Verdict.COMPATIBLE:
            return decision
        raise InvalidParamsError(
            message=("the task's semantic envelope is not compatible"
                     if self.disclosure is Disclosure.COLLAPSED
                     else f"the task's semantic envelope is {decision.verdict.value}")
            + "; the task was not accepted", data=self._disclosed(decision))

    async def _judged(self, envelope: bytes | str | dict[str, Any], parameters: dict[str, str],
                      at: datetime) -> Decision:
        """The checker's decision, from a worker thread within the time limit."""
        running = self._checks.submit(self.checker.check, envelope, params=parameters, at=at)
        try:
            # wait_for cancels the wrapper on time-out, and so does a request that is itself
            # cancelled (the client went away); either cancels a check that has not started.
            return await asyncio.wait_for(asyncio.wrap_future(running), self.check_timeout)
        except TimeoutError:
            # cancel() is False for a check that is running (or finished after the limit).
            raise InvalidParamsError(message=self._timed_out(started=not running.cancel()),
                                     data=self._disclosed_time_out()) from None

    def _timed_out(self, *, started: bool) -> str:
        limit = f"{self.check_timeout:g} s"
        if started:
            return (f"the check of the task's semantic envelope timed out: it did not finish "
                    f"within {limit}; the task was not accepted")
        return (f"the check of the task's semantic envelope timed out: all {self.max_checks} of "
                f"the gate's checks were busy for {limit}, so the envelope was not checked; "
                "the task was not accepted")

    def _requirement(self, activated: bool, parts: list[pb.Part]) -> str:
        """Why a required extension is missing: no envelope, or an envelope not activated."""
        if activated or not parts:
            return (f"this agent requires the extension {self.uri}: send the task's "
                    "SemanticProfile envelope as an application/ld+json part")
        # A sender that attached the envelope but forgot activation is told exactly that:
        # an extension that is not activated is not read (A2A), so the envelope was ignored.
        return (f"this agent requires the extension {self.uri}; the message carries its "
                "envelope but the extension is not activated: send the A2A-Extensions "
                f"header with {self.uri} (or list {self.uri} in message.extensions)")

    def _disclosed_time_out(self) -> dict[str, Any]:
        """A time-out's data: an indeterminate outcome without reasons (no check concluded),
        in the shape of the disclosure level, with the limit that was passed."""
        if self.disclosure is Disclosure.COLLAPSED:
            return {"verdict": "not-compatible"}
        data: dict[str, Any] = {"verdict": Verdict.INDETERMINATE.value}
        if self.disclosure is Disclosure.CODES:
            data["codes"] = []
        elif self.disclosure is Disclosure.FULL:
            data["reasons"] = []
        if self.disclosure is not Disclosure.VERDICT:
            data["remedies"] = []  # no check concluded: nothing to change is known
            data["timeout"] = self.check_timeout
        return data

    def _disclosed(self, decision: Decision) -> dict[str, Any]:
        if self.disclosure is Disclosure.COLLAPSED:
            return {"verdict": "not-compatible"}
        data: dict[str, Any] = {"verdict": decision.verdict.value}
        errors = [f for f in decision.findings if f.severity == "error"]
        if self.disclosure is Disclosure.CODES:
            data["codes"] = sorted({f.code for f in errors})
        elif self.disclosure is Disclosure.FULL:
            data["reasons"] = [f.as_dict() for f in decision.findings]
        if self.disclosure in (Disclosure.CODES, Disclosure.FULL):
            # What the sender could change, bounded so that the error stays small (a
            # document with thousands of malformed members has as many correct-input remedies).
            shown = decision.remedies[:MAX_DISCLOSED_REMEDIES]
            data["remedies"] = [r.as_dict() for r in shown]
            if len(decision.remedies) > len(shown):
                data["remediesOmitted"] = len(decision.remedies) - len(shown)
        return data


# --- the sender's side -----------------------------------------------------------------------


class Round(NamedTuple):
    """One task sent: its envelope, and either the agent's answer (``accepted``) or the
    refusal's error data (verdict, codes, remedies, as the receiver's disclosure shows them)
    and the changes made for the next round (none: the negotiation ended)."""

    envelope: Mapping[str, Any]
    accepted: bool
    answer: tuple[Any, ...] = ()
    refusal: Mapping[str, Any] | None = None
    changes: tuple[Change, ...] = ()


class Negotiation(NamedTuple):
    """Every round of a negotiation, and why it ended."""

    rounds: tuple[Round, ...]
    ended: str

    @property
    def accepted(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].accepted


async def negotiate(client: Client, envelope: Mapping[str, Any], policy: SenderPolicy, *,
                    text: str = "", context: ClientCallContext | None = None,
                    uri: str = DEFAULT_EXTENSION_URI,
                    max_rounds: int = DEFAULT_MAX_ROUNDS) -> Negotiation:
    """Send a task with ``envelope`` through ``client`` until it is accepted, the refusal
    lists nothing the sender can change, or ``max_rounds`` tasks were sent.

    ``policy`` is what the sender holds (:class:`~ioa_semantic.negotiation.SenderPolicy`):
    a remedy is acted on only with the sender's own values, choice and versions. ``text``
    is the message's text part; ``context`` the client call context (by default one that
    activates the extension). A refusal that is not the gate's (no error data) ends the
    negotiation as it is; transport errors are raised.
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, not {max_rounds!r}")
    if context is None:
        context = ClientCallContext(service_parameters=ServiceParametersFactory.create(
            [activation(uri)]))
    rounds: list[Round] = []
    current = dict(envelope)
    while True:
        message = pb.Message(role=pb.Role.ROLE_USER, message_id=f"negotiation-{uuid.uuid4()}",
                             parts=[pb.Part(text=text)] if text else [])
        attach_envelope(message, json.dumps(current, ensure_ascii=False), uri=uri)
        try:
            answer = [event async for event in client.send_message(
                pb.SendMessageRequest(message=message), context=context)]
        except A2AError as refused:
            data = refused.data if isinstance(refused.data, Mapping) else {}
            remedies = data.get("remedies") or ()
            following, changes = changes_for(current, remedies, policy)
            if not remedies:
                ended = "refused; the refusal lists no remedy"
            elif not changes:
                ended = "refused; no remedy is one the sender can apply"
            elif len(rounds) + 1 >= max_rounds:
                ended, changes = f"refused; {max_rounds} rounds were sent", ()
            else:
                ended = ""
            rounds.append(Round(current, False, refusal=dict(data), changes=changes))
            if ended:
                return Negotiation(tuple(rounds), ended)
            current = following
            continue
        rounds.append(Round(current, True, answer=tuple(answer)))
        return Negotiation(tuple(rounds), "accepted")
