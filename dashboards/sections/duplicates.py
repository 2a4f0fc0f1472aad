"""Duplicate deliveries: offset ranges fetched, acquired or appended more than once, with who got them and the
likely cause."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import figure
from kafkatap.dashboards.fragments import Col, Section, empty, esc_plot, fmt_acks, fmt_int, fmt_ts, is_true, note, table
from kafkatap.dashboards.load import Report


def _flag(dups: pd.DataFrame, name: str) -> pd.Series:
    if name not in dups:
        return pd.Series(False, index=dups.index)
    return dups[name].map(is_true).astype(bool)


def proven(dups: pd.DataFrame) -> pd.DataFrame:
    """Rows that are neither `possible` (record-hash guesses) nor `wire_only` (fetched twice, consumed once): the
    duplicates summary.json's `duplicate_ranges` and `duplicate_records` count."""
    return dups[~_flag(dups, "possible") & ~_flag(dups, "wire_only")]


def records_again(dups: pd.DataFrame) -> int:
    """Records delivered again: each range's records times its deliveries after the first."""
    return int(((dups["deliveries"].fillna(2) - 1).clip(lower=0) * dups["records"].fillna(0)).sum())


def _cause_chart(dups: pd.DataFrame) -> go.Figure:
    again = dups.assign(again=(dups["deliveries"].fillna(2) - 1).clip(lower=0) * dups["records"].fillna(0))
    by = again.groupby([again["kind"].fillna("?"), again["cause"].fillna("unknown")])["again"].sum().reset_index()
    kinds = by["kind"].nunique()
    fig = figure("Records delivered again, by cause" + ("" if kinds > 1 else f" ({by['kind'].iloc[0]})"),
                 height=max(220, 90 + 26 * len(by)), legend=kinds > 1)
    for kind, part in by.groupby("kind"):
        fig.add_bar(y=[esc_plot(c) for c in part["cause"]], x=part["again"].to_numpy(), orientation="h",
                    name=esc_plot(kind),
                    hovertemplate=f"{esc_plot(kind)} · %{{y}}: %{{x:,}} records<extra></extra>")
    fig.update_layout(barmode="stack", margin={"l": 160})
    return fig


def render(report: Report) -> Section:
    lead = "Offset ranges delivered (or appended) more than once, with both deliveries and the likely cause."
    dups = report.frame("duplicate_deliveries")
    if dups.empty:
        return Section("duplicates", "Duplicate deliveries", [empty(
            "duplicate deliveries", "A consumer fetching the same offsets twice (after a fencing or rebalance), a "
            "share group redelivering a range, or a producer retry appended twice would be listed here.")],
            lead=lead)
    dups = dups.assign(range=dups["first_offset"].astype("Int64").astype(str) + "–"
                       + dups["last_offset"].astype("Int64").astype(str))
    cols = [
        Col("kind", "kind"), Col("group_id", "group"), Col("topic", "topic"),
        Col("partition", "partition", fmt_int, numeric=True), Col("range", "offsets"),
        Col("records", "records", fmt_int, numeric=True), Col("deliveries", "deliveries", fmt_int, numeric=True),
        Col("cause", "cause"), Col("first_delivery_ts", "first delivery", fmt_ts),
        Col("first_member_id", "first member"), Col("first_client_id", "first client"),
        Col("redelivery_ts", "redelivery", fmt_ts), Col("redelivery_member_id", "redelivered to"),
        Col("redelivery_client_id", "redelivery client"), Col("ack_history", "earlier acks", fmt_acks, wrap=True),
        Col("producer_id", "producer id", fmt_int, numeric=True),
        Col("base_sequence", "base sequence", fmt_int, numeric=True),
        Col("original_offset", "original offset", fmt_int, numeric=True),
    ]
    sure = proven(dups)
    wire_only = int((_flag(dups, "wire_only") & ~_flag(dups, "possible")).sum())

    def row_class(r: pd.Series) -> str:
        return "row-warn" if is_true(r.get("possible")) else "row-muted" if is_true(r.get("wire_only")) else ""

    return Section("duplicates", "Duplicate deliveries", [
        _cause_chart(sure) if len(sure) else empty(
            "proven duplicate deliveries", "Every row below is a possible or wire-only duplicate.", where="here"),
        table(dups.sort_values("first_delivery_ts"), cols, table_id="duplicates-table",
              source="duplicate_deliveries", cell_class=row_class),
        note("Amber rows are possible duplicates inferred from record hashes rather than proven by offsets. "
             + (f"Grey rows ({wire_only:,}) are wire-only: fetched twice, but the member's commits show its "
                "application consumed them once; the chart leaves them out." if wire_only else "")),
    ], lead=lead)
