"""Producer timeline: one lane per producer, its transactions as bars (commit / abort / open) labelled with the
producer epoch they ran under, so epoch bumps read as steps, and fencings as marks."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import capture_range, figure
from kafkatap.dashboards.fragments import Section, empty, esc_plot, fmt_ts_full, note
from kafkatap.dashboards.load import Report
from kafkatap.dashboards.sections.fencings import fencing_hover

MAX_LANES = 40
OUTCOME_COLOUR = {"commit": "#10b981", "abort": "#f59e0b", "open": "#94a3b8", "fenced": "#ef4444"}
PRODUCER_COLUMNS = ("transactional_id", "producer_id", "producer_ids", "client_id", "client_host", "first_seen",
                    "last_seen", "epochs", "transactions", "commits", "aborts", "failed_end_txns", "batches", "records",
                    "ended", "end_ts", "end_error", "kind")


def _lane(row: pd.Series) -> str:
    """The transactional id, the producer id, or for a plain producer (no id on the wire) its client id and host."""
    if isinstance(row.get("transactional_id"), str):
        name = row["transactional_id"]
    elif row.get("kind") == "plain":
        return f"plain producer ({row['client_id']} on {row['client_host']})"
    else:
        name = f"pid {row['producer_id']}"
    return f"{name} ({row['client_id']})" if isinstance(row.get("client_id"), str) else name


def _producer_hover(row: pd.Series) -> str:
    epochs = row.get("epochs")
    pids = row.get("producer_ids")
    lines = [f"<b>{esc_plot(row['lane'])}</b>",
             f"producer ids {esc_plot(', '.join(str(p) for p in pids))}" if pids is not None else "",
             f"epochs {esc_plot(' → '.join(str(e) for e in epochs))}" if epochs is not None and len(epochs) else "",
             f"{int(row['batches'] or 0):,} batches, {int(row['records'] or 0):,} records",
             f"transactions: {int(row['commits'] or 0):,} committed, {int(row['aborts'] or 0):,} aborted",
             f"ended: {esc_plot(row.get('ended'))}"]
    if isinstance(row.get("end_error"), str):
        lines.append(f"error: <b>{esc_plot(row['end_error'])}</b>")
    return "<br>".join(line for line in lines if line)


def _txn_hover(t: pd.Series) -> str:
    parts = t.get("partitions")
    lines = [f"<b>{esc_plot(t['outcome'])}</b> · epoch {esc_plot(t['producer_epoch'])}"
             f" · txn #{esc_plot(t['txn_index'])}",
             f"{esc_plot(fmt_ts_full(t['start_ts']))} → {esc_plot(fmt_ts_full(t['end_ts'])) or 'open at capture end'}",
             f"{int(t['batches'] or 0):,} batches, {int(t['records'] or 0):,} records",
             f"partitions {esc_plot(', '.join(parts))}" if parts is not None and len(parts) else ""]
    if isinstance(t.get("end_error"), str) and t["end_error"] != "NONE":
        lines.append(f"EndTxn error: <b>{esc_plot(t['end_error'])}</b>")
    return "<br>".join(line for line in lines if line)


def _timeline(producers: pd.DataFrame, txns: pd.DataFrame, fenced: pd.DataFrame, span: list | None) -> go.Figure:
    lanes = list(producers["lane"])
    fig = figure("Producers", height=170 + 36 * len(lanes), time_x=True)
    xs, ys = [], []
    for row in producers.itertuples():
        xs += [row.first_seen, row.end, None]
        ys += [esc_plot(row.lane), esc_plot(row.lane), None]
    fig.add_scatter(x=xs, y=ys, mode="lines", line={"width": 4, "color": "#cbd5e1"}, name="active",
                    hoverinfo="skip")
    fig.add_scatter(x=producers["first_seen"], y=[esc_plot(x) for x in producers["lane"]], mode="markers",
                    marker={"symbol": "triangle-right", "size": 11, "color": "#2563eb"}, name="first request",
                    hovertext=[_producer_hover(r) for _, r in producers.iterrows()], hoverinfo="text")
    for outcome, part in txns.groupby("outcome"):
        colour = OUTCOME_COLOUR.get(outcome, "#64748b")
        start = part["start_ts"].fillna(part["end_ts"])
        width_ms = ((part["end"] - start).dt.total_seconds() * 1000).clip(lower=1)
        fig.add_bar(base=start, x=width_ms, y=[esc_plot(x) for x in part["lane"]], orientation="h",
                    name=esc_plot(outcome),
                    marker={"color": colour, "line": {"width": 1, "color": "#ffffff"}}, width=0.5,
                    text=[f"e{int(e)}" if pd.notna(e) else "" for e in part["producer_epoch"]],
                    textposition="inside", insidetextanchor="middle", textfont={"size": 10},
                    hovertext=[_txn_hover(t) for _, t in part.iterrows()], hoverinfo="text")
    epochs = (txns.dropna(subset=["producer_epoch"])
              .assign(start=txns["start_ts"].fillna(txns["end_ts"]))
              .groupby(["lane", "producer_epoch"], as_index=False)["start"].min())
    if len(epochs):
        fig.add_scatter(x=epochs["start"], y=[esc_plot(x) for x in epochs["lane"]], mode="markers+text",
                        name="epoch starts", marker={"symbol": "line-ns-open", "size": 22,
                                                     "line": {"width": 2, "color": "#1e3a8a"}},
                        text=[f"epoch {int(e)}" for e in epochs["producer_epoch"]], textposition="top right",
                        textfont={"size": 10, "color": "#1e3a8a"},
                        hovertext=[f"{esc_plot(lane)}: first transaction of epoch {int(e)} at "
                                   f"{esc_plot(fmt_ts_full(t))}" for lane, e, t in epochs.itertuples(index=False)],
                        hoverinfo="text")
    if len(fenced):
        fig.add_scatter(x=fenced["ts"], y=[esc_plot(x) for x in fenced["lane"]], mode="markers", name="fencing",
                        marker={"symbol": "x-thin", "size": 18, "line": {"width": 3, "color": "#b91c1c"}},
                        hovertext=[fencing_hover(f, f["lane"]) for _, f in fenced.iterrows()], hoverinfo="text")
    fig.update_yaxes(categoryorder="array", categoryarray=[esc_plot(x) for x in lanes[::-1]], type="category",
                     automargin=True)
    if span:
        fig.update_xaxes(range=span)
    fig.update_layout(barmode="overlay")
    return fig


def _lane_of(fenced: pd.DataFrame, producers: pd.DataFrame) -> pd.Series:
    """Each producer fencing's lane: by transactional id, else by producer id."""
    by_txn = {t: lane for t, lane in zip(producers["transactional_id"], producers["lane"]) if isinstance(t, str)}
    by_pid = {}
    for pids, lane in zip(producers["producer_ids"], producers["lane"]):
        for pid in pids if pids is not None else []:
            by_pid.setdefault(int(pid), lane)
    return pd.Series([by_txn.get(t) if isinstance(t, str) and t in by_txn else by_pid.get(p)
                      for t, p in zip(fenced["transactional_id"], fenced["producer_id"].fillna(-1).astype(int))],
                     index=fenced.index, dtype=object)


def render(report: Report) -> Section:
    lead = ("Transactions as bars labelled with their producer epoch (eN): commit, abort or open; ✕ marks a "
            "fencing (hover for the error and the evidence).")
    producers = report.frame("sessions/producers", PRODUCER_COLUMNS)
    if producers.empty:
        return Section("producers", "Producers", [empty(
            "producers", "Produce requests with record batches fill this timeline (a lane per transactional id, "
            "producer id, or client of a plain producer); transactions come from AddPartitionsToTxn / EndTxn.")],
            lead=lead)
    producers = producers.assign(lane=[_lane(r) for _, r in producers.iterrows()])
    producers = producers.assign(end=producers["end_ts"].fillna(producers["last_seen"]))
    fenced = report.frame("fenced_epochs")
    fenced = fenced[fenced["kind"] == "producer"]
    fenced = fenced.assign(lane=_lane_of(fenced, producers)).dropna(subset=["lane"])
    interesting = producers["lane"].isin(fenced["lane"]) | (producers["transactions"].fillna(0) > 0)
    producers = pd.concat([producers[interesting], producers[~interesting]]).head(MAX_LANES)
    producers = producers.sort_values("first_seen")
    txns = report.frame("sessions/transactions")
    txns = txns.merge(producers[["transactional_id", "lane", "last_seen"]], on="transactional_id", how="inner")
    txns = txns.assign(end=txns["end_ts"].fillna(txns["last_seen"]))
    blocks: list[object] = [_timeline(producers, txns, fenced[fenced["lane"].isin(producers["lane"])],
                                      capture_range(report.summary))]
    total = report.rows("sessions/producers")
    if total > len(producers):
        blocks.append(note(f"Showing {len(producers)} of {total:,} producers: fenced and transactional ones first. "
                           "Every producer is in the Sessions tables."))
    return Section("producers", "Producers", blocks, lead=lead)
