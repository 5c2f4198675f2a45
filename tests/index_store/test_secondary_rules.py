"""RFC-51's rule-based use of the secondary index: the rules added after the first ones, and the
term index answering LIKE through bound leaves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_expr import col
from index_store import UseRules, open_table


def test_too_many_index_files_to_open_means_no_index(tmp_path: Path) -> None:
    for i in range(6):
        pq.write_table(pa.table({"k": pa.array(np.arange(100) % 3, pa.int64())}), tmp_path / f"f{i}.parquet")
    t = open_table(tmp_path)
    t.build(progress=False)
    t.create_index("k")
    t.build_index(progress=False)
    every_file = UseRules(by_cost=False, max_index_files=5)
    use = t.select(col("k") == 1, rules=every_file).use
    assert not use.used
    assert "6 index files, more than 5" in use.reason
    assert t.select(col("k") == 1, rules=UseRules(by_cost=False)).use.used
    assert len(t.read(col("k") == 1, rules=every_file)) == 6 * 33


def test_term_index_answers_like_of_one_word(tmp_path: Path) -> None:
    words = np.array(["quick", "Brown", "fox", "zebra!", "lazy"])
    rng = np.random.default_rng(3)
    for i in range(3):
        text = [" ".join(rng.choice(words, 2)) for _ in range(400)]
        pq.write_table(pa.table({"t": pa.array(text)}), tmp_path / f"f{i}.parquet")
    t = open_table(tmp_path)
    t.build(progress=False)
    t.create_index("t", "term")
    t.build_index(progress=False)
    for expr, truth in (
        (col("t").starts_with("zeb"), lambda s: s.startswith("zeb")),
        (col("t").contains("row"), lambda s: "row" in s),
        (col("t").contains("ROW"), lambda s: "ROW" in s),
    ):
        selection = t.select(expr)
        assert selection.use.used and selection.use.lookups == {str(expr.bind(t.snapshot().schema)): "term"}
        assert not selection.exact  # candidates: the row filter decides
        rows = pq.read_table(tmp_path / "f0.parquet")["t"].to_pylist()
        wanted = {i for i, s in enumerate(rows) if truth(s)}
        got = set(
            selection.row_ids().get(str(tmp_path / "f0.parquet"), pa.array([], pa.uint64())).to_pylist()
        )
        assert wanted <= got
        assert t.count(expr) == sum(
            truth(s) for i in range(3) for s in pq.read_table(tmp_path / f"f{i}.parquet")["t"].to_pylist()
        )
