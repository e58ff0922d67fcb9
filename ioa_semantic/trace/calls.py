"""A run as the later stages see it: its calls, each with its parent resolved, and the walk up
a run's call tree that every stage shares."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, Never, Self, SupportsIndex

from .._findings import Finding
from . import instants

# A call's or a run's outcome word (mas-lab's ``success`` | ``error`` | ``timeout``, an OTLP
# status code, other exporters' words) as success or not; any other word leaves it unknown.
# A timeout is no success (run.json's ``timeout`` gives the session ``mas:success false``
# too); ``exception`` is an error, as the mas-lab spans' table reads it.
_SUCCESS = {"ok": True, "success": True, "succeeded": True, "completed": True,
            "error": False, "failed": False, "failure": False, "cancelled": False,
            "timeout": False, "exception": False}


def succeeded(status: str | None) -> bool | None:
    """Whether an outcome word says the call succeeded: True, False, or None (no word, or one
    that says neither)."""
    return _SUCCESS.get(status.lower()) if status else None


# --- the immutable result -------------------------------------------------------------------


def id_key(call_id: str) -> str:
    """The fold's key of the call a trace names ``call_id``: the id, each ``~`` in it doubled.

    The fold makes keys of its own for the calls an id does not name apart: ``~LINE`` for a
    call without an id, ``KEY~LINE`` for a call started (or ended) again under an id it has
    used. Any string may be an id; doubled, every run of ``~`` in an id's key is even, and a
    made key's last run is odd: no id's key is another call's, whatever the trace's ids are
    (an id ``~2`` once took the key of the call without an id at line 2, and replaced it).
    """
    return call_id.replace("~", "~~") if "~" in call_id else call_id


class Digest(bytes):
    """A piece of content as the audit keeps it: its SHA-256 (hex) and length in characters.

    Read as :attr:`sha256` and :attr:`chars`; its JSON is the object ``{"sha256", "chars"}``
    (:meth:`as_json`) in reports and records, the pair ``[sha256, chars]`` in checkpoints
    (:meth:`as_pair`), as they have always written it.

    Held as the bytes of the hash, not its hex: a long run holds two a call to its end, and as
    a pair of the hex text and the count a digest weighed 197 bytes, as its 36 bytes 88 (issue
    37). The first byte says how the rest reads (:data:`_HASH`: the 32 bytes of a SHA-256
    whose hex is all lowercase, then the count, big-endian; :data:`_TEXT_REF`: a private
    store's reference ``text-`` and 20 lowercase hex digits, as its 10 bytes, then the count;
    :data:`_OTHER`: anything else a record or checkpoint may hold, as the JSON of the pair).
    Two digests are equal when made of the same hash text and count; a count of another type
    (a float, a bool: only in a hand-edited record) makes another digest, where a pair of it
    compared equal. Only the sharing of equal calls compares digests.
    """

    __slots__ = ()

    def __new__(cls, sha256: str, chars: int) -> Digest:
        return bytes.__new__(cls, _packed(sha256, chars))

    @property
    def sha256(self) -> str:
        tag = self[0]
        if tag == _HASH:
            return self[1:33].hex()
        if tag == _TEXT_REF:
            return "text-" + self[1:11].hex()
        return _other(self)[0]  # type: ignore[no-any-return]

    @property
    def chars(self) -> int:
        tag = self[0]
        if tag == _HASH:
            return int.from_bytes(self[33:], "big")
        if tag == _TEXT_REF:
            return int.from_bytes(self[11:], "big")
        return _other(self)[1]  # type: ignore[no-any-return]

    def as_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "chars": self.chars}

    def as_pair(self) -> list[Any]:
        """The digest as a checkpoint writes it."""
        return [self.sha256, self.chars]

    def _replace(self, *, sha256: str | None = None, chars: int | None = None) -> Digest:
        return Digest(self.sha256 if sha256 is None else sha256,
                      self.chars if chars is None else chars)

    def __getnewargs__(self) -> tuple[str, int]:  # type: ignore[override]
        return self.sha256, self.chars  # pickled (Dask, copies) as made, not as its bytes

    def __repr__(self) -> str:
        return f"Digest(sha256={self.sha256!r}, chars={self.chars!r})"

    @classmethod
    def of_hash(cls, sha256: bytes, chars: int) -> Digest:
        """The digest of a SHA-256 at hand as its 32 bytes (no hex written and read back)."""
        return bytes.__new__(cls, _HASH_TAG + sha256 + _count(chars))

    @classmethod
    def of(cls, value: Any) -> Digest:
        """A digest from its JSON: an object (reports, records), or a pair (a checkpoint)."""
        if isinstance(value, Digest):
            return value
        if isinstance(value, dict):
            return cls(value["sha256"], value["chars"])
        sha256, chars = value
        return cls(sha256, chars)


_HASH, _TEXT_REF, _OTHER = 0, 1, 2
_HASH_TAG, _TEXT_REF_TAG, _OTHER_TAG = bytes((_HASH,)), bytes((_TEXT_REF,)), bytes((_OTHER,))


def _count(chars: int) -> bytes:
    return chars.to_bytes((chars.bit_length() + 7) // 8 or 1, "big")


def _packed(sha256: Any, chars: Any) -> bytes:
    if type(chars) is int and chars >= 0 and type(sha256) is str:
        if len(sha256) == 64:
            raw = _lower_hex(sha256)
            if raw is not None:
                return _HASH_TAG + raw + _count(chars)
        elif len(sha256) == 25 and sha256.startswith("text-"):
            raw = _lower_hex(sha256[5:])
            if raw is not None:
                return _TEXT_REF_TAG + raw + _count(chars)
    # Not a hash this version makes (a record of another version, a hand-edited checkpoint):
    # kept as it came, whatever it is.
    return _OTHER_TAG + json.dumps([sha256, chars], ensure_ascii=False).encode(
        "utf-8", "surrogatepass")


def _lower_hex(text: str) -> bytes | None:
    """The bytes of ``text`` if it is hex in lowercase digits only (what ``hex()`` gives back:
    ``fromhex`` also takes capitals and spaces, which would not read back the same)."""
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    return raw if raw.hex() == text else None


def _other(digest: bytes) -> list[Any]:
    return json.loads(digest[1:].decode("utf-8", "surrogatepass"))  # type: ignore[no-any-return]


class _Rare(NamedTuple):
    """The fields of a :class:`Call` that most calls leave at their defaults, held apart."""

    label: str | None
    finish: str | None
    temperature: float | None
    response_id: str | None
    content: dict[str, Any] | None
    ambiguous: tuple[str, ...]
    remote: bool
    candidates: tuple[str, ...] | None
    agent_id: str | None
    own_agent: str | None


class _Held(NamedTuple):
    """What a :class:`Call` holds: the fields most calls set, in their order, then ``rare``."""

    key: str
    id: str
    cls: str
    agent: str | None
    target: str | None
    parent: str | None
    parent_id: str | None
    # The call's times as .instants holds them (read as their texts through Call's start, end).
    start: str | float | None
    end: str | float | None
    first_line: int
    status: str | None
    tokens: dict[str, int]
    input: Digest | None
    output: Digest | None
    # The call's :class:`_Rare` fields, or None when every one is at its default.
    rare: _Rare | None


_START, _END = _Held._fields.index("start"), _Held._fields.index("end")
_AT_DEFAULTS = _Rare(None, None, None, None, None, (), False, None, None, None)
_WHOLE = slice(None)
_KEPT: Any = object()  # a field _replace leaves as it is


class Call(_Held):
    """One call of a run, its parent resolved to another call's key (or None).

    Its fields, in their order:

    - ``key``, ``id``, ``cls``, ``agent``, ``target``;
    - ``parent``: the key of the parent call in this run; ``parent_id``: the parent call id
      as the trace wrote it;
    - ``start``, ``end``, ``first_line``, ``status``, ``label``, ``tokens``, ``finish``,
      ``temperature``, ``response_id``, ``input``, ``output``, ``content``, ``ambiguous``;
    - ``remote``: an A2A client span under which the trace holds no agent span: a call into
      an agent the trace does not name (OTLP input only);
    - ``candidates``: an agent call whose caller the order of events does not establish
      (mas-lab events without parents): the calls that may have made it (none, when nothing
      points to any). None for every call whose caller is known or unknown for another
      reason;
    - ``agent_id``, ``own_agent`` (OTLP only): the agent's gen_ai.agent.id beside its name (a
      manifest may match it explicitly), and a model or tool span's own gen_ai.agent.name
      (the framework's agent attribute, read when no agent span above or beside the call
      names its agent).

    It is made, read, compared, hashed, shown, copied, pickled and replaced as the named
    tuple of those 24 fields it was, and iterates, indexes and counts as that tuple; it
    holds fewer. A long run's calls are held to the end of its store's load, and the ten
    fields most calls leave at their defaults (``label``, ``finish``, ``temperature``,
    ``response_id``, ``content``, ``ambiguous``, ``remote``, ``candidates``, ``agent_id``,
    ``own_agent``) took 80 bytes a call (issue 37): they are held in one :class:`_Rare`,
    and not at all (``rare`` None) when all ten are at their defaults. A field counts as at
    its default only as the very value (``remote`` False, not 0; ``ambiguous`` a plain
    empty tuple), so every field reads back as it was given.
    """

    __slots__ = ()

    # Its fields, in their order: what it is made of, reads, gives and shows.
    __match_args__ = ("key", "id", "cls", "agent", "target", "parent", "parent_id", "start",
                      "end", "first_line", "status", "label", "tokens", "finish",
                      "temperature", "response_id", "input", "output", "content", "ambiguous",
                      "remote", "candidates", "agent_id", "own_agent")
    _fields = __match_args__  # type: ignore[assignment]  # the 24 fields, not the 15 held
    _field_defaults = {"remote": False, "candidates": None, "agent_id": None,  # noqa: RUF012
                       "own_agent": None}

    def __new__(klass, key: str, id: str, cls: str, agent: str | None, target: str | None,
                parent: str | None, parent_id: str | None, start: str | float | None,
                end: str | float | None, first_line: int, status: str | None,
                label: str | None, tokens: dict[str, int],
                finish: str | None, temperature: float | None, response_id: str | None,
                input: Digest | None, output: Digest | None, content: dict[str, Any] | None,
                ambiguous: tuple[str, ...], remote: bool = False,
                candidates: tuple[str, ...] | None = None, agent_id: str | None = None,
                own_agent: str | None = None) -> Call:
        if (label is None and finish is None and temperature is None and response_id is None
                and content is None and ambiguous.__class__ is tuple and not ambiguous
                and remote is False and candidates is None and agent_id is None
                and own_agent is None):
            rare = None
        else:
            rare = _Rare(label, finish, temperature, response_id, content, ambiguous, remote,
                         candidates, agent_id, own_agent)
        # A time is its text, or the float .instants holds that text as (the fold's, as held).
        return super().__new__(klass, key, id, cls, agent, target, parent, parent_id,
                               instants.held(start), instants.held(end), first_line, status,
                               tokens, input, output, rare)

    # --- the times, held as the floats they were written as (.instants) ---

    @property
    def start(self) -> str | None:
        held: Any = tuple.__getitem__(self, _START)
        return instants.text(held)

    @property
    def end(self) -> str | None:
        held: Any = tuple.__getitem__(self, _END)
        return instants.text(held)

    # --- the fields held apart ---

    @property
    def label(self) -> str | None:
        return (self.rare or _AT_DEFAULTS).label

    @property
    def finish(self) -> str | None:
        return (self.rare or _AT_DEFAULTS).finish

    @property
    def temperature(self) -> float | None:
        return (self.rare or _AT_DEFAULTS).temperature

    @property
    def response_id(self) -> str | None:
        return (self.rare or _AT_DEFAULTS).response_id

    @property
    def content(self) -> dict[str, Any] | None:
        return (self.rare or _AT_DEFAULTS).content

    @property
    def ambiguous(self) -> tuple[str, ...]:
        return (self.rare or _AT_DEFAULTS).ambiguous

    @property
    def remote(self) -> bool:
        return (self.rare or _AT_DEFAULTS).remote

    @property
    def candidates(self) -> tuple[str, ...] | None:
        return (self.rare or _AT_DEFAULTS).candidates

    @property
    def agent_id(self) -> str | None:
        return (self.rare or _AT_DEFAULTS).agent_id

    @property
    def own_agent(self) -> str | None:
        return (self.rare or _AT_DEFAULTS).own_agent

    # --- the named tuple of the 24 fields ---

    def _values(self) -> tuple[Any, ...]:
        """The call's 24 fields, in their order: the tuple it stands for."""
        # The held items as a plain tuple (its own indexing reads the 24).
        held: tuple[Any, ...] = tuple.__getitem__(self, _WHOLE)
        (key, id, cls, agent, target, parent, parent_id, start, end, first_line, status,
         tokens, input, output, rare) = held
        start, end = instants.text(start), instants.text(end)
        (label, finish, temperature, response_id, content, ambiguous, remote, candidates,
         agent_id, own_agent) = rare or _AT_DEFAULTS
        return (key, id, cls, agent, target, parent, parent_id, start, end, first_line, status,
                label, tokens, finish, temperature, response_id, input, output, content,
                ambiguous, remote, candidates, agent_id, own_agent)

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(_FIELDS, self._values(), strict=True))

    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> Self:  # type: ignore[override]  # 24 fields
        values = tuple(iterable)
        if len(values) != len(_FIELDS):
            raise TypeError(f"Expected {len(_FIELDS)} arguments, got {len(values)}")
        return cls(*values)

    def _replace(  # type: ignore[override]  # the 24 fields, not the held ones
            self, *, key: str = _KEPT, id: str = _KEPT, cls: str = _KEPT,
            agent: str | None = _KEPT, target: str | None = _KEPT, parent: str | None = _KEPT,
            parent_id: str | None = _KEPT, start: str | None = _KEPT, end: str | None = _KEPT,
            first_line: int = _KEPT, status: str | None = _KEPT, label: str | None = _KEPT,
            tokens: dict[str, int] = _KEPT, finish: str | None = _KEPT,
            temperature: float | None = _KEPT, response_id: str | None = _KEPT,
            input: Digest | None = _KEPT, output: Digest | None = _KEPT,
            content: dict[str, Any] | None = _KEPT, ambiguous: tuple[str, ...] = _KEPT,
            remote: bool = _KEPT, candidates: tuple[str, ...] | None = _KEPT,
            agent_id: str | None = _KEPT, own_agent: str | None = _KEPT,
            **unexpected: Never) -> Call:
        if unexpected:  # as a named tuple says it (mypy refuses them before)
            raise ValueError(f"Got unexpected field names: {list(unexpected)!r}")
        changed = (key, id, cls, agent, target, parent, parent_id, start, end, first_line,
                   status, label, tokens, finish, temperature, response_id, input, output,
                   content, ambiguous, remote, candidates, agent_id, own_agent)
        values: list[Any] = [old if new is _KEPT else new
                             for old, new in zip(self._values(), changed, strict=True)]
        return self.__class__(*values)

    __replace__ = _replace  # copy.replace (Python 3.13)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(
            _FIELDS, self._values(), strict=True))
        return f"{self.__class__.__name__}({shown})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return self._values()

    def __reduce__(self) -> tuple[Any, ...]:
        # Made again of its 24 fields, by every protocol (a tuple's protocol 0 and 1 would
        # make it of its items, which iterate as the 24).
        return self.__class__, self._values()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values())

    def __len__(self) -> int:
        return len(_FIELDS)

    def __getitem__(self, index: Any) -> Any:
        return self._values()[index]

    def __contains__(self, value: object) -> bool:
        return value in self._values()

    def count(self, value: Any) -> int:
        return self._values().count(value)

    def index(self, value: Any, start: SupportsIndex = 0,
              stop: SupportsIndex = sys.maxsize) -> int:
        return self._values().index(value, start, stop)

    def __add__(self, other: tuple[Any, ...]) -> tuple[Any, ...]:
        return self._values() + other

    def __radd__(self, other: tuple[Any, ...]) -> tuple[Any, ...]:
        return other + self._values()

    def __mul__(self, times: SupportsIndex) -> tuple[Any, ...]:
        return self._values() * times

    __rmul__ = __mul__

    def __hash__(self) -> int:
        return hash(self._values())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Call):
            if (self.rare is None) is (other.rare is None):
                # Held alike: the held items are equal exactly when the 24 fields are.
                return tuple.__eq__(self, other)
            return self._values() == other._values()
        if isinstance(other, tuple):
            return self._values() == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __lt__(self, other: tuple[Any, ...]) -> bool:
        return self._values() < _tuple(other) if isinstance(other, tuple) else NotImplemented

    def __le__(self, other: tuple[Any, ...]) -> bool:
        return self._values() <= _tuple(other) if isinstance(other, tuple) else NotImplemented

    def __gt__(self, other: tuple[Any, ...]) -> bool:
        return self._values() > _tuple(other) if isinstance(other, tuple) else NotImplemented

    def __ge__(self, other: tuple[Any, ...]) -> bool:
        return self._values() >= _tuple(other) if isinstance(other, tuple) else NotImplemented

    # --- what a call says of itself ---

    @property
    def success(self) -> bool | None:
        return succeeded(self.status)

    @property
    def ref(self) -> str:
        """The call's name within its run, no other call's (its IRI is made of it): the
        trace's id, the key the fold made where the id does not tell the call apart (no id,
        an id started again, an id with ``~``: see :func:`id_key`)."""
        return self.key


_FIELDS = Call._fields


def _tuple(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """``value`` as the tuple it stands for (a call: its 24 fields)."""
    return value._values() if isinstance(value, Call) else value


class Run(NamedTuple):
    """Everything the later stages need about one input."""

    source: str
    run_id: str | None
    session_id: str | None
    mas: str | None  # the MAS the run executes, as the run folder or its events name it
    calls: tuple[Call, ...]
    events: int
    kinds: dict[str, int]
    unknown: dict[str, int]
    records: tuple[dict[str, Any], ...]
    findings: tuple[Finding, ...]
    skipped: int  # lines or records that could not be used
    readable: bool
    # Tools the trace itself declares (OTLP gen_ai.tool.definitions): agent -> tool -> the
    # span that lists it.
    definitions: dict[str, dict[str, str]] = {}  # noqa: RUF012 (never mutated)
    # What ``events`` counts: mas-lab events, or the spans of an OTLP trace.
    unit: str = "events"
    # The session as a mas-lab run folder's run.json describes it (see runfile.py).
    scenario: str | None = None
    status: str | None = None  # "success", "error" or "timeout"
    created_at: str | None = None  # Unix seconds, in plain decimal notation
    duration_secs: str | None = None
    # Whether an OTLP trace's root span (a span with no parent) has ended, and the latest
    # instant any of its spans names (Unix seconds): a live feed judges a run once its root
    # ended or it has been quiet long enough (``trace --complete-only``). Other inputs are
    # whole when read.
    root_ended: bool = True
    last_instant: str | None = None

    @property
    def ident(self) -> str:
        """The run's identifier, or the input's path when the trace names none."""
        return self.run_id or self.source

    def by_key(self) -> dict[str, Call]:
        return {call.key: call for call in self.calls}


class Ancestry:
    """The nearest enclosing call of some classes, for every call of a run, each chain walked
    once: a call's answer is remembered for the calls passed on the way, so a run nested n
    calls deep costs n steps, not n squared. Only calls passed are remembered (calls with
    calls under them, a fraction of a run's), not the call asked about: asked again, its
    answer is one step away, and a long run's leaves would hold an entry each to the end. A
    chain that loops back on itself (a trace can say anything) is walked afresh each time and
    remembered for none of its calls, so the answer is the plain walk's: the first call of
    those classes above, never the call itself."""

    def __init__(self, calls: dict[str, Call]) -> None:
        self.calls = calls
        # By the classes asked for, then by call key (one small table a question, not a
        # pair a call and question).
        self._known: dict[tuple[str, ...], dict[str, Call | None]] = {}
        self.steps = 0  # calls looked at, over every question (tests count the work)

    def nearest(self, call: Call, classes: tuple[str, ...]) -> Call | None:
        known = self._known.get(classes)
        if known is None:
            known = self._known[classes] = {}
        calls = self.calls
        seen = {call.key}
        passed: list[str] = []
        current = calls.get(call.parent) if call.parent else None
        found: Call | None = None
        while current is not None:
            self.steps += 1
            if current.key in seen:
                return None  # a loop: nothing of these classes on it, nothing remembered
            if current.cls in classes:
                found = current
                break
            remembered = known.get(current.key, _UNKNOWN)
            if remembered is not _UNKNOWN:
                if remembered is not None and remembered.key in seen:
                    # The answer remembered above is the call asked about: its chain loops
                    # back to it (a call passed on the way was no answer), so the plain walk
                    # meets it again before any call of these classes.
                    return None
                found = remembered
                break
            seen.add(current.key)
            passed.append(current.key)
            current = calls.get(current.parent) if current.parent else None
        for key in passed:
            known[key] = found
        return found


_UNKNOWN: Any = object()
