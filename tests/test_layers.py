"""The architecture, held: the import graph of the package read from its source.

Every import counts, wherever it stands (at the top of a module, inside a function, under
``TYPE_CHECKING``): a deferred import is still a dependency. The layers, from the bottom:

* the core: ``_build``, ``_codes``, ``_findings``, ``_exceptions``, ``_files``, ``_vocab``, ``_iri``,
  ``_memo``, ``_status``, ``_version``, ``_runtime``, ``_instants``, ``_nearest``, ``_visible``,
  ``data``;
* the reference pipeline and the sources, in stage order: ``pipeline.intake``, then
  ``pipeline.provenance`` (the proofs the loader verifies), then ``sources`` (profiles,
  artifacts and registrations are read with the intake's strict JSON;
  retrieval fetches with it), then ``pipeline.contexts``, ``expansion``, ``shapes``,
  ``baseline``, ``store``, ``remedies``, ``constraints`` (a profile's own shapes, over the
  store), ``decision``, ``engine``;
* ``compiled`` (imports the pipeline; the pipeline never imports it);
* ``_checker``;
* the products: ``audit``, ``trace``, ``a2a``, ``negotiation``, ``service``, ``impact``;
* ``reporters``;
* ``cli``; and the package's face, ``__init__`` and ``__main__``.

A module imports only modules of its own layer or below, and no cycle exists at all.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ioa_semantic"
CORE = {"_build", "_codes", "_findings", "_exceptions", "_files", "_vocab", "_iri", "_memo", "_status",
        "_version", "_runtime", "_instants", "_nearest", "_visible", "data"}
STAGES = ("pipeline.intake", "pipeline.provenance", "sources", "pipeline.contexts",
          "pipeline.expansion",
          "pipeline.shapes", "pipeline.baseline", "pipeline.store", "pipeline.remedies",
          "pipeline.sparql", "pipeline.bounded", "pipeline.constraints",
          "pipeline.decision",
          "pipeline.engine")
ABOVE = ("compiled", "_checker", "products", "reporters", "cli", "face")


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(module: str) -> Iterator[str]:
    """The package's modules ``module`` imports (relative or absolute), each once."""
    tree = ast.parse(MODULES[module].read_text())
    # The package a relative import starts from: a package's own, for its __init__.
    parts = [] if module == "__init__" else module.split(".")
    package = parts if MODULES[module].name == "__init__.py" else parts[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("ioa_semantic"):
                stem = node.module.removeprefix("ioa_semantic").lstrip(".")
            else:
                continue
            for alias in node.names:  # `from . import x` imports the module x
                candidate = f"{stem}.{alias.name}" if stem else alias.name
                targets.append(candidate if candidate in MODULES else stem or "__init__")
        elif isinstance(node, ast.Import):
            targets = [a.name.removeprefix("ioa_semantic").lstrip(".") or "__init__"
                       for a in node.names if a.name.startswith("ioa_semantic")]
        for target in targets:
            if target in MODULES and target != module and target not in found:
                found.add(target)
                yield target


GRAPH = {module: sorted(_imports(module)) for module in MODULES}


def layer(module: str) -> int:
    """The layer of a module: its position from the bottom."""
    if module in CORE:
        return 0
    top = module.split(".")[0]
    for index, stage in enumerate(STAGES):
        if module == stage or (stage == "sources" and top == "sources"):
            return 1 + index
    group = {"audit": "products", "trace": "products", "a2a": "products", "impact": "products",
             "negotiation": "products", "service": "products",
             "__init__": "face", "__main__": "face"}.get(top, top)
    assert group in ABOVE, f"{module} is in no layer: name it in tests/test_layers.py"
    return 1 + len(STAGES) + ABOVE.index(group)


def test_every_module_is_in_a_layer_and_imports_only_its_layer_or_below() -> None:
    upward = [f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
              for module, targets in GRAPH.items() for target in targets
              if layer(target) > layer(module)]
    assert upward == []


def test_the_pipeline_and_the_sources_never_import_the_compiled_engine() -> None:
    reference = [m for m in MODULES if m.split(".")[0] in ("pipeline", "sources", "data")]
    assert len(reference) >= 10
    assert [(m, t) for m in reference for t in GRAPH[m] if t.startswith("compiled")] == []


def test_the_compiled_engine_is_beside_the_pipeline_and_imports_it() -> None:
    compiled = [m for m in MODULES if m.startswith("compiled.")]
    assert {t for m in compiled for t in GRAPH[m] if t.startswith("pipeline.")} >= {
        "pipeline.baseline", "pipeline.engine", "pipeline.decision", "pipeline.shapes"}
    # Only the Checker and what the products need of it (the audit's kinds, and the indexed
    # graph its compiled profile shapes read) reach inside.
    users = {m for m, targets in GRAPH.items() for t in targets
             if t.startswith("compiled") and not m.startswith("compiled")}
    assert users <= {"_checker", "__init__", "audit.kinds", "audit.workers",
                     "audit.constraints"}, users


def test_no_import_cycle_exists() -> None:
    # Tarjan's strongly connected components over the whole graph.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_graph_is_read_as_the_code_says() -> None:
    # The reader itself: a few imports known to exist, relative, deferred and type-only.
    assert "pipeline.intake" in GRAPH["compiled.reader"]
    assert "sources.loader" in GRAPH["pipeline.decision"]
    assert "cli.trace" in GRAPH["cli.main"]  # imported inside a function
    assert "data" in GRAPH["pipeline.store"]  # `from .. import data`
    assert layer("compiled.engine") > layer("pipeline.engine") > layer("sources.loader")


# Library modules that still print, each with why (what is left of issue 38, item 8): the
# service's own log lines on stderr, from its server and its worker pool (service/ was being
# changed elsewhere when the rule came).
_PRINTS_ALLOWED = {("service.app", "print"): 2, ("service.workers", "print"): 1}


def _command_line_work(module: str) -> Iterator[str]:
    """What ``module`` does that only the command line may: print, end the process with
    ``sys.exit`` (or ``exit``, ``quit``), or name an exit status."""
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("print", "exit", "quit"):
                yield func.id
            elif (isinstance(func, ast.Attribute) and func.attr == "exit"
                  and isinstance(func.value, ast.Name) and func.value.id == "sys"):
                yield "sys.exit"
        elif (isinstance(node, ast.Name) and node.id == "ExitStatus") or (
                isinstance(node, ast.alias) and node.name == "ExitStatus"):
            yield "ExitStatus"


def test_library_modules_never_print_exit_or_return_an_exit_status() -> None:
    """Checks and products return results and raise the errors of the package's tree; the
    command line (cli/) alone prints them, maps them to the contract's exit statuses
    (cli.main.said) and ends the process. _status defines the statuses; the face
    (``__main__``) runs the command line."""
    found: dict[tuple[str, str], int] = {}
    for module in MODULES:
        if module.split(".")[0] in ("cli", "_status", "__main__"):
            continue
        for what in _command_line_work(module):
            found[(module, what)] = found.get((module, what), 0) + 1
    assert found == _PRINTS_ALLOWED
