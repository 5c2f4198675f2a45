"""Hudi's metadata table as the index vs this project's own index, from a cold open (issue 24, item 3).

What it measures, per real table with a metadata table (``tests/data/hudi/*.zip``, extracted to a
scratch folder, each run on a fresh copy, page cache warm):

1. ``metadata: first prune``: ``open_table(copy)`` (no build) and one ``prune`` (``amount > 1000``):
   the metadata table opened, its ``column_stats`` decoded, the predicate evaluated;
2. ``metadata: tag 1,000``: then ``tag`` of 1,000 keys (the table's own keys, then new ones) from
   its ``record_index`` by point lookups;
3. ``own: build + first prune``: ``open_table(copy, source="own")``, ``build`` (every footer read),
   then the same ``prune``;
4. ``own: tag 1,000``: then the same ``tag`` (key ranges, blooms, reading candidate keys).

Answers are checked: both kept-file sets hold every file the other keeps where Hudi has statistics,
and both tags name a file for the table's keys. The real tables are small (2 to 9 data files, at
most 20 keys): the times are fixed costs (opening, decoding, building), not scaling. The best of
``--repeat`` runs is printed.

    python -m benchmarks.hudi_metadata_bench [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import zipfile
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import fmt_ms, machine_line, markdown_table
from hudi_expr import col
from index_store import open_table

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "hudi"
TABLES = (
    "v9_txns_simple_meta",
    "v9_txns_complex_meta",
    "v9_txns_nonpart_meta",
    "mor_avro_v9_txns_simple_meta",
    "v9_timebasedkeygen_epochmillis",
)
KEYS = 1000


def _extract(name: str, scratch: Path) -> Path:
    target = scratch / "src" / name
    with zipfile.ZipFile(DATA / f"{name}.zip") as zf:
        zf.extractall(target)
    (root,) = [p for p in target.iterdir() if p.is_dir() and p.name != "__MACOSX"]
    return root


def _keys(root: Path) -> list[str]:
    found = open_table(root).reader.listing().files
    own: list[str] = []
    for f in found:
        if f.path.endswith(".parquet"):
            own += pq.read_table(root / f.path, columns=["_hoodie_record_key"]).column(0).to_pylist()
    own = list(dict.fromkeys(own))
    return own + [f"NEW-{i:06d}" for i in range(KEYS - len(own))]


def _run(src: Path, scratch: Path, keys: list[str], i: int) -> dict[str, float | int]:
    expr = col("amount") > Decimal("1000")
    copy = Path(shutil.copytree(src, scratch / f"run{i}-hudi"))
    t0 = time.perf_counter()
    table = open_table(copy)
    kept = table.prune(expr)
    t1 = time.perf_counter()
    tagged = table.tag(pa.array(keys, pa.string()))
    t2 = time.perf_counter()
    copy = Path(shutil.copytree(src, scratch / f"run{i}-own"))
    t3 = time.perf_counter()
    own = open_table(copy, source="own")
    own.build(progress=False)
    own_kept = own.prune(expr)
    t4 = time.perf_counter()
    own_tagged = own.tag(pa.array(keys, pa.string()))
    t5 = time.perf_counter()
    names = {Path(f).name for f in kept.files}
    own_names = {Path(f).name for f in own_kept.files}
    assert own_names <= names, (own_names, names)
    assert tagged["file"].null_count == own_tagged["file"].null_count  # the same inserts
    return {
        "meta_prune": t1 - t0,
        "meta_tag": t2 - t1,
        "own_prune": t4 - t3,
        "own_tag": t5 - t4,
        "kept": len(names),
        "own_kept": len(own_names),
        "total": kept.total,
        "found": KEYS - tagged["file"].null_count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for name in TABLES:
            src = _extract(name, scratch)
            keys = _keys(src)
            runs = [_run(src, scratch / name, keys, i) for i in range(args.repeat)]
            best = {
                k: min(float(r[k]) for r in runs) for k in ("meta_prune", "meta_tag", "own_prune", "own_tag")
            }
            last = runs[-1]
            rows.append(
                [
                    name,
                    f"{last['kept']} / {last['own_kept']} of {last['total']}",
                    fmt_ms(best["meta_prune"]),
                    fmt_ms(best["own_prune"]),
                    fmt_ms(best["meta_tag"]),
                    fmt_ms(best["own_tag"]),
                    str(last["found"]),
                ]
            )
    print(machine_line(pa))
    print(
        markdown_table(
            [
                "table",
                "kept (metadata / own)",
                "metadata: open + first prune",
                "own: build + first prune",
                "metadata: tag 1,000",
                "own: tag 1,000",
                "keys found",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
