"""hudi-rs (the Python package ``hudi``), the Hudi project's own reader, asked for the merged rows
of one file slice.

- ``hudi`` is imported on first use: without it, ``MergedReaderMissingError`` says how to install
  it. Slices without log files never need it (they are read as plain parquet, ``read.py``).
- The file group reader is made from the table (``HudiTable(root).create_file_group_reader_with_
  options``) after the slices were listed, never as ``HudiFileGroupReader(root)`` alone: it takes the
  table's merge configuration (merge mode, ordering field, payload) and its timeline, whose
  completed instants decide which log blocks count. A table version 6 log file may hold blocks of
  a pending or failed delta commit (its name carries the base file's instant), which a reader
  without the timeline would merge.
- Paths given to hudi-rs are relative to the table root (it refuses absolute ones).
- A slice of log files only (no base file yet): hudi-rs 0.5.0's file group reader parses the base
  file's name and refuses an empty one (``HudiTable.read()`` reads such slices, but cannot be asked
  for one slice). Such a slice is read by the same reader from a scratch folder that links the
  table's ``.hoodie`` and the slice's log files beside an empty base file of the table's schema
  named for the file group, so hudi-rs still merges the log records (onto no rows).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from index_store.errors import MergedReaderMissingError, TableFormatError
from index_store.tables.base import FileSlice

__all__ = ["SliceMerger", "import_hudi", "table_schema"]


def import_hudi(root: str) -> ModuleType:
    """The ``hudi`` module, or ``MergedReaderMissingError`` naming what to install."""
    try:
        import hudi
    except ImportError as exc:
        raise MergedReaderMissingError(root, f"import hudi failed: {exc}") from exc
    return hudi


def table_schema(root: str) -> pa.Schema:
    """The schema hudi-rs gives the table: with Hudi's meta columns unless the table leaves them out
    (``hoodie.populate.meta.fields=false``); empty for a table hudi-rs finds no schema in (no
    commit yet)."""
    hudi = import_hudi(root)
    try:
        table = hudi.HudiTable(root)
        with_meta = table.hudi_options().get("hoodie.populate.meta.fields", "true").lower() != "false"
        schema = table.get_schema_with_meta_fields() if with_meta else table.get_schema()
    except Exception:  # hudi-rs raises its own HudiCoreError, which it does not export
        return pa.schema([])
    return pa.schema(list(schema))


class SliceMerger:
    """Reads file slices of one table merged by hudi-rs; one reader for every slice (hudi-rs lets
    go of the GIL while it reads and merges, so threads may share it)."""

    def __init__(self, root: str, base_schema: pa.Schema) -> None:
        self.root = root
        self.base_schema = base_schema  # of the empty base file a slice of log files only gets
        self._hudi = import_hudi(root)
        self._reader = self._file_group_reader(root)

    def _file_group_reader(self, root: str) -> Any:
        try:
            return self._hudi.HudiTable(root).create_file_group_reader_with_options()
        except Exception as exc:  # hudi-rs's HudiCoreError
            raise TableFormatError(f"hudi-rs cannot open the Hudi table {root}: {exc}") from None

    def read(self, file_slice: FileSlice, columns: Sequence[str] | None) -> pa.RecordBatch:
        """The slice's merged rows, only ``columns`` when given (hudi-rs projects after merging,
        so the record key and ordering field are read whatever is asked)."""
        options = self._hudi.HudiReadOptions()
        if columns is not None:
            options = options.with_projection(list(columns))
        if file_slice.base is None:
            return self._read_log_only(file_slice, options)
        logs = [f.path for f in file_slice.logs]
        return self._call(self._reader, file_slice, file_slice.base.path, logs, options)

    def _read_log_only(self, file_slice: FileSlice, options: Any) -> pa.RecordBatch:
        """A slice with no base file, read from a scratch folder (see the module docstring)."""
        scratch = tempfile.mkdtemp(prefix="hudi-index-slice-")
        try:
            os.symlink(os.path.join(self.root, ".hoodie"), os.path.join(scratch, ".hoodie"))
            folder = os.path.join(scratch, file_slice.partition)
            os.makedirs(folder, exist_ok=True)
            for log in file_slice.logs:
                os.symlink(os.path.join(self.root, log.path), os.path.join(scratch, log.path))
            # A base file name hudi-rs parses: <file id>_<write token>_<instant>.parquet.
            name = f"{file_slice.file_id}_0-0-0_{file_slice.logs[0].instant or '0'}.parquet"
            pq.write_table(self.base_schema.empty_table(), os.path.join(folder, name))
            base = f"{file_slice.partition}/{name}" if file_slice.partition else name
            reader = self._file_group_reader(scratch)
            return self._call(reader, file_slice, base, [f.path for f in file_slice.logs], options)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _call(
        self, reader: Any, file_slice: FileSlice, base: str, logs: list[str], options: Any
    ) -> pa.RecordBatch:
        try:
            batch = reader.read_file_slice_from_paths(base, logs, options)
        except Exception as exc:  # hudi-rs's HudiCoreError
            raise TableFormatError(
                f"hudi-rs could not merge file slice {file_slice.file_id} of {self.root} (partition "
                f"{file_slice.partition!r}, {len(file_slice.logs)} log file(s)): {exc}"
            ) from None
        if not isinstance(batch, pa.RecordBatch):  # pragma: no cover - hudi-rs 0.5 returns one batch
            raise TableFormatError(f"hudi-rs returned {type(batch).__name__}, not an Arrow record batch")
        return batch
