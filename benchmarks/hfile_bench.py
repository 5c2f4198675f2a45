"""HFile point lookups through the block index vs a full scan (issue 24, item 1).

What it measures: an HFile written by ``index_store.hfile.writer`` (``--cells`` sorted keys shaped
like Hudi record keys, values of ``--value-bytes`` bytes, GZ, HBase's default 64 KB blocks, a
2-level index at the default fan-out of 128), then, with ``HFileReader`` opened on the file (memory
mapped, page cache warm):

1. ``full scan``: ``scan()``, every block decompressed and every cell cut out;
2. ``1,000 x get``: 1,000 random present keys looked up one by one (``get``), each descending the
   index to the one data block its key can be in, with the block cache off (``cached_blocks=1``)
   so each lookup decompresses its block;
3. ``get_many(1,000)``: the same keys as one batch (each block needed read once);
4. ``scan as lookup``: the 1,000 keys answered from a scan (scan, then ``index_in``), what a
   reader without a block index would do.

Answers are checked (each lookup's value equals the scan's). Times are the best and median of
``--repeat`` warm runs after a warm-up. The ratio printed is full-scan time over 1,000-gets time.

    python -m benchmarks.hfile_bench [--cells 1000000] [--value-bytes 60] [--repeat 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.common import Timing, fmt_mb, machine_line, markdown_table
from index_store.hfile import KEY, VALUE, Codec, HFileReader
from index_store.hfile.writer import write_hfile

LOOKUPS = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cells", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(machine_line(pa, np))
    keys = [f"TXN-{i * 13:012d}".encode() for i in range(args.cells)]
    values = [k[::-1].ljust(args.value_bytes, b"v") for k in keys]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.hfile"
        path.write_bytes(write_hfile(keys, values, codec=Codec.GZ))
        rng = np.random.default_rng(0)
        wanted = [keys[i] for i in rng.choice(args.cells, LOOKUPS, replace=False)]
        with HFileReader(path) as reader, HFileReader(path, cached_blocks=1) as uncached:
            blocks = len(reader._leaf_entries())
            print(
                f"file: {args.cells:,} cells, {fmt_mb(path.stat().st_size)}, {blocks:,} data blocks, "
                f"{reader.trailer.data_index_levels}-level index, {reader.codec.name}"
            )
            scanned = reader.scan()
            expected = dict(zip(scanned[KEY].to_pylist(), scanned[VALUE].to_pylist(), strict=True))
            assert [uncached.get(k) for k in wanted] == [expected[k] for k in wanted]
            batch = reader.get_many(wanted)
            assert batch[VALUE].to_pylist() == [expected[k] for k in sorted(wanted)]
            probe = pa.array(wanted, pa.binary())

            def scan_as_lookup() -> pa.Array:
                table = reader.scan()
                return table[VALUE].take(pc.index_in(probe, value_set=table[KEY]))

            touched = len({int(o) for o in _block_offsets(reader, probe)})
            timings = {
                "full scan": Timing.of(reader.scan, args.repeat),
                f"{LOOKUPS:,} x get": Timing.of(lambda: [uncached.get(k) for k in wanted], args.repeat),
                f"get_many({LOOKUPS:,})": Timing.of(lambda: HFileReader(path).get_many(probe), args.repeat),
                "scan as lookup": Timing.of(scan_as_lookup, args.repeat),
            }
    blocks_read = {
        "full scan": blocks,
        f"{LOOKUPS:,} x get": LOOKUPS,
        f"get_many({LOOKUPS:,})": touched,
        "scan as lookup": blocks,
    }
    print(
        markdown_table(
            ["what", "ms", "data blocks decompressed"],
            [[name, t.ms(), f"{blocks_read[name]:,}"] for name, t in timings.items()],
        )
    )
    scan, gets = timings["full scan"].best, timings[f"{LOOKUPS:,} x get"].best
    print(f"ratio full scan / {LOOKUPS:,} point lookups: {scan / gets:.1f}x")


def _block_offsets(reader: HFileReader, keys: pa.Array) -> np.ndarray:
    """The data block each key is in, through the index (as ``get_many`` finds them)."""
    return reader._descend(keys.take(pc.sort_indices(keys)))


if __name__ == "__main__":
    main()
