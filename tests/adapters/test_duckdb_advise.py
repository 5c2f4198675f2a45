"""``adapters.duckdb.advise`` and ``hudi-index advise``: the files a workload reads now, and which
clustering would make it read fewer, checked against clustering the table for real."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb.advise import advise
from adapters.duckdb.cluster import cluster
from adapters.duckdb.parse import parse_predicate
from index_store import open_table
from tests.adapters.cli_run import run

FILES = 20
ROWS = 20_000
A_RANGE = "a BETWEEN 100 AND 140"  # 4% of a
B_RANGE = "b BETWEEN 2000 AND 2400"  # 4% of b


@pytest.fixture(scope="module")
def shuffled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """a and b uniform and independent, rows in random order, indexed."""
    root = tmp_path_factory.mktemp("advise") / "t"
    root.mkdir()
    rng = random.Random(5)
    a = [rng.randrange(1_000) for _ in range(ROWS)]
    b = [rng.randrange(10_000) for _ in range(ROWS)]
    c = [rng.choice(["x", "y"]) for _ in range(ROWS)]
    per = ROWS // FILES
    for i in range(FILES):
        part = slice(i * per, (i + 1) * per)
        pq.write_table(pa.table({"a": a[part], "b": b[part], "c": c[part]}), root / f"f{i:02d}.parquet")
    open_table(root).build(progress=False)
    return root


def _measured(table: Path, out: Path, strategy: str, by: list[str], queries: list[str]) -> int:
    """Files the queries keep after clustering the table for real."""
    size_mb = sum(p.stat().st_size for p in table.glob("*.parquet")) / 1024 / 1024
    copy = open_table(cluster(table, out, by, strategy, target_file_mb=size_mb / FILES).out)
    schema = copy.snapshot().schema
    return sum(copy.prune(parse_predicate(q.split("WHERE", 1)[1], schema=schema)).kept for q in queries)


def test_reads_now_and_the_best_clustering_per_workload(shuffled: Path, tmp_path: Path) -> None:
    on_a = [f"SELECT count(*) FROM t WHERE {A_RANGE}"]
    on_both = [f"SELECT count(*) FROM t WHERE {A_RANGE} AND {B_RANGE}", f"SELECT * FROM t WHERE {B_RANGE}"]
    advice = advise(shuffled, on_a, "t")
    assert [(q.kept, q.total) for q in advice.queries] == [(FILES, FILES)]  # random: every file
    assert advice.best.strategy == "linear" and advice.best.columns == ("a",)
    as_is = next(c for c in advice.candidates if c.strategy == "as is")
    assert as_is.files_read == FILES and advice.best.files_read <= 3
    # Against the real thing: the layouts advise ranks first and last for a two-column workload.
    weighed = [("linear", ("a",)), ("zorder", ("a", "b")), ("hilbert", ("a", "b"))]
    advice = advise(shuffled, on_both, "t", candidates=weighed)
    estimated = {(c.strategy, c.columns): c.files_read for c in advice.candidates}
    measured = {(s, tuple(by)): _measured(shuffled, tmp_path / s, s, list(by), on_both) for s, by in weighed}
    best_estimated = min(weighed, key=lambda k: estimated[k])
    assert measured[best_estimated] == min(measured.values()), (estimated, measured)
    assert advice.best.strategy in ("zorder", "hilbert")


def test_a_query_that_does_not_read_the_table_counts_nothing(shuffled: Path) -> None:
    advice = advise(shuffled, ["SELECT 1", f"SELECT count(*) FROM t WHERE {A_RANGE}"], "t")
    assert advice.queries[0].kept is None
    assert all(c.per_query[0] == 0 for c in advice.candidates)


def test_cli(shuffled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "queries.sql"
    workload.write_text(f"SELECT count(*) FROM t WHERE {A_RANGE};\n-- a comment; with a semicolon\n"
                        f"SELECT sum(b) FROM t WHERE {A_RANGE} AND c = 'x';\n")  # fmt: skip
    code, out, err = run(capsys, "advise", str(shuffled), "--workload", str(workload), "--name", "t")
    assert code == 0, err
    assert "q1: 20 of 20" in out and "q2: 20 of 20" in out
    assert f"advice: hudi-index cluster {shuffled} --by a" in out
    code, out, _ = run(capsys, "advise", str(shuffled), "--workload", str(workload), "--name", "t", "--json")
    assert code == 0 and json.loads(out)["candidates"][0]["columns"][0] == "a"
    empty = tmp_path / "empty.sql"
    empty.write_text("-- nothing\n")
    code, _, err = run(capsys, "advise", str(shuffled), "--workload", str(empty))
    assert code == 2 and "no SQL query" in err
    code, _, err = run(capsys, "advise", str(shuffled), "--workload", str(tmp_path / "missing.sql"))
    assert code == 2 and "cannot read it" in err
