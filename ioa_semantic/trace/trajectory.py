"""The trajectory view of a run: oxp ``State`` and ``Transition`` nodes, and how data flowed.

The oxp-ontology's normalized trajectory (seeds/oxp-mas-ontology.txt) is a chain of States
("data state at a point in execution (prompt/input/output)") and Transitions ("a processing
step between states"), each Transition ``mas:representsExecution`` of one execution element.
Built on request (``ioa-check trace --trajectory``), for each call and for the session:

* a Transition that represents the call (the call ``mas:correspondsToTransition`` it);
* an initial State, the call's input, ``mas:inputTo`` the Transition, and a final State, its
  output, that the Transition ``mas:leadsTo``; the call ``mas:hasInitialState``,
  ``hasFinalState`` and ``hasState`` both (no inference runs, so the super-property is
  written too);
* ``mas:sessionId`` on every State and Transition, as the ontology asks.

A State holds what the fold keeps of its side, never more: the digest and the character
count (``ioat:contentSha256``, ``ioat:contentChars``), and as ``mas:content`` (which the
shapes require) the text only when content was asked for, else :data:`WITHHELD` naming the
digest, or :data:`NOT_RECORDED` when the trace records nothing of that side. The marker can
be told from text by its digest: a State's text hashes to its ``ioat:contentSha256``, the
marker does not.

Data flow between calls is more ``mas:inputTo`` links, from what the fold gives (parents,
start instants, classes), with calls in the order they started (:func:`_order`):

* **in an agent's execution** (the calls whose parent is an agent call, and those beside an
  agent span that the audit attributes to it, attribution.py), taken in order:
  the agent's input flows to its first call; a model call's output flows to every other
  call up to the agent's next model call (the tool calls it led to, a sub-agent it called,
  a processing step) and to that next model call (mas-lab's context assembly puts the
  model's previous turn into the next context); the output of every tool, sub-agent or
  processing call flows to the agent's next model call (the schema: "each tool_call_end at
  level N provides the facts available to level N-1's next context_assembled event"); what
  no later model call takes (the last call's output, results after the last model call)
  flows to the agent's own Transition, whose final State is the agent's output;
* **inside any other call** (a sub-agent under its delegation tool call, a processing step
  under a model call, an entry agent under the MAS call): the enclosing call's input flows
  to each call inside it, and each one's output to the enclosing call's Transition, so a
  sub-agent's final State (its ``execution_end`` output) is input to the delegation tool
  call it answered; no order between them is claimed;
* **a call without a recorded start** has no place in any order: its output flows to its
  enclosing call's Transition only, and nothing flows to it by order;
* **the session** shares its initial State with the top-level call that starts first, and
  its final State with the top-level call that ends last (``mas:SessionInitialStateShared``
  and ``SessionFinalStateShared`` in mas-shapes-custom.ttl); the outputs of the other
  top-level calls flow to the session's Transition. The session's final State feeds no
  Transition: nothing in a run comes after it (the one rule of the shapes a run-built
  trajectory cannot meet, :data:`SESSION_END_PATH`).

Each call names the agent it acted for in the graph itself (``ioat:agent``, graph.py), so
that what flowed can be joined with the verdicts' per-agent uses.

Every call is visited a fixed number of times (its nodes, its place among its siblings, its
own children), and the calls of each parent are sorted once: building the view is linear in
the calls, apart from that sort.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import NamedTuple

from .attribution import Attribution
from .calls import Call, Run
from .privacy import Disclosure, content_text, iri_part

# mas:content of a State whose side the trace records, when the text is withheld, and of one
# whose side it does not record. The shapes require a content on every State.
WITHHELD = "withheld: sha256 {sha256}, {chars} characters"
NOT_RECORDED = "not recorded"

# The rule of the shapes that no run-built trajectory meets: a session's final State is
# ``mas:inputTo`` nothing, since nothing in the run comes after it.
SESSION_END_PATH = "inputTo"

_CLASS = {"mas": "MASCall", "agent": "AgentCall", "llm": "LLMCall", "tool": "ToolCall",
          "processing": "ProcessingCall"}


class Sink(NamedTuple):
    """How the graph builder writes: a literal, a link, a type (``mas:`` terms, or ``ioat:``
    ones spelled with that prefix)."""

    add: Callable[..., None]  # (subject, prop, value, datatype=None)
    link: Callable[[str, str, str], None]
    type: Callable[[str, str], None]


class _Ends(NamedTuple):
    transition: str
    initial: str
    final: str


def _order(unit: str) -> Callable[[Call], tuple[int, Decimal, int, str]]:
    """Calls in the order they started, a call without a start after every other.

    An events file is in the order its events were emitted (the mas-lab schema: "Events are
    emitted in chronological order"), so its calls are taken by line: a clock of whole
    seconds gives many calls one instant, and keys (``~10`` before ``~9``) or a skewed
    timestamp would reverse what flowed into what. Spans come in any order: by their start
    instant, ties by line, then key.
    """
    def by_line(call: Call) -> tuple[int, Decimal, int, str]:
        return (call.start is None, Decimal(0), call.first_line, call.key)

    def by_start(call: Call) -> tuple[int, Decimal, int, str]:
        if call.start is None:
            return (1, Decimal(0), call.first_line, call.key)
        return (0, Decimal(call.start), call.first_line, call.key)

    return by_line if unit == "events" else by_start


class Trajectory:
    """The trajectory of one run, written through ``sink``."""

    def __init__(self, sink: Sink, disclose: Disclosure, run: Run, session: str,
                 session_id: str, attribution: Attribution) -> None:
        self.sink = sink
        self.attribution = attribution
        self.disclose = disclose
        self.run = run
        self.session = session
        self.session_id = session_id
        self.visits = 0  # calls visited, by every loop: the tests hold it linear
        self._ends: dict[str, _Ends] = {}

    def build(self) -> None:
        for _ in self.steps():
            pass

    def steps(self) -> Iterator[None]:
        """:meth:`build`, a step at a time (a call each): a large run's trajectory is taken
        from the sink as it is made (graph.quad_chunks), never whole in memory."""
        calls = self.attribution.calls
        inside: dict[str | None, list[Call]] = {}
        for call in self.run.calls:
            self.visits += 1
            self._ends[call.key] = self._call(call)
            inside.setdefault(self._place(call, calls), []).append(call)
            yield
        order = _order(self.run.unit)
        for parent, members in inside.items():
            members.sort(key=order)
            if parent is None:
                continue
            owner = calls[parent]
            if owner.cls == "agent":
                yield from self._execution(self._ends[parent], members)
            else:
                yield from self._enclosed(self._ends[parent], members)
        # Calls whose parents loop have no top-level call above them; then the session's
        # boundary is read among all calls.
        top = inside.get(None) or sorted(self.run.calls, key=order)
        self._session(top)

    # --- nodes ---------------------------------------------------------------------------

    def _place(self, call: Call, calls: dict[str, Call]) -> str | None:
        """The call whose execution ``call`` is part of: its parent, or, for a call beside an
        agent span that the audit attributes it to (a framework that writes invoke_agent as
        a sibling of its chat and execute_tool spans), that agent span."""
        parent = call.parent if call.parent in calls and call.parent != call.key else None
        if call.cls == "agent" or (call.parent, call.parent_id) not in self.attribution.beside:
            return parent
        if parent is not None and calls[parent].cls == "agent":
            return parent
        span = self.attribution.owner(call).span
        if span is None or span.key == call.key or self.attribution.ancestry.nearest(
                call, ("agent",)) is not None:
            return parent
        return span.key

    def _call(self, call: Call) -> _Ends:
        iri = self.disclose.call_iri(self.run.ident, call.ref)
        ref = self.disclose.call(call.ref)
        # Named as the reports name it (the id as given); its nodes by its key, one call's.
        what = f"{_CLASS[call.cls]} {self.disclose.call_name(call.id, call.key)}"
        # The call's reference last: serializers split an IRI at its last ":" into a
        # namespace and a name, and one namespace a call would make rdflib's Turtle writer
        # quadratic in the calls.
        run, named = self.session, iri_part(ref)
        ends = _Ends(f"{run}:transition:{named}", f"{run}:input:{named}",
                     f"{run}:output:{named}")
        self._transition(ends.transition, f"{ref}:transition", what, iri)
        for state, side in ((ends.initial, "input"), (ends.final, "output")):
            self._state(state, f"{ref}:{side}", f"{side} of {what}", call, side)
        self._claim(iri, ends)
        return ends

    def _transition(self, iri: str, ident: str, what: str, execution: str) -> None:
        sink = self.sink
        sink.type(iri, "Transition")
        sink.add(iri, "id", ident)
        sink.add(iri, "name", f"step of {what}")
        sink.add(iri, "sessionId", self.session_id)
        sink.link(iri, "representsExecution", execution)
        sink.link(execution, "correspondsToTransition", iri)

    def _state(self, iri: str, ident: str, name: str, call: Call, side: str) -> None:
        sink = self.sink
        sink.type(iri, "State")
        sink.add(iri, "id", ident)
        sink.add(iri, "name", name)
        sink.add(iri, "sessionId", self.session_id)
        digest = getattr(call, side)
        if digest is None:
            sink.add(iri, "content", NOT_RECORDED)
            return
        sink.add(iri, "ioat:contentSha256", digest.sha256)
        sink.add(iri, "ioat:contentChars", digest.chars)
        content = call.content or {}
        if self.disclose.include_content and side in content:
            # The text its digest was made of: it hashes to the State's ioat:contentSha256.
            sink.add(iri, "content", content_text(content[side]))
        else:
            sink.add(iri, "content", WITHHELD.format(**digest.as_json()))

    def _claim(self, execution: str, ends: _Ends) -> None:
        """An execution element's States, and the Transition's own endpoints."""
        sink = self.sink
        sink.link(execution, "hasInitialState", ends.initial)
        sink.link(execution, "hasFinalState", ends.final)
        sink.link(execution, "hasState", ends.initial)
        sink.link(execution, "hasState", ends.final)
        sink.link(ends.initial, "inputTo", ends.transition)
        sink.link(ends.transition, "leadsTo", ends.final)

    # --- flow ----------------------------------------------------------------------------

    def _flow(self, state: str, transition: str) -> None:
        self.sink.link(state, "inputTo", transition)

    def _execution(self, agent: _Ends, members: list[Call]) -> Iterator[None]:
        """An agent's calls, in order: model outputs to the calls they led to and to the next
        model call; results to the next model call; what nothing later takes, to the agent."""
        model: _Ends | None = None  # the agent's latest model call
        waiting: list[_Ends] = []  # results since it, for the next model call
        first = True
        for call in members:
            yield
            self.visits += 1
            ends = self._ends[call.key]
            if call.start is None:  # no place in the order: its result is the agent's
                self._flow(ends.final, agent.transition)
                continue
            if first:
                self._flow(agent.initial, ends.transition)
                first = False
            if model is not None:
                self._flow(model.final, ends.transition)
            if call.cls == "llm":
                for result in waiting:
                    self._flow(result.final, ends.transition)
                model, waiting = ends, []
            else:
                waiting.append(ends)
        for result in waiting:
            self._flow(result.final, agent.transition)
        if model is not None and not waiting:
            self._flow(model.final, agent.transition)

    def _enclosed(self, owner: _Ends, members: list[Call]) -> Iterator[None]:
        """Calls inside a call that is not an agent's execution: each takes the enclosing
        call's input and gives its output back to it."""
        for call in members:
            yield
            self.visits += 1
            ends = self._ends[call.key]
            if call.start is not None:
                self._flow(owner.initial, ends.transition)
            self._flow(ends.final, owner.transition)

    def _session(self, top: list[Call]) -> None:
        """The session's Transition, its States shared with the boundary calls."""
        if not top:
            return
        starts = next((c for c in top if c.start is not None), top[0])
        ends_last = top[-1]
        latest: Decimal | None = None
        for call in top:  # the top-level call that ends last; ties: the later in order
            self.visits += 1
            if call.end is not None and (latest is None or Decimal(call.end) >= latest):
                latest, ends_last = Decimal(call.end), call
        ends = _Ends(f"{self.session}:transition", self._ends[starts.key].initial,
                     self._ends[ends_last.key].final)
        run_ref = self.disclose.run(self.run.ident)
        self._transition(ends.transition, f"{run_ref}:transition", f"session {run_ref}",
                         self.session)
        self._claim(self.session, ends)
        for call in top:
            self.visits += 1
            if call.key != ends_last.key:
                self._flow(self._ends[call.key].final, ends.transition)
