"""Secondary indexes under bad input and faults: definitions that cannot be made, base files without a
usable index file (never built, rewritten in place), index files missing or corrupt, two builders
at once, an index dropped under a reader, a builder killed before its commit.

The rule throughout: a predicate's candidate rows are never fewer than its matching rows, and reads
and counts are exact, whatever state the index is in; an index file that cannot be read raises
``IndexCorruptError`` unless the caller asks to scan instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import Expression, col
from index_store import CommitConflictError, IndexCorruptError, IndexDefinitionError, IndexedTable, open_table
from index_store.secondary.build import FileTask, write_index_file_for
from index_store.secondary.cost import costs_for, use_costs

REPO = Path(__file__).resolve().parents[2]
ROWS = 30


def _rows(k: int, n: int = ROWS) -> pa.Table:
    return pa.table(
        {
            "a": pa.array([None if i % 9 == 0 else (i * 7 + k) % 5 for i in range(n)], pa.int64()),
            "s": pa.array([f"w{(i + k) % 4}" for i in range(n)], pa.string()),
            "f": pa.array([i * 0.5 for i in range(n)], pa.float64()),
            "n": pa.array(range(k * 1000, k * 1000 + n), pa.int64()),
            "st": pa.array([{"x": i} for i in range(n)], pa.struct([pa.field("x", pa.int64())])),
        }
    )


def _write(root: Path, name: str, k: int, n: int = ROWS) -> None:
    pq.write_table(_rows(k, n), root / name)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Three files, indexed, with a value index on ``a`` built."""
    root = tmp_path / "t"
    root.mkdir()
    for k in range(3):
        _write(root, f"f{k}.parquet", k)
    t = open_table(root)
    t.build(progress=False)
    t.create_index("a")
    t.build_index(progress=False)
    return root


def _truth(root: Path, expr: Expression) -> dict[str, list[int]]:
    """The matching rows per file, read with pyarrow and ``hudi_expr``'s own row semantics."""
    out = {}
    for path in sorted(root.glob("*.parquet")):
        table = pq.read_table(path)
        table = table.append_column("__row", pa.array(range(len(table)), pa.int64()))
        rows = table.filter(expr.bind(table.schema).to_pyarrow())["__row"].to_pylist()
        if rows:
            out[str(path)] = rows
    return out


def _ids(t: IndexedTable, expr: Expression, **kw: Any) -> dict[str, list[int]]:
    return {p: ids.to_pylist() for p, ids in t.select(expr, **kw).row_ids().items()}


def _count(root: Path, expr: Expression) -> int:
    return sum(len(v) for v in _truth(root, expr).values())


def _index_file_of(t: IndexedTable, base: str, kind: str = "value") -> Path:
    (rel,) = [r for r in t.snapshot().live[kind] if r.split("/")[2] == Path(base).stem]
    return t.index_root / rel


def _on_disk(t: IndexedTable, kind: str = "value") -> set[str]:
    top = t.index_root / kind
    return {p.relative_to(t.index_root).as_posix() for p in top.rglob("*.idx")} if top.is_dir() else set()


EXPR = col("a") == 2


# ------------------------------------------------------------------------------- bad definitions


@pytest.mark.parametrize(
    ("columns", "index_type", "message"),
    [
        ("nope", "value", "cannot index column 'nope': the table has no such column"),
        (["a", "nope"], "value", "'nope'"),
        ("f", "value", "column 'f' is .*a value index does not index floating point"),
        ("a", "term", "column 'a' is .*a term index needs a string column"),
        ("n", "term", "column 'n' is"),
        ("st", "value", "cannot index column 'st': the table has no such column .*st.x"),
        ("st.x", "value", "cannot index column 'st.x': nested struct fields are not supported"),
    ],
)
def test_definitions_that_cannot_be_made_name_the_column(
    root: Path, columns: str | Sequence[str], index_type: str, message: str
) -> None:
    t = open_table(root)
    before = t.snapshot().version
    with pytest.raises(IndexDefinitionError, match=message):
        t.create_index(columns, index_type=index_type, name="bad")
    assert t.snapshot().version == before  # nothing recorded
    assert [s.name for s in t.indexes()] == ["idx_value_a"]


def test_bad_names_and_types_are_refused(root: Path) -> None:
    t = open_table(root)
    with pytest.raises(IndexDefinitionError, match="SQL identifier"):
        t.create_index("s", name="1-bad")
    with pytest.raises(IndexDefinitionError, match="distinct columns"):
        t.create_index(["s", "s"])
    with pytest.raises(IndexDefinitionError, match="distinct columns"):
        t.create_index([])
    # An unknown type is a ValueError naming the known ones (plain ValueError, not IndexDefinitionError).
    with pytest.raises(ValueError, match=r"unknown index type 'bitmap'.*'term', 'value'"):
        t.create_index("s", index_type="bitmap")
    with pytest.raises(IndexDefinitionError, match="exists already"):
        t.create_index("s", name="idx_value_a")
    assert [s.name for s in t.indexes()] == ["idx_value_a"]


def test_create_index_before_the_table_is_indexed(tmp_path: Path) -> None:
    _write(tmp_path, "f0.parquet", 0)
    from index_store import IndexNotBuiltError

    with pytest.raises(IndexNotBuiltError):
        open_table(tmp_path).create_index("a")


# ------------------------------------------------------------------ base files without an index file


def test_a_base_file_with_no_index_file_has_all_rows(root: Path) -> None:
    _write(root, "f3.parquet", 3)
    t = open_table(root)
    t.update(added=["f3.parquet"], progress=False)
    ids = _ids(t, EXPR)
    truth = _truth(root, EXPR)
    assert ids[str(root / "f3.parquet")] == list(range(ROWS))
    for path in truth:
        if not path.endswith("f3.parquet"):
            assert ids[path] == truth[path]
    assert t.count(EXPR) == _count(root, EXPR)
    assert t.exists(EXPR)
    assert not t.select(EXPR).exact
    assert "plus every row of 1 files without a usable index file" in t.select(EXPR).explain()


def test_a_base_file_the_index_does_not_know_has_all_rows(root: Path) -> None:
    _write(root, "f3.parquet", 3)  # on disk, never synced
    t = open_table(root)
    ids = _ids(t, EXPR)
    assert ids[str(root / "f3.parquet")] == list(range(ROWS))
    assert t.count(EXPR) == _count(root, EXPR)
    out = t.read(EXPR)
    assert sorted(out["n"].to_pylist()) == sorted(
        n for p, rows in _truth(root, EXPR).items() for n in pq.read_table(p)["n"].take(rows).to_pylist()
    )


def _rewrite(root: Path, name: str, k: int, n: int) -> None:
    """Rewrite a base file in place with other rows, with a modification time the index cannot hold."""
    before = os.stat(root / name).st_mtime_ns
    _write(root, name, k, n)
    os.utime(root / name, ns=(before + 5_000_000_000,) * 2)


def test_stale_index_file_same_row_count_gives_all_rows_and_correct_reads(root: Path) -> None:
    _rewrite(root, "f1.parquet", 7, ROWS)
    t = open_table(root)
    stale = str(root / "f1.parquet")
    ids = _ids(t, EXPR)
    assert ids[stale] == list(range(ROWS))
    truth = _truth(root, EXPR)
    assert all(ids[p] == rows for p, rows in truth.items() if p != stale)
    assert set(truth[stale]) <= set(ids[stale])
    assert sorted(t.read(EXPR)["n"].to_pylist()) == sorted(
        n for p, rows in truth.items() for n in pq.read_table(p)["n"].take(rows).to_pylist()
    )
    assert t.count(EXPR) == _count(root, EXPR)
    # build_index leaves a file changed since the last sync unindexed; sync, then build: exact again.
    assert t.build_index(progress=False) is None
    t.sync(progress=False)
    assert [(s.files_indexed, s.live_files) for s in t.indexes()] == [(2, 3)]
    assert _ids(t, EXPR)[stale] == list(range(ROWS))
    t.build_index(progress=False)
    assert [(s.files_indexed, s.live_files) for s in t.indexes()] == [(3, 3)]
    assert _ids(t, EXPR) == _truth(root, EXPR)


@pytest.mark.parametrize("rows_now", [ROWS + 12, ROWS - 12])
def test_stale_index_file_with_another_row_count_gives_every_row_now(root: Path, rows_now: int) -> None:
    _rewrite(root, "f1.parquet", 7, rows_now)
    t = open_table(root)
    assert t.count(EXPR) == _count(root, EXPR)  # reads are right: they read the whole file
    assert _ids(t, EXPR)[str(root / "f1.parquet")] == list(range(rows_now))


# -------------------------------------------------------------------- missing and corrupt index files


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"\x00not parquet" * 40)
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "footer-only":
        path.write_bytes(data[:4] + data[-8:])  # PAR1 ... PAR1 with no content


@contextlib.contextmanager
def _lookups_free() -> Iterator[None]:
    """Index lookups priced at nothing for every row reader, so that ``count`` asks the index
    whichever reader an adapter imported earlier in the process registered (the table is small
    enough for reading it to be cheaper otherwise, and then no index file is opened)."""
    before = [costs_for(reader) for reader in ("pyarrow", "duckdb")]
    for costs in before:
        use_costs(dataclasses.replace(costs, lookup_file=0.0, lookup_row=0.0))
    try:
        yield
    finally:
        for costs in before:
            use_costs(costs)


@pytest.mark.parametrize("how", ["missing", "truncated", "garbage", "empty", "footer-only"])
def test_unreadable_index_file_raises_or_scans(root: Path, how: str) -> None:
    t = open_table(root)
    target = _index_file_of(t, "f1.parquet")
    _damage(target, how)
    t = open_table(root)
    with pytest.raises(IndexCorruptError) as info:
        t.row_ids(EXPR)
    assert target.name in str(info.value)
    # The count of the indexed leaf comes from the dictionary: no index file is opened.
    assert t.count(EXPR) == _count(root, EXPR)
    with _lookups_free(), pytest.raises(IndexCorruptError):
        t.count(EXPR & (col("a") != 7))  # two leaves: a count that asks the index files
    # Told to scan, the file's rows are all candidates; the others stay exact.
    ids = _ids(t, EXPR, on_corrupt="scan")
    truth = _truth(root, EXPR)
    assert ids[str(root / "f1.parquet")] == list(range(ROWS))
    assert all(ids[p] == rows for p, rows in truth.items() if not p.endswith("f1.parquet"))
    # An index the rules do not use is not opened: read() on a small table still answers.
    assert t.read(EXPR).num_rows == _count(root, EXPR)
    # Rebuilding the index files repairs it.
    t.build_index(strategy="all", progress=False)
    assert _ids(open_table(root), EXPR) == truth


def test_corrupt_manifest_raises(root: Path) -> None:
    t = open_table(root)
    (manifest,) = t.snapshot().live["secondary"]
    (t.index_root / manifest).write_bytes(b"\x00garbage" * 30)
    t = open_table(root)
    with pytest.raises(IndexCorruptError, match=Path(manifest).name):
        t.row_ids(EXPR)
    with pytest.raises(IndexCorruptError):
        t.indexes()
    # prune() told to keep every file does so.
    assert len(t.prune(EXPR, on_corrupt="keep_all").files) == 3
    # build() writes a new index (see test_build_keeps_secondary_index_definitions for what it forgets).
    t.build(progress=False)
    if not t.indexes():
        t.create_index("a")
    t.build_index(progress=False)
    assert _ids(open_table(root), EXPR) == _truth(root, EXPR)


def test_build_index_all_repairs_a_corrupt_manifest(root: Path) -> None:
    t = open_table(root)
    (manifest,) = t.snapshot().live["secondary"]
    (t.index_root / manifest).write_bytes(b"\x00garbage" * 30)
    t = open_table(root)
    t.build_index(strategy="all", progress=False)
    assert _ids(open_table(root), EXPR) == _truth(root, EXPR)


def test_corrupt_manifest_scans_when_told_to(root: Path) -> None:
    t = open_table(root)
    (manifest,) = t.snapshot().live["secondary"]
    (t.index_root / manifest).write_bytes(b"\x00garbage" * 30)
    t = open_table(root)
    ids = _ids(t, EXPR, on_corrupt="scan")
    assert ids == {str(p): list(range(ROWS)) for p in sorted(root.glob("*.parquet"))}


def test_index_file_of_another_base_file_is_corrupt(root: Path) -> None:
    t = open_table(root)
    _index_file_of(t, "f1.parquet").write_bytes(_index_file_of(t, "f0.parquet").read_bytes())
    t = open_table(root)
    with pytest.raises(IndexCorruptError):
        # A range: f1's bloom cannot drop it, so its (wrong) index file is opened.
        t.row_ids(col("a") >= 0)


def test_build_keeps_secondary_index_definitions(root: Path) -> None:
    t = open_table(root)
    t.build(progress=False)
    assert [s.name for s in t.indexes()] == ["idx_value_a"]


# --------------------------------------------------------------------------------- two builders


def _blocking_compute(arrived: threading.Barrier | threading.Event, go: threading.Event | None) -> Any:
    """A ``compute`` hook computing locally, which holds the builder between computing and committing."""

    def compute(table_root: str, staging: Path, tasks: Sequence[FileTask], rels: Sequence[str]) -> list[Any]:
        out = [write_index_file_for(table_root, staging, t, rel) for t, rel in zip(tasks, rels, strict=True)]
        if isinstance(arrived, threading.Barrier):
            arrived.wait(timeout=30)
        else:
            arrived.set()
            assert go is not None and go.wait(timeout=30)
        return out

    return compute


def _run(fn: Any, results: list[Any]) -> threading.Thread:
    def target() -> None:
        try:
            results.append(fn())
        except Exception as exc:  # the test inspects it
            results.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    return thread


def test_two_builders_at_once_both_commit_and_the_index_is_consistent(root: Path) -> None:
    t = open_table(root)
    t.create_index("s", name="words")
    barrier = threading.Barrier(2)
    results: list[Any] = []
    threads = [
        _run(
            lambda: open_table(root).build_index(progress=False, compute=_blocking_compute(barrier, None)),
            results,
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.join(60)
    assert len(results) == 2
    for r in results:
        assert isinstance(r, (int, CommitConflictError)), r
    assert any(isinstance(r, int) for r in results)
    t = open_table(root)
    assert all(s.complete for s in t.indexes())
    live = sorted(t.snapshot().live["value"])
    assert len(live) == 3  # one per base file, whoever won
    for expr in (EXPR, col("s") == "w1", (col("s") == "w2") | (col("a") == 0)):
        assert _ids(t, expr) == _truth(root, expr)
        assert t.select(expr).exact
    t.compact()
    t.clean(retention_seconds=0)
    assert _on_disk(t) == set(live)  # the replaced files are gone


def test_a_builder_racing_a_replaced_base_file_fails_cleanly(root: Path) -> None:
    t = open_table(root)
    t.create_index("s", name="words")  # the value files must be rebuilt with s
    computed, go = threading.Event(), threading.Event()
    results: list[Any] = []
    thread = _run(
        lambda: open_table(root).build_index(progress=False, compute=_blocking_compute(computed, go)), results
    )
    assert computed.wait(30)
    # Meanwhile a writer replaces f1 with f1b.
    os.unlink(root / "f1.parquet")
    _write(root, "f1b.parquet", 11)
    open_table(root).update(added=["f1b.parquet"], removed=["f1.parquet"], progress=False)
    go.set()
    thread.join(60)
    (outcome,) = results
    assert isinstance(outcome, CommitConflictError), outcome
    assert "build_index again" in str(outcome)
    t = open_table(root)
    # The loser committed nothing and left nothing staged; the answers are right meanwhile.
    assert [(s.name, s.files_indexed) for s in t.indexes()] == [("idx_value_a", 2), ("words", 0)]
    staging = t.index_root / ".staging"
    assert not staging.exists() or not any(staging.iterdir())
    for expr in (EXPR, col("s") == "w1"):
        ids, truth = _ids(t, expr), _truth(root, expr)
        assert all(set(rows) <= set(ids[p]) for p, rows in truth.items())
        assert t.count(expr) == _count(root, expr)
    assert t.build_index(progress=False) is not None
    assert all(s.complete for s in t.indexes())
    for expr in (EXPR, col("s") == "w1"):
        assert _ids(t, expr) == _truth(root, expr)


# ------------------------------------------------------------------------------ drop under a reader


def test_dropping_an_index_under_a_reader(root: Path) -> None:
    reader = open_table(root)
    selection = reader.select(EXPR)
    held = {p: v.to_pylist() for p, v in selection.row_ids().items()}
    assert held == _truth(root, EXPR) and selection.exact

    writer = open_table(root)
    writer.drop_index("idx_value_a")
    writer.compact()
    deleted = writer.clean(retention_seconds=0)
    assert any(d.startswith("value/") for d in deleted)
    assert not _on_disk(writer)

    # What the reader holds stays right; its next call sees no index and still answers correctly.
    assert {p: v.to_pylist() for p, v in selection.row_ids().items()} == held
    assert reader.indexes() == []
    after = reader.select(EXPR)
    assert not after.use.used
    ids = {p: v.to_pylist() for p, v in after.row_ids().items()}
    assert all(set(rows) <= set(ids[p]) for p, rows in held.items())
    assert all(rows == list(range(ROWS)) for rows in ids.values())
    assert reader.count(EXPR) == _count(root, EXPR)
    assert reader.read(EXPR).num_rows == _count(root, EXPR)

    # A new index of the same name: the reader uses it at once.
    writer.create_index("a")
    writer.build_index(progress=False)
    assert _ids(reader, EXPR) == held


# ---------------------------------------------------------------------------- a builder killed


def _killed_build(root: Path, where: str) -> None:
    """Run ``build_index`` in another process that dies (``os._exit``) at ``where``: before its commit
    (index files staged only), or inside it (files linked under the instant, no timeline entry)."""
    patch = {
        "commit": "api.commit = lambda *a, **k: os._exit(9)",
        "linked": "api._manifest_commit = lambda *a, **k: os._exit(9)",
    }[where]
    code = textwrap.dedent(
        f"""
        import os
        import index_store.secondary.api as api
        from index_store import open_table
        {patch}
        open_table({str(root)!r}).build_index(progress=False)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=120)
    assert done.returncode == 9, done.stderr.decode()


@pytest.mark.parametrize("where", ["commit", "linked"])
def test_a_builder_killed_before_its_commit(root: Path, where: str) -> None:
    t = open_table(root)
    t.create_index("s", name="words")
    version = t.snapshot().version
    live_before = sorted(t.snapshot().live["value"])
    _killed_build(root, where)
    leftovers = sorted(
        p.relative_to(t.index_root).as_posix() for p in t.index_root.rglob("*.idx") if p.parts[-2] != "files"
    )
    staged = [p for p in leftovers if p.startswith(".staging/")]
    assert len(staged) == 3  # the dead builder's files, staged
    if where == "linked":
        linked = [p for p in leftovers if p.startswith(f"value/{version + 1:020d}/")]
        assert len(linked) == 3  # and linked under the instant it never committed

    # Readers are unaffected: the old index files answer a, the new column has no index yet.
    reader = open_table(root)
    assert reader.snapshot().version == version
    assert sorted(reader.snapshot().live["value"]) == live_before
    assert [(s.name, s.files_indexed) for s in reader.indexes()] == [("idx_value_a", 3), ("words", 0)]
    assert _ids(reader, EXPR) == _truth(root, EXPR)
    expr = col("s") == "w3"
    ids = _ids(reader, expr)
    assert ids == {str(p): list(range(ROWS)) for p in sorted(root.glob("*.parquet"))}
    assert reader.count(expr) == _count(root, expr)

    # A young leftover is kept (it may be a build in progress); clean(0) removes every one.
    kept = reader.clean()
    assert not [d for d in kept if d.startswith(".staging/")]
    if where == "linked":
        # A later build commits that same instant: only the dead builder's files there are unused.
        assert reader.build_index(progress=False) == version + 1
    deleted = reader.clean(retention_seconds=0)
    assert set(staged) <= set(deleted)
    staging = reader.index_root / ".staging"
    assert not staging.exists() or not any(staging.iterdir())
    if where == "linked":
        assert set(linked) <= set(deleted)
        assert _on_disk(reader) == set(reader.snapshot().live["value"]) | set(live_before)
    else:
        assert reader.build_index(progress=False) == version + 1
    assert all(s.complete for s in reader.indexes())
    for e in (EXPR, expr):
        assert _ids(reader, e) == _truth(root, e)
