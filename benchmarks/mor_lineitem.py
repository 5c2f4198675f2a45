"""The merge-on-read lineitem table of the merge-on-read benchmarks (``mor_datagen_bench``,
``mor_bench``): TPC-H lineitem with a record key and an ordering field, and the delta commit that
updates 10% and deletes 1% of the rows of the file groups it touches."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.datagen.hudi_mor import DeltaCommit
from index_store.datagen.tpch import generate

__all__ = ["TPCH_CACHE", "changes", "lineitem"]

TPCH_CACHE = "bench_data/tpch"  # tpchgen-cli's output, shared by the benchmarks (gitignored)


def lineitem(scale: float) -> pa.Table:
    """lineitem at ``scale`` with ``l_key = l_orderkey * 8 + l_linenumber`` first (the record key)
    and ``ts`` (0) last (the ordering field)."""
    table = pq.read_table(generate(scale, TPCH_CACHE, tables=("lineitem",))["lineitem"])
    key = pc.add(pc.multiply(table["l_orderkey"], 8), table["l_linenumber"].cast(pa.int64()))
    ts = pa.array(np.zeros(table.num_rows, dtype=np.int64))
    return table.add_column(0, "l_key", key).append_column("ts", ts)


def changes(live: pa.Table, seed: int = 0) -> DeltaCommit:
    """10% of ``live`` updated (``ts`` 1, ``l_comment`` upper-cased), another 1% deleted."""
    order = np.random.default_rng(seed).permutation(live.num_rows)
    n_updates, n_deletes = live.num_rows // 10, live.num_rows // 100
    updates = live.take(pa.array(order[:n_updates]))
    updates = updates.set_column(
        updates.schema.get_field_index("ts"), "ts", pa.array(np.ones(n_updates, dtype=np.int64))
    )
    comment = updates.schema.get_field_index("l_comment")
    updates = updates.set_column(comment, "l_comment", pc.utf8_upper(updates["l_comment"]))
    deletes = live["l_key"].take(pa.array(order[n_updates : n_updates + n_deletes]))
    return DeltaCommit(updates=updates, deletes=deletes)
