"""The ``hudi_index`` Spark data source against Spark's own parquet reader.

Random predicates (seeded) run through ``spark.read.format("hudi_index").load(path).filter(p)`` must
give the same multiset of rows as Spark's parquet reader over every file (row count and a sum of
row hashes per predicate). Spark jobs are slow, so each batch of predicates is one query: on the
data source side a UNION ALL of one filtered scan per predicate (each scan is planned, pushed down
and pruned on its own), on the reference side one scan computing every predicate's count and hash
sum. The reference scan has no WHERE clause, so Spark's parquet row-group filtering (which drops
NaN rows that Spark's ``d > v`` keeps: NaN is not in parquet min/max) cannot spoil the oracle. The
plan log proves pruning happened, so the comparison cannot pass by reading everything.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import datasource as sds
from pyspark.sql.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

import hudi_expr as hx
from adapters.spark.datasource import (
    SOURCE_NAME,
    FilePartition,
    HudiIndexReader,
    group_files,
    register,
    translate_filter,
    translate_filters,
)
from index_store.table import open_table

ROWS = 4800
FILES = 40
LETTERS = "abcdefghijklmnopqrstuvwxyz"
BASE_DATE = dt.date(2020, 1, 1)
BASE_TS = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
BASE_NTZ = dt.datetime(2024, 3, 9)  # LA's clocks jump on 2024-03-10: no effect on wall-clock values
REGIONS = ["east", "north", "west"]

DATA_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("d", pa.float64()),
        ("f", pa.float32()),
        ("s", pa.string()),
        ("dt", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("dec", pa.decimal128(10, 2)),
        ("st", pa.struct([("f", pa.int64()), ("g", pa.string())])),
    ]
)
COLUMNS = ", ".join(f"`{name}`" for name in DATA_SCHEMA.names)

# ------------------------------------------------------------------------------------------ data


def _row(k: int, noise: float) -> dict[str, Any]:
    """Row ``k``: every column grows with ``k`` (so a clustered layout prunes on each), with NULLs,
    and NaN in a few files' ``d`` and ``f``."""
    return {
        "id": k,
        "i": None if k % 23 == 5 else (k * 7) // 40,
        "d": None if k % 31 == 7 else (float("nan") if k % 397 == 3 else k / 10 + noise),
        "f": None if k % 41 == 1 else (float("nan") if k % 1201 == 9 else float(k // 8) - 0.5),
        "s": None if k % 29 == 11 else f"{LETTERS[k * 26 // ROWS]}{k:05d}",
        "dt": BASE_DATE + dt.timedelta(days=k // 30),
        "ts": None if k % 43 == 0 else BASE_TS + dt.timedelta(minutes=7 * k),
        "ntz": BASE_NTZ + dt.timedelta(minutes=3 * k),
        "dec": decimal.Decimal(k * 125 - 20000) / 100,
        "st": None if k % 37 == 2 else {"f": k // 3, "g": f"g{k % 50:02d}"},
    }


def _rows(seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [_row(k, rnd.random()) for k in range(ROWS)]


def _write_flat(root: Path, rows: list[dict[str, Any]]) -> None:
    root.mkdir(parents=True)
    per = len(rows) // FILES
    for j in range(FILES):
        chunk = pa.Table.from_pylist(rows[j * per : (j + 1) * per], schema=DATA_SCHEMA)
        pq.write_table(chunk, root / f"part-{j:03d}.parquet")


def _region(k: int) -> str | None:
    return None if k % 53 == 0 else REGIONS[k * 3 // ROWS]


def _write_hive(root: Path, rows: list[dict[str, Any]]) -> None:
    """``region=<r>/bucket=<b>/`` folders (NULL regions under Hive's default partition), 2 files each."""
    groups: dict[tuple[str | None, int], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((_region(row["id"]), row["id"] % 4), []).append(row)
    for (region, bucket), members in groups.items():
        folder = root / f"region={region or '__HIVE_DEFAULT_PARTITION__'}" / f"bucket={bucket}"
        folder.mkdir(parents=True)
        half = len(members) // 2
        for j, chunk in enumerate((members[:half], members[half:])):
            pq.write_table(pa.Table.from_pylist(chunk, schema=DATA_SCHEMA), folder / f"part-{j}.parquet")


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three indexed tables of the same rows: clustered, shuffled, and hive-partitioned."""
    base = tmp_path_factory.mktemp("spark_ds")
    rows = _rows(seed=7)
    shuffled = list(rows)
    random.Random(11).shuffle(shuffled)
    roots = {name: base / name for name in ("clustered", "random", "hive")}
    _write_flat(roots["clustered"], rows)
    _write_flat(roots["random"], shuffled)
    _write_hive(roots["hive"], rows)
    for root in roots.values():
        open_table(root).build()
    return roots


# Neither changes results; both make planning and running hundreds of tiny scans faster.
FAST_CONF = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false"}


@pytest.fixture(scope="module")
def source(spark: SparkSession) -> Iterator[SparkSession]:
    """The shared session with ``hudi_index`` registered (and ``FAST_CONF`` for this module)."""
    register(spark)
    old = {key: spark.conf.get(key) for key in FAST_CONF}
    for key, value in FAST_CONF.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in old.items():
        spark.conf.set(key, value)


@contextmanager
def session_zone(spark: SparkSession, zone: str) -> Iterator[None]:
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


# ------------------------------------------------------------------------------------ predicates


@dataclass(frozen=True)
class _Col:
    """A column the generator may test: its SQL name, a literal maker and a value sampler."""

    name: str
    sample: Callable[[random.Random], Any]
    literal: Callable[[Any], str]
    nan: bool = False
    text: bool = False


def _num(v: Any) -> str:
    return repr(v)


def _double(v: float) -> str:
    return "double('NaN')" if v != v else f"CAST({v!r} AS DOUBLE)"


def _quote(v: str) -> str:
    return "'" + v.replace("'", "''") + "'"


def _ts(v: dt.datetime) -> str:
    # Read in the session zone: under America/Los_Angeles the same text is a later instant.
    return f"TIMESTAMP'{v:%Y-%m-%d %H:%M:%S}'"


def _k(r: random.Random) -> int:
    return r.randrange(-50, ROWS + 50)


DATA_COLUMNS = [
    _Col("id", _k, _num),
    _Col("i", lambda r: (_k(r) * 7) // 40, _num),
    _Col("d", lambda r: r.choice([float("nan"), _k(r) / 10, float(_k(r) // 10)]), _double, nan=True),
    _Col("f", lambda r: r.choice([float("nan"), float(_k(r) // 8) - 0.5, _k(r) / 8]), _double, nan=True),
    _Col(
        "s", lambda r: f"{LETTERS[r.randrange(26)]}{_k(r):05d}"[: r.choice([1, 2, 3, 6])], _quote, text=True
    ),
    _Col("dt", lambda r: BASE_DATE + dt.timedelta(days=_k(r) // 30), lambda v: f"DATE'{v}'"),
    _Col("ts", lambda r: BASE_TS + dt.timedelta(minutes=7 * _k(r) + r.randrange(-600, 600)), _ts),
    _Col(
        "ntz",
        lambda r: BASE_NTZ + dt.timedelta(minutes=3 * _k(r) + r.randrange(-5, 5)),
        lambda v: f"TIMESTAMP_NTZ'{v:%Y-%m-%d %H:%M:%S}'",
    ),
    _Col("dec", lambda r: decimal.Decimal(_k(r) * 125 - 20000 + r.choice([0, 0, 1, -3])) / 100, str),
    _Col("st.f", lambda r: _k(r) // 3, _num),
    _Col("st.g", lambda r: f"g{r.randrange(52):02d}", _quote, text=True),
]
HIVE_COLUMNS = [
    _Col("region", lambda r: r.choice([*REGIONS, "south"]), _quote, text=True),
    _Col("bucket", lambda r: r.randrange(-1, 6), _num),
]
# Predicates Spark cannot push (or pushes in a form no rule uses): they must still be right.
ODD_PREDICATES = [
    "isnan(d)",
    "NOT isnan(f)",
    "s LIKE '%7'",
    "s LIKE '%12%'",
    "st IS NULL",
    "dt < TIMESTAMP'2020-03-01 12:00:00'",
    "ntz > TIMESTAMP'2024-03-12 07:30:00'",
    "ts >= TIMESTAMP_NTZ'2024-01-05 10:00:00'",
    "ts < TIMESTAMP'2024-01-03 10:00:00+05:00'",
    "d > CAST('Infinity' AS DOUBLE)",
    "f >= CAST('-Infinity' AS DOUBLE)",
    "i IN (3, 5, NULL)",
    "NOT (i IN (3, 5, NULL))",
    "d <=> double('NaN')",
    "dec <=> NULL",
    "id % 7 = 3",
]


class PredicateGen:
    """Seeded random SQL predicates: comparisons, IN, NULL tests, LIKE, NOT, AND, OR."""

    def __init__(self, seed: int, columns: list[_Col]) -> None:
        self.rnd = random.Random(seed)
        self.columns = columns

    def many(self, n: int) -> list[str]:
        return [self.predicate(depth=2) for _ in range(n)]

    def predicate(self, depth: int) -> str:
        roll = self.rnd.random()
        if depth == 0 or roll < 0.55:
            return self.leaf()
        if roll < 0.75:
            return f"({self.predicate(depth - 1)}) AND ({self.predicate(depth - 1)})"
        if roll < 0.9:
            return f"({self.predicate(depth - 1)}) OR ({self.predicate(depth - 1)})"
        return f"NOT ({self.predicate(depth - 1)})"

    def leaf(self) -> str:
        c = self.rnd.choice(self.columns)
        lit = lambda: c.literal(c.sample(self.rnd))  # noqa: E731
        kind = self.rnd.random()
        if kind < 0.08:
            return f"{c.name} IS {self.rnd.choice(['', 'NOT '])}NULL"
        if kind < 0.2:
            values = ", ".join(lit() for _ in range(self.rnd.randrange(1, 5)))
            return f"{c.name} {self.rnd.choice(['', 'NOT '])}IN ({values})"
        if kind < 0.27:
            low, high = sorted([c.sample(self.rnd), c.sample(self.rnd)], key=_order)
            return f"{c.name} BETWEEN {c.literal(low)} AND {c.literal(high)}"
        if c.text and kind < 0.45:
            return f"{c.name} {self.rnd.choice(['', 'NOT '])}LIKE {_quote(str(c.sample(self.rnd)) + '%')}"
        op = self.rnd.choice(["=", "<>", "<", "<=", ">", ">=", "<=>"])
        return f"{c.name} {op} {lit()}"


def _order(v: Any) -> Any:
    return (1, 0) if isinstance(v, float) and v != v else (0, v)  # NaN last, as in Spark


# ------------------------------------------------------------------------------------- the check


def _reference(spark: SparkSession, root: Path, schema: StructType, predicates: list[str]) -> list[tuple]:
    """Per predicate, (matching rows, sum of their row hashes), from one scan of every file."""
    spark.read.schema(schema).parquet(str(root)).createOrReplaceTempView("spark_ds_reference")
    cols = ", ".join(f"`{f.name}`" for f in schema.fields)
    aggs = ", ".join(
        f"count_if({p}), sum(if({p}, CAST(xxhash64({cols}) AS DECIMAL(38,0)), 0))" for p in predicates
    )
    row = spark.sql(f"SELECT {aggs} FROM spark_ds_reference").collect()[0]
    return [(row[2 * k], row[2 * k + 1] or 0) for k in range(len(predicates))]


def _through_source(
    spark: SparkSession, root: Path, predicates: list[str], log: Path, files_per_partition: int = 64
) -> tuple[list[tuple], StructType]:
    """Per predicate, (rows, hash sum) read through ``hudi_index`` with the predicate as a filter.

    Each predicate gets its own ``load()``: Spark 4.3 keeps a data source's planned read on the
    loaded relation, so scans sharing one would share one pruning (see the module docstring)."""
    schema = spark.read.format(SOURCE_NAME).load(str(root)).schema
    reader = (
        spark.read.format(SOURCE_NAME)
        .schema(schema)  # no schema() round trip to Python per load
        .option("planLog", str(log))
        .option("singleScan", "true")
        .option("maxFilesPerPartition", str(files_per_partition))
    )
    for k in range(len(predicates)):
        reader.load(str(root)).createOrReplaceTempView(f"spark_ds_pruned_{k}")
    cols = ", ".join(f"`{f.name}`" for f in schema.fields)
    branches = " UNION ALL ".join(
        f"SELECT {k} AS k, xxhash64({cols}) AS h FROM spark_ds_pruned_{k} WHERE {p}"
        for k, p in enumerate(predicates)
    )
    sql = f"SELECT k, count(*) AS n, sum(CAST(h AS DECIMAL(38,0))) AS h FROM ({branches}) GROUP BY k"
    found = {r.k: (r.n, r.h) for r in spark.sql(sql).collect()}
    return [found.get(k, (0, 0)) for k in range(len(predicates))], schema


def _plans(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _compare(spark: SparkSession, root: Path, predicates: list[str], log: Path) -> list[dict[str, Any]]:
    """Assert both readers agree on every predicate; returns the scans' plan records."""
    got, schema = _through_source(spark, root, predicates, log)
    want = _reference(spark, root, schema, predicates)
    wrong = [(p, g, w) for p, g, w in zip(predicates, got, want, strict=True) if g != w]
    assert not wrong, f"{len(wrong)} of {len(predicates)} predicates differ, e.g. {wrong[:3]}"
    assert sum(1 for n, _ in want if 0 < n < ROWS) > len(predicates) // 3, "too few selective predicates"
    # One record per scan planned with pushed filters (a scan with none is planned without them).
    plans = _plans(log)
    assert len(plans) > len(predicates) // 2
    return plans


def _pruned_share(plans: list[dict[str, Any]]) -> float:
    """The share of scans that skipped at least one file."""
    return sum(1 for p in plans if p["kept"] < p["total"]) / len(plans)


# ---------------------------------------------------------------------------- differential tests


def test_clustered_random_predicates(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    predicates = PredicateGen(1, DATA_COLUMNS).many(100) + ODD_PREDICATES
    plans = _compare(source, tables["clustered"], predicates, tmp_path / "plans.jsonl")
    assert _pruned_share(plans) > 0.4
    kept = sum(p["kept"] for p in plans) / sum(p["total"] for p in plans)
    assert kept < 0.75, f"clustered data should prune: kept {kept:.0%} of the files scanned"


def test_clustered_in_los_angeles(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    """Timestamp text is read in the session zone; LTZ filter values must still be instants."""
    columns = [c for c in DATA_COLUMNS if c.name in ("ts", "ntz", "dt", "id")]
    predicates = [*PredicateGen(2, columns).many(40), *ODD_PREDICATES[5:9]]
    with session_zone(source, "America/Los_Angeles"):
        plans = _compare(source, tables["clustered"], predicates, tmp_path / "plans.jsonl")
    assert _pruned_share(plans) > 0.4


def test_random_layout(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    predicates = PredicateGen(3, DATA_COLUMNS).many(40)
    _compare(source, tables["random"], predicates, tmp_path / "plans.jsonl")


def test_hive_partitioned(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    gen = PredicateGen(4, DATA_COLUMNS + HIVE_COLUMNS * 4)
    predicates = [*gen.many(50), "region IS NULL", "region = 'east' AND bucket = 2"]
    log = tmp_path / "plans.jsonl"
    plans = _compare(source, tables["hive"], predicates, log)
    assert _pruned_share(plans) > 0.4
    df = (
        source.read.format(SOURCE_NAME)
        .option("planLog", str(log))
        .option("singleScan", "true")
        .load(str(tables["hive"]))
    )
    assert df.filter("region = 'east' AND bucket = 2").count() == len(
        [k for k in range(ROWS) if _region(k) == "east" and k % 4 == 2]
    )
    assert (_plans(log)[-1]["kept"], _plans(log)[-1]["total"]) == (2, 32)  # region=east/bucket=2


# --------------------------------------------------------------------------------- whole reads


def test_full_read_matches_parquet(source: SparkSession, tables: dict[str, Path]) -> None:
    """Every row, NaN, NULL struct and partition value included, read back exactly."""
    for root in tables.values():
        ours = source.read.format(SOURCE_NAME).option("maxFilesPerPartition", "3").load(str(root))
        theirs = source.read.schema(ours.schema).parquet(str(root))
        assert ours.count() == ROWS
        assert ours.exceptAll(theirs).count() == 0
        assert theirs.exceptAll(ours).count() == 0


def test_schema(source: SparkSession, tables: dict[str, Path]) -> None:
    schema = source.read.format(SOURCE_NAME).load(str(tables["hive"])).schema
    types = {f.name: f.dataType for f in schema.fields}
    assert types["ts"] == TimestampType() and types["ntz"] == TimestampNTZType()
    assert types["dec"] == DecimalType(10, 2) and types["dt"] == DateType()
    assert types["region"] == StringType() and types["bucket"] == LongType()  # typed as DuckDB does
    assert schema.fieldNames()[-2:] == ["region", "bucket"]
    assert all(f.nullable for f in schema.fields)


@pytest.mark.xfail(
    strict=True, reason="Spark 4.3.0 passes no OPTIONS (not even path) to a Python data source table"
)
def test_sql_table(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    root = tables["clustered"]
    log = tmp_path / "plans.jsonl"
    source.sql("DROP TABLE IF EXISTS spark_ds_sql")
    source.sql(f"CREATE TABLE spark_ds_sql USING {SOURCE_NAME} OPTIONS (path '{root}', planLog '{log}')")
    try:
        n = source.sql("SELECT count(*) FROM spark_ds_sql WHERE id BETWEEN 100 AND 219").collect()[0][0]
    finally:
        source.sql("DROP TABLE IF EXISTS spark_ds_sql")
    assert n == 120
    assert (_plans(log)[-1]["kept"], _plans(log)[-1]["total"]) == (1, FILES)


def test_reused_dataframe_is_right_without_single_scan(
    source: SparkSession, tables: dict[str, Path], tmp_path: Path
) -> None:
    log = tmp_path / "plans.jsonl"
    df = source.read.format(SOURCE_NAME).option("planLog", str(log)).load(str(tables["clustered"]))
    assert df.filter("id < 100").count() == 100
    assert _plans(log)[-1]["kept"] == _plans(log)[-1]["total"] == FILES  # no pruning without the option
    assert "singleScan" in _plans(log)[-1]["note"]
    assert df.count() == ROWS
    assert df.union(df.filter("id < 100")).count() == ROWS + 100


@pytest.mark.xfail(
    strict=True,
    reason="Spark 4.3.0 stores a Python data source's planned read on the loaded relation: a later "
    "scan of the same DataFrame without pushed filters reuses the earlier scan's pruned partitions",
)
def test_reused_dataframe_with_single_scan(source: SparkSession, tables: dict[str, Path]) -> None:
    df = source.read.format(SOURCE_NAME).option("singleScan", "true").load(str(tables["clustered"]))
    assert df.filter("id < 100").count() == 100
    assert df.count() == ROWS  # Spark 4.3.0 gives 120: the rows of the one file kept above


def test_pruning_counts(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    """Exact kept-file counts for filters whose answer is known from the layout."""
    log = tmp_path / "plans.jsonl"
    df = (
        source.read.format(SOURCE_NAME)
        .option("planLog", str(log))
        .option("singleScan", "true")
        .load(str(tables["clustered"]))
    )
    nan = [k for k in range(ROWS) if k % 397 == 3 and k % 31 != 7]
    cases: list[tuple[str, list[int]]] = [  # predicate, the ids of the matching rows
        ("id < 100", list(range(100))),
        ("d = double('NaN')", nan),
        ("d > 1e9", nan),  # NaN is above every number in Spark
        ("st.f = 30", [90, 91, 92]),
        ("s LIKE 'b%'", [k for k in range(ROWS) if k * 26 // ROWS == 1 and k % 29 != 11]),
        ("ntz >= TIMESTAMP_NTZ'2024-03-18 00:00:00'", list(range(9 * 24 * 20, ROWS))),
    ]
    for predicate, ids in cases:
        got = sorted(r.id for r in df.filter(predicate).select("id").collect())
        assert got == ids, predicate
        files = {k // (ROWS // FILES) for k in ids}  # the clustered layout: one run of ids per file
        assert _plans(log)[-1]["kept"] == len(files), predicate


def test_empty_result_keeps_schema(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    log = tmp_path / "plans.jsonl"
    df = (
        source.read.format(SOURCE_NAME)
        .option("planLog", str(log))
        .option("singleScan", "true")
        .load(str(tables["clustered"]))
    )
    empty = df.filter("id < -5")
    assert empty.collect() == [] and empty.schema == df.schema
    assert (_plans(log)[-1]["kept"], _plans(log)[-1]["partitions"]) == (0, 0)


def test_timestamp_filter_values(source: SparkSession, tables: dict[str, Path], tmp_path: Path) -> None:
    """pyspark sends TIMESTAMP values as aware UTC datetimes, TIMESTAMP_NTZ as naive, in any zone."""
    for zone in ("UTC", "America/Los_Angeles"):
        log = tmp_path / f"{zone.replace('/', '_')}.jsonl"
        df = (
            source.read.format(SOURCE_NAME)
            .option("planLog", str(log))
            .option("singleScan", "true")
            .load(str(tables["clustered"]))
        )
        with session_zone(source, zone):
            df.filter("ts = TIMESTAMP'2024-01-01 16:00:00'").count()
            df.filter("ntz = TIMESTAMP_NTZ'2024-03-10 02:30:00'").count()
        ts_plan, ntz_plan = _plans(log)
        hour = "16" if zone == "UTC" else "0"  # 16:00 in LA is midnight UTC the next day
        assert f"2024, 1, {1 if zone == 'UTC' else 2}, {hour}, 0, tzinfo=zoneinfo.ZoneInfo(key='UTC')" in str(
            ts_plan["filters"]
        )
        assert "datetime.datetime(2024, 3, 10, 2, 30)" in str(ntz_plan["filters"])
        assert ts_plan["kept"] == 1 and ntz_plan["kept"] == 1


def test_pushdown_disabled_fails_loudly(source: SparkSession, tables: dict[str, Path]) -> None:
    key = "spark.sql.python.filterPushdown.enabled"
    source.conf.set(key, "false")
    try:
        with pytest.raises(PySparkException, match="DATA_SOURCE_PUSHDOWN_DISABLED"):
            source.read.format(SOURCE_NAME).load(str(tables["clustered"])).filter("id < 5").collect()
    finally:
        source.conf.set(key, "true")


# ------------------------------------------------------------------------- translation (no Spark)

SCHEMA = StructType(
    [
        StructField("x", LongType()),
        StructField("d", DoubleType()),
        StructField("g", FloatType()),
        StructField("ts", TimestampType()),
        StructField("ntz", TimestampNTZType()),
        StructField("s", StringType()),
        StructField("st", StructType([StructField("Inner", LongType())])),
    ]
)
UTC_NOON = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("f", "expected"),
    [
        (sds.EqualTo(("x",), 5), hx.col("x") == 5),
        (sds.Not(sds.EqualTo(("x",), 5)), hx.Not(hx.col("x") == 5)),
        (sds.GreaterThan(("d",), 5.0), hx.Or(hx.col("d") > 5.0, hx.IsNaN("d"))),
        (sds.GreaterThanOrEqual(("g",), 1.5), hx.Or(hx.col("g") >= 1.5, hx.IsNaN("g"))),
        (sds.LessThan(("d",), 5.0), hx.col("d") < 5.0),
        (sds.EqualTo(("d",), float("nan")), hx.Or(hx.col("d") == float("nan"), hx.IsNaN("d"))),
        (sds.In(("d",), (1.0, float("nan"))), hx.Or(hx.In("d", [1.0, float("nan")]), hx.IsNaN("d"))),
        (sds.In(("x",), (1, None, 2)), hx.In("x", [1, 2])),
        (sds.EqualNullSafe(("x",), None), hx.IsNull("x")),
        (sds.EqualNullSafe(("x",), 3), hx.And(hx.col("x") == 3, hx.IsNotNull("x"))),
        (
            sds.Not(sds.EqualNullSafe(("x",), 3)),
            hx.Not(hx.And(hx.col("x") == 3, hx.IsNotNull("x"))),  # NULL rows kept: NULL <=> 3 is FALSE
        ),
        (sds.IsNotNull(("st", "inner")), hx.IsNotNull("st.Inner")),
        (sds.StringStartsWith(("s",), "ab"), hx.StartsWith("s", "ab")),
        (sds.Not(sds.StringStartsWith(("s",), "ab")), hx.Not(hx.StartsWith("s", "ab"))),
        (sds.StringContains(("s",), "b'c"), hx.Contains("s", "b'c")),
        (sds.Not(sds.StringContains(("s",), "z")), hx.Not(hx.Contains("s", "z"))),
        (sds.LessThan(("ts",), UTC_NOON), hx.col("ts") < UTC_NOON),
        (sds.LessThan(("ntz",), dt.datetime(2024, 1, 1)), hx.col("ntz") < dt.datetime(2024, 1, 1)),
    ],
)
def test_translate(f: sds.Filter, expected: hx.Expression) -> None:
    assert translate_filter(f, SCHEMA) == expected


@pytest.mark.parametrize(
    "f",
    [
        sds.StringEndsWith(("s",), "z"),
        sds.EqualTo(("nope",), 1),
        sds.EqualTo(("x", "y"), 1),
        sds.EqualTo(("x",), [1, 2]),
        sds.EqualTo(("x",), None),
        sds.LessThan(("ts",), dt.datetime(2024, 1, 1)),  # naive for TIMESTAMP: not what Spark sends
        sds.LessThan(("ntz",), UTC_NOON),  # aware for TIMESTAMP_NTZ: likewise
    ],
)
def test_untranslatable(f: sds.Filter) -> None:
    assert translate_filter(f, SCHEMA) is None


def test_translate_filters_conjunction() -> None:
    filters = [sds.EqualTo(("x",), 1), sds.StringEndsWith(("s",), "z"), sds.IsNull(("d",))]
    expr, skipped = translate_filters(filters, SCHEMA)
    assert expr == hx.And(hx.col("x") == 1, hx.IsNull("d"))
    assert skipped == [filters[1]]


def test_every_filter_goes_back_to_spark() -> None:
    """Pruning is per file: Spark must re-check each row, so no filter is reported as handled."""
    reader = HudiIndexReader({"path": "/nowhere", "singleScan": "true"}, SCHEMA)
    filters = [sds.EqualTo(("x",), 1), sds.StringEndsWith(("s",), "z")]
    returned = list(reader.pushFilters(filters))
    assert all(a is b for a, b in zip(returned, filters, strict=True)) and len(returned) == 2
    assert reader.expression == (hx.col("x") == 1)
    unpruned = HudiIndexReader({"path": "/nowhere"}, SCHEMA)  # without singleScan: no pruning
    assert len(list(unpruned.pushFilters(filters))) == 2 and unpruned.expression == hx.AlwaysTrue()


def test_group_files() -> None:
    files = [(f"f{i}", size, {}) for i, size in enumerate([50, 50, 50, 200, 10, 10, 10, 10])]
    groups = group_files(files, max_bytes=100, max_files=3)
    assert [[p for p, _ in g] for g in groups] == [["f0", "f1"], ["f2"], ["f3"], ["f4", "f5", "f6"], ["f7"]]
    assert group_files([], 100, 3) == []
    assert FilePartition().files == []


def test_temporary_view_in_sql_reads_right(source: SparkSession, tables: dict[str, Path]) -> None:
    # SQL access: CREATE TEMPORARY VIEW ... USING gets its options (CREATE TABLE does not, above).
    # Without singleScan nothing is pruned, so queries after the first stay right.
    root = tables["clustered"]
    source.sql(f"CREATE OR REPLACE TEMPORARY VIEW spark_ds_view USING {SOURCE_NAME} OPTIONS (path '{root}')")
    try:
        assert source.sql("SELECT count(*) FROM spark_ds_view WHERE id < 100").collect()[0][0] == 100
        assert source.sql("SELECT count(*) FROM spark_ds_view").collect()[0][0] == ROWS
    finally:
        source.catalog.dropTempView("spark_ds_view")
