"""Where the real Hudi test tables live (tests/data/hudi), and their names by kind."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data" / "hudi"
COW_TABLES = sorted(p.stem for p in DATA.glob("v*.zip"))
MOR_TABLES = sorted(p.stem for p in DATA.glob("mor_*.zip"))
