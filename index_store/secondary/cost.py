"""What answering a query each way costs: the secondary index, statistics and blooms alone, or a
plain scan, from measured constants and per-file bounds on the rows a predicate selects.

The choice is made per query (``choose``): the index path costs its lookups (one per index file
opened) plus, unless the index answers alone (an exact ``count``/``exists``), reading the selected
rows (a file opened per file holding one, and the rows its reader decodes around each: a row group
for pyarrow, a vector for DuckDB); the pruning path costs reading every candidate file's needed
columns whole. The bound on selected rows is an upper bound (``bounds``), so the index is chosen
only when even its worst case is cheaper: it never makes the query slower by more than the error
of the constants.

The constants (``Costs``) are milliseconds per step. ``stored_costs(reader)`` gives the ones
measured on the development machine (``python -m index_store.secondary.cost`` measures them
again, printing them); ``calibrate()`` measures them in this process on a file it writes, and
``use_costs`` makes them the process's default for that reader.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import AlwaysFalse, AlwaysTrue, And, Expression, Predicate

__all__ = [
    "Choice",
    "Costs",
    "FileFacts",
    "Known",
    "Purpose",
    "bounds",
    "calibrate",
    "choose",
    "conjuncts",
    "costs_for",
    "range_groups",
    "stored_costs",
    "use_costs",
]

Purpose = Literal["rows", "count", "exists", "row_ids"]
"""What the selection is for: reading rows, counting them, testing that one exists, row ids."""

Path_ = Literal["index", "pruning", "scan"]


@dataclass(frozen=True)
class Costs:
    """Milliseconds per step of reading with one reader (``reader``): measured, or stored."""

    reader: str  # "pyarrow" (IndexedTable.read/count/exists without DuckDB) or "duckdb"
    lookup_file: float  # open one index file and look one leaf's keys up in it
    lookup_row: float  # per row of the data file a lookup's index file indexes (bigger files cost more)
    read_file: float  # open one data file to read its selected rows (footer, setup)
    scan_file: float  # open one candidate file to read it whole
    file_column: float  # per file and column read (setting up a column reader)
    value: float  # decode one value (one row of one column read)
    filter_value: float  # test one row of one column of a pushed-down filter (= value without pushdown)
    text_value: float  # test one row against a word or substring leaf (a tokenizer or a regex)
    decode_unit: int  # rows decoded around each selected row read by position (a reader's skip unit)
    pushdown: bool  # the reader filters first and decodes the other columns only around matches
    late_unit: int = 0  # with pushdown: rows decoded around each match of the pushed-down filter
    origin: str = "stored"  # "stored" (measured on the development machine) or "calibrated"


# Measured on the development machine (2-core AMD EPYC, shared, so rounded; see
# docs/secondary-indexes.md "Choosing the path") on the bench's TPC-H lineitem layouts: 200 files of
# 3,000 rows and 4 files of 150,000 rows in 16,384-row row groups, 16 columns.
_STORED = {
    "pyarrow": Costs(
        "pyarrow",
        lookup_file=0.6,
        lookup_row=1.4e-5,
        read_file=1.0,
        scan_file=1.0,
        file_column=0.0,
        value=5e-5,
        filter_value=5e-5,
        text_value=2e-3,
        decode_unit=16_384,
        pushdown=False,
    ),
    "duckdb": Costs(
        "duckdb",
        lookup_file=0.6,
        lookup_row=1.4e-5,
        read_file=0.5,
        scan_file=0.15,
        file_column=0.06,
        value=4e-5,
        filter_value=1.5e-5,
        text_value=4e-3,
        decode_unit=4_096,
        pushdown=True,
        late_unit=2_048,
    ),
}
_IN_USE: dict[str, Costs] = {}


def stored_costs(reader: str) -> Costs:
    """The stored constants of ``reader`` (``pyarrow`` or ``duckdb``)."""
    try:
        return _STORED[reader]
    except KeyError:
        raise ValueError(f"no stored costs for reader {reader!r}: use one of {sorted(_STORED)}") from None


def costs_for(reader: str) -> Costs:
    """The process's constants for ``reader``: calibrated ones if ``use_costs`` was given some,
    else the stored ones."""
    return _IN_USE.get(reader) or stored_costs(reader)


def use_costs(costs: Costs) -> None:
    """Make ``costs`` the process's constants for ``costs.reader`` (e.g. from ``calibrate()``)."""
    _IN_USE[costs.reader] = costs


@dataclass(frozen=True)
class Choice:
    """The path a query takes, what each would cost (ms) and the bounds they came from."""

    path: Path_
    index_ms: float
    pruning_ms: float
    scan_ms: float
    selected_upper: float  # at most this many rows selected (a bound, not a guess)
    selected_expected: float  # the expected number (uniform values within each file's bounds)
    decoded_rows: float  # rows the index path would decode (an upper bound)
    costs: Costs
    lookup_ms: float = 0.0  # the index path's lookups, within ``index_ms``

    def text(self) -> str:
        return (
            f"estimated cost: index {self.index_ms:,.1f} ms, pruning alone {self.pruning_ms:,.1f} ms, "
            f"plain scan {self.scan_ms:,.1f} ms ({self.costs.reader} reader, {self.costs.origin} constants); "
            f"selected rows at most {self.selected_upper:,.0f}, expected {self.selected_expected:,.0f}; "
            f"rows the index path decodes at most {self.decoded_rows:,.0f}"
        )


@dataclass(frozen=True)
class Work:
    """What a query asks of the files, for pricing: the candidates and the predicate's shape."""

    purpose: Purpose
    row_counts: np.ndarray  # per candidate file
    whole: np.ndarray  # per candidate: statistics prove every row matches (counted unread)
    columns: int  # columns a read returns
    filter_columns: int  # columns the predicate reads
    text_leaves: int  # word leaves (contains_term: a tokenizer per row tested)
    total_files: int  # data files on disk (a plain scan)
    total_rows: int


def choose(
    costs: Costs,
    work: Work,
    upper: np.ndarray,
    expected: np.ndarray,
    lookups: int,
    lookup_rows: float,
    exact: bool,
) -> Choice:
    """The cheapest path for ``work``: ``upper[i]`` rows of candidate ``i`` at most selected;
    ``lookups`` index files looked up (``lookup_rows``: the rows of the data files they index);
    ``exact``: the index answers every leaf exactly (a count or EXISTS then reads nothing)."""
    c = costs
    n = work.row_counts.astype(np.float64)
    upper = np.minimum(upper, n)
    answers_alone = exact and work.purpose in ("count", "exists", "row_ids")
    out_cols = work.filter_columns if work.purpose in ("count", "exists") else max(work.columns, 1)
    out_cols = max(out_cols, 1)
    per_file = c.file_column * out_cols

    def filtering(rows: float) -> float:
        return rows * (work.filter_columns * c.filter_value + work.text_leaves * c.text_value)

    def reading(files: float, rows: np.ndarray, hits: np.ndarray) -> float:
        """Reading ``rows`` of ``files`` files whole, filtered, ``hits`` rows matching at most."""
        opened = files * (c.scan_file + per_file)
        if c.pushdown:  # the filter column first, the others around matches only
            around = float(np.minimum(rows, hits * c.late_unit).sum())
            return opened + filtering(float(rows.sum())) + around * out_cols * c.value
        return opened + float(rows.sum()) * out_cols * c.value + filtering(float(rows.sum()))

    lookup_ms = lookups * c.lookup_file + lookup_rows * c.lookup_row
    if answers_alone:
        decoded = 0.0
        index_ms = lookup_ms
        if work.purpose == "exists" and float(upper.sum()) > 0:
            # An engine's EXISTS reads the one row found (a reader's unit around it, one file).
            one = float(min(c.decode_unit, float(n.max())))
            index_ms += c.read_file + per_file + one * out_cols * c.value
    else:
        has = upper > 0
        around = np.minimum(n, upper * c.decode_unit)
        decoded = float(around.sum())
        index_ms = lookup_ms + int(has.sum()) * (c.read_file + per_file) + decoded * out_cols * c.value
        # The predicate tested on the rows read: the residual filter of an inexact selection, and
        # an engine's own WHERE (the SQL adapter, Spark) exact or not; counted always (at worst
        # the index looks a little dearer than it is). A reader that filters in its scan
        # (``pushdown``) tests every row of a file whose selected rows make it decode the whole
        # file (it is then read whole, without a row filter): the index saves no filtering there.
        tested = np.where(around >= n, n, upper) if c.pushdown else upper
        index_ms += filtering(float(tested.sum()))
    read = ~work.whole if work.purpose in ("count", "exists") else np.ones(len(n), dtype=bool)
    pruning_ms = reading(float(read.sum()), n[read], upper[read])
    everything = np.array([float(work.total_rows)])
    scan_ms = reading(float(work.total_files), everything, np.array([float(upper.sum())]))
    if work.purpose == "exists":
        # A reader alone stops at the first match: it reads the files before the first one
        # expected to hold a match, and that one's rows up to its first match (uniformly spread).
        rows_read, files_read = _until_match(n[read], expected[read])
        if rows_read < float(n[read].sum()):
            pruning_ms = reading(files_read, np.array([rows_read]), np.array([1.0]))
            share = rows_read / max(float(n.sum()), 1.0)
            scan_ms = reading(
                max(1.0, share * work.total_files), np.array([share * work.total_rows]), np.array([1.0])
            )
    if work.purpose == "row_ids":
        pruning_ms = scan_ms = float("inf")  # row ids without the index are every row: no answer
    # The index must beat both pruning alone and a plain scan. DuckDB reads a list of files at a
    # glob's cost (measured: 4 files of 150,000 rows and 200 of 3,000, CPU time within 1%), so
    # naming the kept files costs nothing per file over the glob.
    if index_ms < min(pruning_ms, scan_ms):
        path: Path_ = "index"
    else:
        # A plain scan where it reads no more than pruning's kept files.
        path = "scan" if len(n) >= work.total_files or scan_ms < pruning_ms else "pruning"
    return Choice(
        path, index_ms, pruning_ms, scan_ms, float(upper.sum()), float(expected.sum()), decoded, c, lookup_ms
    )


def _until_match(n: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """Rows and files read in order until the first expected match (all of them if none)."""
    hit = np.flatnonzero(expected >= 1.0)
    if not len(hit):
        return float(n.sum()), float(len(n))
    j = int(hit[0])
    return float(n[:j].sum()) + float(n[j]) / (float(expected[j]) + 1.0), float(j + 1)


# ---------------------------------------------------------------------------------- bounds


@dataclass(frozen=True)
class FileFacts:
    """Per candidate file, what the manifest and the statistics say about one indexed column
    (float arrays; ``indexed`` False where the file has no usable index file)."""

    kind: str
    rows: np.ndarray
    distinct: np.ndarray
    null_rows: np.ndarray
    pairs: np.ndarray
    max_rows: np.ndarray  # most rows of one key in the file
    indexed: np.ndarray
    low: np.ndarray | None = None  # the column's min/max as integers (None: not an integer column)
    high: np.ndarray | None = None


Bounds = tuple[np.ndarray, np.ndarray]  # (upper, expected) per candidate file
_RANGE = {"lt", "lt_eq", "gt", "gt_eq", "eq"}


Known = Mapping[Predicate | tuple[Predicate, ...], np.ndarray]
"""Rows per candidate a leaf (or a group of ranges ANDed on one column, ``range_groups``) selects,
looked up in the global term dictionary: exact for an exact lookup (an upper bound on the
candidates of an inexact one); NaN where the dictionary does not answer for the file."""


def bounds(
    bound: Expression,
    facts: Mapping[Predicate, FileFacts],
    n: np.ndarray,
    absent: Mapping[Predicate, np.ndarray] | None = None,
    known: Known | None = None,
) -> Bounds:
    """Per candidate file: at most how many rows ``bound`` selects, and how many are expected.
    ``facts[leaf]`` for each leaf an index answers (others select every row); ``absent[leaf][i]``
    True: a bloom filter proves candidate ``i`` holds none of the leaf's keys; ``known``: the
    dictionary's counts, which replace both the bound and the expectation where given."""
    rows = n.astype(np.float64)
    absent = absent or {}
    known = known or {}

    def counted(key: Predicate | tuple[Predicate, ...], up: np.ndarray, ex: np.ndarray) -> Bounds:
        k = known.get(key)
        if k is None:
            return up, ex
        have = ~np.isnan(k)
        exact = np.minimum(np.where(have, k, 0.0), rows)
        return np.where(have, exact, up), np.where(have, exact, ex)

    def walk(e: Expression) -> Bounds:
        if isinstance(e, Predicate):
            f = facts.get(e)
            if f is None:
                return rows, rows
            up, ex = _leaf(e, f)
            up, ex = np.where(f.indexed, np.minimum(up, rows), rows), np.where(f.indexed, ex, rows)
            up, ex = counted(e, up, ex)
            if e in absent:
                up, ex = np.where(absent[e], 0.0, up), np.where(absent[e], 0.0, ex)
            return up, ex
        if isinstance(e, AlwaysFalse):
            return np.zeros_like(rows), np.zeros_like(rows)
        if isinstance(e, AlwaysTrue):
            return rows, rows
        parts = [walk(c) for c in e.children]
        if isinstance(e, And):
            groups = [g for g in _groups_of(conjuncts(e)) if g in known]
            # A range the dictionary counts is not also guessed as an interval (a lower guess).
            done = {g[0].term.name for g in groups}
            leaves = [c for c in e.children if isinstance(c, Predicate) and c.term.name not in done]
            parts += _intervals(leaves, facts, rows)
            parts += [counted(g, rows, rows) for g in groups]
            return np.minimum.reduce([p[0] for p in parts]), np.minimum.reduce([p[1] for p in parts])
        return (
            np.minimum(rows, np.add.reduce([p[0] for p in parts])),
            np.minimum(rows, np.add.reduce([p[1] for p in parts])),
        )

    return walk(bound)


def _leaf(leaf: Predicate, f: FileFacts) -> Bounds:
    live = np.maximum(f.rows - f.null_rows, 0.0)
    per_key = (
        f.pairs / np.maximum(f.distinct, 1.0) if f.kind == "term" else live / np.maximum(f.distinct, 1.0)
    )
    op = leaf.op
    if f.kind == "term":
        if op == "contains_term":
            return f.max_rows, per_key
        return f.rows, np.minimum(f.rows, per_key * 10)  # candidates of a prefix or substring
    if op == "eq":
        return f.max_rows, per_key
    if op == "in":
        k = float(len(leaf.args[1]))
        return np.minimum(live, k * f.max_rows), np.minimum(live, k * per_key)
    if op == "is_null":
        return f.null_rows, f.null_rows
    if op in _RANGE:
        return _interval_bounds(_interval([leaf]), f, live)
    return live, live


def conjuncts(e: Expression) -> list[Expression]:
    """The operands of a chain of ANDs (``And`` builds balanced trees: the chain is flattened)."""
    if isinstance(e, And):
        return [c for child in e.children for c in conjuncts(child)]
    return [e]


def range_groups(e: Expression) -> list[tuple[Predicate, ...]]:
    """Every group of two or more ranges ANDed on one column in ``e`` (``a BETWEEN x AND y``), as
    one interval a dictionary lookup answers exactly (each half alone selects far more)."""
    out: dict[tuple[Predicate, ...], None] = {}
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, And):
            out.update(dict.fromkeys(_groups_of(conjuncts(node))))
        stack.extend(getattr(node, "children", ()))
    return list(out)


def _groups_of(operands: list[Expression]) -> list[tuple[Predicate, ...]]:
    by_column: dict[str, list[Predicate]] = {}
    for leaf in operands:
        if isinstance(leaf, Predicate) and leaf.op in _BOUNDS:
            by_column.setdefault(leaf.term.name, []).append(leaf)
    return [tuple(g) for g in by_column.values() if len(g) > 1]


_BOUNDS = {"lt", "lt_eq", "gt", "gt_eq"}


def _intervals(
    leaves: list[Predicate], facts: Mapping[Predicate, FileFacts], rows: np.ndarray
) -> list[Bounds]:
    """The ranges ANDed on one integer column, bounded as one interval (``a BETWEEN x AND y``)."""
    by_column: dict[str, list[Predicate]] = {}
    for leaf in leaves:
        f = facts.get(leaf)
        if f is not None and f.kind == "value" and f.low is not None and leaf.op in _RANGE:
            by_column.setdefault(leaf.term.name, []).append(leaf)
    out = []
    for group in by_column.values():
        if len(group) > 1:
            f = facts[group[0]]
            up, ex = _interval_bounds(_interval(group), f, np.maximum(f.rows - f.null_rows, 0.0))
            out.append((np.where(f.indexed, np.minimum(up, rows), rows), np.where(f.indexed, ex, rows)))
    return out


def _interval(leaves: list[Predicate]) -> tuple[float, float] | None:
    """The integers ``leaves`` (ranges on one integer column) all admit, as [low, high]."""
    low, high = -np.inf, np.inf
    for leaf in leaves:
        v = _integer(leaf.args[1])
        if v is None:
            return None
        op = leaf.op
        if op in ("gt", "gt_eq", "eq"):
            low = max(low, v + 1 if op == "gt" else v)
        if op in ("lt", "lt_eq", "eq"):
            high = min(high, v - 1 if op == "lt" else v)
    return low, high


def _interval_bounds(interval: tuple[float, float] | None, f: FileFacts, live: np.ndarray) -> Bounds:
    """Keys of an integer column in [low, high] within each file's [min, max]: at most one per
    integer (and at most ``distinct``), each in at most ``max_rows`` rows; expected: uniform."""
    if interval is None or f.low is None or f.high is None:
        return live, live / 3
    lo = np.maximum(interval[0], f.low)
    hi = np.minimum(interval[1], f.high)
    width = np.maximum(hi - lo + 1, 0.0)
    known = ~(np.isnan(f.low) | np.isnan(f.high))
    keys = np.minimum(width, f.distinct)
    upper = np.where(known, np.minimum(live, keys * f.max_rows), live)
    span = np.maximum(f.high - f.low + 1, 1.0)
    expected = np.where(known, live * np.minimum(width / span, 1.0), live / 3)
    return upper, expected


def _integer(value: object) -> float | None:
    """A range literal as an integer of its column's storage (None: not an integer-like type)."""
    if not isinstance(value, pa.Scalar):
        return None
    t = value.type
    if not (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)):
        return None
    if not value.is_valid:
        return None
    storage = pa.int32() if pa.types.is_date32(t) else pa.int64()
    return float(pa.array([value]).cast(storage)[0].as_py())


def integer_bounds(low: pa.Array, high: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-file min/max of an integer-like column as float arrays (NaN: unknown), or None."""
    t = low.type
    if not (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)):
        return None
    storage = pa.int32() if pa.types.is_date32(t) else pa.int64()

    def one(a: pa.Array) -> np.ndarray:
        return pc.cast(a.cast(storage), pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)

    return one(low), one(high)


# ----------------------------------------------------------------------------- calibration


def calibrate(reader: str = "pyarrow", folder: Path | None = None) -> Costs:
    """Measure ``reader``'s main constants in this process on files written for it (a second or
    two): the lookup, the per-file and the per-value costs; the others keep their stored values.
    ``duckdb`` needs the duckdb package. Pass the result to ``use_costs`` to use it."""
    base = stored_costs(reader)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        rng = np.random.default_rng(0)
        small = pa.table({f"c{i}": rng.integers(0, 300, 3_000) for i in range(8)})
        big = pa.table({f"c{i}": rng.integers(0, 1 << 20, 60_000) for i in range(8)})
        paths = [Path(tmp) / "small.parquet", Path(tmp) / "big.parquet"]
        pq.write_table(small, paths[0])
        pq.write_table(big, paths[1], row_group_size=base.decode_unit)
        lookup = _lookup_ms(Path(tmp), small)
        if reader == "duckdb":
            import duckdb

            con = duckdb.connect()
            a, b = (str(p).replace("'", "''") for p in paths)
            # Ten reads of the small file in one query: the per-file cost without the query's own.
            ten = ", ".join([f"'{a}'"] * 10)
            files_ms = _best(lambda: con.sql(f"SELECT * FROM read_parquet([{ten}])").fetchall())
            big_ms = _best(lambda: con.sql(f"SELECT * FROM read_parquet('{b}')").fetchall())
            filt_ms = _best(
                lambda: con.sql(f"SELECT count(*) FROM read_parquet('{b}') WHERE c0 = 7").fetchall()
            )
        else:
            files_ms = 10 * _best(lambda: pq.read_table(paths[0]))
            big_ms = _best(lambda: pq.read_table(paths[1]))
            filt_ms = big_ms / 8
    value = big_ms / (8 * len(big))
    per_file = max(files_ms / 10 - 8 * len(small) * value, 0.01)
    return dataclasses.replace(
        base,
        lookup_file=lookup,
        scan_file=per_file,
        read_file=per_file * base.read_file / max(base.scan_file, 1e-9),
        value=value,
        filter_value=filt_ms / len(big),
        origin="calibrated",
    )


def _lookup_ms(folder: Path, table: pa.Table) -> float:
    """One lookup in a value index file written for a file like the calibration's."""
    from hudi_expr import col
    from index_store.secondary.build import FileTask, index_file_bytes_for
    from index_store.secondary.format import IndexFile

    data = folder / "data.parquet"
    pq.write_table(table.select(["c0"]), data)
    st = data.stat()
    task = FileTask(
        "value", "data.parquet", st.st_size, st.st_mtime_ns, len(table), 0, None, ("c0",), (pa.int64(),)
    )
    content, _ = index_file_bytes_for(str(folder), task)
    (folder / "index.parquet").write_bytes(content)
    key = int(table["c0"][5].as_py())
    expr = (col("c0") == key).bind(pa.schema([pa.field("c0", pa.int64())]))
    return _best(lambda: IndexFile(folder / "index.parquet").rows("c0", expr))


def _best(fn: Callable[[], object], repeat: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return min(times)


def _main() -> None:
    for reader in _STORED:
        try:
            print(dataclasses.asdict(calibrate(reader)))
        except ImportError as exc:
            print(f"{reader}: {exc}")


if __name__ == "__main__":
    _main()
