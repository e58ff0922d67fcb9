"""The trace-grounded capability audit: what each agent did against what it declares.

Per agent, the run's calls become *uses*, grouped by what was used:

* ``tools``: its own tool calls, by tool name (delegation tools included);
* ``models``: its LLM calls, by model (an LLM call that records no model is its own group);
* ``delegations``: calls of other agents made from its calls, by callee and tool;
* ``provided``: calls into it, by caller (another agent, or the MAS for an entry call).

Processing calls (context assembly, waits) are counted and reported, never judged: no manifest
or registration declares them.

Each use is checked against every declaration source that speaks to it (the manifests; the
registrations through the bindings). A source answers *declared*, *not declared* (a completed
check: the source was read in full and the use is unambiguously bound) or *unknown*. A use is
``compatible`` when some source declares it, ``incompatible`` when every source consulted
completed and none declares it, and ``indeterminate`` otherwise, including when no source
speaks to it. An agent's verdict and the run's combine these as contract rule 14 does: an
established conflict first, then anything unestablished. Declared but unused is information.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from .._codes import finding
from .._findings import Finding, Severity, Verdict, combine, sort_key
from .attribution import Attribution, Owner, identified
from .calls import Ancestry, Call, Run
from .declarations import AgentDeclaration, Declarations
from .privacy import DELEGATION_PREFIX, Disclosure

DECLARED, NOT_DECLARED, UNKNOWN = "declared", "not-declared", "unknown"
ASPECTS = ("tools", "models", "delegations", "provided")
_WHAT = {"tools": "tool call", "models": "model use", "delegations": "delegation",
         "provided": "call into the agent"}
MAS_CALLER = "mas"


class Answer(NamedTuple):
    """One declaration source's answer about one use."""

    outcome: str
    by: tuple[str, ...] = ()
    reason: Finding | None = None


class Use(NamedTuple):
    aspect: str
    name: str | None  # tool name, model, callee agent, or caller agent ("mas" for an entry)
    via: str | None  # the tool a delegation went through
    calls: tuple[Call, ...]
    verdict: Verdict
    declared_by: tuple[str, ...]
    reasons: tuple[Finding, ...]


class AgentAudit(NamedTuple):
    agent: str
    verdict: Verdict
    aspects: dict[str, Verdict]
    uses: tuple[Use, ...]
    processing: dict[str, int]
    unused: dict[str, list[str]]
    reasons: tuple[Finding, ...]


class RunAudit(NamedTuple):
    run: Run
    verdict: Verdict
    agents: tuple[AgentAudit, ...]
    reasons: tuple[Finding, ...]
    unused_agents: tuple[str, ...]


class _Key(NamedTuple):
    agent: str
    aspect: str
    name: str | None
    via: str | None


def audit(run: Run, declarations: Declarations, disclose: Disclosure) -> RunAudit:
    """Every agent of ``run`` judged against ``declarations``; identities worded by ``disclose``."""
    return _Auditor(run, declarations, disclose).run_audit()


class _Auditor:
    def __init__(self, run: Run, declarations: Declarations, disclose: Disclosure) -> None:
        self.declarations = declarations
        self.manifests = declarations.manifests
        run = identified(run, declarations)
        self.run = run
        self.disclose = disclose
        self.calls = run.by_key()
        self.ancestry = Ancestry(self.calls)
        self.attribution = Attribution(run, self.calls, self.ancestry)
        self.children: dict[str, list[Call]] = {}
        for call in run.calls:
            # A call whose caller the order of events leaves open may be each candidate's.
            for parent in call.candidates or ((call.parent,) if call.parent else ()):
                self.children.setdefault(parent, []).append(call)

    # --- gathering uses --------------------------------------------------------------------

    def _ancestor(self, call: Call, classes: tuple[str, ...]) -> Call | None:
        return self.ancestry.nearest(call, classes)

    def _agent_of(self, call: Call) -> str | None:
        return self.attribution.agent(call)

    def gather(self) -> tuple[dict[_Key, list[Call]], dict[str, dict[str, int]], list[Finding]]:
        uses: dict[_Key, list[Call]] = {}
        processing: dict[str, dict[str, int]] = {}
        problems: list[Finding] = []
        for call in self.run.calls:
            if call.cls == "mas":
                continue
            if call.cls == "agent":
                if call.remote:
                    self._remote(call, uses, problems)
                    continue
                if call.target is None:
                    problems.append(self._unattributed(call))
                    continue
                self._provided(call, uses)
                continue
            owner = self.attribution.owner(call)
            agent = owner.agent
            if agent is None:
                problems.append(self._nobodys(call, owner))
                continue
            if call.cls == "processing":
                counts = processing.setdefault(agent, {})
                name = call.target or "(unnamed)"
                counts[name] = counts.get(name, 0) + 1
                continue
            aspect = "tools" if call.cls == "tool" else "models"
            uses.setdefault(_Key(agent, aspect, call.target, None), []).append(call)
        return uses, processing, problems

    def _provided(self, call: Call, uses: dict[_Key, list[Call]]) -> None:
        """Who called an agent: the MAS (a top-level call), another agent, or unknown."""
        callee = call.target
        assert callee is not None
        if call.candidates is not None:
            self._unplaced(call, callee, uses)
            return
        if self.attribution.folded(call):
            return  # the agent going on in a span of its own beside it: no call into it
        if call.parent_id is None:
            uses.setdefault(_Key(callee, "provided", MAS_CALLER, None), []).append(call)
            return
        # A parent the trace does not hold, or a chain with no MAS, agent or tool call above:
        # the caller is unknown.
        origin = self._ancestor(call, ("tool", "agent", "mas")) if call.parent else None
        if origin is None:
            uses.setdefault(_Key(callee, "provided", None, None), []).append(call)
            return
        if origin.cls == "mas":
            uses.setdefault(_Key(callee, "provided", MAS_CALLER, None), []).append(call)
            return
        via = origin.target if origin.cls == "tool" else None
        caller = self._agent_of(origin) if origin.cls == "tool" else origin.target
        if caller is None:
            uses.setdefault(_Key(callee, "provided", None, via), []).append(call)
            return
        if caller == callee and via is None:
            return  # an agent call directly under its own: the agent going on, no delegation
        # Through a tool (delegate_to_A called by A), the seed's recursive delegation: judged
        # against A's delegates_to like any other.
        uses.setdefault(_Key(callee, "provided", caller, via), []).append(call)
        uses.setdefault(_Key(caller, "delegations", callee, via), []).append(call)

    def _unplaced(self, call: Call, callee: str, uses: dict[_Key, list[Call]]) -> None:
        """An agent call whose caller the order of events does not single out: its caller is
        unknown, and each candidate may have delegated to it (never established)."""
        uses.setdefault(_Key(callee, "provided", None, None), []).append(call)
        for key in call.candidates or ():
            origin = self.calls.get(key)
            if origin is None:
                continue
            caller = self._agent_of(origin) if origin.cls == "tool" else origin.target
            if caller is not None and caller != callee:
                via = origin.target if origin.cls == "tool" else None
                uses.setdefault(_Key(caller, "delegations", callee, via), []).append(call)

    def _remote(self, call: Call, uses: dict[_Key, list[Call]], problems: list[Finding]) -> None:
        """An A2A call out of an agent whose serving agent the trace does not hold."""
        owner = self.attribution.owner(call)
        caller = owner.agent
        if caller is None:
            problems.append(self._nobodys(call, owner))
            return
        uses.setdefault(_Key(caller, "delegations", None, None), []).append(call)

    def _nobodys(self, call: Call, owner: Owner) -> Finding:
        """Why a call belongs to no agent: spans of several agents around it, a search past
        its bound, or no agent at all."""
        if owner.around:
            return self._ambiguous(call, owner.around)
        if owner.searched is not None:
            return finding("capability.caller-unknown",
                           f"{call.cls} call {self._call_name(call)} has no agent span above "
                           f"it, and none of the agent spans beside it and beside its callers "
                           f"on the nearest {owner.searched} levels that have some encloses it "
                           "in time; levels further up are not searched",
                           self._call_path(call))
        return self._unattributed(call)

    def _unattributed(self, call: Call) -> Finding:
        return finding("capability.caller-unknown",
                       f"{call.cls} call {self._call_name(call)} names no agent, and no agent "
                       "call encloses it", self._call_path(call))

    def _ambiguous(self, call: Call, around: tuple[Call, ...]) -> Finding:
        agents = sorted({self._agent(a.target) for a in around})
        return finding("capability.caller-ambiguous",
                       f"{call.cls} call {self._call_name(call)} has no agent span above it, "
                       f"and the agent spans beside it that enclose it in time belong to "
                       f"several agents, among them {', '.join(agents)} "
                       f"({self._calls_text(around)}); "
                       "whose call it is is not guessed", self._call_path(call))

    # --- wording ----------------------------------------------------------------------------

    def _call_name(self, call: Call) -> str:
        return self.disclose.call_name(call.id, call.key) if call.id else (
            f"without an id at line {call.first_line}")

    def _call_path(self, call: Call) -> str:
        return self.disclose.call_iri(self.run.ident, call.ref)

    def _calls_text(self, calls: Iterable[Call]) -> str:
        listed = [self._call_name(c) for c in calls]
        shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
        return f"call{'s' if len(listed) > 1 else ''} {shown}"

    def _agent(self, agent: str | None) -> str:
        return self.disclose.agent(agent) if agent else "(unknown)"

    def _path(self, path: str | None) -> str:
        return self.disclose.path(path) if path else "(no file)"

    def _tool(self, tool: str | None) -> str:
        return self.disclose.tool(tool) if tool else "(unnamed)"

    # --- the manifest source ----------------------------------------------------------------

    def _declaration(self, agent: str, calls: list[Call], what: str,
                     code: str) -> AgentDeclaration | Answer:
        manifests = self.manifests
        assert manifests is not None
        declaration = manifests.agents.get(agent)
        path = self._call_path(calls[0])
        if declaration is None:
            if manifests.agents_listed:
                return Answer(NOT_DECLARED, reason=finding(
                    code, f"agent {self._agent(agent)} is not declared in "
                          f"{self._path(manifests.mas_source)}, so no {what} of it is "
                          f"({self._calls_text(calls)})", path))
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"no manifest declares agent {self._agent(agent)} ({self._calls_text(calls)})", path))
        if declaration.problem is not None:
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"agent {self._agent(agent)}: {declaration.problem} "
                f"({self._calls_text(calls)})", path))
        return declaration

    def _workflow(self, agent: str) -> str:
        assert self.manifests is not None
        return (f"{self._path(self.manifests.mas_source)}#workflow.nodes[{self._agent(agent)}]"
                ".delegates_to")

    def manifest_tool(self, agent: str, tool: str, calls: list[Call]) -> Answer | None:
        if self.manifests is None:
            return None
        declaration = self._declaration(agent, calls, "tool call", "capability.undeclared-tool")
        if isinstance(declaration, Answer):
            return declaration
        path = self._call_path(calls[0])
        if tool in declaration.tools:
            return Answer(DECLARED, (f"{self._path(declaration.tools[tool])}#metadata.name",))
        if tool in declaration.delegation_tools():
            return Answer(DECLARED, (self._workflow(agent),))
        if not declaration.tools_complete:
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"agent {self._agent(agent)} called {self._tool(tool)} "
                f"({self._calls_text(calls)}); a tool manifest of its declaration could not be "
                "read, so whether it declares the tool is unknown", path))
        if tool.startswith(DELEGATION_PREFIX) and declaration.delegates_to is None:
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"agent {self._agent(agent)} called the delegation tool {self._tool(tool)} "
                f"({self._calls_text(calls)}); no workflow (delegates_to) was read", path))
        return Answer(NOT_DECLARED, reason=finding(
            "capability.undeclared-tool",
            f"agent {self._agent(agent)} called the tool {self._tool(tool)}, which "
            f"{self._path(declaration.source)} does not declare ({self._calls_text(calls)})",
            path))

    def manifest_model(self, agent: str, model: str, calls: list[Call]) -> Answer | None:
        if self.manifests is None:
            return None
        declaration = self._declaration(agent, calls, "model use", "capability.undeclared-model")
        if isinstance(declaration, Answer):
            return declaration
        path = self._call_path(calls[0])
        if declaration.models is None:
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"agent {self._agent(agent)}: the models of {self._path(declaration.source)} "
                "cannot be read "
                f"({self._calls_text(calls)})", path))
        if model in declaration.models:
            return Answer(DECLARED, (f"{self._path(declaration.source)}#spec.models",))
        return Answer(NOT_DECLARED, reason=finding(
            "capability.undeclared-model",
            f"agent {self._agent(agent)} used the model {model}, which "
            f"{self._path(declaration.source)} does not declare ({self._calls_text(calls)})",
            path))

    def manifest_delegation(self, caller: str, callee: str, calls: list[Call]) -> Answer | None:
        if self.manifests is None:
            return None
        code = "capability.undeclared-delegation"
        declaration = self._declaration(caller, calls, "delegation", code)
        if isinstance(declaration, Answer):
            return declaration
        path = self._call_path(calls[0])
        if declaration.delegates_to is None:
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"agent {self._agent(caller)} delegated to {self._agent(callee)} "
                f"({self._calls_text(calls)}); no workflow (delegates_to) was read", path))
        if callee in declaration.delegates_to:
            return Answer(DECLARED, (self._workflow(caller),))
        return Answer(NOT_DECLARED, reason=finding(
            code, f"agent {self._agent(caller)} delegated to {self._agent(callee)}, which its "
                  f"workflow node does not list in delegates_to ({self._calls_text(calls)})", path))

    def manifest_entry(self, callee: str, calls: list[Call]) -> Answer | None:
        manifests = self.manifests
        if manifests is None:
            return None
        path = self._call_path(calls[0])
        if manifests.entry is None and not manifests.entries:
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"agent {self._agent(callee)} was called by the MAS ({self._calls_text(calls)}); "
                "no workflow entry was read", path))
        if callee == manifests.entry:
            return Answer(DECLARED, (f"{self._path(manifests.mas_source)}#workflow.entry",))
        if manifests.starts(callee):
            return Answer(DECLARED, (f"{self._path(manifests.mas_source)}#workflow",))
        if not manifests.entries_complete:
            return Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"agent {self._agent(callee)} was called by the MAS ({self._calls_text(calls)}); "
                "a part of the workflow's entries or steps could not be read", path))
        started = sorted({*manifests.entries, *([manifests.entry] if manifests.entry else [])})
        return Answer(NOT_DECLARED, reason=finding(
            "capability.undeclared-delegation",
            f"agent {self._agent(callee)} was called by the MAS, whose workflow starts "
            f"{', '.join(self._agent(a) for a in started)} ({self._calls_text(calls)})", path))

    # --- the trace's own declarations (OTLP gen_ai.tool.definitions) ------------------------

    def traced_tool(self, agent: str, tool: str, calls: list[Call]) -> Answer | None:
        """The tools an agent's spans list as available to it: a declaration source only when
        no manifest and no registrations are given. A manifest is the declaration the team
        wrote, a registration the provider's; the list is what the audited runtime itself
        offered the model, so it never outweighs their completed "not declared"."""
        if self.manifests is not None or self.declarations.registrations is not None:
            return None
        listed = self.run.definitions.get(agent)
        if listed is None:
            return None
        if tool in listed:
            return Answer(DECLARED, (f"{self.disclose.call_iri(self.run.ident, listed[tool])}"
                                     "#gen_ai.tool.definitions",))
        first = next(iter(listed.values()))
        return Answer(NOT_DECLARED, reason=finding(
            "capability.undeclared-tool",
            f"agent {self._agent(agent)} called the tool {self._tool(tool)}, which the tool "
            f"definitions of its spans (gen_ai.tool.definitions, first on span "
            f"{self.disclose.call(first)}) do not list ({self._calls_text(calls)})",
            self._call_path(calls[0])))

    # --- the registration source ------------------------------------------------------------

    def registered(self, agent: str, tool: str, calls: list[Call]) -> Answer | None:
        """A use through ``tool`` on behalf of ``agent``, against its bound, registered capabilities."""
        bindings = self.declarations.bindings
        registrations = self.declarations.registrations
        if bindings is None or registrations is None:
            return None
        path = self._call_path(calls[0])
        iris = bindings.tools.get(tool)
        if iris is None:
            return Answer(UNKNOWN, reason=finding(
                "capability.unbound-name",
                f"the tool {self._tool(tool)} is not bound to a capability IRI in "
                f"{self._path(bindings.source)} ({self._calls_text(calls)})", path))
        if len(iris) > 1:
            return Answer(UNKNOWN, reason=finding(
                "capability.ambiguous-binding",
                f"the tool {self._tool(tool)} is bound to {len(iris)} capability IRIs in "
                f"{self._path(bindings.source)} ({', '.join(iris)}); none is chosen "
                f"({self._calls_text(calls)})", path))
        capability = iris[0]
        held = bindings.agents.get(agent)
        if held is None:
            return Answer(UNKNOWN, reason=finding(
                "capability.unbound-name",
                f"agent {self._agent(agent)} is not bound to capability IRIs in "
                f"{self._path(bindings.source)} ({self._calls_text(calls)})", path))
        if capability not in held:
            return Answer(NOT_DECLARED, reason=finding(
                "capability.undeclared-capability",
                f"the tool {self._tool(tool)} exercises {capability}, which agent "
                f"{self._agent(agent)} does not hold in {self._path(bindings.source)} "
                f"({self._calls_text(calls)})", path))
        sources = registrations.iris.get(capability)
        if not sources:
            return Answer(UNKNOWN, reason=finding(
                "capability.unregistered",
                f"agent {self._agent(agent)} holds {capability}, but no valid registration "
                f"declares it ({self._calls_text(calls)})", path))
        return Answer(DECLARED, tuple(self._path(s) for s in sources))

    # --- judging ----------------------------------------------------------------------------

    def judge(self, key: _Key, calls: list[Call]) -> Use:
        answers = self._answers(key, calls)
        consulted = [a for a in answers if a is not None]
        if not consulted:
            consulted = [Answer(UNKNOWN, reason=finding(
                "capability.declaration-unavailable",
                f"no declaration that was given covers this {_WHAT[key.aspect]} "
                f"({self._calls_text(calls)})", self._call_path(calls[0])))]
        declared = [a for a in consulted if a.outcome == DECLARED]
        if declared:
            by = tuple(dict.fromkeys(b for a in declared for b in a.by))
            return Use(key.aspect, key.name, key.via, tuple(calls), Verdict.COMPATIBLE, by, ())
        reasons = [a.reason for a in consulted if a.reason is not None]
        if all(a.outcome == NOT_DECLARED for a in consulted):
            return Use(key.aspect, key.name, key.via, tuple(calls), Verdict.INCOMPATIBLE, (),
                       tuple(reasons))
        # Not established: a source's "not declared" is then only a warning.
        demoted = tuple(r if r.effect is not Verdict.INCOMPATIBLE
                        else r._replace(severity=Severity.WARNING, effect=None) for r in reasons)
        return Use(key.aspect, key.name, key.via, tuple(calls), Verdict.INDETERMINATE, (), demoted)

    def _answers(self, key: _Key, calls: list[Call]) -> list[Answer | None]:
        path = self._call_path(calls[0])
        if key.aspect == "models":
            if key.name is None:
                return [Answer(UNKNOWN, reason=finding(
                    "capability.model-unknown",
                    f"agent {self._agent(key.agent)}: the trace records no model (or conflicting "
                    f"ones) for {self._calls_text(calls)}", path))]
            return [self.manifest_model(key.agent, key.name, calls)]
        if key.aspect == "tools":
            if key.name is None:
                return [Answer(UNKNOWN, reason=finding(
                    "capability.tool-unknown",
                    f"agent {self._agent(key.agent)}: the trace records no tool name (or "
                    f"conflicting ones) for {self._calls_text(calls)}", path))]
            delegating = any(child.cls == "agent" and child.target != key.agent
                             for call in calls for child in self.children.get(call.key, ()))
            # A delegation's capability is the callee's to declare, on its provided side.
            registered = None if delegating else self.registered(key.agent, key.name, calls)
            return [self.manifest_tool(key.agent, key.name, calls),
                    self.traced_tool(key.agent, key.name, calls), registered]
        if key.aspect == "delegations":
            if key.name is None:
                return [Answer(UNKNOWN, reason=finding(
                    "capability.callee-unknown",
                    f"agent {self._agent(key.agent)} sent A2A requests ({self._calls_text(calls)}) "
                    "and the trace holds no span of the agent that served them: whom it "
                    "delegated to is unknown", path))]
            if all(c.candidates is not None for c in calls):
                return [Answer(UNKNOWN, reason=finding(
                    "trace.nesting-ambiguous",
                    f"agent {self._agent(key.agent)} may have delegated to "
                    f"{self._agent(key.name)} ({self._calls_text(calls)}), but the order of "
                    "events does not establish who made that call", path))]
            return [self.manifest_delegation(key.agent, key.name, calls)]
        # provided
        if key.name is None:
            return self._caller_unknown(key.agent, calls)
        if key.name == MAS_CALLER:
            return [self.manifest_entry(key.agent, calls)]
        registered = self.registered(key.agent, key.via, calls) if key.via else None
        return [self.manifest_delegation(key.name, key.agent, calls), registered]

    def _caller_unknown(self, agent: str, calls: list[Call]) -> list[Answer | None]:
        unplaced = [c for c in calls if c.candidates is not None]
        unheld = [c for c in calls if c.candidates is None]
        answers: list[Answer | None] = []
        if unplaced:
            lines = "that line" if len(unplaced) == 1 else "those lines"
            answers.append(Answer(UNKNOWN, reason=finding(
                "trace.nesting-ambiguous",
                f"agent {self._agent(agent)}: the order of events does not establish who made "
                f"{self._calls_text(unplaced)} (the run's reasons at {lines} say why)",
                self._call_path(unplaced[0]))))
        if unheld:
            answers.append(Answer(UNKNOWN, reason=finding(
                "capability.caller-unknown",
                f"agent {self._agent(agent)} was called from a call the trace does not hold "
                f"({self._calls_text(unheld)})", self._call_path(unheld[0]))))
        return answers

    def run_audit(self) -> RunAudit:
        run = self.run
        reasons = list(run.findings)
        reasons.extend(self.declarations.findings)
        if not run.readable:
            # A run too large for the memory bound was readable: it was not judged.
            bounded = any(r.code == "trace.memory-bound" for r in run.findings)
            return RunAudit(run, Verdict.INDETERMINATE if bounded else Verdict.INVALID, (),
                            tuple(sorted(reasons, key=sort_key)), ())
        uses, processing, problems = self.gather()
        reasons.extend(problems)
        if run.skipped:
            reasons.append(finding(
                "trace.incomplete",
                f"{run.skipped} {'line' if run.unit == 'events' else 'span or line'}"
                f"{'s' if run.skipped > 1 else ''} of the trace could not be used; an "
                "undeclared use may be among them"))
        for record in run.records:
            reasons.append(finding(
                "capability.evidence-opaque",
                f"line {record['line']}: the outcome of operation {record['operation']!r} "
                f"({record['status']}) names its agent only by an opaque context and carries "
                f"{record['inputs']} input and {record['outputs']} output payloads only as "
                "references: which agent used which tool or capability cannot be established",
                f"/{record['line'] - 1}"))
        agentless = (run.unit == "spans" and not run.records and not run.skipped
                     and all(c.cls == "mas" for c in run.calls))
        if agentless:
            # A framework's build or setup steps: a trace of their own, in which no agent acts.
            reasons.append(finding(
                "trace.no-agents",
                f"the trace's {run.events} span{'s' if run.events != 1 else ''} hold no agent, "
                "model or tool call: no agent acts in it (a framework's build or setup steps), "
                "nothing in it is judged, so it does not make the run indeterminate"))
        elif not run.calls and not run.records:
            reasons.append(finding("trace.incomplete", "the trace holds no calls: nothing "
                                                       "establishes what any agent did"))
        by_agent: dict[str, dict[_Key, list[Call]]] = {}
        for key, calls in uses.items():  # once, not once per agent: many agents, many uses
            by_agent.setdefault(key.agent, {})[key] = calls
        agents = sorted(set(by_agent) | set(processing))
        audits = tuple(self._agent_audit(agent, by_agent.get(agent, {}),
                                         processing.get(agent, {}))
                       for agent in agents)
        verdict = combine([a.verdict for a in audits] + [
            r.effect for r in reasons if r.severity is Severity.ERROR and r.effect is not None])
        unused_agents: tuple[str, ...] = ()
        if self.manifests is not None and not agentless:
            unused_agents = tuple(sorted(set(self.manifests.agents) - set(agents)))
            if unused_agents:
                reasons.append(finding(
                    "capability.declared-unused",
                    "declared agents that do not act in this run: "
                    + ", ".join(self._agent(a) for a in unused_agents)))
        return RunAudit(run, verdict, audits, tuple(sorted(reasons, key=sort_key)), unused_agents)

    def _agent_audit(self, agent: str, uses: dict[_Key, list[Call]],
                     processing: dict[str, int]) -> AgentAudit:
        """``uses`` are the agent's own."""
        judged = tuple(self.judge(key, calls) for key, calls in sorted(
            uses.items(),
            key=lambda item: (ASPECTS.index(item[0].aspect), item[0].name or "", item[0].via or "")))
        # Once each: an agent that delegates to itself through a tool is both the caller of
        # the delegation and the callee, whose two uses find the same undeclared edge.
        reasons: list[Finding] = list(dict.fromkeys(r for use in judged for r in use.reasons))
        if (self.manifests is not None and self.manifests.agents_listed
                and agent not in self.manifests.agents):
            reasons.append(finding(
                "capability.undeclared-agent",
                f"agent {self._agent(agent)} acts in the run but "
                f"{self._path(self.manifests.mas_source)} "
                "does not list it"))
        aspects = {aspect: combine(u.verdict for u in judged if u.aspect == aspect)
                   for aspect in ASPECTS if any(u.aspect == aspect for u in judged)}
        unused = self._unused(agent, judged)
        if any(unused.values()):
            listed = "; ".join(f"{k}: {', '.join(v)}" for k, v in unused.items() if v)
            reasons.append(finding("capability.declared-unused",
                                   f"agent {self._agent(agent)} declares but does not use {listed}"))
        verdict = combine([u.verdict for u in judged] + [
            r.effect for r in reasons if r.severity is Severity.ERROR and r.effect is not None])
        return AgentAudit(agent, verdict, aspects, judged, dict(sorted(processing.items())),
                          unused, tuple(sorted(reasons, key=sort_key)))

    def _unused(self, agent: str, judged: tuple[Use, ...]) -> dict[str, list[str]]:
        """Declared but unused; only where the trace names everything of that kind it used."""
        out: dict[str, list[str]] = {"tools": [], "models": [], "delegations": []}
        declaration = self.manifests.agents.get(agent) if self.manifests else None
        if declaration is None or declaration.problem is not None:
            return out
        tools = [u for u in judged if u.aspect == "tools"]
        if all(u.name is not None for u in tools):
            used = {u.name for u in tools}
            out["tools"] = sorted(self._tool(t) for t in set(declaration.tools) - used)
        models = [u for u in judged if u.aspect == "models"]
        if declaration.models and all(u.name is not None for u in models):
            out["models"] = sorted(declaration.models - {u.name for u in models})
        if declaration.delegates_to:
            delegated = {u.name for u in judged if u.aspect == "delegations"}
            out["delegations"] = sorted(self._agent(a) for a in declaration.delegates_to - delegated)
        return out
