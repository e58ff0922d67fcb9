"""The nested interval tree of a mas-lab run, read from the order of its events.

mas-lab's trajectory schema documents events that carry only ``kind``, ``agent_id``,
``timestamp``, ``run_id`` and the kind's own fields: no call id and no parent. What nests in
what is the order of the events, which are "emitted in chronological order" and "form a
nested interval tree" (the schema's *Multi-level trajectory view*): an agent's LLM, tool and
processing calls lie inside its open ``execution_*`` interval, and a sub-agent's
``execution_start`` lies inside its caller's open ``tool_call_start(delegate_to_<agent>)``.

:class:`Tree` keeps the calls open at each point of the stream, in the order they started,
and places every call whose start names no parent (``parent_call_id``) in it:

* an LLM, tool or processing call under its agent's innermost open execution;
* an execution of agent ``A`` under the innermost open call when that is a tool call that may
  start ``A``: ``delegate_to_A``, or a tool that names no agent (a ``delegate_to_`` tool names
  its own); with no agent's call open, under the MAS (its open MAS call, if any). Anything
  else is no tree and cannot be nested unambiguously: the call keeps the calls that may have
  made it (``candidates``: the open ``delegate_to_A`` tool calls, else the open tool calls
  naming no agent, else the executions of the busy agents, none of which delegated to it)
  and no parent.

It also watches whether the stream keeps to the tree, and records where it does not: an event
of one agent while another agent's call is the innermost open one, an end that closes a call
with another agent's call still open inside it (a *crossing*; whether the crossed call ends
later, so that the two interleave, or never, so that the stream was cut, is told when the
run is built). Where two agents' events interleave, the order of their events is no evidence
of who called whom, and the run's build leaves every placement resting on it unused.

What the tree keeps of the stream is plain JSON (``state``/``load``), so that ``--state`` can
checkpoint it; the placements it writes are the calls' own members.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any, NamedTuple

from .._codes import finding
from .._findings import Finding, Severity
from .folded import FoldedCall
from .privacy import DELEGATION_PREFIX, Disclosure

_KINDS = {"agent": "execution", "llm": "llm_call", "tool": "tool_call",
          "processing": "processing_call", "mas": "mas_call"}


# Where an event is, as a reason words it and as its path: the fed position of an event is
# its line in an events file, but a span's pair of events is fed in time order, and its place
# is the span's line and JSON Pointer in its input.
Place = Callable[[int], tuple[str, str]]


def by_line(seq: int) -> tuple[str, str]:
    """An event of an events file: its line, and the 0-based JSON Pointer of the line."""
    return f"line {seq}", f"/{seq - 1}"


def kind_name(call: FoldedCall, phase: str) -> str:
    """The event kind that started or ended ``call``, as the trace spells it."""
    return f"{_KINDS[call.cls]}_{phase}"


def named_agent(tool: str | None) -> str | None:
    """The agent a delegation tool names (``delegate_to_<agent>``), else None."""
    if tool and tool.startswith(DELEGATION_PREFIX) and len(tool) > len(DELEGATION_PREFIX):
        return tool[len(DELEGATION_PREFIX):]
    return None


class Tree:
    """The open calls of one stream, in the order they started, and where they nest.

    ``calls`` is the fold's own table of calls (placements are written into its entries);
    ``touched`` the fold's set of calls changed since its last checkpoint.
    """

    def __init__(self, calls: dict[str, FoldedCall], touched: set[str]) -> None:
        self.calls = calls
        self.touched = touched
        self.open: dict[str, None] = {}  # every open call, in the order they started
        # json [agent, agent] -> [first line, lines, key of the call started there, key of
        # the innermost open call then]: starts made while another agent's call was the
        # innermost open one.
        self.tangles: dict[str, list[Any]] = {}
        # [line, key of the call ended, key of a call still open inside it]
        self.crossings: list[list[Any]] = []
        self.changed = False
        self._new_crossings = 0
        # Indexes of ``open``, rebuilt from it on load. Each call is indexed under the agent
        # and name it had when it opened (an agent or a name may later turn out ambiguous).
        self._indexed: dict[str, tuple[str, str, str | None]] = {}
        self._executions: dict[str, list[str]] = {}  # agent -> its open executions
        self._delegations: dict[str, list[str]] = {}  # delegate_to_X -> open tool calls
        self._plain_tools: dict[str, None] = {}  # open tool calls naming no agent
        self._mas: list[str] = []
        self._busy: dict[str, int] = {}  # agent -> its open calls

    # --- the stream -----------------------------------------------------------------------

    def opened(self, call: FoldedCall, seq: int, by_order: bool) -> None:
        """``call`` started at line ``seq``; ``by_order``: its start names no parent."""
        if by_order and call.cls == "agent":
            self._place_execution(call, seq)
        elif by_order and call.cls != "mas":
            self._place_capability(call, seq)
        if call.endLine is None:  # a call with an id may have ended before it started
            self._push(call)

    def closed(self, call: FoldedCall, seq: int, started: bool) -> None:
        """``call`` ended at line ``seq``; ``started``: its start was seen."""
        key = call.key
        if not started:
            self._place_unstarted(call)
            return
        if key not in self.open:
            return  # already closed by the end of a call it was open inside
        above = self._above(key)
        for crossed in above:
            # Only where the order of events is what nests a call does a crossing matter:
            # calls that name their parents may interleave as they please.
            if "placed" in call or "placed" in self.calls[crossed]:
                self.crossings.append([seq, key, crossed])
        for each in [key, *above]:
            self._pop(each)

    # --- placing calls ----------------------------------------------------------------------

    def _place_capability(self, call: FoldedCall, seq: int) -> None:
        agent = call.agent
        call.placed = self._innermost_execution(agent)
        top = self._top()
        if top is not None and self._indexed[top][1] != "mas":
            owner = self._indexed[top][0]
            if owner != (agent or ""):
                self._tangle(seq, call.key, agent or "", top, owner)

    def _place_execution(self, call: FoldedCall, seq: int) -> None:
        callee = call.target or ""
        parent, candidates = self._callers(callee)
        call.placed = parent
        if candidates is not None:
            call.candidates = candidates
        self._host(parent, candidates)
        top = self._top()
        if top is not None and not self._may_enclose(top, callee):
            self._tangle(seq, call.key, callee, top, self._indexed[top][0])

    def _callers(self, callee: str) -> tuple[str | None, list[str] | None]:
        """Where an execution of ``callee`` starting now nests: the call that made it (None:
        the MAS, with no MAS call open), or None and the calls that may have made it.

        The innermost open call made it when it is a tool call that may start ``callee``
        (``delegate_to_<callee>``, or a tool naming no agent), as the tree is drawn; with
        nothing open but MAS calls, the MAS did. Anything else is no tree: the candidates
        are the open ``delegate_to_<callee>`` tool calls, else the open tool calls naming no
        agent, else the innermost executions of the agents that are busy (nobody delegated
        to it)."""
        top = self._top()
        if top is not None and self._indexed[top][1] == "tool" and self._may_enclose(
                top, callee):
            return top, None
        if not self._busy:
            return (self._mas[-1] if self._mas else None), None
        named = self._delegations.get(DELEGATION_PREFIX + callee, []) if callee else []
        if named:
            return None, list(named)
        if self._plain_tools:
            return None, list(self._plain_tools)
        return None, [self._executions[agent][-1] for agent in self._busy
                      if agent != callee and self._executions.get(agent)]

    def _host(self, parent: str | None, candidates: list[str] | None) -> None:
        """Count an execution inside the tool call that made it (or may have)."""
        for host in [parent] if parent is not None else candidates or ():
            call = self.calls[host]
            if call.cls == "tool":
                call.hosted = (call.hosted or 0) + 1
                self.touched.add(host)

    def _place_unstarted(self, call: FoldedCall) -> None:
        """An end with no start. A capability call is still its agent's, inside its open
        execution. An agent call started somewhere inside what is open around its end, but
        where is not known: whatever would have made it then is only a candidate."""
        if call.parent is not None or call.cls == "mas":
            return
        if call.cls != "agent":
            call.placed = self._innermost_execution(call.agent)
            return
        parent, candidates = self._callers(call.target or "")
        if parent is not None and self.calls[parent].cls == "mas":
            parent = None
        call.candidates = [parent] if parent is not None else candidates or []
        self._host(None, call.candidates)

    def _may_enclose(self, top: str, callee: str) -> bool:
        """Whether the innermost open call is one an execution of ``callee`` may start in."""
        _, cls, name = self._indexed[top]
        if cls == "mas":
            return True
        return cls == "tool" and named_agent(name) in (None, callee)

    def _innermost_execution(self, agent: str | None) -> str | None:
        executions = self._executions.get(agent or "")
        return executions[-1] if executions else None

    def _tangle(self, seq: int, started: str, agent: str, top: str, owner: str) -> None:
        """A start at line ``seq`` (of call ``started``, by ``agent``) while ``top``, a call
        of ``owner``, was the innermost open call: the first such line of each pair of
        agents is kept, and how many there were."""
        key = json.dumps(sorted([agent, owner]))
        seen = self.tangles.get(key)
        if seen is None:
            self.tangles[key] = [seq, 1, started, top]
        else:
            seen[1] += 1
        self.changed = True

    # --- the open calls -----------------------------------------------------------------------

    def _top(self) -> str | None:
        return next(reversed(self.open)) if self.open else None

    def _above(self, key: str) -> list[str]:
        """The open calls that started after ``key``, innermost last."""
        out: list[str] = []
        for each in reversed(self.open):
            if each == key:
                break
            out.append(each)
        out.reverse()
        return out

    def _push(self, call: FoldedCall) -> None:
        key, agent, cls = call.key, call.agent or "", call.cls
        name = call.target if cls == "tool" else None
        self.open[key] = None
        self._indexed[key] = (agent, cls, name)
        self.changed = True
        if cls == "mas":
            self._mas.append(key)
            return
        self._busy[agent] = self._busy.get(agent, 0) + 1
        if cls == "agent":
            self._executions.setdefault(agent, []).append(key)
        elif cls == "tool" and named_agent(name) is not None:
            self._delegations.setdefault(name or "", []).append(key)
        elif cls == "tool":
            self._plain_tools[key] = None

    def _pop(self, key: str) -> None:
        agent, cls, name = self._indexed.pop(key)
        del self.open[key]
        self.changed = True
        if cls == "mas":
            self._mas.remove(key)
            return
        self._busy[agent] -= 1
        if not self._busy[agent]:
            del self._busy[agent]
        if cls == "agent":
            _drop(self._executions, agent, key)
        elif cls == "tool" and named_agent(name) is not None:
            _drop(self._delegations, name or "", key)
        elif cls == "tool":
            del self._plain_tools[key]

    # --- checkpoints --------------------------------------------------------------------------

    def state(self) -> dict[str, Any] | None:
        """What changed since the last state (None: nothing): the open calls and the tangles
        as they are now, the crossings found since."""
        if not self.changed and self._new_crossings == len(self.crossings):
            return None
        out = {"open": list(self.open), "tangles": self.tangles,
               "crossings": self.crossings[self._new_crossings:]}
        self.changed = False
        self._new_crossings = len(self.crossings)
        return out

    def load(self, state: dict[str, Any]) -> None:
        """A state written by :meth:`state`, over the fold's calls already restored."""
        for key in list(self.open):
            self._pop(key)
        for key in state["open"]:
            self._push(self.calls[key])
        self.tangles = {k: list(v) for k, v in state["tangles"].items()}
        self.crossings.extend(state["crossings"])
        self.changed = False
        self._new_crossings = len(self.crossings)

    def names_known(self) -> bool:
        """Whether every call the tangles and crossings name is one of the fold's (a state
        restored from checkpoints edited or damaged may name others)."""
        named = [key for _, _, started, top in self.tangles.values() for key in (started, top)]
        named += [key for _, ended, crossed in self.crossings for key in (ended, crossed)]
        return all(key in self.calls for key in named)


def _drop(index: dict[str, list[str]], name: str, key: str) -> None:
    keys = index[name]
    keys.remove(key)
    if not keys:
        del index[name]


# --- the run's build ----------------------------------------------------------------------------


class Settled(NamedTuple):
    """What the order of events leaves unknown, once the whole stream is read."""

    candidates: dict[str, tuple[str, ...]]  # agent call -> the calls that may have made it
    findings: tuple[Finding, ...]


def in_order(calls: Iterable[FoldedCall]) -> list[FoldedCall]:
    """``calls`` in the order of their first lines, then of their keys: sorted twice, stably,
    by one key each, so that no pair of them is made for each call (the sort of a long run's
    calls by pairs held 60 to 70 bytes a call more, at its peak)."""
    ordered = sorted(calls, key=attrgetter("key"))
    ordered.sort(key=attrgetter("first"))
    return ordered


def settle(calls: dict[str, FoldedCall], tree: Tree, disclose: Disclosure,
           place: Place = by_line) -> Settled:
    """The agent calls whose caller the order of events does not establish, and why.

    An agent call is unsettled when its placement found several candidates (or busy agents
    and no tool call), when its start is missing and no event names its parent, or when its
    placement rests on the order of events of an agent whose events interleave with another
    agent's (each pair of such agents is one ``trace.nesting-interleaved`` reason).
    """
    words = _Words(calls, disclose, place)
    tangles = _tangles(calls, tree, words)
    tangled = {agent for pair in tangles for agent in pair if agent}
    findings = [finding("trace.nesting-interleaved", f"{place(seq)[0]}: the events of "
                        f"{words.agents(pair)} do not nest ({count} line"
                        f"{'s' if count > 1 else ''}; the first: {what}); the order of their "
                        "events is not used to tell who called whom", place(seq)[1],
                        severity=Severity.WARNING)
                for pair, (seq, count, what) in sorted(tangles.items(), key=lambda t: t[1][0])]
    candidates: dict[str, tuple[str, ...]] = {}
    for call in in_order(calls.values()):
        if call.cls != "agent" or call.parent:
            continue
        found = _unsettled(call, calls, tangled, words)
        if found is None:
            continue
        candidates[call.key], why = found
        # An agent call has its start's line or its end's: it was made by one of them.
        seq, phase = (call.startLine, "start") if call.startLine else (
            call.endLine or 0, "end")
        findings.append(finding(
            "trace.nesting-ambiguous", f"{place(seq)[0]}: execution_{phase} of "
            f"{words.agent(call.target)}: {why}; who called it is not used",
            place(seq)[1], severity=Severity.WARNING))
    return Settled(candidates, tuple(findings))


def _unsettled(call: FoldedCall, calls: dict[str, FoldedCall], tangled: set[str],
               words: _Words) -> tuple[tuple[str, ...], str] | None:
    """The candidates of an agent call whose caller is not established, and why; or None."""
    if call.startLine is None:
        found = tuple(call.candidates or ())
        around = ""
        if found:
            around = (f", and {words.calls(found)} {'was' if len(found) == 1 else 'were'} open "
                      "around its end")
        return found, f"its execution_start is missing{around}"
    if call.candidates is not None:
        found = tuple(call.candidates)
        if found and all(calls[k].cls == "tool" for k in found):
            return found, (f"{words.calls(found)} {'was' if len(found) == 1 else 'were'} open "
                           "but not the innermost open call, which could not have made it")
        busy = f" ({words.calls(found)})" if found else ""
        return found, (f"calls were open{busy} and none is a tool call that could have made "
                       "it: no open call delegated to it")
    if "placed" not in call:
        return None
    placed = call["placed"]
    host = calls[placed] if placed is not None else None
    by_agent = host is not None and host.cls in ("tool", "agent")
    caller = host.agent if by_agent and host is not None else None
    touched = sorted({a for a in (call.target, caller) if a and a in tangled})
    if not touched:
        return None
    made = words.calls((placed,)) if by_agent and placed is not None else "the MAS"
    return ((placed,) if by_agent and placed is not None else ()), (
        f"the order of events places it under {made}, but the events of {words.agents(touched)} "
        "do not nest with another agent's (trace.nesting-interleaved)")


def _tangles(calls: dict[str, FoldedCall], tree: Tree,
             words: _Words) -> dict[tuple[str, ...], tuple[int, int, str]]:
    """Each pair of agents whose events break the tree: its first line, how many lines, and
    what happened there."""
    out: dict[tuple[str, ...], list[Any]] = {}

    def seen(agents: list[str], seq: int, what: str, count: int = 1) -> None:
        pair = tuple(sorted(set(agents)))
        known = out.get(pair)
        if known is None:
            out[pair] = [seq, count, what]
        else:
            known[1] += count
            if seq < known[0]:
                known[0], known[2] = seq, what

    for key, (seq, count, started, top) in tree.tangles.items():
        call = calls[started]
        seen(json.loads(key), seq, f"{kind_name(call, 'start')} of "
             f"{words.agent(call.agent)} while {words.call(top)} was the innermost open "
             "call", count)
    for seq, ended, crossed in tree.crossings:
        if calls[crossed].endLine is None:
            continue  # never ended: a stream cut short, which trace.call-incomplete reports
        call = calls[ended]
        seen([call.agent or "", calls[crossed].agent or ""], seq,
             f"{kind_name(call, 'end')} of {words.agent(call.agent)} while "
             f"{words.call(crossed)}, which started inside it, was still open")
    for call in calls.values():
        callee = named_agent(call.target) if call.cls == "tool" else None
        if (callee is None or call.id or "placed" not in call or call.hosted
                or call.endLine is None):
            continue
        seq = call.endLine
        seen([call.agent or "", callee], seq,
             f"{words.call(call.key)} ended, and no execution of "
             f"{words.agent(callee)} started inside it")
    return {pair: (seq, count, what) for pair, (seq, count, what) in out.items()}


class _Words:
    """Agents and calls as a reason names them, through the run's disclosure."""

    def __init__(self, calls: dict[str, FoldedCall], disclose: Disclosure,
                 place: Place = by_line) -> None:
        self.by_key = calls
        self.disclose = disclose
        self.place = place

    def agent(self, agent: str | None) -> str:
        return f"agent {self.disclose.agent(agent)}" if agent else "an unnamed agent"

    def agents(self, agents: Any) -> str:
        named = [self.disclose.agent(a) for a in agents if a]
        if not named:
            return "unnamed agents"
        if len(named) == 1:
            return f"agent {named[0]}"
        return f"agents {', '.join(named[:-1])} and {named[-1]}"

    def call(self, key: str) -> str:
        call = self.by_key[key]
        what = {"agent": "the execution", "llm": "the LLM call", "tool": "the tool call",
                "processing": "the processing call", "mas": "the MAS call"}[call.cls]
        if call.cls == "tool" and call.target:
            what += f" {self.disclose.tool(call.target)}"
        if call.cls != "mas":
            what += f" of {self.agent(call.agent)}"
        return f"{what} ({self.place(call.first)[0]})"

    def calls(self, keys: tuple[str, ...]) -> str:
        listed = [self.call(k) for k in keys[:5]]
        more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
        return ", ".join(listed) + more
