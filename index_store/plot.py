"""A picture of a table's layout: each file's [min, max] of a column as a horizontal bar (files
ordered by min), with the overlap depth (how many files hold each value) as a curve above. A
well-clustered column is a staircase of short bars and a depth near 1; a random one is bars that
all span the whole axis and a depth near the file count. Drawn headless (matplotlib's Agg). Date
and timestamp axes are labelled with ISO dates (and times, for spans under a few days)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import FileStats

__all__ = ["MAX_BARS", "bar_positions", "layout_figure", "plot_layout"]

MAX_BARS = 20_000  # more would be one solid block at any image size: an even sample is drawn
_DEPTH_POINTS = 512


def bar_positions(lows: pa.Array, highs: pa.Array) -> tuple[np.ndarray, np.ndarray, str]:
    """File bounds as numbers on one axis (NaN where unknown) and the axis' name: values for
    numbers, days for dates, the type's units for timestamps, ranks for strings and the rest.
    (The picture draws dates and timestamps on a calendar axis: see ``_calendar``.)"""
    t = lows.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        cast = [pc.cast(a, pa.float64()) for a in (lows, highs)]
        axis = "value"
    elif pa.types.is_date32(t):
        cast = [a.view(pa.int32()).cast(pa.float64()) for a in (lows, highs)]
        axis = "days since 1970-01-01"
    elif pa.types.is_timestamp(t):
        cast = [a.view(pa.int64()).cast(pa.float64()) for a in (lows, highs)]
        axis = f"{t.unit} since 1970-01-01"
    else:
        both = pa.concat_arrays([lows, highs])
        ranked = np.full(len(both), np.nan)
        valid = np.asarray(both.is_valid(), dtype=bool)
        if valid.any():
            ranks = pc.rank(both.filter(pa.array(valid)), sort_keys="ascending", tiebreaker="dense")
            ranked[valid] = np.asarray(ranks, dtype=np.float64)
        n = len(lows)
        return ranked[:n], ranked[n:], "rank of the value"
    low, high = (np.asarray(a.fill_null(np.nan), dtype=np.float64) for a in cast)
    return low, high, axis


def plot_layout(stats: FileStats, columns: Sequence[str], path: str | os.PathLike[str]) -> None:
    """Draw the layout of ``columns`` (one panel each) into the PNG ``path``."""
    import matplotlib.pyplot as plt

    figure = layout_figure(stats, columns)
    try:
        figure.savefig(os.fspath(path), format="png", dpi=100)
    finally:
        plt.close(figure)


def layout_figure(stats: FileStats, columns: Sequence[str]) -> Any:
    """The matplotlib figure ``plot_layout`` saves (close it with ``matplotlib.pyplot.close``)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    figure, axes = plt.subplots(
        2, len(columns), figsize=(6 * len(columns), 6), squeeze=False, height_ratios=(1, 3), sharex="col"
    )
    try:
        for i, name in enumerate(columns):
            top, bottom = axes[0][i], axes[1][i]
            column = stats.columns.get(name)
            files = stats.num_files
            if column is None:
                bottom.set_title(f"{name}: no statistics")
                continue
            low, high, axis = bar_positions(column.min, column.max)
            calendar = _calendar(column.min.type, low, high)
            if calendar is not None:
                low, high, axis, formatter = calendar
            known = ~(np.isnan(low) | np.isnan(high))
            order = np.argsort(low[known], kind="stable")
            lo, hi = low[known][order], high[known][order]
            shown = (
                np.linspace(0, len(lo) - 1, min(len(lo), MAX_BARS)).astype(np.int64) if len(lo) else order[:0]
            )
            segments = np.stack(
                [np.column_stack([lo[shown], shown]), np.column_stack([hi[shown], shown])], axis=1
            )
            bottom.add_collection(LineCollection(list(segments), linewidths=1.5, colors="tab:blue"))
            missing = int(files - known.sum())
            if len(lo):
                left, right = float(lo.min()), float(hi.max())
                if right == left:
                    right = left + 1.0
                bottom.set_xlim(left, right)
                bottom.set_ylim(-1, max(len(lo), 1))
                # Depth at each point: files whose [min, max] holds it, plus the ones without bounds.
                grid = np.linspace(left, right, _DEPTH_POINTS)
                depth = (
                    np.searchsorted(np.sort(lo), grid, side="right")
                    - np.searchsorted(np.sort(hi), grid, side="left")
                    + missing
                )
                top.plot(grid, depth, color="tab:red")
            if calendar is not None:
                from matplotlib.dates import AutoDateLocator, DateFormatter

                bottom.xaxis.set_major_locator(AutoDateLocator(maxticks=6))
                bottom.xaxis.set_major_formatter(DateFormatter(formatter))
                bottom.tick_params(axis="x", labelrotation=30)
            sampled = "" if len(shown) == len(lo) else f", {len(shown):,} of them drawn"
            bottom.set_title(f"{name}: {len(lo):,} files with bounds{sampled}, {missing:,} without")
            bottom.set_xlabel(axis)
            bottom.set_ylabel("files, ordered by min")
            top.set_ylabel("overlap depth")
            top.set_ylim(bottom=0)
        figure.tight_layout()
    except BaseException:
        plt.close(figure)
        raise
    return figure


_UNITS_PER_DAY = {"s": 86_400.0, "ms": 86_400e3, "us": 86_400e6, "ns": 86_400e9}
_CALENDAR_DAYS = (-719_162.0, 2_932_896.0)  # 0001-01-01 and 9999-12-31, days since 1970-01-01


def _calendar(
    t: pa.DataType, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray, str, str] | None:
    """Date and timestamp bounds as matplotlib date numbers, the axis' name and the tick format
    (None for other types, or bounds outside years 1 to 9999, which stay numbers)."""
    if pa.types.is_date32(t):
        days = (low, high)
        axis = "date"
    elif pa.types.is_timestamp(t):
        per_day = _UNITS_PER_DAY[t.unit]
        days = (low / per_day, high / per_day)
        axis = "timestamp (UTC)" if t.tz is not None else "timestamp"
    else:
        return None
    finite = np.concatenate([d[~np.isnan(d)] for d in days])
    if len(finite) and (finite.min() < _CALENDAR_DAYS[0] or finite.max() > _CALENDAR_DAYS[1]):
        return None
    from matplotlib.dates import date2num

    epoch = float(date2num(np.datetime64("1970-01-01T00:00:00")))  # matplotlib counts days from its epoch
    span = float(finite.max() - finite.min()) if len(finite) else 0.0
    fmt = "%Y-%m-%d" if pa.types.is_date32(t) or span >= 3 else "%Y-%m-%d %H:%M:%S"
    return days[0] + epoch, days[1] + epoch, axis, fmt
