"""The import structure of the `dlc` package, read from the source: nothing is imported.

Every `.py` file of the repository (the `dlc` package: `passes/codegen/conv.py` is
`dlc.passes.codegen.conv`; tests/, benchmarks/, examples/, build/, docs/, lit_tests/ and hidden
folders such as .venv are not part of it) is parsed, and each `import dlc.x`, `from dlc.x import
y`, relative import and `importlib.import_module("dlc.x")` with a literal name, at module level
or inside a function (a lazy import is still a dependency), is an edge of the import graph.
`from p import m` with `p.m` a module is an edge to `p.m`, otherwise to `p`. The parent packages
a module's import initializes are not edges (each submodule would make a cycle with its
package's `__init__`), nor are imports by a computed name (the discovery of `dialects/`,
`passes/`, `passes/lowering/` and `frontends/onnx_ops/` modules by pkgutil, the lazy exports of
`dlc/__init__.py` and `frontends/torch/__init__.py`).

The graph has no cycle, apart from the edges of `ALLOWED_EDGES` (reviewed, one reason each;
an entry that no longer matches an import fails too, so that the list only shrinks), and the
layering rules of `LAYERS` hold.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "dlc"
SKIPPED = {"tests", "benchmarks", "examples", "build", "docs", "lit_tests", "__pycache__"}

# (importer, imported): why this edge of a cycle stays. Reviewed: each is a lazy import
# (inside a function) closing a loop that is part of the design, not a helper to move.
ALLOWED_EDGES: dict[tuple[str, str], str] = {
    ("dlc.passes.registry", "dlc.passes.plugins"):
        "registered_passes() loads the installed plugins (entry points), whose load_plugin() "
        "lists dlc's own passes first through the registry: one recursion, by design",
    ("dlc.compiler", "dlc.profiler"):
        "CompiledModel.profile() is a shortcut to dlc.profiler.profile, which compiles the "
        "model again through the compiler's stage functions (run_stage, signature_of)",
    ("dlc.testing.fuzz", "dlc.testing.fuzz_index"):
        "the fuzz driver runs its index mode, a module built on fuzz's graph Builder and Value",
    ("dlc.testing.fuzz", "dlc.testing.fuzz_mutate"):
        "the fuzz driver runs its mutate mode, a module built on fuzz's graph builder",
}

# (modules under this prefix, the prefixes they may not import, why). Not enforced, because
# the code does it today: runtime.export -> compiler, passes (exporting compiles the model);
# frontends.torch.dynamo -> compiler (the torch.compile backend compiles); frontends.torch.
# aten_index -> passes.graph.match (it reuses the graph matcher).
LAYERS: list[tuple[str, tuple[str, ...], str]] = [
    ("dlc.dialects", ("dlc.passes", "dlc.frontends", "dlc.runtime", "dlc.tools", "dlc.compiler",
                      "dlc.profiler", "dlc.backend", "dlc.gpu"),
     "the dialect is the bottom layer: everything builds on it"),
    ("dlc.passes", ("dlc.frontends", "dlc.tools", "dlc.compiler", "dlc.profiler", "dlc.backend",
                    "dlc.gpu"),
     "passes transform IR: they know no model format, CLI or compile driver"),
    ("dlc.runtime", ("dlc.tools", "dlc.frontends", "dlc.profiler", "dlc.backend", "dlc.gpu"),
     "the runtime runs compiled code (and exported libraries without mlir)"),
    ("dlc.frontends", ("dlc.tools", "dlc.runtime", "dlc.profiler", "dlc.backend", "dlc.gpu"),
     "frontends build dlc IR from models"),
    ("dlc.errors", ("dlc.",), "the error classes import nothing of dlc"),
    ("dlc.timings", ("dlc.",), "the timers import nothing of dlc"),
]
LIBRARY = ("dlc.dialects", "dlc.passes", "dlc.runtime", "dlc.frontends", "dlc.compiler",
           "dlc.profiler", "dlc.backend", "dlc.errors", "dlc.timings")  # ... never import tools
# nor the QA harnesses (dlc.testing: fuzzers, conformance runner), which only the command line
# (`dlc fuzz`, `dlc conformance`, bisect's comparison) and the harnesses themselves import


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.path}:{self.line})"


def modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, whether it is a package's __init__)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if any(p in SKIPPED or p.startswith(".") for p in parts[:-1]):
            continue
        names = [package, *parts[:-1]]
        is_package = parts[-1] == "__init__.py"
        if not is_package:
            names.append(parts[-1][:-3])
        found[".".join(names)] = (path.relative_to(root), is_package)
    return found


def _literal_import(node: ast.Call) -> str | None:
    """The name of `importlib.import_module("...")` / `import_module("...")` with a literal."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "import_module" or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) \
        else None


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> tuple[set[str], list[Edge]]:
    """The package's modules and every import edge between two of them (module-level and
    function-level), from the source."""
    found = modules(root, package)

    def resolve(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    def inside(name: str) -> bool:
        return name == package or name.startswith(package + ".")

    edges = []
    for module, (path, is_package) in found.items():
        tree = ast.parse((root / path).read_text(encoding="utf-8"), str(path))
        here = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names if inside(a.name)]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if not inside(source):
                    continue
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in found
                           else resolve(source) for a in node.names]
            elif isinstance(node, ast.Call):
                name = _literal_import(node)
                if name is not None and inside(name):
                    targets = [resolve(name)]
            for target in targets:
                if target is not None and target != module:
                    edges.append(Edge(module, target, path, node.lineno))
    return set(found), edges


def _adjacency(edges: list[Edge]) -> dict[str, dict[str, Edge]]:
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
    return graph


def strongly_connected(nodes: set[str], graph: Mapping[str, Mapping[str, Edge]]) -> list[list[str]]:
    """The components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, {})))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def a_cycle(component: list[str], graph: Mapping[str, Mapping[str, Edge]]) -> list[Edge]:
    """One cycle through the first module of `component` (shortest, by breadth-first search)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target, edge in sorted(graph.get(node, {}).items()):
                if target not in members:
                    continue
                if target == start:
                    cycle = [edge]
                    while cycle[0].source != start:
                        cycle.insert(0, came_from[cycle[0].source])
                    return cycle
                if target not in came_from:
                    came_from[target] = edge
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # (a component always has one)


def cycles(nodes: set[str], edges: list[Edge],
           allowed: Mapping[tuple[str, str], str] = ALLOWED_EDGES) -> list[list[Edge]]:
    """One cycle per strongly connected component of the graph without the `allowed` edges."""
    graph = _adjacency([e for e in edges if (e.source, e.target) not in allowed])
    return [a_cycle(c, graph) for c in strongly_connected(nodes, graph)]


def describe(cycle: list[Edge], component: list[str] | None = None) -> str:
    names = " -> ".join([cycle[0].source] + [e.target for e in cycle])
    more = "" if not component or len(component) == len(cycle) else \
        f"\n    (one cycle of {len(component)} modules that import each other: " \
        f"{', '.join(component)})"
    return names + "\n" + "\n".join(f"    {e}" for e in cycle) + more


@pytest.fixture(scope="module")
def graph() -> tuple[set[str], list[Edge]]:
    return import_graph()


def test_the_graph_sees_the_package(graph) -> None:
    """(A scanner that finds nothing passes every other test.)"""
    nodes, edges = graph
    assert {"dlc", "dlc.compiler", "dlc.passes.codegen.conv", "dlc.passes.codegen.conv_common",
            "dlc.tools.dlc_cli", "dlc.testing.fuzz"} <= nodes
    assert not any(n.startswith(("dlc.tests", "dlc.benchmarks", "dlc.examples", "dlc..venv",
                                 "dlc.build")) for n in nodes)
    pairs = {(e.source, e.target) for e in edges}
    assert ("dlc.passes.codegen.conv", "dlc.passes.codegen.packed_conv") in pairs
    assert ("dlc.passes.codegen.packed_conv", "dlc.passes.codegen.conv_common") in pairs


def test_no_import_cycles(graph) -> None:
    nodes, edges = graph
    kept = _adjacency([e for e in edges if (e.source, e.target) not in ALLOWED_EDGES])
    components = strongly_connected(nodes, kept)
    assert not components, \
        "import cycles among dlc's modules (module-level or in functions):\n" + \
        "\n".join(describe(a_cycle(c, kept), c) for c in components)


def test_allowed_edges_are_still_imports(graph) -> None:
    """An allowed edge whose import is gone leaves the list (it may only shrink)."""
    _, edges = graph
    pairs = {(e.source, e.target) for e in edges}
    stale = [f"{s} -> {t}" for s, t in ALLOWED_EDGES if (s, t) not in pairs]
    assert not stale, f"ALLOWED_EDGES names imports that no longer exist: {stale}"


def test_layering(graph) -> None:
    _, edges = graph

    def under(module: str, prefix: str) -> bool:
        return module.startswith(prefix) if prefix.endswith(".") \
            else module == prefix or module.startswith(prefix + ".")

    broken = [f"{e}: {prefix} may not import {banned} ({why})"
              for prefix, bans, why in LAYERS for e in edges if under(e.source, prefix)
              for banned in bans if under(e.target, banned)]
    broken += [f"{e}: only dlc.tools imports dlc.tools (the command line sits on top)"
               for e in edges if any(under(e.source, p) for p in LIBRARY)
               and under(e.target, "dlc.tools")]
    broken += [f"{e}: only dlc.tools and dlc.testing import dlc.testing (QA harnesses are no "
               "part of the library)"
               for e in edges if under(e.target, "dlc.testing")
               and not any(under(e.source, p) for p in ("dlc.tools", "dlc.testing"))]
    assert not broken, "layering rules broken:\n" + "\n".join(broken)


def test_the_scanner_sees_function_level_and_relative_cycles(tmp_path: Path) -> None:
    """The test itself: a cycle closed by a lazy import, one by a relative import and one by
    import_module("...") are found; a package's __init__ importing its submodule is not one."""
    files = {
        "__init__.py": "from pkg import a\n",
        "a.py": "import pkg.b\n",
        "b.py": "def later():\n    from pkg.a import thing\n",
        "sub/__init__.py": "",
        "sub/c.py": "from . import d\n",
        "sub/d.py": "def f():\n    from ..sub.c import x\n",
        "e.py": "import importlib\nimportlib.import_module('pkg.f')\n",
        "f.py": "def g():\n    from pkg import e\n",
        "tests/t.py": "import pkg.tests.u\n",
        "tests/u.py": "import pkg.tests.t\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    nodes, edges = import_graph(tmp_path, "pkg")
    assert "pkg.tests.t" not in nodes
    found = {frozenset(e.source for e in c) for c in cycles(nodes, edges, {})}
    assert found == {frozenset({"pkg.a", "pkg.b"}), frozenset({"pkg.sub.c", "pkg.sub.d"}),
                     frozenset({"pkg.e", "pkg.f"})}
    assert cycles(nodes, edges, {("pkg.b", "pkg.a"): "", ("pkg.sub.d", "pkg.sub.c"): "",
                                 ("pkg.f", "pkg.e"): ""}) == []


def test_every_package_folder_is_installed():
    """pyproject's `packages` lists every folder of the package that has an `__init__.py` (a
    wheel leaves out the others: `dlc.llm` was missing when llm.py became a folder)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    folders = {".".join((PACKAGE, *path.parent.relative_to(ROOT).parts))
               for path in ROOT.rglob("__init__.py")
               if not SKIPPED.intersection(path.relative_to(ROOT).parts)
               and not any(p.startswith(".") for p in path.relative_to(ROOT).parts)}
    assert folders - listed == set()
