"""Planning one query over a 2,000-file table: where the milliseconds of ``adapters.duckdb.plan`` go.

What it measures, on TPC-H lineitem (``tpchgen-cli``, SF1 by default) written as 2,000 parquet files
clustered by ``l_shipdate`` and indexed with footer statistics and a bloom filter on ``l_orderkey``
(the table of ``benchmarks/duckdb_bench.py``), registered once on a DuckDB connection, its index
opened once in the process:

1. ``adapters.duckdb.plan(con, query)`` for six kinds of query, each run with a query text never
   seen before (a literal changes from run to run, so no cache keyed on the text helps): parse,
   find the references, translate, bind, prune, build the rewritten text. Target (issue 14): under
   2 ms. Also the first query on the same table opened with ``check_files="stat"`` (a ``stat`` of
   every data file at each plan, instead of the folder watch).
2. The same plans with each stage timed (functions wrapped in timers while the plan runs): the
   DuckDB round trips (the session query that also parses the text; the constants evaluation that
   also parses the spliced text back), finding the references, translating, binding,
   ``IndexedTable.prune`` and inside it the index snapshot, the statistics, ``might_match`` and
   the check of the table on disk, the secondary-index decision, the text of the kept files' read.
3. ``IndexedTable.prune`` alone for each way of checking the table on disk (``verify_files``), and
   the index's and the table's freshness checks alone.

Checks (the script exits non-zero if one fails): for one text of each query, the plan keeps every
file that holds a matching row (found by DuckDB reading every file with ``filename = true``).

Times are the best (and median) of ``--repeat`` runs after ``--warmup`` runs, each with a new text.
The table is written and indexed once under ``--workdir`` (gitignored ``bench_data/``) and reused
by later runs (``--rebuild`` writes it again). Run from the repository root::

    python -m benchmarks.plan_bench [--scale 1] [--files 2000] [--repeat 15] [--warmup 3]
                                    [--workdir bench_data/plan_bench] [--rebuild]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

import adapters.duckdb.parse as parse_module
import adapters.duckdb.planner as planner_module
import adapters.duckdb.query as query_module
import index_store.table as table_module
from adapters.duckdb import plan, register
from benchmarks.common import machine_line, markdown_table, matching_files
from index_store import IndexedTable, open_table
from index_store.datagen.tpch import generate, write_files
from index_store.timeline import IndexTimeline

TARGET_S = 0.002
META = "plan_bench.json"  # written once the table is complete and indexed


@dataclass(frozen=True)
class Query:
    """A query whose text changes with ``i`` (run number): ``text(i)``."""

    name: str
    template: str
    literal: Callable[[int], dict[str, Any]]

    def text(self, i: int) -> str:
        return self.template.format(**self.literal(i))


def queries(keys: Sequence[int]) -> list[Query]:
    """Six kinds of query; ``keys``: l_orderkey values present in the table (one per run)."""
    day = dt.date(1995, 3, 1)
    return [
        Query(
            "one month (date range)",
            "SELECT count(*), sum(l_quantity) FROM lineitem "
            "WHERE l_shipdate BETWEEN DATE '{a}' AND DATE '{b}'",
            lambda i: {"a": day + dt.timedelta(days=i), "b": day + dt.timedelta(days=i + 30)},
        ),
        Query(
            "Q6 (4 conjuncts)",
            "SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem "
            "WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
            "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < {q}",
            lambda i: {"q": 24 + i % 20 + (i // 20) * 0.5},
        ),
        Query(
            "point lookup (bloom)",
            "SELECT * FROM lineitem WHERE l_orderkey = {k} ORDER BY l_linenumber",
            lambda i: {"k": keys[i % len(keys)]},
        ),
        Query(
            "IN of 10 keys (bloom)",
            "SELECT count(*) FROM lineitem WHERE l_orderkey IN ({ks})",
            lambda i: {"ks": ", ".join(str(keys[(i + j) % len(keys)] + j) for j in range(10))},
        ),
        Query(
            "string = and date >",
            "SELECT count(*) FROM lineitem WHERE l_shipmode = 'AIR' AND l_receiptdate > DATE '{d}'",
            lambda i: {"d": dt.date(1998, 6, 1) + dt.timedelta(days=i)},
        ),
        Query(
            "a constant DuckDB evaluates",
            "SELECT count(*) FROM lineitem WHERE l_extendedprice > CAST({x} AS DOUBLE)",
            lambda i: {"x": 100_000 + 17 * i},
        ),
    ]


# ------------------------------------------------------------------------------------ the table


def prepare(args: argparse.Namespace) -> tuple[IndexedTable, Path]:
    """The indexed lineitem table under the work directory: reused when complete, else written."""
    work = Path(args.workdir).resolve()
    folder = work / f"sf{args.scale:g}-{args.files}"
    root = folder / "lineitem"
    meta = folder / META
    if args.rebuild or not meta.is_file():
        shutil.rmtree(folder, ignore_errors=True)
        t0 = time.perf_counter()
        source = generate(args.scale, work / "tpch", tables=("lineitem",))["lineitem"]
        files = write_files(source, root, args.files, order_by="l_shipdate")
        written_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        open_table(root).build(bloom_columns=["l_orderkey"], progress=False)
        build_s = time.perf_counter() - t0
        meta.write_text(json.dumps({"files": len(files), "write_s": written_s, "build_s": build_s}))
        print(f"wrote {len(files):,} files in {written_s:.1f} s, indexed in {build_s:.1f} s")
    else:
        print(f"reusing {root} ({json.loads(meta.read_text())['files']:,} files)")
    # A folder changed within the last 2 s is listed anew at every plan (index_store/tables/plain.py):
    # measure the steady state.
    quiet = 2.1 - (time.time() - os.stat(root).st_mtime)
    if quiet > 0:
        time.sleep(quiet)
    return open_table(root), root


# -------------------------------------------------------------------------------- stage timers

# (label, owner object, attribute, depth): the functions timed while a plan runs (owner None: the
# table's reader). A stage of depth d + 1 runs inside the stage of depth d above it (its time is
# part of that stage's).
STAGES: list[tuple[str, Any, str, int]] = [
    ("index statement check (parse_statement)", query_module, "_statement_plan", 0),
    ("DuckDB: session query + parse (json_serialize_sql)", query_module, "read_session", 0),
    ("references and conjuncts (scope)", query_module, "find_references", 0),
    ("DuckDB: constants + parse of the splice", parse_module.Walker, "evaluate_constants", 0),
    ("splice check (tree comparison)", query_module, "same_but_renamed", 0),
    ("translate conjuncts (walker)", parse_module.Walker, "translate", 0),
    ("source text of conjuncts", parse_module.Walker, "source_text", 0),
    ("bind", planner_module, "bind", 0),
    ("IndexedTable.snapshot (planner, select)", IndexedTable, "snapshot", 0),
    ("IndexedTable.prune", IndexedTable, "prune", 0),
    ("index snapshot + load", IndexedTable, "_load", 1),
    ("prepare (bind to the stats schema)", table_module, "prepare", 1),
    ("stats (cached columns, blooms)", IndexedTable, "stats", 1),
    ("might_match", table_module, "might_match", 1),
    ("table on disk against the index (_on_disk)", IndexedTable, "_on_disk", 1),
    ("listing (reused while nothing changed)", None, "listing", 2),
    ("compare with the index (when either changed)", table_module, "_compare_with_disk", 2),
    ("secondary index decision (select_rows)", planner_module, "select_rows", 0),
    ("read text of the kept files (kept_read)", query_module, "kept_read", 0),
]


class Stages:
    """Wraps the functions of ``STAGES`` with timers; ``seconds`` per label for the current plan."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.seconds: dict[str, float] = defaultdict(float)

    @contextlib.contextmanager
    def installed(self) -> Iterator[Stages]:
        saved = []
        for label, owner, name, _ in STAGES:
            target = self.reader if owner is None else owner
            if not hasattr(target, name):
                continue  # a stage this version of the code does not have (comparing commits)
            original = getattr(target, name)
            saved.append((target, name, target.__dict__.get(name, None) if owner is not None else None))
            setattr(target, name, self._timed(label, original, isinstance(target, type)))
        try:
            yield self
        finally:
            for target, name, original in reversed(saved):
                if original is None:
                    delattr(target, name)
                else:
                    setattr(target, name, original)

    def _timed(self, label: str, fn: Any, method: bool) -> Any:
        seconds = self.seconds

        if method:
            unbound = fn

            def timed_method(this: Any, *a: Any, **k: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return unbound(this, *a, **k)
                finally:
                    seconds[label] += time.perf_counter() - t0

            return timed_method

        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                seconds[label] += time.perf_counter() - t0

        return timed


# ------------------------------------------------------------------------------------------ runs


@dataclass
class Result:
    name: str
    kept: str
    plan: list[float]
    staged: list[dict[str, float]]
    staged_total: list[float]


def time_plans(con: duckdb.DuckDBPyConnection, table: IndexedTable, q: Query, args: argparse.Namespace,
               first: int) -> Result:  # fmt: skip
    """Plans of new texts of ``q``: plain, then with stage timers (each with its own new texts)."""
    n = args.warmup + args.repeat
    texts = [q.text(first + i) for i in range(2 * n)]
    times = []
    kept = ""
    for i, text in enumerate(texts[:n]):
        t0 = time.perf_counter()
        p = plan(con, text)
        elapsed = time.perf_counter() - t0
        if i >= args.warmup:
            times.append(elapsed)
        (t,) = p.tables
        kept = f"{t.kept:,}/{t.total:,}"
    stages = Stages(table.reader)
    staged: list[dict[str, float]] = []
    staged_total: list[float] = []
    with stages.installed():
        for i, text in enumerate(texts[n:]):
            stages.seconds.clear()
            t0 = time.perf_counter()
            plan(con, text)
            elapsed = time.perf_counter() - t0
            if i >= args.warmup:
                staged.append(dict(stages.seconds))
                staged_total.append(elapsed)
    return Result(q.name, kept, times, staged, staged_total)


def check_sound(con: duckdb.DuckDBPyConnection, root: Path, q: Query, i: int) -> str | None:
    """None when the plan of text ``i`` keeps every file holding a matching row, else why not."""
    text = q.text(i)
    p = plan(con, text)
    (t,) = p.tables
    kept = {os.path.basename(f) for f in (t.result.files if t.result is not None else [])}
    where = text.split(" WHERE ", 1)[1].split(" ORDER BY ")[0]
    needed = matching_files(duckdb.connect(), f"{root}/*.parquet", where)
    missing = needed - kept
    return f"{q.name}: skipped {len(missing)} files with matching rows" if missing else None


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--files", type=int, default=2000, help="lineitem data files")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per query (new texts)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first (new texts too)")
    parser.add_argument("--workdir", default="bench_data/plan_bench", help="the table (kept) and TPC-H cache")
    parser.add_argument("--rebuild", action="store_true", help="write and index the table again")
    args = parser.parse_args(argv)
    print(machine_line(duckdb, pa))
    table, root = prepare(args)
    con = duckdb.connect()
    register(con, "lineitem", table)
    files = sorted(root.glob("*.parquet"))
    keys = pq.read_table(files[len(files) // 3], columns=["l_orderkey"])["l_orderkey"].to_pylist()[::97]
    qs = queries(keys)
    failures = [f for f in (check_sound(con, root, q, 10_000) for q in qs) if f]
    results = [time_plans(con, table, q, args, first=1 + k * 1000) for k, q in enumerate(qs)]
    # The same table checked by a stat of every file (check_files="stat"), on its own connection.
    strict_con = duckdb.connect()
    try:
        strict = open_table(root, check_files="stat")
    except TypeError:  # code from before check_files (comparing commits): it always stats
        strict = open_table(root)
    register(strict_con, "lineitem", strict)
    strict_result = time_plans(strict_con, strict, qs[0], args, first=100)  # dates unused above

    print(f"\nplan(con, query), best (median) of {args.repeat} runs, each a query text not seen before\n")
    rows = []
    for r in results:
        best, med = min(r.plan), statistics.median(r.plan)
        rows.append([r.name, r.kept, f"{ms(best)} ({ms(med)})", f"{best / TARGET_S:.1f}x"])
    best, med = min(strict_result.plan), statistics.median(strict_result.plan)
    rows.append([f"{qs[0].name}, check_files='stat'", strict_result.kept, f"{ms(best)} ({ms(med)})",
                 f"{best / TARGET_S:.1f}x"])  # fmt: skip
    print(markdown_table(["query", "files kept", "plan ms", "/ 2 ms target"], rows))

    print("\nby stage, ms, best of the runs with stage timers (indented: part of the stage above)\n")
    header = ["stage"] + [f"q{k + 1}" for k in range(len(results))]
    stage_rows = []
    for label, _, _, depth in STAGES:
        cells = [ms(min(s.get(label, 0.0) for s in r.staged)) for r in results]
        if any(c != "0.00" for c in cells):
            stage_rows.append(["&nbsp;&nbsp;" * 2 * depth + label, *cells])
    top = [label for label, _, _, depth in STAGES if depth == 0]
    rest = []
    for r in results:
        k = min(range(len(r.staged_total)), key=r.staged_total.__getitem__)
        rest.append(ms(r.staged_total[k] - sum(r.staged[k].get(label, 0.0) for label in top)))
    stage_rows.append(["rest of plan (total - stages, in the best run)", *rest])
    stage_rows.append(["plan with stage timers", *(ms(min(r.staged_total)) for r in results)])
    print(markdown_table(header, stage_rows))
    print("\n" + "; ".join(f"q{k + 1} = {r.name}" for k, r in enumerate(results)))

    print("\nIndexedTable.prune alone (one-month predicate), best (median) of the runs\n")
    print_prune_modes(table, args.repeat)

    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print("\nplans keep every file holding a matching row" if not failures else "")
    return 1 if failures else 0


def print_prune_modes(table: IndexedTable, repeat: int) -> None:
    from adapters.duckdb import parse_predicate

    expr = parse_predicate("l_shipdate BETWEEN DATE '1995-03-01' AND DATE '1995-03-31'")
    modes: list[tuple[str, Callable[[], Any]]] = [
        ("verify_files=True (default: check_files='watch')", lambda: table.prune(expr)),
        ("verify_files='stat' (a stat of every file)", lambda: table.prune(expr, verify_files="stat")),
        ("verify_files=False (the index alone)", lambda: table.prune(expr, verify_files=False)),
        ("IndexTimeline.snapshot (nothing changed)", lambda: table.timeline.snapshot()),
        ("reader.list_files (nothing changed)", lambda: table.reader.list_files()),
        ("new IndexTimeline(...).snapshot()", lambda: IndexTimeline(table.index_root).snapshot()),
    ]
    rows = []
    for name, fn in modes:
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        rows.append([name, f"{ms(min(times))} ({ms(statistics.median(times))})"])
    print(markdown_table(["what", "ms"], rows))


if __name__ == "__main__":
    sys.exit(main())
