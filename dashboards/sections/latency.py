"""Latency percentiles per api and broker, as charts and a table.

The table and the bar chart show the exact percentiles over the whole capture (`throughput/latency`); the chart over
time shows the per-window p99s (`throughput/requests`), labelled as such, beside the worst window's p99 in the table.
Percentiles do not add up, so no whole-capture figure is derived from the windows' ones.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import MAX_SERIES, figure, rebucket, window_of
from kafkatap.dashboards.load import Report
from kafkatap.dashboards.fragments import Col, Section, empty, esc_plot, fmt_int, fmt_pct, fmt_us, note, table

WINDOWS = ("window_start", "api_name", "broker_addr", "latency_p99_us")
EXACT = ("api_name", "broker_addr", "requests", "answered", "errors", "latency_p50_us", "latency_p95_us",
         "latency_p99_us", "latency_max_us")


def summarize(exact: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """One row per (api, broker): totals and exact percentiles, the error rate and the worst window's p99."""
    worst = (windows.groupby(["api_name", "broker_addr"], dropna=False)["latency_p99_us"].max()
             .rename("worst_p99_us").reset_index())
    out = exact.merge(worst, on=["api_name", "broker_addr"], how="left")
    out["unpaired"] = out["requests"] - out["answered"]
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
    fig = figure("Latency per api and broker over the capture (ms, log scale)", height=max(260, 80 + 26 * len(shown)))
    for col, name, color in [("latency_p50_us", "p50", "#93c5fd"), ("latency_p95_us", "p95", "#3b82f6"),
                             ("latency_p99_us", "p99", "#1e3a8a")]:
        fig.add_bar(y=labels, x=shown[col].to_numpy() / 1000, orientation="h", name=name, marker_color=color,
                    hovertemplate=f"%{{y}}<br>{name}: %{{x:,.2f}} ms<extra></extra>")
    fig.update_layout(barmode="group", margin={"l": 220}, xaxis={"type": "log", "dtick": 1})
    return fig


def _over_time_chart(requests: pd.DataFrame, busiest: list[str], window: pd.Timedelta, summary: dict) -> go.Figure:
    fig = figure("Each window's p99 latency over time (busiest apis)", time_x=True, y_title="ms (log scale)")
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
    requests = report.frame("throughput/requests", WINDOWS)
    exact = report.frame("throughput/latency", EXACT)
    lead = "How long brokers took to answer, per api and broker."
    if "throughput/latency" in report.absent and not requests.empty:
        return Section("latency", "Latency", [empty(
            "exact percentiles", "Reports written before throughput/latency existed lack them: run "
            "`kafkatap analyze` again on the dissected folder.", where="in this report")], lead=lead)
    if exact.empty or exact["latency_p50_us"].notna().sum() == 0:
        return Section("latency", "Latency", [empty(
            "answered requests", "Latency needs both halves of a request/response pair in the capture; a capture "
            "that starts mid-connection still pairs every request sent after it started.")], lead=lead)
    summary = summarize(exact, requests)
    summary["label"] = _label(summary)
    busiest = list(summary.groupby("api_name")["requests"].sum().sort_values(ascending=False).index[:MAX_SERIES])
    cols = [
        Col("api_name", "api"), Col("broker_addr", "broker"),
        Col("requests", "requests", fmt_int, numeric=True), Col("errors", "errors", fmt_int, numeric=True),
        Col("error_rate", "error rate", fmt_pct, numeric=True),
        Col("unpaired", "unpaired", fmt_int, numeric=True, title="request or response without its other half"),
        Col("latency_p50_us", "p50", fmt_us, numeric=True, title="exact, over the whole capture"),
        Col("latency_p95_us", "p95", fmt_us, numeric=True, title="exact, over the whole capture"),
        Col("latency_p99_us", "p99", fmt_us, numeric=True, title="exact, over the whole capture"),
        Col("worst_p99_us", "worst-window p99", fmt_us, numeric=True, title="the highest of the windows' p99s"),
        Col("latency_max_us", "max", fmt_us, numeric=True),
    ]
    return Section("latency", "Latency", [
        '<div class="grid2">', _percentile_chart(summary),
        _over_time_chart(requests, busiest, window_of(report.summary), report.summary), "</div>",
        table(summary, cols, table_id="latency-table", source="throughput/latency"),
        note("p50/p95/p99 and max are exact over the whole capture (throughput/latency). The chart over time and "
             "'worst-window p99' are per throughput window (throughput/requests)."),
    ], lead=lead)
