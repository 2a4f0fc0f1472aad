"""Sessions: the connections, groups, committed offsets, group members, producers, transactions, share members and
fetch links of the report, as sortable tables."""

from __future__ import annotations

from kafkatap.dashboards.fragments import (Col, Section, empty, fmt_bytes, fmt_int, fmt_list, fmt_ts, fmt_us, heading,
                                           table)
from kafkatap.dashboards.load import Report

TS = fmt_ts

TABLES: list[tuple[str, str, str, list[Col]]] = [
    ("sessions/connections", "Connections", "every TCP connection to a broker", [
        Col("client_addr", "client"), Col("broker_addr", "broker"), Col("client_id", "client id"),
        Col("first_seen", "first seen", TS), Col("last_seen", "last seen", TS),
        Col("requests", "requests", fmt_int, numeric=True),
        Col("request_bytes", "bytes out", fmt_bytes, numeric=True),
        Col("response_bytes", "bytes in", fmt_bytes, numeric=True), Col("errors", "errors", fmt_int, numeric=True),
        Col("unpaired", "unpaired", fmt_int, numeric=True), Col("latency_p50_us", "p50", fmt_us, numeric=True),
        Col("latency_p99_us", "p99", fmt_us, numeric=True), Col("requests_by_api", "by api", fmt_list),
        Col("handshake_rtt_us", "handshake RTT", fmt_us, numeric=True),
        Col("retransmissions", "retransmitted", fmt_int, numeric=True),
        Col("out_of_order", "out of order", fmt_int, numeric=True), Col("resets", "resets", fmt_int, numeric=True),
        Col("zero_windows", "zero windows", fmt_int, numeric=True)]),
    ("sessions/groups", "Groups", "requests that name a group (joins, heartbeats, commits, offset fetches)", [
        Col("group_id", "group"), Col("kind", "kind"), Col("joined", "joined"), Col("commit_only", "commit only"),
        Col("members", "members", fmt_int, numeric=True), Col("client_ids", "client ids", fmt_list),
        Col("commits", "commits", fmt_int, numeric=True), Col("errors", "errors", fmt_int, numeric=True),
        Col("coordinator", "coordinator"), Col("first_seen", "first seen", TS), Col("last_seen", "last seen", TS)]),
    ("sessions/commits", "Committed offsets", "OffsetCommit requests", [
        Col("group_id", "group"), Col("topic", "topic"), Col("partition", "partition", fmt_int, numeric=True),
        Col("commits", "commits", fmt_int, numeric=True), Col("refused", "refused", fmt_int, numeric=True),
        Col("committed_offset", "committed offset", fmt_int, numeric=True),
        Col("high_watermark", "high watermark", fmt_int, numeric=True),
        Col("commit_lag", "commit lag", fmt_int, numeric=True), Col("last_commit", "last commit", TS)]),
    ("sessions/members", "Group members", "JoinGroup or ConsumerGroupHeartbeat traffic", [
        Col("group_id", "group"), Col("member_id", "member"), Col("kind", "kind"), Col("client_id", "client id"),
        Col("group_instance_id", "instance"), Col("first_seen", "first seen", TS), Col("end_ts", "ended at", TS),
        Col("ended", "ended"), Col("end_error", "error"), Col("generations", "generations", fmt_list),
        Col("member_epochs", "epochs", fmt_list), Col("joins", "joins", fmt_int, numeric=True),
        Col("assignment_changes", "assignment changes", fmt_int, numeric=True),
        Col("final_assignment", "final assignment", fmt_list)]),
    ("sessions/producers", "Producers", "Produce traffic", [
        Col("transactional_id", "transactional id"), Col("kind", "kind"), Col("producer_ids", "producer ids", fmt_list),
        Col("client_id", "client id"), Col("epochs", "epochs", fmt_list), Col("first_seen", "first seen", TS),
        Col("last_seen", "last seen", TS), Col("records", "records", fmt_int, numeric=True),
        Col("commits", "commits", fmt_int, numeric=True), Col("aborts", "aborts", fmt_int, numeric=True),
        Col("ended", "ended"), Col("end_error", "error")]),
    ("sessions/transactions", "Transactions", "EndTxn or transactional Produce traffic", [
        Col("transactional_id", "transactional id"), Col("producer_id", "producer id", fmt_int, numeric=True),
        Col("producer_epoch", "epoch", fmt_int, numeric=True), Col("txn_index", "#", fmt_int, numeric=True),
        Col("start_ts", "start", TS), Col("end_ts", "end", TS), Col("outcome", "outcome"),
        Col("end_error", "EndTxn error"), Col("records", "records", fmt_int, numeric=True),
        Col("partitions", "partitions", fmt_list)]),
    ("sessions/share_members", "Share members", "ShareGroupHeartbeat / ShareFetch traffic", [
        Col("group_id", "group"), Col("member_id", "member"), Col("client_id", "client id"),
        Col("first_seen", "first seen", TS), Col("last_seen", "last seen", TS),
        Col("share_sessions", "sessions", fmt_int, numeric=True),
        Col("acquired_records", "acquired", fmt_int, numeric=True),
        Col("accepted", "accepted", fmt_int, numeric=True), Col("released", "released", fmt_int, numeric=True),
        Col("rejected", "rejected", fmt_int, numeric=True), Col("ended", "ended")]),
    ("sessions/fetch_links", "Fetch links", "Fetch requests from group members", [
        Col("conn_id", "connection"), Col("client_id", "client id"), Col("first_fetch", "first fetch", TS),
        Col("last_fetch", "last fetch", TS), Col("link", "link"), Col("group_id", "group"),
        Col("member_id", "member"), Col("candidates", "candidates", fmt_list)]),
]


def render(report: Report) -> Section:
    blocks: list[object] = []
    for name, title, fills, cols in TABLES:
        df = report.frame(name)
        blocks.append(heading(f"{title} ({len(df):,})"))
        if df.empty:
            blocks.append(empty(title.lower(), f"{fills[0].upper()}{fills[1:]} would fill this table."))
            continue
        sort_key = next((c.key for c in cols if c.fmt is TS), None)
        if sort_key:
            df = df.sort_values(sort_key)
        blocks.append(table(df, cols, table_id=name.replace("/", "-"), source=name))
    return Section("sessions", "Sessions", blocks,
                   lead="Every connection, member, producer and transaction the pipelines found.")
