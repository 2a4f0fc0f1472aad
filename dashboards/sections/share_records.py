"""Share records (KIP-932 state machine): a record map of offsets against time coloured by each range's state, a
mark per delivery, and the poison records and SPSO pinning episodes as tables."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import figure
from kafkatap.dashboards.fragments import (Col, Section, card, cards, empty, esc_plot, fmt_float, fmt_int, fmt_list,
                                           fmt_ts, heading, note, table)
from kafkatap.dashboards.load import Report

STATES = [("acknowledged", "#10b981"), ("archived", "#ef4444"), ("available", "#f59e0b"), ("acquired", "#6366f1"),
          ("unknown", "#94a3b8")]
ENDS = {"accepted": ("circle", "#10b981"), "released": ("diamond", "#f59e0b"), "rejected": ("x", "#ef4444"),
        "gap": ("square", "#94a3b8"), "lock_timeout": ("triangle-up", "#b91c1c"),
        "reacquired": ("triangle-down", "#b45309"), "held": ("star", "#6366f1")}
MAX_RANGES = 3000  # ranges drawn in the record map; the table holds every one


def _record_map(records: pd.DataFrame, end: pd.Timestamp | None) -> go.Figure:
    """One line per range from its first acquisition to its terminal state (or the capture's end), at its first
    offset, coloured by final state; a mark per delivery, shaped by how it ended."""
    fig = figure("Share-partition record map", height=420, y_title="offset", time_x=True)
    records = records.head(MAX_RANGES)
    label = records["topic"].fillna("?").astype(str) + "-" + records["partition"].astype(str)
    for state, colour in STATES:
        rows = records[records["final_state"] == state]
        xs: list = []
        ys: list = []
        for r in rows.itertuples(index=False):
            xs += [r.first_acquired_ts, r.terminal_ts if pd.notna(r.terminal_ts) else end or r.first_acquired_ts,
                   None]
            ys += [r.first_offset, r.first_offset, None]
        if xs:
            fig.add_scatter(x=xs, y=ys, mode="lines", name=state, line={"color": colour, "width": 3},
                            hoverinfo="skip")
    marks: dict[str, dict[str, list]] = {}
    for r, where in zip(records.itertuples(index=False), label):
        for d in r.deliveries if r.deliveries is not None else []:
            m = marks.setdefault(d["end"] or "?", {"x": [], "y": [], "text": []})
            m["x"].append(d["acquired_ts"])
            m["y"].append(r.first_offset)
            refused = f" refused: {d['ack_error']}" if d["ack_error"] else ""
            m["text"].append(esc_plot(f"{where} offsets {r.first_offset}-{r.last_offset}: delivery "
                                      f"{d['delivery_count']} to {d['member_id']} ({d['client_id']}), "
                                      f"ack {d['ack_type'] or 'none'}{refused}, {d['end']}"))
    for end_kind, m in marks.items():
        symbol, colour = ENDS.get(end_kind, ("circle-open", "#1f2937"))
        fig.add_scatter(x=m["x"], y=m["y"], mode="markers", name=f"delivery {end_kind}", text=m["text"],
                        marker={"symbol": symbol, "color": colour, "size": 8},
                        hovertemplate="%{text}<extra></extra>")
    return fig


def _spso_chart(windows: pd.DataFrame) -> go.Figure:
    fig = figure("SPSO and share lag", height=320, time_x=True)
    for (group, topic, partition), w in list(windows.groupby(["group_id", "topic", "partition"]))[:8]:
        name = esc_plot(f"{group} {topic}-{partition}")
        fig.add_scatter(x=w["window_end"], y=w["spso"], mode="lines", line_shape="hv", name=f"SPSO {name}")
        fig.add_scatter(x=w["window_end"], y=w["share_lag"], mode="lines", line_shape="hv", line={"dash": "dot"},
                        name=f"share lag {name}")
    return fig


def render(report: Report) -> Section:
    lead = ("Each share-partition record range through AVAILABLE, ACQUIRED, ACKNOWLEDGED and ARCHIVED as the wire "
            "shows it, the records that exhausted their delivery limit, and where one range holds the SPSO back.")
    records = report.frame("share_records")
    if records.empty:
        return Section("share-records", "Share records", [empty(
            "share records", "ShareFetch responses (acquired records) and acknowledgements (KIP-932) fill the record "
            "map, the poison records and the SPSO.")], lead=lead)
    windows, pinned = report.frame("share_spso/windows"), report.frame("share_spso/pinned")
    poison = records[records["archive_reason"] == "delivery_limit"]
    end = pd.Timestamp(report.summary["capture_end"]).tz_localize(None) if report.summary.get("capture_end") else None
    by_state = records.groupby("final_state")["records"].sum()
    blocks: list[object] = [cards([
        *[card(state, fmt_int(by_state.get(state, 0)), detail="records") for state, _ in STATES
          if by_state.get(state, 0)],
        card("poison records", fmt_int(poison["records"].sum()), href="#share-poison",
             tone="warn" if len(poison) else "good"),
        card("lock expiries", fmt_int(records["lock_expiries"].sum()), tone="warn" if records["lock_expiries"].sum()
             else ""),
        card("SPSO pinned", fmt_int(len(pinned)), href="#share-pinned", tone="warn" if len(pinned) else "good"),
    ]), _record_map(records, end)]
    if len(records) > MAX_RANGES:
        blocks.append(note(f"The map draws the first {MAX_RANGES:,} of {len(records):,} ranges; "
                           "<code>share_records</code> holds them all."))
    if not windows.empty:
        blocks.append(_spso_chart(windows))
    blocks.append(f'<div id="share-poison">{heading("Poison records (archived by the delivery limit)")}</div>')
    if poison.empty:
        blocks.append(empty("poison records", "A range released or timed out until its delivery count reached the "
                                              "group's limit would be listed here."))
    else:
        handed = poison.assign(handed=poison["deliveries"].map(
            lambda ds: [f"{d['member_id']} ({d['client_id']}) #{d['delivery_count']}" for d in ds]))
        blocks.append(table(handed.sort_values("first_acquired_ts"), [
            Col("group_id", "group"), Col("topic", "topic"), Col("partition", "partition", fmt_int, numeric=True),
            Col("first_offset", "first offset", fmt_int, numeric=True),
            Col("last_offset", "last offset", fmt_int, numeric=True), Col("records", "records", fmt_int, numeric=True),
            Col("delivered", "deliveries seen", fmt_int, numeric=True),
            Col("max_delivery_count", "delivery count", fmt_int, numeric=True),
            Col("delivery_limit", "limit", fmt_int, numeric=True), Col("delivery_limit_source", "limit from"),
            Col("handed", "handed to", fmt_list, wrap=True), Col("terminal_ts", "archived at", fmt_ts),
        ], table_id="share-poison-table", source="share_records"))
    blocks.append(f'<div id="share-pinned">{heading("SPSO pinning episodes")}</div>')
    if pinned.empty:
        blocks.append(empty("pinning episodes", "A range left unfinished while later records were acknowledged "
                                                "would be listed here."))
    else:
        blocks.append(table(pinned.sort_values("duration_ms", ascending=False), [
            Col("group_id", "group"), Col("topic", "topic"), Col("partition", "partition", fmt_int, numeric=True),
            Col("pinned_offset", "pinned offset", fmt_int, numeric=True),
            Col("pinned_last_offset", "to", fmt_int, numeric=True), Col("holder", "holder"),
            Col("holder_client_id", "client"), Col("start_ts", "from", fmt_ts), Col("end_ts", "until", fmt_ts),
            Col("duration_ms", "ms", fmt_float, numeric=True),
            Col("records_behind", "records behind", fmt_int, numeric=True), Col("pinned_state", "state"),
            Col("max_delivery_count", "delivery count", fmt_int, numeric=True),
            Col("lock_expiries", "lock expiries", fmt_int, numeric=True),
        ], table_id="share-pinned-table", source="share_spso/pinned"))
    return Section("share-records", "Share records", blocks, lead=lead)
