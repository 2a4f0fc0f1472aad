"""Fencings: every member, producer or share session the broker rejected for a stale epoch, with the evidence
(the epoch it used, the one the broker had handed and which response handed it)."""

from __future__ import annotations

import pandas as pd

from kafkatap.dashboards.fragments import (Col, Section, empty, esc_plot, fmt_conn, fmt_int, fmt_text, fmt_ts,
                                           fmt_ts_full, is_true, note, table)
from kafkatap.dashboards.load import Report


def fencing_hover(f: pd.Series, who: object) -> str:
    """A fencing mark's hover in the timelines: the error (or why it was inferred) and the epoch evidence."""
    how = ("inferred: no broker error, the epoch was older than one already handed" if is_true(f.get("inferred"))
           else f"broker answered <b>{esc_plot(f.get('error_name'))}</b>")
    lines = [f"<b>FENCED</b> {esc_plot(who)}", how, f"at {esc_plot(fmt_ts_full(f['ts']))}",
             f"used epoch {esc_plot(f.get('stale_epoch'))}; current {esc_plot(f.get('current_epoch'))}",
             f"evidence: {esc_plot(f.get('current_epoch_source') or 'no earlier epoch seen')}",
             f"rejected {esc_plot(f.get('api_name'))} corr {esc_plot(f.get('correlation_id'))}"
             f" on {esc_plot(fmt_conn(f.get('conn_id')))}"]
    if pd.notna(f.get("fenced_by_client_id")):
        lines.append(f"fenced by {esc_plot(f.get('fenced_by_client_id'))}"
                     f" {esc_plot(f.get('fenced_by_member_id') or '')} at {esc_plot(fmt_ts_full(f['fenced_by_ts']))}")
    if isinstance(f.get("explanation"), str):
        lines.append(esc_plot(f["explanation"]))
    if pd.notna(f.get("requests")) and int(f["requests"]) > 1:
        lines.append(f"{int(f['requests']):,} requests with this stale epoch")
    return "<br>".join(lines)


def _party(f: pd.DataFrame) -> pd.Series:
    """Who was fenced, in one column: `group / member`, the transactional id, the producer id, or for a stale
    partition leader epoch `topic:partition`."""
    group = f["group_id"].fillna("") + " / " + f["member_id"].fillna(f["group_instance_id"]).fillna("?")
    producer = f["transactional_id"].fillna("pid " + f["producer_id"].astype("Int64").astype(str))
    party = group.where(f["group_id"].notna(), producer)
    if "topic" in f:
        partition = f["topic"].fillna("?") + ":" + f["partition"].astype("Int64").astype(str).replace("<NA>", "?")
        party = party.where(f["kind"] != "partition_leader", "partition " + partition)
    return party


def render(report: Report) -> Section:
    lead = ("Requests the broker rejected because the sender's epoch was stale, or that used an epoch older than "
            "one already handed to the same party (inferred).")
    fenced = report.frame("fenced_epochs")
    if fenced.empty:
        return Section("fencings", "Fencings", [empty(
            "fencings", "A FENCED_MEMBER_EPOCH, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, PRODUCER_FENCED, "
            "INVALID_PRODUCER_EPOCH or INVALID_SHARE_SESSION_EPOCH answer, or a zombie reusing an old epoch, "
            "would be listed here with its evidence.")], lead=lead)
    fenced = fenced.assign(party=_party(fenced),
                           how=fenced["inferred"].map({True: "inferred", False: "broker error"}).fillna(""))
    cols = [
        Col("ts", "time", fmt_ts), Col("party", "fenced"), Col("error_name", "error"),
        Col("cause", "cause", title="why, where the wire shows it (fenced_epochs.cause)"),
        Col("explanation", "what happened", fmt_text, wrap=True),
        Col("stale_epoch", "used epoch", fmt_int, numeric=True),
        Col("current_epoch", "current epoch", fmt_int, numeric=True),
        Col("current_epoch_source", "evidence", fmt_text, title="the response that handed the current epoch",
            wrap=True),
        Col("how", "how"), Col("kind", "kind"), Col("client_id", "client"),
        Col("fenced_by_client_id", "fenced by", title="the client that received the newer epoch or took over the "
            "partitions (fenced_by_member_id, fenced_by_conn_id in the report)"),
        Col("api_name", "rejected api"),
        Col("correlation_id", "corr id", fmt_int, numeric=True), Col("conn_id", "connection", fmt_conn),
        Col("requests", "requests", fmt_int, numeric=True,
            title="requests with the same stale epoch folded into this row"),
    ]
    return Section("fencings", "Fencings", [
        table(fenced.sort_values("ts"), cols, table_id="fencings-table", source="fenced_epochs",
              cell_class=lambda r: "row-warn" if is_true(r["inferred"]) else "row-bad"),
        note("Click a column header to sort. Red rows: the broker said so; amber: inferred from the epochs alone."),
    ], lead=lead)
