"""Ground truth of a sample capture: what the clients did and saw, written by the workload that made the capture.

A truth file (`samples/<name>.truth.json`) is one JSON object; these keys are always present:

- `sample`, `description`, `synthetic` (bool), `format` (1), `generated_by` (module), `capture` (pcapng file name),
  `started_at` (UTC wall clock of t=0 for every `t` below; for synthetic samples the generation time, not the
  capture's simulated clock)
- `broker`: {`kind`: `tansu` | `apache_kafka` | `librdkafka_mock` | `tansu+librdkafka_mock`, `versions`: {...}}
- `broker_ports`: ports the brokers listened on (the dissector's `--port` list; the capture filter names only them)
- `broker_ports_by_kind`: {`tansu`: [...], `apache_kafka`: [...], `librdkafka_mock`: [...]} (which broker each port
  belongs to)
- `tshark_comparable`: true when every request stays within versions tshark 4.0 decodes (Kafka 2.5)
- `clients`: [{`client_id`, `library`, `role`, `config`}]: every client of the run, with the settings that matter
  (role `broker`: Apache Kafka's own clients on its listener, whose requests its request log counts)
- `requests`: {`source`, `exact`, `by_client`: {client_id: {api_name: n}}, `by_api`: {api_name: n}}: requests each
  client sent (client-side logs, exact), and for mock brokers `broker_by_api` (what the mock received, exact)
- `response_errors`: {client_id: {api_name: {error_name: n}}}: non-zero response errors the client decoded
  (kafka-python clients; librdkafka clients report theirs through `events`)
- `topics`: {topic: {`partitions`: n}}
- `produced`: [{`client_id`, `topic`, `partition`, `records`, `first_offset`, `last_offset`, `compression`,
  `producer_id`, `producer_epoch`, `transactional_id`, `outcome`}]: acknowledged records per producer and partition
  (`outcome`: `acked`, `committed` or `aborted` for transactional records)
- `produced_by_partition`: {"topic/partition": records}: totals of `produced`
- `consumed`: [{`client_id`, `group_id`, `kind`, `topic`, `partition`, `records`, `offsets`: [[first, last], ...]}]:
  what each consumer's application received (offset ranges, inclusive; repeated ranges mean re-deliveries)
- `fenced_epochs`: [{`kind`, `group_id`, `transactional_id`, `member_id`, `producer_id`, `error_name`, `client_id`,
  `t`, `detail`}]: members and producers the broker fenced, when (seconds after `started_at`), with the error the
  client was answered
- `duplicate_deliveries`: [{`kind`, `group_id`, `topic`, `partition`, `first_offset`, `last_offset`, `deliveries`}]:
  offset ranges the group's members received more than once (`deliveries` = times received)
- `duplicate_records`: {kind: records delivered more than once (counted once per extra delivery)}
- `producers`: [{`client_id`, `producer_id`, `producer_epoch`, `transactional_id`, `idempotent`}]
- optional, per workload: `sequences` (idempotent producers: first/last sequence per partition), `transactions`
  ([{`client_id`, `transactional_id`, `producer_id`, `producer_epoch`, `outcome`, `records`}]), `groups`
  (per group: generations or member epochs each member reached), `isolation` (what read_committed consumers saw),
  `share_archived` ([{`topic`, `partition`, `offset`, `delivery_count`}]: records the share group archived after
  their last allowed delivery)
- `share_deliveries`: [{`client_id`, `group_id`, `topic`, `partition`, `offset`, `delivery_count`, `ack`}]
  (`ack`: `accept`, `release` or `reject`; null when the consumer held the record and never acknowledged it)
- `events`: [{`t`, `client_id`, `what`, ...}]: the script's timeline (joins, leaves, stalls, errors), seconds from
  start; member processes also log `wall` (Unix seconds) and their rebalance callbacks (`partitions_revoked`,
  `partitions_assigned`, with `member_id`, `partitions` as `topic:partition`, and for kafka-python `generation_id`)
- optional `cancelled_requests`: {client_id: {api_name: n}}: of `requests.by_client`, the requests a client
  cancelled in flight because their broker disconnected (a node shutting down): written to the socket or not, the
  client cannot tell, so the capture holds between `by_client - cancelled` and `by_client` of them
- optional `broker_requests`: {`source`, `exact`: false, `by_client`}: a cluster's own requests (replication
  Fetches, the KRaft quorum's) from the brokers' request logs: approximate, as `source` says why
- optional `restarts`, `producer_metrics`: when a node was stopped and started; a Java producer's own counters
- optional `record_times`: {`sent`: [[topic, partition, offset, wall]], `received`: [[client_id, group_id, topic,
  partition, offset, wall]]}: when the producer handed each record to its library and when a consumer's poll
  returned it (Unix seconds), for end-to-end latency
- `notes`: where this broker differs from Apache Kafka, as observed in this run

`kind` values: `classic_group`, `consumer_group` (KIP-848), `streams_group` (KIP-1071), `share_group` (KIP-932),
`producer`, `none` (assign()).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

_NAMES = (
    "Produce Fetch ListOffsets Metadata LeaderAndIsr StopReplica UpdateMetadata ControlledShutdown OffsetCommit "
    "OffsetFetch FindCoordinator JoinGroup Heartbeat LeaveGroup SyncGroup DescribeGroups ListGroups SaslHandshake "
    "ApiVersions CreateTopics DeleteTopics DeleteRecords InitProducerId OffsetForLeaderEpoch AddPartitionsToTxn "
    "AddOffsetsToTxn EndTxn WriteTxnMarkers TxnOffsetCommit DescribeAcls CreateAcls DeleteAcls DescribeConfigs "
    "AlterConfigs AlterReplicaLogDirs DescribeLogDirs SaslAuthenticate CreatePartitions CreateDelegationToken "
    "RenewDelegationToken ExpireDelegationToken DescribeDelegationToken DeleteGroups ElectLeaders "
    "IncrementalAlterConfigs AlterPartitionReassignments ListPartitionReassignments OffsetDelete "
    "DescribeClientQuotas AlterClientQuotas DescribeUserScramCredentials AlterUserScramCredentials Vote "
    "BeginQuorumEpoch EndQuorumEpoch DescribeQuorum AlterPartition UpdateFeatures Envelope FetchSnapshot "
    "DescribeCluster DescribeProducers BrokerRegistration BrokerHeartbeat UnregisterBroker DescribeTransactions "
    "ListTransactions AllocateProducerIds ConsumerGroupHeartbeat ConsumerGroupDescribe ControllerRegistration "
    "GetTelemetrySubscriptions PushTelemetry AssignReplicasToDirs ListConfigResources DescribeTopicPartitions "
    "ShareGroupHeartbeat ShareGroupDescribe ShareFetch ShareAcknowledge AddRaftVoter RemoveRaftVoter UpdateRaftVoter "
    "InitializeShareGroupState ReadShareGroupState WriteShareGroupState DeleteShareGroupState "
    "ReadShareGroupStateSummary StreamsGroupHeartbeat StreamsGroupDescribe DescribeShareGroupOffsets "
    "AlterShareGroupOffsets DeleteShareGroupOffsets"
).split()
# Kafka's api names by key (Apache Kafka 4.1 message definitions); samples keep their own copy so that generating
# a sample never depends on the dissector under test.
API_NAMES: dict[int, str] = dict(enumerate(_NAMES))
API_KEYS: dict[str, int] = {name: key for key, name in API_NAMES.items()}

GROUP_KINDS = ("classic_group", "consumer_group", "streams_group", "share_group")
KINDS = (*GROUP_KINDS, "producer", "none")
REQUIRED_KEYS = (
    "sample", "description", "synthetic", "format", "generated_by", "capture", "started_at", "broker",
    "broker_ports", "broker_ports_by_kind",
    "tshark_comparable", "clients", "requests", "response_errors", "topics", "produced", "produced_by_partition",
    "consumed", "fenced_epochs", "duplicate_deliveries", "duplicate_records", "producers", "share_deliveries",
    "events", "notes",
)


def api_name(key: int) -> str:
    return API_NAMES.get(key, f"unknown_{key}")


def offset_ranges(offsets: list[int]) -> list[list[int]]:
    """Consecutive runs of offsets in the order received: [3,4,5,9,3,4] -> [[3,5],[9,9],[3,4]]."""
    ranges: list[list[int]] = []
    for off in offsets:
        if ranges and off == ranges[-1][1] + 1:
            ranges[-1][1] = off
        else:
            ranges.append([off, off])
    return ranges


def duplicate_ranges(offsets_seen: list[int]) -> list[tuple[int, int, int]]:
    """(first, last, deliveries) runs of offsets received more than once, merged while the count stays the same."""
    counts = Counter(offsets_seen)
    runs: list[tuple[int, int, int]] = []
    for off in sorted(o for o, n in counts.items() if n > 1):
        n = counts[off]
        if runs and runs[-1][1] == off - 1 and runs[-1][2] == n:
            runs[-1] = (runs[-1][0], off, n)
        else:
            runs.append((off, off, n))
    return runs


class Truth:
    """Accumulates a sample's ground truth while its workload runs (thread-safe enough: CPython appends)."""

    def __init__(self, sample: str, description: str, generated_by: str) -> None:
        self.t0 = time.monotonic()
        self.t0_wall = time.time()  # the same instant on the wall clock (member processes report wall times)
        self.doc: dict[str, Any] = {
            "sample": sample, "description": description, "synthetic": False, "format": 1,
            "generated_by": generated_by, "capture": f"{sample}.pcapng",
            "started_at": datetime.fromtimestamp(self.t0_wall, timezone.utc).isoformat(timespec="milliseconds"),
            "broker": {"kind": "", "versions": {}}, "broker_ports": [], "broker_ports_by_kind": {},
            "tshark_comparable": False,
            "clients": [], "requests": {}, "response_errors": {}, "topics": {}, "produced": [],
            "produced_by_partition": {}, "consumed": [], "fenced_epochs": [], "duplicate_deliveries": [],
            "duplicate_records": {}, "producers": [], "share_deliveries": [], "events": [], "notes": [],
        }
        # (client_id, group_id, kind, topic, partition) -> offsets in the order the application received them
        self._consumed: dict[tuple, list[int]] = defaultdict(list)
        # (client_id, topic, partition, compression, pid, epoch, txn_id, outcome) -> offsets acknowledged
        self._produced: dict[tuple, list[int]] = defaultdict(list)

    def client(self, client_id: str, library: str, role: str, **config: Any) -> str:
        self.doc["clients"].append({"client_id": client_id, "library": library, "role": role, "config": config})
        return client_id

    def event(self, client_id: str, what: str, **detail: Any) -> None:
        self.doc["events"].append({"t": round(time.monotonic() - self.t0, 3), "client_id": client_id, "what": what,
                                   **detail})

    def topic(self, name: str, partitions: int) -> None:
        self.doc["topics"][name] = {"partitions": partitions}

    def produced(self, client_id: str, topic: str, partition: int, offset: int, *, compression: str = "none",
                 producer_id: int = -1, producer_epoch: int = -1, transactional_id: str | None = None,
                 outcome: str = "acked") -> None:
        key = (client_id, topic, partition, compression, producer_id, producer_epoch, transactional_id, outcome)
        self._produced[key].append(offset)

    def consumed(self, client_id: str, group_id: str | None, kind: str, topic: str, partition: int,
                 offset: int) -> None:
        self._consumed[(client_id, group_id, kind, topic, partition)].append(offset)

    def fenced(self, kind: str, error_name: str, client_id: str, *, group_id: str | None = None,
               transactional_id: str | None = None, member_id: str | None = None, producer_id: int | None = None,
               detail: str = "", t: float | None = None) -> None:
        self.event(client_id, "fenced", error_name=error_name)
        if t is not None:
            self.doc["events"][-1]["t"] = t
        self.doc["fenced_epochs"].append({
            "kind": kind, "group_id": group_id, "transactional_id": transactional_id, "member_id": member_id,
            "producer_id": producer_id, "error_name": error_name, "client_id": client_id,
            "t": self.doc["events"][-1]["t"], "detail": detail})

    def producer(self, client_id: str, producer_id: int, producer_epoch: int, transactional_id: str | None = None,
                 idempotent: bool = True) -> None:
        self.doc["producers"].append({"client_id": client_id, "producer_id": producer_id,
                                      "producer_epoch": producer_epoch, "transactional_id": transactional_id,
                                      "idempotent": idempotent})

    def share_delivery(self, client_id: str, group_id: str, topic: str, partition: int, offset: int,
                       delivery_count: int, ack: str | None) -> None:
        self.doc["share_deliveries"].append({"client_id": client_id, "group_id": group_id, "topic": topic,
                                             "partition": partition, "offset": offset,
                                             "delivery_count": delivery_count, "ack": ack})
        self.consumed(client_id, group_id, "share_group", topic, partition, offset)

    def note(self, text: str) -> None:
        if text not in self.doc["notes"]:
            self.doc["notes"].append(text)

    def finish(self, requests: dict[str, Any], response_errors: dict[str, Any]) -> dict[str, Any]:
        """Fold the accumulated offsets into the documented lists and derive duplicates."""
        doc = self.doc
        by_api: Counter = Counter()
        for per_api in requests.get("by_client", {}).values():
            by_api.update(per_api)
        doc["requests"] = {**requests, "by_api": dict(sorted(by_api.items()))}
        doc["response_errors"] = response_errors
        produced, per_tp = [], Counter()
        for (cid, topic, part, comp, pid, epoch, txn, outcome), offs in sorted(self._produced.items(), key=str):
            produced.append({"client_id": cid, "topic": topic, "partition": part, "records": len(offs),
                             "first_offset": min(offs), "last_offset": max(offs), "compression": comp,
                             "producer_id": pid, "producer_epoch": epoch, "transactional_id": txn,
                             "outcome": outcome})
            per_tp[f"{topic}/{part}"] += len(offs)
        doc["produced"], doc["produced_by_partition"] = produced, dict(sorted(per_tp.items()))
        consumed = []
        per_group: dict[tuple, list[int]] = defaultdict(list)
        for (cid, gid, kind, topic, part), offs in sorted(self._consumed.items(), key=str):
            consumed.append({"client_id": cid, "group_id": gid, "kind": kind, "topic": topic, "partition": part,
                             "records": len(offs), "offsets": offset_ranges(offs)})
            if gid is not None and kind in GROUP_KINDS:
                per_group[(kind, gid, topic, part)].extend(offs)
        doc["consumed"] = consumed
        dups, dup_records = [], Counter()
        for (kind, gid, topic, part), offs in sorted(per_group.items()):
            for first, last, n in duplicate_ranges(offs):
                dups.append({"kind": kind, "group_id": gid, "topic": topic, "partition": part,
                             "first_offset": first, "last_offset": last, "deliveries": n})
                dup_records[kind] += (last - first + 1) * (n - 1)
        doc["duplicate_deliveries"], doc["duplicate_records"] = dups, dict(dup_records)
        doc["events"].sort(key=lambda e: e["t"])
        return doc

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.doc, indent=1, sort_keys=False) + "\n")


def request_bounds(doc: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
    """{(client_id, api_name): (fewest, most)} requests of the truth's clients the capture holds: exactly what they
    logged, but for the ones they cancelled in flight (`cancelled_requests`), which may never have been written."""
    cancelled = doc.get("cancelled_requests", {})
    return {(c, api): (n - cancelled.get(c, {}).get(api, 0), n)
            for c, per_api in doc["requests"].get("by_client", {}).items() for api, n in per_api.items()}


def validate(doc: dict[str, Any]) -> list[str]:
    """Structural problems of a truth document (empty list when it is well formed)."""
    problems = [f"missing key {k}" for k in REQUIRED_KEYS if k not in doc]
    if problems:
        return problems
    if not isinstance(doc["broker_ports"], list) or not all(isinstance(p, int) for p in doc["broker_ports"]):
        problems.append("broker_ports must be a list of ints")
    for e in doc["fenced_epochs"]:
        if e.get("kind") not in KINDS or not e.get("error_name") or not isinstance(e.get("t"), (int, float)):
            problems.append(f"bad fenced_epochs entry {e}")
    for d in doc["duplicate_deliveries"]:
        if d.get("kind") not in GROUP_KINDS or d["first_offset"] > d["last_offset"] or d["deliveries"] < 2:
            problems.append(f"bad duplicate_deliveries entry {d}")
    for kind, n in doc["duplicate_records"].items():
        if kind not in GROUP_KINDS or n <= 0:
            problems.append(f"bad duplicate_records {kind}={n}")
    for p in doc["produced"]:
        if p["records"] <= 0 or p["first_offset"] > p["last_offset"]:
            problems.append(f"bad produced entry {p}")
    for c in doc["consumed"]:
        if c["kind"] not in KINDS or sum(b - a + 1 for a, b in c["offsets"]) != c["records"]:
            problems.append(f"bad consumed entry {c}")
    for client, per_api in doc["requests"].get("by_client", {}).items():
        for api, n in per_api.items():
            if api not in API_KEYS or not isinstance(n, int) or n <= 0:
                problems.append(f"bad request count {client}/{api}={n}")
    return problems
