"""``IndexedTable.tag`` on random tables, DuckDB as the oracle of which file holds each key.

Random plain tables (flat or hive-partitioned) whose record key is a string (with characters
above U+FFFF and in U+E000-U+FFFF, where Java and code-point order differ), an integer (negative
numbers, text ranges that overlap) or a composite of both, with keys repeated across files now and
then; random probes, present and absent; per partition and global; both methods. Each key gets
exactly the files DuckDB finds it in (a row per file, in input order), or one row of none; with
``on_duplicate="error"`` a key held by two files in the searched scope raises
``DuplicateKeyError`` instead.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index_store import DuplicateKeyError, open_table

TEXT = st.text(
    alphabet=["a", "b", "0", "9", ",", ":", "\ue000", "\uffff", "\U0001f600", "\U00010000"], max_size=4
)
INTS = st.integers(-(10**6), 10**6)


@st.composite
def tables(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "int", "composite"]))
    hive = draw(st.booleans())
    value = {"string": TEXT, "int": INTS, "composite": st.tuples(INTS, TEXT)}[kind]
    files = draw(st.lists(st.lists(value, max_size=8), min_size=1, max_size=5))
    parts = [draw(st.sampled_from(["p=x", "p=y"])) if hive else "" for _ in files]
    probes = draw(st.lists(value, max_size=10))
    return {"kind": kind, "files": files, "parts": parts, "probes": probes}


def _write(root: Path, spec: dict[str, Any]) -> list[str]:
    """The files, and the record key columns, as the table's build sees them."""
    for i, (rows, part) in enumerate(zip(spec["files"], spec["parts"], strict=True)):
        folder = root / part if part else root
        folder.mkdir(parents=True, exist_ok=True)
        if spec["kind"] == "string":
            table = pa.table({"k": pa.array([v or "e" for v in rows], pa.string())})
        elif spec["kind"] == "int":
            table = pa.table({"k": pa.array(rows, pa.int64())})
        else:
            table = pa.table(
                {
                    "a": pa.array([a for a, _ in rows], pa.int64()),
                    "b": pa.array([b for _, b in rows], pa.string()),
                }
            )
        pq.write_table(table, folder / f"f{i}.parquet")
    return ["a", "b"] if spec["kind"] == "composite" else ["k"]


def _probe_keys(spec: dict[str, Any]) -> list[str]:
    present = [v for rows in spec["files"] for v in rows][:10]
    out = []
    for v in present + spec["probes"]:
        if spec["kind"] == "string":
            out.append(v or "e")
        elif spec["kind"] == "int":
            out.append(str(v))
        else:
            a, b = v
            out.append(f"a:{a},b:{b if b else '__empty__'}")
    return out


def _oracle(root: Path, spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, partition, file) of every row, computed by DuckDB."""
    key = {
        "string": "k",
        "int": "CAST(k AS VARCHAR)",
        "composite": "'a:' || a || ',b:' || CASE WHEN b = '' THEN '__empty__' ELSE b END",
    }[spec["kind"]]
    rows = duckdb.sql(
        f"SELECT {key}, filename FROM read_parquet('{root}/**/*.parquet', filename = true, "
        "hive_partitioning = false)"
    ).fetchall()
    out = []
    for k, name in rows:
        rel = os.path.relpath(name, root)
        out.append((k, os.path.dirname(rel), os.path.normpath(name)))
    return out


@settings(max_examples=max(settings().max_examples // 20, 25), deadline=None)
@given(spec=tables())
@pytest.mark.parametrize("method", ["bloom", "record"])
def test_tag_equals_duckdb(spec: dict[str, Any], method: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        fields = _write(root, spec)
        t = open_table(root)
        t.build(record_key=fields, record_index=method == "record", progress=False)
        rows = _oracle(root, spec)
        keys = _probe_keys(spec)
        for per_partition in (False, True):
            parts = None
            if per_partition:
                hive = any(spec["parts"])
                parts = [("p=x" if i % 2 else "p=y") if hive else "" for i in range(len(keys))]
            holders: list[set[str]] = []
            for i, k in enumerate(keys):
                holders.append({f for key, p, f in rows if key == k and (parts is None or p == parts[i])})
            result = t.tag(keys, parts, using=method)  # type: ignore[arg-type]
            got = [None if f is None else os.path.normpath(f) for f in result["file"].to_pylist()]
            counts = [max(len(h), 1) for h in holders]
            assert result["key"].to_pylist() == [
                k for k, n in zip(keys, counts, strict=True) for _ in range(n)
            ]
            starts = [sum(counts[:i]) for i in range(len(keys))]
            assert [set(got[a : a + n]) for a, n in zip(starts, counts, strict=True)] == [
                h or {None} for h in holders
            ], (keys, parts)
            if any(len(h) > 1 for h in holders):
                with pytest.raises(DuplicateKeyError):
                    t.tag(keys, parts, using=method, on_duplicate="error")  # type: ignore[arg-type]
            else:
                strict = t.tag(keys, parts, using=method, on_duplicate="error")  # type: ignore[arg-type]
                assert strict["file"].equals(result["file"])
