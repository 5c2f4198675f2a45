"""Bloom filters: murmur bit-exactness, canonical key encoding, no false negatives, measured
false-positive rates, serialization and the per-file filter set."""

from __future__ import annotations

import datetime
import decimal
import math
import struct

import mmh3
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_expr.bloom import BloomFilter, BloomFilterFormatError, BloomFilterSet, hash_keys, serialized_filters

MASK64 = (1 << 64) - 1


def mmh3_pair(key: bytes) -> tuple[int, int]:
    value = mmh3.hash128(key, seed=0, x64arch=True, signed=False)
    return value & MASK64, value >> 64


def hashed_pairs(values: pa.Array | pa.ChunkedArray) -> list[tuple[int, int]]:
    h1, h2 = hash_keys(values)
    assert h1.dtype == np.uint64 and h2.dtype == np.uint64 and len(h1) == len(values)
    return [(int(a), int(b)) for a, b in zip(h1, h2, strict=True)]


# ---------------------------------------------------------------------------------------------
# MurmurHash3 x64_128 bit-exactness


def random_keys(seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    lengths = [*range(101), *range(101), 0, 15, 16, 17, 31, 32, 33, 255, 256, 257, 1000, 5000]
    return [rng.bytes(n) for n in lengths]


@pytest.mark.parametrize("type_", [pa.binary(), pa.large_binary(), pa.binary_view()])
def test_murmur_matches_mmh3_on_binary_of_many_lengths(type_: pa.DataType) -> None:
    keys = random_keys(1)
    array = pa.array(keys, type=type_)
    assert hashed_pairs(array) == [mmh3_pair(k) for k in keys]
    # A slice has a nonzero offset into the offsets and data buffers.
    assert hashed_pairs(array.slice(37, 150)) == [mmh3_pair(k) for k in keys[37:187]]


@pytest.mark.parametrize("type_", [pa.string(), pa.large_string(), pa.string_view()])
def test_murmur_matches_mmh3_on_utf8_strings(type_: pa.DataType) -> None:
    rng = np.random.default_rng(2)
    alphabet = [*"abcXYZ09 -_é日本語ß€", "\U0001f600", "\x00"]
    strings = ["", "a", "é", "日本語", "x" * 16, "ü" * 8, "\U0001f600" * 4]
    strings += ["".join(rng.choice(alphabet, size=n)) for n in rng.integers(0, 60, 400)]
    array = pa.array(strings, type=type_)
    assert hashed_pairs(array) == [mmh3_pair(s.encode()) for s in strings]


def canonical_int(value: int) -> bytes:
    return struct.pack("<q", value - (1 << 64) if value >= 1 << 63 else value)


def canonical_float(value: float) -> bytes:
    if math.isnan(value):
        return struct.pack("<Q", 0x7FF8000000000000)
    return struct.pack("<d", value + 0.0)


EPOCH = datetime.date(1970, 1, 1)


def fixed_width_cases() -> list[tuple[str, pa.Array, list[bytes]]]:
    rng = np.random.default_rng(3)
    cases = []
    for type_ in [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()]:
        info = np.iinfo(type_.to_pandas_dtype())
        ints = [int(v) for v in rng.integers(info.min, info.max, 300, endpoint=True)] + [info.min, info.max]
        cases.append((str(type_), pa.array(ints, type_), [canonical_int(v) for v in ints]))
    uints = [int(v) for v in rng.integers(0, 2**64 - 1, 300, dtype=np.uint64)] + [0, 2**63, 2**64 - 1]
    cases.append(("uint64", pa.array(uints, pa.uint64()), [canonical_int(v) for v in uints]))
    cases.append(("bool", pa.array([True, False]), [canonical_int(1), canonical_int(0)]))
    floats = [*rng.normal(size=300) * 10.0 ** rng.integers(-300, 300, 300), 0.0, -0.0, math.inf, -math.inf]
    floats.append(math.nan)
    cases.append(("float64", pa.array(floats, pa.float64()), [canonical_float(v) for v in floats]))
    f32 = [float(v) for v in np.float32(rng.normal(size=300))] + [-0.0, math.inf, math.nan]
    cases.append(("float32", pa.array(f32, pa.float32()), [canonical_float(v) for v in f32]))
    f16 = np.array([1.5, -2.25, 0.0, -0.0, 65504.0, np.inf, np.nan], dtype=np.float16)
    cases.append(("float16", pa.array(f16), [canonical_float(float(v)) for v in f16]))
    days = [int(v) for v in rng.integers(-100_000, 100_000, 300)]
    dates = [EPOCH + datetime.timedelta(days=d) for d in days]
    cases.append(("date32", pa.array(dates, pa.date32()), [canonical_int(d) for d in days]))
    cases.append(("date64", pa.array(dates, pa.date64()), [canonical_int(d) for d in days]))
    stamps = [int(v) for v in rng.integers(-(2**62), 2**62, 300)]
    for type_ in [
        pa.timestamp("us"),
        pa.timestamp("ns", tz="Europe/Paris"),
        pa.time64("us"),
        pa.duration("s"),
    ]:
        values = [s % 86_400_000_000 for s in stamps] if pa.types.is_time(type_) else stamps
        array = pa.array(values, pa.int64()).cast(type_)
        cases.append((str(type_), array, [canonical_int(v) for v in values]))
    seconds = [int(v) for v in rng.integers(0, 86_400, 300)]
    cases.append(
        ("time32", pa.array(seconds, pa.int32()).cast(pa.time32("s")), [canonical_int(v) for v in seconds])
    )
    for type_, width in [(pa.decimal128(38, 4), 16), (pa.decimal256(60, 2), 32)]:
        pairs = zip(rng.integers(-(2**62), 2**62, 300), rng.integers(1, 2**40, 300), strict=True)
        unscaled = [int(a) * int(b) for a, b in pairs]
        unscaled += [0, -1, 10**37 - 1, -(10**37) + 1]
        values = [decimal.Decimal(f"{u}e-{type_.scale}") for u in unscaled]
        encoded = [u.to_bytes(width, "little", signed=True) for u in unscaled]
        cases.append((str(type_), pa.array(values, type_), encoded))
    for width in [1, 5, 8, 16, 20, 32, 33]:
        raw = [rng.bytes(width) for _ in range(200)]
        cases.append((f"fixed_size_binary({width})", pa.array(raw, pa.binary(width)), raw))
    return cases


@pytest.mark.parametrize(
    ("array", "encoded"),
    [pytest.param(array, encoded, id=name) for name, array, encoded in fixed_width_cases()],
)
def test_fixed_width_encodings_hash_like_mmh3_on_canonical_bytes(
    array: pa.Array, encoded: list[bytes]
) -> None:
    assert hashed_pairs(array) == [mmh3_pair(b) for b in encoded]
    assert hashed_pairs(array.slice(1)) == [mmh3_pair(b) for b in encoded[1:]]


def test_null_entries_hash_to_zero() -> None:
    for array in [
        pa.array([1, None, 3]),
        pa.array(["a", None]),
        pa.array([None, None]),
        pa.array([None, 1.5]),
    ]:
        nulls = array.is_null().to_pylist()
        for pair, is_null in zip(hashed_pairs(array), nulls, strict=True):
            assert (pair == (0, 0)) == is_null


def test_unsupported_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="list"):
        hash_keys(pa.array([[1, 2]]))


# ---------------------------------------------------------------------------------------------
# Canonical encoding: one value, one hash, whatever the column width


def test_integers_and_bool_of_equal_value_hash_equal() -> None:
    int_types = [
        pa.int8(),
        pa.int16(),
        pa.int32(),
        pa.int64(),
        pa.uint8(),
        pa.uint16(),
        pa.uint32(),
        pa.uint64(),
    ]
    expected = hashed_pairs(pa.array([0, 1, 100], pa.int64()))
    for type_ in int_types:
        assert hashed_pairs(pa.array([0, 1, 100], type_)) == expected
    assert hashed_pairs(pa.array([False, True])) == expected[:2]
    assert expected[0] != expected[1] != expected[2]
    # uint64 above 2**63 wraps to the bytes of the negative int64.
    assert hashed_pairs(pa.array([2**64 - 1], pa.uint64())) == hashed_pairs(pa.array([-1], pa.int8()))


def test_float_zero_and_nan_are_normalized() -> None:
    nan_bits = [0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001]
    nans64 = pa.array(np.array(nan_bits, dtype=np.uint64).view(np.float64))
    nans32 = pa.array(np.array([0x7FC00000, 0xFFC00000, 0x7F800001], dtype=np.uint32).view(np.float32))
    nans16 = pa.array(np.array([np.nan, -np.nan], dtype=np.float16))
    canonical_nan = hashed_pairs(pa.array([math.nan]))[0]
    for nans in [nans64, nans32, nans16]:
        assert set(hashed_pairs(nans)) == {canonical_nan}
    zeros = [pa.array([0.0, -0.0], t) for t in [pa.float16(), pa.float32(), pa.float64()]]
    assert {pair for z in zeros for pair in hashed_pairs(z)} == {hashed_pairs(pa.array([0.0]))[0]}
    assert canonical_nan != hashed_pairs(pa.array([0.0]))[0]


def test_float32_hashes_like_float64_of_same_value() -> None:
    f32 = np.array([1.5, 0.1, -3.25e30, np.inf, -np.inf, 1e-40], dtype=np.float32)
    assert hashed_pairs(pa.array(f32)) == hashed_pairs(pa.array(f32.astype(np.float64)))
    assert hashed_pairs(pa.array(f32[:1].astype(np.float16))) == hashed_pairs(pa.array([1.5]))
    # The float32 nearest 0.1 is not the float64 0.1: different values, different hashes.
    assert hashed_pairs(pa.array(f32[1:2])) != hashed_pairs(pa.array([0.1]))


def test_decimal_same_type_hash_equal() -> None:
    type_ = pa.decimal128(12, 3)
    a = pa.array([decimal.Decimal("1.500"), decimal.Decimal("-7.25")], type_)
    b = pa.array([decimal.Decimal("1.5"), decimal.Decimal("-7.250")], type_)
    assert hashed_pairs(a) == hashed_pairs(b)
    assert hashed_pairs(a)[0] != hashed_pairs(pa.array([decimal.Decimal("1.501")], type_))[0]


def test_string_like_types_hash_equal() -> None:
    values = ["", "a", "héllo wörld", "日本語テキスト", "x" * 40, None]
    expected = hashed_pairs(pa.array(values, pa.string()))
    for type_ in [pa.large_string(), pa.string_view()]:
        assert hashed_pairs(pa.array(values, type_)) == expected
    raw = [None if v is None else v.encode() for v in values]
    for type_ in [pa.binary(), pa.large_binary(), pa.binary_view()]:
        assert hashed_pairs(pa.array(raw, type_)) == expected
    assert hashed_pairs(pa.array(values).dictionary_encode()) == expected
    assert hashed_pairs(pa.chunked_array([values[:2], values[2:]], pa.string())) == expected
    assert len(set(expected[:-1])) == len(values) - 1


def test_temporal_encodings() -> None:
    dates = [datetime.date(2024, 2, 29), datetime.date(1900, 1, 1)]
    assert hashed_pairs(pa.array(dates, pa.date32())) == hashed_pairs(pa.array(dates, pa.date64()))
    stamps = pa.array([0, 1_700_000_000_000_000], pa.int64())
    naive = hashed_pairs(stamps.cast(pa.timestamp("us")))
    assert hashed_pairs(stamps.cast(pa.timestamp("us", tz="UTC"))) == naive == hashed_pairs(stamps)


# ---------------------------------------------------------------------------------------------
# No false negatives


KEYS = {
    "int": (st.integers(-(2**63), 2**63 - 1), pa.int64()),
    "float": (st.floats(allow_nan=True, allow_infinity=True), pa.float64()),
    "text": (st.text(), pa.string()),
    "binary": (st.binary(), pa.binary()),
}


@pytest.mark.parametrize("kind", KEYS)
@settings(max_examples=75, deadline=None)
@given(data=st.data())
def test_filter_has_no_false_negatives(kind: str, data: st.DataObject) -> None:
    strategy, type_ = KEYS[kind]
    keys = data.draw(st.lists(strategy, min_size=1, max_size=80))
    fpp = data.draw(st.sampled_from([0.3, 0.01, 1e-5]))
    bloom = BloomFilter.for_entries(len(keys), fpp)
    bloom.add_all(keys, type=type_)
    assert bloom.might_contain(keys, type=type_).all()
    assert all(key in bloom for key in keys)
    one_by_one = BloomFilter.for_entries(len(keys), fpp)
    for key in keys:
        one_by_one.add(key, type=type_)
    assert one_by_one == bloom


@pytest.mark.parametrize("kind", KEYS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_filter_set_has_no_false_negatives(kind: str, data: st.DataObject) -> None:
    strategy, type_ = KEYS[kind]
    files = data.draw(st.lists(st.one_of(st.none(), st.lists(strategy, max_size=30)), min_size=1, max_size=6))
    filters: list[BloomFilter | None] = []
    for keys in files:
        if keys is None:
            filters.append(None)
            continue
        bloom = BloomFilter.for_entries(max(1, len(keys)), data.draw(st.sampled_from([0.2, 1e-3])))
        bloom.add_all(keys, type=type_)
        filters.append(bloom)
    packed = BloomFilterSet.from_filters(filters)
    for i, keys in enumerate(files):
        for key in keys or []:
            assert packed.might_contain(key, type=type_)[i]
        if keys:
            assert packed.might_contain_any(keys, type=type_)[i]


def test_narrower_column_types_are_found_by_python_literals() -> None:
    bloom = BloomFilter.for_entries(100, 1e-3)
    bloom.add_all(pa.array(range(-50, 50), pa.int16()))
    bloom.add_all(pa.array(np.arange(100, dtype=np.float32) / 4))
    assert bloom.might_contain(list(range(-50, 50))).all()
    assert bloom.might_contain([x / 4 for x in range(100)]).all()
    assert 7 in bloom
    assert 2.25 in bloom


def test_nulls_are_ignored_and_never_present() -> None:
    with_null = BloomFilter.for_entries(10, 0.01)
    with_null.add_all(["a", None, "b"])
    with_null.add(None)
    plain = BloomFilter.for_entries(10, 0.01)
    plain.add_all(["a", "b"])
    assert with_null == plain
    assert with_null.might_contain(["a", None, "b"]).tolist() == [True, False, True]
    assert None not in with_null


def test_scalar_input_must_be_wrapped() -> None:
    bloom = BloomFilter.for_entries(10, 0.01)
    with pytest.raises(TypeError, match="wrap one value"):
        bloom.add_all("abc")
    with pytest.raises(TypeError):
        bloom.might_contain(5)


# ---------------------------------------------------------------------------------------------
# False-positive rate


N_ENTRIES = 100_000
N_ABSENT = 1_000_000


@pytest.fixture(scope="module")
def present_and_absent() -> dict[str, tuple[pa.Array, pa.Array]]:
    ints = np.arange(N_ENTRIES + N_ABSENT, dtype=np.int64) * 7919
    strings = pa.array([f"key-{i:09d}" for i in range(N_ENTRIES)])
    absent = pa.array([f"other-{i:09d}" for i in range(N_ABSENT)])
    return {"int": (pa.array(ints[:N_ENTRIES]), pa.array(ints[N_ENTRIES:])), "string": (strings, absent)}


@pytest.mark.parametrize("kind", ["int", "string"])
@pytest.mark.parametrize("fpp", [1e-2, 1e-4, 1e-6])
def test_false_positive_rate_matches_configuration(
    present_and_absent: dict[str, tuple[pa.Array, pa.Array]], kind: str, fpp: float
) -> None:
    present, absent = present_and_absent[kind]
    bloom = BloomFilter.for_entries(N_ENTRIES, fpp)
    bloom.add_all(present)
    assert bloom.might_contain(present).all()
    assert fpp / 1.3 <= bloom.approx_fpp() <= fpp * 1.3
    false_positives = int(bloom.might_contain(absent).sum())
    if fpp >= 1e-4:
        assert fpp / 1.3 <= false_positives / N_ABSENT <= fpp * 1.3
    else:
        # Expected ~1 in a million: a point estimate means nothing, so bound the count instead
        # (P(Poisson(1.3) > 5) is about 0.2%).
        assert false_positives <= 5


# ---------------------------------------------------------------------------------------------
# Sizing


@pytest.mark.parametrize(
    ("entries", "fpp"), [(1, 0.5), (10, 0.1), (1000, 0.01), (12345, 1e-4), (10**6, 1e-6)]
)
def test_sizing_follows_standard_formulas(entries: int, fpp: float) -> None:
    bloom = BloomFilter.for_entries(entries, fpp)
    bits = math.ceil(-entries * math.log(fpp) / math.log(2) ** 2)
    assert bloom.num_bits == 64 * math.ceil(bits / 64)
    assert bloom.num_hashes == max(1, round(bloom.num_bits / entries * math.log(2)))
    assert bloom.approx_fpp() == 0.0
    assert f"num_bits={bloom.num_bits}" in repr(bloom)


@pytest.mark.parametrize(
    ("entries", "fpp"), [(0, 0.01), (-3, 0.01), (10, 0.0), (10, 1.0), (10, -0.5), (10, 2.0)]
)
def test_invalid_sizing_is_rejected(entries: int, fpp: float) -> None:
    with pytest.raises(ValueError):
        BloomFilter.for_entries(entries, fpp)


@pytest.mark.parametrize(("bits", "hashes"), [(0, 3), (100, 3), (64, 0), (64, 70_000)])
def test_invalid_shape_is_rejected(bits: int, hashes: int) -> None:
    with pytest.raises(ValueError):
        BloomFilter(bits, hashes)


# ---------------------------------------------------------------------------------------------
# Serialization


def filled_filter(keys: list[str], fpp: float = 0.01) -> BloomFilter:
    bloom = BloomFilter.for_entries(max(1, len(keys)), fpp)
    bloom.add_all(keys)
    return bloom


def test_bytes_round_trip() -> None:
    bloom = filled_filter([f"k{i}" for i in range(500)])
    copy = BloomFilter.from_bytes(bloom.to_bytes())
    assert copy == bloom
    assert copy.num_bits == bloom.num_bits and copy.num_hashes == bloom.num_hashes
    probes = [f"k{i}" for i in range(0, 5000, 3)]
    assert np.array_equal(copy.might_contain(probes), bloom.might_contain(probes))
    assert copy.to_bytes() == bloom.to_bytes()
    assert copy != filled_filter(["other"] * 500) and copy != filled_filter([f"k{i}" for i in range(499)])


def corrupt_variants() -> dict[str, bytes]:
    good = filled_filter(["a", "b", "c"]).to_bytes()
    header = struct.Struct("<4sHHQ")
    return {
        "empty": b"",
        "short": good[:7],
        "header only": good[:16],
        "truncated": good[:-1],
        "trailing byte": good + b"\x00",
        "wrong magic": b"PAR1" + good[4:],
        "wrong version": header.pack(b"HXBF", 2, 3, 64) + bytes(8),
        "zero hashes": header.pack(b"HXBF", 1, 0, 64) + bytes(8),
        "bits not a multiple of 64": header.pack(b"HXBF", 1, 3, 72) + bytes(9),
        "garbage": np.random.default_rng(4).bytes(200),
    }


@pytest.mark.parametrize("name", corrupt_variants())
def test_corrupt_bytes_raise_format_error(name: str) -> None:
    data = corrupt_variants()[name]
    with pytest.raises(BloomFilterFormatError):
        BloomFilter.from_bytes(data)
    serialized = pa.array([filled_filter(["x"]).to_bytes(), None, data], pa.binary())
    with pytest.raises(BloomFilterFormatError, match="entry 2"):
        BloomFilterSet.from_arrow(serialized)
    assert issubclass(BloomFilterFormatError, ValueError)


# ---------------------------------------------------------------------------------------------
# BloomFilterSet against probing each filter on its own


def mixed_filters() -> list[BloomFilter | None]:
    tiny = BloomFilter(128, 1)  # nearly full: many false positives, so answers differ by file
    tiny.add_all([f"v{i}" for i in range(0, 300, 5)])
    wide = BloomFilter.for_entries(1000, 1e-4)
    wide.add_all([f"v{i}" for i in range(0, 300, 2)])
    return [
        filled_filter([f"v{i}" for i in range(0, 300, 3)], 0.05),
        None,
        tiny,
        wide,
        filled_filter([], 0.5),
        None,
        filled_filter(["v1", "v2", "v7"], 1e-6),
    ]


def oracle(filters: list[BloomFilter | None], value: str) -> list[bool]:
    return [True if f is None else bool(f.might_contain([value])[0]) for f in filters]


PROBES = [f"v{i}" for i in range(0, 400, 1)]


@pytest.mark.parametrize("source", ["filters", "binary", "large_binary_slice", "chunked"])
def test_set_matches_each_filter_probed_alone(source: str) -> None:
    filters = mixed_filters()
    serialized = [None if f is None else f.to_bytes() for f in filters]
    if source == "filters":
        packed = BloomFilterSet.from_filters(filters)
    elif source == "binary":
        packed = BloomFilterSet.from_arrow(pa.array(serialized, pa.binary()))
    elif source == "large_binary_slice":
        padded = [b"junk", *serialized, b"more junk"]
        packed = BloomFilterSet.from_arrow(pa.array(padded, pa.large_binary()).slice(1, len(filters)))
    else:
        packed = BloomFilterSet.from_arrow(pa.chunked_array([serialized[:3], serialized[3:]], pa.binary()))
    assert len(packed) == len(filters)
    assert packed.has_filter.tolist() == [f is not None for f in filters]
    answers = np.array([packed.might_contain(v) for v in PROBES])
    expected = np.array([oracle(filters, v) for v in PROBES])
    assert np.array_equal(answers, expected)
    assert expected[:, [0, 2, 3, 6]].any(axis=0).all() and not expected[:, [0, 2, 3, 6]].all(axis=0).any()
    for lo in range(0, len(PROBES), 37):
        values = PROBES[lo : lo + 37]
        assert np.array_equal(packed.might_contain_any(values), expected[lo : lo + 37].any(axis=0))
    for i, f in enumerate(filters):
        assert packed[i] == f
    assert packed[-1] == filters[-1]
    with pytest.raises(IndexError):
        packed[len(filters)]


def test_set_take() -> None:
    filters = mixed_filters()
    packed = BloomFilterSet.from_filters(filters)
    full = np.array([packed.might_contain(v) for v in PROBES])
    indices = np.array([6, 2, 2, 1, 0])
    taken = packed.take(indices)
    assert len(taken) == 5 and [taken[i] for i in range(5)] == [filters[i] for i in indices]
    assert np.array_equal(np.array([taken.might_contain(v) for v in PROBES]), full[:, indices])
    mask = np.array([True, False, True, True, False, False, True])
    assert np.array_equal(np.array([packed.take(mask).might_contain(v) for v in PROBES]), full[:, mask])
    assert len(packed.take(np.array([], dtype=np.int64)).might_contain("v1")) == 0


def test_set_null_handling_and_edge_cases() -> None:
    packed = BloomFilterSet.from_filters(mixed_filters())
    with pytest.raises(ValueError, match="NULL"):
        packed.might_contain(None)
    assert not packed.might_contain_any([None]).any()
    assert not packed.might_contain_any([]).any()
    assert np.array_equal(packed.might_contain_any([None, "v3"]), packed.might_contain("v3"))
    assert BloomFilterSet.from_filters([None, None]).might_contain("x").all()
    assert len(BloomFilterSet.from_filters([]).might_contain_any(["x"])) == 0


def test_set_with_typed_values() -> None:
    ints = BloomFilter.for_entries(100, 1e-4)
    ints.add_all(pa.array(range(100), pa.int32()))
    floats = BloomFilter.for_entries(100, 1e-4)
    floats.add_all(pa.array([float(i) for i in range(100)], pa.float32()))
    packed = BloomFilterSet.from_filters([ints, floats])
    assert packed.might_contain(42).tolist() == [True, False]
    assert packed.might_contain(42, type=pa.float64()).tolist() == [False, True]
    assert packed.might_contain_any([1000, 2000, 7], type=pa.int16()).tolist() == [True, False]


@pytest.mark.parametrize(
    ("counts", "fpp"),
    [
        ([], 0.01),
        ([0, 0], 0.01),
        ([7] * 40 + [0, 1, 3], 0.01),  # many small filters share one pass
        ([50, 40_000, 2, 0, 30_000, 9], 0.01),  # filters bigger than a pass, between small ones
        ([5, 300, 17], 0.4),  # one hash each
        ([1000, 10], 1e-6),  # many hashes
    ],
)
def test_serialized_filters_are_each_filter_built_alone(counts: list[int], fpp: float) -> None:
    rng = np.random.default_rng(len(counts))
    h1, h2 = hash_keys(pa.array(rng.integers(0, 2**62, sum(counts))))
    got = serialized_filters(h1, h2, counts, fpp)
    assert len(got) == len(counts)
    start = 0
    for n, content in zip(counts, got, strict=True):
        alone = BloomFilter.for_entries(max(n, 1), fpp)
        alone.add_hashes(h1[start : start + n], h2[start : start + n])
        assert content == alone.to_bytes()
        start += n
    with pytest.raises(ValueError, match="hashes"):
        serialized_filters(h1, h2, [*counts, 1], fpp)
