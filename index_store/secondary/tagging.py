"""Key tagging with a value index on the record key column (RFC-51 names tagging as a use).

RFC-37's last stage confirms each (key, candidate file) pair by reading the file's key column. When
the key is one column (Hudi's simple key generator) with a value index, the file's index file holds
that column's distinct values, sorted: confirming reads the index's key entries instead of the data.
Keys are compared as the key generator writes them (the value's string form), so only string and
integer columns qualify, whose string forms are what Hudi's ``toString`` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import IndexCorruptError
from index_store.secondary.format import IndexFile, open_cached
from index_store.tagging.verify import Verified

__all__ = ["key_values", "verify_with_index"]


def key_values(keys: pa.StringArray, column_type: pa.DataType) -> tuple[pa.Array, np.ndarray] | None:
    """The key strings as values of the key column (and which converted), or None when the
    column's type is not one whose values a key string spells exactly."""
    if pa.types.is_string(column_type) or pa.types.is_large_string(column_type):
        return keys.cast(column_type), np.ones(len(keys), dtype=bool)
    if pa.types.is_integer(column_type):
        # Java's Long.toString: optional minus, digits, no leading zeros (other spellings are no key).
        ok = pc.match_substring_regex(keys, r"^(0|-?[1-9][0-9]{0,18})$").to_numpy(zero_copy_only=False)
        # 19 digits may exceed a long: same-length digit strings compare as their numbers.
        negative = pc.starts_with(keys, "-").to_numpy(zero_copy_only=False)
        digits = pc.utf8_ltrim(keys, "-")
        long19 = pc.equal(pc.utf8_length(digits), 19).to_numpy(zero_copy_only=False)
        above = np.where(
            negative,
            pc.greater(digits, "9223372036854775808").to_numpy(zero_copy_only=False),
            pc.greater(digits, "9223372036854775807").to_numpy(zero_copy_only=False),
        )
        ok &= ~(long19 & above)
        text = pc.if_else(pa.array(ok), keys, pa.scalar("0"))
        numbers = pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False)
        if column_type != pa.uint64():
            info = np.iinfo(column_type.to_pandas_dtype())
            ok &= (numbers >= info.min) & (numbers <= info.max)
        else:
            ok &= numbers >= 0
        return pa.array(np.where(ok, numbers, 0)).cast(column_type, safe=False), ok
    return None


def verify_with_index(
    keys: pa.StringArray,
    key_idx: np.ndarray,
    file_pos: np.ndarray,
    column: str,
    column_type: pa.DataType,
    index_file_of: Callable[[np.ndarray], Sequence[str | None]],
    index_root: Path,
    opened: dict[str, IndexFile],
    fallback: Callable[[np.ndarray], Verified],
) -> Verified:
    """Confirm (key, file) pairs from the files' index files; pairs of files without a usable one
    go to ``fallback`` (reading the data), given the positions of those pairs."""
    converted = key_values(keys, column_type)
    if converted is None or not key_idx.size:
        return fallback(np.arange(key_idx.size))
    values, ok = converted
    confirmed = np.zeros(key_idx.size, dtype=bool)
    order = np.argsort(file_pos, kind="stable")
    starts = np.flatnonzero(np.concatenate([[True], file_pos[order][1:] != file_pos[order][:-1]]))
    files = file_pos[order][starts]
    rels = index_file_of(files)
    without: list[np.ndarray] = []
    opened_count = 0
    # One lookup per candidate file (the bloom stage leaves few): each is an index file read.
    for pairs, rel in zip(np.split(order, starts[1:]), rels, strict=True):
        if rel is None:
            without.append(pairs)
            continue
        try:
            handle = open_cached(opened, index_root, rel)
            if column not in handle.layout:
                raise IndexCorruptError(str(index_root / rel), f"holds no {column!r}")
            usable = pairs[ok[key_idx[pairs]]]
            found = handle.contains(column, values.take(pa.array(key_idx[usable])))
            confirmed[usable[found]] = True
            opened_count += 1
        except IndexCorruptError:
            without.append(pairs)  # read the data file instead: never a wrong answer
    rest = np.concatenate(without) if without else np.zeros(0, np.int64)
    if not rest.size:
        return Verified(confirmed, opened_count, 0, 0, 0)
    by_data = fallback(rest)
    confirmed[rest] = by_data.confirmed
    return Verified(
        confirmed,
        opened_count + by_data.files_opened,
        by_data.files_read,
        by_data.row_groups_read,
        by_data.bytes_read,
    )
