"""A call of a mas-lab run as the fold holds it while the run is read: slots, not a dict.

A long run's fold holds every call until the run is built (issue 37). As a dict of its 13-15
members a call weighed about 1.1 KB, 460-570 bytes of it the dict and its key table; as an
object of one slot a member, the object is 224 bytes however many members it holds.

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
from typing import Any

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


class FoldedCall:
    """One call of the fold: one slot a member, a member absent as None (see the module)."""

    __slots__ = ORDER

    key: str
    id: str
    cls: str
    first: int
    startLine: int | None
    start: str | None
    agent: str | None
    parent: str | None
    target: str | None
    label: str | None
    temperature: float | None
    input: Digest | None
    content: dict[str, Any] | None
    placed: str | None  # unset while absent: None is "under no call"
    candidates: list[str] | None
    hosted: int | None
    endLine: int | None
    end: str | None
    status: str | None
    tokens: dict[str, int] | None
    finish: str | None
    responseId: str | None
    output: Digest | None
    ambiguous: list[str] | None
    # On the first call of an id only: by class, the key of the latest call started or
    # ended again under it (trace.call-conflict), which the id's next events of that class
    # pair with.
    again: dict[str, str] | None
    # The key of the call its parent id names, where that id was started again before this
    # call began (the id's latest call by then); else absent, and the build resolves the id.
    parentKey: str | None

    def __init__(self, key: str, call_id: str, cls: str, first: int) -> None:
        self.key, self.id, self.cls, self.first = key, call_id, cls, first
        self.startLine = self.start = self.agent = self.parent = self.target = None
        self.label = self.temperature = self.input = self.content = None
        self.candidates = self.hosted = self.endLine = self.end = self.status = None
        self.tokens = self.finish = self.responseId = self.output = self.ambiguous = None
        self.again = self.parentKey = None

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
