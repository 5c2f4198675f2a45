"""Secondary index builds: the dictionary rows a local build hands over are the rows read back
from the index files it wrote (``fresh_entries``); the blooms computed for a batch are each file's
own filter; the files of a build are its manifest's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.secondary.build import FileTask, build_files
from index_store.secondary.dictionary import fresh_entries


def _table(root: Path, files: int = 5) -> None:
    root.mkdir()
    rng = np.random.default_rng(7)
    for k in range(files):
        n = 30 + 17 * k
        ints = rng.integers(0, 12, n)
        pq.write_table(
            pa.table(
                {
                    "a": pa.array(ints, mask=ints == 0, type=pa.int32()),
                    "s": pa.array([f"w{x} and W{x % 3}, z{k}" if x else None for x in ints]),
                    "d": pa.array(ints.astype("datetime64[D]")),
                }
            ),
            root / f"f{k}.parquet",
        )


def tasks_of(root: Path, spec: tuple[tuple[str, tuple[str, ...]], ...]) -> list[FileTask]:
    out = []
    for i, path in enumerate(sorted(root.glob("*.parquet"))):
        pf = pq.ParquetFile(path)
        for kind, columns in spec:
            types = tuple(pf.schema_arrow.field(c).type for c in columns)
            out.append(
                FileTask(
                    kind,
                    path.name,
                    path.stat().st_size,
                    None,
                    pf.metadata.num_rows,
                    10 + i,
                    None,
                    columns,
                    types,
                )
            )
    return out


def _sorted(table: pa.Table) -> pa.Table:
    order = pc.sort_indices(table, sort_keys=[("key", "ascending", "at_end"), ("file_idx", "ascending")])
    return table.take(order).combine_chunks()


def test_a_local_build_hands_over_the_dictionary_rows_its_files_hold(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    tasks = tasks_of(root, (("value", ("a", "s", "d")), ("term", ("s",))))
    staging = tmp_path / "staging"
    built = build_files(str(root), staging, tasks, 0, progress=False, workers=2)
    assert built.dictionary is not None
    read_back = fresh_entries(staging, built.rows)
    assert (
        sorted(built.dictionary)
        == sorted(read_back)
        == [("term", "s"), ("value", "a"), ("value", "d"), ("value", "s")]
    )
    for key, rows in read_back.items():
        mine = built.dictionary[key]
        assert mine.schema == rows.schema, key
        assert _sorted(mine).equals(_sorted(rows)), key
