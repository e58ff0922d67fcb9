"""A call of a mas-lab run as the fold holds it while the run is read: slots, not a dict.

A long run's fold holds every call until the run is built (issue 37). As a dict of its 13-15
members a call weighed about 1.1 KB, 460-570 bytes of it the dict and its key table; as an
object of one slot a member, the object is 224 bytes however many members it holds. The
members most calls never have (:data:`RARE`: a label, a temperature, content, a place in the
order of events, candidates...) are held together in one slot, an object made the first time
one of them is written: a call without any is 160 bytes (eighty bytes a call less, 40 MiB of a
million events' reading, measured). Its times are held as :mod:`.instants` holds them.

The fold's code reads and writes the members as attributes. Everything else may read a call
as the dict it was (``[k]``, ``get``, ``in``, ``setdefault``, ``pop``, ``del``), and a
checkpoint writes it as one (:meth:`FoldedCall.as_json`). A member the fold has not written is
absent there, as a missing key was. Slots have no cheap "absent": reading an unset slot costs
an exception (about twenty times a set slot's read), so a member absent from the call is held
as None, which no member is ever written as, with two exceptions:

* ``agent`` and ``target`` are written as None when the call's events disagree on them; the
  call's ``ambiguous`` list names each such member, so None there is present (null);
* ``placed`` is None for an execution the order of events places under no call (a MAS
  without an open MAS call): its slot is unset while it is absent. Only the build and the
  crossing of two agents' calls read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from . import instants
from .calls import Digest

# A checkpoint's members in this order: the order the fold writes them in for a call whose
# start comes before its end (its start's members, its placement, then its end's), which a
# dict of it kept. The content is written with the first payload, its input's or, without
# one, its output's. A call read otherwise (its end first) writes them in this order too: the
# restore reads members by name, and nothing else reads a checkpoint.
ORDER = ("key", "id", "cls", "first", "startLine", "start", "agent", "parent", "target",
         "label", "temperature", "input", "content", "placed", "candidates", "hosted",
         "endLine", "end", "status", "tokens", "finish", "responseId", "output", "ambiguous",
         "again", "parentKey")
# A call with no input: its content after its output (the last member but ambiguous).
_OUTPUT_FIRST = (*(n for n in ORDER if n not in ("content", "ambiguous")), "content", "ambiguous")
_MEMBERS = frozenset(ORDER)
_DISPUTED = ("agent", "target")  # None when the events disagree (then listed in ambiguous)
_UNSET: Any = object()
# The members few calls have (written by the fold only on the events that carry them).
RARE = ("label", "temperature", "content", "placed", "candidates", "hosted", "finish",
        "responseId", "ambiguous", "again", "parentKey")
_COMMON = tuple(name for name in ORDER if name not in RARE)

T = TypeVar("T")


class _Rare:
    """The rare members of one call (:data:`RARE`), made when the first is written; ``placed``
    unset while absent, as on the call."""

    __slots__ = RARE

    label: str | None
    temperature: float | None
    content: dict[str, Any] | None
    placed: str | None
    candidates: list[str] | None
    hosted: int | None
    finish: str | None
    responseId: str | None
    ambiguous: list[str] | None
    again: dict[str, str] | None
    parentKey: str | None

    def __init__(self) -> None:
        self.label = self.temperature = self.content = self.candidates = self.hosted = None
        self.finish = self.responseId = self.ambiguous = self.again = self.parentKey = None


# A call's rare members when it has none (every one None, ``placed`` unset): what the fold's
# compiled readers read from ``call._rare or NO_RARE`` where a descriptor's interpreted call
# for each member of each call was a sixth of a long run's fold. Never written.
NO_RARE = _Rare()


class _RareMember(Generic[T]):
    """A member of :data:`RARE` on the call: read from its rare members (None, or for
    ``placed`` unset, while the call has none), written there (made on the first write of a
    value; None written to a call without rare members leaves it without)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, call: Any, owner: Any = None) -> T:
        rare = call._rare
        if rare is None:
            if self.name == "placed":
                raise AttributeError("placed")
            return None  # type: ignore[return-value]
        return getattr(rare, self.name)  # type: ignore[no-any-return]

    def __set__(self, call: Any, value: T) -> None:
        rare = call._rare
        if rare is None:
            if value is None and self.name != "placed":
                return
            rare = call._rare = _Rare()
        setattr(rare, self.name, value)

    def __delete__(self, call: Any) -> None:
        if call._rare is None:
            raise AttributeError(self.name)
        delattr(call._rare, self.name)


class _Instant:
    """``start`` or ``end``: a timestamp's text held as :mod:`.instants` holds it (the float
    mas-lab wrote, where it gives the text back), read as the text."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, call: Any, owner: Any = None) -> str | None:
        return instants.text(getattr(call, self.slot))

    def __set__(self, call: Any, text: str | None) -> None:
        setattr(call, self.slot, instants.held(text))


class FoldedCall:
    """One call of the fold: one slot a member, a member absent as None (see the module)."""

    __slots__ = (*(f"_{n}" if n in ("start", "end") else n for n in _COMMON), "_rare")

    key: str
    id: str
    cls: str
    first: int
    startLine: int | None
    start = _Instant()
    agent: str | None
    parent: str | None
    target: str | None
    input: Digest | None
    endLine: int | None
    end = _Instant()
    status: str | None
    tokens: dict[str, int] | None
    output: Digest | None
    _rare: _Rare | None
    _start: str | float | None  # start and end as held (.instants)
    _end: str | float | None
    label: _RareMember[str | None] = _RareMember()
    temperature: _RareMember[float | None] = _RareMember()
    content: _RareMember[dict[str, Any] | None] = _RareMember()
    placed: _RareMember[str | None] = _RareMember()  # unset while absent: None is "under no call"
    candidates: _RareMember[list[str] | None] = _RareMember()
    hosted: _RareMember[int | None] = _RareMember()
    finish: _RareMember[str | None] = _RareMember()
    responseId: _RareMember[str | None] = _RareMember()
    ambiguous: _RareMember[list[str] | None] = _RareMember()
    # On the first call of an id only: by class, the key of the latest call started or
    # ended again under it (trace.call-conflict), which the id's next events of that class
    # pair with.
    again: _RareMember[dict[str, str] | None] = _RareMember()
    # The key of the call its parent id names, where that id was started again before this
    # call began (the id's latest call by then); else absent, and the build resolves the id.
    parentKey: _RareMember[str | None] = _RareMember()

    def __init__(self, key: str, call_id: str, cls: str, first: int) -> None:
        self.key, self.id, self.cls, self.first = key, call_id, cls, first
        # start and end held as None is what their descriptors would hold (set here without
        # them: a call is made for every start event of a run).
        self.startLine = self._start = self.agent = self.parent = self.target = None
        self.input = self.endLine = self._end = self.status = self.tokens = self.output = None
        self._rare = None

    @classmethod
    def of(cls, members: dict[str, Any]) -> FoldedCall:
        """A call from its JSON (a checkpoint's, of this version or one written before)."""
        call = cls(members["key"], members["id"], members["cls"], members["first"])
        for name, value in members.items():
            if name not in _MEMBERS:
                raise ValueError(f"a call of the fold has no member {name!r}")
            setattr(call, name, value)
        return call

    def disputed(self, name: str) -> bool:
        """Whether ``agent`` or ``target`` is None because the call's events disagree on it."""
        return self.ambiguous is not None and name in self.ambiguous

    def as_json(self) -> dict[str, Any]:
        """The call as a checkpoint writes it: its members present, in :data:`ORDER`."""
        return {name: getattr(self, name) for name in self}

    # --- the dict a call was, for the readers that are not the fold's own -------------------

    def __contains__(self, name: object) -> bool:
        if name == "placed":
            return getattr(self, "placed", _UNSET) is not _UNSET
        if not isinstance(name, str) or name not in _MEMBERS:
            return False
        if getattr(self, name) is not None:
            return True
        return name in _DISPUTED and self.disputed(name)

    def __iter__(self) -> Iterator[str]:
        order = ORDER if self.input is not None else _OUTPUT_FIRST
        return (name for name in order if name in self)

    def __getitem__(self, name: str) -> Any:
        if name not in self:
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name) if name in self else default

    def __setitem__(self, name: str, value: Any) -> None:
        if name not in _MEMBERS:
            raise KeyError(f"a call of the fold has no member {name!r}")
        if value is None and name != "placed":
            # None is absence here: a member written None would read as absent.
            raise ValueError(f"{name} cannot be written None (agent and target are made "
                             "ambiguous by the fold itself)")
        setattr(self, name, value)

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name in self:
            return getattr(self, name)
        self[name] = default
        return default

    def pop(self, name: str, *default: Any) -> Any:
        if name not in self:
            if default:
                return default[0]
            raise KeyError(name)
        value = getattr(self, name)
        del self[name]
        return value

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        if name in ("key", "id", "cls", "first"):
            raise KeyError(f"{name} is every call's member")
        if name == "placed":
            del self.placed
            return
        setattr(self, name, None)
        if name in _DISPUTED and self.ambiguous is not None and name in self.ambiguous:
            self.ambiguous.remove(name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FoldedCall):
            return NotImplemented
        return self.as_json() == other.as_json()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dict was

    def __repr__(self) -> str:
        return f"FoldedCall({self.as_json()!r})"
