"""Group timeline: per group, members as lanes, with joins, leaves, expiries and fencings as marks.

A member's lane runs from its first request to its end; each epoch (KIP-848 member epoch, classic generation) the
broker handed it is a mark on the lane at the time of the response that handed it (`sessions/epoch_events`); reports
written without that table label the lane with the epochs in order instead. The top lane marks every membership
change (join, leave, expiry, fencing): each one makes the group rebalance. The rebalance episodes the report
rebuilt (`rebalances`) are shaded bands across all lanes, so a stall lines up with the member that caused it; the
episodes and the partitions two members owned at once (`ownership_conflicts`) follow as tables.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kafkatap.dashboards.charts import capture_range, figure
from kafkatap.dashboards.fragments import (Col, Section, empty, esc_plot, fmt_float, fmt_int, fmt_list, fmt_text,
                                           fmt_ts, fmt_ts_full, heading, note, table)
from kafkatap.dashboards.load import Report
from kafkatap.dashboards.sections.fencings import fencing_hover

GROUP_KINDS = ("consumer_group", "streams_group", "classic_group", "share_group")
MAX_GROUPS = 12
MAX_LANES = 40
REBALANCE_LANE = "⟳ membership changes"
END_STYLE = {  # ended -> (lane colour, end mark symbol, end mark colour, words)
    "alive": ("#93c5fd", None, None, "still heartbeating at capture end"),
    "left": ("#cbd5e1", "square", "#475569", "left the group"),
    "expired": ("#fcd34d", "diamond", "#d97706", "went silent past the session timeout"),
    "fenced": ("#fca5a5", "square", "#dc2626", "fenced by the broker"),
}
BAND_COLOUR = "#7c3aed"
BAND_FILL = "rgba(124, 58, 237, 0.14)"  # translucent fill, not shape opacity, which would fade the label too
MAX_BAND_LABELS = 30  # more episodes than this in one timeline: the labels would overlap, the hovers still tell
MEMBER_COLUMNS = ("kind", "group_id", "member_id", "group_instance_id", "client_id", "first_seen", "last_seen",
                  "generations", "member_epochs", "joins", "heartbeats", "assignment_changes", "partitions_gained",
                  "partitions_lost", "ended", "end_ts", "end_error")


def members(report: Report) -> pd.DataFrame:
    """Consumer, classic and share group members in one frame (share members have no generations or joins)."""
    groups = report.frame("sessions/members", MEMBER_COLUMNS)
    share = report.frame("sessions/share_members", ("group_id", "member_id", "client_id", "first_seen", "last_seen",
                                                     "member_epochs", "ended", "end_ts"))
    share = share.assign(kind="share_group")
    return pd.concat([df for df in (groups, share) if len(df)] or [groups], ignore_index=True)


def _epochs(row: pd.Series) -> str:
    for col, word in (("member_epochs", "epoch"), ("generations", "generation")):
        values = row.get(col)
        if values is not None and not isinstance(values, float) and len(values):
            shown = [str(int(v)) for v in values]
            if len(shown) > 8:
                shown = [*shown[:3], "…", *shown[-3:]]
            return f"{word} {' → '.join(shown)}"
    return ""


def _lane_labels(group: pd.DataFrame) -> pd.Series:
    """`member (client)`, shortened; unique per group so two members never share a lane."""
    labels, seen = [], set()
    for member, client in zip(group["member_id"].fillna("?"), group["client_id"].fillna("?")):
        if member.startswith(client):  # classic member ids are `client_id-uuid`: the client is already there
            label = member if len(member) <= 36 else member[:35] + "…"
        else:
            label = f"{member if len(member) <= 26 else member[:25] + '…'} ({client})"
        while label in seen:
            label += "'"
        seen.add(label)
        labels.append(label)
    return pd.Series(labels, index=group.index)


def _member_hover(row: pd.Series) -> str:
    lines = [f"<b>{esc_plot(row['member_id'])}</b>", f"client {esc_plot(row.get('client_id'))}",
             f"kind {esc_plot(row['kind'])}"]
    if isinstance(row.get("group_instance_id"), str):
        lines.append(f"instance {esc_plot(row['group_instance_id'])}")
    lines.append(f"first seen {esc_plot(fmt_ts_full(row['first_seen']))}")
    if _epochs(row):
        lines.append(esc_plot(_epochs(row)))
    for col, word in (("joins", "joins"), ("heartbeats", "heartbeats"), ("assignment_changes", "assignment changes")):
        if pd.notna(row.get(col)):
            lines.append(f"{word}: {int(row[col]):,}")
    ended = row.get("ended") or "alive"
    lines.append(f"ended: {esc_plot(ended)} ({esc_plot(END_STYLE.get(ended, ('', '', '', ''))[3])})")
    if isinstance(row.get("end_error"), str):
        lines.append(f"error: <b>{esc_plot(row['end_error'])}</b>")
    return "<br>".join(lines)


def _with_unseen_fenced(group: pd.DataFrame, fenced: pd.DataFrame) -> pd.DataFrame:
    """Members fenced without a sessions row (their first request was already stale) still get a lane."""
    unseen = fenced[~fenced["member_id"].isin(group["member_id"]) & fenced["member_id"].notna()]
    if unseen.empty:
        return group
    rows = unseen.groupby("member_id", as_index=False).agg(
        kind=("kind", "first"), group_id=("group_id", "first"), client_id=("client_id", "first"),
        first_seen=("ts", "min"), last_seen=("ts", "max"), end_error=("error_name", "first"))
    return pd.concat([group, rows.assign(ended="fenced", end_ts=rows["last_seen"])], ignore_index=True)


def _pick_lanes(group: pd.DataFrame, fenced: pd.DataFrame) -> pd.DataFrame:
    """At most MAX_LANES members, fenced ones first, shown in order of arrival."""
    first = group["member_id"].isin(fenced["member_id"]) | (group["ended"] == "fenced")
    return pd.concat([group[first], group[~first]]).head(MAX_LANES).sort_values("first_seen", kind="stable")


def _epoch_marks(fig: go.Figure, epochs: pd.DataFrame, lane_of: dict) -> None:
    """Each handed epoch at its time on its member's lane, with the response that handed it."""
    marks = epochs[epochs["member_id"].isin(lane_of)]
    if marks.empty:
        return
    word = marks["kind"].map({"classic_group": "generation"}).fillna("member epoch")
    hover = [f"{esc_plot(w)} <b>{int(e)}</b> handed to {esc_plot(m)}<br>at {esc_plot(fmt_ts_full(ts))}<br>"
             f"by {esc_plot(api)} response corr {esc_plot(corr)}"
             for w, e, m, ts, api, corr in zip(word, marks["epoch"], marks["member_id"], marks["ts"],
                                               marks["api_name"], marks["correlation_id"])]
    fig.add_scatter(x=marks["ts"], y=[esc_plot(lane_of[m]) for m in marks["member_id"]], mode="markers+text",
                    name="epoch handed", marker={"symbol": "line-ns", "size": 14, "line": {"width": 2,
                                                                                           "color": "#1e3a8a"}},
                    text=[str(int(e)) for e in marks["epoch"]], textposition="top center",
                    textfont={"size": 10, "color": "#1e3a8a"}, hovertext=hover, hoverinfo="text")


def _episode_word(kind: object) -> str:
    return "generation" if kind == "classic_group" else "epoch"


def _episode_hover(e: pd.Series) -> str:
    """What a reader asks of a band: how long, why, what it reached, what moved and how long it stood still."""
    moved = e.get("moved_partitions")
    moved_list = f" ({esc_plot(fmt_list(moved))})" if moved is not None and len(moved) else ""
    lines = [f"<b>rebalance</b> to {_episode_word(e['kind'])} <b>{esc_plot(fmt_int(e['generation_or_epoch']))}</b>",
             f"{esc_plot(fmt_float(e['duration_s']))} s, from {esc_plot(fmt_ts_full(e['start_ts']))}",
             f"trigger <b>{esc_plot(e['trigger'] or 'unknown')}</b> {esc_plot(e.get('trigger_member_id') or '')}",
             f"partitions moved: {esc_plot(fmt_int(e['partitions_moved']) or '?')}{moved_list}",
             f"stalled_s: {esc_plot(fmt_float(e['stalled_s']))} (no owner)",
             f"fetch_gap_s: {esc_plot(fmt_float(e.get('fetch_gap_s')) or '?')} (records unfetched)",
             f"members {esc_plot(fmt_int(e['members_before']))} → {esc_plot(fmt_int(e['members_after']))}, "
             f"rounds {esc_plot(fmt_int(e['rounds']))}"]
    return "<br>".join(lines)


def _episode_bands(fig: go.Figure, episodes: pd.DataFrame, span: list | None) -> None:
    """Each episode as a band over every lane (a layout shape: it has no hover, so a mark on the top lane carries
    it). A band at least 0.3 % of the capture wide: an episode of a few milliseconds would otherwise be invisible."""
    episodes = episodes.dropna(subset=["start_ts"]).sort_values("start_ts")
    if episodes.empty:
        return
    narrowest = (span[1] - span[0]) * 0.003 if span else pd.Timedelta(0)
    ends = episodes["end_ts"].fillna(episodes["start_ts"]).clip(lower=episodes["start_ts"] + narrowest)
    labels = len(episodes) <= MAX_BAND_LABELS
    for i, (e, end) in enumerate(zip(episodes.itertuples(index=False), ends)):
        text = esc_plot(f"{fmt_float(e.duration_s)} s · {fmt_text(e.trigger)}")
        where = "top center" if i % 2 == 0 else "bottom center"  # neighbours' labels alternate instead of overlapping
        label = {"text": text, "textposition": where, "font": {"size": 10, "color": "#5b21b6"}} if labels else {}
        fig.add_shape(type="rect", xref="x", yref="paper", x0=e.start_ts, x1=end, y0=0, y1=1, layer="below",
                      fillcolor=BAND_FILL, line={"width": 1, "color": "rgba(124, 58, 237, 0.5)"},
                      name="rebalance episode", label=label)
    middle = episodes["start_ts"] + (ends - episodes["start_ts"]) / 2
    fig.add_scatter(x=middle, y=[REBALANCE_LANE] * len(episodes), mode="markers", name="rebalance episode",
                    marker={"symbol": "square", "size": 12, "color": BAND_COLOUR, "opacity": 0.6},
                    hovertext=[_episode_hover(e) for _, e in episodes.iterrows()], hoverinfo="text")


def _timeline(group_id: str, group: pd.DataFrame, fenced: pd.DataFrame, epochs: pd.DataFrame,
              episodes: pd.DataFrame, span: list | None) -> go.Figure:
    group = group.assign(ended=group["ended"].fillna("alive"))
    group = _pick_lanes(_with_unseen_fenced(group, fenced), fenced)
    group = group.assign(lane=_lane_labels(group),
                         end=group["end_ts"].fillna(group["last_seen"]).fillna(group["first_seen"]))
    lanes = [REBALANCE_LANE, *group["lane"]]
    kind = group["kind"].iloc[0]
    count = group["member_id"].nunique()
    fig = figure(f"{group_id} · {kind.replace('_', ' ')} · {count} member{'s' if count != 1 else ''}",
                 height=130 + 34 * len(lanes), time_x=True)
    _episode_bands(fig, episodes, span)
    for ended, part in group.groupby("ended"):
        xs: list = []
        ys: list = []
        for row in part.itertuples():
            xs += [row.first_seen, row.end, None]
            ys += [esc_plot(row.lane), esc_plot(row.lane), None]
        colour = END_STYLE.get(ended, END_STYLE["alive"])[0]
        fig.add_scatter(x=xs, y=ys, mode="lines", line={"width": 10, "color": colour}, name=esc_plot(ended),
                        hoverinfo="skip")
    placed = set(epochs["member_id"].dropna())
    fig.add_scatter(x=group["first_seen"], y=[esc_plot(x) for x in group["lane"]], mode="markers+text",
                    marker={"symbol": "triangle-right", "size": 12, "color": "#059669"}, name="join",
                    text=[esc_plot(_epochs(r)) if r["member_id"] not in placed else ""
                          for _, r in group.iterrows()], textposition="top right",
                    textfont={"size": 10, "color": "#374151"},
                    hovertext=[_member_hover(r) for _, r in group.iterrows()], hoverinfo="text")
    for ended, part in group.groupby("ended"):
        _, symbol, colour, _ = END_STYLE.get(ended, END_STYLE["alive"])
        if symbol:
            fig.add_scatter(x=part["end"], y=[esc_plot(x) for x in part["lane"]], mode="markers", showlegend=False,
                            marker={"symbol": symbol, "size": 10, "color": colour, "line": {"width": 1}},
                            hovertext=[_member_hover(r) for _, r in part.iterrows()], hoverinfo="text",
                            name=esc_plot(ended))
    lane_of = dict(zip(group["member_id"], group["lane"]))
    _epoch_marks(fig, epochs, lane_of)
    hits = fenced[fenced["member_id"].isin(lane_of)]
    if len(hits):
        fig.add_scatter(x=hits["ts"], y=[esc_plot(lane_of[m]) for m in hits["member_id"]], mode="markers",
                        name="fencing", marker={"symbol": "x-thin", "size": 18,
                                                "line": {"width": 3, "color": "#b91c1c"}},
                        hovertext=[fencing_hover(f, f["member_id"]) for _, f in hits.iterrows()], hoverinfo="text")
    ends = group[group["ended"] != "alive"]
    changes = pd.concat([
        pd.DataFrame({"ts": group["first_seen"], "what": "joined", "lane": group["lane"]}),
        pd.DataFrame({"ts": ends["end"], "what": ends["ended"], "lane": ends["lane"]}),
    ]).dropna(subset=["ts"]).sort_values("ts")
    fig.add_scatter(x=changes["ts"], y=[REBALANCE_LANE] * len(changes), mode="markers", name="membership change",
                    marker={"symbol": "diamond-tall", "size": 9, "color": "#7c3aed"},
                    hovertext=[f"{esc_plot(lane)} {esc_plot(what)} at {esc_plot(fmt_ts_full(ts))}: the group rebalances"
                               for ts, what, lane in changes[["ts", "what", "lane"]].itertuples(index=False)],
                    hoverinfo="text")
    fig.update_yaxes(categoryorder="array", categoryarray=[esc_plot(x) for x in lanes[::-1]], type="category")
    if span:
        fig.update_xaxes(range=span)
    return fig


def _summary(members_: pd.DataFrame, fenced: pd.DataFrame, episodes: pd.DataFrame) -> pd.DataFrame:
    ended = members_.assign(ended=members_["ended"].fillna("alive"))
    out = ended.groupby(["group_id", "kind"], dropna=False).agg(
        members=("member_id", "nunique"), first_seen=("first_seen", "min"), last_seen=("last_seen", "max")
    ).reset_index()
    for state in ("alive", "left", "expired", "fenced"):
        counts = ended[ended["ended"] == state].groupby("group_id")["member_id"].nunique()
        out[state] = out["group_id"].map(counts).fillna(0).astype(int)
    out["fencings"] = out["group_id"].map(fenced.groupby("group_id").size()).fillna(0).astype(int)
    out["rebalances"] = out["group_id"].map(episodes.groupby("group_id").size()).fillna(0).astype(int)
    out["stalled_s"] = out["group_id"].map(episodes.groupby("group_id")["stalled_s"].sum()).fillna(0.0)
    out["fetch_gap_s"] = out["group_id"].map(episodes.groupby("group_id")["fetch_gap_s"].sum()).fillna(0.0)
    return out.sort_values(["fencings", "members"], ascending=False, ignore_index=True)


def _episodes_table(episodes: pd.DataFrame) -> list[object]:
    """Every episode, longest stall first: the table answers "which rebalance hurt", the bands "when"."""
    blocks: list[object] = [f'<div id="rebalances">{heading("Rebalance episodes")}</div>']
    if episodes.empty:
        blocks.append(empty("rebalance episodes", "A classic generation every member synced, or a KIP-848 epoch "
                                                  "every member reached, after a join, leave, expiry or fencing would "
                                                  "be listed here (the rebalances job)."))
        return blocks
    shown = episodes.sort_values(["fetch_gap_s", "stalled_s", "duration_s"], ascending=False, na_position="last")
    shown = shown.assign(members=shown["members_before"].map(fmt_int) + " → " + shown["members_after"].map(fmt_int))
    blocks.append(table(shown, [
        Col("group_id", "group"), Col("start_ts", "start", fmt_ts), Col("duration_s", "duration s", fmt_float,
                                                                          numeric=True, title="start to end_ts"),
        Col("trigger", "trigger"), Col("trigger_member_id", "trigger member"),
        Col("generation_or_epoch", "generation / epoch", fmt_int, numeric=True),
        Col("rounds", "rounds", fmt_int, numeric=True, title="generations or epochs handed: more than 1 are failed "
            "rounds"),
        Col("members", "members", title="in the previous generation or epoch → in the one reached"),
        Col("partitions_moved", "partitions moved", fmt_int, numeric=True),
        Col("moved_partitions", "moved", fmt_list),
        Col("stalled_s", "stalled s", fmt_float, numeric=True, title="longest time a moved partition had no owner"),
        Col("fetch_gap_s", "unfetched s", fmt_float, numeric=True,
            title="longest time a moved partition's records went unfetched: its old owner's last fetch to its new "
                  "owner's first (frozen, gone or revoking owners included)"),
        Col("evidence", "evidence", fmt_text, wrap=True),
    ], table_id="rebalances-table", source="rebalances",
        cell_class=lambda r: "row-bad" if r["trigger"] in ("member_fenced", "member_expired") else ""))
    return blocks


def _owner(member: pd.Series, client: pd.Series) -> pd.Series:
    return member.fillna("?") + " (" + client.fillna("?") + ")"


def _conflicts_table(conflicts: pd.DataFrame) -> list[object]:
    """Both owners side by side with the overlap and the responses that prove each ownership."""
    blocks: list[object] = [f'<div id="ownership-conflicts">{heading("Ownership conflicts")}</div>']
    if conflicts.empty:
        blocks.append(empty("ownership conflicts", "A partition handed to one member while another had not given it "
                                                   "up, or fetched by a member that no longer owned it, would be "
                                                   "listed here."))
        return blocks
    shown = conflicts.assign(stale=_owner(conflicts["first_member_id"], conflicts["first_client_id"]),
                             other=_owner(conflicts["second_member_id"], conflicts["second_client_id"]))
    blocks.append(table(shown.sort_values("overlap_start"), [
        Col("group_id", "group"), Col("topic", "topic"), Col("partition", "partition", fmt_int, numeric=True),
        Col("source", "source", title="assignment: two assignments not yet revoked; fetch: a member fetched the "
            "partition while another owned it"),
        Col("stale", "stale owner"), Col("other", "handed to"),
        Col("overlap_start", "overlap from", fmt_ts), Col("overlap_end", "until", fmt_ts),
        Col("overlap_s", "overlap s", fmt_float, numeric=True), Col("fetches", "fetches", fmt_int, numeric=True),
        Col("first_evidence", "stale owner's evidence", fmt_text, wrap=True),
        Col("second_evidence", "handed by", fmt_text, wrap=True),
    ], table_id="ownership-conflicts-table", source="ownership_conflicts", cell_class=lambda r: "row-bad"))
    return blocks


def _commit_only_table(report: Report) -> list[object]:
    """Groups that commit offsets with no member joining (manual assignment, or joins before the capture): no
    timeline to draw, but their commits are where a restarted consumer resumes."""
    groups = report.frame("sessions/groups")
    groups = groups[groups["commit_only"].fillna(False).astype(bool)]
    if groups.empty:
        return []
    commits = report.frame("sessions/commits")
    per = commits.groupby("group_id").agg(partitions=("partition", "size"), commit_lag=("commit_lag", "sum"),
                                          last_commit=("last_commit", "max")).reset_index()
    shown = groups.merge(per, on="group_id", how="left").sort_values("commits", ascending=False)
    return [heading(f"Groups that only commit offsets ({len(shown):,})"), table(shown, [
        Col("group_id", "group"), Col("client_ids", "client ids", fmt_list),
        Col("commits", "commits", fmt_int, numeric=True),
        Col("partitions", "partitions", fmt_int, numeric=True),
        Col("commit_lag", "commit lag", fmt_int, numeric=True,
            title="records past the last accepted commit at the capture's end, summed over the partitions "
                  "(sessions/commits)"),
        Col("last_commit", "last commit", fmt_ts),
    ], table_id="commit-only-groups-table", source="sessions/groups"),
        note("No member of these groups joined in the capture: clients that assign partitions themselves, or "
             "joins before the capture began. Their commits per partition are in sessions/commits.")]


def render(report: Report) -> Section:
    lead = ("Members as lanes, marked with the epochs the broker handed them (| with the epoch, when it was handed): "
            "▶ join, ■ leave or end, ◆ expiry, ✕ fencing (hover for the error and the evidence); shaded bands are "
            "rebalance episodes (hover the ■ on the top lane for their trigger and stall).")
    all_members = members(report)
    fenced = report.frame("fenced_epochs")
    fenced = fenced[fenced["kind"].isin(GROUP_KINDS)]
    commit_only = _commit_only_table(report)
    if all_members.empty:
        return Section("groups", "Groups", [empty(
            "group members", "JoinGroup / Heartbeat (classic), ConsumerGroupHeartbeat (KIP-848) or "
            "ShareGroupHeartbeat requests to a group coordinator fill this timeline."), *commit_only], lead=lead)
    episodes = report.frame("rebalances")
    summary = _summary(all_members, fenced, episodes)
    epochs = report.frame("sessions/epoch_events")
    span = capture_range(report.summary)
    blocks: list[object] = [table(summary, [
        Col("group_id", "group"), Col("kind", "kind"), Col("members", "members", fmt_int, numeric=True),
        Col("alive", "alive", fmt_int, numeric=True), Col("left", "left", fmt_int, numeric=True),
        Col("expired", "expired", fmt_int, numeric=True), Col("fenced", "ended fenced", fmt_int, numeric=True),
        Col("fencings", "fencings", fmt_int, numeric=True),
        Col("rebalances", "rebalances", fmt_int, numeric=True),
        Col("stalled_s", "stalled s", fmt_float, numeric=True, title="rebalances' stalled_s summed"),
        Col("fetch_gap_s", "unfetched s", fmt_float, numeric=True, title="rebalances' fetch_gap_s summed"),
    ], table_id="groups-table", source="sessions/members")]
    for group_id in summary["group_id"].head(MAX_GROUPS):
        group = all_members[all_members["group_id"] == group_id]
        if len(group) > MAX_LANES:
            blocks.append(note(f"Showing the first {MAX_LANES} of {len(group):,} members to join."))
        blocks.append(_timeline(str(group_id), group, fenced[fenced["group_id"] == group_id],
                                epochs[epochs["group_id"] == group_id],
                                episodes[episodes["group_id"] == group_id], span))
    if len(summary) > MAX_GROUPS:
        blocks.append(note(f"Timelines for the {MAX_GROUPS} groups with the most fencings and members; "
                           f"{len(summary) - MAX_GROUPS:,} more are in the table above."))
    blocks += _episodes_table(episodes)
    blocks += _conflicts_table(report.frame("ownership_conflicts"))
    return Section("groups", "Groups", blocks + commit_only, lead=lead)
