"""Writing a merge-on-read Hudi table of TPC-H lineitem with ``index_store.datagen.hudi_mor``, and
reading it back with hudi-rs.

What it measures: lineitem at ``--scale`` (SF 0.5: 3.0 million rows), with a record key
``l_key = l_orderkey * 8 + l_linenumber`` and an ordering field ``ts`` (0), written as a
merge-on-read table of ``--file-groups`` file groups clustered by ``l_shipdate`` (the first delta
commit, base files only); then one delta commit touching every fifth file group: 10% of their rows
updated (``ts`` 1, ``l_comment`` upper-cased), 1% deleted. Timed: the base write, picking the
changes, the delta commit, the expected snapshot, and hudi-rs's ``HudiTable.read()``; sizes of the
base files, log files and ``.hoodie/``; hudi-rs's rows must equal the expected ones in count, keys
and ``l_comment``. Target: the whole write (base and delta commit) well under a minute.

Run from the repository root::

    python -m benchmarks.mor_datagen_bench [--scale 0.5] [--file-groups 200] [--table-version 9]
                                           [--workdir bench_data/mor_datagen_bench] [--keep]

TPC-H data is cached in ``bench_data/tpch``; the table folder is removed at the end unless
``--keep``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import hudi
import numpy as np
import pyarrow as pa

from benchmarks.common import fmt_mb, machine_line, markdown_table, met
from benchmarks.mor_lineitem import changes, lineitem
from index_store.datagen.hudi_mor import write_mor_table


def _size(root: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in root.rglob(pattern) if p.is_file() and ".hoodie" not in p.parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--file-groups", type=int, default=200)
    parser.add_argument("--table-version", type=int, default=9, choices=(6, 8, 9))
    parser.add_argument("--workdir", default="bench_data/mor_datagen_bench")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)

    root = Path(args.workdir).resolve() / "lineitem_mor"  # hudi-rs takes absolute paths only
    rows = lineitem(args.scale)
    t0 = time.perf_counter()
    table = write_mor_table(
        root,
        rows,
        record_key="l_key",
        ordering_field="ts",
        file_groups=args.file_groups,
        cluster_by="l_shipdate",
        table_version=args.table_version,
        overwrite=True,
    )
    t1 = time.perf_counter()
    touched = list(range(0, len(table.file_groups), 5))
    commit = changes(table.rows_in(touched))
    t2 = time.perf_counter()
    table.append(commit)
    t3 = time.perf_counter()
    expected = table.expected
    t4 = time.perf_counter()
    got = pa.Table.from_batches(hudi.HudiTable(str(root)).read())
    t5 = time.perf_counter()

    got = got.select(["l_key", "l_comment"]).sort_by("l_key")
    same = got.num_rows == expected.num_rows and got.equals(expected.select(["l_key", "l_comment"]))
    n_updates = commit.updates.num_rows if commit.updates is not None else 0
    print(machine_line(pa, np, hudi))
    print(
        f"lineitem SF {args.scale:g}: {rows.num_rows:,} rows, {len(table.file_groups)} file groups, "
        f"table version {args.table_version}; delta commit over {len(touched)} groups: "
        f"{n_updates:,} updates, {len(commit.deletes or []):,} deletes"
    )
    print(
        markdown_table(
            ["step", "seconds"],
            [
                ["base files (first delta commit)", f"{t1 - t0:.1f}"],
                ["picking the changes (rows_in)", f"{t2 - t1:.1f}"],
                ["delta commit (log files)", f"{t3 - t2:.1f}"],
                ["expected snapshot", f"{t4 - t3:.1f}"],
                ["hudi-rs read()", f"{t5 - t4:.1f}"],
            ],
        )
    )
    base, logs = _size(root, "*.parquet"), _size(root, ".*.log.*")
    meta = sum(p.stat().st_size for p in (root / ".hoodie").rglob("*") if p.is_file())
    print(f"sizes: base files {fmt_mb(base)}, log files {fmt_mb(logs)}, .hoodie {fmt_mb(meta)}")
    print(f"hudi-rs rows {got.num_rows:,}, expected {expected.num_rows:,}, equal: {met(same)}")
    print(f"write under a minute: {met(t1 - t0 + t3 - t2 < 60)}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
