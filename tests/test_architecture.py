"""The house rules, read from the imports (docs/architecture.md).

Every file under promop/ is parsed with `ast`; every import counts, including
function-level ones, those under `if TYPE_CHECKING:` (a type is a dependency
too: a controller may not even name another's types) and
`importlib.import_module("promop.x")` with a literal name. The test fails on a
cycle between files (of imports that run: an `if TYPE_CHECKING:` import that
names the object holding a back-reference, e.g. a server's Sandbox, runs
nothing and makes no cycle), a controller importing another controller, anything below the top importing the sandbox or a command,
`promop.kube` importing the rest of promop, the reloader importing promop, the
sandbox importing a controller, and a private name imported across modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "promop"
CONTROLLERS = ("operator", "adapter", "autoscaler", "recommender", "admission")
TOP = ("commands", "demos", "cli", "__main__")



def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


class Imports:
    """(target module, imported name or None) for every import in one file."""

    def __init__(self, path: Path, modules: set[str], root: Path = ROOT) -> None:
        self.module = module_name(path, root)
        self.is_package = path.name == "__init__.py"
        self.modules = modules
        self.edges: list[tuple[str, str | None]] = []
        self.type_only: set[int] = set()  # indexes into edges of imports under `if TYPE_CHECKING:`
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        typing_nodes = {id(n) for block in ast.walk(tree) if _is_type_checking_block(block)
                        for stmt in block.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            before = len(self.edges)
            self._read(node)
            if id(node) in typing_nodes:
                self.type_only.update(range(before, len(self.edges)))

    def runtime_targets(self) -> set[str]:
        """What this module imports when it runs (not under `if TYPE_CHECKING:`)."""
        return {t for i, (t, _) in enumerate(self.edges) if i not in self.type_only}

    def _read(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.edges.append((self._known(alias.name), None))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(self.module, self.is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in self.modules:  # `from promop.x import y` where y is a module
                    self.edges.append((sub, None))
                else:
                    self.edges.append((self._known(base), alias.name))
        elif isinstance(node, ast.Call) and _is_import_module(node):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self.edges.append((self._known(arg.value), None))
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                prefix = str(arg.values[0].value).rstrip(".")  # f"promop.commands.{name}": the package
                self.edges.append((self._known(prefix), None))

    def _known(self, name: str) -> str:
        """The longest prefix of `name` that is a module of ours (else `name`)."""
        parts = name.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in self.modules:
                return candidate
            parts.pop()
        return name


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _is_import_module(node: ast.Call) -> bool:
    f = node.func
    named = (isinstance(f, ast.Attribute) and f.attr == "import_module") or \
        (isinstance(f, ast.Name) and f.id == "import_module")
    return named and bool(node.args)


def _files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _graph() -> dict[str, Imports]:
    files = _files()
    modules = {module_name(p) for p in files}
    return {module_name(p): Imports(p, modules) for p in files}


GRAPH = _graph()


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def promop_edges() -> list[tuple[str, str, str | None]]:
    return [(m, t, n) for m, imp in GRAPH.items() for t, n in imp.edges
            if (t == "promop" or t.startswith("promop.")) and t != m]


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.add(item)
                    if item == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def _edge_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in GRAPH}
    for m, imports in GRAPH.items():
        # promop/__init__ holds only the version
        graph[m] = {t for t in imports.runtime_targets() if t in GRAPH and t != "promop" and t != m}
    return graph


def test_the_reader_sees_function_level_and_importlib_imports() -> None:
    # The rules below are only as good as the reader: these edges exist in the code base as it is.
    cli_targets = {t for t, _ in GRAPH["promop.cli"].edges}
    assert "promop.commands" in cli_targets  # importlib.import_module(f"promop.commands.{name}")
    run_targets = {t for t, _ in GRAPH["promop.commands.run"].edges}
    assert "promop.operator.app" in run_targets  # imported inside run()


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_files() -> None:
    cycles = _cycles(_edge_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def _violations(rule) -> list[str]:
    return sorted(f"{m} -> {t}" for m, t, _ in promop_edges()
                  if rule(m, t))


def test_no_controller_imports_another_controller() -> None:
    def rule(m: str, t: str) -> bool:
        return layer(m) in CONTROLLERS and layer(t) in CONTROLLERS and layer(m) != layer(t)

    assert not _violations(rule)


def test_only_the_top_imports_the_sandbox_or_a_command() -> None:
    def rule(m: str, t: str) -> bool:
        return layer(m) not in TOP and layer(t) in ("sandbox", "commands") and layer(m) != layer(t)

    assert not _violations(rule)


def test_kube_runtime_imports_nothing_else_of_promop() -> None:
    # `promop` itself (promop/__init__.py) holds only __version__, for the User-Agent: not a layer.
    assert not _violations(lambda m, t: layer(m) == "kube" and layer(t) != "kube" and t != "promop")


def test_reloader_imports_nothing_of_promop() -> None:
    reloader = ROOT / "reloader"
    if not reloader.is_dir():
        pytest.skip("no reloader/ in this checkout")
    offenders = []
    for path in sorted(reloader.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n == "promop" or n.startswith("promop.")]
    assert not offenders


def test_sandbox_imports_no_controller() -> None:
    assert not _violations(lambda m, t: layer(m) == "sandbox" and layer(t) in CONTROLLERS)


def test_no_private_name_imported_across_modules() -> None:
    offenders = sorted(
        f"{m} imports {t}.{n}" for m, t, n in promop_edges()
        if n and n.startswith("_") and not n.startswith("__") and t != m)
    assert not offenders


def test_type_checking_imports_are_read_but_make_no_cycle(tmp_path: Path) -> None:
    (tmp_path / "promop").mkdir()
    a = tmp_path / "promop" / "a.py"
    a.write_text("from typing import TYPE_CHECKING\nimport promop.b\nif TYPE_CHECKING:\n    from promop.c import C\n")
    imports = Imports(a, {"promop.a", "promop.b", "promop.c"}, root=tmp_path)
    assert {t for t, _ in imports.edges} == {"typing", "promop.b", "promop.c"}
    assert imports.runtime_targets() == {"typing", "promop.b"}
