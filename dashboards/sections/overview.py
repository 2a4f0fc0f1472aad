"""Overview: what the capture holds, and the headline problems (fencings, duplicates) linking to their evidence."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import figure
from kafkatap.dashboards.fragments import Section, card, cards, empty, esc, esc_plot, fmt_int, fmt_ts_full, fmt_us
from kafkatap.dashboards.load import Report
from kafkatap.dashboards.sections.duplicates import proven, records_again


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
    requests = report.aggregate("throughput/requests", ("api_name",), ("requests",))
    if not requests.empty:
        return requests.set_index(requests["api_name"].fillna("unknown"))["requests"]
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


def _rebalances(report: Report) -> tuple[int, float, float, int]:
    """Episodes, stalled seconds, unfetched seconds and groups, from summary.json's `rebalances` ({group: {episodes,
    stalled_s, fetch_gap_s}}), else from the table (a summary written before the rebalances job existed)."""
    per_group = report.summary.get("rebalances")
    if not isinstance(per_group, dict):
        table = report.frame("rebalances", ("group_id", "stalled_s", "fetch_gap_s"))
        return (len(table), float(table["stalled_s"].sum()), float(table["fetch_gap_s"].sum()),
                table["group_id"].nunique())
    episodes = sum(int((g or {}).get("episodes") or 0) for g in per_group.values())
    stalled = sum(float((g or {}).get("stalled_s") or 0) for g in per_group.values())
    unfetched = sum(float((g or {}).get("fetch_gap_s") or 0) for g in per_group.values())
    return episodes, stalled, unfetched, len(per_group)


def _e2e_p99(report: Report) -> dict[str, float]:
    """Worst window's e2e p99 per topic, slowest first: summary.json's `e2e_p99_ms`, else the table."""
    per_topic = report.summary.get("e2e_p99_ms")
    if not isinstance(per_topic, dict):
        table = report.frame("e2e_latency", ("topic", "p99_ms"))
        per_topic = table.groupby(table["topic"].fillna("?"))["p99_ms"].max().dropna().to_dict()
    return dict(sorted(((str(t), float(v)) for t, v in per_topic.items() if v is not None), key=lambda kv: -kv[1]))


def _group_dynamics_cards(report: Report) -> list[str]:
    """Rebalances with their stall, end-to-end p99 per topic and ownership conflicts (issue #16's summary keys)."""
    episodes, stalled, unfetched, groups = _rebalances(report)
    p99 = _e2e_p99(report)
    conflicts = report.summary.get("ownership_conflicts")
    if conflicts is None:
        conflicts = report.rows("ownership_conflicts")
    shown = ", ".join(f"{topic} {fmt_us(ms * 1000)}" for topic, ms in list(p99.items())[:3])
    more = f" (+{len(p99) - 3:,} topics)" if len(p99) > 3 else ""
    return [
        card("rebalances", fmt_int(episodes), href="#rebalances", tone="warn" if stalled or unfetched else "",
             detail=f"{stalled:,.1f} s stalled in total over {groups:,} group{'s' if groups != 1 else ''}"
             + (f"; records unfetched for {unfetched:,.1f} s" if unfetched else "")
             if episodes else "rebalance episodes of classic and KIP-848 groups"),
        card("worst e2e p99", fmt_us(next(iter(p99.values())) * 1000) if p99 else "–", href="#e2e",
             detail=shown + more if p99 else "produce-to-delivery time, per topic"),
        card("ownership conflicts", fmt_int(_count(conflicts)), href="#ownership-conflicts",
             tone="bad" if _count(conflicts) else "good", detail="partitions two members owned at once"),
    ]


def render(report: Report) -> Section:
    s = report.summary
    # the cards count the rows of the tables they link to, so a card and its section always agree
    fenced = report.frame("fenced_epochs", ("kind", "inferred"))
    listed = report.frame("duplicate_deliveries", ("kind", "records", "deliveries", "possible", "wire_only"))
    duplicates = proven(listed)
    again = records_again(duplicates)
    others = len(listed) - len(duplicates)
    by_kind = lambda df: _breakdown(df["kind"].fillna("?").value_counts().to_dict())  # noqa: E731
    transactions = s.get("transactions") or {}
    errors, anomalies = int(s.get("errors") or 0), _count(s.get("anomalies"))
    headline = [
        card("fencings", fmt_int(len(fenced)), href="#fencings", tone="bad" if len(fenced) else "good",
             detail=by_kind(fenced) or "members and producers rejected for a stale epoch"),
        card("duplicate deliveries", fmt_int(len(duplicates)), href="#duplicates",
             tone="bad" if len(duplicates) else "good",
             detail=f"{again:,} records delivered again" + (f" ({by_kind(duplicates)})" if len(duplicates) else "")
             + (f"; {others:,} more possible or wire-only range{'s' if others != 1 else ''} listed" if others else "")),
        *_group_dynamics_cards(report),
        card("errors", fmt_int(errors), href="#throughput", tone="warn" if errors else "",
             detail="responses with a non-zero error code"),
        card("anomalies", fmt_int(anomalies), tone="warn" if anomalies else "",
             detail="problems the dissector met (its anomalies/ table)"),
        card("transactions", fmt_int(_count(transactions)), href="#producers",
             detail=_breakdown(transactions) or "EndTxn-ended or open at capture end"),
        card("produced records", fmt_int(s.get("produced_records", 0)), href="#throughput"),
        card("fetched records", fmt_int(s.get("fetched_records", 0)), href="#throughput"),
    ]
    start, end = s.get("capture_start"), s.get("capture_end")
    facts = [
        ("capture start", fmt_ts_full(start) if start else "empty capture"),
        ("capture end", fmt_ts_full(end) if end else ""),
        ("span", _span(float(s.get("capture_span_s") or 0))),
        ("frames", fmt_int(s.get("frames", 0))),
        ("connections", fmt_int(s.get("connections", report.rows("sessions/connections")))),
        ("clients", fmt_int(s.get("clients", 0))),
        ("brokers", fmt_int(s.get("brokers", 0))),
        ("groups", fmt_int(s.get("groups", 0)) + (f" ({fmt_int(s['commit_only_groups'])} only commit offsets)"
                                                  if s.get("commit_only_groups") else "")),
        ("group members", fmt_int(s.get("members", 0))),
        ("producers", fmt_int(s.get("producers", report.rows("sessions/producers")))),
        ("throughput window", str(s.get("window") or "")),
    ]
    by_api = _requests_by_api(report)
    blocks: list[object] = [
        cards(headline), '<div class="grid2"><div>',
        '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>",
        "" if s else empty("summary.json", "`kafkatap analyze` writes it next to the tables; without it the "
                                           "capture's span and totals are unknown.", where="in this report"),
        "</div><div>",
        _api_chart(by_api) if len(by_api) else
        empty("requests", "Any Kafka request the dissector decoded would be counted here by api."),
        "</div></div>",
    ]
    return Section("overview", "Overview", blocks,
                   lead="What the capture holds. Cards link to the evidence behind each count.")
