"""Reading only the rows a secondary index selects, in DuckDB: filters on ``file_row_number``.

``IndexedTable.select`` gives, per candidate file, the rows that may match. A file with none is
not read at all (pure file pruning). The others are read with ``read_parquet(...,
file_row_number = true)`` and a filter on that column, which DuckDB pushes into the Parquet scan:
row groups without a wanted row are skipped, and within a row group only the vectors holding one
are decoded. The filter only narrows what is read: the query's own WHERE still decides every row,
so a read may keep more rows than were selected (never fewer).

How a file is read depends on how its selected rows lie (``plan_reads``). Measured on one file of
300,000 rows in 19 row groups (whole: 210 ms) and on 100 files of 3,000 rows:

- none: not read;
- every row, or rows in at least half of its 2,048-row blocks (DuckDB's vector): read whole. A
  filter would skip little there, and a long ``IN`` list costs more than it saves: 1,000 random
  positions took 33 ms, 6,000 took 137 ms, 60,000 took 1.2 s;
- at most ``MAX_POSITIONS`` rows: grouped with other such files into one ``read_parquet`` whose
  filter is ``file_row_number IN (the union of their positions)``: a row from each of 100 files
  took 49 ms so, 92 ms as 100 reads of one file (264 ms for the 100 files whole);
- more rows in fewer blocks: read alone with ``file_row_number BETWEEN a AND b OR ...`` over the
  runs of blocks holding them (at most ``MAX_RANGES``): 3,000 adjacent rows took 7 ms so, 43 ms
  as an ``IN`` list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from index_store import RowSelection

__all__ = [
    "BLOCK",
    "GROUP_ROWS",
    "MAX_POSITIONS",
    "MAX_RANGES",
    "ROW_COLUMN",
    "RowRead",
    "first_row",
    "plan_reads",
]

ROW_COLUMN = "file_row_number"  # the column ``read_parquet(..., file_row_number = true)`` adds
BLOCK = 2048  # DuckDB's vector size: the unit its Parquet scan skips inside a row group
# Files of at most this many rows (a row group or so) share one position list in a read.
GROUP_ROWS = 65_536
MAX_POSITIONS = 1024  # longest IN list of one read
MAX_RANGES = 32  # most row ranges in one file's filter


@dataclass(frozen=True)
class RowRead:
    """One ``read_parquet`` of ``files``, filtered by ``condition`` on ``ROW_COLUMN`` (None: whole)."""

    files: tuple[str, ...]
    condition: str | None


@dataclass(frozen=True)
class Reads:
    """The reads of a selection, and what they amount to (for ``explain``)."""

    reads: tuple[RowRead, ...]
    files: int  # files read
    by_rows: int  # of those, read with a row filter
    dropped: int  # candidate files with no selected row, not read
    selected: int | None  # rows the index selected in the files it answered for


def plan_reads(selection: RowSelection) -> Reads:
    """The reads of exactly the files with candidate rows, each filtered as the module says."""
    whole: list[str] = []
    ranged: list[RowRead] = []
    grouped: list[RowRead] = []
    group: list[str] = []
    union = np.zeros(0, dtype=np.int64)
    dropped = 0
    selected = 0
    for path, n, rows in zip(selection.files, selection.row_counts, selection.rows, strict=True):
        if rows.mask is None:
            if n:
                whole.append(path)
            else:
                dropped += 1
            continue
        positions = np.flatnonzero(rows.mask) if len(rows.mask) else np.zeros(0, dtype=np.int64)
        selected += len(positions)
        if not len(positions):
            dropped += 1
            continue
        blocks = np.unique(positions // BLOCK)
        if 2 * len(blocks) >= -(-n // BLOCK):
            whole.append(path)
        elif len(positions) > MAX_POSITIONS:
            ranged.append(RowRead((path,), _ranges(blocks, n)))
        elif n > GROUP_ROWS:
            # A file of several row groups gets its own list: under a list shared with other
            # files, each file would admit the row groups of their positions too.
            ranged.append(RowRead((path,), _in_list(positions)))
        else:
            merged = np.union1d(union, positions)
            if group and len(merged) > MAX_POSITIONS:
                grouped.append(RowRead(tuple(group), _in_list(union)))
                group, merged = [], positions
            group.append(path)
            union = merged
    if group:
        grouped.append(RowRead(tuple(group), _in_list(union)))
    reads = ([RowRead(tuple(whole), None)] if whole else []) + grouped + ranged
    by_rows = sum(len(r.files) for r in grouped + ranged)
    all_answered = all(r.mask is not None for r in selection.rows)
    return Reads(tuple(reads), len(whole) + by_rows, by_rows, dropped, selected if all_answered else None)


def first_row(selection: RowSelection) -> tuple[str, int] | None:
    """A (file, row) of the selection: the first selected row of the first file that has one."""
    for path, n, rows in zip(selection.files, selection.row_counts, selection.rows, strict=True):
        if rows.mask is None:
            if n:
                return path, 0
        elif len(rows.mask) and rows.mask.any():
            return path, int(np.argmax(rows.mask))
    return None


def _in_list(positions: np.ndarray) -> str:
    if len(positions) == 1:
        return f"{ROW_COLUMN} = {int(positions[0])}"
    return f"{ROW_COLUMN} IN ({', '.join(str(int(p)) for p in positions)})"


def _ranges(blocks: np.ndarray, n: int) -> str:
    """``BETWEEN`` tests covering the blocks: runs of adjacent blocks, the closest runs joined until
    at most ``MAX_RANGES`` remain."""
    breaks = np.flatnonzero(np.diff(blocks) > 1)
    starts = np.concatenate([blocks[:1], blocks[breaks + 1]])
    ends = np.concatenate([blocks[breaks], blocks[-1:]])
    while len(starts) > MAX_RANGES:
        gap = int(np.argmin(starts[1:] - ends[:-1]))
        starts = np.delete(starts, gap + 1)
        ends = np.delete(ends, gap)
    tests = [
        f"{ROW_COLUMN} BETWEEN {int(s) * BLOCK} AND {min(int(e + 1) * BLOCK, n) - 1}"
        for s, e in zip(starts, ends, strict=True)
    ]
    return " OR ".join(tests)
