"""Fixtures of the adapter tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A hive table (region=eu, region=us) of 6 files with id ranges apart, for the CLI tests."""
    root = tmp_path / "t"
    for region in ("eu", "us"):
        (root / f"region={region}").mkdir(parents=True)
        for i in range(3):
            start = (0 if region == "eu" else 1000) + i * 100
            data = pa.table({"id": np.arange(start, start + 10), "x": np.linspace(0, 1, 10)})
            pq.write_table(data, root / f"region={region}" / f"f{i}.parquet")
    return root
