"""What agents declare, read from mas-lab manifests, IoA registrations and a bindings file.

The declared side of ``ioa-check trace``. Three sources, each read exactly:

* **manifests** (``--manifests``): ``mas.yaml`` lists the agents (``spec.agency.agents``),
  the workflow's entry and each node's ``delegates_to``; each agent manifest lists its models
  (``spec.models[].model``) and tools (``spec.tools[].ref``, a tool manifest whose
  ``metadata.name`` is the tool's name). A node that delegates to ``x`` declares the tool
  ``delegate_to_x``, the mas-lab convention.
* **registrations** (``--registrations``, judged under ``--profile`` exactly as
  ``ioa-check audit`` judges them): the capability IRIs that valid registrations declare.
* **bindings** (``--bindings``): which capability IRIs an agent name holds and which a tool
  name exercises. Names are never matched to IRIs by similarity; only this file binds them.

A declaration that cannot be read is recorded as unavailable, never as empty: what it would
have declared is unknown, so uses it might cover stay indeterminate.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from functools import cache
from typing import Any, NamedTuple

from .._codes import finding
from .._exceptions import ConfigurationError
from .._files import CONFIGURATION_BYTES, Unreadable, read_bounded
from .._findings import Finding, Severity
from .privacy import DELEGATION_PREFIX, Disclosure
from .workflow import Workflow
from .workflow import read as read_workflow

_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]+")


class AgentDeclaration(NamedTuple):
    agent: str
    source: str | None  # the agent manifest
    description: str | None
    models: frozenset[str] | None  # None: the manifest could not be read
    tools: dict[str, str]  # tool name -> the tool manifest that declares it
    tool_descriptions: dict[str, str]
    tools_complete: bool  # every tool reference resolved to exactly one name
    delegates_to: frozenset[str] | None  # None: no workflow was read
    problem: str | None  # why the agent's manifest is unavailable
    # The gen_ai.agent.id values mas.yaml gives the agent explicitly (its entry's agent_id):
    # OTLP spans carrying one of them are this agent's, whatever their gen_ai.agent.name.
    ids: frozenset[str] = frozenset()

    def delegation_tools(self) -> frozenset[str]:
        return frozenset(DELEGATION_PREFIX + a for a in self.delegates_to or ())


class Manifests(NamedTuple):
    mas: str | None
    mas_source: str | None
    description: str | None
    agents: dict[str, AgentDeclaration]
    agents_listed: bool  # mas.yaml lists the agents: an agent outside the list is undeclared
    entry: str | None
    workflow: bool
    findings: tuple[Finding, ...]
    # The agents the MAS starts besides ``entry``: workflow.entries and steps (workflow.py).
    entries: frozenset[str] = frozenset()
    entries_complete: bool = True  # False: a part of workflow.entries or steps is unreadable

    def starts(self, agent: str) -> bool:
        """Whether the workflow declares that the MAS starts ``agent``."""
        return agent == self.entry or agent in self.entries


class Bindings(NamedTuple):
    source: str
    agents: dict[str, tuple[str, ...]]  # agent name -> capability IRIs it holds
    tools: dict[str, tuple[str, ...]]  # tool name -> capability IRIs it exercises


class Registrations(NamedTuple):
    iris: dict[str, tuple[str, ...]]  # capability IRI -> the valid registrations declaring it
    findings: tuple[Finding, ...]


class Declarations(NamedTuple):
    manifests: Manifests | None
    bindings: Bindings | None
    registrations: Registrations | None

    @property
    def findings(self) -> tuple[Finding, ...]:
        out: tuple[Finding, ...] = ()
        if self.manifests is not None:
            out += self.manifests.findings
        if self.registrations is not None:
            out += self.registrations.findings
        return out


# --- YAML, strictly --------------------------------------------------------------------------


class _Repeated(list[Any]):
    """Every value a repeated mapping key was given (YAML parsers keep only the last)."""


@cache
def _loader() -> Any:
    import yaml

    loader_class: Any = type("StrictLoader", (yaml.SafeLoader,), {})

    def mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            value = loader.construct_object(value_node, deep=True)
            if key in out:
                previous = out[key]
                earlier = list(previous) if isinstance(previous, _Repeated) else [previous]
                out[key] = _Repeated([*earlier, value])
            else:
                out[key] = value
        return out

    loader_class.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return loader_class


def _read_yaml(path: str, what: str = "for a manifest") -> tuple[Any, str | None]:
    """The document, or why it cannot be read (``what``: whose limit a file over it passed)."""
    import yaml

    try:
        # A regular file up to the limit of a configuration file: a tool manifest that is a
        # named pipe or gigabytes is unavailable, never waited on nor held.
        text = read_bounded(path, CONFIGURATION_BYTES, what).decode("utf-8")
    except Unreadable as exc:
        return None, str(exc)
    except UnicodeDecodeError:
        return None, "is not UTF-8"
    try:
        # The loader is SafeLoader's, plus repeated keys kept: no arbitrary objects.
        return yaml.load(text, Loader=_loader()), None
    except yaml.YAMLError as exc:
        return None, f"is not YAML ({str(exc).splitlines()[0]})"
    except RecursionError:  # PyYAML composes nested nodes by recursion
        return None, "nests too deeply to be read"


def _values(node: Any, *path: str) -> list[Any]:
    """Every value at ``path``, following each value of a repeated key."""
    current = [node]
    for step in path:
        found = []
        for item in current:
            if isinstance(item, _Repeated):
                item_list: list[Any] = list(item)
            else:
                item_list = [item]
            for each in item_list:
                if isinstance(each, dict) and step in each:
                    value = each[step]
                    found.extend(value if isinstance(value, _Repeated) else [value])
        current = found
    return current


def _one_text(node: Any, *path: str) -> str | None:
    values = {v for v in _values(node, *path) if isinstance(v, str) and v}
    return values.pop() if len(values) == 1 else None


def _has_repeats(node: Any) -> bool:
    """Whether a key is repeated anywhere in ``node``. Each mapping and list is visited once
    (by identity), on a stack of its own: YAML's aliases share one object, and a walk that
    followed every alias would take 10^9 steps for a few hundred bytes of anchors (a
    "billion laughs"); a manifest also chooses how deep it nests."""
    seen: set[int] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, _Repeated):
            return True
        if isinstance(item, (dict, list)) and id(item) not in seen:
            seen.add(id(item))
            pending.extend(item.values() if isinstance(item, dict) else item)
    return False


def _list(node: Any, *path: str) -> list[Any] | None:
    """The list at ``path``; None when it is repeated, or not a list."""
    values = _values(node, *path)
    if not values:
        return []
    if len(values) > 1 or not isinstance(values[0], list):
        return None
    return list(values[0])


# --- manifests -------------------------------------------------------------------------------


def read_manifests(path: str, disclose: Disclosure) -> Manifests:
    """The MAS and agent manifests at ``path`` (a folder or one manifest file).

    Findings about them are worded through ``disclose``; configuration errors (for the
    operator's own terminal) name the files as given.
    """
    if os.path.isdir(path):
        for name in ("mas.yaml", "mas.yml"):
            if os.path.isfile(os.path.join(path, name)):
                return _read_mas(os.path.join(path, name), disclose)
        candidates = sorted(
            os.path.join(folder, name)
            for folder in (path, os.path.join(path, "agents")) if os.path.isdir(folder)
            for name in os.listdir(folder) if name.endswith((".yaml", ".yml")))
        agents: dict[str, AgentDeclaration] = {}
        findings: list[Finding] = []
        for candidate in candidates:
            document, _ = _read_yaml(candidate)
            if _one_text(document, "kind") == "Agent":
                declaration = _read_agent(candidate, None, None, findings, disclose, document)
                agents[declaration.agent] = declaration
        if not agents:
            raise ConfigurationError(f"--manifests {path}: no mas.yaml and no agent manifests")
        return Manifests(None, None, None, agents, False, None, False, tuple(findings))
    if os.path.exists(path):  # a file, or what is refused as not one (a named pipe)
        document, problem = _read_yaml(path)
        if problem is not None:
            raise ConfigurationError(f"--manifests {path} {problem}")
        kind = _one_text(document, "kind")
        if kind == "MAS":
            return _read_mas(path, disclose)
        if kind == "Agent":
            findings = []
            declaration = _read_agent(path, None, None, findings, disclose, document)
            return Manifests(None, None, None, {declaration.agent: declaration}, False, None,
                             False, tuple(findings))
        raise ConfigurationError(f"--manifests {path}: neither a MAS nor an Agent manifest")
    raise ConfigurationError(f"--manifests {path}: no such file or folder")


def _read_mas(path: str, disclose: Disclosure) -> Manifests:
    document, problem = _read_yaml(path)
    if problem is not None:
        raise ConfigurationError(f"--manifests {path} {problem}")
    if _one_text(document, "kind") != "MAS":
        raise ConfigurationError(f"--manifests {path}: not a MAS manifest (kind: MAS)")
    findings: list[Finding] = []
    shown = disclose.path(path)
    if _has_repeats(document):
        findings.append(_repeats(path, disclose))
    folder = os.path.dirname(path)
    listed = _list(document, "spec", "agency", "agents")
    if listed is None:
        raise ConfigurationError(f"--manifests {path}: spec.agency.agents is not one list")
    nodes = _list(document, "spec", "workflow", "nodes")
    workflow = nodes is not None and bool(_values(document, "spec", "workflow"))
    delegations: dict[str, frozenset[str]] = {}
    for node in nodes or []:
        ident = _one_text(node, "id")
        targets = _list(node, "delegates_to")
        if ident is None or targets is None:
            findings.append(finding("capability.declaration-unavailable",
                                    f"{shown}: a workflow node without one id or with a malformed "
                                    "delegates_to; its delegations are unknown", shown,
                                    severity=Severity.WARNING))
            if ident is not None:
                delegations[ident] = frozenset({"\0unknown"})
            continue
        delegations[ident] = frozenset(t for t in targets if isinstance(t, str))
    # Several entries and sequential or parallel steps (workflow.py): a group run by an agent
    # declares that agent's delegations to the group's members.
    steps = _steps(document, shown, findings, delegations)
    workflow = workflow or bool(steps.entries or steps.delegations)
    agents: dict[str, AgentDeclaration] = {}
    for entry in listed:
        ident = _one_text(entry, "id")
        ref = _one_text(entry, "ref")
        if ident is None:
            findings.append(finding("capability.declaration-unavailable",
                                    f"{shown}: an agent entry without one id", shown,
                                    severity=Severity.WARNING))
            continue
        delegates = delegations.get(ident, frozenset()) if workflow else None
        if steps.problems:  # an unreadable step may declare any agent's delegations
            delegates = None
        if delegates is not None and "\0unknown" in delegates:
            delegates = None
        if ref is None:
            agents[ident] = AgentDeclaration(ident, None, None, None, {}, {}, False, delegates,
                                             "the agent entry names no manifest (ref)")
        else:
            agents[ident] = _read_agent(os.path.join(folder, ref), ident, delegates, findings,
                                        disclose)
        # The id names the agent even when its manifest is missing: its spans are then that
        # agent's, with declarations unknown, never an undeclared agent of their display name.
        agents[ident] = _with_ids(agents[ident], entry, findings, shown, disclose)
    findings.extend(_claimed_twice(agents, shown, disclose))
    for declaration in agents.values():
        if declaration.problem is not None:
            findings.append(finding(
                "capability.declaration-unavailable",
                f"agent {disclose.agent(declaration.agent)}: {declaration.problem}; its "
                "declarations are unknown", disclose.path(declaration.source or path),
                severity=Severity.WARNING))
    return Manifests(
        mas=_one_text(document, "metadata", "name"), mas_source=path,
        description=_one_text(document, "metadata", "description"), agents=agents,
        agents_listed=True, entry=_one_text(document, "spec", "workflow", "entry"),
        workflow=workflow, findings=tuple(findings), entries=steps.entries,
        entries_complete=not steps.problems)


def _steps(document: Any, shown: str, findings: list[Finding],
           delegations: dict[str, frozenset[str]]) -> Workflow:
    """The workflow's entries and steps; a group agent's members join its delegations."""
    spec_workflow = _values(document, "spec", "workflow")
    steps = read_workflow(spec_workflow[0] if len(spec_workflow) == 1 else None)
    for problem in steps.problems:
        findings.append(finding("capability.declaration-unavailable",
                                f"{shown}: {problem}; the agents it starts are unknown", shown,
                                severity=Severity.WARNING))
    for ident, members in steps.delegations.items():
        delegations[ident] = delegations.get(ident, frozenset()) | members
    return steps


def _claimed_twice(agents: dict[str, AgentDeclaration], shown: str,
                   disclose: Disclosure) -> Iterator[Finding]:
    """An agent_id several entries give names none of them (attribution.py): said so."""
    claimed: dict[str, list[str]] = {}
    for name, declaration in agents.items():
        for each in declaration.ids:
            claimed.setdefault(each, []).append(name)
    for each, names in sorted(claimed.items()):
        if len(names) > 1:
            yield finding(
                "capability.declaration-unavailable",
                f"{shown}: agent_id {disclose.agent(each)} is given to "
                f"{', '.join(disclose.agent(n) for n in sorted(names))}; it names none of them",
                shown, severity=Severity.WARNING)


def _with_ids(declaration: AgentDeclaration, entry: Any, findings: list[Finding], shown: str,
              disclose: Disclosure) -> AgentDeclaration:
    """The declaration with its mas.yaml entry's ``agent_id``: one string or a list of them."""
    value = entry.get("agent_id") if isinstance(entry, dict) else None
    if value is None:
        return declaration
    listed = value if isinstance(value, list) else [value]
    if not listed or not all(isinstance(v, str) and v for v in listed):
        findings.append(finding("capability.declaration-unavailable",
                                f"{shown}: agent {disclose.agent(declaration.agent)}: agent_id is "
                                "not a string or a list of strings; no id is matched to it",
                                shown, severity=Severity.WARNING))
        return declaration
    return declaration._replace(ids=frozenset(listed))


def _repeats(path: str, disclose: Disclosure) -> Finding:
    shown = disclose.path(path)
    return finding("json.duplicate-key", f"{shown}: a mapping repeats a key; where the repeated "
                   "values disagree, the declaration is treated as unknown", shown,
                   severity=Severity.WARNING)


def _read_agent(path: str, ident: str | None, delegates: frozenset[str] | None,
                findings: list[Finding], disclose: Disclosure,
                document: Any = None) -> AgentDeclaration:
    shown = disclose.path(path)
    if document is None:
        document, problem = _read_yaml(path)
        if problem is not None:
            return AgentDeclaration(ident or path, path, None, None, {}, {}, False, delegates,
                                    f"{shown} {problem}")
    if _has_repeats(document):
        findings.append(_repeats(path, disclose))
    name = _one_text(document, "metadata", "name")
    agent = ident or name
    if agent is None or _one_text(document, "kind") != "Agent":
        return AgentDeclaration(ident or path, path, None, None, {}, {}, False, delegates,
                                f"{shown} is not an agent manifest with one metadata.name")
    if ident is not None and name is not None and name != ident:
        findings.append(finding(
            "capability.declaration-unavailable",
            f"{shown}: metadata.name {disclose.agent(name)} differs from the id "
            f"{disclose.agent(ident)} in mas.yaml; the id is the agent's name in traces", shown,
            severity=Severity.WARNING))
    models_list = _list(document, "spec", "models")
    models: frozenset[str] | None
    if models_list is None:
        models = None
    else:
        names = [_one_text(m, "model") if isinstance(m, dict) else m for m in models_list]
        models = None if any(not isinstance(n, str) for n in names) else frozenset(
            n for n in names if isinstance(n, str))
    tools: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    complete = True
    folder = os.path.dirname(path)
    tool_entries = _list(document, "spec", "tools")
    if tool_entries is None:
        complete = False
    for entry in tool_entries or []:
        tool_name = _one_text(entry, "name") if isinstance(entry, dict) else None
        ref = _one_text(entry, "ref") if isinstance(entry, dict) else None
        if tool_name is None and ref is not None:
            tool_path = os.path.normpath(os.path.join(folder, ref))
            tool_doc, problem = _read_yaml(tool_path)
            if problem is None and _has_repeats(tool_doc):
                findings.append(_repeats(tool_path, disclose))
            tool_name = _one_text(tool_doc, "metadata", "name") if problem is None else None
            if tool_name is None:
                complete = False
                findings.append(finding(
                    "capability.declaration-unavailable",
                    f"agent {disclose.agent(agent)}: the tool manifest "
                    f"{disclose.path(tool_path)} "
                    f"{problem or 'names no single tool (metadata.name)'}",
                    disclose.path(tool_path), severity=Severity.WARNING))
                continue
            tools.setdefault(tool_name, tool_path)
            described = _one_text(tool_doc, "metadata", "description") or _one_text(
                tool_doc, "spec", "description")
            if described:
                descriptions.setdefault(tool_name, described.strip())
        elif tool_name is not None:
            tools.setdefault(tool_name, path)
        else:
            complete = False
    description = _one_text(document, "spec", "description") or _one_text(
        document, "metadata", "description")
    return AgentDeclaration(agent, path, description, models, tools, descriptions, complete,
                            delegates, None)


# --- bindings ---------------------------------------------------------------------------------


def read_bindings(path: str) -> Bindings:
    """``{"agents": {name: IRI|[IRI]}, "tools": {name: IRI|[IRI]}}`` (JSON, or YAML by suffix)."""
    if path.endswith((".yaml", ".yml")):
        document, problem = _read_yaml(path, "for a bindings file")
        if problem is not None:
            raise ConfigurationError(f"--bindings {path} {problem}")
        if _has_repeats(document):
            raise ConfigurationError(f"--bindings {path}: a mapping repeats a key")
    else:
        try:
            document = json.loads(
                read_bounded(path, CONFIGURATION_BYTES, "for a bindings file").decode("utf-8"),
                object_pairs_hook=_unique_pairs)
        except Unreadable as exc:
            raise ConfigurationError(f"--bindings {path} {exc}") from None
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise ConfigurationError(f"--bindings {path} is not JSON: {exc}") from None
    if not isinstance(document, dict) or set(document) - {"agents", "tools"}:
        raise ConfigurationError(
            f"--bindings {path}: expected an object with only \"agents\" and \"tools\"")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for section in ("agents", "tools"):
        table = document.get(section, {})
        if not isinstance(table, dict):
            raise ConfigurationError(f"--bindings {path}: {section} is not an object")
        out[section] = {}
        for name, value in table.items():
            iris = [value] if isinstance(value, str) else value
            if (not isinstance(name, str) or not isinstance(iris, list) or not iris
                    or not all(isinstance(i, str) and _IRI.fullmatch(i) for i in iris)):
                raise ConfigurationError(
                    f"--bindings {path}: {section}.{name} must be an absolute IRI or a non-empty "
                    "list of them")
            out[section][name] = tuple(dict.fromkeys(iris))
    return Bindings(path, out["agents"], out["tools"])


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the member {key} appears twice")
        out[key] = value
    return out


# --- registrations ----------------------------------------------------------------------------


def read_registrations(paths: list[str], profile: str, disclose: Disclosure) -> Registrations:
    """The capability IRIs valid registrations declare, judged as ``ioa-check audit`` does."""
    from .._checker import Checker
    from ..audit.inputs import documents
    from ..audit.judge import judge

    checker = Checker(profile)
    iris: dict[str, list[str]] = {}
    findings: list[Finding] = []
    for source, index, document, problems in documents(paths, limits=checker.limits):
        where = source if index is None else f"{source}#{index}"
        if document is None:
            codes = ", ".join(sorted({p.code for p in problems})) or "unreadable"
            findings.append(finding(
                "capability.unregistered",
                f"{disclose.path(where)} cannot be read as registrations ({codes}); it declares "
                "nothing", disclose.path(where), severity=Severity.WARNING))
            continue
        result, _ = judge(checker, document, source, index)
        if result.status == "valid" and result.id is not None:
            iris.setdefault(result.id, []).append(where)
        else:
            codes = ", ".join(sorted({r.code for r in result.reasons})) or "no reason"
            findings.append(finding(
                "capability.unregistered",
                f"the registration {disclose.path(where)} is {result.status} ({codes}); it "
                "declares nothing", disclose.path(where), severity=Severity.WARNING))
    return Registrations({k: tuple(v) for k, v in iris.items()}, tuple(findings))
