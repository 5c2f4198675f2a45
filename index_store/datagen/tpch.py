"""TPC-H data for the demo, the tests and the benchmarks: ``tpchgen-cli`` output, rewritten as many files.

``generate`` runs the ``tpchgen-cli`` binary once per scale factor (cached); ``write_files`` lays one
table out as about ``n_files`` parquet files: clustered by a column, randomly, or hive-partitioned.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["generate", "plain_schema", "tpchgen_binary", "write_files"]


def tpchgen_binary() -> str:
    """The ``tpchgen-cli`` executable: next to this Python interpreter, else on ``PATH``."""
    local = Path(sys.executable).parent / "tpchgen-cli"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise FileNotFoundError(
            "tpchgen-cli not found next to the Python interpreter nor on PATH: "
            "install the dev dependencies (uv sync) or `pip install tpchgen-cli`"
        )
    return found


def generate(
    scale: float, out_dir: str | os.PathLike[str], tables: Sequence[str] = ("lineitem", "orders")
) -> dict[str, Path]:
    """TPC-H ``tables`` at ``scale``, one parquet file each, in ``out_dir/sf<scale>`` (reused if there)."""
    cache = Path(out_dir) / f"sf{scale:g}"
    paths = {name: cache / f"{name}.parquet" for name in tables}
    missing = [name for name, path in paths.items() if not path.is_file()]
    if missing:
        # Generate into a private folder, then move into place: an interrupted run leaves no half file.
        tmp = cache.with_name(f"{cache.name}.tmp-{uuid.uuid4().hex[:8]}")
        tmp.mkdir(parents=True)
        try:
            cmd = [tpchgen_binary(), "parquet", "-s", f"{scale:g}", f"--tables={','.join(missing)}"]
            run = subprocess.run([*cmd, f"--output-dir={tmp}"], capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}): {run.stderr.strip()}")
            cache.mkdir(parents=True, exist_ok=True)
            for name in missing:
                os.replace(tmp / f"{name}.parquet", paths[name])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return paths


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``string_view`` (and ``binary_view``) fields as plain ``string`` (``binary``)."""
    plain = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
    return pa.schema([f.with_type(plain.get(f.type, f.type)) for f in schema], metadata=schema.metadata)


def _ordered(table: pa.Table, order_by: str | None, rng: np.random.Generator) -> pa.Table:
    if order_by is None:
        return table.take(pa.array(rng.permutation(table.num_rows)))
    return table.sort_by(order_by)  # a stable sort: ties keep the source order


def _cuts(rows: int, n_files: int) -> list[tuple[int, int]]:
    """``n_files`` contiguous (offset, length) slices of ``rows`` rows, sizes within one row."""
    bounds = np.linspace(0, rows, max(1, min(n_files, rows)) + 1).round().astype(np.int64)
    return [(int(lo), int(hi - lo)) for lo, hi in itertools.pairwise(bounds)]


def _write_slices(table: pa.Table, folder: Path, n_files: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (offset, length) in enumerate(_cuts(table.num_rows, n_files)):
        path = folder / f"part-{i:05d}.parquet"
        pq.write_table(table.slice(offset, length), path)
        paths.append(path)
    return paths


def _folder_value(value: object) -> str:
    """A partition value as a folder name segment: URL-encoded, as DuckDB writes it."""
    return "__HIVE_DEFAULT_PARTITION__" if value is None else quote(str(value), safe="")


def write_files(
    source: Path,
    dest: Path,
    n_files: int,
    *,
    order_by: str | None = "l_shipdate",
    hive_by: str | None = None,
    seed: int = 0,
) -> list[Path]:
    """Write the parquet table ``source`` as about ``n_files`` files under ``dest``; returns them, sorted.

    ``order_by`` clusters rows by that column (``None``: shuffled with ``seed``); ``hive_by`` writes
    ``<hive_by>=<value>/part-*.parquet`` folders, without that column in the files, with files per
    partition in proportion to its rows."""
    if n_files < 1:
        raise ValueError(f"n_files must be at least 1, got {n_files}")
    table = pq.read_table(source)
    table = table.cast(plain_schema(table.schema))
    rng = np.random.default_rng(seed)
    table = _ordered(table, order_by, rng)
    if hive_by is None:
        return _write_slices(table, Path(dest), n_files)

    # Group rows by partition value with one stable sort: within a value, rows keep their order above.
    key = table[hive_by]
    order = pc.array_sort_indices(key, null_placement="at_end")
    grouped = table.take(order)
    values, counts = pc.value_counts(grouped[hive_by]).flatten()  # in order of first appearance
    data = grouped.drop_columns([hive_by])
    paths: list[Path] = []
    offset = 0
    for value, count in zip(values.to_pylist(), counts.to_pylist(), strict=True):
        part = data.slice(offset, count)
        share = max(1, round(n_files * count / table.num_rows))
        paths += _write_slices(part, Path(dest) / f"{hive_by}={_folder_value(value)}", share)
        offset += count
    return sorted(paths)
