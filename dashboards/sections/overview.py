"""Overview: what the capture holds, and the headline problems (fencings, duplicates) linking to their evidence."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboards.charts import figure
from dashboards.fragments import Section, card, cards, empty, esc, esc_plot, fmt_int, fmt_ts_full
from dashboards.load import Report


def _count(value: object) -> int:
    """A summary count, which is either a number or a {kind: number} breakdown."""
    if isinstance(value, dict):
        return sum(int(v or 0) for v in value.values())
    return int(value or 0)


def _breakdown(value: object) -> str:
    if not isinstance(value, dict):
        return ""
    return ", ".join(f"{k} {int(v):,}" for k, v in sorted(value.items()) if v)


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.1f} min"
    return f"{seconds / 3600:,.1f} h"


def _requests_by_api(report: Report) -> pd.Series:
    requests = report.frame("throughput/requests", ("api_name", "requests"))
    if not requests.empty:
        return requests.groupby(requests["api_name"].fillna("unknown"))["requests"].sum()
    by_api: dict[str, int] = {}
    for mapping in report.frame("sessions/connections", ("requests_by_api",))["requests_by_api"]:
        for api, n in (mapping or {}).items():
            by_api[api] = by_api.get(api, 0) + int(n or 0)
    return pd.Series(by_api, dtype="int64")


def _api_chart(by_api: pd.Series) -> go.Figure:
    by_api = by_api.sort_values()
    fig = figure("Messages by api", height=max(220, 60 + 22 * len(by_api)), x_title="requests", legend=False)
    fig.add_bar(x=by_api.to_numpy(), y=[esc_plot(a) for a in by_api.index], orientation="h", marker_color="#2563eb",
                hovertemplate="%{y}: %{x:,} requests<extra></extra>")
    fig.update_layout(margin={"l": 170})
    return fig


def render(report: Report) -> Section:
    s = report.summary
    fenced = report.frame("fenced_epochs", ("kind", "inferred"))
    duplicates = report.frame("duplicate_deliveries", ("kind", "records", "deliveries"))
    fencings = int(s.get("fenced_epochs", len(fenced)) or 0)
    dup_ranges = _count(s.get("duplicate_ranges", len(duplicates)))
    dup_records = s.get("duplicate_records")
    if dup_records is None:
        dup_records = int(((duplicates["deliveries"] - 1) * duplicates["records"]).sum()) if len(duplicates) else 0
    transactions = s.get("transactions") or {}
    headline = [
        card("fencings", fmt_int(fencings), href="#fencings", tone="bad" if fencings else "good",
             detail=_breakdown(s.get("fenced_epochs_by_kind")) or "members and producers rejected for a stale epoch"),
        card("duplicate deliveries", fmt_int(dup_ranges), href="#duplicates", tone="bad" if dup_ranges else "good",
             detail=f"{_count(dup_records):,} records delivered again"),
        card("errors", fmt_int(s.get("errors", 0)), href="#throughput", tone="warn" if s.get("errors") else "",
             detail="responses with a non-zero error code"),
        card("anomalies", fmt_int(_count(s.get("anomalies", 0))), tone="warn" if _count(s.get("anomalies")) else "",
             detail="problems the dissector met (its anomalies/ table)"),
        card("transactions", fmt_int(_count(transactions)), href="#producers",
             detail=_breakdown(transactions) or "EndTxn-ended or open at capture end"),
        card("produced records", fmt_int(s.get("produced_records", 0)), href="#throughput"),
        card("fetched records", fmt_int(s.get("fetched_records", 0)), href="#throughput"),
    ]
    start, end = s.get("capture_start"), s.get("capture_end")
    facts = [
        ("capture", f"{fmt_ts_full(start)} → {fmt_ts_full(end)}" if start else "empty"),
        ("span", _span(float(s.get("capture_span_s") or 0))),
        ("frames", fmt_int(s.get("frames", 0))),
        ("connections", fmt_int(s.get("connections", report.rows("sessions/connections")))),
        ("clients", fmt_int(s.get("clients", 0))),
        ("brokers", fmt_int(s.get("brokers", 0))),
        ("groups", fmt_int(s.get("groups", 0))),
        ("group members", fmt_int(s.get("members", 0))),
        ("producers", fmt_int(s.get("producers", report.rows("sessions/producers")))),
        ("throughput window", str(s.get("window") or "")),
    ]
    blocks: list[object] = [
        cards(headline),
        '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>",
    ]
    by_api = _requests_by_api(report)
    blocks.append(_api_chart(by_api) if len(by_api) else
                  empty("requests", "Any Kafka request the dissector decoded would be counted here by api."))
    if not s:
        blocks.insert(0, empty("summary.json", "`kafkatap analyze` writes it next to the tables; counts shown here "
                                               "come from the tables alone."))
    return Section("overview", "Overview", blocks,
                   lead="What the capture holds. Cards link to the evidence behind each count.")
