"""HFiles, the format of Hudi's metadata table (``.hoodie/metadata``): its base files, and the
content of its log files' HFile data blocks. HBase's format, version 3, as Hudi writes it.

- ``HFileReader``: open from a path or bytes; ``get`` / ``get_many`` read only the data blocks a
  key can be in (through a single- or multi-level block index), ``scan`` / ``scan_prefix`` return
  keys and values as Arrow binary columns; ``file_info``, ``num_entries``, ``meta_block``.
- ``write_hfile``: an HFile of sorted cells with a chosen codec, block size and index fan-out
  (many data blocks, multi-level indexes), for tests and benchmarks.

Errors are ``HFileCorruptError`` (truncated, damaged) and ``UnsupportedHFileError`` (a codec or
version not read here), both ``index_store.errors.HFileError``."""

from __future__ import annotations

from index_store.errors import HFileCorruptError, HFileError, UnsupportedHFileError
from index_store.hfile.codecs import Codec
from index_store.hfile.reader import KEY, SCHEMA, VALUE, HFileReader
from index_store.hfile.trailer import Trailer

__all__ = [
    "KEY",
    "SCHEMA",
    "VALUE",
    "Codec",
    "HFileCorruptError",
    "HFileError",
    "HFileReader",
    "Trailer",
    "UnsupportedHFileError",
]
