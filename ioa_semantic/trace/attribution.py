"""Whose call each call of a run is: the one rule the audit, the knowledge graph and the
trajectory share, so that what the graph links is what the verdicts judged.

A call belongs, in this order, to the agent it names (mas-lab's ``agent_id``); to the agent
span above it; for OTLP, else to an agent span beside it or beside one of its callers whose
time interval encloses it (the nearest such level; agent spans of several agents there are
ambiguous and returned, never chosen between); else to the span's own
``gen_ai.agent.name``. Before all that, a call whose caller is ambiguous (a span given twice
with other contents, in either convention: ``parent`` among its ``ambiguous``) is nobody's:
neither the agent a copy names nor an agent span around it in time is evidence, since either
copy may be the true one. Agents are named as the manifests name them: a span whose
``gen_ai.agent.id`` one mas.yaml entry gives (its ``agent_id``) is that entry's agent.
"""

from __future__ import annotations

from bisect import bisect_right
from decimal import Decimal
from typing import NamedTuple

from .calls import Ancestry, Call, Run
from .declarations import Declarations


class Owner(NamedTuple):
    """A call's agent: its name, the agent span it acts in when one is singled out, and the
    agent spans of several agents that leave it ambiguous (then no name); ``searched`` is the
    number of levels looked at when the search stopped at :data:`LEVELS` without an answer."""

    agent: str | None
    span: Call | None = None
    around: tuple[Call, ...] = ()
    searched: int | None = None


# Levels with agent spans beside them looked at for one call, at most. Frameworks that write
# invoke_agent beside its calls nest a few levels; a trace can nest agent spans beside a chain
# of thousands of spans none of which encloses the call, and walking every level for every
# call would be quadratic. Past the bound the call is nobody's, and its reason says why.
LEVELS = 64


_NOBODY = Owner(None)


def identified(run: Run, declarations: Declarations) -> Run:
    """``run`` with its agents named as the manifests name them: by the gen_ai.agent.id a
    mas.yaml entry gives explicitly (an id two entries claim names neither), else as the
    trace names them."""
    manifests = declarations.manifests
    claimed: dict[str, set[str]] = {}
    for name, declaration in (manifests.agents if manifests else {}).items():
        for ident in declaration.ids:
            claimed.setdefault(ident, set()).add(name)
    ids = {ident: next(iter(names)) for ident, names in claimed.items() if len(names) == 1}
    if not ids:
        return run
    return run._replace(calls=tuple(_identified(c, ids) for c in run.calls),
                        definitions=_renamed(run, ids))


def _renamed(run: Run, ids: dict[str, str]) -> dict[str, dict[str, str]]:
    """The trace's tool definitions under the manifests' names: those its spans list for an
    agent whose spans' ids all name one mas.yaml entry are that entry's."""
    named: dict[str, set[str]] = {}
    for call in run.calls:
        # A span without an id, or with one no entry gives, keeps the trace's name: its
        # agent's definitions are then not one entry's alone.
        if call.cls == "agent" and not call.remote and call.target:
            named.setdefault(call.target, set()).add(
                ids.get(call.agent_id, call.target) if call.agent_id else call.target)
    out: dict[str, dict[str, str]] = {}
    for agent, tools in run.definitions.items():
        names = named.get(agent, {agent})
        listed = out.setdefault(next(iter(names)) if len(names) == 1 else agent, {})
        for tool, span in tools.items():
            listed.setdefault(tool, span)
    return {agent: dict(sorted(tools.items())) for agent, tools in sorted(out.items())}


def _identified(call: Call, ids: dict[str, str]) -> Call:
    if call.agent_id is None:
        return call
    named = ids.get(call.agent_id)
    if named is None:
        return call
    if call.cls in ("agent", "declaration") and not call.remote:
        return call._replace(target=named, agent=named if call.agent else None)
    return call._replace(own_agent=named)


class _Beside:
    """The agent spans of one level (one parent), to ask which agents enclose an interval in
    logarithmic time: sorted by start, each prefix keeps the latest end of its agent that ends
    last (with that span) and of the latest-ending other agent, which is all that
    one-or-several needs."""

    _LISTED = 6  # agent spans named in an ambiguity, at most
    _SCANNED = 1024  # spans looked at to name them

    def __init__(self, agents: list[Call]) -> None:
        timed = sorted(((Decimal(a.start), Decimal(a.end), a) for a in agents
                        if a.start is not None and a.end is not None and a.target),
                       key=lambda item: item[0])
        self.timed = timed
        self.starts = [start for start, _, _ in timed]
        # Per prefix: the latest end and its span, and the latest end of another agent and
        # its span (that span names the ambiguity however far back it started).
        self.tops: list[tuple[Decimal, Call, Decimal | None, Call | None]] = []
        top: tuple[Decimal, Call, Decimal | None, Call | None] | None = None
        for _, end, agent in timed:
            if top is None:
                top = (end, agent, None, None)
            elif agent.target == top[1].target:
                top = (end, agent, top[2], top[3]) if end > top[0] else top
            elif end > top[0]:
                top = (end, agent, top[0], top[1])
            elif top[2] is None or end > top[2]:
                top = (top[0], top[1], end, agent)
            self.tops.append(top)

    def enclosing(self, start: Decimal, end: Decimal) -> Owner:
        """The one agent whose spans here enclose [start, end] (with the one of its spans
        that ends last); or, when spans of several do, some of those spans (never a choice
        between them), always two of different agents."""
        k = bisect_right(self.starts, start)
        if k == 0:
            return _NOBODY
        first_end, first, second_end, second = self.tops[k - 1]
        if first_end < end:
            return _NOBODY
        if second_end is None or second_end < end:
            return Owner(first.target, first)
        assert second is not None
        named: list[Call] = [first, second]
        for _, until, agent in reversed(self.timed[max(0, k - self._SCANNED):k]):
            if len(named) == self._LISTED:
                break
            if until >= end and agent is not first and agent is not second:
                named.append(agent)
        return Owner(None, None, tuple(named))

    def within_own(self, call: Call) -> bool:
        """Whether another span of ``call``'s agent here encloses the agent span ``call``
        (of identical intervals, the one listed first encloses the others), and no span of
        another agent does."""
        start, end = Decimal(call.start or 0), Decimal(call.end or 0)
        k = bisect_right(self.starts, start)
        if k == 0:
            return False
        first_end, first, second_end, _ = self.tops[k - 1]
        return (first is not call and first.target == call.target and first_end >= end
                and (second_end is None or second_end < end))


class Attribution:
    """The owners of the calls of one run (already :func:`identified`), each asked once."""

    def __init__(self, run: Run, calls: dict[str, Call] | None = None,
                 ancestry: Ancestry | None = None) -> None:
        self.run = run
        self.calls = calls if calls is not None else run.by_key()
        self.ancestry = ancestry if ancestry is not None else Ancestry(self.calls)
        # OTLP agent spans by their place among their siblings: (parent key, parent id).
        self.beside: dict[tuple[str | None, str | None], list[Call]] = {}
        if run.unit == "spans":
            for call in run.calls:
                if call.cls == "agent" and not call.remote and call.target:
                    self.beside.setdefault((call.parent, call.parent_id), []).append(call)
        self._owners: dict[str, Owner] = {}
        self._levels: dict[tuple[str | None, str | None], _Beside] = {}
        self._level_memo: dict[str, Call | None] = {}
        self.lookups = 0  # levels asked, by every call: the tests hold it bounded

    def agent(self, call: Call) -> str | None:
        return self.owner(call).agent

    def owner(self, call: Call) -> Owner:
        """Whose call ``call`` is, by the rule of this module's docstring."""
        if "parent" in call.ambiguous:
            return _NOBODY  # a span given twice with other contents: either copy may be true
        if call.agent:
            span = self.ancestry.nearest(call, ("agent",))
            return Owner(call.agent, span if span is not None and span.target == call.agent
                         else None)
        span = self.ancestry.nearest(call, ("agent",))
        if span is not None:
            return Owner(span.target, span)
        if self.run.unit != "spans":
            return _NOBODY
        known = self._owners.get(call.key)
        if known is None:
            known = self._enclosing(call)
            if known == _NOBODY and call.own_agent:
                known = Owner(call.own_agent)
            self._owners[call.key] = known
        return known

    def folded(self, call: Call) -> bool:
        """Whether the agent span ``call`` is its agent going on inside a span of its own
        beside it (a framework's graph inside the agent, written as a sibling): the one
        agent, as when it is nested beneath, never a second call into it."""
        if (self.run.unit != "spans" or call.cls != "agent" or call.remote or not call.target
                or call.start is None or call.end is None):
            return False
        level = (call.parent, call.parent_id)
        if level not in self.beside:
            return False
        return self._level(level).within_own(call)

    def _level(self, level: tuple[str | None, str | None]) -> _Beside:
        held = self._levels.get(level)
        if held is None:
            held = self._levels[level] = _Beside(self.beside[level])
        return held

    def _enclosing(self, call: Call) -> Owner:
        if call.start is None or call.end is None or not self.beside:
            return _NOBODY
        start, end = Decimal(call.start), Decimal(call.end)
        current = self._level_of(call)
        seen: set[str] = set()
        while current is not None and current.key not in seen:
            if len(seen) == LEVELS:
                return Owner(None, searched=LEVELS)
            seen.add(current.key)
            self.lookups += 1
            found = self._level((current.parent, current.parent_id)).enclosing(start, end)
            if found != _NOBODY:
                return found
            parent = self.calls.get(current.parent) if current.parent else None
            current = self._level_of(parent) if parent is not None else None
        return _NOBODY

    def _level_of(self, call: Call) -> Call | None:
        """The nearest call from ``call`` up (itself included) with agent spans beside it,
        each chain walked once (a loop answers none)."""
        passed: dict[str, None] = {}
        current: Call | None = call
        found: Call | None = None
        while current is not None:
            if current.key in self._level_memo:
                found = self._level_memo[current.key]
                break
            if current.key in passed:
                break
            passed[current.key] = None
            if (current.parent, current.parent_id) in self.beside:
                found = current
                break
            current = self.calls.get(current.parent) if current.parent else None
        for key in passed:
            self._level_memo[key] = found
        return found
