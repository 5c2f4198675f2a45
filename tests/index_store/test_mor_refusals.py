"""Every ``index_store`` path that would read a merge-on-read table's rows file by file refuses it
with ``MergedReadError`` (an ``UnsupportedTableError``), never a wrong answer; the index paths
(build, update, sync, prune, explain, stats, layout, compact) work on it, and so do ``read``,
``count`` and ``exists``, which read its slices merged (tests/index_store/test_merged_read.py), and
``tag``, which finds each key's slice from base and log files (tests/index_store/test_tag_mor.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hudi_expr import col
from index_store import IndexedTable, MergedReadError, UnsupportedTableError, open_table
from index_store.builder import compute_stats
from index_store.tables import reads_whole_files

TABLE = "mor_parquet_v6_simplekeygen_nonhivestyle"  # a slice with a log file
WHERE = col("id") == 1


@pytest.fixture
def mor(copy_table: Callable[[str], Path]) -> IndexedTable:
    table = open_table(copy_table(TABLE))
    table.build(progress=False)
    return table


REFUSED: dict[str, Callable[[IndexedTable], Any]] = {
    "duplicate_keys": lambda t: t.duplicate_keys(),
    "select": lambda t: t.select(WHERE),
    "row_ids": lambda t: t.row_ids(WHERE),
    "create_index": lambda t: t.create_index("name"),
    "build_index": lambda t: t.build_index(),
    "build(compute=...)": lambda t: t.build(compute=compute_stats, progress=False),
}


@pytest.mark.parametrize("entry", sorted(REFUSED))
def test_row_reads_and_tagging_are_refused(mor: IndexedTable, entry: str) -> None:
    with pytest.raises(MergedReadError, match=r"merge-on-read table .* would read its files one by one") as e:
        REFUSED[entry](mor)
    assert isinstance(e.value, UnsupportedTableError) and "IndexedTable.read" in str(e.value)
    assert not mor.indexes()  # nothing was recorded on the way


def test_the_index_itself_works(mor: IndexedTable) -> None:
    assert not reads_whole_files(mor.reader)
    assert mor.prune(WHERE).file_slices and "file slices" in mor.prune(WHERE).explain()
    assert mor.stats(["id"]).num_files == len(mor.reader.list_files())
    assert len(mor.layout(["id"])) == 1
    assert mor.sync(progress=False) is None
    assert mor.compact() > 1
    assert mor.update(added=[], removed=[]) > 1
    assert mor.count(WHERE) == 1 and mor.exists(WHERE)  # merged reads
    tagged = mor.tag(["1", "no such key"])
    assert tagged["file_id"].null_count == 1 and tagged["file"][0].as_py() is not None
