"""End-to-end latency: from the Produce request that wrote an offset to the first response that delivered it to a
consumer, per topic.

`e2e_latency` holds percentiles per window, topic, partition and consumer, and percentiles do not add up. The charts
therefore show, per window, the worst partition's and consumer's p50 / p95 / p99 (a lag anywhere in the topic shows);
the table shows per topic and consumer the produce_seen-weighted median of the windows' values ("typical") next to
the worst window's p99 and the exact maximum, as the request latency section does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import MAX_SERIES, figure, rebucket
from kafkatap.dashboards.fragments import Col, Section, empty, esc_plot, fmt_float, fmt_int, note, table
from kafkatap.dashboards.load import Report

PERCENTILES = [("p50_ms", "p50", "#93c5fd"), ("p95_ms", "p95", "#3b82f6"), ("p99_ms", "p99", "#1e3a8a")]


def weighted_median(values: pd.Series, weights: pd.Series) -> float:
    """The value below which half the weight lies: a typical window, not a percentile of the records."""
    mask = values.notna() & (weights > 0)
    if not mask.any():
        return float("nan")
    order = np.argsort(values[mask].to_numpy())
    v, w = values[mask].to_numpy()[order], weights[mask].to_numpy()[order]
    return float(v[np.searchsorted(np.cumsum(w), w.sum() / 2)])


def _consumer(e2e: pd.DataFrame) -> pd.Series:
    """The group, else the client id of a consumer outside any group."""
    return e2e["group_id"].fillna("client " + e2e["client_id"].fillna("?"))


def summarize(e2e: pd.DataFrame) -> pd.DataFrame:
    """One row per (topic, consumer): totals, typical percentiles, worst-window p99 and the maximum."""
    rows = []
    for (topic, consumer), part in e2e.groupby(["topic", "consumer"], dropna=False):
        row = {"topic": topic, "consumer": consumer, "records": int(part["records"].sum()),
               "produce_seen": int(part["produce_seen"].sum()), "produce_missing": int(part["produce_missing"].sum()),
               "worst_p99_ms": part["p99_ms"].max(), "max_ms": part["max_ms"].max(),
               "create_time_p99_ms": part["create_time_p99_ms"].max()}
        for col, _, _ in PERCENTILES:
            row[col] = weighted_median(part[col], part["produce_seen"].fillna(0))
        rows.append(row)
    return pd.DataFrame(rows).sort_values("records", ascending=False, ignore_index=True)


def _window(e2e: pd.DataFrame) -> pd.Timedelta:
    """The job's own window (it may differ from the throughput one): finer buckets would draw only gaps."""
    widths = (e2e["window_end"] - e2e["window_start"]).dropna()
    return widths.min() if len(widths) and widths.min() > pd.Timedelta(0) else pd.Timedelta("1s")


def _topic_chart(topic: str, part: pd.DataFrame, window: pd.Timedelta, summary: dict) -> go.Figure:
    """One topic's worst p50 / p95 / p99 per window; a window nobody was delivered to is a gap, not a line."""
    fig = figure(f"{topic}: produce → delivery", time_x=True, y_title="ms (log scale)", height=280)
    worst, index = rebucket(part, "window_start", [], [c for c, _, _ in PERCENTILES], window, summary, how="max")
    worst = worst.set_index("window_start").reindex(index)
    for col, name, colour in PERCENTILES:
        fig.add_scatter(x=worst.index, y=worst[col].to_numpy(), mode="lines+markers", name=name, connectgaps=False,
                        line={"color": colour}, marker={"size": 4},
                        hovertemplate=f"%{{x}}<br>{esc_plot(topic)} {name}: %{{y:,.1f}} ms<extra></extra>")
    fig.update_layout(yaxis={"type": "log", "dtick": 1})
    return fig


def _missing_note(e2e: pd.DataFrame) -> str:
    """Offsets whose Produce the capture lacks are not measured: say how many, so a low p99 is not over-read."""
    missing = e2e.groupby("topic")["produce_missing"].sum()
    missing = missing[missing > 0]
    if missing.empty:
        return ""
    topics = ", ".join(f"{topic} {int(n):,}" for topic, n in missing.items())
    return note(f"{int(missing.sum()):,} delivered offsets ({topics}) have no Produce in the capture (written before "
                "it began, or on another broker's wire): they are not in the percentiles.")


def render(report: Report) -> Section:
    lead = ("How long records took from the producer's Produce request to the consumer's first Fetch or ShareFetch "
            "response that delivered them, per topic.")
    e2e = report.frame("e2e_latency")
    if e2e.empty:
        return Section("e2e", "End-to-end latency", [empty(
            "end-to-end latencies", "A Produce request and its response, and a later Fetch or ShareFetch response "
            "delivering the same offsets, fill these charts.")], lead=lead)
    e2e = e2e.assign(consumer=_consumer(e2e), topic=e2e["topic"].fillna("?"))
    summary = summarize(e2e)
    topics = list(summary.groupby("topic")["records"].sum().sort_values(ascending=False).index)
    window = _window(e2e)
    blocks: list[object] = ['<div class="grid2">']
    blocks += [_topic_chart(str(topic), e2e[e2e["topic"] == topic], window, report.summary)
               for topic in topics[:MAX_SERIES]]
    blocks.append("</div>")
    if len(topics) > MAX_SERIES:
        blocks.append(note(f"Charts for the {MAX_SERIES} topics with the most records delivered; "
                           f"{len(topics) - MAX_SERIES:,} more are in the table below."))
    cols = [
        Col("topic", "topic"), Col("consumer", "consumer", title="group, else the client id outside any group"),
        Col("records", "records", fmt_int, numeric=True),
        Col("produce_seen", "measured", fmt_int, numeric=True, title="offsets whose Produce is in the capture"),
        Col("produce_missing", "produce missing", fmt_int, numeric=True, title="not measured"),
        *[Col(col, f"{name} ms", fmt_float, numeric=True, title=f"produce_seen-weighted median of the windows' {name}")
          for col, name, _ in PERCENTILES],
        Col("worst_p99_ms", "worst-window p99 ms", fmt_float, numeric=True),
        Col("max_ms", "max ms", fmt_float, numeric=True),
    ]
    if summary["create_time_p99_ms"].notna().any():
        cols.append(Col("create_time_p99_ms", "CreateTime p99 ms", fmt_float, numeric=True,
                        title="worst window's p99 from the records' own timestamps (covers missing Produces too)"))
    blocks += [table(summary, cols, table_id="e2e-table", source="e2e_latency"), _missing_note(e2e),
               note("Charts: the worst partition's and consumer's percentile in each window. Table: p50/p95/p99 are "
                    "the produce_seen-weighted median of the windows' values, 'worst-window p99' the highest window.")]
    return Section("e2e", "End-to-end latency", blocks, lead=lead)
