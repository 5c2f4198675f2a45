"""Shared fixtures: the real Hudi tables of tests/data/hudi, extracted once per session, and one
local Spark session."""

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


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One real local Spark session (``local[2]``, 1 GB driver, UI off) for the whole test run."""
    from adapters.spark import local_session

    session = local_session(app_name="hudi-index-tests", memory="1g")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
