"""index_store.record_key against the real Hudi tables of tests/data/hudi and Java itself.

Oracles independent of the module: the ``_hoodie_record_key`` Hudi wrote into every base file of
every table (versions 6, 8 and 9; simple, complex, non-partitioned and timestamp-based key
generators), strings written here from Hudi's Java sources (KeyGenUtils, KeyGenerator), and the
JVM's own ``BigDecimal.toString`` / ``LocalDate.toString`` (skipped when no JDK is there).
"""

from __future__ import annotations

import datetime as dt
import decimal
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store.errors import RecordKeyError
from index_store.record_key import RECORD_KEY_META_FIELD, RecordKeySpec
from index_store.tables.hudi_timeline import read_properties

META = RECORD_KEY_META_FIELD

# table -> (fields, column, generator) as from_hudi_properties must read it
EXPECTED_SPECS = {
    "mor_avro_v9_timebasedkeygen_nonhivestyle": (("txn_id",), META, "simple"),  # type TIMESTAMP
    "mor_avro_v9_txns_complex_nometa": (("txn_id", "account_id"), META, "complex"),  # type COMPLEX
    "mor_avro_v9_txns_nonpart_nometa": (("txn_id",), META, "simple"),  # type NON_PARTITION
    "mor_avro_v9_txns_simple_meta": (("txn_id",), META, "simple"),
    "mor_avro_v9_txns_simple_nometa": (("txn_id",), META, "simple"),  # type SIMPLE
    "mor_avro_v9_txns_simple_overwrite": (("txn_id",), META, "simple"),
    "mor_parquet_v6_empty": (("id",), META, "simple"),  # no base file
    "mor_parquet_v6_nonpartitioned": (("id",), META, "simple"),  # NonpartitionedKeyGenerator
    "mor_parquet_v6_nonpartitioned_rollback": (("id",), META, "simple"),
    "mor_parquet_v6_simplekeygen_hivestyle_no_metafields": (("id",), None, "simple"),
    "mor_parquet_v6_simplekeygen_nonhivestyle": (("id",), META, "simple"),
    "mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable": (("id",), META, "simple"),
    "v6_complexkeygen_hivestyle": (("id", "name"), META, "complex"),  # ComplexKeyGenerator
    "v6_empty": (("id",), META, "simple"),  # NonpartitionedKeyGenerator, no base file
    "v6_nonpartitioned": (("id",), META, "simple"),
    "v6_simplekeygen_hivestyle_no_metafields": (("id",), None, "simple"),  # populate.meta.fields=false
    "v6_simplekeygen_nonhivestyle": (("id",), META, "simple"),
    "v6_simplekeygen_nonhivestyle_overwritetable": (("id",), META, "simple"),
    "v6_timebasedkeygen_nonhivestyle": (("id",), META, "simple"),  # TimestampBasedKeyGenerator
    "v8_empty": (("id",), META, "simple"),  # type NON_PARTITION
    "v8_nonpartitioned": (("id",), META, "simple"),
    "v8_simplekeygen_hivestyle_no_metafields": (("id",), None, "simple"),
    "v8_simplekeygen_nonhivestyle": (("id",), META, "simple"),
    "v9_timebasedkeygen_epochmillis": (("txn_id",), META, "simple"),  # type TIMESTAMP
    "v9_timebasedkeygen_nonhivestyle": (("txn_id",), META, "simple"),
    "v9_txns_complex_meta": (("txn_id", "account_id"), META, "complex"),  # type COMPLEX
    "v9_txns_nonpart_meta": (("txn_id",), META, "simple"),  # type NON_PARTITION
    "v9_txns_nonpart_nometa": (("txn_id",), META, "simple"),  # "nometa" in name only: keys stored
    "v9_txns_simple_meta": (("txn_id",), META, "simple"),
    "v9_txns_simple_nometa": (("txn_id",), META, "simple"),
    "v9_txns_simple_overwrite": (("txn_id",), META, "simple"),
}


def base_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*.parquet") if not {".hoodie", "__MACOSX"} & set(p.relative_to(root).parts)
    )


def table_spec(root: Path) -> RecordKeySpec | None:
    files = base_files(root)
    schema = pq.read_schema(files[0]) if files else None
    return RecordKeySpec.from_hudi_properties(read_properties(str(root / ".hoodie")), schema)


def test_real_tables_declare_the_expected_key_setup(hudi_tables: dict[str, Path]) -> None:
    assert set(hudi_tables) == set(EXPECTED_SPECS)
    for name, root in hudi_tables.items():
        spec = table_spec(root)
        assert spec is not None, name
        assert (spec.fields, spec.column, spec.generator) == EXPECTED_SPECS[name], name
        assert spec.read_columns == ((spec.column,) if spec.column else spec.fields)


def test_encode_equals_the_stored_key_of_every_row_of_every_base_file(hudi_tables: dict[str, Path]) -> None:
    rows: dict[str, int] = {}
    for name, root in hudi_tables.items():
        spec = table_spec(root)
        assert spec is not None
        if spec.column is None:
            continue
        for path in base_files(root):
            data = pq.read_table(path, columns=[*spec.fields, spec.column])
            stored = data[spec.column].combine_chunks()
            assert stored.null_count == 0, path
            encoded = spec.encode(data.select(list(spec.fields)))
            assert isinstance(encoded, pa.StringArray)
            assert encoded.equals(stored.cast(pa.string())), (name, path)
            assert spec.keys_of(data).equals(encoded)
            rows[name] = rows.get(name, 0) + data.num_rows
    complex_rows = rows["v6_complexkeygen_hivestyle"] + rows["v9_txns_complex_meta"]
    assert complex_rows >= 40 and sum(rows.values()) - complex_rows >= 200
    assert len(rows) == 25  # every table that stores its keys (not the empty ones, not no_metafields)


def test_tables_without_meta_fields_get_their_keys_from_the_fields(hudi_tables: dict[str, Path]) -> None:
    for name in ("v6_simplekeygen_hivestyle_no_metafields", "v8_simplekeygen_hivestyle_no_metafields"):
        spec = table_spec(hudi_tables[name])
        assert spec is not None and spec.column is None and spec.read_columns == ("id",)
        for path in base_files(hudi_tables[name]):
            data = pq.read_table(path)
            assert data[META].null_count == data.num_rows  # the column is there, but empty
            ids = data["id"].to_pylist()
            assert spec.keys_of(data).to_pylist() == [str(i) for i in ids]
            with pytest.raises(RecordKeyError, match=r"populate\.meta\.fields=false"):
                RecordKeySpec(("id",), META).keys_of(data)


# --- reading hoodie.properties ---------------------------------------------------------------


def props(fields: str, **more: str) -> dict[str, str]:
    return {"hoodie.table.recordkey.fields": fields, **more}


def test_key_generator_classes_and_types() -> None:
    cls = "hoodie.table.keygenerator.class"
    typ = "hoodie.table.keygenerator.type"
    cases = [
        ({cls: "org.apache.hudi.keygen.SimpleKeyGenerator"}, "a", "simple"),
        ({cls: "org.apache.hudi.keygen.SimpleAvroKeyGenerator"}, "a", "simple"),
        ({cls: "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator"}, "a", "simple"),
        ({cls: "org.apache.hudi.keygen.ComplexKeyGenerator"}, "a,b", "complex"),
        ({cls: "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}, "a", "simple"),
        ({cls: "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}, "a, b", "complex"),
        ({cls: "org.apache.hudi.keygen.CustomKeyGenerator"}, "a", "simple"),
        ({cls: "org.apache.hudi.keygen.CustomAvroKeyGenerator"}, "a,b", "complex"),
        ({cls: "org.apache.hudi.keygen.GlobalDeleteKeyGenerator"}, "a", "complex"),
        ({typ: "SIMPLE"}, "a", "simple"),
        ({typ: "COMPLEX_AVRO"}, "a,b", "complex"),
        ({typ: "NON_PARTITION"}, "a,b", "complex"),
        ({typ: "TIMESTAMP"}, "a", "simple"),
        # the class wins over the type (KeyGeneratorType.getKeyGeneratorClassName)
        ({cls: "org.apache.hudi.keygen.NonpartitionedKeyGenerator", typ: "COMPLEX"}, "a", "simple"),
        # not knowable from the table: a user class, Spark SQL's wrapper, a simple one with 2 fields
        ({cls: "com.example.MyKeyGenerator"}, "a", "unknown"),
        ({cls: "org.apache.spark.sql.hudi.command.SqlKeyGenerator"}, "a,b", "unknown"),
        ({typ: "USER_PROVIDED"}, "a", "unknown"),
        ({typ: "SIMPLE"}, "a,b", "unknown"),
        # no generator recorded: several fields are f1:v1,... with every built-in generator
        ({}, "a,b", "complex"),
        ({}, "a", "unknown"),
    ]
    for extra, fields, generator in cases:
        spec = RecordKeySpec.from_hudi_properties(props(fields, **extra), None)
        assert spec is not None and spec.generator == generator, (extra, fields)
        assert spec.fields == tuple(f.strip() for f in fields.split(","))
        assert bool(spec.detail) == (generator == "unknown")


def test_complex_generator_with_one_field_follows_the_table_version() -> None:
    complex_cls = {"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator"}
    complex_type = {"hoodie.table.keygenerator.type": "COMPLEX"}
    v9 = {"hoodie.table.version": "9", "hoodie.table.initial.version": "9"}
    # created at version 9 (Hudi 1.1+): always field:value
    spec = RecordKeySpec.from_hudi_properties(props("id", **complex_type, **v9), None)
    assert spec is not None and spec.generator == "complex"
    assert spec.encode(pa.table({"id": [7]})).to_pylist() == ["id:7"]
    # created before version 9 (6 or 8, or upgraded to 9): the bare value or id:value by release
    for version in ({"hoodie.table.version": "6"}, {"hoodie.table.version": "8"},
                    {"hoodie.table.version": "9", "hoodie.table.initial.version": "8"},
                    {"hoodie.table.version": "9"}):  # fmt: skip
        spec = RecordKeySpec.from_hudi_properties(props("id", **complex_cls, **version), None)
        assert spec is not None and spec.generator == "unknown" and spec.column == META
        assert "HUDI-7001" in spec.detail and "0.14.1" in spec.detail
        with pytest.raises(RecordKeyError, match="HUDI-7001"):
            spec.encode(pa.table({"id": [7]}))
        assert spec.keys_of(pa.table({META: ["7"]})).to_pylist() == ["7"]  # the stored key still reads
    # a recorded encoding decides
    for recorded, generator, key in (("VALUE_ONLY", "simple", "7"), ("field_prefixed", "complex", "id:7")):
        p = props("id", **complex_cls, **{"hoodie.table.version": "8"})
        p["hoodie.table.complex.keygen.encoding"] = recorded
        spec = RecordKeySpec.from_hudi_properties(p, None)
        assert spec is not None and spec.generator == generator
        assert spec.encode(pa.table({"id": [7]})).to_pylist() == [key]
    # several fields: f1:v1,f2:v2 in every release
    spec = RecordKeySpec.from_hudi_properties(
        props("id,name", **complex_cls, **{"hoodie.table.version": "6"}), None
    )
    assert spec is not None and spec.generator == "complex"


def test_where_the_keys_are_read_from() -> None:
    with_meta = pa.schema([(META, pa.string()), ("id", pa.int32())])
    without = pa.schema([("id", pa.int32())])
    simple = {"hoodie.table.keygenerator.type": "SIMPLE"}
    assert RecordKeySpec.from_hudi_properties(props("id", **simple), with_meta).column == META  # type: ignore[union-attr]
    assert RecordKeySpec.from_hudi_properties(props("id", **simple), None).column == META  # type: ignore[union-attr]
    assert RecordKeySpec.from_hudi_properties(props("id", **simple), without).column is None  # type: ignore[union-attr]
    no_meta = props("id", **simple, **{"hoodie.populate.meta.fields": "false"})
    spec = RecordKeySpec.from_hudi_properties(no_meta, with_meta)
    assert spec is not None and spec.column is None and spec.read_columns == ("id",)
    # no record key fields: Hudi generated the keys, which only the meta column holds
    spec = RecordKeySpec.from_hudi_properties({}, with_meta)
    assert spec is not None and spec.fields == () and spec.column == META and spec.read_columns == (META,)
    with pytest.raises(RecordKeyError, match="no record key fields"):
        spec.encode(pa.table({"id": [1]}))
    assert RecordKeySpec.from_hudi_properties({"hoodie.table.recordkey.fields": " "}, without) is None
    assert RecordKeySpec.from_hudi_properties({"hoodie.populate.meta.fields": "false"}, with_meta) is None


def test_spec_validation() -> None:
    with pytest.raises(RecordKeyError, match="one field"):
        RecordKeySpec(("a", "b"), None, "simple")
    with pytest.raises(RecordKeyError, match="unknown key generator"):
        RecordKeySpec(("a",), None, "custom")
    assert RecordKeySpec(("a",)).generator == "simple"


# --- encoding ---------------------------------------------------------------------------------


def test_complex_keys_with_nulls_and_empty_values() -> None:
    spec = RecordKeySpec(("a", "b", "c"), None, "complex")
    table = pa.table(
        {
            "a": pa.array([1, None, 3, None, -4], pa.int64()),
            "b": ["x", "y", "", None, "z,w:v"],
            "c": pa.array([True, None, False, False, None]),
        }
    )
    assert spec.encode(table).to_pylist() == [
        "a:1,b:x,c:true",
        "a:__null__,b:y,c:__null__",
        "a:3,b:__empty__,c:false",
        "a:__null__,b:__null__,c:false",
        "a:-4,b:z,w:v,c:__null__",  # Hudi does not escape separators inside values
    ]
    # one field holding a value is enough; none is refused, naming the rows
    bad = pa.table({"a": pa.array([None, 1, None], pa.int32()), "b": ["", "", None], "c": [None, None, None]})
    with pytest.raises(
        RecordKeyError, match=r"all record key fields \['a', 'b', 'c'\] are null or empty in 2 of 3 rows"
    ):
        spec.encode(bad)
    # a column of Arrow's null type is all nulls
    nulls = pa.table({"a": pa.array([None, None]), "b": ["p", "q"], "c": [True, False]})
    assert spec.encode(nulls).to_pylist() == ["a:__null__,b:p,c:true", "a:__null__,b:q,c:false"]


def test_simple_key_null_or_empty_is_refused() -> None:
    spec = RecordKeySpec(("id",))
    with pytest.raises(RecordKeyError, match=r"record key field 'id' is null in 2 of 4 rows"):
        spec.encode(pa.table({"id": pa.array([1, None, 3, None], pa.int32())}))
    with pytest.raises(RecordKeyError, match=r"record key field 'id' is empty in 1 of 2 rows"):
        spec.encode(pa.table({"id": ["a", ""]}))
    assert spec.encode(pa.table({"id": [" ", "b"]})).to_pylist() == [" ", "b"]  # blank is not empty


@pytest.mark.parametrize(
    "array",
    [
        pa.array([1.5], pa.float32()),
        pa.array([1.5], pa.float64()),
        pa.array([1], pa.timestamp("us")),
        pa.array([1], pa.timestamp("ms", tz="UTC")),
        pa.array([1], pa.time64("us")),
        pa.array([1], pa.duration("s")),
        pa.array([b"x"], pa.binary()),
        pa.array([b"x"], pa.large_binary()),
        pa.array([{"x": 1}]),
        pa.array([[1]]),
    ],
    ids=lambda a: str(a.type),
)
def test_unsupported_types_are_refused(array: pa.Array) -> None:
    for spec in (RecordKeySpec(("k",)), RecordKeySpec(("id", "k"), None, "complex")):
        with pytest.raises(RecordKeyError, match="not supported for key encoding") as e:
            spec.encode(pa.table({"id": [1], "k": array}))
        assert "'k'" in str(e.value) and "already-encoded" in str(e.value)


def test_missing_column_names_the_column_and_the_available_ones() -> None:
    with pytest.raises(RecordKeyError, match=r"'name' is not a column.*\['id', 'x'\]"):
        RecordKeySpec(("id", "name"), None, "complex").encode(pa.table({"id": [1], "x": [2]}))
    with pytest.raises(RecordKeyError, match=r"'_hoodie_record_key' is not a column.*\['id'\]"):
        RecordKeySpec(("id",), META).keys_of(pa.table({"id": [1]}))
    with pytest.raises(RecordKeyError, match="nested key fields"):
        RecordKeySpec(("s.x",)).encode(pa.table({"s": [{"x": 1}]}))


def test_unicode_keys_round_trip() -> None:
    values = ["😀", "𝄞clef", "日本語", "a\x00b", "ÿ", "\U0010ffff"]
    table = pa.table({"k": values, "n": list(range(len(values)))})
    assert RecordKeySpec(("k",)).encode(table).to_pylist() == values
    assert RecordKeySpec(("k", "n"), None, "complex").encode(table).to_pylist() == [
        f"k:{v},n:{i}" for i, v in enumerate(values)
    ]
    stored = pa.table({META: values})
    assert RecordKeySpec(("k",), META).keys_of(stored).to_pylist() == values
    assert (
        pa.array(values).cast(pa.binary()).equals(RecordKeySpec(("k",)).encode(table).cast(pa.binary()))
    )  # the UTF-8 bytes, unchanged


def test_value_text_of_each_supported_type() -> None:
    def text(array: pa.Array) -> list[str]:
        return RecordKeySpec(("v",)).encode(pa.table({"v": array})).to_pylist()

    assert text(pa.array([-128, 127], pa.int8())) == ["-128", "127"]
    assert text(pa.array([-(2**63), 2**63 - 1], pa.int64())) == [
        "-9223372036854775808",
        "9223372036854775807",
    ]
    assert text(pa.array([0, 2**64 - 1], pa.uint64())) == ["0", "18446744073709551615"]
    assert text(pa.array([True, False])) == ["true", "false"]
    assert text(
        pa.array([dt.date(2024, 2, 29), dt.date(1, 1, 1), dt.date(999, 12, 31), dt.date(9999, 12, 31)])
    ) == [
        "2024-02-29",
        "0001-01-01",
        "0999-12-31",
        "9999-12-31",
    ]
    assert text(pa.array([dt.date(1970, 1, 2)], pa.date64())) == ["1970-01-02"]
    # BigDecimal.toString: plain unless the adjusted exponent is below -6 (or the scale negative)
    d = decimal.Decimal
    assert text(pa.array([d("123.45"), d("-0.05"), d("0.00")], pa.decimal128(15, 2))) == [
        "123.45",
        "-0.05",
        "0.00",
    ]
    assert text(
        pa.array([d("1.23E-8"), d("0E-10"), d("1.000E-7"), d("0.0000010000")], pa.decimal128(20, 10))
    ) == [
        "1.23E-8",
        "0E-10",
        "1.000E-7",
        "0.0000010000",
    ]
    assert text(pa.array([d("1E+3")], pa.decimal128(5, -3))) == ["1E+3"]
    assert text(pa.array([d("1.5")], pa.decimal256(40, 1))) == ["1.5"]
    # strings in any Arrow layout
    for kind in (pa.string(), pa.large_string(), pa.string_view()):
        assert text(pa.array(["x", "y"], kind)) == ["x", "y"]
    assert text(pa.array(["x", "y", "x"]).dictionary_encode()) == ["x", "y", "x"]
    assert text(pa.array([1, 2], pa.int32()).dictionary_encode()) == ["1", "2"]


def test_dates_java_prints_differently_are_refused() -> None:
    for day in (-719163, 2932897):  # 0000-12-31 and +10000-01-01 in LocalDate.toString
        with pytest.raises(RecordKeyError, match=r"0001-01-01\.\.9999-12-31"):
            RecordKeySpec(("d",)).encode(pa.table({"d": pa.array([0, day], pa.int32()).cast(pa.date32())}))
    assert (dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days == -719162
    assert (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days == 2932896


def test_chunked_tables_and_record_batches() -> None:
    spec = RecordKeySpec(("a", "b"), None, "complex")
    table = pa.concat_tables([pa.table({"a": [1, 2], "b": ["x", "y"]}), pa.table({"a": [3], "b": ["z"]})])
    assert table["a"].num_chunks == 2
    expected = ["a:1,b:x", "a:2,b:y", "a:3,b:z"]
    assert spec.encode(table).to_pylist() == expected
    assert spec.encode(table.to_batches()[0]).to_pylist() == expected[:2]
    assert spec.encode(table.slice(0, 0)).to_pylist() == []
    stored = pa.table({META: pa.array(expected, pa.large_string()), "a": [0, 0, 0]})
    keys = RecordKeySpec(("a", "b"), META, "complex").keys_of(stored)
    assert isinstance(keys, pa.StringArray) and keys.to_pylist() == expected


def test_stored_keys_must_be_strings_and_present() -> None:
    spec = RecordKeySpec(("id",), META)
    with pytest.raises(RecordKeyError, match="not strings"):
        spec.keys_of(pa.table({META: [1]}))
    with pytest.raises(RecordKeyError, match="null in 1 of 2 rows"):
        spec.keys_of(pa.table({META: ["a", None]}))


def test_one_million_rows_encode_vectorized() -> None:
    n = 1_000_000
    ids = np.arange(n, dtype=np.int64) * 7 - 3_000_000
    names = pa.array(np.char.add("name-", (np.arange(n) % 1000).astype(str)))
    table = pa.table({"id": ids, "name": names})
    keys = RecordKeySpec(("id", "name"), None, "complex").encode(table)
    assert len(keys) == n and keys.null_count == 0
    assert keys[0].as_py() == "id:-3000000,name:name-0"
    assert keys[n - 1].as_py() == f"id:{(n - 1) * 7 - 3_000_000},name:name-{(n - 1) % 1000}"
    simple = RecordKeySpec(("id",)).encode(table)
    assert simple[12345].as_py() == str(12345 * 7 - 3_000_000)


# --- Java itself ----------------------------------------------------------------------------

JAVA_ORACLE = """
import java.io.*;
import java.math.*;
import java.time.LocalDate;

public class KeyTextOracle {
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    StringBuilder out = new StringBuilder();
    for (String line; (line = in.readLine()) != null; ) {
      String[] p = line.split(" ");
      if (p[0].equals("D")) {
        out.append(new BigDecimal(new BigInteger(p[1]), Integer.parseInt(p[2])).toString());
      } else {
        out.append(LocalDate.ofEpochDay(Long.parseLong(p[1])).toString());
      }
      out.append('\\n');
    }
    System.out.print(out);
  }
}
"""


@pytest.fixture(scope="module")
def java_text(tmp_path_factory: pytest.TempPathFactory) -> Callable[[list[str]], list[str]]:
    """Runs lines of ``D unscaled scale`` / ``T epochDay`` through the JVM's toString."""
    if not shutil.which("java") or not shutil.which("javac"):
        pytest.skip("needs a JDK")
    work = tmp_path_factory.mktemp("key_text_oracle")
    (work / "KeyTextOracle.java").write_text(JAVA_ORACLE)
    subprocess.run(["javac", "KeyTextOracle.java"], cwd=work, check=True)

    def run(lines: list[str]) -> list[str]:
        done = subprocess.run(
            ["java", "-cp", str(work), "KeyTextOracle"],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.splitlines()

    return run


def test_decimal_text_is_javas_bigdecimal_to_string(java_text: Callable[[list[str]], list[str]]) -> None:
    rng = np.random.default_rng(7)
    for precision, scale in [
        (10, 0),
        (10, 2),
        (15, 2),
        (10, 5),
        (18, 7),
        (20, 10),
        (38, 12),
        (38, 38),
        (9, 9),
    ]:
        unscaled = [
            int(sign + "".join(rng.choice(list("0123456789"), int(k))))
            for sign, k in zip(rng.choice(["-", ""], 300), rng.integers(1, precision + 1, 300), strict=True)
        ]
        unscaled += [0, 1, -1, 10 ** (precision - 1), -(10**precision - 1), 10**precision - 1]
        values = [decimal.Decimal(f"{u}E-{scale}") for u in unscaled]  # exact, no context rounding
        array = pa.array(values, pa.decimal128(precision, scale))
        ours = RecordKeySpec(("v",)).encode(pa.table({"v": array})).to_pylist()
        assert ours == java_text([f"D {u} {scale}" for u in unscaled]), (precision, scale)


def test_date_text_is_javas_localdate_to_string(java_text: Callable[[list[str]], list[str]]) -> None:
    rng = np.random.default_rng(11)
    days = [*map(int, rng.integers(-719162, 2932897, 2000)), -719162, 2932896, 0, -1, -141427, -141428]
    array = pa.array(days, pa.int32()).cast(pa.date32())
    ours = RecordKeySpec(("d",)).encode(pa.table({"d": array})).to_pylist()
    assert ours == java_text([f"T {d}" for d in days])
