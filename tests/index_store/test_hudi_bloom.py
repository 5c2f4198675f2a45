"""Hudi's own bloom filters (index_store.hudi_bloom) against the real Hudi tables of tests/data/hudi.

Three oracles, each independent of the module's vectorized code:

- the real footers Hudi wrote (Spark; table versions 6, 8 and 9): bytes, set bits, key bounds;
- a scalar pure-Python port of Hadoop's MurmurHash and HashFunction, written here from the Java
  semantics (signed bytes, 32-bit wrap-around, truncating ``%``);
- Hadoop's own ``org.apache.hadoop.util.bloom.BloomFilter`` (which Hudi's SIMPLE filter wraps)
  and ``DynamicBloomFilter`` (which Hudi's DYNAMIC_V0 filter copies, adding a bound), run with the
  JVM and the Hadoop jars that pyspark ships; skipped when no JDK is there.
"""

from __future__ import annotations

import base64
import math
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store.hudi_bloom import (
    BLOOM_FOOTER_KEY,
    DYNAMIC_V0,
    MAX_KEY_FOOTER_KEY,
    MIN_KEY_FOOTER_KEY,
    SIMPLE,
    TYPE_CODE_FOOTER_KEY,
    HudiBloomFilter,
    HudiBloomFilterSet,
    HudiBloomFormatError,
    footer_key_bounds,
    hudi_bloom_size,
    hudi_footer,
    java_argsort,
    java_sort_keys,
    murmur_chain,
)

HUDI_M, HUDI_K, HUDI_NR = 2_587_966, 30, 60_000  # measured on every footer of the shared tables
NO_FILTER_TABLES = {
    "v6_simplekeygen_hivestyle_no_metafields",
    "v8_simplekeygen_hivestyle_no_metafields",
    "mor_parquet_v6_simplekeygen_hivestyle_no_metafields",
}


# --- a scalar reference, written from the Java semantics --------------------------------------


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _byte(b: int) -> int:
    return b - 256 if b > 127 else b  # Java's signed byte


def ref_murmur(data: bytes, seed: int) -> int:
    """org.apache.hadoop.util.hash.MurmurHash.hash(data, data.length, seed), one int at a time."""
    m, r = 0x5BD1E995, 24
    h = _i32(seed ^ len(data))
    len4 = len(data) >> 2
    for i in range(len4):
        i4 = i << 2
        k = _byte(data[i4 + 3])
        k = _i32(k << 8) | (data[i4 + 2] & 0xFF)
        k = _i32(k << 8) | (data[i4 + 1] & 0xFF)
        k = _i32(k << 8) | (data[i4] & 0xFF)
        k = _i32(k * m)
        k = _i32(k ^ ((k & 0xFFFFFFFF) >> r))
        k = _i32(k * m)
        h = _i32(h * m)
        h = _i32(h ^ k)
    left = len(data) - (len4 << 2)
    if left:
        if left >= 3:
            h = _i32(h ^ _i32(_byte(data[-3]) << 16))
        if left >= 2:
            h = _i32(h ^ _i32(_byte(data[-2]) << 8))
        h = _i32(h ^ _byte(data[-1]))
        h = _i32(h * m)
    h = _i32(h ^ ((h & 0xFFFFFFFF) >> 13))
    h = _i32(h * m)
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 15))


def ref_positions(key: str, k: int, m: int) -> list[int]:
    """HashFunction.hash(Key): chained from seed 0, Math.abs(initval % maxValue)."""
    out, h = [], 0
    data = key.encode("utf-8")
    for _ in range(k):
        h = ref_murmur(data, h)
        rem = abs(h) % m
        out.append(abs(-rem if h < 0 else rem))  # Java's % keeps the dividend's sign
    return out


def ref_rows(keys: list[str], k: int, m: int, nr: int, max_nr: int) -> tuple[list[set[int]], int]:
    """Set bits per row of a DYNAMIC_V0 filter after adding ``keys`` one by one, following
    InternalDynamicBloomFilter.add / getActiveStandardBF; and the final currentNbRecord."""
    rows: list[set[int]] = [set()]
    current, reached, cursor = 0, False, 0
    for key in keys:
        if reached:
            row = cursor % len(rows)
            cursor += 1
        elif current >= nr and len(rows) * nr < max_nr:
            rows.append(set())
            current = 0
            row = len(rows) - 1
        elif current >= nr:
            reached = True
            row = 0
        else:
            row = len(rows) - 1
        rows[row].update(ref_positions(key, k, m))
        current += 1
    return rows, current


def random_keys(rng: np.random.Generator, n: int, prefix: str = "") -> list[str]:
    """Keys of 1 to 40 characters mixing ASCII, Latin-1, CJK, U+E000-U+FFFF and emoji, so that UTF-8
    tails hold bytes >= 0x80 (where Java's signed bytes matter)."""
    alphabet = [*"abcXYZ019-_:,", "é", "ß", "中", "文", "\ue000", "\uffff", "😀", "𐍈", "\x00", "\x7f"]
    lengths = rng.integers(1, 41, n)
    picks = rng.integers(0, len(alphabet), int(lengths.sum()))
    out, at = [], 0
    for length in lengths:
        out.append(prefix + "".join(alphabet[i] for i in picks[at : at + length]))
        at += length
    return out


# --- the real tables ------------------------------------------------------------------------


def base_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts)


def record_keys(path: Path) -> pa.Array:
    return pq.read_table(path, columns=["_hoodie_record_key"])["_hoodie_record_key"].combine_chunks()


@pytest.fixture(scope="module")
def footers(hudi_tables: dict[str, Path]) -> dict[str, list[tuple[Path, dict[bytes, bytes]]]]:
    """table -> [(base file, footer key-value metadata)] over every table (copy-on-write and MOR)."""
    return {
        name: [(p, pq.read_metadata(p).metadata or {}) for p in base_files(root)]
        for name, root in hudi_tables.items()
    }


def test_every_footer_filter_is_read_bit_exact(footers: dict) -> None:
    read = 0
    for name, files in footers.items():
        for path, meta in files:
            bloom = HudiBloomFilter.from_footer(meta)
            if name in NO_FILTER_TABLES:
                assert bloom is None, path
                assert footer_key_bounds(meta) is None, path
                continue
            assert bloom is not None, path
            read += 1
            assert meta[TYPE_CODE_FOOTER_KEY.encode()] == b"DYNAMIC_V0"
            assert (bloom.type_code, bloom.num_bits, bloom.num_hashes) == (DYNAMIC_V0, HUDI_M, HUDI_K)
            assert (bloom.row_capacity, bloom.num_rows) == (HUDI_NR, 1)
            assert bloom.active_row_count == pq.read_metadata(path).num_rows
            # Serializing what was read gives the footer's bytes back, byte for byte.
            assert bloom.to_serialized().encode() == meta[BLOOM_FOOTER_KEY.encode()]
            again = HudiBloomFilter.from_serialized(bloom.to_serialized(), DYNAMIC_V0)
            assert again == bloom
    print(f"\n{read} footer filters read, every one DYNAMIC_V0 with k={HUDI_K}, m={HUDI_M}, nr={HUDI_NR}")
    assert read >= 130


def test_set_bits_are_exactly_the_positions_of_the_files_keys(footers: dict) -> None:
    checked = empty = 0
    for name, files in footers.items():
        if name in NO_FILTER_TABLES:
            continue
        for path, meta in files:
            bloom = HudiBloomFilter.from_footer(meta)
            assert bloom is not None
            keys = record_keys(path)
            expected = sorted({p for key in keys.to_pylist() for p in ref_positions(key, HUDI_K, HUDI_M)})
            assert bloom.set_bits().tolist() == expected, path
            # The vectorized hash chain agrees with the scalar port, hash by hash.
            chain = murmur_chain(keys, HUDI_K).astype(np.int64)
            assert sorted(set((np.abs(chain) % HUDI_M).ravel().tolist())) == expected
            checked += 1
            empty += len(keys) == 0
    print(f"\nset bits == union of the keys' positions in {checked} filters ({empty} of empty base files)")
    assert empty >= 2  # v9_timebasedkeygen_*: a base file left empty by deletes


def test_every_key_is_contained_and_bounds_are_the_smallest_and_largest_key(footers: dict) -> None:
    keys_checked = 0
    for name, files in footers.items():
        if name in NO_FILTER_TABLES:
            continue
        for path, meta in files:
            bloom = HudiBloomFilter.from_footer(meta)
            assert bloom is not None
            keys = record_keys(path)
            assert bloom.might_contain(keys).all(), path  # 0 false negatives
            keys_checked += len(keys)
            bounds = footer_key_bounds(meta)
            if len(keys) == 0:
                assert bounds is None and bloom.bit_count() == 0, path  # empty filter, no bounds
                assert not bloom.might_contain(["TXN-001", "1"]).any()
                continue
            order = java_argsort(keys)
            assert bounds == (keys[int(order[0])].as_py(), keys[int(order[-1])].as_py()), path
    print(f"\n{keys_checked} record keys, each contained in its file's footer filter")


def test_writer_reproduces_hudis_footers(footers: dict) -> None:
    """hudi_footer(keys of the file) == what Hudi wrote: the filter, its type code, the bounds."""
    compared = 0
    for name, files in footers.items():
        if name in NO_FILTER_TABLES:
            continue
        for path, meta in files:
            written = hudi_footer(record_keys(path))
            real = {k.decode(): v.decode() for k, v in meta.items() if k.decode() in written}
            real_hudi = {k.decode() for k in meta if k.decode().startswith(("hoodie_", "org.apache.hudi"))}
            assert set(written) == real_hudi, path
            assert written == real, path
            compared += 1
    print(f"\n{compared} footers rewritten from their files' keys, identical to Hudi's")


def test_footer_false_positive_rate_on_absent_keys(footers: dict) -> None:
    filters, table_of = [], []
    for name, files in footers.items():
        for _, meta in files:
            bloom = HudiBloomFilter.from_footer(meta)
            if bloom is not None:
                filters.append(bloom)
                table_of.append(name)
    bloom_set = HudiBloomFilterSet(filters)
    absent = pa.array(
        [f"absent-{i:07d}" for i in range(100_000)] + [f"TXN-{i:04d}" for i in range(1000, 11000)]
    )
    probes = hits = 0
    for lo in range(0, len(filters), 20):  # 20 files x 110,000 keys per pass
        files = np.arange(lo, min(lo + 20, len(filters)))
        key_idx = np.tile(np.arange(len(absent)), files.size)
        file_idx = np.repeat(files, len(absent))
        hits += int(bloom_set.might_contain_pairs(absent, key_idx, file_idx).sum())
        probes += key_idx.size
    expected = float(np.mean([f.estimated_fpp() for f in filters]))
    print(
        f"\nHudi footer filters: measured false-positive rate {hits / probes:.3g} ({hits} of {probes:,} "
        f"probes of absent keys); configured 1e-9; implied by the filters' fill {expected:.3g}"
    )
    assert hits <= 3  # ~0.003 false positives expected at the configured rate


def test_simple_filter_written_and_read_back(footers: dict) -> None:
    """A SIMPLE filter per base file built by the writer (sized for that file's keys, fpp 1%),
    serialized, read back as Hudi reads a footer without a type code: 0 false negatives, and the
    measured false-positive rate on absent keys next to the configured one."""
    fpp = 0.01
    filters, expected = [], []
    for name, files in footers.items():
        if name in NO_FILTER_TABLES:
            continue
        for path, _ in files:
            keys = record_keys(path)
            if not len(keys):
                continue
            footer = hudi_footer(keys, type_code=SIMPLE, num_entries=len(keys), fpp=fpp)
            assert TYPE_CODE_FOOTER_KEY not in footer  # Hudi writes the type code for DYNAMIC only
            bloom = HudiBloomFilter.from_footer({k.encode(): v.encode() for k, v in footer.items()})
            assert bloom is not None and bloom.type_code == SIMPLE
            assert (bloom.num_bits, bloom.num_hashes) == hudi_bloom_size(len(keys), fpp)
            assert bloom.might_contain(keys).all(), path  # 0 false negatives
            filters.append(bloom)
            n, m, k = len(keys), bloom.num_bits, bloom.num_hashes
            expected.append(((1 - math.exp(-k * n / m)) ** k, bloom.estimated_fpp()))
    bloom_set = HudiBloomFilterSet(filters)
    absent = pa.array(random_keys(np.random.default_rng(12), 100_000, prefix="absent:"))
    hits = probes = 0
    for lo in range(0, len(filters), 20):  # 20 files x 100,000 keys per pass, each key hashed once
        files = np.arange(lo, min(lo + 20, len(filters)))
        key_idx = np.tile(np.arange(len(absent)), files.size)
        hits += int(bloom_set.might_contain_pairs(absent, key_idx, np.repeat(files, len(absent))).sum())
        probes += key_idx.size
    measured = hits / probes
    theory, fill = (float(x) for x in np.mean(expected, axis=0))
    print(
        f"\nSIMPLE filters of {len(filters)} base files: measured false-positive rate {measured:.4f} on "
        f"{probes:,} probes of absent keys; configured {fpp}; (1 - e^(-kn/m))^k {theory:.4f}; "
        f"implied by the bits set {fill:.4f}"
    )
    # These filters are tiny (1 to 12 keys: 10 to 116 bits), where the rate varies from filter to
    # filter around the configured one; the fill of each filter predicts it.
    assert 0.8 * fill < measured < 1.25 * fill
    assert measured < 2 * fpp


def test_false_positive_rate_at_capacity() -> None:
    """Filled to its configured capacity, a SIMPLE filter's false-positive rate is the configured one;
    a DYNAMIC_V0 filter with three full rows answers for each row: about three times it."""
    rng = np.random.default_rng(5)
    present = pa.array([f"key-{i}" for i in rng.permutation(30_000)])
    absent = pa.array([f"other-{i}" for i in range(200_000)])
    simple = HudiBloomFilter.create(10_000, 0.01, SIMPLE)
    simple.add_all(present[:10_000])
    dynamic = HudiBloomFilter.create(10_000, 0.01, DYNAMIC_V0, max_entries=100_000)
    dynamic.add_all(present)
    assert dynamic.num_rows == 3
    for bloom, configured, members in ((simple, 0.01, present[:10_000]), (dynamic, 0.0297, present)):
        back = HudiBloomFilter.from_serialized(bloom.to_serialized(), bloom.type_code)
        assert back.might_contain(members).all()
        measured = float(back.might_contain(absent).mean())
        print(f"\n{bloom.type_code}: measured false-positive rate {measured:.4f}, expected {configured}")
        assert 0.7 * configured < measured < 1.3 * configured


# --- the scalar reference and Java ------------------------------------------------------------


def test_vectorized_hash_matches_the_scalar_port_on_unicode_keys() -> None:
    rng = np.random.default_rng(1)
    keys = [*random_keys(rng, 3000), "a", "ab", "abc", "abcd", "é", "😀", "\x80", "\xff\xfe\xfd"]
    chain = murmur_chain(pa.array(keys), 5)
    for i, key in enumerate(keys):
        h, data = 0, key.encode("utf-8")
        for j in range(5):
            h = ref_murmur(data, h)
            assert chain[i, j] == h, (key, j)
    # Slices, chunked arrays, large_string and plain lists give the same hashes.
    sliced = pa.array(["x", *keys]).slice(1)
    assert np.array_equal(murmur_chain(sliced, 5), chain)
    assert np.array_equal(murmur_chain(pa.chunked_array([keys[:10], keys[10:]]), 5), chain)
    assert np.array_equal(murmur_chain(pa.array(keys, pa.large_string()), 5), chain)
    assert np.array_equal(murmur_chain(keys, 5), chain)


def test_filter_matches_the_scalar_port_bit_for_bit() -> None:
    rng = np.random.default_rng(2)
    keys = random_keys(rng, 2000)
    bloom = HudiBloomFilter.create(500, 0.02, SIMPLE)
    bloom.add_all(keys)
    m, k = bloom.num_bits, bloom.num_hashes
    assert sorted({p for key in keys for p in ref_positions(key, k, m)}) == bloom.set_bits().tolist()
    probes = random_keys(rng, 5000, prefix="p")
    bits = set(bloom.set_bits().tolist())
    expected = [all(p in bits for p in ref_positions(q, k, m)) for q in probes]
    assert bloom.might_contain(probes).tolist() == expected


def test_dynamic_filter_past_its_bound_cycles_over_its_rows() -> None:
    """InternalDynamicBloomFilter: a row per ``nr`` keys while rows * nr < maxNr; then the next key
    goes to row 0 and every later key to rows 0, 1, 2, 0, ... in turn (the false-positive bound is
    gone); currentNbRecord keeps counting. Batches of any size give the same filter."""
    rng = np.random.default_rng(3)
    keys = random_keys(rng, 4100)
    nr, max_nr, fpp = 1000, 2500, 0.05
    bloom = HudiBloomFilter.create(nr, fpp, DYNAMIC_V0, max_entries=max_nr)
    at = 0
    for size in (1, 998, 1, 1, 999, 1000, 1, 1, 2, 97, 999):
        bloom.add_all(keys[at : at + size])
        at += size
    assert at == len(keys)
    rows, current = ref_rows(keys, bloom.num_hashes, bloom.num_bits, nr, max_nr)
    assert bloom.num_rows == len(rows) == 3
    assert bloom.active_row_count == current == len(keys) - 2 * nr
    for r, bits in enumerate(rows):
        assert bloom.set_bits(r).tolist() == sorted(bits), r
    one_batch = HudiBloomFilter.create(nr, fpp, DYNAMIC_V0, max_entries=max_nr)
    one_batch.add_all(keys)
    assert one_batch == bloom
    assert bloom.might_contain(keys).all()
    # Read back, the bound (maxNr, not serialized) is 0 as in Java: adding cycles over the rows.
    back = HudiBloomFilter.from_serialized(bloom.to_serialized(), "dynamic_v0")
    assert back.max_entries == 0 and back == bloom
    back.add_all(keys[:5])
    assert back.num_rows == 3 and back.might_contain(keys[:5]).all()


JAVA_ORACLE = r"""
import java.io.*;
import java.nio.file.*;
import java.util.*;
import org.apache.hadoop.util.bloom.*;
import org.apache.hadoop.util.hash.Hash;

/** Adds base64 keys to Hadoop's BloomFilter or DynamicBloomFilter; prints the serialized filter
 *  (base64) and the membership test of each probe key (0/1). */
public class HadoopBloomOracle {
  public static void main(String[] args) throws Exception {
    int m = Integer.parseInt(args[1]), k = Integer.parseInt(args[2]), nr = Integer.parseInt(args[3]);
    Filter f = args[0].equals("simple") ? new BloomFilter(m, k, Hash.MURMUR_HASH)
        : new DynamicBloomFilter(m, k, Hash.MURMUR_HASH, nr);
    Base64.Decoder dec = Base64.getDecoder();
    for (String line : Files.readAllLines(Paths.get(args[4]))) f.add(new Key(dec.decode(line)));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    f.write(new DataOutputStream(bytes));
    StringBuilder out = new StringBuilder(Base64.getEncoder().encodeToString(bytes.toByteArray()));
    out.append('\n');
    for (String line : Files.readAllLines(Paths.get(args[5])))
      out.append(f.membershipTest(new Key(dec.decode(line))) ? '1' : '0');
    Files.write(Paths.get(args[6]), out.append('\n').toString().getBytes("US-ASCII"));
  }
}
"""


@pytest.fixture(scope="module")
def hadoop(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Run Hadoop's bloom filters: (kind, m, k, nr, keys, probes) -> (serialized bytes, membership)."""
    jars = Path(pytest.importorskip("pyspark").__file__).parent / "jars"
    classpath = [*jars.glob("hadoop-client-api-*.jar"), *jars.glob("hadoop-client-runtime-*.jar")]
    if not shutil.which("java") or not shutil.which("javac") or len(classpath) < 2:
        pytest.skip("needs a JDK and pyspark's Hadoop jars")
    work = tmp_path_factory.mktemp("hadoop_oracle")
    (work / "HadoopBloomOracle.java").write_text(JAVA_ORACLE)
    cp = ":".join(str(p) for p in classpath)
    subprocess.run(["javac", "-cp", cp, "HadoopBloomOracle.java"], cwd=work, check=True)

    def run(
        kind: str, m: int, k: int, nr: int, keys: list[str], probes: list[str]
    ) -> tuple[bytes, np.ndarray]:
        for name, values in (("keys.txt", keys), ("probes.txt", probes)):
            lines = (base64.b64encode(v.encode("utf-8")).decode() for v in values)
            (work / name).write_text("\n".join(lines) + "\n")
        cmd = ["java", "-cp", f"{cp}:{work}", "HadoopBloomOracle", kind, str(m), str(k), str(nr)]
        subprocess.run([*cmd, "keys.txt", "probes.txt", "out.txt"], cwd=work, check=True)
        serialized, members = (work / "out.txt").read_text().split("\n")[:2]
        return base64.b64decode(serialized), np.array([c == "1" for c in members], dtype=bool)

    return run


def test_simple_filter_equals_hadoops(hadoop) -> None:  # type: ignore[no-untyped-def]
    """Hudi's SIMPLE filter *is* Hadoop's BloomFilter: same bytes, same answers, on Unicode keys."""
    rng = np.random.default_rng(4)
    keys = random_keys(rng, 5000)
    probes = keys[:500] + random_keys(rng, 20_000, prefix="q")
    bloom = HudiBloomFilter.create(2000, 0.01, SIMPLE)  # over-filled: many false positives to compare
    bloom.add_all(keys)
    serialized, members = hadoop("simple", bloom.num_bits, bloom.num_hashes, 0, keys, probes)
    assert bloom.to_bytes() == serialized
    assert np.array_equal(bloom.might_contain(probes), members)
    assert HudiBloomFilter.from_bytes(serialized).to_bytes() == serialized
    print(
        f"\nSIMPLE = Hadoop BloomFilter: {len(serialized)} bytes equal; "
        f"{int(members.sum())} of {len(probes)} probes in, the same ones"
    )


def test_dynamic_filter_grows_past_one_row_as_hadoop(hadoop) -> None:  # type: ignore[no-untyped-def]
    """With Hudi's defaults, 100,000 keys fill row 0 (60,000) and open row 1: the same bytes as
    Hadoop's DynamicBloomFilter, which Hudi's copies (they differ only once the bound is reached)."""
    rng = np.random.default_rng(6)
    keys = [f"{i:012d}-{s}" for i, s in enumerate(random_keys(rng, 100_000))]
    probes = keys[::97] + random_keys(rng, 20_000, prefix="absent")
    bloom = HudiBloomFilter.create()  # DYNAMIC_V0, 60,000 per row, 1e-9, bound 100,000
    bloom.add_all(keys)
    assert (bloom.num_rows, bloom.active_row_count) == (2, 40_000)
    serialized, members = hadoop("dynamic", HUDI_M, HUDI_K, HUDI_NR, keys, probes)
    assert bloom.to_bytes() == serialized
    assert np.array_equal(bloom.might_contain(probes), members)
    # 3 rows of a small filter: still Hadoop's until rows * nr reaches the bound
    small = HudiBloomFilter.create(1000, 0.05, DYNAMIC_V0, max_entries=2500)
    small.add_all(keys[:3000])
    serialized, members = hadoop("dynamic", small.num_bits, small.num_hashes, 1000, keys[:3000], probes)
    assert small.num_rows == 3 and small.to_bytes() == serialized
    assert np.array_equal(small.might_contain(probes), members)


# --- sets, order, errors, timing ------------------------------------------------------------


def test_filter_set_pairs_match_single_filters(footers: dict) -> None:
    """Real footer filters (stored sparse), a file without one, a small dense SIMPLE filter and a
    3-row DYNAMIC_V0 filter of other sizes, probed together: each pair answers as its filter."""
    metas = [meta for name, fs in footers.items() for _, meta in fs if name.startswith("v9_txns_simple")]
    filters: list[HudiBloomFilter | None] = [HudiBloomFilter.from_footer(meta) for meta in metas]
    filters.append(None)  # a file without a filter: may hold anything
    dense = HudiBloomFilter.create(50, 0.1, SIMPLE)
    dense.add_all([f"TXN-{i:03d}" for i in range(0, 100, 2)])
    grown = HudiBloomFilter.create(20, 0.05, DYNAMIC_V0, max_entries=45)
    grown.add_all([f"TXN-{i:03d}" for i in range(1, 120, 2)])
    assert grown.num_rows == 3
    filters += [dense, grown]
    bloom_set = HudiBloomFilterSet(filters)
    assert np.array_equal(bloom_set.has_filter, [f is not None for f in filters])
    keys = pa.array([f"TXN-{i:03d}" for i in range(130)] + ["nope", "", "😀"])
    key_idx = np.repeat(np.arange(len(keys)), len(filters))
    file_idx = np.tile(np.arange(len(filters)), len(keys))
    got = bloom_set.might_contain_pairs(keys, key_idx, file_idx).reshape(len(keys), len(filters))
    for f, bloom in enumerate(filters):
        expected = np.ones(len(keys), bool) if bloom is None else bloom.might_contain(keys)
        assert np.array_equal(got[:, f], expected), f
    assert got[:100:2, -2].all() and got[1:120:2, -1].all() and got[-2].all()  # members; "" is "maybe"
    assert np.array_equal(bloom_set.might_contain("TXN-007"), got[7])
    contained = bloom_set.contained(pa.array(["TXN-001", None, "TXN-002"])).to_numpy(zero_copy_only=False)
    assert np.array_equal(contained, got[1] | got[2])
    assert not bloom_set.contained(pa.array([], pa.string())).to_numpy(zero_copy_only=False).any()
    # pairs in any order, with repeats, and an empty batch
    order = np.random.default_rng(9).permutation(key_idx.size)
    again = bloom_set.might_contain_pairs(
        keys, np.concatenate([key_idx[order], [0]]), np.concatenate([file_idx[order], [0]])
    )
    assert np.array_equal(again[:-1], got.ravel()[order]) and again[-1] == got[0, 0]
    assert bloom_set.might_contain_pairs(keys, np.zeros(0, int), np.zeros(0, int)).size == 0


def test_java_string_order_with_characters_above_the_bmp() -> None:
    words = [
        "",
        "a",
        "ab",
        "b",
        "\ud7ff",
        "\ue000",
        "\uffff",
        "😀",
        "😀a",
        "𐀀",
        "z😀",
        "z\uffff",
        "z",
        "é",
        "中",
    ]
    rng = np.random.default_rng(7)
    words += random_keys(rng, 2000)
    utf16 = sorted(range(len(words)), key=lambda i: (words[i].encode("utf-16-be"), i))
    assert java_argsort(pa.array(words)).tolist() == utf16
    assert sorted(words) != [words[i] for i in utf16]  # Python's code-point order differs here
    # U+FFFF sorts after an emoji in Java (a surrogate pair starts with 0xD83D) but before in UTF-8.
    low, high = java_sort_keys(pa.array(["\uffff", "😀"])).to_pylist()
    assert low > high and "\uffff".encode() < "😀".encode()
    sliced = pa.array(["x", "\uffff", None, "😀"]).slice(1)
    assert java_sort_keys(sliced).to_pylist()[1] is None
    assert java_argsort(sliced).tolist() == [2, 0, 1]


def test_bad_input_and_corrupt_filters() -> None:
    bloom = HudiBloomFilter.create(100, 0.01)
    bloom.add_all(["a", "b"])
    with pytest.raises(ValueError, match="null"):
        bloom.add_all(pa.array(["c", None]))
    with pytest.raises(ValueError, match="empty"):
        bloom.add_all(["d", ""])
    assert bloom.might_contain(["a", "c"]).tolist()[0]
    assert bloom.might_contain([""]).tolist() == [True]  # Java cannot hash it: "maybe"
    with pytest.raises(ValueError, match="null"):
        bloom.might_contain(pa.array(["a", None]))
    with pytest.raises(TypeError):
        bloom.might_contain(pa.array([1, 2]))
    assert bloom.might_contain(pa.array([], pa.string())).size == 0
    text = bloom.to_serialized()
    raw = base64.b64decode(text)
    for bad, code in (
        ("not base64!", DYNAMIC_V0),
        (text, "BLOCKED"),
        (base64.b64encode(raw[:-1]).decode(), DYNAMIC_V0),
        (base64.b64encode(raw + b"\x00").decode(), DYNAMIC_V0),
        (base64.b64encode(raw[:3]).decode(), DYNAMIC_V0),
        (base64.b64encode(raw[:8] + b"\x00" + raw[9:]).decode(), DYNAMIC_V0),  # Jenkins hash
        (base64.b64encode(b"\x00\x00\x00\x05" + raw[4:]).decode(), DYNAMIC_V0),  # unversioned
        (text, SIMPLE),  # a DYNAMIC_V0 filter read as SIMPLE: trailing bytes
    ):
        with pytest.raises(HudiBloomFormatError):
            HudiBloomFilter.from_serialized(bad, code)
    assert HudiBloomFilter.from_serialized(text.rstrip("="), DYNAMIC_V0) == bloom  # padding optional
    assert HudiBloomFilter.from_footer({}) is None and footer_key_bounds(None) is None
    assert footer_key_bounds({MIN_KEY_FOOTER_KEY: "a"}) is None
    assert footer_key_bounds({MIN_KEY_FOOTER_KEY: "a", MAX_KEY_FOOTER_KEY: "b"}) == ("a", "b")
    assert hudi_bloom_size(60_000, 1e-9) == (HUDI_M, HUDI_K)


def test_might_contain_one_million_keys_timing(footers: dict) -> None:
    """1,000,000 keys against one filter: a real footer filter, and a Hudi-default filter holding
    60,000 UUID keys (half its bits set: the most work per absent key)."""
    rng = np.random.default_rng(8)
    real = HudiBloomFilter.from_footer(footers["v9_txns_nonpart_meta"][2][1])
    full = HudiBloomFilter.create()
    full.add_all(pa.array([f"{x:032x}" for x in rng.integers(0, 2**62, 60_000)]))
    absent = pa.array([f"{x:08x}-0000-4000-8000-{x:012x}" for x in rng.integers(0, 2**40, 1_000_000)])
    before = full.rows()  # probing must not modify the filter
    for label, bloom in (("real footer filter", real), ("default filter, 60,000 keys", full)):
        assert bloom is not None
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            hits = bloom.might_contain(absent)
            best = min(best, time.perf_counter() - start)
        print(f"\nmight_contain, 1,000,000 absent keys, {label}: {best:.3f} s ({int(hits.sum())} maybe)")
        assert best < 1.0
    assert np.array_equal(full.rows(), before)
