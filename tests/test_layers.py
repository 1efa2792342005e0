"""The package's layering, as the README's "How the code is laid out" describes it: no import
runs from a lower layer to a higher one, and no module imports itself back through another
(lazy imports inside functions count: they are the same dependency, paid later)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "grpo_doctor"
#: Modules that run a command: only the CLI (and api, the CLI's library face) sit above them.
COMMANDS = {"api", "cli", "audit", "compare", "fleet", "watch", "__main__"}


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
                if target and target != module:
                    found.add(target)
    return found


GRAPH = {m: _imports(m) for m in MODULES}
#: The one import allowed to run upward: Diagnosis._repr_markdown_, the notebook display hook,
#: renders the Markdown report (called by Jupyter only, never by the package itself).
DISPLAY_HOOKS = {("grpo_doctor.findings", "grpo_doctor.reporters.markdown")}


def _top(module: str) -> str:
    return [*module.split("."), ""][1]


def test_the_graph_sees_the_imports_it_checks():
    """A parser that found nothing would pass every other test here."""
    assert "grpo_doctor.engine" in GRAPH["grpo_doctor.api"]
    assert "grpo_doctor.api" in GRAPH["grpo_doctor.cli"]
    assert len(MODULES) > 50


#: The package's facade (``grpo_doctor/__init__``: ``grpo_doctor.diagnose_frame`` ...) sits with
#: the CLI at the top: it names every layer's public functions, lazily.
FACADE = "grpo_doctor"


@pytest.mark.parametrize("module", sorted(m for m in MODULES
                                          if m != FACADE and _top(m) not in ("api", "cli")))
def test_nothing_below_the_cli_imports_api(module):
    assert "grpo_doctor.api" not in GRAPH[module]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _top(m) == "reporters"))
def test_reporters_import_no_command(module):
    upward = {t for t in GRAPH[module] if _top(t) in COMMANDS}
    assert not upward, f"{module} imports {sorted(upward)}"


@pytest.mark.parametrize("layer", ["rules", "trends", "importers"])
def test_analysis_and_importers_import_no_reporter_or_command(layer):
    for module in (m for m in MODULES if _top(m) == layer):
        upward = {t for t in GRAPH[module] if _top(t) in COMMANDS | {"reporters"}}
        assert not upward, f"{module} imports {sorted(upward)}"


def test_no_import_cycle():
    """Tarjan's strongly connected components over every import, lazy ones included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if (v, w) in DISPLAY_HOOKS:
                continue
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
