"""docs/architecture.md names every module of the three packages, by its path inside its package
(a sub-package's ``__init__.py`` by its folder, ``secondary/``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hudi_expr", "index_store", "adapters")


def test_every_module_is_in_the_architecture_page() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [
        path.relative_to(ROOT / package).as_posix()
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "__init__.py" or path.parent != ROOT / package
    ]
    missing = [m for m in modules if f"`{m.removesuffix('__init__.py')}`" not in text]
    assert not missing, f"docs/architecture.md does not name these modules (one line each): {missing}"
