"""A MAS manifest's workflow as it is: several entries, sequential and parallel steps.

mas-lab's ``mas.yaml`` names one ``spec.workflow.entry`` and, per node, ``delegates_to``.
Sequential and parallel workflows (a pipeline of agents, a fan-out to several) start more than
one agent; declared with one entry, each further agent would be an undeclared delegation. The
manifest format is extended, backward compatibly (a manifest without these keys reads as
before):

* ``spec.workflow.entries``: a list of agent ids the MAS itself starts, beside ``entry``;
* ``spec.workflow.steps``: a list of steps, each an agent id, or a group
  ``{sequential: [step, ...]}`` / ``{parallel: [step, ...]}`` whose members are steps too.
  A group may name the agent that runs it, ``{id: pipeline, sequential: [...]}``, as
  frameworks' sequential and parallel agents are agents themselves: that agent then starts
  the group's members (declared delegations), and the MAS starts that agent. A top-level step
  or group without an ``id`` is started by the MAS: each agent it names is an entry.

Order is declared but not judged: a trace's calls are judged on who started whom, which is
what the audit's declarations speak to.
"""

from __future__ import annotations

from typing import Any, NamedTuple

_GROUPS = ("sequential", "parallel")
_MAX_DEPTH = 32


class Workflow(NamedTuple):
    entries: frozenset[str]  # the agents the MAS starts
    delegations: dict[str, frozenset[str]]  # agent running a group -> the agents it starts
    problems: tuple[str, ...]  # why a part of the workflow could not be read


def read(workflow: Any) -> Workflow:
    """The entries and the group agents' delegations of ``spec.workflow``."""
    entries: set[str] = set()
    delegations: dict[str, set[str]] = {}
    problems: list[str] = []
    if not isinstance(workflow, dict):
        return Workflow(frozenset(), {}, ())
    listed = workflow.get("entries")
    if listed is not None:
        if isinstance(listed, list) and all(isinstance(e, str) and e for e in listed):
            entries.update(listed)
        else:
            problems.append("workflow.entries is not a list of agent ids")
    steps = workflow.get("steps")
    if steps is not None:
        if isinstance(steps, list):
            read: dict[int, set[str]] = {}
            for step in steps:
                entries.update(_agents(step, delegations, problems, 0, read))
        else:
            problems.append("workflow.steps is not a list")
    return Workflow(frozenset(entries), {a: frozenset(d) for a, d in delegations.items()},
                    tuple(problems))


def _agents(step: Any, delegations: dict[str, set[str]], problems: list[str],
            depth: int, read: dict[int, set[str]]) -> set[str]:
    """The agents ``step`` starts first-hand: itself, a group's named agent, or the members of
    an unnamed group; a named group's members are recorded as its agent's delegations.
    ``read`` holds the groups already read: YAML aliases may share one group among many
    places, and reading it at each would be exponential in a kilobyte of anchors."""
    if isinstance(step, str) and step:
        return {step}
    if id(step) in read:
        return read[id(step)]
    found = read[id(step)] = _group(step, delegations, problems, depth, read)
    return found


def _group(step: Any, delegations: dict[str, set[str]], problems: list[str], depth: int,
           read: dict[int, set[str]]) -> set[str]:
    groups = [g for g in _GROUPS if isinstance(step, dict) and g in step]
    if depth > _MAX_DEPTH or len(groups) != 1 or not isinstance(step[groups[0]], list):
        problems.append("a workflow step that is neither an agent id nor one sequential or "
                        "parallel group with a list of steps")
        return set()
    members: set[str] = set()
    for member in step[groups[0]]:
        members |= _agents(member, delegations, problems, depth + 1, read)
    ident = step.get("id")
    if ident is None:
        return members
    if not isinstance(ident, str) or not ident:
        problems.append("a workflow group whose id is not an agent id")
        return members
    delegations.setdefault(ident, set()).update(members)
    return {ident}
