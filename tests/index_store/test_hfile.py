"""The HFile reader on HFiles the tests write (index_store.hfile.writer): the format's edge cases
the real metadata tables here never have (many data blocks, two- and three-level indexes,
shortened index keys, every codec with a compressor, binary keys, an empty file), and bad input
(truncated, a damaged trailer or block, an unknown codec), each a typed error, never wrong data.
Compatibility with the files Hudi writes is test_hfile_real.py's."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from index_store.errors import HFileCorruptError, HFileError, TableFormatError, UnsupportedHFileError
from index_store.hfile import KEY, VALUE, Codec, HFileReader
from index_store.hfile.codecs import CodecError, decompress
from index_store.hfile.trailer import TRAILER_SIZE, encode_trailer, read_trailer
from index_store.hfile.writer import write_hfile

KEYS = [f"key-{i * 7:06d}".encode() for i in range(3000)]
VALUES = [b"value of " + k * (1 + i % 3) for i, k in enumerate(KEYS)]
CODECS = [Codec.GZ, Codec.NONE, Codec.SNAPPY, Codec.LZ4, Codec.BZIP2, Codec.ZSTD]


def small_blocks(codec: Codec = Codec.GZ, fanout: int = 8, **kwargs: object) -> bytes:
    """3,000 cells in blocks of about 1 KB (about 130 blocks): with fan-out 8, a 3-level index."""
    return write_hfile(KEYS, VALUES, codec=codec, block_size=1024, index_fanout=fanout, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_every_codec_scans_and_looks_up(codec: Codec) -> None:
    """Each codec, many blocks, a multi-level index: the scan gives back exactly what was written,
    and every tenth key (and keys between, before and after them) is looked up right."""
    reader = HFileReader(small_blocks(codec))
    assert reader.codec is codec and reader.trailer.data_index_levels == 3
    table = reader.scan()
    assert table.num_rows == reader.num_entries == len(KEYS)
    assert table[KEY].to_pylist() == KEYS and table[VALUE].to_pylist() == VALUES
    for i in range(0, len(KEYS), 10):
        assert reader.get(KEYS[i]) == VALUES[i]
        assert reader.get(KEYS[i] + b"\x00") is None  # just above a key: between two cells
    assert reader.get(b"") is None and reader.get(b"a") is None and reader.get(b"key-999999") is None


@pytest.mark.parametrize(("fanout", "levels"), [(1000, 1), (64, 2), (8, 3), (2, 8)])
def test_index_depths(fanout: int, levels: int) -> None:
    """One root block, a root over leaf blocks, over intermediate blocks too, and a fan-out of two
    (eight levels): the same cells through each."""
    reader = HFileReader(small_blocks(fanout=fanout))
    assert reader.trailer.data_index_levels == levels
    assert reader.scan()[KEY].to_pylist() == KEYS
    assert [reader.get(k) for k in KEYS[::97]] == VALUES[::97]


def test_a_lookup_reads_only_the_blocks_its_key_can_be_in() -> None:
    """One lookup in a 3-level index decodes one data block and one index block per level below
    the root; a batch reads each block it needs once."""
    reader = HFileReader(small_blocks(), cached_blocks=1000)
    assert reader.get(KEYS[1500]) == VALUES[1500]
    assert len(reader._cache) == 1 and len(reader._index_blocks) == 2
    assert reader.get(KEYS[1501]) == VALUES[1501]  # the same block: nothing more read
    assert len(reader._cache) == 1 and len(reader._index_blocks) == 2
    reader.scan()
    assert len(reader._cache) > 100  # a scan reads them all
    fresh = HFileReader(small_blocks(), cached_blocks=1000)
    found = fresh.get_many([KEYS[0], KEYS[1], KEYS[-1]])
    assert found[KEY].to_pylist() == [KEYS[0], KEYS[1], KEYS[-1]] and len(fresh._cache) == 2


def test_get_many() -> None:
    """A batch in any order, with repeats, misses and nulls: the cells found, once each, in key
    order."""
    reader = HFileReader(small_blocks())
    wanted = [KEYS[2999], b"nope", KEYS[5], KEYS[5], b"key-000001", KEYS[1200]]
    found = reader.get_many(wanted)
    assert found[KEY].to_pylist() == [KEYS[5], KEYS[1200], KEYS[2999]]
    assert found[VALUE].to_pylist() == [VALUES[5], VALUES[1200], VALUES[2999]]
    assert reader.get_many(pa.array([KEYS[7], None], pa.binary()))[VALUE].to_pylist() == [VALUES[7]]
    assert reader.get_many([]).num_rows == 0 and reader.get_many([b"zzz"]).num_rows == 0


def test_shortened_index_keys() -> None:
    """HBase indexes a block by the shortest key above the previous block's last: such a key (not
    itself a cell) is found in no block, and each block's first cell is still found."""
    short = HFileReader(small_blocks(fanout=1000))
    full = HFileReader(small_blocks(fanout=1000, short_index_keys=False))
    separators = set(short._root.rows[1:]) - set(KEYS)
    assert separators and short._root.rows != full._root.rows
    for separator in separators:
        assert short.get(separator) is None and full.get(separator) is None
    firsts = [k for k in full._root.rows]
    assert (
        [short.get(k) for k in firsts]
        == [full.get(k) for k in firsts]
        == [VALUES[KEYS.index(k)] for k in firsts]
    )


def test_scan_prefix() -> None:
    """The cells of a prefix, across block boundaries; a prefix of 0xff bytes has no upper bound."""
    reader = HFileReader(small_blocks())
    assert reader.scan_prefix(b"key-01")[KEY].to_pylist() == [k for k in KEYS if k.startswith(b"key-01")]
    assert reader.scan_prefix(b"key-02099")[KEY].to_pylist() == [b"key-020993"]
    assert reader.scan_prefix(b"nope").num_rows == 0 and reader.scan_prefix(b"").num_rows == len(KEYS)
    keys = [b"\x00", b"\x00\xff", b"a", b"\xff", b"\xff\x00", b"\xff\xff", b"\xff\xff\x01"]
    binary = HFileReader(write_hfile(keys, keys, block_size=16, index_fanout=2))
    assert binary.scan_prefix(b"\xff\xff")[KEY].to_pylist() == [b"\xff\xff", b"\xff\xff\x01"]
    assert binary.scan_prefix(b"\x00")[VALUE].to_pylist() == [b"\x00", b"\x00\xff"]
    assert [binary.get(k) for k in keys] == keys and binary.get(b"\xff\x01") is None


def test_empty_values_and_an_empty_file(tmp_path: Path) -> None:
    """Cells with empty values; a file with no cells (scans empty, finds nothing)."""
    reader = HFileReader(write_hfile([b"a", b"b"], [b"", b"x"]))
    assert reader.get(b"a") == b"" and reader.scan()[VALUE].to_pylist() == [b"", b"x"]
    empty = HFileReader(write_hfile([], []))
    assert empty.num_entries == 0 and empty.scan().num_rows == 0 and empty.get(b"a") is None
    assert empty.get_many([b"a"]).num_rows == 0 and empty.scan_prefix(b"a").num_rows == 0


def test_from_a_path_file_info_and_meta_blocks(tmp_path: Path) -> None:
    """Opened from a file (memory-mapped, closed with the reader): file info entries and meta
    blocks by name."""
    path = tmp_path / "f.hfile"
    path.write_bytes(small_blocks(file_info={"schema": b"{}"}, meta_blocks={"bloomFilter": b"\x01" * 50}))
    with HFileReader(path) as reader:
        assert reader.path == str(path) and reader.file_info["schema"] == b"{}"
        assert reader.file_info["hfile.LASTKEY"][2:-10] == KEYS[-1]
        assert reader.meta_names == ["bloomFilter"] and reader.meta_block("bloomFilter") == b"\x01" * 50
        assert reader.meta_block("other") is None
        assert reader.get(KEYS[3]) == VALUES[3]
    assert reader._mmap is None


def test_the_writer_refuses_unsorted_keys() -> None:
    with pytest.raises(ValueError, match="sorted"):
        write_hfile([b"b", b"a"], [b"", b""])


# -- bad input -----------------------------------------------------------------------------------


def with_trailer(data: bytes, **changes: Any) -> bytes:
    """``data`` with its trailer's fields changed."""
    return data[:-TRAILER_SIZE] + encode_trailer(dataclasses.replace(read_trailer(data), **changes))


def damaged(data: bytes, at: int, replacement: bytes) -> bytes:
    return data[:at] + replacement + data[at + len(replacement) :]


GOOD = small_blocks()
PLAIN = small_blocks(Codec.NONE)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (GOOD[:-1], "no trailer magic"),
        (GOOD[: len(GOOD) // 2], "no trailer magic"),
        (GOOD[:100], "fewer than the 4096-byte trailer"),
        (b"", "fewer than the 4096-byte trailer"),
        (damaged(GOOD, len(GOOD) - TRAILER_SIZE, b"TRABLKXX"), "no trailer magic"),
        (damaged(GOOD, len(GOOD) - TRAILER_SIZE + 8, b"\xff" * 12), "trailer does not decode"),
        (with_trailer(GOOD, load_on_open_offset=10**9), "load-on-open section at byte"),
        (with_trailer(GOOD, load_on_open_offset=0), "is DATA, not ROOT_INDEX"),
        (with_trailer(GOOD, data_index_count=10**6), "the index block at byte"),
    ],
    ids=[
        "one-byte-short",
        "half",
        "100-bytes",
        "empty",
        "trailer-magic",
        "trailer-protobuf",
        "load-on-open-past-end",
        "load-on-open-at-data",
        "root-count",
    ],
)
def test_a_damaged_file_does_not_open(data: bytes, message: str) -> None:
    """Truncated files and bad trailers: ``HFileCorruptError`` (a ``TableFormatError``), saying
    what is wrong, at open."""
    with pytest.raises(HFileCorruptError, match=message) as caught:
        HFileReader(data)
    assert isinstance(caught.value, TableFormatError) and "truncated or damaged" in str(caught.value)


def test_a_damaged_data_block_is_an_error_on_read_never_wrong_data() -> None:
    """A data block whose compressed bytes are damaged (GZ) or whose cell lengths are (NONE):
    opening works (only the index is read), reading that block raises, other blocks still read."""
    reader = HFileReader(GOOD)
    first = int(reader._leaf_entries().offsets[0])
    broken = HFileReader(damaged(GOOD, first + 33 + 12, b"\x00" * 8))
    with pytest.raises(HFileCorruptError, match=f"DATA block at byte {first}"):
        broken.scan()
    with pytest.raises(HFileCorruptError):
        broken.get(KEYS[0])
    assert broken.get(KEYS[-1]) == VALUES[-1]
    plain = HFileReader(PLAIN)
    first = int(plain._leaf_entries().offsets[0])
    lengths = damaged(PLAIN, first + 33, b"\x00\x00\x7f\x00")  # the first cell's key length
    with pytest.raises(HFileCorruptError, match="runs past the block"):
        HFileReader(lengths).get(KEYS[0])
    with pytest.raises(HFileCorruptError, match="runs past the block"):
        HFileReader(lengths).scan()


def test_a_wrong_entry_count_fails_the_scan() -> None:
    """A trailer that counts more cells than the blocks hold: the scan refuses rather than return
    a file that lost cells."""
    with pytest.raises(HFileCorruptError, match="the trailer says 3001"):
        HFileReader(with_trailer(GOOD, entry_count=3001)).scan()


def test_unsorted_cells_fail_the_scan() -> None:
    """Two cells swapped inside a block (NONE: same lengths, so still well framed): not in key
    order, which a scan checks."""
    data = write_hfile([b"k1", b"k2"], [b"v", b"w"], codec=Codec.NONE)
    swapped = data.replace(b"\x00\x02k1", b"\x00\x02kX", 1)
    with pytest.raises(HFileCorruptError, match="not in key order"):
        HFileReader(swapped).scan()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"codec": 9}, "codec code 9 is none of HBase's"),
        ({"codec": int(Codec.LZO)}, "LZO"),
        ({"minor_version": 3}, None),
    ],
    ids=["unknown-code", "lzo", "minor-version"],
)
def test_unsupported_codecs(changes: dict[str, int], message: str | None) -> None:
    """A codec code no HBase has, or LZO: ``UnsupportedHFileError`` naming it; a minor version
    changes nothing read here."""
    data = with_trailer(GOOD, **changes)
    if message is None:
        assert HFileReader(data).get(KEYS[9]) == VALUES[9]
        return
    with pytest.raises(UnsupportedHFileError, match=message) as caught:
        HFileReader(data)
    assert isinstance(caught.value, HFileError)


def test_an_unsupported_major_version() -> None:
    data = GOOD[:-4] + bytes([0, 0, 0, 2])
    with pytest.raises(UnsupportedHFileError, match="major version 2"):
        HFileReader(data)


def test_a_gzip_member_cut_short_is_corrupt() -> None:
    """A block whose gzip stream ends early (the header's sizes kept): corrupt, not a short block."""
    reader = HFileReader(GOOD)
    first = int(reader._leaf_entries().offsets[0])
    size = int.from_bytes(GOOD[first + 29 : first + 33], "big")  # on-disk data size with header
    cut = damaged(GOOD, first + size - 8, b"\x00" * 8)  # gzip's CRC and length trailer
    with pytest.raises(HFileCorruptError, match="GZ"):
        HFileReader(cut).get(KEYS[0])


def test_a_snappy_run_in_several_chunks() -> None:
    """Hadoop's block framing may split a run into chunks (raw snappy says each one's length):
    the chunks join; a chunk that runs past its run is corrupt."""
    first, second = b"first " * 200, b"second " * 100
    snappy = pa.Codec("snappy")
    chunks = [snappy.compress(part, asbytes=True) for part in (first, second)]
    framed = struct.pack(">i", len(first) + len(second)) + b"".join(
        struct.pack(">i", len(c)) + c for c in chunks
    )
    assert decompress(Codec.SNAPPY, framed, len(first) + len(second)) == first + second
    short = struct.pack(">i", len(first)) + framed[4:]
    with pytest.raises(CodecError):
        decompress(Codec.SNAPPY, short, len(first) + len(second))
