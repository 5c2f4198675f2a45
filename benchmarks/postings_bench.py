"""Secondary index size and build time per index, against the data and one DuckDB scan of its column.

On ``secondary_bench``'s layouts of TPC-H lineitem (its data, cached under ``bench_data/``; by
default the ``--quick`` ones: SF0.1, 200 small files and 4 large ones), each index is built alone
on a fresh index of the table (``build(progress=False)`` then ``create_index`` + ``build_index``):

- ``value l_partkey``: a value index on an integer key (about 30 rows a key at SF1);
- ``value l_shipmode``: a value index on a string key with 7 values (dense: bitmaps);
- ``value l_comment``: a value index on a nearly unique string (the key is most of the bytes);
- ``term l_comment``: a term index (several words a row).

Size: the index's files plus its dictionary (``secondary_dict``) and manifest (the only secondary
index of its table, so all of both; each share is printed too),
against the data files (the issue's "of the data") and against the indexed column's compressed
chunks; for the term index also bytes per (word, row) pair. Build: the best of ``--repeat``
``build_index`` runs against the best DuckDB ``SELECT count(*), sum(hash(col))`` over every file,
in wall time and in CPU time of the process (DuckDB's threads included; on a machine shared with
other work, CPU time is the steadier of the two).
Run from the repository root::

    python -m benchmarks.postings_bench [--scale 0.1] [--files 200] [--large-files 4] [--repeat 3]
                                        [--indexes value:l_partkey,term:l_comment] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import machine_line, markdown_table
from benchmarks.secondary_bench import LARGE_ROW_GROUP, LayoutSpec, write_data
from index_store import open_table
from index_store.datagen.tpch import generate

INDEXES = ["value:l_partkey", "value:l_shipmode", "value:l_comment", "term:l_comment"]


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def column_bytes(files: Sequence[Path], column: str) -> int:
    """Compressed bytes of one column's chunks over the files."""
    total = 0
    for f in files:
        md = pq.ParquetFile(f).metadata
        j = md.schema.to_arrow_schema().get_field_index(column)
        total += sum(md.row_group(g).column(j).total_compressed_size for g in range(md.num_row_groups))
    return total


def scan_time(folder: Path, column: str, repeat: int) -> tuple[float, float]:
    """Best wall and best CPU seconds (this process, DuckDB's threads included) of a scan."""
    con = duckdb.connect()
    text = f"SELECT count(*), sum(hash({column})) FROM read_parquet('{folder}/*.parquet')"
    con.execute(text).fetchall()
    best, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        con.execute(text).fetchall()
        best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return best, cpu


def build_once(folder: Path, root: Path, kind: str, column: str, profile: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one ``build_index`` of a fresh one-index table."""
    shutil.rmtree(root, ignore_errors=True)
    t = open_table(folder, index_path=root)
    t.build(progress=False)
    t.create_index([column], index_type=kind)
    prof = cProfile.Profile() if profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    t.build_index(progress=False)
    took = time.perf_counter() - t0, time.process_time() - c0
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    return took


def pairs_of(root: Path) -> int:
    from index_store.partitions.secondary import read_manifest

    manifests = sorted((root / "secondary").glob("*.idx"))
    return int(np.sum(read_manifest(root, [str(p.relative_to(root)) for p in manifests[-1:]])["pairs"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--large-files", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--indexes", default=",".join(INDEXES))
    parser.add_argument("--layouts", default="small,large")
    parser.add_argument("--profile", action="store_true", help="cProfile the first build of each index")
    parser.add_argument("--workdir", type=Path, default=Path("bench_data/secondary_bench"))
    args = parser.parse_args(argv)
    work = args.workdir.resolve()
    tables = work / f"sf{args.scale:g}-{args.files}-{args.large_files}-seed0"
    every = (LayoutSpec("small", args.files, None), LayoutSpec("large", args.large_files, LARGE_ROW_GROUP))
    specs = [s for s in every if s.key in args.layouts.split(",")]
    print(machine_line(duckdb, pa, np, memory=True))
    source = generate(args.scale, work / "tpch")["lineitem"]
    write_data(source, tables, specs, 0)
    lines = []
    for spec in specs:
        folder = tables / spec.key
        files = sorted(folder.glob("*.parquet"))
        data = sum(p.stat().st_size for p in files)
        for item in args.indexes.split(","):
            kind, column = item.split(":")
            root = tables / f"{spec.key}-post-{kind}-{column}"
            builds = [
                build_once(folder, root, kind, column, args.profile and i == 0) for i in range(args.repeat)
            ]
            files_b, manifest_b = _du(root / kind), _du(root / "secondary")
            dict_b = _du(root / "secondary_dict")
            size = files_b + manifest_b + dict_b
            scan, scan_cpu = scan_time(folder, column, args.repeat)
            wall, cpu = min(b[0] for b in builds), min(b[1] for b in builds)
            col = column_bytes(files, column)
            per_pair = ""
            if kind == "term":
                per_pair = f"{size / max(pairs_of(root), 1):.2f} B / (word, row)"
            lines.append([
                f"{spec.key} ({len(files)} files)", f"{kind} {column}", f"{size / 1e6:.2f} MB",
                f"{size / data:.1%}", f"{files_b / data:.1%} / {dict_b / data:.1%} / {manifest_b / data:.1%}",
                f"{size / col:.0%}", per_pair, f"{wall * 1e3:.0f} / {cpu * 1e3:.0f} ms",
                f"{scan * 1e3:.1f} / {scan_cpu * 1e3:.1f} ms", f"{wall / scan:.1f}x / {cpu / scan_cpu:.1f}x",
            ])  # fmt: skip
            print(" | ".join(lines[-1]), file=sys.stderr, flush=True)
            shutil.rmtree(root, ignore_errors=True)
    print(
        markdown_table(
            ["layout", "index", "index + dictionary + manifest", "/ data files",
             "files / dictionary / manifest of the data", "/ column chunks", "term cost",
             "build_index: wall / CPU (best)", "DuckDB scan of the column: wall / CPU",
             "build / scan: wall / CPU"],
            lines,
        )
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
