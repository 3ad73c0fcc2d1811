"""The layers of dmm import only downwards, and no module imports itself back through others
(docs/architecture.md, "Layers"): read from the source with ``ast``, so an import inside a
function (dmm imports lazily) counts as much as one at the top of a module."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import dmm

PACKAGE = Path(dmm.__file__).parent

# The floor of each part of dmm: a module may import its own floor and the ones below it. The
# most specific name wins (dmm.background.client is low, the process it reaches is on top).
FLOORS = {
    "dmm": 0, "dmm.memory": 0, "dmm.text": 0, "dmm.errors": 0, "dmm.fsutil": 0,
    "dmm.markers": 0, "dmm.modelcheck": 0, "dmm.lru": 0, "dmm.resources": 0, "dmm.shellcmd": 0,
    "dmm.index": 1, "dmm.gitrepo": 1, "dmm.workspace": 1, "dmm.store": 1, "dmm.state": 1,
    "dmm.config": 1, "dmm.render": 1, "dmm.background": 1, "dmm.background.client": 1,
    "dmm.query": 2, "dmm.proposals": 2, "dmm.conflicts": 2, "dmm.usage": 2, "dmm.hooks": 2,
    "dmm.semantic": 2, "dmm.judge": 2, "dmm.team": 2, "dmm.audit": 2, "dmm.landing": 2,
    "dmm.lookup": 2, "dmm.ci": 2, "dmm.ci_setup": 2, "dmm.scaffold": 2,
    "dmm.agents": 3, "dmm.cli": 3, "dmm.__main__": 3, "dmm.background.daemon": 3,
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's dmm modules imported (``from dmm.x import y`` names dmm.x.y when y is
    a module, else dmm.x; a package's ``__init__`` is a module like any other)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] == "dmm":
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.split(".")[0] == "dmm")
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _floor(name: str) -> int:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in FLOORS:
            return FLOORS[".".join(parts[:end])]
    raise AssertionError(f"{name} has no floor in tests/test_layers.py: give it one")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


GRAPH = _imports(_modules())


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} (floor {_floor(m)}) imports {t} (floor {_floor(t)})"
                  for m, targets in graph.items() for t in targets if _floor(t) > _floor(m))


def test_every_module_imports_only_its_floor_and_the_ones_below():
    assert _upward(GRAPH) == []


def test_no_module_imports_itself_back_through_others():
    assert _cycles(GRAPH) == []


def test_the_check_sees_an_upward_import_and_a_cycle():
    # the checks themselves can fail: the index reaching the agents, the boundary of the
    # background process reaching the process, and a circle of three beside a module outside it
    graph = {"dmm.index.refresh": {"dmm.agents.hook"}, "dmm.agents.hook": set(),
             "dmm.background.client": {"dmm.background.daemon", "dmm.fsutil"},
             "dmm.background.daemon": {"dmm.background.client"}, "dmm.fsutil": set()}
    assert _upward(graph) == [
        "dmm.background.client (floor 1) imports dmm.background.daemon (floor 3)",
        "dmm.index.refresh (floor 1) imports dmm.agents.hook (floor 3)"]
    circle = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(circle) == [["a", "b", "c"]]
    assert _cycles(dict(circle, c=set())) == []
