"""What the benchmark scripts share: timers, the machine they ran on, number formats, the page cache,
and the 20-column mixed-type table of the two index benchmarks (``index_open_bench``,
``index_build_bench``)."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "COLUMNS",
    "DAY0",
    "ID_SPACE",
    "SPAN_DAYS",
    "Timing",
    "best",
    "columns",
    "decimal_array",
    "drop_page_cache",
    "fmt_mb",
    "fmt_ms",
    "machine",
    "machine_line",
    "markdown_table",
    "met",
    "null_where",
]


# ---------------------------------------------------------------------------------------- timing


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time in seconds of ``repeat`` runs after one warm-up, and the last result."""
    result = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


@dataclass
class Timing:
    """Best and median wall time in seconds of several runs."""

    best: float
    median: float

    @classmethod
    def of(cls, fn: Callable[[], object], repeat: int, warmup: int = 1) -> Timing:
        """Run ``fn`` ``warmup`` times untimed, then time ``repeat`` runs."""
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return cls.from_list(times)

    @classmethod
    def from_list(cls, times: Sequence[float]) -> Timing:
        """Of times measured elsewhere (in another process, say)."""
        return cls(min(times), statistics.median(times))

    def ms(self) -> str:
        """``1.23 (med 1.45)``: milliseconds, two decimals, no unit (for a column headed "ms")."""
        return f"{self.best * 1e3:.2f} (med {self.median * 1e3:.2f})"

    def text(self) -> str:
        """``12.3 ms (med 13.0 ms)``, ``1,234 ms (med 1,300 ms)``: with the unit, see ``fmt_ms``."""
        return f"{fmt_ms(self.best)} (med {fmt_ms(self.median)})"

    def rate(self, n: int) -> float:
        """Items per second at the best time, for ``n`` items per run."""
        return n / self.best


# ------------------------------------------------------------------------------ machine, formats


def machine() -> str:
    """``nproc=N, CPU <model>; Python x.y.z``: the start of each script's machine line."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"nproc={os.cpu_count()}, CPU {cpu}; Python {platform.python_version()}"


def machine_line(*modules: ModuleType, memory: bool = False) -> str:
    """``machine: <machine()>[, N GiB RAM], <module> <version>, ...`` for the given modules."""
    mem = ""
    if memory:
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                kb = int(next(ln for ln in fh if ln.startswith("MemTotal")).split()[1])
                mem = f", {kb / 2**20:.0f} GiB RAM"
        except (OSError, StopIteration, ValueError):
            pass
    versions = "".join(f", {m.__name__} {m.__version__}" for m in modules)
    return f"machine: {machine()}{mem}{versions}"


def fmt_ms(s: float) -> str:
    """Seconds as ``1,234 ms`` from 100 ms up, ``12.3 ms`` below."""
    return f"{s * 1e3:,.0f} ms" if s >= 0.1 else f"{s * 1e3:.1f} ms"


def fmt_mb(b: float) -> str:
    """Bytes as ``12.3 MB`` (10^6 bytes)."""
    return f"{b / 1e6:,.1f} MB"


def met(ok: bool) -> str:
    """The "met?" cell of a target: ``yes`` or a bold ``**no**``."""
    return "yes" if ok else "**no**"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table (header, separator, one line per row), without a trailing newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def drop_page_cache() -> bool:
    """``sync; echo 3 > /proc/sys/vm/drop_caches``; False where that is not allowed."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as fh:
            fh.write("3\n")
    except OSError:
        return False
    return True


# ------------------------------------------------------------- the index benchmarks' 20 columns

# The 20 column types, in order; past 20 the list repeats with a numeric suffix on the name.
COLUMNS: list[tuple[str, pa.DataType]] = [
    ("event_date", pa.date32()),
    ("id", pa.int64()),
    ("event_ts", pa.timestamp("us", tz="UTC")),
    ("amount", pa.decimal128(18, 2)),
    ("price", pa.float64()),
    ("city", pa.string()),
    ("customer_id", pa.int64()),
    ("score", pa.float32()),
    ("status", pa.string()),
    ("quantity", pa.int32()),
    ("is_active", pa.bool_()),
    ("updated_at", pa.timestamp("ms")),
    ("region", pa.string()),
    ("discount", pa.float64()),
    ("ship_date", pa.date32()),
    ("row_hash", pa.uint64()),
    ("payload", pa.binary()),
    ("priority", pa.int16()),
    ("fee", pa.decimal128(10, 4)),
    ("tier", pa.int8()),
]

DAY0 = dt.date(2021, 1, 1)  # files are written in event-time order over SPAN_DAYS
SPAN_DAYS = 1096
ID_SPACE = 1_000_000_000  # id values (or range starts) are drawn from [0, ID_SPACE)


def columns(k: int) -> list[tuple[str, pa.DataType]]:
    """The first ``k`` column names and types (``k >= 2``: the predicates need the first two)."""
    out = []
    for i in range(k):
        name, t = COLUMNS[i % len(COLUMNS)]
        out.append((name if i < len(COLUMNS) else f"{name}_{i // len(COLUMNS)}", t))
    return out


def decimal_array(unscaled: np.ndarray, t: pa.DataType) -> pa.Array:
    """decimal128 values from int64 unscaled values (16-byte little-endian two's complement)."""
    words = np.stack([unscaled, unscaled >> 63], axis=1).astype("<i8")
    return pa.Array.from_buffers(t, len(unscaled), [None, pa.py_buffer(words.tobytes())])


def null_where(arr: pa.Array, unknown: np.ndarray) -> pa.Array:
    """``arr`` with nulls where ``unknown`` is True."""
    if not unknown.any():
        return arr
    return pc.if_else(pa.array(unknown), pa.scalar(None, arr.type), arr)


def matching_files(con: Any, glob: str, where: str) -> set[str]:
    """Names of the parquet files under ``glob`` holding a row where ``where`` is TRUE, found by
    DuckDB (``con``) reading every file: what a benchmark checks no pruning skipped."""
    rows = con.execute(
        f"SELECT DISTINCT filename FROM read_parquet('{glob}', filename = true, can_have_nan = true) "
        f"WHERE {where}"
    ).fetchall()
    return {os.path.basename(r[0]) for r in rows}
