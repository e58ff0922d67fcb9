"""``POST /v1/impact``: an uploaded decision log and a change, judged as ``ioa-check impact
--format json`` judges them (issue 40, item 5; docs/serve.md, "Impact").

The body is one JSON object (docs/serve.md has its schema, as the OpenAPI document does)::

    {"log": "<the log's JSON Lines>",
     "objects": {"<sha256>": "<the object's bytes, base64>", ...},
     "change": {"profile": "<a profile, Turtle>", "artifacts": [<an artifact> | "<shipped
                name>", ...], "withdraw": ["<artifactId>", ...], "at": "<instant>"}}

``objects`` are what the log's lines name by sha256 (envelopes, registrations, artifacts:
``LOG.objects`` of a log on disk); each is refused unless its bytes have that digest. The
request is laid out as the command line would find it, in a folder of its own that is
removed afterwards: the log as ``log``, its objects in ``log.objects``, the profile as
``profile.ttl``, the artifacts as ``artifact-N.json``; the answer names them so (never the
folder).

The service reads nothing of its own for a client: a logged profile that is a file (the
client's path) is not read, so a decision judged under one is judged again only when the
change revises that profile (else it is counted as not judged again); a profile in the
change that names shape files or enables remote retrieval is refused, as is an artifact
named by anything but a shipped name. A logged limit or shape timeout above the service's
own, or none, or one that is not a number, is judged under the service's: a client's log
does not lift what one request may cost.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import IO, Any, NamedTuple

from .. import data as _resources
from .._exceptions import IoaSemanticError
from .._findings import Decision
from ..impact import Change, Impact
from ..impact.change import Part
from ..impact.log import Damage, Logged, object_path
from ..impact.rejudge import Seen

# What a logged profile file (a path of the client's) becomes: a name no profile has, so
# that the decision is judged again only under the change's revision of that profile.
NOT_KEPT = "(a profile file of the client's: the service does not read it)"
_DIGEST = re.compile("[0-9a-f]{64}")
_MEMBERS = frozenset({"log", "objects", "change"})
_CHANGE_MEMBERS = frozenset({"profile", "artifacts", "withdraw", "at"})


class ImpactRefused(IoaSemanticError):
    """A body ``/v1/impact`` does not take, or a change it cannot read: the sentence says
    what and where (the service answers it as a 422 problem)."""


class ImpactStopped(IoaSemanticError):
    """The impact run was stopped (past its time bound, or the client left)."""


class ImpactRequest(NamedTuple):
    """What a ``/v1/impact`` body asks, read and checked (nothing written yet)."""

    log: str
    objects: dict[str, bytes]
    profile: str | None
    artifacts: tuple[dict[str, Any] | str, ...]
    withdraw: tuple[str, ...]
    at: datetime | None


def read_request(body: bytes, instant: Callable[[str], datetime]) -> ImpactRequest:
    """The request ``body`` holds; :class:`ImpactRefused` saying why it is not one.
    ``instant`` reads ``at`` as ``--at`` is read (ValueError for what it refuses)."""
    document = _document(body)
    if not isinstance(document, dict):
        raise ImpactRefused("the body is not a JSON object")
    _members(document, _MEMBERS, "the body")
    log = document.get("log")
    if not isinstance(log, str):
        raise ImpactRefused("log: the decision log's lines, as one string, are required")
    objects = _objects(document.get("objects", {}))
    change = document.get("change")
    if not isinstance(change, dict):
        raise ImpactRefused("change: an object is required (profile, artifacts, withdraw, at)")
    _members(change, _CHANGE_MEMBERS, "change")
    _unicode(change, "change")
    profile = change.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise ImpactRefused("change.profile: a profile's Turtle text, as a string")
    artifacts = change.get("artifacts", [])
    if not isinstance(artifacts, list):
        raise ImpactRefused("change.artifacts: an array")
    shipped = _resources.shipped_alignments()
    for number, artifact in enumerate(artifacts):
        if isinstance(artifact, str) and artifact not in shipped:
            raise ImpactRefused(f"change.artifacts[{number}]: {artifact!r} is not a shipped "
                                f"artifact (shipped: {', '.join(shipped) or 'none'}); send "
                                "an artifact as its JSON object")
        if not isinstance(artifact, (str, dict)):
            raise ImpactRefused(f"change.artifacts[{number}]: an artifact object or a "
                                "shipped artifact's name")
    withdraw = change.get("withdraw", [])
    if not isinstance(withdraw, list) or not all(isinstance(w, str) for w in withdraw):
        raise ImpactRefused("change.withdraw: an array of artifactIds")
    at = change.get("at")
    when = None
    if at is not None:
        try:
            when = instant(at) if isinstance(at, str) else None
        except ValueError as exc:
            raise ImpactRefused(f"change.at: {exc}") from None
        if when is None:
            raise ImpactRefused("change.at: an ISO-8601 instant with a UTC offset, as a string")
    if profile is None and not artifacts and not withdraw and when is None:
        raise ImpactRefused("change: name a change (profile, artifacts, withdraw or at)")
    return ImpactRequest(log, objects, profile, tuple(artifacts), tuple(withdraw), when)


# What parsing a body costs, by what it holds outside its strings (measured with the
# duplicate-refusing hook, rounded up): a container (a dict or list, and the hook's list of
# pairs) or an item after a comma, and a string (per quote: two a string); and what any
# parse costs (the smallest document's objects).
_CONTAINER_COST = 128
_QUOTE_COST = 64
_PARSE_COST = 64 * 1024
# A string's text, read a window at a time (each a call that holds the interpreter's lock:
# the event loop runs between them).
_IN_STRING = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*')
_WINDOW = 1 << 18
# A character two bytes wide in Python (past Latin-1), or four (past the BMP): raw UTF-8,
# or an escape.
_WIDE = re.compile(rb"[\xc4-\xef]|\\u(?!00)")
_WIDEST = re.compile(rb"[\xf0-\xff]|\\u[dD][89abAB]")


def _found(pattern: re.Pattern[bytes], body: bytes) -> bool:
    """Whether ``pattern`` is in ``body``, looked for a window at a time (a window's end may
    cut a match: each window starts a few bytes before the last one ended)."""
    return any(pattern.search(body, max(start - 8, 0), start + _WINDOW)
               for start in range(0, len(body), _WINDOW))


def parse_cost(body: bytes) -> int:
    """An estimate, from the bytes alone and never under it, of the memory that parsing
    ``body`` with :func:`read_request` takes on top of the body itself: its strings' text
    (one to four bytes a character, as Python keeps the widest character of a string; the
    objects' bytes once decoded), and each container, item and string as an object of its
    own (``{},{},...`` takes some 25 bytes of memory a byte). Run it on a thread: it reads
    the whole body."""
    if _found(_WIDEST, body):
        width = 4  # a character beyond the BMP, raw or as a surrogate pair
    elif _found(_WIDE, body):
        width = 2
    else:
        width = 1
    items = quotes = 0
    size, at = len(body), 0
    while at < size:
        opens = body.find(b'"', at)
        outside = size if opens < 0 else opens
        items += sum(body.count(mark, start, min(start + _WINDOW, outside))
                     for start in range(at, outside, _WINDOW) for mark in (b"{", b"[", b","))
        if opens < 0:
            break
        quotes += 2
        at = opens + 1
        while at < size:  # to the string's closing quote
            ends = _IN_STRING.match(body, at, min(at + _WINDOW, size))
            assert ends is not None  # the pattern matches the empty string
            at = ends.end() if ends.end() > at else at + 1  # a lone backslash at the end
            if at < size and body[at] == 0x22:
                at += 1
                break
    return _PARSE_COST + (width + 1) * size + _CONTAINER_COST * items + _QUOTE_COST * quotes


def _document(body: bytes) -> Any:
    """The body's JSON, a member twice in one object refused."""
    try:
        return json.loads(body, object_pairs_hook=_unique)
    except (ValueError, RecursionError) as exc:
        raise ImpactRefused(f"the body is not JSON: {exc}") from None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A proxy that reads the first of two members and the service that reads the last would
    # see two requests in one body; an artifact's duplicate would be lost as it is written out.
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise ImpactRefused(f"the body has the member {name[:80]!r} twice in one "
                                    "object: which one is meant is not guessed")
            seen.add(name)
    return document


def _unicode(value: Any, where: str) -> None:
    """Refused when a string in ``value`` holds a lone surrogate (JSON's ``\\ud800``): no
    UTF-8 file holds one, so the profile or artifact could not be written out for the run."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ImpactRefused(f"{where}: a string holds a lone surrogate (\\ud800 to \\udfff "
                            "alone), which is not Unicode text") from None


def _members(value: dict[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(set(value) - known)
    if unknown:
        raise ImpactRefused(f"{where}: unknown member {unknown[0]!r} (it takes "
                            f"{', '.join(sorted(known))})")


def _objects(value: Any) -> dict[str, bytes]:
    if not isinstance(value, dict):
        raise ImpactRefused("objects: an object of sha256 to base64")
    objects = {}
    for digest, encoded in value.items():
        if _DIGEST.fullmatch(digest) is None:
            raise ImpactRefused(f"objects: {digest[:80]!r} is not a sha256 (64 lowercase hex "
                                "digits)")
        try:
            content = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) \
                else None
        except (binascii.Error, ValueError):
            content = None
        if content is None:
            raise ImpactRefused(f"objects.{digest}: not base64")
        if hashlib.sha256(content).hexdigest() != digest:
            raise ImpactRefused(f"objects.{digest}: the bytes' sha256 is "
                                f"{hashlib.sha256(content).hexdigest()}")
        objects[digest] = content
    return objects


def _lines(log: str, shape_timeout: float, limits: Mapping[str, Any]) -> Iterator[str]:
    """The log's lines, each with a profile file the service will not read named
    :data:`NOT_KEPT`, and its shape timeout and limits held to ``shape_timeout`` and
    ``limits``; a line that is not a decision's is left as it is (the run reports it as
    damage)."""
    parts = log.split("\n")
    shipped = _resources.shipped_profiles()
    for number, raw in enumerate(parts):
        last = number == len(parts) - 1
        if last and raw == "":
            return
        try:
            entry = json.loads(raw)
            configuration = entry["configuration"]
            profile = configuration["profile"]
        except (ValueError, RecursionError, KeyError, TypeError):
            yield raw if last else raw + "\n"
            continue
        if not isinstance(profile, dict):
            yield raw if last else raw + "\n"
            continue
        if profile.get("source") not in shipped:
            profile["source"] = NOT_KEPT
        # Only a limit the log states, as a number, at or under the service's own is kept:
        # anything else (absent, null, NaN, a string) would otherwise be judged under the
        # library's default or under no limit at all.
        timeout = configuration.get("shapeTimeout")
        if not (_number(timeout) and 0 < timeout <= shape_timeout):
            configuration["shapeTimeout"] = shape_timeout
        logged = configuration.setdefault("limits", {})
        if isinstance(logged, dict):
            for name, ceiling in limits.items():
                value = logged.get(name)
                if not (_number(value) and value <= ceiling):
                    logged[name] = ceiling
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        yield line if last else line + "\n"


def _number(value: Any) -> bool:
    """A finite number (JSON's, so never a bool)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


class _Stoppable(Impact):
    """An impact run that stops at the next decision it reads once ``stopped`` is set (at a
    flip only, a run that flips nothing would go on to the log's end after its answer)."""

    def __init__(self, logs: list[str], change: Change, stopped: threading.Event) -> None:
        super().__init__(logs, change)
        self.stopped = stopped

    def _read(self) -> Iterator[Logged | Damage]:
        for item in super()._read():
            if self.stopped.is_set():
                raise ImpactStopped("stopped")
            yield item

    def _judge(self, item: Logged, parts: Iterable[Part], seen: Seen, run: str) -> Decision:
        # And before each judgement: a flip's causes are judged part by part, a thousand
        # judgements of one decision for a change of a thousand artifacts.
        if self.stopped.is_set():
            raise ImpactStopped("stopped")
        return super()._judge(item, parts, seen, run)


def run(request: ImpactRequest, write: Callable[[Impact, IO[str]], None], *,
        shape_timeout: float, stopped: threading.Event,
        limits: Mapping[str, Any] | None = None) -> bytes:
    """The JSON Lines ``write`` makes of the impact ``request`` asks (flips, then the
    summary), every name in them relative to the request's folder. ``shape_timeout`` and
    ``limits`` (a :class:`~ioa_semantic.pipeline.intake.Limits` as a dict) are the most a
    logged decision is judged under."""
    with tempfile.TemporaryDirectory(prefix="ioa-impact-") as folder:
        log = os.path.join(folder, "log")
        with open(log, "w", encoding="utf-8", errors="surrogatepass", newline="") as handle:
            handle.writelines(_lines(request.log, shape_timeout, limits or {}))
        for digest, content in request.objects.items():
            target = object_path(log, digest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as kept:
                kept.write(content)
        profile = None
        if request.profile is not None:
            profile = os.path.join(folder, "profile.ttl")
            with open(profile, "w", encoding="utf-8", newline="") as turtle:
                turtle.write(request.profile)
        added = []
        for number, artifact in enumerate(request.artifacts, start=1):
            if isinstance(artifact, str):
                added.append(artifact)  # a shipped name (read_request holds it to one)
                continue
            path = os.path.join(folder, f"artifact-{number}.json")
            with open(path, "w", encoding="utf-8") as document:
                json.dump(artifact, document, ensure_ascii=False)
            added.append(path)
        prefix = folder + os.sep

        def named(text: str) -> str:
            return text.replace(prefix, "")

        try:
            impact = _Stoppable([log], Change(profile, tuple(added), request.withdraw,
                                              request.at), stopped)
            for part in impact.parts:
                if part.profile is not None and part.profile.shapes:
                    raise ImpactRefused("change.profile names shape files: the service reads "
                                        "no file for a client")
                if part.profile is not None and part.profile.retrieval.origins:
                    raise ImpactRefused("change.profile enables remote retrieval: the "
                                        "service retrieves nothing for a client")
            stream = io.StringIO()
            write(impact, stream)
        except (ImpactRefused, ImpactStopped):
            raise
        except IoaSemanticError as exc:  # a profile or artifact that cannot be read
            raise ImpactRefused(named(str(exc))) from None
        return named(stream.getvalue()).encode("utf-8", "surrogatepass")
