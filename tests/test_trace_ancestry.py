"""The nearest enclosing call of some classes (``calls.Ancestry``), which the audit, the graph
and the trajectory ask for every call of a run: the plain walk's answer on any parent
structure (loops included), in work linear in the calls, remembering only the calls passed.

Counted, never timed: the calls looked at (``Ancestry.steps``) and the answers remembered.
"""

from __future__ import annotations

import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ioa_semantic.trace.calls import Ancestry, Call

CLASSES = ("mas", "agent", "tool", "llm")


def call(key: str, cls: str, parent: str | None) -> Call:
    return Call(key=key, id=key, cls=cls, agent=None, target=None, parent=parent,
                parent_id=parent, start=None, end=None, first_line=1, status=None, label=None,
                tokens={}, finish=None, temperature=None, response_id=None, input=None,
                output=None, content=None, ambiguous=())


def plain(calls: dict[str, Call], asked: Call, classes: tuple[str, ...]) -> Call | None:
    """The first call of ``classes`` above ``asked``, walking up; None on a loop."""
    seen = {asked.key}
    current = calls.get(asked.parent) if asked.parent else None
    while current is not None:
        if current.key in seen:
            return None
        if current.cls in classes:
            return current
        seen.add(current.key)
        current = calls.get(current.parent) if current.parent else None
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(CLASSES), st.integers(min_value=-1, max_value=40)),
                min_size=1, max_size=40),
       st.lists(st.sampled_from([("agent",), ("mas",), ("agent", "mas"), ("tool",)]),
                min_size=1, max_size=4),
       st.randoms())
# A loop through an agent call: asked first below it, the agent is remembered as the answer
# of the calls on the way, one of which lies above the agent in the loop.
@example([("tool", 1), ("tool", 2), ("agent", 0)], [("agent",)], random.Random(0))
@example([("tool", 1), ("agent", 0)], [("agent",)], random.Random(0))
def test_the_nearest_call_is_the_plain_walks_whatever_the_parents(
        spec: list[tuple[str, int]], questions: list[tuple[str, ...]], rng: random.Random,
        ) -> None:
    # Any parent: none (-1), an earlier or a later call, itself, one that is not in the run:
    # loops and dangling parents included.
    calls = {f"c{i}": call(f"c{i}", cls, None if parent < 0 else f"c{parent}")
             for i, (cls, parent) in enumerate(spec)}
    ancestry = Ancestry(calls)
    asked = [(c, q) for c in calls.values() for q in questions]
    if len(asked) > 2:
        rng.shuffle(asked)
    for one, classes in asked * 2:  # asked again, the remembered answers are the same
        assert ancestry.nearest(one, classes) == plain(calls, one, classes)


def test_a_deep_run_costs_steps_linear_in_its_calls_and_remembers_only_callers() -> None:
    """A chain of agent calls each under a tool call, thousands deep, with a leaf under every
    tool: every call asked for its nearest agent and its nearest MAS call, bottom-up, top-down
    and in a random order. The work is a few steps a call, never a walk to the root a call;
    the answers remembered are those of calls with calls under them, not of the leaves."""
    for order in ("bottom-up", "top-down", "random"):
        counts = []
        for depth in (1_000, 2_000, 4_000):
            calls = {"root": call("root", "mas", None)}
            parent = "root"
            for level in range(depth):
                agent, tool = f"a{level}", f"t{level}"
                calls[agent] = call(agent, "agent", parent)
                calls[tool] = call(tool, "tool", agent)
                calls[f"l{level}"] = call(f"l{level}", "llm", tool)
                parent = tool
            asked = list(calls.values())
            if order == "bottom-up":
                asked.reverse()
            elif order == "random":
                random.Random(depth).shuffle(asked)
            ancestry = Ancestry(calls)
            for one in asked:
                ancestry.nearest(one, ("agent",))
                ancestry.nearest(one, ("mas",))
            counts.append(ancestry.steps)
            assert ancestry.steps <= 4 * 2 * len(calls), (order, depth, ancestry.steps)
            callers = {c.parent for c in calls.values() if c.parent}
            for remembered in ancestry._known.values():
                assert set(remembered) <= callers, order
        # Doubling the depth at most doubles the work (a walk to the root a call quadruples it).
        assert counts[2] <= 2.2 * counts[1] and counts[1] <= 2.2 * counts[0], (order, counts)
