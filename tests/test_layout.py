"""The package's shape: no import cycles (in bench/ either), and each layer imports only
the ones below it.

The graph is read from the source (every `import`, at module level or inside a function
or `TYPE_CHECKING` block), so a cycle hidden behind a lazy import is caught too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "transcli"
BENCH = PACKAGE.parent / "bench"

# Bottom to top: a module may import its own package and the packages below it.
LAYERS = ["system", "config", "model", "data", "rundir", "export", "inference", "training",
          "documents", "serve", "cli"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The transcli modules `path` imports (a name imported from a package counts as its
    submodule when there is one)."""
    found = set()
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([node.module] if node.module else []))
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                      for alias in node.names}
    return {name for name in found if name in modules}


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    paths = sorted(package.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imports(path, modules) - {module_name(path)} for path in paths}


def layer(module: str) -> str:
    """The subpackage a module belongs to ("" for the top-level modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else ""


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle as a path of modules, or [] (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return []

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize("package", [PACKAGE, BENCH], ids=["transcli", "bench"])
def test_no_import_cycles(package: Path) -> None:
    cycle = find_cycle(graph(package))
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_every_module_sits_in_a_layer() -> None:
    top_level = {"transcli", "transcli.__main__"}
    stray = [m for m in graph() if m not in top_level and layer(m) not in LAYERS]
    assert not stray, f"modules outside the layers {LAYERS}: {stray}"


def test_layers_import_only_downwards() -> None:
    wrong = [f"{module} imports {target}"
             for module, targets in graph().items() if layer(module) in LAYERS
             for target in targets if layer(target) in LAYERS
             and LAYERS.index(layer(target)) > LAYERS.index(layer(module))]
    assert not wrong, "\n".join(wrong)


def test_the_model_imports_no_data_training_or_command_line_code() -> None:
    allowed = {"model", "config", "system"}
    wrong = [f"{module} imports {target}" for module, targets in graph().items()
             if layer(module) == "model" for target in targets if layer(target) not in allowed]
    assert not wrong, "\n".join(wrong)


def test_the_architecture_doc_names_every_module_under_its_package() -> None:
    """docs/ARCHITECTURE.md has a section per package ("`pkg/` — ...") listing its
    modules: every module of the tree is named in its package's section."""
    doc = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^`(\w+)/` — .*\n((?:[- ].*\n)+)", doc, re.MULTILINE))
    missing = [f"{path.parent.name}/{path.name}" for path in sorted(PACKAGE.rglob("*.py"))
               if path.name != "__init__.py" and path.parent != PACKAGE
               and f"`{path.name}`" not in sections.get(path.parent.name, "")]
    assert set(sections) >= set(LAYERS) and not missing, missing


@pytest.mark.parametrize("package", [PACKAGE, BENCH], ids=["transcli", "bench"])
def test_functions_and_classes_stay_short(package: Path) -> None:
    """A newcomer reads a function at a glance and a class in one go: no function
    (or method) of the package (or of bench/) is longer than 60 lines, no class than 200."""
    too_long = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            limit = {ast.FunctionDef: 60, ast.AsyncFunctionDef: 60, ast.ClassDef: 200}.get(
                type(node))
            if limit and node.end_lineno - node.lineno + 1 > limit:
                too_long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} "
                                f"{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not too_long, too_long
