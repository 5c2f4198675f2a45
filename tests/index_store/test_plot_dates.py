"""The layout picture labels date and timestamp axes with ISO dates, not day counts (issue 21)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pyarrow as pa
import pyarrow.parquet as pq

from index_store import open_table
from index_store.plot import layout_figure

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?$")


def _table(root: Path) -> Path:
    root.mkdir()
    start = dt.date(2024, 1, 1)
    for i in range(6):
        days = [start + dt.timedelta(days=i * 60 + k) for k in range(0, 60, 3)]
        pq.write_table(
            pa.table(
                {
                    "d": pa.array(days, pa.date32()),
                    "t": pa.array(
                        [dt.datetime(2024, 3, 1, 12) + dt.timedelta(minutes=i * 90 + k) for k in range(20)],
                        pa.timestamp("us", tz="UTC"),
                    ),
                    "n": pa.array(range(20), pa.int64()),
                }
            ),
            root / f"f{i}.parquet",
        )
    return root


def _tick_labels(figure: object, column: int) -> list[str]:
    figure.canvas.draw()  # type: ignore[attr-defined]
    axis = figure.axes[len(figure.axes) // 2 + column]  # type: ignore[attr-defined]  # the bar panel
    return [t.get_text() for t in axis.get_xticklabels() if t.get_text()]


def test_date_and_timestamp_axes_show_iso_dates(tmp_path: Path) -> None:
    table = open_table(_table(tmp_path / "t"))
    table.build(progress=False)
    figure = layout_figure(table.stats(["d", "t", "n"], with_blooms=False), ["d", "t", "n"])
    try:
        dates = _tick_labels(figure, 0)
        assert len(dates) >= 2 and all(ISO_DATE.match(x) for x in dates), dates
        assert all("2024-01-01" <= x <= "2025-01-01" for x in dates), dates
        times = _tick_labels(figure, 1)  # a span of 9 hours: dates and times
        assert len(times) >= 2 and all(ISO_TIME.match(x) and x.startswith("2024-03-01 ") for x in times), (
            times
        )
        numbers = _tick_labels(figure, 2)  # a number column keeps numbers
        assert not any(ISO_DATE.match(x) for x in numbers)
        axes = figure.axes[3:]
        assert [a.get_xlabel() for a in axes] == ["date", "timestamp (UTC)", "value"]
    finally:
        plt.close(figure)
    table.plot_layout(["d", "t"], tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_dates_outside_the_calendar_stay_numbers(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    days = pa.array([-800_000, 3_000_000], pa.int32()).cast(pa.date32())
    pq.write_table(pa.table({"d": days}), root / "f.parquet")
    table = open_table(root)
    table.build(progress=False)
    figure = layout_figure(table.stats(["d"], with_blooms=False), ["d"])
    try:
        assert figure.axes[1].get_xlabel() == "days since 1970-01-01"
        _tick_labels(figure, 0)  # draws without a year-out-of-range error
    finally:
        plt.close(figure)
