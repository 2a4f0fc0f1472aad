"""Share groups (KIP-932): records acquired and redelivered by delivery count, acknowledgements by type, and the
redelivered ranges with their earlier acknowledgements."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import figure
from kafkatap.dashboards.fragments import (Col, Section, card, cards, empty, esc_plot, fmt_acks, fmt_int, fmt_ts,
                                           heading, note, table)
from kafkatap.dashboards.load import Report

ACKS = [("accepted", "accept", "#10b981"), ("released", "release", "#f59e0b"), ("rejected", "reject", "#ef4444"),
        ("renewed", "renew", "#6366f1")]


def _acks_chart(members: pd.DataFrame) -> go.Figure:
    per_group = members.groupby(members["group_id"].fillna("?"))[[a for a, _, _ in ACKS]].sum()
    fig = figure("Acknowledgements by type (offsets)", height=max(240, 100 + 30 * len(per_group)))
    for col, word, colour in ACKS:
        fig.add_bar(y=[esc_plot(g) for g in per_group.index], x=per_group[col].to_numpy(), orientation="h",
                    name=word, marker_color=colour, hovertemplate=f"%{{y}}: %{{x:,}} {word}<extra></extra>")
    fig.update_layout(barmode="stack", margin={"l": 140})
    return fig


def delivery_counts(acquired: int, redelivered: pd.DataFrame) -> pd.Series:
    """Records per delivery count. A range delivered d times whose last acquisition had the broker's delivery count
    c was delivered at counts c-d+1 .. c; every other acquired record was delivered once."""
    counts: dict[int, int] = {}
    in_ranges = 0
    for d, c, n in redelivered[["deliveries", "delivery_count", "records"]].itertuples(index=False):
        d = int(d) if pd.notna(d) else 2
        c = int(c) if pd.notna(c) else d
        n = int(n) if pd.notna(n) else 0
        for count in range(c - d + 1, c + 1):
            counts[count] = counts.get(count, 0) + n
        in_ranges += n * d
    counts[1] = counts.get(1, 0) + max(acquired - in_ranges, 0)
    return pd.Series(counts).sort_index()


def _delivery_chart(counts: pd.Series) -> go.Figure:
    fig = figure("Records by delivery count", x_title="delivery count", y_title="records", legend=False)
    fig.add_bar(x=[str(c) for c in counts.index], y=counts.to_numpy(),
                marker_color=["#2563eb" if c == 1 else "#f59e0b" for c in counts.index],
                hovertemplate="delivery %{x}: %{y:,} records<extra></extra>")
    fig.update_xaxes(type="category")
    return fig


def render(report: Report) -> Section:
    lead = "Records handed to share-group consumers, how they were acknowledged, and which came back."
    members = report.frame("sessions/share_members")
    dups = report.frame("duplicate_deliveries")
    dups = dups[dups["kind"] == "share_group"]
    if members.empty and dups.empty:
        return Section("share", "Share groups", [empty(
            "share groups", "ShareGroupHeartbeat, ShareFetch and ShareAcknowledge traffic (KIP-932, Kafka 4.x) "
            "fills the delivery counts, acknowledgements and redelivered ranges.")], lead=lead)
    acquired = int(members["acquired_records"].fillna(0).sum())
    rejected = int(members["rejected"].fillna(0).sum())
    again = int(((dups["deliveries"].fillna(2) - 1) * dups["records"].fillna(0)).sum())
    blocks: list[object] = [cards([
        card("share members", fmt_int(len(members))),
        card("records acquired", fmt_int(acquired), detail="every acquisition, redeliveries included"),
        card("records redelivered", fmt_int(again), href="#share-redelivered", tone="warn" if again else "good"),
        card("rejected", fmt_int(rejected), tone="warn" if rejected else ""),
    ])]
    blocks += ['<div class="grid2">', _delivery_chart(delivery_counts(acquired, dups)),
               _acks_chart(members) if len(members) else empty("acknowledgements", "ShareAcknowledge requests or "
                                                                                   "acks piggybacked on ShareFetch."),
               "</div>",
               note("Each redelivered range counts at every delivery count it went through; records acquired "
                    "only once count at 1.")]
    blocks.append(f'<div id="share-redelivered">{heading("Redelivered ranges")}</div>')
    if dups.empty:
        blocks.append(empty("redelivered ranges", "A range released, rejected or timed out and then acquired again "
                                                  "by a member would be listed here."))
    else:
        blocks.append(table(dups.sort_values("redelivery_ts"), [
            Col("group_id", "group"), Col("topic", "topic"), Col("partition", "partition", fmt_int, numeric=True),
            Col("first_offset", "first offset", fmt_int, numeric=True),
            Col("last_offset", "last offset", fmt_int, numeric=True), Col("records", "records", fmt_int, numeric=True),
            Col("deliveries", "deliveries", fmt_int, numeric=True),
            Col("delivery_count", "delivery count", fmt_int, numeric=True), Col("cause", "cause"),
            Col("ack_history", "earlier acks", fmt_acks, wrap=True), Col("first_member_id", "first member"),
            Col("redelivery_member_id", "redelivered to"), Col("redelivery_ts", "redelivered at", fmt_ts),
        ], table_id="share-redelivered-table", source="duplicate_deliveries"))
    return Section("share", "Share groups", blocks, lead=lead)
