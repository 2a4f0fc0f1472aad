"""Plotly helpers the sections share: one look for every chart, time re-bucketing and top-N series.

Reports of long captures hold thousands of windows and hundreds of clients; plotting them raw makes a page that
freezes the browser. Sections therefore aggregate with pandas first: at most MAX_BUCKETS points per series and
MAX_SERIES series per chart (the rest summed as "other").
"""

from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.fragments import esc_plot

MAX_BUCKETS = 400
MAX_SERIES = 8
OTHER = "(other)"

COLORS = ["#2563eb", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#06b6d4", "#ec4899", "#84cc16", "#64748b",
          "#f97316"]
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

_NICE_STEPS = ["1ms", "2ms", "5ms", "10ms", "20ms", "50ms", "100ms", "200ms", "500ms", "1s", "2s", "5s", "10s", "15s",
               "30s", "1min", "2min", "5min", "10min", "15min", "30min", "1h", "2h", "6h", "12h", "1D", "7D"]


def figure(title: str, *, height: int = 320, x_title: str = "", y_title: str = "", legend: bool = True,
           time_x: bool = False) -> go.Figure:
    """A figure in the dashboard's style; `time_x` for a UTC time axis (no axis title: the ticks say it)."""
    margin = {"l": 60, "r": 20, "t": 48, "b": 40}
    fig = go.Figure()
    fig.update_layout(
        template="none",
        title={"text": esc_plot(title), "x": 0, "xanchor": "left", "font": {"size": 15}},
        height=height, margin=margin,
        font={"family": FONT, "size": 12, "color": "#1f2937"},
        paper_bgcolor="#ffffff", plot_bgcolor="#ffffff", colorway=COLORS,
        showlegend=legend, hoverlabel={"font": {"family": FONT}},
        # below the tick labels (two lines on a time axis), whatever the plot's height
        legend={"orientation": "h", "yanchor": "top", "x": 0,
                "y": -(30 + 28 * time_x + 34 * bool(x_title)) / (height - margin["t"] - margin["b"])},
    )
    axis = {"gridcolor": "#e5e7eb", "linecolor": "#cbd5e1", "zeroline": False, "automargin": True}
    fig.update_xaxes(title_text=esc_plot(x_title), **axis)
    fig.update_yaxes(title_text=esc_plot(y_title), rangemode="tozero", **axis)
    if time_x:
        fig.update_xaxes(type="date", hoverformat="%Y-%m-%d %H:%M:%S.%L UTC")
    return fig


def capture_range(summary: dict) -> list[pd.Timestamp] | None:
    """The capture's [start, end] (naive UTC, padded 1 %), so every timeline shares one x range."""
    try:
        start, end = (pd.Timestamp(summary[key]) for key in ("capture_start", "capture_end"))
    except (KeyError, TypeError, ValueError):
        return None
    start, end = (ts.tz_convert(None) if ts.tzinfo else ts for ts in (start, end))
    pad = max((end - start) * 0.01, pd.Timedelta("1ms"))
    return [start - pad, end + pad]


def bucket_size(start: pd.Timestamp, end: pd.Timestamp, minimum: pd.Timedelta) -> pd.Timedelta:
    """The smallest round step, no finer than the report's window, that keeps a chart within MAX_BUCKETS points."""
    span = max(end - start, pd.Timedelta(0))
    for step in _NICE_STEPS:
        delta = pd.Timedelta(step)
        if delta >= minimum and span / delta <= MAX_BUCKETS:
            return delta
    return pd.Timedelta(_NICE_STEPS[-1])


def rebucket(df: pd.DataFrame, ts: str, keys: list[str], values: list[str], minimum: pd.Timedelta,
             summary: dict, how: str = "sum") -> tuple[pd.DataFrame, pd.DatetimeIndex]:
    """Aggregate `values` (`how`: sum, max) per (time bucket, keys), the bucket replacing `ts`; also every bucket
    from the capture's start to its end, so quiet periods plot as zero or as gaps, not as a line drawn across."""
    start, end = df[ts].min(), df[ts].max()
    span = capture_range(summary)
    if span:
        start, end = min(start, span[0]), max(end, span[1])
    step = bucket_size(start, end, minimum)
    out = df.assign(**{ts: df[ts].dt.floor(step)})
    out = out.groupby([ts, *keys], dropna=False, as_index=False)[values].agg(how)
    return out, pd.date_range(start.floor(step), end.floor(step), freq=step)


def steps(series: pd.Series) -> tuple[list, list]:
    """A bucketed series as the x/y of a step line (`shape="hv"`) that also draws its last bucket to the bucket's
    end: without the extra point a capture shorter than two windows would draw nothing at all."""
    if series.empty:
        return [], []
    step = pd.Timedelta(series.index.freq) if series.index.freq is not None else pd.Timedelta(0)
    return [*series.index, series.index[-1] + step], [*series.to_numpy(), series.iloc[-1]]


def top_series(df: pd.DataFrame, key: str, weight: str, n: int = MAX_SERIES) -> pd.DataFrame:
    """Keep the `n` heaviest values of `key` and fold the rest into one "(other)" series."""
    labels = df[key].fillna("(none)").astype(str)
    totals = df.assign(_label=labels).groupby("_label")[weight].sum().sort_values(ascending=False)
    if len(totals) <= n:
        return df.assign(**{key: labels})
    keep = set(totals.index[: n - 1])
    return df.assign(**{key: labels.where(labels.isin(keep), OTHER)})


def window_of(summary: dict) -> pd.Timedelta:
    """The report's throughput window (`summary.json` "window": `500ms`, `1s`, `5m`, `1h`), 1 s when unreadable."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|min|m|h|d)\s*", str(summary.get("window") or ""))
    if not match:
        return pd.Timedelta("1s")
    unit = {"m": "min"}.get(match.group(2), match.group(2))
    return pd.Timedelta(int(match.group(1)), unit=unit)
