"""Shared fixtures: the real Hudi tables of tests/data/hudi, extracted once per session."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hudi_data import DATA


@pytest.fixture(scope="session")
def hudi_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every zip of tests/data/hudi extracted once; name -> table root (the folder with .hoodie)."""
    base = tmp_path_factory.mktemp("hudi")
    roots = {}
    for archive in sorted(DATA.glob("*.zip")):
        target = base / archive.stem
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(target)
        (root,) = [p for p in target.iterdir() if p.is_dir() and p.name != "__MACOSX"]
        roots[archive.stem] = root
    return roots


@pytest.fixture
def copy_table(hudi_tables: dict[str, Path], tmp_path: Path) -> Callable[[str], Path]:
    """A writable copy of a real table, for tests that alter it."""

    def copy(name: str) -> Path:
        return Path(shutil.copytree(hudi_tables[name], tmp_path / name))

    return copy
