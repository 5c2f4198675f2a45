"""Facts the statistics imply without saying them, checked against DuckDB on real parquet files.

1. A float column whose rows are all NaN or NULL (``nan_count == row_count - null_count``) has no
   value the bounds describe: ``=``, ``<``, ``<=`` and ``IN`` cannot match it, while ``>``, ``>=``,
   ``!=`` and ``NOT IN`` hold for every non-NULL row (NaN sorts above every number and differs
   from each). ``nan_count == row_count`` also means no NULL, whatever the NULL count says.
2. A column the schema declares non-nullable (parquet REQUIRED, through every struct on its path)
   has 0 NULLs where the count is missing; a column some files lack is nullable in the union.

Each file's truth comes from DuckDB reading it (``can_have_nan``: DuckDB's own row-group pruning
would drop NaN rows otherwise); ``might_match`` must keep every file with a TRUE row and
``all_match`` may say TRUE only where every row is TRUE. The tests also pin where the facts prune
or prove what unknown bounds alone could not.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_expr import Expression, FileStats, all_match, col, might_match
from index_store import open_table

NAN = float("nan")

# Predicates on a float column x, each printed as SQL for DuckDB.
FLOAT_PREDICATES: list[Expression] = [
    col("x") == 1.0,
    col("x") < 1.0,
    col("x") <= 1.0,
    col("x").isin([1.0, 2.0]),
    col("x") > 1.0,
    col("x") >= 1.0,
    col("x") != 5.0,
    col("x").notin([1.0, 2.0]),
    col("x") > float("inf"),
    col("x").is_nan(),
    col("x").is_not_nan(),
    col("x").is_null(),
    col("x").is_not_null(),
    col("x") == NAN,
    col("x") > NAN,
    col("x") <= NAN,
    ~(col("x") < 1.0),
    (col("x") < 0.0) | (col("x") > 0.0),
]


def truth(paths: list[str], expr: Expression) -> tuple[list[bool], list[bool]]:
    """Per file, from DuckDB: does some row make ``expr`` TRUE, does every row?"""
    con = duckdb.connect()
    some, every = [], []
    for path in paths:
        hits, rows = con.execute(
            f"SELECT coalesce(sum(CASE WHEN ({expr}) THEN 1 ELSE 0 END), 0), count(*) "
            f"FROM read_parquet('{path}', can_have_nan = true)"
        ).fetchone()  # type: ignore[misc]
        some.append(hits > 0)
        every.append(hits == rows)
    return some, every


def checked(stats: FileStats, paths: list[str], expr: Expression) -> tuple[list[bool], list[bool]]:
    """might_match and all_match of ``expr``, after checking them against DuckDB's truth."""
    might = might_match(expr, stats).to_pylist()
    surely = all_match(expr, stats).to_pylist()
    some, every = truth(paths, expr)
    for f, path in enumerate(paths):
        name = Path(path).name
        assert might[f] or not some[f], f"{expr}: might_match skips {name}, where a row matches"
        assert every[f] or not surely[f], f"{expr}: all_match says every row of {name} matches"
    return might, surely


def write(root: Path, name: str, table: pa.Table, **options: object) -> str:
    path = root / name
    pq.write_table(table, path, **options)
    return str(path)


def indexed_stats(root: Path, paths: list[str]) -> FileStats:
    """The statistics an index over ``root`` holds (footers, plus NaN counts read from the data),
    in the order of ``paths``."""
    table = open_table(root)
    table.build(progress=False)
    stats = table.stats()
    order = {rel: i for i, rel in enumerate(stats.files.to_pylist())}
    return stats.take([order[Path(p).name] for p in paths])


# ----------------------------------------------------------------------- 1. all NaN (and NULL)

FLOAT_FILES = {
    "only_nan.parquet": [NAN, NAN, NAN],
    "nan_null.parquet": [NAN, None, NAN],
    "nan_numbers.parquet": [NAN, 0.5, 2.0],
    "numbers.parquet": [-1.0, 1.0, 3.0],
    "all_null.parquet": [None, None],
}


@pytest.fixture(params=[pa.float64(), pa.float32()], ids=str)
def float_table(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileStats, list[str]]:
    paths = [
        write(tmp_path, name, pa.table({"x": pa.array(v, request.param)})) for name, v in FLOAT_FILES.items()
    ]
    return indexed_stats(tmp_path, paths), paths


def test_nan_only_files_have_unknown_bounds_and_known_counts(
    float_table: tuple[FileStats, list[str]],
) -> None:
    stats, _ = float_table
    cs = stats.column("x")
    assert cs is not None
    # What the facts start from: parquet writes no bounds for a row group of only NaN.
    assert cs.min.to_pylist()[:2] == [None, None]
    assert cs.nan_count.to_pylist() == [3, 2, 1, 0, 0]
    assert cs.null_count.to_pylist() == [0, 1, 0, 0, 2]


@pytest.mark.parametrize("expr", FLOAT_PREDICATES, ids=str)
def test_float_facts_agree_with_duckdb(float_table: tuple[FileStats, list[str]], expr: Expression) -> None:
    stats, paths = float_table
    might, surely = checked(stats, paths, expr)
    some, every = truth(paths, expr)
    # On the files of only NaN and NULL the counts decide every predicate exactly, as DuckDB does
    # (NOT isnan(NULL) is TRUE in Spark: pruning keeps NULL rows for it, a reading DuckDB lacks).
    decided = ["only_nan.parquet"]
    if "isnan" not in str(expr.bind(stats.schema)):
        decided += ["nan_null.parquet", "all_null.parquet"]
    for f, path in enumerate(paths):
        if Path(path).name in decided:
            assert (might[f], surely[f]) == (some[f], every[f]), f"{expr} on {Path(path).name}"


def test_nan_only_prunes_less_than_equal_and_in(float_table: tuple[FileStats, list[str]]) -> None:
    stats, paths = float_table
    for expr in (col("x") == 1.0, col("x") < 1.0, col("x") <= 1.0, col("x").isin([1.0, 2.0])):
        might, _ = checked(stats, paths, expr)
        # only_nan and nan_null have unknown bounds: only the counts can prune them.
        assert might[:2] == [False, False], expr


def test_nan_only_keeps_greater_than(float_table: tuple[FileStats, list[str]]) -> None:
    stats, paths = float_table
    for expr in (col("x") > 1.0, col("x") >= 1.0, col("x") > float("inf"), col("x") != 5.0):
        might, _ = checked(stats, paths, expr)
        assert might[:2] == [True, True], expr  # NaN > 1 is TRUE


def test_nan_only_all_match(float_table: tuple[FileStats, list[str]]) -> None:
    stats, paths = float_table
    exprs = (col("x") > 1.0, col("x") >= 1.0, col("x") != 5.0, col("x").notin([1.0]), col("x").is_nan())
    for expr in exprs:
        _, surely = checked(stats, paths, expr)
        # Every row of only_nan is NaN; nan_null has a NULL row, which no comparison makes TRUE.
        assert surely[:2] == [True, False], expr


def test_nan_and_null_files_without_null_counts(tmp_path: Path) -> None:
    """Without statistics in the footer the NULL count is unknown; nan_count == row_count still
    says there is no NULL (and no number)."""
    values = {"a.parquet": [NAN, NAN], "b.parquet": [NAN, None], "c.parquet": [1.0, NAN]}
    paths = [
        write(tmp_path, name, pa.table({"x": pa.array(v, pa.float64())}), write_statistics=False)
        for name, v in values.items()
    ]
    stats = indexed_stats(tmp_path, paths)
    cs = stats.column("x")
    assert cs is not None
    assert cs.null_count.to_pylist() == [None, None, None]
    assert cs.nan_count.to_pylist() == [2, 1, 1]
    assert checked(stats, paths, col("x").is_null())[0] == [False, True, True]
    assert checked(stats, paths, col("x") > 1.0)[1] == [True, False, False]
    assert checked(stats, paths, col("x").is_not_null())[1] == [True, False, False]
    # b: one NaN, one row of unknown kind: may be a number below 1.
    assert checked(stats, paths, col("x") < 1.0)[0] == [False, True, True]


# -------------------------------------------------------------------- 2. non-nullable columns


def required_table(
    values: dict[str, list[object]], types: dict[str, pa.DataType], nullable: set[str]
) -> pa.Table:
    fields = [pa.field(name, types[name], nullable=name in nullable) for name in values]
    return pa.table({n: pa.array(v, types[n]) for n, v in values.items()}, schema=pa.schema(fields))


def test_required_columns_without_null_counts(tmp_path: Path) -> None:
    """Footers without statistics: a REQUIRED column's NULL count is 0, a nullable one's unknown."""
    types = {"r": pa.int64(), "n": pa.int64(), "rf": pa.float64()}
    paths = [
        write(
            tmp_path,
            f"p{i}.parquet",
            required_table({"r": [i, i + 1], "n": [i, i + 1], "rf": [NAN, NAN]}, types, {"n"}),
            write_statistics=False,
        )
        for i in range(3)
    ]
    for stats in (FileStats.from_parquet(paths), indexed_stats(tmp_path, paths)):
        assert stats.schema.field("r").nullable is False
        assert stats.column("r").null_count.to_pylist() == [0, 0, 0]  # type: ignore[union-attr]
        assert stats.column("n").null_count.to_pylist() == [None, None, None]  # type: ignore[union-attr]
        assert checked(stats, paths, col("r").is_not_null())[1] == [True] * 3
        assert checked(stats, paths, col("n").is_not_null())[1] == [False] * 3  # not surely
    stats = indexed_stats(tmp_path, paths)
    # Both facts: no NULL (REQUIRED), and every value NaN (counted while indexing).
    for expr in (col("rf") > 1.0, col("rf") != 5.0, col("rf").is_nan()):
        assert checked(stats, paths, expr)[1] == [True] * 3, expr
    assert checked(stats, paths, col("rf") <= 1.0)[0] == [False] * 3


def test_required_field_of_a_nullable_struct_can_be_null(tmp_path: Path) -> None:
    """s.x is REQUIRED inside s, but a NULL s makes it NULL: only a required path fills counts."""
    child = pa.struct([pa.field("x", pa.int64(), nullable=False)])
    paths = []
    for i, (struct_nullable, mask) in enumerate([(True, [False, True]), (False, [False, False])]):
        s = pa.StructArray.from_arrays([pa.array([1, 2])], fields=list(child), mask=pa.array(mask))
        schema = pa.schema([pa.field("s", child, nullable=struct_nullable)])
        paths.append(
            write(tmp_path, f"s{i}.parquet", pa.Table.from_arrays([s], schema=schema), write_statistics=False)
        )
    for f, path in enumerate(paths):
        stats = FileStats.from_parquet([path])
        expected = [None] if f == 0 else [0]
        assert stats.column("s.x").null_count.to_pylist() == expected  # type: ignore[union-attr]
        assert checked(stats, [path], col("s.x").is_not_null())[1] == [f == 1]
        assert checked(stats, [path], col("s.x").is_null())[0] == [f == 0]


def test_a_column_some_files_lack_is_nullable(tmp_path: Path) -> None:
    """A REQUIRED column reads as NULL in a file without it (DuckDB's union_by_name): the union
    schema must not call it non-nullable, or IS NULL would be folded to FALSE and counts filled."""
    with_x = required_table({"x": [1, 2], "y": [1, 2]}, {"x": pa.int64(), "y": pa.int64()}, set())
    paths = [
        write(tmp_path, "a.parquet", with_x, write_statistics=False),
        write(tmp_path, "b.parquet", required_table({"y": [3, 4]}, {"y": pa.int64()}, set())),
    ]
    stats = FileStats.from_parquet(paths)
    assert stats.schema.field("x").nullable and not stats.schema.field("y").nullable
    assert stats.column("x").null_count.to_pylist() == [None, None]  # type: ignore[union-attr]
    for expr in (col("x").is_null(), col("x").is_not_null(), col("y").is_not_null()):
        rows = (
            duckdb.connect()
            .execute(
                f"SELECT bool_or(({expr}) IS TRUE), bool_and(({expr}) IS TRUE) FROM read_parquet({paths}, "
                "union_by_name = true, filename = true) GROUP BY filename ORDER BY filename"
            )
            .fetchall()
        )
        might, surely = might_match(expr, stats).to_pylist(), all_match(expr, stats).to_pylist()
        for f, (some, every) in enumerate(rows):
            assert might[f] or not some, f"{expr}: file {f} skipped"
            assert every or not surely[f], f"{expr}: file {f} said to match everywhere"
    assert might_match(col("x").is_null(), stats).to_pylist() == [True, True]
    assert all_match(col("y").is_not_null(), stats).to_pylist() == [True, True]  # y: every file


def test_the_index_makes_a_column_new_files_lack_nullable(tmp_path: Path) -> None:
    """The same through an index: built on files with a REQUIRED x, then a file without x added."""
    required = required_table({"x": [1, 2], "y": [1, 2]}, {"x": pa.int64(), "y": pa.int64()}, set())
    write(tmp_path, "a.parquet", required)
    table = open_table(tmp_path)
    table.build(progress=False)
    assert not table.snapshot().schema.field("x").nullable
    write(tmp_path, "b.parquet", pa.table({"y": pa.array([3, 4], pa.int64())}))
    table.update(added=["b.parquet"])
    assert table.snapshot().schema.field("x").nullable
    kept = {Path(f).name for f in table.prune(col("x").is_null()).files}
    assert kept == {"b.parquet"}  # DuckDB reads b's x as NULL
    stats = table.stats()
    surely = dict(
        zip(stats.files.to_pylist(), all_match(col("x").is_not_null(), stats).to_pylist(), strict=True)
    )
    assert surely == {"a.parquet": True, "b.parquet": False}


def test_unify_schemas_keeps_required_fields_every_file_has(tmp_path: Path) -> None:
    required = pa.field("x", pa.int64(), nullable=False)
    paths = [
        write(tmp_path, f"p{i}.parquet", pa.Table.from_arrays([pa.array([i])], schema=pa.schema([required])))
        for i in range(2)
    ]
    assert FileStats.from_parquet(paths).schema.field("x").nullable is False
