"""The package's layering, as the README's "How the code is laid out" describes it: no import
runs from a lower layer to a higher one, and no module imports itself back through another
(lazy imports inside functions count: they are the same dependency, paid later). There is no
exemption to either."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "grpo_doctor"

#: The layers, lowest first: a module imports from its own layer or below, never above. A name
#: is a module or subpackage of grpo_doctor ("" is the package's own __init__).
LAYERS: list[tuple[str, set[str]]] = [
    ("leaves anyone may import", {"errors", "exit_codes", "text", "escape", "version", "display",
                                  "lazy", "interrupts", "objstore", "files", "atomic",
                                  "metrics", "glossary", "endings"}),
    ("the records: a run's metrics, a diagnosis", {"store", "live_store", "findings",
                                                  "resumed"}),
    ("reading logs; pure statistics", {"importers", "trends"}),
    ("the W&B client and its cache", {"remote"}),
    ("a source by name (a path, or wandb:// fetched first)", {"sources"}),
    ("judging a run", {"rules", "recipe", "config", "hints", "root_cause", "engine", "run_settings",
                       "signs", "comparison", "audit_result", "discovery", "monitor", "notifiers"}),
    ("everything that prints", {"reporters"}),
    ("the commands", {"audit", "fleet", "ray_executor", "compare", "watch", "preflight",
                      "integrations"}),
    ("the library's face and the CLI", {"", "api", "cli", "__main__"}),
]
LEVEL = {name: level for level, (_, names) in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str) -> set[str]:
    """What ``module`` imports from the package, wherever the import stands (top, function,
    TYPE_CHECKING). Importing ``a.b.c`` runs the ``__init__`` of the subpackage ``a.b`` first,
    so from outside ``a.b`` that is an import of it too (inside it, the package is already
    running; the root's ``__init__`` runs before any module of the package)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith("grpo_doctor"):
                target = _resolve(name)
                if target:
                    found.add(target)
                    parent = target.rpartition(".")[0]
                    while "." in parent and not (module + ".").startswith(parent + "."):
                        found.add(parent)
                        parent = parent.rpartition(".")[0]
    return found - {module}


GRAPH = {m: _imports(m) for m in MODULES}


def _top(module: str) -> str:
    return [*module.split("."), ""][1]


def test_the_graph_sees_the_imports_it_checks():
    """A parser that found nothing would pass every other test here."""
    assert "grpo_doctor.engine" in GRAPH["grpo_doctor.api"]
    assert "grpo_doctor.api" in GRAPH["grpo_doctor.cli"]
    assert "grpo_doctor.remote.wandb_api" in GRAPH["grpo_doctor.sources"]  # inside a function
    assert "grpo_doctor.importers" in GRAPH["grpo_doctor.remote.wandb_cache"]  # a parent's init
    assert len(MODULES) > 50


def test_every_module_has_a_layer():
    assert {_top(m) for m in MODULES} <= set(LEVEL)
    assert set(LEVEL) <= {_top(m) for m in MODULES}, "a layer names a module that is gone"
    assert sum(len(names) for _, names in LAYERS) == len(LEVEL), "a module in two layers"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_runs_upward(module):
    here = LEVEL[_top(module)]
    upward = sorted(f"{t} ({LAYERS[LEVEL[_top(t)]][0]})" for t in GRAPH[module]
                    if LEVEL[_top(t)] > here)
    assert not upward, f"{module} ({LAYERS[here][0]}) imports {upward}"


def test_no_import_cycle():
    """Tarjan's strongly connected components over every import, lazy ones included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_cycle_check_finds_a_cycle(monkeypatch):
    """The check above, on a graph holding one circle, finds it."""
    monkeypatch.setitem(GRAPH, "grpo_doctor.text", GRAPH["grpo_doctor.text"] | {
        "grpo_doctor.store"})
    with pytest.raises(AssertionError, match=r"grpo_doctor\.store.*grpo_doctor\.text"):
        test_no_import_cycle()
