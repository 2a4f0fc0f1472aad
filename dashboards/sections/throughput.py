"""Throughput: record data per topic and per client (produce vs fetch), requests per api, error rate, consumer lag."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import figure, rebucket, steps, top_series, window_of
from kafkatap.dashboards.fragments import Section, empty, esc_plot, note
from kafkatap.dashboards.load import Report

DASH = {"produce": "solid", "fetch": "dot", "share_fetch": "dash", "replication": "dashdot"}


def _duration(step: pd.Timedelta) -> str:
    seconds = step.total_seconds()
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s" if seconds < 60 else f"{seconds / 60:g} min"


def _per_second(df: pd.DataFrame, step: pd.Timedelta, values: list[str]) -> pd.DataFrame:
    seconds = step.total_seconds()
    return df.assign(**{v: df[v] / seconds for v in values})


def _data_chart(data: pd.DataFrame, key: str, value: str, title: str, unit: str,
                index: pd.DatetimeIndex) -> go.Figure:
    """One line per (key, direction): solid for produce, dotted for fetch, dash-dotted for followers' replication
    (not consumption), one colour per key."""
    data = top_series(data, key, value)
    entries = data.groupby([key, "direction"]).ngroups  # the legend takes two entries a row: keep the plot's height
    fig = figure(title, height=300 + 22 * math.ceil(entries / 2), time_x=True, y_title=unit)
    keys = list(data.groupby(key)[value].sum().sort_values(ascending=False).index)
    for n, name in enumerate(keys):
        for direction, part in data[data[key] == name].groupby("direction"):
            x, y = steps(part.groupby("window_start")[value].sum().reindex(index, fill_value=0))
            fig.add_scatter(
                x=x, y=y, mode="lines", name=esc_plot(f"{name} · {direction}"),
                legendgroup=esc_plot(name), line={"dash": DASH.get(direction, "solid"), "width": 2, "shape": "hv",
                                             "color": fig.layout.colorway[n % len(fig.layout.colorway)]},
                hovertemplate=f"%{{x}}<br>{esc_plot(name)} {esc_plot(direction)}: %{{y:,.1f}} {unit}<extra></extra>")
    return fig


def _requests_chart(requests: pd.DataFrame, index: pd.DatetimeIndex) -> go.Figure:
    fig = figure("Requests per api", time_x=True, y_title="requests/s")
    requests = top_series(requests, "api_name", "requests")
    for api in requests.groupby("api_name")["requests"].sum().sort_values(ascending=False).index:
        series = requests[requests["api_name"] == api].groupby("window_start")["requests"].sum()
        x, y = steps(series.reindex(index, fill_value=0))
        fig.add_scatter(x=x, y=y, mode="lines", stackgroup="api", name=esc_plot(api),
                        line={"shape": "hv", "width": 1},
                        hovertemplate=f"%{{x}}<br>{esc_plot(api)}: %{{y:,.1f}} requests/s<extra></extra>")
    return fig


def _error_chart(counts: pd.DataFrame, index: pd.DatetimeIndex) -> go.Figure:
    """Error rate over all apis, with the failing apis' error counts as bars underneath."""
    fig = figure("Error rate", time_x=True, y_title="errors / requests")
    totals = counts.groupby("window_start")[["errors", "requests"]].sum().reindex(index)
    fig.add_scatter(x=totals.index, y=(totals["errors"] / totals["requests"].where(totals["requests"] > 0)).to_numpy(),
                    mode="lines+markers", name="error rate (all apis)", line={"color": "#dc2626", "width": 2},
                    marker={"size": 4},
                    hovertemplate="%{x}<br>%{y:.2%} of requests failed<extra></extra>")
    failing = counts[counts["errors"] > 0]
    for api, part in failing.groupby("api_name"):
        series = part.groupby("window_start")["errors"].sum().sort_index()
        fig.add_bar(x=series.index, y=series.to_numpy(), name=esc_plot(f"{api} errors"), yaxis="y2", opacity=0.5,
                    hovertemplate=f"%{{x}}<br>{esc_plot(api)}: %{{y:,}} errors<extra></extra>")
    fig.update_layout(yaxis={"tickformat": ".1%", "rangemode": "tozero"}, barmode="stack",
                      yaxis2={"overlaying": "y", "side": "right", "title": "errors", "showgrid": False,
                              "rangemode": "tozero", "tickformat": ",d",
                              "dtick": max(1, math.ceil(failing.groupby("window_start")["errors"].sum().max() / 4))
                              if len(failing) else 1})
    return fig


def _lag_chart(lag: pd.DataFrame, index: pd.DatetimeIndex) -> go.Figure:
    fig = figure("Consumer lag (records behind the high watermark)", time_x=True, y_title="records")
    lag = lag.assign(series=lag["topic"].fillna("?") + " · " + lag["client_id"].fillna("?"))
    lag = top_series(lag, "series", "lag")
    for name, part in lag.groupby("series"):
        x, y = steps(part.groupby("window_start")["lag"].max().reindex(index))
        fig.add_scatter(x=x, y=y, mode="lines+markers", name=esc_plot(name),
                        line={"shape": "hv"}, marker={"size": 4},
                        connectgaps=False,
                        hovertemplate=f"%{{x}}<br>{esc_plot(name)}: %{{y:,}} records behind<extra></extra>")
    return fig


def render(report: Report) -> Section:
    window = window_of(report.summary)
    blocks: list[object] = []
    by_topic = report.aggregate("throughput/data", ("window_start", "direction", "topic"), ("records", "bytes"))
    by_client = report.aggregate("throughput/data", ("window_start", "direction", "client_id"), ("records", "bytes"))
    if by_topic.empty:
        blocks.append(empty("record data", "Produce requests and Fetch / ShareFetch responses carrying record "
                                           "batches fill these charts."))
    else:
        by_topic, index = rebucket(by_topic, "window_start", ["direction", "topic"], ["records", "bytes"], window,
                                   report.summary)
        by_client, _ = rebucket(by_client, "window_start", ["direction", "client_id"], ["records", "bytes"], window,
                                report.summary)
        step = pd.Timedelta(index.freq)
        by_topic = _per_second(by_topic, step, ["records", "bytes"])
        by_client = _per_second(by_client, step, ["records", "bytes"])
        blocks += [
            note(f"Rates averaged over {_duration(step)} buckets. Solid lines: produce; dotted: fetch; dashed: share "
                 "fetch." + (f" The capture spans less than three {_duration(window)} windows: `kafkatap analyze "
                             "--window 100ms` gives finer charts." if len(index) < 3 else "")),
            '<div class="grid2">',
            _data_chart(by_topic, "topic", "bytes", "Bytes per topic", "bytes/s", index),
            _data_chart(by_topic, "topic", "records", "Records per topic", "records/s", index),
            _data_chart(by_client, "client_id", "bytes", "Bytes per client", "bytes/s", index),
            _data_chart(by_client, "client_id", "records", "Records per client", "records/s", index),
            "</div>",
        ]
    requests = report.aggregate("throughput/requests", ("window_start", "api_name"), ("requests", "errors"))
    if requests.empty:
        blocks.append(empty("requests", "Every decoded request/response pair is counted here per api."))
    else:
        counts, index = rebucket(requests, "window_start", ["api_name"], ["requests", "errors"], window,
                                 report.summary)
        step = pd.Timedelta(index.freq)
        blocks += ['<div class="grid2">', _requests_chart(_per_second(counts, step, ["requests"]), index),
                   _error_chart(counts, index), "</div>"]
    per_window = report.aggregate("throughput/lag", ("window_start", "topic", "client_id"), ("lag",))
    if per_window.empty:
        blocks.append(empty("consumer lag", "Fetch responses carry each partition's high watermark; consumers "
                                            "fetching in the capture fill this chart."))
    else:
        lag, index = rebucket(per_window, "window_start", ["topic", "client_id"], ["lag"], window, report.summary,
                              how="max")
        blocks.append(_lag_chart(lag, index))
    return Section("throughput", "Throughput", blocks,
                   lead="Record data produced and fetched over time, requests per api and how many of them failed.")
