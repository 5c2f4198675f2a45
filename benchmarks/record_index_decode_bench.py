"""Decoding Hudi's whole ``record_index`` partition: column by column (numpy, ``avro_columns``) vs
record by record (fastavro and a dict per record, the path every other partition takes).

A copy of ``tests/data/hudi/v9_txns_simple_meta`` gets one more record index log file of ``--keys``
entries (UUID-encoded file ids, as Hudi writes them) in one HFile data block of 64 KB HFile blocks;
then ``HudiMetadataTable(copy).record_index()`` (the whole partition: read, decoded, merged, file
ids and instants formatted) is timed, and so is the raw decode of the same cells both ways. Best of
``--repeat``; the setup (encoding the entries with fastavro) is not timed.

    python -m benchmarks.record_index_decode_bench [--keys 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import uuid
import zipfile
from pathlib import Path

import fastavro

from benchmarks.common import best, fmt_ms, machine_line, markdown_table
from index_store.hfile.writer import write_hfile
from index_store.hudi_log import BlockType, block_header, frame, read_log_file
from index_store.hudi_log.format import HeaderKey
from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.records import _columnar_table, record_table
from index_store.hudi_metadata.source import slice_cells
from index_store.tables.hudi import HudiTable

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "hudi"
TABLE = "v9_txns_simple_meta"


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def _table(scratch: Path, keys: int) -> Path:
    with zipfile.ZipFile(DATA / f"{TABLE}.zip") as zf:
        zf.extractall(scratch)
    root = scratch / TABLE
    mdt = HudiMetadataTable(root)
    live = mdt.files().to_pylist()[0]
    group_id = uuid.UUID(live["file_name"].split("_")[0][:36]).int
    logs = sorted((root / ".hoodie" / "metadata" / "files").glob(".files-*.log.*"))
    schema = next(
        str(b.header[HeaderKey.SCHEMA])
        for log in logs
        for b in read_log_file(str(log))
        if HeaderKey.SCHEMA in getattr(b, "header", {})
    )
    parsed = fastavro.parse_schema(json.loads(schema))
    names = [f["name"] for f in json.loads(schema)["fields"]]
    values = []
    for i in range(keys):
        record = dict.fromkeys(names) | {
            "key": "",
            "type": 5,
            "recordIndexMetadata": {
                "partitionName": live["partition"],
                "fileIdHighBits": _signed(group_id >> 64),
                "fileIdLowBits": _signed(group_id & ((1 << 64) - 1)),
                "fileIndex": 0,
                "fileId": None,
                "instantTime": 1772922289244,
                "fileIdEncoding": 0,
                "position": i,
            },
        }
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        values.append(buf.getvalue())
    cells = [f"key-{i:012d}".encode() for i in range(keys)]
    content = write_hfile(cells, values, file_info={"schema": schema.encode()}, block_size=64 * 1024)
    latest = HudiTable(root).timeline().latest_completed_commit()
    assert latest is not None
    file_id = mdt.layout.slices("record_index")[0].file_id
    log = root / ".hoodie" / "metadata" / "record_index" / f".{file_id}_{latest}.log.9_0-0-0"
    log.write_bytes(frame(BlockType.HFILE_DATA, block_header(latest, schema=schema), content))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = _table(Path(tmp), args.keys)
        mdt = HudiMetadataTable(root)
        sources = [
            c for p in mdt.layout.slices("record_index") for c in slice_cells(p, mdt.layout.valid_instant)
        ]
        whole, table = best(lambda: HudiMetadataTable(root).record_index(), args.repeat)
        columnar, fast = best(lambda: _columnar_table("record_index", sources), args.repeat)
        records, slow = best(lambda: record_table("record_index", sources), args.repeat)
        assert fast is not None and fast.equals(slow) and table.num_rows >= args.keys
    print(machine_line())
    print(
        markdown_table(
            ["what", f"{args.keys:,} entries"],
            [
                ["record_index() of the whole partition", fmt_ms(whole)],
                ["raw decode, column by column (numpy)", fmt_ms(columnar)],
                ["raw decode, record by record (fastavro + dicts)", fmt_ms(records)],
            ],
        )
    )


if __name__ == "__main__":
    main()
