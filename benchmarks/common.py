"""What every benchmark script needs: a best-of timer and the machine it ran on."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from typing import Any

__all__ = ["best", "machine"]


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time in seconds of ``repeat`` runs after one warm-up, and the last result."""
    result = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def machine() -> str:
    """``nproc=N, CPU <model>; Python x.y.z``: the start of each script's machine line."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"nproc={os.cpu_count()}, CPU {cpu}; Python {platform.python_version()}"
