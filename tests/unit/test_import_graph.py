"""The package's modules import each other without cycles, and nothing outside it.

Outside it: the benchmarks (the `tiered_memory_benchmarks` distribution, which builds on
the package) and the tests; the package holds no benchmark module either.

Every import counts: at module level, inside functions, and under `TYPE_CHECKING`
(a type-only cycle is still two modules that cannot be understood one without the
other). A package's `__init__` counts only when it is named itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import langgraph_tiered_memory

PACKAGE = "langgraph_tiered_memory"
ROOT = Path(langgraph_tiered_memory.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules `name` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in modules:
                    found.add(sub)
                elif source in modules:
                    found.add(source)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_sees_type_only_and_function_level_imports(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.b import X\n"
        "def f():\n    from pkg import c\n"
        "from . import d\n"
    )
    modules = {m: Path("unused") for m in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d")}
    probe = tmp_path / "a.py"
    probe.write_text(source, encoding="utf-8")
    assert _imports("pkg.a", probe, modules) == {"pkg.b", "pkg.c", "pkg.d"}


def test_the_package_has_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles (every import counts, TYPE_CHECKING too): " + "; ".join(
        " <-> ".join(c) for c in found
    )


def _outside_imports(path: Path) -> set[str]:
    """The absolute imports of a source file that name the benchmarks or the tests."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return {n for n in found if n.split(".")[0] in ("tiered_memory_benchmarks", "tests")}


def test_the_package_holds_and_imports_no_benchmark_or_test_code() -> None:
    files = [p for p in ROOT.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    benchmark_files = [
        p.relative_to(ROOT).as_posix()
        for p in files
        if any("bench" in part for part in p.relative_to(ROOT).parts)
    ]
    assert not benchmark_files, f"benchmark code belongs in benchmarks/: {benchmark_files}"
    leaks = {
        name: sorted(found)
        for name, path in _modules().items()
        if (found := _outside_imports(path))
    }
    assert not leaks, f"the package imports the benchmarks or the tests: {leaks}"


def test_the_tiers_never_import_the_store_above_them() -> None:
    graph = import_graph()
    tiers = f"{PACKAGE}.store.tiers"
    upward = {
        (module, target)
        for module, targets in graph.items()
        if module.startswith(tiers)
        for target in targets
        if target.startswith(f"{PACKAGE}.store") and not target.startswith(tiers)
    }
    assert any(m.startswith(tiers) for m in graph)
    assert not upward, "store.tiers imports the store core: " + ", ".join(sorted(map(str, upward)))
