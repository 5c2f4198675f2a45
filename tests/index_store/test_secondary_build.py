"""Secondary index builds: the dictionary rows a local build hands over are the rows read back
from the index files it wrote (``fresh_entries``); the dictionary's sorted keys are delta-encoded
(a size regression test: PLAIN keys fail it)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import col
from index_store import open_table
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


def _dictionary_key_chunks(index_root: Path) -> tuple[int, set[str]]:
    """Compressed bytes of the key column of the table's dictionary files, and its encodings."""
    size, encodings = 0, set()
    for path in (index_root / "secondary_dict").glob("*.idx"):
        md = pq.ParquetFile(path).metadata
        for g in range(md.num_row_groups):
            chunk = md.row_group(g).column(0)
            size += chunk.total_compressed_size
            encodings |= set(chunk.encodings)
    return size, encodings


def test_the_dictionary_of_near_unique_strings_is_delta_encoded(tmp_path: Path) -> None:
    # Nearly unique keys sharing long prefixes (comments, URLs, ids): written PLAIN the keys of
    # the dictionary took about as many bytes as the column; sorted and prefix-coded far fewer.
    root = tmp_path / "t"
    root.mkdir()
    rng = np.random.default_rng(11)
    for k in range(4):
        ids = rng.permutation(5_000) + 5_000 * k
        words = np.array(["alpha", "beta", "gamma", "delta"])[ids % 4]
        pq.write_table(
            pa.table(
                {
                    "u": pa.array(
                        [f"https://example.org/{w}/item-{i:08d}" for w, i in zip(words, ids, strict=True)]
                    )
                }
            ),
            root / f"f{k}.parquet",
        )
    t = open_table(root, index_path=tmp_path / "index")
    t.build(progress=False)
    t.create_index(["u"])
    t.build_index(progress=False)
    size, encodings = _dictionary_key_chunks(tmp_path / "index")
    assert "DELTA_BYTE_ARRAY" in encodings
    plain = pa.concat_arrays(
        [pq.read_table(p, columns=["u"])["u"].combine_chunks() for p in sorted(root.glob("*.parquet"))]
    ).sort()
    sink = io.BytesIO()
    pq.write_table(
        pa.table({"key": plain}), sink, compression="zstd", use_dictionary=False, write_statistics=False
    )
    assert size < 0.7 * len(sink.getvalue()), (size, len(sink.getvalue()))
    assert t.count(col("u") == "https://example.org/beta/item-00005001") == 1
