"""The Parquet schemas of the pipelines' report: the contract the dashboard reads.

Each output table is declared once here with per-column docs, in the style of `dissect.schema`; jobs cast their result
to these schemas before writing, and the README's tables are rendered from this module
(`python -m pipelines.schema --markdown`). A table `a/b` is written to `REPORT/a/b/`.
"""

from __future__ import annotations

import sys

import pyarrow as pa

from dissect.schema import markdown

TS = pa.timestamp("us", tz="UTC")
EPOCHS = pa.list_(pa.int32())
NAMES = pa.list_(pa.string())


def _field(name: str, type_: pa.DataType, doc: str) -> pa.Field:
    return pa.field(name, type_, nullable=True, metadata={"doc": doc})


def _schema(doc: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema(list(fields), metadata={"doc": doc})


CONNECTIONS = _schema(
    "sessions: one row per TCP connection seen in `frames/`.",
    _field("conn_id", pa.string(), "Connection id (as in the dissector's tables)."),
    _field("client_addr", pa.string(), "Client endpoint `ip:port`."),
    _field("broker_addr", pa.string(), "Broker endpoint `ip:port`."),
    _field("client_host", pa.string(), "Client ip (the address without the port), used to link connections."),
    _field("client_id", pa.string(), "Most frequent client id on the connection."),
    _field("client_ids", NAMES, "Every client id seen on the connection, sorted."),
    _field("first_seen", TS, "First request or response time."),
    _field("last_seen", TS, "Last request or response time."),
    _field("requests", pa.int64(), "Frames on the connection (pairs and unpaired halves)."),
    _field("requests_by_api", pa.map_(pa.string(), pa.int64()), "Frame count per api name."),
    _field("request_bytes", pa.int64(), "Bytes client -> broker (sum of request sizes)."),
    _field("response_bytes", pa.int64(), "Bytes broker -> client (sum of response sizes)."),
    _field("errors", pa.int64(), "Responses with a non-zero error code."),
    _field("unpaired", pa.int64(), "Requests or responses without their other half."),
    _field("latency_p50_us", pa.int64(), "Median request latency (approximate percentile), microseconds."),
    _field("latency_p99_us", pa.int64(), "99th percentile request latency (approximate), microseconds."),
)

MEMBERS = _schema(
    "sessions: one row per (group, member) of consumer groups, classic (JoinGroup) and KIP-848 alike.",
    _field("kind", pa.string(), "`consumer_group` (KIP-848 ConsumerGroupHeartbeat) or `classic_group` (JoinGroup)."),
    _field("group_id", pa.string(), "Group id."),
    _field("member_id", pa.string(), "Member id."),
    _field("group_instance_id", pa.string(), "Static membership instance id, when sent."),
    _field("client_id", pa.string(), "Client id of the member's coordinator requests."),
    _field("client_host", pa.string(), "Client ip of the member's coordinator connection(s)."),
    _field("conn_ids", NAMES, "Coordinator connections the member used."),
    _field("first_seen", TS, "First request naming the member (or the JoinGroup response assigning it)."),
    _field("last_seen", TS, "Last request naming the member."),
    _field("generations", EPOCHS, "Classic generations the broker handed this member (JoinGroup responses), sorted."),
    _field("member_epochs", EPOCHS, "KIP-848 member epochs the broker handed this member, sorted."),
    _field("joins", pa.int64(), "JoinGroup requests, or ConsumerGroupHeartbeats with member epoch 0."),
    _field("heartbeats", pa.int64(), "Heartbeat / ConsumerGroupHeartbeat requests."),
    _field("assignment_changes", pa.int64(),
           "Assignments received that differ from the previous one (KIP-848 heartbeat responses carrying an "
           "assignment; classic SyncGroup responses whose opaque assignment bytes changed)."),
    _field("partitions_gained", NAMES, "`topic:partition` gained over the member's life (KIP-848 only)."),
    _field("partitions_lost", NAMES, "`topic:partition` lost over the member's life (KIP-848 only)."),
    _field("final_assignment", NAMES, "Last assignment received, as `topic:partition` (KIP-848 only)."),
    _field("ended", pa.string(),
           "`left` (LeaveGroup or leave epoch -1/-2), `fenced` (last response a fencing error), `expired` (silent for "
           "longer than the session timeout before capture end) or `alive` (still heartbeating at capture end)."),
    _field("end_ts", TS, "Time of the leave / fencing response / last request."),
    _field("end_error", pa.string(), "Error name of the response that ended the member, when `fenced`."),
)

PRODUCERS = _schema(
    "sessions: one row per producer: transactional id when it has one, else producer id.",
    _field("transactional_id", pa.string(), "Transactional id (null for idempotent / plain producers)."),
    _field("producer_id", pa.int64(), "Last producer id seen (-1 for non-idempotent producers)."),
    _field("producer_ids", pa.list_(pa.int64()), "Every producer id seen for this producer, sorted."),
    _field("client_id", pa.string(), "Client id."),
    _field("client_host", pa.string(), "Client ip."),
    _field("first_seen", TS, "First request."),
    _field("last_seen", TS, "Last request."),
    _field("epochs", EPOCHS, "Producer epochs seen (InitProducerId answers and requests), sorted."),
    _field("transactions", pa.int64(), "EndTxn requests (transactions ended)."),
    _field("commits", pa.int64(), "EndTxn requests with `committed` true."),
    _field("aborts", pa.int64(), "EndTxn requests with `committed` false."),
    _field("failed_end_txns", pa.int64(), "EndTxn responses with an error."),
    _field("batches", pa.int64(), "Record batches this producer sent in Produce requests."),
    _field("records", pa.int64(), "Records in those batches."),
    _field("bytes", pa.int64(), "Bytes of those batches."),
    _field("ended", pa.string(),
           "`fenced` (last response a fencing error), `committed` / `aborted` (last transaction's outcome), "
           "`open_transaction` (transactional data after the last EndTxn) or `active` (no transactions)."),
    _field("end_ts", TS, "Time of the event that decided `ended`."),
    _field("end_error", pa.string(), "Error name when `fenced`."),
)

TRANSACTIONS = _schema(
    "sessions: one row per transaction (transactional producers), ended by an EndTxn or open at capture end.",
    _field("transactional_id", pa.string(), "Transactional id."),
    _field("producer_id", pa.int64(), "Producer id."),
    _field("producer_epoch", pa.int32(), "Producer epoch."),
    _field("txn_index", pa.int64(), "0-based index of the transaction within (producer id, epoch)."),
    _field("start_ts", TS, "First transactional request of the transaction (AddPartitionsToTxn, Produce, ...)."),
    _field("end_ts", TS, "EndTxn request time (null when open)."),
    _field("outcome", pa.string(), "`commit`, `abort`, `fenced` (a request of it was refused as fenced) or `open`."),
    _field("end_error", pa.string(), "EndTxn response error name (`NONE` when it succeeded)."),
    _field("batches", pa.int64(), "Transactional record batches produced in the transaction."),
    _field("records", pa.int64(), "Records in them."),
    _field("partitions", NAMES, "`topic:partition` written, sorted."),
)

SHARE_MEMBERS = _schema(
    "sessions: one row per (share group, member).",
    _field("group_id", pa.string(), "Share group id."),
    _field("member_id", pa.string(), "Share member id."),
    _field("client_id", pa.string(), "Client id."),
    _field("client_host", pa.string(), "Client ip."),
    _field("first_seen", TS, "First request naming the member."),
    _field("last_seen", TS, "Last request naming the member."),
    _field("member_epochs", EPOCHS, "ShareGroupHeartbeat member epochs the broker handed, sorted."),
    _field("share_sessions", pa.int64(), "Share sessions opened (ShareFetch with share session epoch 0)."),
    _field("max_share_session_epoch", pa.int32(), "Highest share session epoch used."),
    _field("share_fetches", pa.int64(), "ShareFetch requests."),
    _field("acquired_ranges", pa.int64(), "Acquired record ranges received."),
    _field("acquired_records", pa.int64(), "Records acquired (sum of range lengths)."),
    _field("accepted", pa.int64(), "Offsets acknowledged `accept`."),
    _field("released", pa.int64(), "Offsets acknowledged `release`."),
    _field("rejected", pa.int64(), "Offsets acknowledged `reject`."),
    _field("renewed", pa.int64(), "Offsets acknowledged `renew`."),
    _field("ended", pa.string(), "`left`, `fenced`, `expired` or `alive` (as for `sessions/members`)."),
    _field("end_ts", TS, "Time of the event that decided `ended`."),
)

FETCH_LINKS = _schema(
    "sessions: which group member did the fetching on each fetch connection (matched on client id + client ip "
    "and overlapping activity; ambiguity is reported, never guessed).",
    _field("conn_id", pa.string(), "Connection carrying Fetch requests."),
    _field("client_id", pa.string(), "Client id of the fetches."),
    _field("client_host", pa.string(), "Client ip."),
    _field("first_fetch", TS, "First fetch on the connection."),
    _field("last_fetch", TS, "Last fetch on the connection."),
    _field("link", pa.string(), "`linked` (one candidate member), `ambiguous` (several) or `unlinked` (none)."),
    _field("group_id", pa.string(), "The group, when every candidate is in the same group."),
    _field("member_id", pa.string(), "The member, when `linked`."),
    _field("candidates", NAMES, "Candidate members as `group/member_id`, sorted."),
)

FENCED_EPOCHS = _schema(
    "One row per fencing, reported by the broker (an error) or inferred (a zombie using an epoch older than one "
    "already handed to the same member / producer, with no broker error).",
    _field("kind", pa.string(),
           "`consumer_group` (KIP-848), `classic_group`, `share_group`, `producer` or `partition_leader` "
           "(FENCED_LEADER_EPOCH)."),
    _field("group_id", pa.string(), "Group id, for group fencings."),
    _field("transactional_id", pa.string(), "Transactional id, for producer fencings."),
    _field("member_id", pa.string(), "Fenced member id."),
    _field("group_instance_id", pa.string(), "Fenced static instance id."),
    _field("producer_id", pa.int64(), "Fenced producer id."),
    _field("client_id", pa.string(), "Client id of the rejected request."),
    _field("stale_epoch", pa.int32(),
           "Epoch the rejected request used: member epoch, generation, producer epoch or share session epoch."),
    _field("current_epoch", pa.int32(), "Latest epoch the broker had handed to the same party before (null if unseen)."),
    _field("current_epoch_source", pa.string(),
           "Where `current_epoch` came from: `<api> response corr=<id> conn=<conn_id> at <ts>`."),
    _field("error_code", pa.int16(), "Broker error code; for inferred rows the response's (non-fencing) error, null "
           "when the request had no response."),
    _field("error_name", pa.string(), "Name of `error_code`."),
    _field("api_key", pa.int16(), "Api key of the rejected request."),
    _field("api_name", pa.string(), "Api name of the rejected request."),
    _field("correlation_id", pa.int32(), "Correlation id of the rejected request."),
    _field("conn_id", pa.string(), "Connection of the rejected request."),
    _field("ts", TS, "Time of the rejected request."),
    _field("inferred", pa.bool_(), "True when no broker error said so (zombie detected from the epochs alone)."),
    _field("requests", pa.int64(),
           "Requests folded into this row: the same party using the same stale epoch again (retries, a zombie that "
           "keeps going) is one fencing; the row shows the first rejected request."),
)

DUPLICATE_DELIVERIES = _schema(
    "One row per offset range delivered (or appended) more than once.",
    _field("kind", pa.string(),
           "`consumer_group` (KIP-848), `classic_group`, `share_group`, `producer`, or `none` for fetches no group "
           "member could be linked to (assign() consumers; then duplicates are per client id and ip)."),
    _field("group_id", pa.string(), "Group id (null when the fetches could not be linked to a group)."),
    _field("topic", pa.string(), "Topic."),
    _field("partition", pa.int32(), "Partition."),
    _field("first_offset", pa.int64(), "First offset of the range (for producers: of the duplicate append)."),
    _field("last_offset", pa.int64(), "Last offset of the range, inclusive."),
    _field("records", pa.int64(),
           "Records in the range (fewer than the range length on compacted topics, when `records/` was present)."),
    _field("deliveries", pa.int64(),
           "Times the range was delivered (or appended): 2 or more. Consumer groups: deliveries the application "
           "consumed (fetches cut at the member's next commit); for `wire_only` rows, the fetches."),
    _field("first_delivery_ts", TS, "First delivery (fetch response / acquisition / append) time."),
    _field("redelivery_ts", TS, "First redelivery time."),
    _field("first_member_id", pa.string(), "Member of the first delivery (null when unlinked or ambiguous)."),
    _field("redelivery_member_id", pa.string(), "Member of the first redelivery."),
    _field("first_conn_id", pa.string(), "Connection of the first delivery."),
    _field("redelivery_conn_id", pa.string(), "Connection of the first redelivery."),
    _field("first_client_id", pa.string(), "Client id of the first delivery."),
    _field("redelivery_client_id", pa.string(), "Client id of the first redelivery."),
    _field("delivery_count", pa.int32(),
           "Share groups: the broker's highest delivery count for the range (it also counts deliveries before the "
           "capture began, which `deliveries` cannot see)."),
    _field("ack_history", NAMES,
           "Share groups: acks of the range before its second acquisition, as `ack_type@ts`, in time order."),
    _field("producer_id", pa.int64(), "Producers: producer id."),
    _field("producer_epoch", pa.int32(), "Producers: producer epoch."),
    _field("base_sequence", pa.int32(), "Producers: base sequence of the appended batch."),
    _field("original_offset", pa.int64(), "Producers: offset of the first append of the same batch."),
    _field("cause", pa.string(),
           "Likely cause, from the group's events between the two deliveries. Consumer groups: `fencing`, `rebalance`, "
           "`seek_to_committed` (an OffsetFetch), `refetch` (none of those), `unlinked` (no group known). "
           "Share groups (the last ack before the second acquisition): `released`, `rejected`, `lock_timeout` (no ack). "
           "Producers: `retry_appended_twice`, "
           "`possible_retry` (non-idempotent identical records, inferred from record hashes)."),
    _field("possible", pa.bool_(), "True when inferred from record hashes rather than proven by offsets."),
    _field("first_position", pa.int64(),
           "Consumer groups: the offset the first member next committed (or tried to) for the partition after its "
           "delivery; null when it sent no commit."),
    _field("wire_only", pa.bool_(),
           "Consumer groups: true when the range was fetched at least twice but, by the members' own next commits, "
           "consumed at most once (fetched records dropped on a revocation or held by a frozen process). Not counted "
           "in `duplicate_records`."),
    _field("wire_deliveries", pa.int64(), "Consumer groups: fetch responses that carried the range."),
)

THROUGHPUT_DATA = _schema(
    "throughput: record data per time window, topic, partition, client and broker.",
    _field("window_start", TS, "Window start."),
    _field("window_end", TS, "Window end (exclusive)."),
    _field("direction", pa.string(), "`produce`, `fetch` or `share_fetch`."),
    _field("topic", pa.string(), "Topic."),
    _field("partition", pa.int32(), "Partition."),
    _field("client_id", pa.string(), "Client id."),
    _field("broker_addr", pa.string(), "Broker endpoint."),
    _field("batches", pa.int64(), "Record batches."),
    _field("records", pa.int64(), "Records."),
    _field("bytes", pa.int64(), "Batch bytes on the wire."),
)

THROUGHPUT_REQUESTS = _schema(
    "throughput: requests per time window, api and broker, with latency percentiles and errors.",
    _field("window_start", TS, "Window start."),
    _field("window_end", TS, "Window end (exclusive)."),
    _field("api_key", pa.int16(), "Api key."),
    _field("api_name", pa.string(), "Api name."),
    _field("broker_addr", pa.string(), "Broker endpoint."),
    _field("requests", pa.int64(), "Frames (request/response pairs and unpaired halves)."),
    _field("errors", pa.int64(), "Responses with a non-zero error code."),
    _field("error_rate", pa.float64(), "`errors / requests`."),
    _field("unpaired", pa.int64(), "Unpaired halves."),
    _field("request_bytes", pa.int64(), "Request bytes."),
    _field("response_bytes", pa.int64(), "Response bytes."),
    _field("latency_p50_us", pa.int64(), "Median latency (approximate), microseconds."),
    _field("latency_p95_us", pa.int64(), "95th percentile latency (approximate)."),
    _field("latency_p99_us", pa.int64(), "99th percentile latency (approximate)."),
    _field("latency_max_us", pa.int64(), "Maximum latency."),
)

THROUGHPUT_LAG = _schema(
    "throughput: consumer lag per time window, where fetch responses carry high watermarks.",
    _field("window_start", TS, "Window start."),
    _field("window_end", TS, "Window end (exclusive)."),
    _field("topic", pa.string(), "Topic."),
    _field("partition", pa.int32(), "Partition."),
    _field("client_id", pa.string(), "Fetching client id."),
    _field("high_watermark", pa.int64(), "Highest high watermark seen in the window."),
    _field("next_offset", pa.int64(), "Highest `last_offset + 1` fetched in the window."),
    _field("lag", pa.int64(), "`high_watermark - next_offset` (records behind at the window's end)."),
)

TABLES: dict[str, pa.Schema] = {
    "sessions/connections": CONNECTIONS,
    "sessions/members": MEMBERS,
    "sessions/producers": PRODUCERS,
    "sessions/transactions": TRANSACTIONS,
    "sessions/share_members": SHARE_MEMBERS,
    "sessions/fetch_links": FETCH_LINKS,
    "fenced_epochs": FENCED_EPOCHS,
    "duplicate_deliveries": DUPLICATE_DELIVERIES,
    "throughput/data": THROUGHPUT_DATA,
    "throughput/requests": THROUGHPUT_REQUESTS,
    "throughput/lag": THROUGHPUT_LAG,
}

SUMMARY_KEYS: dict[str, str] = {
    "frames": "Frames (request/response pairs and unpaired halves) read.",
    "capture_start": "First request time (ISO 8601, UTC), null when empty.",
    "capture_end": "Last request or response time.",
    "capture_span_s": "Seconds between them.",
    "connections": "Rows of `sessions/connections`.",
    "clients": "Distinct client ids.",
    "brokers": "Distinct broker endpoints.",
    "groups": "Distinct consumer, classic and share groups.",
    "members": "Rows of `sessions/members` plus `sessions/share_members`.",
    "producers": "Rows of `sessions/producers`.",
    "transactions": "Rows of `sessions/transactions` by outcome: `{commit, abort, fenced, open}`.",
    "fenced_epochs": "Rows of `fenced_epochs`.",
    "fenced_epochs_by_kind": "Rows of `fenced_epochs` per kind (`inferred` ones counted under `inferred`, too).",
    "duplicate_ranges": "Rows of `duplicate_deliveries` per kind.",
    "duplicate_records": "Records delivered again per kind (`classic_group`, `consumer_group`, `share_group`, "
                         "`producer`, `none` for consumers outside groups): sum of `records * (deliveries - 1)` "
                         "over rows that are neither `possible` nor `wire_only`.",
    "wire_duplicate_records": "The same including `wire_only` rows (records fetched twice on the wire).",
    "possible_duplicate_records": "Records possibly re-sent by non-idempotent producers (from record hashes; not in "
                                  "`duplicate_records`).",
    "produced_records": "Records in Produce requests.",
    "fetched_records": "Records in Fetch and ShareFetch responses.",
    "errors": "Responses with a non-zero error code.",
    "anomalies": "Rows of the dissector's `anomalies/`.",
    "window": "The throughput window used.",
}


if __name__ == "__main__":
    if "--markdown" in sys.argv:
        print(markdown(TABLES))
        print("#### `summary.json`\n\n| key | meaning |\n|---|---|")
        print("\n".join(f"| `{k}` | {v} |" for k, v in SUMMARY_KEYS.items()))
