"""The cells of a metadata file slice, in merge order: its HFile base file, then the HFile data
blocks and delete blocks of its log files that count (``hudi_log.block_fates``: valid instants,
rollback command blocks applied, corrupt blocks skipped), as written. All of them, or only those of
some keys (point lookups), or of some key prefixes (one column's statistics): then only the HFile
data blocks that can hold them are decoded."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import MetadataTableError
from index_store.hfile import KEY, VALUE, HFileReader
from index_store.hfile.reader import starts_with_any
from index_store.hudi_log import (
    BlockFate,
    BlockType,
    DeleteKeys,
    LogBlock,
    block_fates,
    decode_block,
    read_log_file,
)
from index_store.hudi_log.format import HeaderKey
from index_store.hudi_metadata.layout import MetadataSlice
from index_store.hudi_metadata.records import Cells

__all__ = ["slice_cells", "table_cells"]


def table_cells(cells: pa.Table, schema: str | None, where: str) -> Cells:
    """``Cells`` of an HFile's ``key``/``value`` table."""
    return Cells(cells[KEY].combine_chunks(), cells[VALUE].combine_chunks(), schema, where)


def _read(reader: HFileReader, keys: Sequence[bytes] | None, prefixes: Sequence[bytes] | None) -> pa.Table:
    if keys is not None:
        return reader.get_many(keys)
    return reader.scan() if prefixes is None else reader.scan_prefixes(prefixes)


def _base_cells(path: str, keys: Sequence[bytes] | None, prefixes: Sequence[bytes] | None) -> Cells:
    with HFileReader(path) as reader:
        schema = reader.file_info.get("schema")
        cells = _read(reader, keys, prefixes)
    return table_cells(cells, schema.decode("utf-8") if schema else None, path)


def _block_cells(block: LogBlock, keys: Sequence[bytes] | None, prefixes: Sequence[bytes] | None) -> Cells:
    where = f"{block.path} (block at byte {block.offset})"
    if block.type_code == BlockType.HFILE_DATA:
        reader = HFileReader(block.content, path=where)
        return table_cells(_read(reader, keys, prefixes), block.header.get(HeaderKey.SCHEMA), where)
    if block.type_code == BlockType.DELETE:
        content = decode_block(block)
        assert isinstance(content, DeleteKeys)
        deleted = content.deletes["record_key"]
        if keys is not None:
            wanted = pa.array(keys, pa.binary()).cast(pa.string())
            deleted = deleted.filter(pc.is_in(deleted, value_set=wanted))
        elif prefixes is not None:
            deleted = deleted.filter(starts_with_any(deleted, prefixes))
        return Cells(
            deleted.combine_chunks() if isinstance(deleted, pa.ChunkedArray) else deleted, None, None, where
        )
    raise MetadataTableError(
        f"{where}: a block of type {block.type_code} in a metadata table log file, where Hudi writes HFile "
        "data blocks and delete blocks only"
    )


def slice_cells(
    piece: MetadataSlice,
    valid: Callable[[str], bool],
    keys: Sequence[bytes] | None = None,
    prefixes: Sequence[bytes] | None = None,
) -> list[Cells]:
    """The cells of ``piece`` in merge order; only those of ``keys`` when given (point lookups read
    only the data blocks the keys can be in), else only those starting with one of ``prefixes``
    when given (only the data blocks overlapping a prefix's range are read)."""
    out = [_base_cells(piece.base, keys, prefixes)] if piece.base else []
    blocks = [block for path in piece.logs for block in read_log_file(path)]
    for block, fate in zip(blocks, block_fates(blocks, valid), strict=True):
        if fate is BlockFate.KEPT and isinstance(block, LogBlock):
            out.append(_block_cells(block, keys, prefixes))
    return out
