"""The fixed cost of planning a secondary-index query: what is worked out once per index version
(``ColumnFacts``) or once per query (the pruning mask ``prune`` hands on to the row selection),
and that neither outlives what it was worked out of."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import col
from hudi_expr.inclusive import prepare
from index_store import UseRules, open_table


def _table(root: Path, files: int = 4) -> Path:
    root.mkdir()
    for i in range(files):
        k = pa.array((np.arange(100) + 7 * i) % 50, pa.int64())
        pq.write_table(pa.table({"k": k, "v": pa.array(np.arange(100) + 100 * i)}), root / f"f{i}.parquet")
    t = open_table(root)
    t.build(progress=False, bloom_columns=["k"])
    t.create_index("k")
    t.build_index(progress=False)
    return root


def test_prune_hands_its_mask_to_the_next_selection_once(tmp_path: Path) -> None:
    t = open_table(_table(tmp_path / "t"))
    expr = col("k") == 3
    loaded = t._load()
    bound = prepare(expr, loaded.schema_only)
    stats = t.stats(bound.references())
    handed = loaded.might_match(bound, stats, hand_on=True)
    assert not handed.flags.writeable
    assert loaded.might_match(bound, stats) is handed  # taken by the selection that follows
    assert loaded.might_match(bound, stats) is not handed  # once: a later query evaluates anew
    handed = loaded.might_match(bound, stats, hand_on=True)
    assert loaded.might_match(bound, stats, hand_on=True) is not handed  # prune never takes one
    other = prepare(col("k") == 4, loaded.schema_only)
    assert loaded.might_match(other, stats) is not handed
    assert loaded.might_match(bound, stats) is not handed  # dropped by the call that did not take it
    # Through the API: prune then select answers as select alone does.
    alone = t.read(expr, rules=UseRules(by_cost=False))
    t.prune(expr)
    after = t.read(expr, rules=UseRules(by_cost=False))
    assert after.sort_by("v").equals(alone.sort_by("v")) and len(alone) == 8


def test_column_facts_are_kept_per_version_and_a_changed_file_is_not_answered(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    everything = UseRules(by_cost=False)
    first = t.select(col("k") == 3, rules=everything)
    assert first.use.used and sum(r.count or 0 for r in first.rows) == 8
    loaded = t._load()
    facts = loaded.secondary.facts[("value", "k")]
    assert facts.has_file.all() and int(facts.rows.sum()) == 400
    t.select(col("k") == 4, rules=everything)
    assert loaded.secondary.facts[("value", "k")] is facts  # the same version: worked out once

    # f0 rewritten in place (same name, other rows): its index file no longer answers.
    pq.write_table(
        pa.table({"k": pa.array([3] * 150, pa.int64()), "v": pa.array(np.arange(150) + 1000)}),
        root / "f0.parquet",
    )
    os.utime(root / "f0.parquet", ns=(1, 1))
    stale = t.select(col("k") == 3, rules=everything)
    f0 = next(i for i, f in enumerate(stale.files) if f.endswith("f0.parquet"))
    assert stale.rows[f0].mask is None and stale.row_counts[f0] == 150  # every row, read anew
    assert len(t.read(col("k") == 3, rules=everything)) == 150 + 6

    t.sync()
    t.build_index(progress=False)
    fresh = t._load()
    assert fresh is not loaded and ("value", "k") not in fresh.secondary.facts
    now = t.select(col("k") == 3, rules=everything)
    # f0 now holds only k = 3: its statistics prove every row matches (counted unread).
    counted = [n if r.mask is None else r.count for r, n in zip(now.rows, now.row_counts, strict=True)]
    assert now.use.used and all(r.exact for r in now.rows) and sum(counted) == 150 + 6
    facts = fresh.secondary.facts[("value", "k")]
    assert facts.has_file.all() and int(facts.rows.sum()) == 450


def test_dictionary_coverage_is_worked_out_once_per_version_for_every_live_file(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    # v < 100: statistics keep f0 alone; the coverage is still of every live file.
    first = t.select((col("k") == 3) & (col("v") < 100), rules=UseRules(by_cost=False))
    assert len(first.files) == 1 and sum(r.count or 0 for r in first.rows) == 2
    loaded = t._load()
    _, covered = loaded.secondary.covered[("value", "k")]
    assert covered.tolist() == [True] * 4
    assert t.count(col("k") == 3) == 8 and t.count(col("k").isin([3, 4])) == 16
    assert t.count(col("k") == 5) == 8
    assert loaded.secondary.covered[("value", "k")][1] is covered

    # A new file, indexed incrementally: a new version, its coverage worked out anew.
    pq.write_table(
        pa.table({"k": pa.array([3] * 5, pa.int64()), "v": pa.array(np.arange(5))}), root / "f9.parquet"
    )
    t.sync()
    t.build_index(progress=False)
    assert t.count(col("k") == 3) == 13
    fresh = t._load()
    assert fresh is not loaded and len(fresh.secondary.covered[("value", "k")][1]) == 5


def test_explain_says_how_read_count_and_exists_are_answered(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    con = duckdb.connect()
    for key in (3, 49, 77):
        expr = col("k") == key
        text = f"SELECT count(*) FROM read_parquet('{root}/*.parquet') WHERE k = {key}"
        truth = con.execute(text).fetchone()
        assert truth is not None
        counted = t.explain(expr, "count")
        # The count that explain shows is the one count() returns, from the dictionary alone.
        assert "answered by the secondary index's dictionary" in counted
        assert f": {truth[0]:,} matching rows in " in counted and t.count(expr) == truth[0]
        assert t.explain(expr, "exists").startswith("exists answered by the secondary index's dictionary")
    # A read is the cost model's choice, with the rows it decodes; a column with no index says so.
    read = t.explain(col("k") == 3, "read", columns=["v"])
    assert (
        "rows a read decodes" in read
        and read == t.select(col("k") == 3, t.secondary.rules_for("rows", col("k") == 3, ["v"])).explain()
    )
    unindexed = t.explain(col("v") == 3, "count")
    assert "dictionary" not in unindexed and "secondary index not used" in unindexed
    with pytest.raises(ValueError, match="what must be"):
        t.explain(col("k") == 3, "rows")  # type: ignore[arg-type]
