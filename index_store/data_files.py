"""Reading the table's own parquet files: one translation of their read errors.

A data file that vanished mid-read (a compaction and clean replaced it) and one that is no readable
parquet are the user's table changing or broken, not an index problem: both become a
``TableFormatError`` that names the file and says what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from index_store.errors import TableFormatError

__all__ = ["reading_data_file"]


@contextmanager
def reading_data_file(
    path: str, *, what: str = "data file", doing: str = "reading", then: str = "run sync"
) -> Iterator[None]:
    """Turn a read error of ``path`` (a ``what``) while ``doing`` into a ``TableFormatError``; ``then``
    tells the user what to do when the file disappeared."""
    try:
        yield
    except FileNotFoundError:
        raise TableFormatError(f"{what} {path} disappeared while {doing}; {then}") from None
    except (pa.ArrowException, OSError) as exc:
        raise TableFormatError(f"{what} {path} is not readable parquet: {exc}") from None
