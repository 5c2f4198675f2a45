"""A merge-on-read Hudi table: pruned range queries and key tagging against hudi-rs reading the whole
snapshot.

What it measures, in one process, on TPC-H lineitem at ``--scale`` (SF 0.5: 3.0 million rows) written
by ``index_store.datagen.hudi_mor`` (``benchmarks/mor_lineitem.py``) as a merge-on-read table of
``--file-groups`` file groups clustered by ``l_shipdate``, record key ``l_key = l_orderkey * 8 +
l_linenumber``, ordering field ``ts``, then one delta commit over every fifth file group (10% of
their rows updated, 1% deleted, in Avro log files):

1. The index: ``open_table(root).build()`` from scratch (the table's statistics, key bounds and
   footer bloom filters of its base files, the keys, values and records (``log_records``) of its
   log files), timed apart.
2. A one-month range query, what a user would run: ``count(*)`` and ``sum(l_extendedprice)`` of
   the lines shipped in March 1995. Ours, the pruned path, two ways: ``IndexedTable.read(expr,
   columns=["l_extendedprice"])`` then the aggregate in pyarrow, and ``adapters.duckdb.sql`` over
   the table registered with ``adapters.duckdb.register`` (only the kept slices read, merged). The
   peer: hudi-rs ``HudiTable(root).read(HudiReadOptions(filters=..., projection=[the two
   columns]))``, the fastest way hudi-rs has (its filters only prune partitions on a merge-on-read
   snapshot, so it reads every slice; it filters the rows it returns), then the same aggregate in
   pyarrow (which also filters, in case). Printed too: hudi-rs's plain ``read()`` of every column,
   and a query that prunes little (``l_quantity < 2``: every file holds such rows), where any
   slowdown of ours would show. "first query" is the first run after ``open_table`` (a fresh
   ``IndexedTable``; for DuckDB a fresh connection and ``register``), page cache warm.
3. Tagging ``--keys`` incoming record keys (1,000): 30% present in slices without log files, 20%
   present and untouched in slices with log files, 20% updated in a log file, 10% deleted in a
   log file, 20% new. Ours: ``tag(keys)`` on one open table (best of ``--repeat``), and ``open_table
   + tag`` (the first call after open). The peer: hudi-rs reads the snapshot's
   ``_hoodie_record_key``, ``_hoodie_partition_path`` and ``_hoodie_file_name`` only (projection;
   a log record's file name is its file id), DuckDB left-joins the batch with them.

Checks (the script exits non-zero when one fails): both ways of ours give the peer's count and sum
for each query; ours and the peer tag every live key with the same file group, and every deleted
and new key as an insert; the snapshot holds every row the write says it should.

Times are the best (and median) of ``--repeat`` warm runs after a warm-up (``--peer-repeat`` for
hudi-rs's whole-table reads). Targets (issue 23): the range query at least 5x the peer, tagging at
least 10x. Run from the repository root::

    python -m benchmarks.mor_bench [--scale 0.5] [--file-groups 200] [--table-version 9]
                                   [--keys 1000] [--repeat 5] [--peer-repeat 3]
                                   [--record-index] [--workdir bench_data/mor_bench] [--rewrite]

The table and a sidecar of its changed keys stay in ``--workdir`` (gitignored ``bench_data/``) and
are reused by the next run with the same settings; ``--rewrite`` writes them anew. TPC-H data is
cached in ``bench_data/tpch``. About 4 minutes on 2 vCPUs (half of it hudi-rs's reads), plus 40 s
to write the table the first time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import hudi
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from adapters import duckdb as ad
from benchmarks.common import Timing, fmt_ms, machine_line, markdown_table, met
from benchmarks.mor_lineitem import changes, lineitem
from hudi_expr import Expression, col
from index_store import IndexedTable, open_table
from index_store.datagen.hudi_mor import write_mor_table
from index_store.tagging import tag_stats

MONTH = ("1995-03-01", "1995-03-31")
LOW_QUANTITY = 2  # l_quantity < 2: about 2% of the rows, in every file
# The batch: (kind, share of the keys). Kinds other than "new" are drawn from the table.
MIX = (("plain", 0.3), ("log slice", 0.2), ("updated", 0.2), ("deleted", 0.1), ("new", 0.2))
SNAPSHOT_KEYS = ["_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"]


@dataclass(frozen=True)
class Query:
    """A query as ours (an expression; DuckDB SQL) and as hudi-rs (filters) take it."""

    name: str
    expr: Expression
    where: str  # SQL over lineitem
    filters: list[tuple[str, str, str]]  # hudi-rs's (field, op, value)
    column: str  # the column the predicate reads

    def sql(self) -> str:
        return f"SELECT count(*), sum(l_extendedprice) FROM lineitem WHERE {self.where}"


QUERIES = [
    Query(
        "one month (l_shipdate in March 1995)",
        (col("l_shipdate") >= MONTH[0]) & (col("l_shipdate") <= MONTH[1]),
        f"l_shipdate BETWEEN DATE '{MONTH[0]}' AND DATE '{MONTH[1]}'",
        [("l_shipdate", ">=", MONTH[0]), ("l_shipdate", "<=", MONTH[1])],
        "l_shipdate",
    ),
    Query(
        f"prunes little (l_quantity < {LOW_QUANTITY})",
        col("l_quantity") < LOW_QUANTITY,
        f"l_quantity < {LOW_QUANTITY}",
        [("l_quantity", "<", str(LOW_QUANTITY))],
        "l_quantity",
    ),
]


# ---------------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Written:
    """The table and what its delta commit changed (the sidecar: written once, reused)."""

    root: Path
    rows: int  # rows before the delta commit
    updated: pa.Array  # record keys (strings) updated in a log file
    deleted: pa.Array  # record keys deleted in a log file
    log_groups: pa.Array  # file ids of the file groups with log files
    write_s: float | None  # None: reused


def table_folder(work: Path, scale: float, groups: int, version: int) -> Path:
    return work / f"lineitem_mor_sf{scale:g}_{groups}_v{version}"


def write_or_reuse(work: Path, scale: float, groups: int, version: int, rewrite: bool) -> Written:
    """The table at ``table_folder(...)`` and its sidecar ``<folder>.changes.parquet`` (beside the
    table, not in it: a stray parquet file in the table would be a data file to the index)."""
    root = table_folder(work, scale, groups, version)
    sidecar = root.with_name(root.name + ".changes.parquet")
    if not rewrite and sidecar.exists() and (root / ".hoodie" / "hoodie.properties").exists():
        side = pq.read_table(sidecar)
        meta = side.schema.metadata or {}
        kind = side["kind"]
        keys = side["key"]
        return Written(
            root,
            int(meta[b"rows"]),
            keys.filter(pc.equal(kind, "updated")).combine_chunks(),
            keys.filter(pc.equal(kind, "deleted")).combine_chunks(),
            keys.filter(pc.equal(kind, "log group")).combine_chunks(),
            None,
        )
    sidecar.unlink(missing_ok=True)
    rows = lineitem(scale)
    t0 = time.perf_counter()
    table = write_mor_table(
        root,
        rows,
        record_key="l_key",
        ordering_field="ts",
        file_groups=groups,
        cluster_by="l_shipdate",
        table_version=version,
        overwrite=True,
    )
    touched = list(range(0, len(table.file_groups), 5))
    commit = changes(table.rows_in(touched))
    table.append(commit)
    write_s = time.perf_counter() - t0
    assert commit.updates is not None and commit.deletes is not None
    updated = commit.updates["l_key"].cast(pa.string()).combine_chunks()
    deleted = pa.chunked_array([commit.deletes]).cast(pa.string()).combine_chunks()
    log_groups = pa.array([table.file_groups[i].file_id for i in touched], pa.string())
    kinds = ["updated"] * len(updated) + ["deleted"] * len(deleted) + ["log group"] * len(log_groups)
    side = pa.table(
        {"kind": pa.array(kinds, pa.string()), "key": pa.concat_arrays([updated, deleted, log_groups])}
    ).replace_schema_metadata({"rows": str(rows.num_rows)})
    pq.write_table(side, sidecar)
    return Written(root, rows.num_rows, updated, deleted, log_groups, write_s)


def build_index(root: Path, record_index: bool) -> float:
    """Seconds to build the index from scratch."""
    shutil.rmtree(root / ".hoodie" / ".index", ignore_errors=True)
    t0 = time.perf_counter()
    open_table(root).build(progress=False, record_index=record_index or None)
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------------- queries


def aggregate(rows: pa.Table) -> tuple[int, Decimal | None]:
    return rows.num_rows, pc.sum(rows["l_extendedprice"]).as_py()


def ours_read(table: IndexedTable, q: Query) -> tuple[int, Decimal | None]:
    return aggregate(table.read(q.expr, columns=["l_extendedprice"]))


def ours_duckdb(con: duckdb.DuckDBPyConnection, q: Query) -> tuple[int, Decimal | None]:
    ((count, total),) = ad.sql(con, q.sql()).fetchall()
    return int(count), total


def peer_query(root: Path, q: Query) -> tuple[int, Decimal | None]:
    """hudi-rs at its best: its filters and a projection, then the aggregate (filtering again)."""
    options = hudi.HudiReadOptions(filters=q.filters, projection=sorted({q.column, "l_extendedprice"}))
    rows = pa.Table.from_batches(hudi.HudiTable(str(root)).read(options))
    return aggregate(rows.filter(q.expr.bind(rows.schema).to_pyarrow()))


def peer_read_all(root: Path, q: Query) -> tuple[int, Decimal | None]:
    """hudi-rs's plain snapshot read, every column, then filtered and aggregated."""
    rows = pa.Table.from_batches(hudi.HudiTable(str(root)).read())
    return aggregate(rows.filter(q.expr.bind(rows.schema).to_pyarrow()))


def once(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def first_read_fn(root: Path, q: Query) -> tuple[int, Decimal | None]:
    """The query on a freshly opened table (its index loaded by this first query)."""
    return ours_read(open_table(root), q)


def first_duckdb(root: Path, q: Query) -> tuple[int, Decimal | None]:
    con = duckdb.connect()
    try:
        ad.register(con, "lineitem", str(root))
        return ours_duckdb(con, q)
    finally:
        con.close()


# ----------------------------------------------------------------------------------- tagging


def draw_batch(snapshot: pa.Table, written: Written, n: int, seed: int) -> pa.Table:
    """``n`` keys of the ``MIX`` kinds, shuffled: columns ``key`` and ``kind``."""
    rng = np.random.default_rng(seed)
    keys = snapshot["_hoodie_record_key"].combine_chunks()
    names = snapshot["_hoodie_file_name"].combine_chunks()
    in_log_group = pc.is_in(file_ids(names), value_set=written.log_groups)
    untouched = pc.invert(pc.is_in(keys, value_set=written.updated))
    pools = {
        "plain": keys.filter(pc.invert(in_log_group)),
        "log slice": keys.filter(pc.and_(in_log_group, untouched)),
        "updated": written.updated,
        "deleted": written.deleted,
    }
    top = int(pc.max(pc.cast(keys, pa.int64())).as_py())
    parts: list[pa.Array] = []
    kinds: list[str] = []
    for kind, share in MIX:
        k = round(n * share) if kind != "new" else n - sum(len(p) for p in parts)
        if kind == "new":
            drawn = pa.array([str(top + 1 + 8 * i) for i in range(k)], pa.string())
        else:
            pool = pools[kind]
            drawn = pool.take(pa.array(rng.choice(len(pool), size=k, replace=False)))
        parts.append(drawn)
        kinds += [kind] * k
    order = pa.array(rng.permutation(n))
    return pa.table({"key": pa.concat_arrays(parts), "kind": pa.array(kinds, pa.string())}).take(order)


def file_ids(file_names: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A file group's id from ``_hoodie_file_name``: a base file's name up to its first ``_``; a log
    record carries the id itself."""
    return pc.list_element(pc.split_pattern(file_names, "_", max_splits=1), 0)


def peer_tag(root: Path, batch: pa.Table) -> pa.Table:
    """hudi-rs reads the snapshot's key columns; DuckDB joins them with the batch (input order)."""
    options = hudi.HudiReadOptions(projection=SNAPSHOT_KEYS)
    snap = pa.Table.from_batches(hudi.HudiTable(str(root)).read(options))
    con = duckdb.connect()
    try:
        con.register("batch", batch.select(["key"]).append_column("pos", pa.array(np.arange(batch.num_rows))))
        con.register("snap", snap)
        return con.sql(
            "SELECT b.key, s._hoodie_partition_path AS partition, "
            "split_part(s._hoodie_file_name, '_', 1) AS file_id "
            "FROM batch b LEFT JOIN snap s ON b.key = s._hoodie_record_key ORDER BY b.pos"
        ).to_arrow_table()
    finally:
        con.close()


def tag_problems(ours: pa.Table, peer: pa.Table, batch: pa.Table) -> list[str]:
    """Where ours and the peer disagree, and where either is wrong by the batch's kinds."""
    out = []
    if ours.num_rows != batch.num_rows or peer.num_rows != batch.num_rows:
        return [f"{ours.num_rows} / {peer.num_rows} rows tagged for {batch.num_rows} keys"]
    if not ours["key"].equals(batch["key"]) or not peer["key"].equals(batch["key"]):
        out.append("keys not in input order")
    mine, theirs = ours["file_id"].combine_chunks(), peer["file_id"].combine_chunks()
    differ = pc.invert(pc.fill_null(pc.equal(mine, theirs), False))
    differ = pc.and_not(differ, pc.and_(pc.is_null(mine), pc.is_null(theirs)))
    if pc.any(differ).as_py():
        bad = batch["key"].filter(differ)
        out.append(f"{len(bad)} keys in different file groups (first: {bad[0]})")
    absent = pc.is_in(batch["kind"], value_set=pa.array(["deleted", "new"]))
    for name, got in (("ours", mine), ("peer", theirs)):
        if not pc.all(pc.equal(pc.is_null(got), absent)).as_py():
            out.append(f"{name}: a live key tagged as an insert, or a deleted or new key located")
    return out


# -------------------------------------------------------------------------------------- main


def library_version() -> str:
    """The git commit measured, and whether the library's code had uncommitted changes."""
    git = ["git", "-C", str(Path(__file__).resolve().parent.parent)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "index_store", "hudi_expr", "adapters"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    return f"commit {head.stdout.strip()}" + (", uncommitted changes" if dirty.stdout.strip() else "")


def load() -> str:
    """``load average 1.2 1.3 1.4`` (1, 5 and 15 minutes): other processes share the machine."""
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--file-groups", type=int, default=200)
    parser.add_argument("--table-version", type=int, default=9, choices=(6, 8, 9))
    parser.add_argument("--keys", type=int, default=1000, help="incoming keys to tag")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of ours")
    parser.add_argument("--peer-repeat", type=int, default=3, help="timed runs of hudi-rs's reads")
    parser.add_argument("--record-index", action="store_true", help="build the record index too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=Path("bench_data/mor_bench"))
    parser.add_argument("--rewrite", action="store_true", help="write the table anew")
    args = parser.parse_args(argv)

    print(machine_line(duckdb, pa, np, hudi, memory=True))
    print(f"library: {library_version()}; {load()} at the start")
    written = write_or_reuse(
        args.workdir.resolve(), args.scale, args.file_groups, args.table_version, args.rewrite
    )
    root = written.root
    how = "reused" if written.write_s is None else f"written in {written.write_s:.1f} s"
    build_s = build_index(root, args.record_index)
    table = open_table(root)
    print(
        f"lineitem SF {args.scale:g}: {written.rows:,} rows in {args.file_groups} file groups clustered by "
        f"l_shipdate ({how}), table version {args.table_version}; delta commit over "
        f"{len(written.log_groups)} groups: {len(written.updated):,} updates, {len(written.deleted):,} "
        f"deletes; index built in {build_s:.1f} s (record index: {'yes' if args.record_index else 'no'})"
    )
    problems: list[str] = []

    # --- queries
    con = duckdb.connect()
    ad.register(con, "lineitem", str(root))
    rows: list[list[str]] = []
    notes: list[str] = []
    ratios: dict[str, float] = {}
    for q in QUERIES:
        first_read_s, first_read = once(partial(first_read_fn, root, q))
        first_duck_s, first_duck = once(partial(first_duckdb, root, q))
        read_t = Timing.of(partial(ours_read, table, q), args.repeat)
        duck_t = Timing.of(partial(ours_duckdb, con, q), args.repeat)
        peer_t = Timing.of(partial(peer_query, root, q), args.peer_repeat)
        peer_all_t = Timing.of(partial(peer_read_all, root, q), 1, warmup=0)
        expected = peer_query(root, q)
        answers = {
            "read": ours_read(table, q),
            "duckdb": ours_duckdb(con, q),
            "first read": first_read,
            "first duckdb": first_duck,
            "hudi-rs read()": peer_read_all(root, q),
        }
        for name, got in answers.items():
            if got != expected:
                problems.append(f"{q.name}: {name} gives {got}, hudi-rs {expected}")
        kept = table.prune(q.expr)
        slices = kept.file_slices or []
        with_logs = sum(1 for s in slices if s.log_files)
        best_ours = min(read_t.best, duck_t.best)
        ratios[q.name] = peer_t.best / best_ours
        target = "5x" if q is QUERIES[0] else "-"
        ok = met(ratios[q.name] >= 5) if q is QUERIES[0] else "-"
        for label, t in (("IndexedTable.read + aggregate", read_t), ("adapters.duckdb.sql", duck_t)):
            rows.append([q.name, label, t.ms(), peer_t.ms(), f"{peer_t.best / t.best:.1f}x", target, ok])
        rows.append(
            [q.name, "first query: open_table + read / connect + register + sql",
             f"{first_read_s * 1e3:.1f} / {first_duck_s * 1e3:.1f}", peer_t.ms(),
             f"{peer_t.best / first_read_s:.1f}x / {peer_t.best / first_duck_s:.1f}x", "-", "-"]
        )  # fmt: skip
        notes.append(
            f"- {q.name}: {len(slices)} of {args.file_groups} file slices kept ({with_logs} with log "
            f"files); answer {expected[0]:,} rows, sum {expected[1]}; hudi-rs read() of every column "
            f"then filtered: {peer_all_t.text()}"
        )
        print(f"  [{q.name}: ours {fmt_ms(best_ours)}, hudi-rs {fmt_ms(peer_t.best)}]", file=sys.stderr)
    con.close()

    # --- tagging
    snapshot = pa.Table.from_batches(
        hudi.HudiTable(str(root)).read(hudi.HudiReadOptions(projection=SNAPSHOT_KEYS))
    )
    if snapshot.num_rows != written.rows - len(written.deleted):
        problems.append(
            f"the snapshot has {snapshot.num_rows:,} rows, not {written.rows - len(written.deleted):,}"
        )
    batch = draw_batch(snapshot, written, args.keys, args.seed)
    keys = batch["key"].combine_chunks()
    first_tag_s, first_tag = once(lambda: open_table(root).tag(keys))
    tag_t = Timing.of(lambda: table.tag(keys), args.repeat)
    peer_tag_t = Timing.of(lambda: peer_tag(root, batch), args.peer_repeat)
    ours_tags = table.tag(keys)
    problems += [f"tagging: {p}" for p in tag_problems(ours_tags, peer_tag(root, batch), batch)]
    problems += [f"tagging, first call: {p}" for p in tag_problems(first_tag, peer_tag(root, batch), batch)]
    stats = tag_stats(ours_tags)
    ratios["tag"] = peer_tag_t.best / tag_t.best
    label = f"tagging {args.keys:,} keys"
    rows.append([label, f"tag ({stats.method})", tag_t.ms(), peer_tag_t.ms(), f"{ratios['tag']:.1f}x", "10x",
                 met(ratios["tag"] >= 10)])  # fmt: skip
    rows.append([label, "first call: open_table + tag", f"{first_tag_s * 1e3:.1f}", peer_tag_t.ms(),
                 f"{peer_tag_t.best / first_tag_s:.1f}x", "-", "-"])  # fmt: skip
    stages = ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in stats.seconds.items())
    kinds = pc.value_counts(batch["kind"])
    counts = dict(zip(kinds.field("values").to_pylist(), kinds.field("counts").to_pylist(), strict=True))
    mix = ", ".join(f"{counts.get(k, 0)} {k}" for k, _ in MIX)
    notes.append(
        f"- tagging: {mix}; ours read {stats.slices_read} slices ({stats.log_files_read} log files, "
        f"{stats.bytes_read / 1e6:.1f} MB of base key columns), pairs after range {stats.after_range:,}, "
        f"after bloom {stats.after_bloom:,}; stages: {stages}; {stats.updates} updates, "
        f"{stats.inserts} inserts"
    )
    print(f"  [tagging: ours {fmt_ms(tag_t.best)}, peer {fmt_ms(peer_tag_t.best)}]", file=sys.stderr)

    print(
        f"\nBest (median) ms of {args.repeat} warm runs of ours, {args.peer_repeat} of the peer's, after a "
        "warm-up; first query: one run after open_table. Peer, queries: hudi-rs read(filters, projection) "
        "of the whole snapshot, then pyarrow; tagging: hudi-rs read of the snapshot's key columns, then a "
        "DuckDB join.\n"
    )
    print(markdown_table(["case", "ours", "ours ms", "peer ms", "ratio", "target", "met?"], rows))
    print("\n" + "\n".join(notes))
    print(f"\n{load()} at the end")
    if problems:
        print("\nWRONG:\n" + "\n".join(f"- {p}" for p in problems))
        return 1
    print("\nanswers equal to hudi-rs's in every case (counts, sums, tags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
