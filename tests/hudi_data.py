"""Where the real Hudi test tables live (tests/data/hudi), and their names by kind."""

from __future__ import annotations

import re
from pathlib import Path

DATA = Path(__file__).parent / "data" / "hudi"
COW_TABLES = sorted(p.stem for p in DATA.glob("v*.zip"))
MOR_TABLES = sorted(p.stem for p in DATA.glob("mor_*.zip"))


_FILE_GROUP = re.compile(r"^\.?([^_]+)_")


def file_group(name: str) -> str:
    """The file group (file id) a base or log file name belongs to; the name itself otherwise."""
    found = _FILE_GROUP.match(Path(name).name)
    return found.group(1) if found else name  # a log record's _hoodie_file_name is its file id


def groups_holding(root: Path, where: str, params: list[object]) -> set[str]:
    """File groups holding a row ``where`` is TRUE on: DuckDB over the hudi-rs snapshot."""
    import duckdb
    import hudi
    import pyarrow as pa

    con = duckdb.connect()
    con.register("snap", pa.Table.from_batches(hudi.HudiTable(str(root)).read()))
    rows = con.execute(f"SELECT DISTINCT _hoodie_file_name FROM snap WHERE {where}", params).fetchall()
    return {file_group(r[0]) for r in rows}
