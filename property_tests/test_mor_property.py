"""Random merge-on-read Hudi tables: pruning, tagging and merged reads against hudi-rs and DuckDB.

Each example writes a tiny table with ``index_store.datagen.hudi_mor.write_mor_table``: typed
columns with nulls (NaN, -0.0 and infinity among the floats), partitioned (in hive-style folders or
not) or not, 1-4 file groups per partition or a first commit of log files only, then 0-3 delta
commits of updates (some losing on their ordering value), inserts (new keys and keys deleted
before; into base files, existing groups' logs or new groups of logs only) and deletes, one of them
now and then rolled back or left pending; table version 6 or 9, with or without an ordering field.
Predicates join comparisons, IN, NOT IN, IS [NOT] NULL and starts_with on every column (the key,
the ordering field and the partition column too) by AND, OR and NOT. After a build (bloom filters
or the record index), with hudi-rs's snapshot (``hudi.HudiTable.read``) as the truth and DuckDB
deciding which of its rows match:

- ``prune(expr)`` keeps every file slice holding a matching row, and every file of each;
- ``tag(keys)`` names the file group hudi-rs holds each live key in, and nothing for a key deleted,
  never written, or written only by a rolled-back or pending commit (globally and per partition);
- ``read(expr)`` returns exactly the matching rows (``count`` and ``exists`` agree).

The writer's own expected snapshot (``MorTable.expected``) is checked against hudi-rs too, so a
disagreement of the two oracles shows up as such, not as a library bug.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import hudi_expr as hx
from hudi_expr import col
from index_store import PruneResult, open_table
from index_store.datagen.hudi_mor import CommitState, DeltaCommit, InsertTarget, MorTable, write_mor_table
from property_tests.oracle import connection
from tests.mor_oracle import hudi_rs_holders
from tests.mor_tables import assert_same_rows, hudi_rs_rows

UTC = dt.UTC
KEYS = range(40)  # the record keys a table may hold (ids); NEVER is never written
NEVER = 1000
PARTS = ("a", "b", "c")
# Data values (None: NULL) and the literals predicates use: the data's and some beyond it.
VALUES: dict[str, list[Any]] = {
    "x": [-3, 0, 1, 2, 7],
    "s": ["", "a", "ab", "b", "é", "\U0001f600"],
    "f": [-1.5, -0.0, 0.0, 2.5, math.inf, math.nan],
    "d": [dt.date(2024, 1, 1) + dt.timedelta(days=k) for k in range(4)],
    "at": [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=k) for k in range(4)],
}
TYPES = {
    "x": pa.int32(),
    "s": pa.string(),
    "f": pa.float64(),
    "d": pa.date32(),
    "at": pa.timestamp("us", UTC),
}
LITERALS: dict[str, list[Any]] = {
    "x": [*VALUES["x"], -99, 99],
    "s": [*VALUES["s"], "aa", "zz"],
    "f": [v for v in VALUES["f"] if not math.isnan(v)] + [-math.inf, 100.0],
    "d": [*VALUES["d"], dt.date(2023, 12, 31), dt.date(2030, 1, 1)],
    "at": [*VALUES["at"], dt.datetime(2023, 12, 31, 23, tzinfo=UTC)],
    "id": [*KEYS[:12], NEVER],
    "ts": [0, 1, 2, 3, 10, 12, 20],
    "p": [*PARTS, "zz"],
}
ORDERED = ("x", "s", "f", "d", "at", "id", "ts", "p")


def partition_of(key: int, parts: int) -> str:
    """The partition column's value of a key (fixed: a key never moves partition)."""
    return PARTS[key % parts]


@dataclass(frozen=True)
class MorCase:
    """One drawn table and what to ask of it."""

    rows: pa.Table
    commits: list[DeltaCommit]
    partitioned: bool
    hive_style: bool
    parts: int  # partition values used (1 without partitions)
    ordering: bool
    version: int
    insert_into: Literal["base", "log_only"]
    file_groups: int
    record_index: bool
    probes: list[int]  # keys to tag: live, deleted, never written, of failed commits
    exprs: list[hx.Expression]


@st.composite
def table_rows(draw: st.DrawFn, keys: list[int], parts: int, ts: int | None) -> pa.Table:
    """Rows of ``keys``: random values (some NULL) and ordering value ``ts`` (None: 0-3 each)."""
    n = len(keys)
    columns: dict[str, pa.Array] = {
        "id": pa.array(keys, pa.int64()),
        "p": pa.array([partition_of(k, parts) for k in keys], pa.string()),
        "ts": pa.array([draw(st.integers(0, 3)) if ts is None else ts for _ in keys], pa.int64()),
    }
    for name, pool in VALUES.items():
        picked = draw(st.lists(st.sampled_from([None, *pool]), min_size=n, max_size=n))
        columns[name] = pa.array(picked, TYPES[name])
    return pa.table(columns)


@st.composite
def leaves(draw: st.DrawFn) -> hx.Expression:
    name = draw(st.sampled_from(ORDERED))
    literal = st.sampled_from(LITERALS[name])
    kinds = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "null", "not null"]
    kind = draw(st.sampled_from(kinds + (["starts"] if name in ("s", "p") else [])))
    c = col(name)
    if kind == "starts":
        return c.starts_with(draw(st.sampled_from(["", "a", "é", "\U0001f600", "z"])))
    if kind == "null":
        return c.is_null()
    if kind == "not null":
        return c.is_not_null()
    if kind in ("in", "not in"):
        values = draw(st.lists(literal, min_size=1, max_size=3, unique_by=repr))
        return c.isin(values) if kind == "in" else ~c.isin(values)
    v = draw(literal)
    return {
        "=": c == v,
        "!=": c != v,
        "<": c < v,
        "<=": c <= v,
        ">": c > v,
        ">=": c >= v,
    }[kind]


def _joined(inner: st.SearchStrategy[hx.Expression]) -> st.SearchStrategy[hx.Expression]:
    """``inner`` expressions under an AND, an OR or a NOT."""
    return st.one_of(
        st.builds(operator.and_, inner, inner),
        st.builds(operator.or_, inner, inner),
        st.builds(operator.invert, inner),
    )


def expressions() -> st.SearchStrategy[hx.Expression]:
    """Leaves joined by AND, OR and NOT, four leaves at most."""
    return st.recursive(leaves(), _joined, max_leaves=4)


def _some(draw: st.DrawFn, pool: list[int], most: int) -> list[int]:
    """Up to ``most`` distinct members of ``pool``, the count uniform (lists of hypothesis's
    ``st.lists`` are mostly short or empty: too many examples would change nothing)."""
    if not pool:
        return []
    return draw(st.permutations(pool))[: draw(st.integers(0, most))]


@st.composite
def mor_cases(draw: st.DrawFn) -> MorCase:
    partitioned = draw(st.booleans())
    parts = draw(st.integers(1, 3)) if partitioned else 1
    ordering = draw(st.booleans())
    insert_into: Literal["base", "log_only"] = draw(st.sampled_from(["base", "base", "log_only"]))
    file_groups = draw(st.integers(1, 4)) if insert_into == "base" else 1
    first = _some(draw, list(KEYS), 10)
    rows = draw(table_rows(first, parts, None))
    # The writer's state after completed commits: live keys, keys ever written, partitions with a
    # file group (where inserts into existing logs can go).
    live, written = set(first), set(first)
    grouped = {partition_of(k, parts) for k in first}
    commits: list[DeltaCommit] = []
    failed: set[int] = set()
    for c in range(draw(st.sampled_from([0, 1, 2, 2, 3, 3]))):
        state: CommitState = draw(
            st.sampled_from(["completed", "completed", "completed", "rolled_back", "pending"])
        )
        target: InsertTarget = draw(st.sampled_from(["base", "logs", "log_only"]))
        updated = _some(draw, sorted(live), 4)
        deleted = _some(draw, sorted(live - set(updated)), 3)
        # new keys, and keys deleted before (re-inserted into their group's logs)
        candidates = [k for k in KEYS if k not in live]
        if target == "logs":
            candidates = [k for k in candidates if k in written or partition_of(k, parts) in grouped]
        inserted = _some(draw, candidates, 4)
        # updates may lose on their ordering value (0-3); inserts carry a greater one than every
        # record before them, so a key written again after a delete merges alike in every reader
        commits.append(
            DeltaCommit(
                updates=draw(table_rows(updated, parts, None)) if updated else None,
                inserts=draw(table_rows(inserted, parts, 10 + c)) if inserted else None,
                deletes=deleted or None,
                insert_into=target,
                state=state,
            )
        )
        if state != "completed":
            failed |= set(inserted) - written
            if state == "pending":  # a pending commit must stay the latest instant
                break
            continue
        live = (live | set(inserted)) - set(deleted)
        if target != "logs":
            grouped |= {partition_of(k, parts) for k in set(inserted) - written}
        written |= set(inserted)
    anywhere = st.sampled_from([*KEYS, NEVER])
    probes = sorted(live)[:6] + sorted(written - live)[:3] + sorted(failed - written)[:2]
    probes += draw(st.lists(anywhere, max_size=4))
    return MorCase(
        rows=rows,
        commits=commits,
        partitioned=partitioned,
        hive_style=draw(st.booleans()),
        parts=parts,
        ordering=ordering,
        version=draw(st.sampled_from([6, 9])),
        insert_into=insert_into,
        file_groups=file_groups,
        record_index=draw(st.booleans()),
        probes=list(dict.fromkeys(probes)),
        exprs=draw(st.lists(expressions(), min_size=1, max_size=3)),
    )


def _slice_of_rows(snapshot: pa.Table) -> list[tuple[str, str]]:
    """(partition, file group) of each row of hudi-rs's snapshot, from its meta columns: a row from
    a base file names the file, one merged from a log file its bare file id."""
    names = snapshot["_hoodie_file_name"].to_pylist()
    partitions = snapshot["_hoodie_partition_path"].to_pylist()
    return [
        (p or "", n.split("_")[0] if n.endswith(".parquet") else n)
        for n, p in zip(names, partitions, strict=True)
    ]


def _events(written: MorTable) -> None:
    """What the example's table holds, for ``--hypothesis-show-statistics``."""
    slices = written.slices()
    event(f"table version {written.table_version}")
    with_logs = sum(bool(s.log_files) for s in slices)
    event(f"slices with log files: {with_logs if with_logs < 3 else '3+'}")
    event(f"a slice of log files only: {any(s.base_file is None for s in slices)}")
    low = written.expected.num_rows // 5 * 5
    event(f"live rows: {low}-{low + 4}")
    for instant in written.instants:
        if instant.state != "completed":
            event(f"a {instant.state} commit")


def _check_prune(result: PruneResult, needed: set[tuple[str, str]]) -> None:
    kept = {(s.partition or "", s.file_id) for s in result.file_slices}
    assert not needed - kept, ("slices holding matching rows were pruned", needed - kept)
    assert sorted(result.files) == sorted(f for s in result.file_slices for f in s.files)


def _located(result: pa.Table) -> dict[str, set[tuple[str | None, str | None]]]:
    """Key -> its (file id, partition) rows of a tag result."""
    out: dict[str, set[tuple[str | None, str | None]]] = {}
    columns = (result[c].to_pylist() for c in ("key", "partition", "file_id"))
    for key, part, file_id in zip(*columns, strict=True):
        out.setdefault(key, set()).add((file_id, part))
    return out


@settings(max_examples=max(settings().max_examples // 50, 10), deadline=None)
@given(case=mor_cases())
def test_mor_prune_tag_read_agree_with_hudi_rs(case: MorCase) -> None:
    for expr in case.exprs:
        note(f"predicate: {expr}")
    with tempfile.TemporaryDirectory() as tmp:
        written = write_mor_table(
            Path(tmp) / "t",
            case.rows,
            record_key="id",
            partition_by="p" if case.partitioned else None,
            hive_style=case.hive_style,
            ordering_field="ts" if case.ordering else None,
            file_groups=case.file_groups,
            insert_into=case.insert_into,
            commits=case.commits,
            table_version=case.version,
            start=dt.datetime(2024, 5, 1, 12, tzinfo=UTC),
        )
        root = written.root
        _events(written)
        snapshot = hudi_rs_rows(root)
        assert_same_rows(snapshot, written.expected)  # the two oracles agree

        t = open_table(root)
        t.build(progress=False, record_index=case.record_index)
        con = connection()
        con.register("snap", snapshot.append_column("__row", pa.array(range(snapshot.num_rows), pa.int64())))
        try:
            slice_of = _slice_of_rows(snapshot)
            for i, expr in enumerate(case.exprs):
                matching = con.sql(f"SELECT * FROM snap WHERE {expr}").to_arrow_table()
                result = t.prune(expr)
                _check_prune(result, {slice_of[r] for r in matching["__row"].to_pylist()})
                event(f"a predicate pruned a slice: {len(result.file_slices) < result.total_slices}")
                assert_same_rows(t.read(expr), matching.drop_columns(["__row"]))
                if i == 0:
                    assert t.count(expr) == matching.num_rows
                    assert t.exists(expr) == (matching.num_rows > 0)
        finally:
            con.unregister("snap")

        spec = t.reader.record_key_spec()
        assert spec is not None
        holders = hudi_rs_holders(root, spec)
        keys = [str(k) for k in case.probes]
        expected: dict[str, set[tuple[str | None, str | None]]] = {
            k: {(i, p) for (key, p), ids in holders.items() if key == k for i in ids} or {(None, None)}
            for k in keys
        }
        using: Literal["record", "bloom"] = "record" if case.record_index else "bloom"
        assert _located(t.tag(keys, using=using)) == expected
        if case.partitioned:
            folder = "p=" if case.hive_style else ""
            paths = [folder + partition_of(k, case.parts) for k in case.probes]
            # the partition column is the one given, for a key found or not
            by_part = {
                k: {(i, p) for i, p in located if p == path} or {(None, path)}
                for k, path, located in zip(keys, paths, expected.values(), strict=True)
            }
            note(f"partitions: {paths}")
            assert _located(t.tag(keys, paths, using=using)) == by_part
