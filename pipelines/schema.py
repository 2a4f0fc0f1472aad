"""The Parquet schemas of the pipelines' report: the contract the dashboard reads.

Each output table is declared once here with per-column docs, in the style of `kafkatap.dissect.tables.schema`;
jobs cast their result to these schemas before writing, and docs/schemas.md's tables are rendered from this module
(`python -m kafkatap.pipelines.schema --markdown`). A table `a/b` is written to `REPORT/a/b/`.
"""

from __future__ import annotations

import sys

import pyarrow as pa

from kafkatap.dissect.tables.schema import CONNECTIONS as TCP_CONNECTIONS
from kafkatap.dissect.tables.schema import TCP_COUNTS, TS, column, markdown, table

EPOCHS = pa.list_(pa.int32())
NAMES = pa.list_(pa.string())


CONNECTIONS = table(
    "sessions: one row per TCP connection seen in `frames/`.",
    column("conn_id", pa.string(), "Connection id (as in the dissector's tables)."),
    column("client_addr", pa.string(), "Client endpoint `ip:port`."),
    column("broker_addr", pa.string(), "Broker endpoint `ip:port`."),
    column("client_host", pa.string(), "Client ip (the address without the port), used to link connections."),
    column("client_id", pa.string(), "Most frequent client id on the connection."),
    column("client_ids", NAMES, "Every client id seen on the connection, sorted."),
    column("first_seen", TS, "First request or response time."),
    column("last_seen", TS, "Last request or response time."),
    column("requests", pa.int64(), "Frames on the connection (pairs and unpaired halves)."),
    column("requests_by_api", pa.map_(pa.string(), pa.int64()), "Frame count per api name."),
    column("request_bytes", pa.int64(), "Bytes client -> broker (sum of request sizes)."),
    column("response_bytes", pa.int64(), "Bytes broker -> client (sum of response sizes)."),
    column("errors", pa.int64(), "Responses with a non-zero error code."),
    column("unpaired", pa.int64(), "Requests or responses without their other half."),
    column("latency_p50_us", pa.int64(), "Median request latency (exact, by nearest rank), microseconds."),
    column("latency_p99_us", pa.int64(), "99th percentile request latency, microseconds."),
    *(f for f in TCP_CONNECTIONS if f.name in TCP_COUNTS),
)

GROUPS = table(
    "sessions: one row per group id a request names: groups whose members join, and groups that only commit or "
    "read offsets (manual assignment, or a capture that began after the joins).",
    column("group_id", pa.string(), "Group id."),
    column("kind", pa.string(), "`consumer_group` (KIP-848), `streams_group` (KIP-1071), `share_group`, or "
           "`classic_group` (JoinGroup, or offsets only)."),
    column("joined", pa.bool_(), "A JoinGroup or a consumer, share or streams group heartbeat names the group."),
    column("commit_only", pa.bool_(), "The group commits offsets but no member joins it in the capture."),
    column("first_seen", TS, "First request naming the group."),
    column("last_seen", TS, "Last one."),
    column("members", pa.int64(), "Distinct member ids the requests name."),
    column("client_ids", pa.list_(pa.string()), "Client ids of those requests, sorted."),
    column("commits", pa.int64(), "OffsetCommit requests."),
    column("offset_fetches", pa.int64(), "OffsetFetch requests."),
    column("errors", pa.int64(), "Responses with a non-zero error code."),
    column("coordinator", pa.string(), "Broker endpoint most of the group's requests went to (its coordinator)."),
)

COMMITS = table(
    "sessions: per group and partition, the offsets its clients committed and the commit lag at the capture's end.",
    column("group_id", pa.string(), "Group id."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("commits", pa.int64(), "Commits of this partition (OffsetCommit requests naming it)."),
    column("refused", pa.int64(), "Of those, commits whose response carried an error or is not in the capture."),
    column("first_commit", TS, "First commit."),
    column("last_commit", TS, "Last commit."),
    column("committed_offset", pa.int64(), "The offset of the last commit the broker accepted (null when none was)."),
    column("member_ids", pa.list_(pa.string()), "Member ids that committed it, sorted (empty for commit-only "
           "groups' clients, which send none)."),
    column("high_watermark", pa.int64(), "The partition's last high watermark in the capture's fetch responses."),
    column("commit_lag", pa.int64(), "`high_watermark - committed_offset` (at least 0): records the group had not "
           "committed when the capture ended; null without a watermark or an accepted commit."),
)

MEMBERS = table(
    "sessions: one row per (group, member, incarnation) of consumer groups, classic (JoinGroup), KIP-848 and streams "
    "groups (KIP-1071, whose members' active tasks count as the partitions they read) alike.",
    column("kind", pa.string(), "`consumer_group` (KIP-848 ConsumerGroupHeartbeat), `streams_group` (KIP-1071 "
                                 "StreamsGroupHeartbeat) or `classic_group` (JoinGroup)."),
    column("group_id", pa.string(), "Group id."),
    column("member_id", pa.string(), "Member id."),
    column("group_instance_id", pa.string(), "Static membership instance id, when sent."),
    column("client_id", pa.string(), "Client id of the member's coordinator requests."),
    column("client_host", pa.string(), "Client ip of the member's coordinator connection(s)."),
    column("conn_ids", NAMES, "Coordinator connections the member used."),
    column("first_seen", TS, "First request naming the member (or the JoinGroup response assigning it)."),
    column("last_seen", TS, "Last request naming the member."),
    column("generations", EPOCHS, "Classic generations the broker handed this member (JoinGroup responses), sorted."),
    column("member_epochs", EPOCHS, "KIP-848 member epochs the broker handed this member, sorted."),
    column("joins", pa.int64(), "JoinGroup requests, or ConsumerGroupHeartbeats with member epoch 0."),
    column("heartbeats", pa.int64(), "Heartbeat / ConsumerGroupHeartbeat requests."),
    column("assignment_changes", pa.int64(),
           "Assignments received that differ from the previous one (KIP-848 heartbeat responses carrying an "
           "assignment; classic SyncGroup responses, by their decoded consumer protocol assignment, else by their "
           "bytes)."),
    column("partitions_gained", NAMES,
           "`topic:partition` gained over the member's life (KIP-848 and classic consumer protocol)."),
    column("partitions_lost", NAMES,
           "`topic:partition` lost over the member's life (KIP-848 and classic consumer protocol)."),
    column("final_assignment", NAMES,
           "Last assignment received, as `topic:partition` (KIP-848 and classic consumer protocol)."),
    column("ended", pa.string(),
           "`left` (LeaveGroup or leave epoch -1/-2), `fenced` (last response a fencing error), `expired` (silent for "
           "longer than the session timeout: the coordinator removed it, and its later requests were refused, or the "
           "capture ended) or `alive` (still heartbeating at capture end)."),
    column("end_ts", TS, "Time of the leave / fencing response / last request (an expired member's refused "
           "request, where it sent one)."),
    column("end_error", pa.string(), "Error name of the response that ended the member, when `fenced`, or that "
           "refused an `expired` member."),
    column("session_timeout_ms", pa.int64(), "Session timeout of the member's latest JoinGroup (classic members; "
           "a KIP-848 member's is a broker setting, not on the wire)."),
    column("incarnation", pa.int32(),
           "Life of the member id this row is, from 1. A KIP-848 member the coordinator refused (fenced, or removed "
           "after its session timeout) that rejoins at member epoch 0 under the same member id (the Java client "
           "and librdkafka keep it) starts a new row with the next number, so the refused life keeps its `ended`, "
           "`end_ts` and `end_error`."),
)

PRODUCERS = table(
    "sessions: one row per producer: transactional id when it has one, else producer id, else (a plain producer, "
    "without idempotence) client id and host.",
    column("transactional_id", pa.string(), "Transactional id (null for idempotent / plain producers)."),
    column("producer_id", pa.int64(), "Last producer id seen (-1 for plain producers)."),
    column("producer_ids", pa.list_(pa.int64()), "Every producer id seen for this producer, sorted."),
    column("client_id", pa.string(), "Client id."),
    column("client_host", pa.string(), "Client ip."),
    column("first_seen", TS, "First request."),
    column("last_seen", TS, "Last request."),
    column("epochs", EPOCHS, "Producer epochs seen (InitProducerId answers and requests), sorted."),
    column("transactions", pa.int64(), "EndTxn requests (transactions ended)."),
    column("commits", pa.int64(), "EndTxn requests with `committed` true."),
    column("aborts", pa.int64(), "EndTxn requests with `committed` false."),
    column("failed_end_txns", pa.int64(), "EndTxn responses with an error."),
    column("batches", pa.int64(), "Record batches this producer sent in Produce requests."),
    column("records", pa.int64(), "Records in those batches."),
    column("bytes", pa.int64(), "Bytes of those batches."),
    column("refused_records", pa.int64(), "Of `records`, those in batches the partition leader refused (say "
           "NOT_LEADER_OR_FOLLOWER while leadership moves): the producer sends them again, so `records - "
           "refused_records` were written."),
    column("ended", pa.string(),
           "`fenced` (last response a fencing error), `committed` / `aborted` (last transaction's outcome), "
           "`open_transaction` (transactional data after the last EndTxn) or `active` (no transactions)."),
    column("end_ts", TS, "Time of the event that decided `ended`."),
    column("end_error", pa.string(), "Error name when `fenced`."),
    column("kind", pa.string(), "`transactional`, `idempotent` (a producer id, no transactional id) or `plain` "
           "(neither: its batches carry producer id -1, so a resend cannot be told from new data)."),
)

TRANSACTIONS = table(
    "sessions: one row per transaction (transactional producers), ended by an EndTxn or open at capture end.",
    column("transactional_id", pa.string(), "Transactional id."),
    column("producer_id", pa.int64(), "Producer id."),
    column("producer_epoch", pa.int32(), "Producer epoch."),
    column("txn_index", pa.int64(), "0-based index of the transaction within (producer id, epoch)."),
    column("start_ts", TS, "First transactional request of the transaction (AddPartitionsToTxn, Produce, ...)."),
    column("end_ts", TS, "EndTxn request time (null when open)."),
    column("outcome", pa.string(), "`commit`, `abort`, `fenced` (a request of it was refused as fenced) or `open`."),
    column("end_error", pa.string(), "EndTxn response error name (`NONE` when it succeeded)."),
    column("batches", pa.int64(), "Transactional record batches produced in the transaction."),
    column("records", pa.int64(), "Records in them."),
    column("partitions", NAMES, "`topic:partition` written, sorted."),
)

SHARE_MEMBERS = table(
    "sessions: one row per (share group, member).",
    column("group_id", pa.string(), "Share group id."),
    column("member_id", pa.string(), "Share member id."),
    column("client_id", pa.string(), "Client id."),
    column("client_host", pa.string(), "Client ip."),
    column("first_seen", TS, "First request naming the member."),
    column("last_seen", TS, "Last request naming the member."),
    column("member_epochs", EPOCHS, "ShareGroupHeartbeat member epochs the broker handed, sorted."),
    column("share_sessions", pa.int64(), "Share sessions opened (ShareFetch with share session epoch 0)."),
    column("max_share_session_epoch", pa.int32(), "Highest share session epoch used."),
    column("share_fetches", pa.int64(), "ShareFetch requests."),
    column("acquired_ranges", pa.int64(), "Acquired record ranges received."),
    column("acquired_records", pa.int64(), "Records acquired (sum of range lengths)."),
    column("accepted", pa.int64(), "Offsets acknowledged `accept`."),
    column("released", pa.int64(), "Offsets acknowledged `release`."),
    column("rejected", pa.int64(), "Offsets acknowledged `reject`."),
    column("renewed", pa.int64(), "Offsets acknowledged `renew`."),
    column("ended", pa.string(), "`left`, `fenced`, `expired` or `alive` (as for `sessions/members`)."),
    column("end_ts", TS, "Time of the event that decided `ended`."),
)

FETCH_LINKS = table(
    "sessions: which group member did the fetching on each fetch connection (matched on client id + client ip "
    "and overlapping activity; ambiguity is reported, never guessed).",
    column("conn_id", pa.string(), "Connection carrying Fetch requests."),
    column("client_id", pa.string(), "Client id of the fetches."),
    column("client_host", pa.string(), "Client ip."),
    column("first_fetch", TS, "First fetch on the connection."),
    column("last_fetch", TS, "Last fetch on the connection."),
    column("link", pa.string(), "`linked` (one candidate member), `ambiguous` (several) or `unlinked` (none)."),
    column("group_id", pa.string(), "The group, when every candidate is in the same group."),
    column("member_id", pa.string(), "The member, when `linked`."),
    column("candidates", NAMES, "Candidate members as `group/member_id`, sorted."),
)

EPOCH_EVENTS = table(
    "sessions: every epoch a broker handed to a group member or producer, when it changed (a heartbeat answering "
    "the member's current epoch again is not a change): where each member epoch, generation and producer epoch "
    "began. Share session epochs, which move on with every ShareFetch, are left out.",
    column("kind", pa.string(), "`consumer_group`, `streams_group`, `classic_group`, `share_group` or `producer`."),
    column("party", pa.string(), "`group/member_id` or `pid:<producer id>`."),
    column("group_id", pa.string(), "Group id (members)."),
    column("member_id", pa.string(), "Member id (members)."),
    column("transactional_id", pa.string(), "Transactional id (producers, when the response's request named one)."),
    column("producer_id", pa.int64(), "Producer id (producers)."),
    column("epoch", pa.int32(), "The epoch handed: member epoch, generation or producer epoch."),
    column("previous_epoch", pa.int32(), "The party's epoch before (null for its first)."),
    column("ts", TS, "Time of the response that handed it."),
    column("api_name", pa.string(), "The api whose response handed it."),
    column("correlation_id", pa.int32(), "That response's correlation id."),
    column("conn_id", pa.string(), "That response's connection."),
    column("client_id", pa.string(), "Client id of the request."),
)

FENCED_EPOCHS = table(
    "One row per fencing, reported by the broker (an error) or inferred (a zombie using an epoch older than one "
    "already handed to the same member / producer, with no broker error).",
    column("kind", pa.string(),
           "`consumer_group` (KIP-848), `streams_group`, `classic_group`, `share_group`, `producer` or "
           "`partition_leader` "
           "(FENCED_LEADER_EPOCH to a client; followers' replication Fetches refused so are not rows)."),
    column("group_id", pa.string(), "Group id, for group fencings."),
    column("transactional_id", pa.string(), "Transactional id, for producer fencings."),
    column("member_id", pa.string(), "Fenced member id."),
    column("group_instance_id", pa.string(), "Fenced static instance id."),
    column("producer_id", pa.int64(), "Fenced producer id."),
    column("client_id", pa.string(), "Client id of the rejected request."),
    column("stale_epoch", pa.int32(),
           "Epoch the rejected request used: member epoch, generation, producer epoch, share session epoch or, for "
           "`partition_leader`, the partition's `current_leader_epoch`."),
    column("current_epoch", pa.int32(), "Latest epoch the broker had handed to the same party before (null if unseen); "
           "for a classic member, the group's generation (`group_generation`) where that is newer."),
    column("current_epoch_source", pa.string(),
           "Where `current_epoch` came from: `<api> response corr=<id> conn=<conn_id> at <ts>`."),
    column("error_code", pa.int16(), "Broker error code; for inferred rows the response's (non-fencing) error, null "
           "when the request had no response."),
    column("error_name", pa.string(), "Name of `error_code`."),
    column("api_key", pa.int16(), "Api key of the rejected request."),
    column("api_name", pa.string(), "Api name of the rejected request."),
    column("correlation_id", pa.int32(), "Correlation id of the rejected request."),
    column("conn_id", pa.string(), "Connection of the rejected request."),
    column("ts", TS, "Time of the rejected request."),
    column("inferred", pa.bool_(), "True when no broker error said so (zombie detected from the epochs alone)."),
    column("requests", pa.int64(),
           "Requests folded into this row: the same party using the same stale epoch again (retries, a zombie that "
           "keeps going) is one fencing; the row shows the first rejected request."),
    column("topic", pa.string(), "Topic of the rejected partition (`partition_leader` rows; null for the others)."),
    column("partition", pa.int32(), "Partition whose leader epoch was stale (`partition_leader` rows)."),
    column("fenced_by_client_id", pa.string(),
           "Client id of the party that received the newer epoch: producers, the InitProducerId that started the "
           "instance holding the current epoch (it handed that epoch under transactions v1; under v2 the instance's "
           "own EndTxns bumped it further); group members, the first member handed one of the fenced member's "
           "partitions after it got them and before the fencing. Null when the capture does not show it."),
    column("fenced_by_conn_id", pa.string(), "Connection of that response."),
    column("fenced_by_member_id", pa.string(), "Member id of the member that took over (group fencings)."),
    column("fenced_by_ts", TS, "Time of that InitProducerId response, or of the response that handed the partitions."),
    column("cause", pa.string(),
           "Why, where the wire shows it: `session_timeout` (the member sent nothing the coordinator accepted for "
           "longer than its session timeout: it was removed), `left` (it had left the group), `replaced` (another "
           "member took over its static instance id), `new_generation` (a classic member that missed the rebalance "
           "to the group's generation), `stale_epoch` (a KIP-848 or streams group member behind the epoch handed to "
           "it), "
           "`new_instance` (a second producer initialised the same transactional id); null when the capture does "
           "not show it, and for inferred rows."),
    column("last_ok_ts", TS, "Group members: the member's last request the coordinator accepted before this one."),
    column("silent_s", pa.float64(), "Group members: seconds from `last_ok_ts` to the rejected request."),
    column("session_timeout_ms", pa.int64(),
           "Classic members: the session timeout of the member's latest JoinGroup before the fencing (KIP-848 and "
           "streams group members' is a broker setting, not on the wire: null)."),
    column("heartbeat_interval_ms", pa.int64(),
           "KIP-848 and streams group members: the heartbeat interval the coordinator last answered the member; a "
           "member refused UNKNOWN_MEMBER_ID after more than two intervals without an accepted request was removed "
           "for it."),
    column("group_generation", pa.int32(),
           "Classic groups: the group's latest generation, handed to any member, at the time of the rejected "
           "request."),
    column("group_epoch", pa.int32(),
           "KIP-848 and streams groups: the highest member epoch the coordinator had handed to any member of the "
           "group at the time of the rejected request. Heartbeat responses carry no group epoch; a member's epoch "
           "reaches the group's once it has reconciled, so this is the group epoch as far as the wire proves it (a "
           "lower bound)."),
    column("explanation", pa.string(), "The row in one sentence: who, what it did, what the coordinator did; for a "
           "row without a `cause`, what was refused and that the capture does not show why."),
)

DUPLICATE_DELIVERIES = table(
    "One row per offset range delivered (or appended) more than once.",
    column("kind", pa.string(),
           "`consumer_group` (KIP-848), `streams_group`, `classic_group`, `share_group`, `producer`, or `none` for "
           "fetches no group "
           "member could be linked to (assign() consumers; then duplicates are per client id and ip)."),
    column("group_id", pa.string(), "Group id (null when the fetches could not be linked to a group)."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("first_offset", pa.int64(), "First offset of the range (for producers: of the duplicate append)."),
    column("last_offset", pa.int64(), "Last offset of the range, inclusive."),
    column("records", pa.int64(),
           "Records in the range (fewer than the range length on compacted topics, when `records/` was present)."),
    column("deliveries", pa.int64(),
           "Times the range was delivered (or appended): 2 or more. Consumer groups: deliveries the application "
           "consumed (fetches cut at the furthest position the member commits before fetching the partition "
           "again); for `wire_only` rows, the fetches."),
    column("first_delivery_ts", TS, "First delivery (fetch response / acquisition / append) time."),
    column("redelivery_ts", TS, "First redelivery time."),
    column("first_member_id", pa.string(), "Member of the first delivery (null when unlinked or ambiguous)."),
    column("redelivery_member_id", pa.string(), "Member of the first redelivery."),
    column("first_conn_id", pa.string(), "Connection of the first delivery."),
    column("redelivery_conn_id", pa.string(), "Connection of the first redelivery."),
    column("first_client_id", pa.string(), "Client id of the first delivery."),
    column("redelivery_client_id", pa.string(), "Client id of the first redelivery."),
    column("delivery_count", pa.int32(),
           "Share groups: the broker's highest delivery count for the range (it also counts deliveries before the "
           "capture began, which `deliveries` cannot see)."),
    column("ack_history", NAMES,
           "Share groups: acks of the range before its second acquisition, as `ack_type@ts`, in time order."),
    column("producer_id", pa.int64(), "Producers: producer id."),
    column("producer_epoch", pa.int32(), "Producers: producer epoch."),
    column("base_sequence", pa.int32(), "Producers: base sequence of the appended batch."),
    column("original_offset", pa.int64(), "Producers: offset of the first append of the same batch."),
    column("cause", pa.string(),
           "Likely cause, from the group's events between the two deliveries. Consumer groups: `fencing`, `rebalance`, "
           "`seek_to_committed` (an OffsetFetch), `refetch` (none of those), `unlinked` (no group known). "
           "Share groups (the last ack before the second acquisition): `released`, `rejected`, `lock_timeout` "
           "(no ack), "
           "`delivered_before_capture` (acquired once in the capture with a delivery count above 1: `deliveries` is "
           "the broker's count). "
           "Producers: `retry_appended_twice`, "
           "`possible_retry` (non-idempotent identical records from the same client id and host, inferred from the "
           "batches' fingerprints)."),
    column("possible", pa.bool_(), "True when inferred from record hashes rather than proven by offsets."),
    column("first_position", pa.int64(),
           "Consumer groups: the offset the first member next committed (or tried to) for the partition after its "
           "delivery; null when it sent no commit."),
    column("wire_only", pa.bool_(),
           "Consumer groups: true when the range was fetched at least twice but, by the members' own next commits, "
           "consumed at most once (fetched records dropped on a revocation or held by a frozen process). Not counted "
           "in `duplicate_records`."),
    column("wire_deliveries", pa.int64(), "Consumer groups: fetch responses that carried the range."),
)

REBALANCES = table(
    "One row per rebalance episode of a classic or KIP-848 consumer group or a streams group "
    "(rules under \"Rebalance episodes\").",
    column("group_id", pa.string(), "Group id."),
    column("kind", pa.string(), "`classic_group`, `consumer_group` (KIP-848) or `streams_group` (KIP-1071)."),
    column("start_ts", TS, "First sign of the rebalance on the wire (the response or request in `evidence`)."),
    column("end_ts", TS, "The response that completed it: the last member's SyncGroup response of the generation, "
           "or the heartbeat response that brought the last member to the epoch."),
    column("duration_s", pa.float64(), "`end_ts - start_ts`, seconds."),
    column("generation_or_epoch", pa.int32(), "Generation (classic) or member epoch (KIP-848) the episode reached."),
    column("rounds", pa.int64(), "Generations or epochs handed in the episode (more than 1: failed rounds)."),
    column("members_before", pa.int32(), "Members of the previous episode's generation or epoch (0 for the first)."),
    column("members_after", pa.int32(), "Members of the generation or epoch reached."),
    column("members_joined", NAMES, "Member ids in the new generation or epoch and not in the previous one."),
    column("members_left", NAMES, "Member ids in the previous generation or epoch and not in the new one."),
    column("partitions_moved", pa.int64(), "Partitions whose owner at the end differs from the owner at the previous "
           "episode's end."),
    column("moved_partitions", NAMES, "Those partitions, as `topic:partition`."),
    column("stalled_s", pa.float64(), "Longest time a moved partition had no owner: from its old owner's release "
           "(or the episode's start) to its new owner's assignment (or the episode's end)."),
    column("fetch_gap_s", pa.float64(),
           "Longest time a moved partition's records went unfetched, as its consumers felt the rebalance: from its old "
           "owner's last fetch of records from it (before the new owner got it) to its new owner's first fetch of "
           "records from it. Includes the time an owner was frozen, gone or revoking before the rebalance, which "
           "`stalled_s` does not. Null when the capture shows neither fetch (no data to fetch, or fetches elsewhere)."),
    column("fetch_gap_partition_s", pa.float64(), "Those gaps summed over the moved partitions (partition-seconds)."),
    column("trigger", pa.string(), "`member_joined`, `member_left`, `member_expired`, `member_fenced`, "
           "`subscription_changed` or `unknown`: the earliest cause seen since the previous episode."),
    column("trigger_member_id", pa.string(), "The member the trigger is about."),
    column("evidence", pa.string(), "`opened by <request or response>; closed by <response>`."),
)

E2E_LATENCY = table(
    "End-to-end latency per window (of the delivery), topic, partition and consumer: from the Produce request that "
    "wrote an offset to the first Fetch or ShareFetch response that delivered it to that consumer.",
    column("window_start", TS, "Window start."),
    column("window_end", TS, "Window end (exclusive)."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("group_id", pa.string(), "Consuming group (share group, or the group its fetches are linked to)."),
    column("client_id", pa.string(), "Consuming client id, for a consumer outside any group (null for groups)."),
    column("records", pa.int64(), "Offsets delivered to this consumer for the first time in the window."),
    column("produce_seen", pa.int64(), "Of those, offsets whose Produce request and response are in the capture: the "
           "percentiles are over these."),
    column("produce_missing", pa.int64(), "Offsets delivered whose Produce the capture lacks (written before the "
           "capture or on another broker's wire): not measured."),
    column("p50_ms", pa.float64(), "Median produce-to-delivery time, milliseconds (exact, by nearest rank, as are the "
                                   "other percentiles here)."),
    column("p95_ms", pa.float64(), "95th percentile, milliseconds."),
    column("p99_ms", pa.float64(), "99th percentile, milliseconds."),
    column("max_ms", pa.float64(), "Maximum, milliseconds."),
    column("create_time_p50_ms", pa.float64(), "Median time from the records' own timestamps (CreateTime, as the "
           "producer set them) to delivery, with `records/` only: covers the offsets whose Produce is missing too."),
    column("create_time_p99_ms", pa.float64(), "99th percentile of the same."),
)

OWNERSHIP_CONFLICTS = table(
    "A partition owned by two members of one group at overlapping times (rules under \"Ownership conflicts\").",
    column("kind", pa.string(), "`classic_group`, `consumer_group` or `streams_group`."),
    column("group_id", pa.string(), "Group id."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("source", pa.string(), "`assignment` (two assignments not yet revoked) or `fetch` (a member fetched the "
           "partition while another owned it)."),
    column("first_member_id", pa.string(), "The stale owner: handed the partition first, or fetching it unowned."),
    column("first_client_id", pa.string(), "Its client id."),
    column("second_member_id", pa.string(), "The member the partition was handed to meanwhile."),
    column("second_client_id", pa.string(), "Its client id."),
    column("overlap_start", TS, "Start of the overlap."),
    column("overlap_end", TS, "End of the overlap (for `fetch`: the last such fetch response)."),
    column("overlap_s", pa.float64(), "`overlap_end - overlap_start`, seconds."),
    column("fetches", pa.int64(), "Fetch responses that carried the partition to the stale member during the overlap "
           "(`assignment` rows: 0 when it only released late; `fetch` rows: at least 1)."),
    column("first_evidence", pa.string(), "How the stale owner got the partition and what ended it (or its fetches)."),
    column("second_evidence", pa.string(), "The response that handed the partition to the other member."),
)

THROUGHPUT_DATA = table(
    "throughput: record data per time window, topic, partition, client and broker.",
    column("window_start", TS, "Window start."),
    column("window_end", TS, "Window end (exclusive)."),
    column("direction", pa.string(), "`produce`, `fetch`, `share_fetch` or `replication` (a follower's Fetch: a "
           "broker replicating a partition, a controller the metadata log; not consumption)."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("client_id", pa.string(), "Client id."),
    column("broker_addr", pa.string(), "Broker endpoint."),
    column("batches", pa.int64(), "Record batches."),
    column("records", pa.int64(), "Records."),
    column("bytes", pa.int64(), "Batch bytes on the wire."),
)

THROUGHPUT_REQUESTS = table(
    "throughput: requests per time window, api and broker, with latency percentiles and errors.",
    column("window_start", TS, "Window start."),
    column("window_end", TS, "Window end (exclusive)."),
    column("api_key", pa.int16(), "Api key."),
    column("api_name", pa.string(), "Api name."),
    column("broker_addr", pa.string(), "Broker endpoint."),
    column("requests", pa.int64(), "Frames (request/response pairs and unpaired halves)."),
    column("errors", pa.int64(), "Responses with a non-zero error code."),
    column("error_rate", pa.float64(), "`errors / requests`."),
    column("unpaired", pa.int64(), "Unpaired halves."),
    column("request_bytes", pa.int64(), "Request bytes."),
    column("response_bytes", pa.int64(), "Response bytes."),
    column("latency_p50_us", pa.int64(), "Median latency (exact, by nearest rank), microseconds."),
    column("latency_p95_us", pa.int64(), "95th percentile latency, microseconds."),
    column("latency_p99_us", pa.int64(), "99th percentile latency, microseconds."),
    column("latency_max_us", pa.int64(), "Maximum latency."),
)

THROUGHPUT_LATENCY = table(
    "throughput: request latency per api and broker over the whole capture, as exact percentiles.",
    column("api_key", pa.int16(), "Api key."),
    column("api_name", pa.string(), "Api name."),
    column("broker_addr", pa.string(), "Broker endpoint."),
    column("requests", pa.int64(), "Frames (request/response pairs and unpaired halves)."),
    column("answered", pa.int64(), "Frames with a latency (both halves captured)."),
    column("errors", pa.int64(), "Responses with a non-zero error code."),
    column("latency_p50_us", pa.float64(), "Median latency of the answered frames, microseconds (exact: linear "
           "interpolation between the two nearest latencies)."),
    column("latency_p95_us", pa.float64(), "95th percentile latency (exact)."),
    column("latency_p99_us", pa.float64(), "99th percentile latency (exact)."),
    column("latency_max_us", pa.int64(), "Maximum latency."),
)

THROUGHPUT_LAG = table(
    "throughput: consumer lag per time window, where consumers' fetch responses carry high watermarks (followers' "
    "replication fetches are not consumers).",
    column("window_start", TS, "Window start."),
    column("window_end", TS, "Window end (exclusive)."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("client_id", pa.string(), "Fetching client id."),
    column("high_watermark", pa.int64(), "Highest high watermark seen in the window."),
    column("next_offset", pa.int64(), "Highest `last_offset + 1` fetched in the window."),
    column("lag", pa.int64(), "`high_watermark - next_offset` (records behind at the window's end)."),
)

SHARE_DELIVERY = pa.struct([
    pa.field("member_id", pa.string()), pa.field("client_id", pa.string()),
    pa.field("delivery_count", pa.int32()), pa.field("acquired_ts", TS), pa.field("lock_ms", pa.int32()),
    pa.field("ack_type", pa.string()), pa.field("ack_ts", TS), pa.field("ack_error", pa.string()),
    pa.field("end", pa.string()),
])

SHARE_RECORDS = table(
    "share_records: the KIP-932 share-partition state machine rebuilt from the wire, one row per group, topic, "
    "partition and offset range whose history is identical (only offsets the capture saw acquired).",
    column("group_id", pa.string(), "Share group."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("first_offset", pa.int64(), "First offset of the range."),
    column("last_offset", pa.int64(), "Last offset of the range, inclusive."),
    column("records", pa.int64(), "Offsets in the range."),
    column("deliveries", pa.list_(SHARE_DELIVERY),
           "Every acquisition in time order: `member_id`, `client_id`, the `delivery_count` the broker stated, "
           "`acquired_ts`, `lock_ms` (the ShareFetch response's `acquisition_lock_timeout_ms`), the member's first "
           "acknowledgement of it (`ack_type`, `ack_ts`, `ack_error`: the error its response named, null when "
           "accepted) and how the delivery `end`ed: `accepted`, `released`, `rejected`, `gap` (an ack the broker "
           "took), `lock_timeout` (no ack taken before the lock ran out), `reacquired` (acquired again before the "
           "lock could have run out, counted from the ShareFetch request, with no ack taken: the broker took the "
           "records back early, e.g. the share session closed), "
           "`held` (still locked when the capture ends)."),
    column("delivered", pa.int64(), "Acquisitions the capture holds (size of `deliveries`)."),
    column("max_delivery_count", pa.int32(), "The broker's highest delivery count for the range."),
    column("members", NAMES, "Members the range was handed to, in the order of their first acquisition."),
    column("lock_expiries", pa.int64(), "Deliveries that ended `lock_timeout` or `reacquired`."),
    column("final_state", pa.string(),
           "As far as the capture shows: `acknowledged` (accepted), `archived` (rejected, or the delivery limit), "
           "`available` (released or timed out under a known delivery limit), `acquired` (locked at capture end), "
           "`unknown` (released or timed out at a count the capture cannot place against the limit)."),
    column("archive_reason", pa.string(),
           "For `archived`: `rejected`, `delivery_limit`, `gap` (acknowledged as holding no record) or `unknown` "
           "(the broker stopped handing it out below the delivery limit)."),
    column("delivery_limit", pa.int32(), "The group's delivery count limit, when known."),
    column("delivery_limit_source", pa.string(),
           "`describe_configs` (a DescribeConfigs response: group `share.delivery.count.limit` or broker "
           "`group.share.delivery.count.limit`), `inferred` (the highest delivery count at which a range of the "
           "group was released and never came back while the partition went on being acquired), null when unknown."),
    column("first_acquired_ts", TS, "First acquisition in the capture."),
    column("terminal_ts", TS, "When the range became terminal (the ack taken, or the end of its last delivery "
                              "for the delivery limit); null when not terminal in the capture."),
    column("time_to_terminal_ms", pa.float64(), "`terminal_ts - first_acquired_ts` in milliseconds."),
    column("holder", pa.string(), "Member holding the lock at capture end (`final_state` = `acquired`)."),
)

SHARE_SPSO_WINDOWS = table(
    "share_spso: the share-partition start offset (SPSO) per time window, as the wire shows it: the lowest "
    "offset acquired in the capture that is not yet terminal, and share lag.",
    column("window_start", TS, "Window start."),
    column("window_end", TS, "Window end (exclusive); values are as of this instant."),
    column("group_id", pa.string(), "Share group."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("spso", pa.int64(), "Lowest offset not yet terminal (every lower offset the capture saw is terminal)."),
    column("log_end_offset", pa.int64(),
           "Highest offset + 1 the capture shows the partition holding (Produce responses, fetched and acquired "
           "batches, high watermarks)."),
    column("terminal_above_spso", pa.int64(), "Records above the SPSO already terminal: they wait for it to move."),
    column("share_lag", pa.int64(), "Records from the SPSO to the log end not yet terminal "
                                    "(`log_end_offset - spso - terminal_above_spso`)."),
    column("pinned", pa.bool_(), "True when a range holds the SPSO while later records are terminal."),
)

SHARE_SPSO_PINNED = table(
    "share_spso: episodes where one range pins the SPSO while later records are already terminal.",
    column("group_id", pa.string(), "Share group."),
    column("topic", pa.string(), "Topic."),
    column("partition", pa.int32(), "Partition."),
    column("pinned_offset", pa.int64(), "First offset of the range holding the SPSO."),
    column("pinned_last_offset", pa.int64(), "Last offset of that range (a `share_records` row)."),
    column("holder", pa.string(), "Member of the pinned range's last delivery acquired before the episode ended."),
    column("holder_client_id", pa.string(), "That member's client id."),
    column("start_ts", TS, "When the SPSO reached the range while a later record was terminal."),
    column("end_ts", TS, "When the range became terminal and the SPSO moved on; null when still pinned at capture "
                         "end."),
    column("duration_ms", pa.float64(), "`end_ts` (else the capture's end) minus `start_ts`, milliseconds."),
    column("records_behind", pa.int64(), "Terminal records above the range by the episode's end: what the SPSO "
                                         "could not pass."),
    column("pinned_state", pa.string(), "The pinned range's `final_state`."),
    column("max_delivery_count", pa.int32(), "The pinned range's highest delivery count."),
    column("lock_expiries", pa.int64(), "The pinned range's lock expiries."),
)

TABLES: dict[str, pa.Schema] = {
    "sessions/connections": CONNECTIONS,
    "sessions/groups": GROUPS,
    "sessions/commits": COMMITS,
    "sessions/members": MEMBERS,
    "sessions/producers": PRODUCERS,
    "sessions/transactions": TRANSACTIONS,
    "sessions/share_members": SHARE_MEMBERS,
    "sessions/fetch_links": FETCH_LINKS,
    "sessions/epoch_events": EPOCH_EVENTS,
    "fenced_epochs": FENCED_EPOCHS,
    "duplicate_deliveries": DUPLICATE_DELIVERIES,
    "rebalances": REBALANCES,
    "e2e_latency": E2E_LATENCY,
    "ownership_conflicts": OWNERSHIP_CONFLICTS,
    "throughput/data": THROUGHPUT_DATA,
    "throughput/requests": THROUGHPUT_REQUESTS,
    "throughput/latency": THROUGHPUT_LATENCY,
    "throughput/lag": THROUGHPUT_LAG,
    "share_records": SHARE_RECORDS,
    "share_spso/windows": SHARE_SPSO_WINDOWS,
    "share_spso/pinned": SHARE_SPSO_PINNED,
}

SUMMARY_KEYS: dict[str, str] = {
    "frames": "Frames (request/response pairs and unpaired halves) read.",
    "capture_start": "First request time (ISO 8601, UTC), null when empty.",
    "capture_end": "Last request or response time.",
    "capture_span_s": "Seconds between them.",
    "connections": "Rows of `sessions/connections`.",
    "clients": "Distinct client ids.",
    "brokers": "Distinct broker endpoints.",
    "groups": "Rows of `sessions/groups`: every group a request names, commit-only groups included.",
    "commit_only_groups": "Of those, groups that commit offsets but that no member joins in the capture.",
    "members": "Rows of `sessions/members` plus `sessions/share_members`.",
    "producers": "Rows of `sessions/producers`.",
    "transactions": "Rows of `sessions/transactions` by outcome: `{commit, abort, fenced, open}`.",
    "fenced_epochs": "Rows of `fenced_epochs`.",
    "fenced_epochs_by_kind": "Rows of `fenced_epochs` per kind (`inferred` ones counted under `inferred`, too).",
    "fenced_epochs_by_cause": "Rows of `fenced_epochs` per `cause` (`not_shown` where the capture does not show it).",
    "duplicate_ranges": "Rows of `duplicate_deliveries` per kind that are neither `possible` nor `wire_only`: the "
                        "proven duplicates (the dashboard's duplicate card counts the same rows).",
    "duplicate_records": "Records delivered again per kind (`classic_group`, `consumer_group`, `share_group`, "
                         "`producer`, `none` for consumers outside groups): sum of `records * (deliveries - 1)` "
                         "over rows that are neither `possible` nor `wire_only`.",
    "wire_duplicate_records": "The same including `wire_only` rows (records fetched twice on the wire).",
    "wire_only_ranges": "Rows of `duplicate_deliveries` that are `wire_only` (and not `possible`).",
    "possible_ranges": "Rows of `duplicate_deliveries` that are `possible` (producer re-sends by record hash).",
    "possible_duplicate_records": "Records possibly re-sent by non-idempotent producers (from record hashes; not in "
                                  "`duplicate_records`).",
    "rebalances": "Per group: `{episodes, stalled_s, fetch_gap_s}` from `rebalances` (rebalance count, total time "
                  "without an owner, and total of the episodes' longest fetch gaps).",
    "e2e_p99_ms": "Per topic: the worst window's `p99_ms` of `e2e_latency`.",
    "ownership_conflicts": "Rows of `ownership_conflicts`.",
    "produced_records": "Records in Produce requests the leader accepted (a batch refused, say "
                        "NOT_LEADER_OR_FOLLOWER while leadership moves, and sent again counts once).",
    "fetched_records": "Records in consumers' Fetch and ShareFetch responses (not followers' replication Fetches).",
    "errors": "Responses with a non-zero error code.",
    "errors_by_name": "Those responses per error name (`{NOT_COORDINATOR: 3, ...}`).",
    "anomalies": "Rows of the dissector's `anomalies/`.",
    "window": "The throughput window used.",
    "share_records": "Rows of `share_records` per `final_state`.",
    "share_poison_ranges": "Rows of `share_records` archived by the delivery limit (`archive_reason` = "
                           "`delivery_limit`): the poison records.",
    "share_poison_records": "Records in those rows.",
    "share_lock_expiries": "Deliveries of `share_records` that ended `lock_timeout` or `reacquired`.",
    "share_pinned_episodes": "Rows of `share_spso/pinned`.",
}


def document() -> str:
    """docs/schemas.md's section for the report: its tables, then the keys of summary.json."""
    keys = "\n".join(f"| `{k}` | {v} |" for k, v in SUMMARY_KEYS.items())
    return f"{markdown(TABLES)}\n#### `summary.json`\n\n| key | meaning |\n|---|---|\n{keys}"


if __name__ == "__main__":
    if "--markdown" in sys.argv:
        print(document())
