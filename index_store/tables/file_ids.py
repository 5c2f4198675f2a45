"""File ids: the name of the file group a data file belongs to, from its path, over many paths at
once (pyarrow compute; no per-path Python).

- A plain table's file is a group of its own, named by its file name's stem: the name up to its
  first ``.``, characters other than letters, digits, ``_``, ``.`` and ``-`` replaced by ``_``
  (``part-00001.snappy.parquet`` -> ``part-00001``). The secondary index files its index files
  under the same name (``secondary.build.file_id_of``), so the two always agree.
- A Hudi file belongs to the file group its name carries: ``<fileId>_<writeToken>_<instant>.parquet``
  for a base file, ``.<fileId>_<instant>.log.<version>_<writeToken>`` for a log file
  (``tables.hudi_files``). A name that is neither gets the stem rule.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["hudi_file_ids", "stem_file_ids"]

# The same patterns as ``hudi_files._BASE_FILE`` / ``_LOG_FILE``, anchored on the file name.
_BASE_ID = r"^(?P<id>[^_.][^_]*)_[^_]+_\d+\.parquet$"
_LOG_ID = r"^\.(?P<id>[^_]+)_\d+\.log\.\d+_\d+-\d+-\d+(?:\.cdc)?$"


def _names(paths: pa.Array) -> pa.StringArray:
    """The last ``/``-separated segment of each path."""
    return pc.replace_substring_regex(paths.cast(pa.string()), pattern=r"^.*/", replacement="")


def stem_file_ids(paths: pa.Array) -> pa.StringArray:
    """Each path's file name stem, as a plain table's file id (nulls stay null)."""
    stems = pc.replace_substring_regex(_names(paths), pattern=r"(?s)\..*$", replacement="")
    safe = pc.replace_substring_regex(stems, pattern=r"[^A-Za-z0-9_.-]", replacement="_")
    # An empty stem (a name starting with "."): the secondary index's fallback name.
    return pc.if_else(pc.equal(safe, ""), pa.scalar("file"), safe)


def hudi_file_ids(paths: pa.Array) -> pa.StringArray:
    """Each Hudi data file's file group id (base or log file name); other names: their stem."""
    names = _names(paths)
    base = pc.struct_field(pc.extract_regex(names, pattern=_BASE_ID), "id")
    log = pc.struct_field(pc.extract_regex(names, pattern=_LOG_ID), "id")
    return pc.coalesce(base, log, stem_file_ids(paths))
