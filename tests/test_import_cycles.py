"""No import cycle among the modules of the three packages, counting imports inside functions too
(an import moved into a function to dodge a cycle is still one: the modules depend on each other).
Imports under ``if TYPE_CHECKING:`` are left out: they never run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hudi_expr", "index_store", "adapters")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The project's modules ``path`` imports: ``from a.b import c`` is ``a.b.c`` when that is a
    module, else ``a.b``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if _type_checking_only(node) for n in ast.walk(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(path, name, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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
                    found.append(sorted(component))
    return found


def test_the_finder_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_lazy_import_counts(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from adapters.cli.main import main\n", encoding="utf-8")
    assert imported(module, "adapters.cli.x", modules()) == {"adapters.cli.main"}


def cycles_in(package: str) -> list[list[str]]:
    inside = {m: {d for d in deps if d.split(".")[0] == package} for m, deps in graph().items()}
    return [c for c in cycles(inside) if c[0].split(".")[0] == package]


@pytest.mark.parametrize("package", ["index_store", "adapters"])
def test_no_import_cycle_inside_a_package(package: str) -> None:
    found = cycles_in(package)
    assert not found, f"import cycles in {package}: {found}"


# The core's nodes print and serialize themselves (``__str__``, ``to_json``) through modules that
# build nodes: lazy imports inside methods, known and kept; no new one may join them.
KNOWN_CORE_CYCLES = [
    [
        "hudi_expr.binding",
        "hudi_expr.expressions",
        "hudi_expr.printer",
        "hudi_expr.rows",
        "hudi_expr.serde",
        "hudi_expr.visitors",
    ],
    ["hudi_expr.footer", "hudi_expr.stats"],
]


def test_the_cores_cycles_are_only_the_known_ones() -> None:
    assert cycles_in("hudi_expr") == KNOWN_CORE_CYCLES


def test_packages_import_only_to_their_right() -> None:
    order = {package: i for i, package in enumerate(PACKAGES)}  # adapters -> index_store -> hudi_expr
    wrong = sorted(
        (m, d) for m, deps in graph().items() for d in deps if order[d.split(".")[0]] > order[m.split(".")[0]]
    )
    assert not wrong, f"imports against adapters -> index_store -> hudi_expr: {wrong}"
