"""The shape of the code: modules by concept, small functions, no import cycles, and
adapters that use only the core's public names (DESIGN.md section 2)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "packages" / "octopoda-core" / "src" / "octopoda"
ADAPTERS = sorted(p for p in (ROOT / "packages").glob("octopoda-*/src/*") if p.name != "octopoda")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
# Functions allowed to be longer, each with the measurement that keeps it whole.
LONG_FUNCTIONS: dict[str, str] = {}
# The public surface adapters may import: the package itself and its public submodules.
PUBLIC_MODULES = {
    "octopoda",
    "octopoda.integrations",
    "octopoda.search",
    "octopoda.store",
    "octopoda.testing",
}


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path, top: Path) -> str:
    parts = list(path.relative_to(top.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@pytest.mark.parametrize("path", _sources(CORE), ids=lambda p: str(p.relative_to(CORE)))
def test_modules_stay_small(path: Path) -> None:
    lines = len(path.read_text("utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_functions_stay_short() -> None:
    long = []
    for folder in [CORE, *ADAPTERS]:
        for path in _sources(folder):
            for fn in _functions(ast.parse(path.read_text("utf-8"))):
                size = (fn.end_lineno or fn.lineno) - fn.lineno + 1
                where = f"{path.relative_to(ROOT)}:{fn.name}"
                if size > MAX_FUNCTION_LINES and where not in LONG_FUNCTIONS:
                    long.append(f"{where} ({size} lines)")
    assert long == []


def _imports(path: Path, top: Path) -> set[str]:
    """The modules of ``top``'s package that ``path`` imports at import time (not only
    under TYPE_CHECKING, not inside functions)."""
    tree = ast.parse(path.read_text("utf-8"))
    name = _module_name(path, top)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    body = list(tree.body)
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in [node] if not isinstance(node, ast.Try) else [*node.body]:
            if isinstance(sub, ast.ImportFrom):
                base = sub.module or ""
                if sub.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - sub.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in sub.names)
            elif isinstance(sub, ast.Import):
                found.update(alias.name for alias in sub.names)
    return found


def test_no_import_cycles() -> None:
    modules = {_module_name(p, CORE): p for p in _sources(CORE)}
    graph = {
        name: {m for m in _imports(path, CORE) if m in modules and m != name}
        for name, path in modules.items()
    }
    # a package's __init__ importing its own submodules is how packages work: leave those
    # edges out of the cycle search, they cannot form a cycle with the package's own modules
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


@pytest.mark.parametrize("folder", ADAPTERS, ids=lambda p: p.name)
def test_adapters_import_only_public_octopoda_names(folder: Path) -> None:
    private = []
    for path in _sources(folder):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for module in names:
                if module.split(".")[0] == "octopoda" and module not in PUBLIC_MODULES:
                    private.append(f"{path.relative_to(ROOT)}: {module}")
    assert private == []


def _defines_typed_records(tree: ast.Module) -> bool:
    bases = {"NamedTuple", "TypedDict"}
    return any(
        isinstance(node, ast.ClassDef)
        and any(isinstance(b, ast.Name) and b.id in bases for b in node.bases)
        for node in tree.body
    )


def _postpones_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )


def test_typed_records_evaluate_their_annotations() -> None:
    """A NamedTuple or TypedDict in a module with ``from __future__ import annotations``
    turns each field's annotation string into a ForwardRef, compiling it at import: about a
    tenth of ``from octopoda import AgentRuntime``. Such modules evaluate their annotations
    (quoting the few forward references) instead."""
    postponed = []
    for path in _sources(CORE):
        tree = ast.parse(path.read_text("utf-8"))
        if _defines_typed_records(tree) and _postpones_annotations(tree):
            postponed.append(str(path.relative_to(CORE)))
    assert postponed == []
