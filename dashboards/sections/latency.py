"""Latency percentiles per api and broker, as charts and a table.

The report holds percentiles per time window (`throughput/requests`), not over the whole capture, and percentiles
do not add up. The table therefore shows, per api and broker, the request-weighted median of the windows' values
("typical") and the worst window's p99, next to the exact maximum; the chart over time shows the windows as they are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import MAX_SERIES, figure, rebucket, window_of
from kafkatap.dashboards.load import Report
from kafkatap.dashboards.fragments import Col, Section, empty, esc_plot, fmt_int, fmt_pct, fmt_us, note, table

PERCENTILES = ["latency_p50_us", "latency_p95_us", "latency_p99_us"]
COLUMNS = ("window_start", "api_name", "broker_addr", "requests", "errors", "unpaired", *PERCENTILES,
           "latency_max_us")


def weighted_median(values: pd.Series, weights: pd.Series) -> float:
    mask = values.notna() & (weights > 0)
    if not mask.any():
        return float("nan")
    order = np.argsort(values[mask].to_numpy())
    v, w = values[mask].to_numpy()[order], weights[mask].to_numpy()[order]
    return float(v[np.searchsorted(np.cumsum(w), w.sum() / 2)])


def summarize(requests: pd.DataFrame) -> pd.DataFrame:
    """One row per (api, broker): totals, typical percentiles, worst-window p99 and the maximum."""
    rows = []
    for (api, broker), part in requests.groupby(["api_name", "broker_addr"], dropna=False):
        row = {"api_name": api, "broker_addr": broker, "requests": int(part["requests"].sum()),
               "errors": int(part["errors"].sum()), "unpaired": int(part["unpaired"].sum()),
               "windows": len(part), "worst_p99_us": part["latency_p99_us"].max(),
               "latency_max_us": part["latency_max_us"].max()}
        for col in PERCENTILES:
            row[col] = weighted_median(part[col], part["requests"])
        rows.append(row)
    out = pd.DataFrame(rows)
    out["error_rate"] = out["errors"] / out["requests"].where(out["requests"] > 0)
    return out.sort_values("requests", ascending=False, ignore_index=True)


def _label(summary: pd.DataFrame) -> pd.Series:
    """`api` alone when there is one broker, else `api @ broker`."""
    api = summary["api_name"].fillna("unknown").astype(str)
    if summary["broker_addr"].nunique(dropna=False) <= 1:
        return api
    return api + " @ " + summary["broker_addr"].fillna("?").astype(str)


def _percentile_chart(summary: pd.DataFrame) -> go.Figure:
    shown = summary[summary["latency_p50_us"].notna()].head(24).iloc[::-1]
    labels = [esc_plot(x) for x in _label(shown)]
    fig = figure("Typical latency per api and broker (ms, log scale)", height=max(260, 80 + 26 * len(shown)))
    for col, name, color in [("latency_p50_us", "p50", "#93c5fd"), ("latency_p95_us", "p95", "#3b82f6"),
                             ("latency_p99_us", "p99", "#1e3a8a")]:
        fig.add_bar(y=labels, x=shown[col].to_numpy() / 1000, orientation="h", name=name, marker_color=color,
                    hovertemplate=f"%{{y}}<br>{name}: %{{x:,.2f}} ms<extra></extra>")
    fig.update_layout(barmode="group", margin={"l": 220}, xaxis={"type": "log", "dtick": 1})
    return fig


def _over_time_chart(requests: pd.DataFrame, busiest: list[str], window: pd.Timedelta, summary: dict) -> go.Figure:
    fig = figure("p99 latency over time (busiest apis)", time_x=True, y_title="ms (log scale)")
    shown = requests[requests["api_name"].isin(busiest)]
    worst, index = rebucket(shown, "window_start", ["api_name"], ["latency_p99_us"], window, summary, how="max")
    for api in busiest:
        series = worst[worst["api_name"] == api].set_index("window_start")["latency_p99_us"].reindex(index)
        fig.add_scatter(x=series.index, y=series.to_numpy() / 1000, mode="lines+markers", name=esc_plot(api),
                        marker={"size": 4}, connectgaps=False,
                        hovertemplate=f"%{{x}}<br>{esc_plot(api)} p99: %{{y:,.2f}} ms<extra></extra>")
    fig.update_layout(yaxis={"type": "log", "dtick": 1})
    return fig


def render(report: Report) -> Section:
    requests = report.frame("throughput/requests", COLUMNS)
    lead = "How long brokers took to answer, per api and broker."
    if requests.empty or requests["latency_p50_us"].notna().sum() == 0:
        return Section("latency", "Latency", [empty(
            "answered requests", "Latency needs both halves of a request/response pair in the capture; a capture "
            "that starts mid-connection still pairs every request sent after it started.")], lead=lead)
    summary = summarize(requests)
    summary["label"] = _label(summary)
    busiest = list(summary.groupby("api_name")["requests"].sum().sort_values(ascending=False).index[:MAX_SERIES])
    cols = [
        Col("api_name", "api"), Col("broker_addr", "broker"),
        Col("requests", "requests", fmt_int, numeric=True), Col("errors", "errors", fmt_int, numeric=True),
        Col("error_rate", "error rate", fmt_pct, numeric=True),
        Col("unpaired", "unpaired", fmt_int, numeric=True, title="request or response without its other half"),
        Col("latency_p50_us", "p50", fmt_us, numeric=True, title="request-weighted median of the windows' p50"),
        Col("latency_p95_us", "p95", fmt_us, numeric=True, title="request-weighted median of the windows' p95"),
        Col("latency_p99_us", "p99", fmt_us, numeric=True, title="request-weighted median of the windows' p99"),
        Col("worst_p99_us", "worst-window p99", fmt_us, numeric=True),
        Col("latency_max_us", "max", fmt_us, numeric=True),
    ]
    return Section("latency", "Latency", [
        '<div class="grid2">', _percentile_chart(summary),
        _over_time_chart(requests, busiest, window_of(report.summary), report.summary), "</div>",
        table(summary, cols, table_id="latency-table", source="throughput/requests"),
        note("Percentiles are computed per throughput window; p50/p95/p99 here are the request-weighted median of "
             "the windows' values, 'worst-window p99' the highest window, 'max' exact."),
    ], lead=lead)
