"""Record index keys routed to their file group as Hudi routes them (``hudi_metadata.routing``):
Java's ``String.hashCode`` bit for bit, every key of every real table's record index found in the
file group the hash names, lookups opening only those groups, and the fallback to every group."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hudi_data import DATA

from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata import source as metadata_source
from index_store.hudi_metadata.routing import file_group_indexes, java_string_hashes, route_keys
from index_store.hudi_metadata.source import slice_cells

# The real tables whose metadata table has a record index.
RECORD_INDEX_TABLES = sorted(
    p.stem
    for p in DATA.glob("*.zip")
    if any("metadata/record_index/" in n for n in zipfile.ZipFile(p).namelist())
)


def _java_hash(text: str) -> int:
    """Java's ``String.hashCode``, one UTF-16 code unit at a time (the reference)."""
    units = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_string_hash_is_javas() -> None:
    keys = ["", "a", "abc", "x" * 300, "é€", "😀 surrogate pair 😀", "", "key_00042", "polygenelubricants"]
    got = java_string_hashes(pa.array(["skipped", *keys]).slice(1))
    assert got.tolist() == [_java_hash(k) for k in keys]
    assert got[-1] == -(2**31)  # Integer.MIN_VALUE: Math.abs leaves it negative, the remainder's sign goes
    assert file_group_indexes(pa.array(["polygenelubricants"]), 10).tolist() == [2**31 % 10]
    rng = np.random.default_rng(7)
    rand = ["".join(chr(c) for c in rng.integers(32, 0x3000, size=rng.integers(0, 40))) for _ in range(500)]
    assert java_string_hashes(pa.array(rand)).tolist() == [_java_hash(k) for k in rand]


def test_route_keys_needs_numbered_groups() -> None:
    keys = pa.array([b"a", b"b", b"c"], pa.binary())
    assert route_keys(["record-index-0000-0", "record-index-0001-0"], keys) is not None
    assert route_keys(["record-index-0000-0", "record-index-0002-0"], keys) is None  # a gap
    assert route_keys(["record-index-0001-0"], keys) is None  # not from 0
    assert route_keys(["3f2a-uuid-like_0"], keys) is None
    assert route_keys([], keys) is None


@pytest.mark.parametrize("name", RECORD_INDEX_TABLES)
def test_every_key_is_in_its_hashed_file_group(name: str, hudi_tables: dict[str, Path]) -> None:
    mdt = HudiMetadataTable(hudi_tables[name], require_in_step=False)
    pieces = mdt.layout.slices("record_index")
    assert [p.file_id for p in pieces] == [f"record-index-{i:04d}-0" for i in range(len(pieces))]
    valid = mdt.layout.valid_instant
    seen = 0
    for index, piece in enumerate(pieces):
        keys = [c.key_array for c in slice_cells(piece, valid)]
        held = pa.chunked_array(keys, pa.string()) if keys else pa.chunked_array([], pa.string())
        assert (file_group_indexes(held, len(pieces)) == index).all(), (name, piece.file_id)
        seen += len(held)
    assert seen > 0


@pytest.mark.parametrize("name", RECORD_INDEX_TABLES)
def test_routed_lookups_find_what_a_scan_finds(name: str, hudi_tables: dict[str, Path]) -> None:
    mdt = HudiMetadataTable(hudi_tables[name], require_in_step=False)
    full = mdt.record_index()
    keys = full["record_key"].to_pylist()
    looked = mdt.record_index([*keys, "no-such-key"])
    assert mdt.routing_note is None
    assert looked.sort_by("record_key").equals(full.sort_by("record_key"))


def test_lookup_opens_only_the_hashed_groups(
    hudi_tables: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    mdt = HudiMetadataTable(hudi_tables["v9_txns_simple_meta"], require_in_step=False)
    key = mdt.record_index()["record_key"][0].as_py()
    opened: list[str] = []
    real = metadata_source.slice_cells

    def spy(piece, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(piece.file_id)
        return real(piece, *args, **kwargs)

    monkeypatch.setattr("index_store.hudi_metadata.table.slice_cells", spy)
    assert mdt.record_index([key]).num_rows == 1
    n = len(mdt.layout.slices("record_index"))
    assert opened == [f"record-index-{file_group_indexes(pa.array([key]), n)[0]:04d}-0"]


def test_unnumbered_groups_fall_back_to_every_group(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    folder = root / ".hoodie" / "metadata" / "record_index"
    full = HudiMetadataTable(root).record_index()
    last = sorted(
        {n.split("_")[0].lstrip(".") for n in os.listdir(folder) if n.startswith((".record", "record"))}
    )[-1]
    for entry in os.listdir(folder):
        if last in entry:  # the last group renumbered: a gap, so the hash cannot name groups
            os.rename(folder / entry, folder / entry.replace(last, "record-index-0042-0"))
    mdt = HudiMetadataTable(root)
    looked = mdt.record_index(full["record_key"].to_pylist())
    assert mdt.routing_note is not None and "every file group" in mdt.routing_note
    assert (
        pc.equal(looked.sort_by("record_key")["record_key"], full.sort_by("record_key")["record_key"])
        .to_numpy()
        .all()
    )
    assert looked.num_rows == full.num_rows
