"""A hand-made analysis report, written with pyarrow to `pipelines.schema`, for the dashboard's tests.

A small but complete story: a transactional producer whose zombie instance is fenced (PRODUCER_FENCED), a KIP-848
member fenced with FENCED_MEMBER_EPOCH whose partitions are re-fetched by another member, a classic group with an
inferred (zombie) fencing, a share group that redelivers a released range, and a client whose id is an HTML
injection attempt.
"""

from __future__ import annotations

import json
import itertools
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatap.pipelines.schema import TABLES

T0 = datetime(2026, 11, 22, 10, 0, 0, tzinfo=timezone.utc)
SPAN_S = 90
BROKER = "127.0.0.1:9092"
HOSTILE = '<script>alert("x")</script>'
FENCED_MEMBER = "ZmVuY2VkX21lbWJlcl9CX18"
LIVE_MEMBER = "Qk5hY2tldEFfbWVtYmVyMDE"
REJOINED_MEMBER = "cmVqb2luZWRfbWVtYmVyX0I"
CLASSIC_MEMBER = "legacy-1-6f1c2a"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def conn(port: int) -> str:
    return f"127.0.0.1:{port}>{BROKER}@{int(T0.timestamp() * 1e6)}"


def _connections() -> list[dict]:
    rows = []
    for port, client, apis in [(50001, "orders-producer", {"Produce": 400, "EndTxn": 4, "InitProducerId": 2}),
                               (50002, "orders-producer", {"Produce": 12, "InitProducerId": 1}),
                               (50003, "consumer-a", {"ConsumerGroupHeartbeat": 30}),
                               (50004, "consumer-b", {"ConsumerGroupHeartbeat": 25}),
                               (50005, "consumer-a", {"Fetch": 300, "Metadata": 2}),
                               (50006, HOSTILE, {"Fetch": 80, "JoinGroup": 2, "LeaveGroup": 1}),
                               (50007, "share-1", {"ShareFetch": 60, "ShareGroupHeartbeat": 12})]:
        rows.append({
            "conn_id": conn(port), "client_addr": f"127.0.0.1:{port}", "broker_addr": BROKER,
            "client_host": "127.0.0.1", "client_id": client, "client_ids": [client], "first_seen": at(1),
            "last_seen": at(SPAN_S - 1), "requests": sum(apis.values()), "requests_by_api": list(apis.items()),
            "request_bytes": 1000 * sum(apis.values()), "response_bytes": 700 * sum(apis.values()),
            "errors": 1 if port in (50002, 50004) else 0, "unpaired": 0, "latency_p50_us": 900 + port % 7 * 100,
            "latency_p99_us": 8000 + port % 5 * 1000, "handshake_rtt_us": 120 + port % 3 * 40,
            "retransmissions": 3 if port == 50005 else 0, "out_of_order": 1 if port == 50005 else 0,
            "resets": 1 if port == 50006 else 0, "zero_windows": 2 if port == 50001 else 0,
        })
    return rows


def _members() -> list[dict]:
    base = {"kind": "consumer_group", "group_id": "orders-cg", "client_host": "127.0.0.1", "joins": 1,
            "heartbeats": 20, "assignment_changes": 2, "generations": []}
    return [
        {**base, "member_id": LIVE_MEMBER, "client_id": "consumer-a", "conn_ids": [conn(50003)],
         "first_seen": at(5), "last_seen": at(88), "member_epochs": [1, 3, 5], "ended": "alive", "end_ts": at(88),
         "final_assignment": ["orders:0", "orders:1"], "partitions_gained": ["orders:0", "orders:1"]},
        {**base, "member_id": FENCED_MEMBER, "client_id": "consumer-b", "conn_ids": [conn(50004)],
         "first_seen": at(8), "last_seen": at(50), "member_epochs": [2, 4], "ended": "fenced", "end_ts": at(50),
         "end_error": "FENCED_MEMBER_EPOCH", "partitions_lost": ["orders:0"]},
        {**base, "member_id": REJOINED_MEMBER, "client_id": "consumer-b", "conn_ids": [conn(50004)],
         "first_seen": at(52), "last_seen": at(88), "member_epochs": [6], "ended": "alive", "end_ts": at(88)},
        {**base, "kind": "classic_group", "group_id": "legacy-grp", "member_id": CLASSIC_MEMBER, "client_id": HOSTILE,
         "conn_ids": [conn(50006)], "first_seen": at(3), "last_seen": at(70), "generations": [1, 2],
         "member_epochs": [], "ended": "left", "end_ts": at(70)},
    ]


def _producers() -> list[dict]:
    return [
        {"transactional_id": "orders-tx", "producer_id": 1000, "producer_ids": [1000], "client_id": "orders-producer",
         "client_host": "127.0.0.1", "first_seen": at(2), "last_seen": at(89), "epochs": [0, 1], "transactions": 4,
         "commits": 3, "aborts": 1, "failed_end_txns": 0, "batches": 400, "records": 4000, "bytes": 400_000,
         "refused_records": 0, "ended": "open_transaction", "end_ts": at(80), "kind": "transactional"},
        {"producer_id": 2001, "producer_ids": [2001], "client_id": "idem-producer", "client_host": "127.0.0.1",
         "first_seen": at(4), "last_seen": at(85), "epochs": [0], "transactions": 0, "commits": 0, "aborts": 0,
         "failed_end_txns": 0, "batches": 120, "records": 1200, "bytes": 90_000, "refused_records": 10,
         "ended": "active", "end_ts": at(85), "kind": "idempotent"},
        {"producer_id": -1, "producer_ids": [-1], "client_id": "plain-producer", "client_host": "127.0.0.2",
         "first_seen": at(5), "last_seen": at(60), "epochs": [], "transactions": 0, "commits": 0, "aborts": 0,
         "failed_end_txns": 0, "batches": 30, "records": 300, "bytes": 9_000, "refused_records": 0,
         "ended": "active", "end_ts": at(60), "kind": "plain"},
    ]


def _groups() -> list[dict]:
    """The report's groups as sessions/groups lists them, and a group that only commits offsets."""
    joined = [{"group_id": g, "kind": kind, "joined": True, "commit_only": False, "first_seen": at(1),
               "last_seen": at(89), "members": 2, "client_ids": ["consumer-a"], "commits": 40, "offset_fetches": 2,
               "errors": 1, "coordinator": BROKER}
              for g, kind in [("orders-cg", "consumer_group"), ("legacy-grp", "classic_group"),
                              ("share-g", "share_group")]]
    return joined + [{"group_id": "manual-assign", "kind": "classic_group", "joined": False, "commit_only": True,
                      "first_seen": at(10), "last_seen": at(70), "members": 0, "client_ids": ["assigner"],
                      "commits": 12, "offset_fetches": 1, "errors": 0, "coordinator": BROKER}]


def _commits() -> list[dict]:
    return [{"group_id": "manual-assign", "topic": "orders", "partition": p, "commits": 6, "refused": 0,
             "first_commit": at(10), "last_commit": at(70), "committed_offset": 500 + p, "member_ids": [],
             "high_watermark": 620, "commit_lag": 120 - p} for p in (0, 1)]


def _transactions() -> list[dict]:
    spans = [(0, 0, 10, 12, "commit"), (0, 1, 20, 22, "abort"), (1, 0, 35, 36, "commit"), (1, 1, 45, 47, "commit"),
             (1, 2, 80, None, "open")]
    return [{"transactional_id": "orders-tx", "producer_id": 1000, "producer_epoch": epoch, "txn_index": index,
             "start_ts": at(start), "end_ts": at(end) if end else None, "outcome": outcome,
             "end_error": "NONE" if end else None, "batches": 10, "records": 100,
             "partitions": ["orders:0", "orders:1"]}
            for epoch, index, start, end, outcome in spans]


def _share_members() -> list[dict]:
    return [
        {"group_id": "share-g", "member_id": "c2hhcmVfbWVtYmVyXzAwMQ", "client_id": "share-1",
         "client_host": "127.0.0.1", "first_seen": at(6), "last_seen": at(87), "member_epochs": [1, 2],
         "share_sessions": 1, "max_share_session_epoch": 40, "share_fetches": 41, "acquired_ranges": 20,
         "acquired_records": 200, "accepted": 180, "released": 10, "rejected": 5, "renewed": 0, "ended": "alive",
         "end_ts": at(87)},
        {"group_id": "share-g", "member_id": "c2hhcmVfbWVtYmVyXzAwMg", "client_id": "share-2",
         "client_host": "127.0.0.1", "first_seen": at(30), "last_seen": at(60), "member_epochs": [3],
         "share_sessions": 1, "max_share_session_epoch": 12, "share_fetches": 12, "acquired_ranges": 12,
         "acquired_records": 120, "accepted": 115, "released": 0, "rejected": 0, "renewed": 5, "ended": "left",
         "end_ts": at(60)},
    ]


def _fenced() -> list[dict]:
    return [
        {"kind": "consumer_group", "group_id": "orders-cg", "member_id": FENCED_MEMBER, "client_id": "consumer-b",
         "stale_epoch": 4, "current_epoch": 5, "error_code": 110, "error_name": "FENCED_MEMBER_EPOCH",
         "current_epoch_source": f"ConsumerGroupHeartbeat response corr=41 conn={conn(50003)} at {at(48)}",
         "api_key": 68, "api_name": "ConsumerGroupHeartbeat", "correlation_id": 57, "conn_id": conn(50004),
         "ts": at(50), "inferred": False, "requests": 1, "fenced_by_client_id": "consumer-a",
         "fenced_by_conn_id": conn(50003), "fenced_by_member_id": LIVE_MEMBER, "fenced_by_ts": at(48),
         "cause": "stale_epoch", "explanation": f"consumer-b (member {FENCED_MEMBER}) used epoch 4 after the "
         "coordinator had handed it 5; its ConsumerGroupHeartbeat at ... was refused FENCED_MEMBER_EPOCH."},
        {"kind": "producer", "transactional_id": "orders-tx", "producer_id": 1000, "client_id": "orders-producer",
         "stale_epoch": 0, "current_epoch": 1, "error_code": 90, "error_name": "PRODUCER_FENCED",
         "current_epoch_source": f"InitProducerId response corr=3 conn={conn(50001)} at {at(30)}",
         "api_key": 0, "api_name": "Produce", "correlation_id": 88, "conn_id": conn(50002), "ts": at(40),
         "inferred": False, "requests": 3},
        {"kind": "classic_group", "group_id": "legacy-grp", "member_id": CLASSIC_MEMBER, "client_id": HOSTILE,
         "stale_epoch": 1, "current_epoch": 2, "error_code": 0, "error_name": "NONE",
         "current_epoch_source": f"JoinGroup response corr=9 conn={conn(50006)} at {at(33)}", "api_key": 8,
         "api_name": "OffsetCommit", "correlation_id": 12, "conn_id": conn(50006), "ts": at(35), "inferred": True,
         "requests": 2},
    ]


def duplicates() -> list[dict]:
    return [
        {"kind": "consumer_group", "group_id": "orders-cg", "topic": "orders", "partition": 0, "first_offset": 100,
         "last_offset": 149, "records": 50, "deliveries": 2, "first_delivery_ts": at(45), "redelivery_ts": at(53),
         "first_member_id": FENCED_MEMBER, "redelivery_member_id": LIVE_MEMBER, "first_conn_id": conn(50004),
         "redelivery_conn_id": conn(50005), "first_client_id": "consumer-b", "redelivery_client_id": "consumer-a",
         "cause": "fencing", "possible": False},
        {"kind": "share_group", "group_id": "share-g", "topic": "tasks", "partition": 0, "first_offset": 10,
         "last_offset": 19, "records": 10, "deliveries": 2, "first_delivery_ts": at(20), "redelivery_ts": at(24),
         "first_member_id": "c2hhcmVfbWVtYmVyXzAwMQ", "redelivery_member_id": "c2hhcmVfbWVtYmVyXzAwMg",
         "delivery_count": 2, "ack_history": [f"release@{at(22)}"], "cause": "released", "possible": False},
        {"kind": "producer", "topic": "orders", "partition": 1, "first_offset": 300, "last_offset": 309, "records": 10,
         "deliveries": 2, "first_delivery_ts": at(60), "redelivery_ts": at(61), "producer_id": 2001,
         "producer_epoch": 0, "base_sequence": 40, "original_offset": 290, "cause": "retry_appended_twice",
         "possible": False},
    ]


def _epoch_events() -> list[dict]:
    base = {"kind": "consumer_group", "group_id": "orders-cg", "api_name": "ConsumerGroupHeartbeat"}
    handed = [(LIVE_MEMBER, 1, None, 5), (FENCED_MEMBER, 2, None, 8), (LIVE_MEMBER, 3, 1, 20),
              (FENCED_MEMBER, 4, 2, 21), (LIVE_MEMBER, 5, 3, 49)]
    return [{**base, "party": f"orders-cg/{m}", "member_id": m, "epoch": e, "previous_epoch": p, "ts": at(s),
             "correlation_id": 100 + i, "conn_id": conn(50003)} for i, (m, e, p, s) in enumerate(handed)]


def _throughput() -> tuple[list[dict], list[dict], list[dict]]:
    data, requests, lag = [], [], []
    for s in range(SPAN_S):
        wave = 1 + 0.5 * math.sin(s / 7)
        window = {"window_start": at(s), "window_end": at(s + 1)}
        for direction, topic, client, records in [("produce", "orders", "orders-producer", 40),
                                                  ("produce", "payments", "idem-producer", 15),
                                                  ("fetch", "orders", "consumer-a", 35),
                                                  ("fetch", "orders", HOSTILE, 5),
                                                  ("share_fetch", "tasks", "share-1", 4)]:
            n = int(records * wave)
            data.append({**window, "direction": direction, "topic": topic, "partition": s % 2, "client_id": client,
                         "broker_addr": BROKER, "batches": max(1, n // 10), "records": n, "bytes": n * 120})
        for api_key, api, count in [(0, "Produce", 8), (1, "Fetch", 5), (68, "ConsumerGroupHeartbeat", 1),
                                    (3, "Metadata", 0 if s % 10 else 1), (78, "ShareFetch", 1)]:
            if not count:
                continue
            errors = 1 if (api == "Produce" and s == 40) or (api == "ConsumerGroupHeartbeat" and s == 50) else 0
            base = {"Produce": 2000, "Fetch": 450_000, "ConsumerGroupHeartbeat": 1500}.get(api, 800) * wave
            requests.append({**window, "api_key": api_key, "api_name": api, "broker_addr": BROKER,
                             "requests": count, "errors": errors, "error_rate": errors / count, "unpaired": 0,
                             "request_bytes": 500 * count, "response_bytes": 300 * count,
                             "latency_p50_us": int(base), "latency_p95_us": int(base * 2.5),
                             "latency_p99_us": int(base * 4), "latency_max_us": int(base * 5)})
        lag.append({**window, "topic": "orders", "partition": 0, "client_id": "consumer-a", "high_watermark": 40 * s,
                    "next_offset": 40 * s - int(30 * wave), "lag": int(30 * wave)})
    return data, requests, lag


def _latency(requests: list[dict]) -> list[dict]:
    """Whole-capture rows consistent with the windows: percentiles between the windows' typical and worst values."""
    rows = []
    for (api_key, api), windows in itertools.groupby(sorted(requests, key=lambda r: r["api_key"]),
                                                      key=lambda r: (r["api_key"], r["api_name"])):
        windows = list(windows)
        p50s = sorted(w["latency_p50_us"] for w in windows)
        rows.append({"api_key": api_key, "api_name": api, "broker_addr": BROKER,
                     "requests": sum(w["requests"] for w in windows), "answered": sum(w["requests"] for w in windows),
                     "errors": sum(w["errors"] for w in windows), "latency_p50_us": float(p50s[len(p50s) // 2]),
                     "latency_p95_us": 2.6 * p50s[len(p50s) // 2], "latency_p99_us": 4.5 * p50s[len(p50s) // 2],
                     "latency_max_us": max(w["latency_max_us"] for w in windows)})
    return rows


def summary() -> dict:
    return {"frames": 930, "capture_start": at(0).isoformat(), "capture_end": at(SPAN_S).isoformat(),
            "capture_span_s": float(SPAN_S), "connections": 7, "clients": 6, "brokers": 1, "groups": 4,
            "commit_only_groups": 1, "members": 6, "producers": 3,
            "transactions": {"commit": 3, "abort": 1, "open": 1}, "fenced_epochs": 3,
            "fenced_epochs_by_kind": {"consumer_group": 1, "producer": 1, "classic_group": 1, "inferred": 1},
            "duplicate_ranges": {"consumer_group": 1, "share_group": 1, "producer": 1},
            "duplicate_records": {"consumer_group": 50, "share_group": 10, "producer": 10},
            "rebalances": {"orders-cg": {"episodes": 3, "stalled_s": 1.0},
                           "legacy-grp": {"episodes": 1, "stalled_s": 0.0}},
            "e2e_p99_ms": {"orders": 2880.0, "tasks": 90.0}, "ownership_conflicts": 2,
            "produced_records": 4950, "fetched_records": 3600, "errors": 2, "anomalies": 1, "window": "1s"}


def write_table(root: Path, name: str, rows: list[dict]) -> None:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=TABLES[name]), folder / "part-00000.parquet")
    (folder / "_SUCCESS").write_text("")


def share_records() -> tuple[list[dict], list[dict], list[dict]]:
    """share_records, share_spso/windows and share_spso/pinned: a poison record pinning the SPSO of share-g."""
    def delivery(member: str, count: int, t: float, ack: str | None, end: str) -> dict:
        return {"member_id": member, "client_id": "share-1", "delivery_count": count, "acquired_ts": at(t),
                "lock_ms": 30000, "ack_type": ack, "ack_ts": at(t + 1) if ack else None, "ack_error": None,
                "end": end}
    common = {"group_id": "share-g", "topic": "tasks", "partition": 0}
    records = [
        {**common, "first_offset": 0, "last_offset": 4, "records": 5, "delivered": 1, "max_delivery_count": 1,
         "deliveries": [delivery("c2hhcmVfbWVtYmVyXzAwMQ", 1, 10, "accept", "accepted")], "lock_expiries": 0,
         "members": ["c2hhcmVfbWVtYmVyXzAwMQ"], "final_state": "acknowledged", "first_acquired_ts": at(10),
         "terminal_ts": at(11), "time_to_terminal_ms": 1000.0},
        {**common, "first_offset": 5, "last_offset": 5, "records": 1, "delivered": 3, "max_delivery_count": 3,
         "deliveries": [delivery("c2hhcmVfbWVtYmVyXzAwMQ", n, 10 + 10 * n, "release", "released") for n in (1, 2, 3)],
         "lock_expiries": 0, "members": ["c2hhcmVfbWVtYmVyXzAwMQ"], "final_state": "archived",
         "archive_reason": "delivery_limit", "delivery_limit": 3, "delivery_limit_source": "inferred",
         "first_acquired_ts": at(20), "terminal_ts": at(41), "time_to_terminal_ms": 21000.0},
        {**common, "first_offset": 6, "last_offset": 9, "records": 4, "delivered": 1, "max_delivery_count": 1,
         "deliveries": [delivery("c2hhcmVfbWVtYmVyXzAwMg", 1, 30, None, "held")], "lock_expiries": 0,
         "members": ["c2hhcmVfbWVtYmVyXzAwMg"], "final_state": "acquired", "first_acquired_ts": at(30),
         "holder": "c2hhcmVfbWVtYmVyXzAwMg"},
    ]
    windows = [{**common, "window_start": at(t), "window_end": at(t + 10), "spso": 5 if t < 40 else 6,
                "log_end_offset": 10, "terminal_above_spso": 0, "share_lag": 5 if t < 40 else 4, "pinned": False}
               for t in range(10, 80, 10)]
    pinned = [{**common, "pinned_offset": 5, "pinned_last_offset": 5, "holder": "c2hhcmVfbWVtYmVyXzAwMQ",
               "holder_client_id": "share-1", "start_ts": at(11), "end_ts": at(41), "duration_ms": 30000.0,
               "records_behind": 0, "pinned_state": "archived", "max_delivery_count": 3, "lock_expiries": 0}]
    return records, windows, pinned


def rebalances() -> list[dict]:
    """orders-cg: the fenced member's join (epochs 2-4, orders:0 moved to it), its fencing (epoch 5: the live
    member took orders:0 back while the zombie still held it, so no stall: a conflict) and its rejoin; legacy-grp's
    one generation change."""
    base = {"group_id": "orders-cg", "kind": "consumer_group"}
    hb = "ConsumerGroupHeartbeat response"
    return [
        {**base, "start_ts": at(8), "end_ts": at(21), "duration_s": 13.0, "generation_or_epoch": 4, "rounds": 3,
         "members_before": 1, "members_after": 2, "members_joined": [FENCED_MEMBER], "members_left": [],
         "partitions_moved": 1, "moved_partitions": ["orders:0"], "stalled_s": 1.0, "trigger": "member_joined",
         "trigger_member_id": FENCED_MEMBER,
         "evidence": f"opened by {hb} corr=101 conn={conn(50004)} at {at(8)}; closed by {hb} corr=103 at {at(21)}"},
        {**base, "start_ts": at(48), "end_ts": at(50), "duration_s": 2.0, "generation_or_epoch": 5, "rounds": 1,
         "members_before": 2, "members_after": 1, "members_joined": [], "members_left": [FENCED_MEMBER],
         "partitions_moved": 1, "moved_partitions": ["orders:0"], "stalled_s": 0.0, "trigger": "member_fenced",
         "trigger_member_id": FENCED_MEMBER,
         "evidence": f"opened by {hb} corr=41 conn={conn(50003)} at {at(48)}; closed by FENCED_MEMBER_EPOCH "
                     f"at {at(50)}"},
        {**base, "start_ts": at(52), "end_ts": at(53), "duration_s": 1.0, "generation_or_epoch": 6, "rounds": 1,
         "members_before": 1, "members_after": 2, "members_joined": [REJOINED_MEMBER], "members_left": [],
         "partitions_moved": 0, "moved_partitions": [], "stalled_s": 0.0, "trigger": "member_joined",
         "trigger_member_id": REJOINED_MEMBER,
         "evidence": f"opened by {hb} corr=1 conn={conn(50004)} at {at(52)}; closed by {hb} corr=2 at {at(53)}"},
        {"group_id": "legacy-grp", "kind": "classic_group", "start_ts": at(32), "end_ts": at(33.5),
         "duration_s": 1.5, "generation_or_epoch": 2, "rounds": 1, "members_before": 1, "members_after": 1,
         "members_joined": [], "members_left": [], "partitions_moved": 0, "moved_partitions": [], "stalled_s": 0.0,
         "trigger": "unknown", "trigger_member_id": CLASSIC_MEMBER,
         "evidence": f"opened by JoinGroup request corr=8 conn={conn(50006)} at {at(32)}; closed by SyncGroup "
                     f"response corr=10 at {at(33.5)}"},
    ]


def ownership_conflicts() -> list[dict]:
    """The zombie kept orders:0 from the live member's epoch 5 to its fencing, and fetched it meanwhile."""
    base = {"kind": "consumer_group", "group_id": "orders-cg", "topic": "orders", "partition": 0,
            "first_member_id": FENCED_MEMBER, "first_client_id": "consumer-b", "second_member_id": LIVE_MEMBER,
            "second_client_id": "consumer-a",
            "second_evidence": f"ConsumerGroupHeartbeat response corr=41 conn={conn(50003)} at {at(48)}"}
    return [
        {**base, "source": "assignment", "overlap_start": at(48), "overlap_end": at(50), "overlap_s": 2.0,
         "first_evidence": f"handed by ConsumerGroupHeartbeat response corr=103 at {at(21)}; ended by "
                           f"FENCED_MEMBER_EPOCH at {at(50)}"},
        {**base, "source": "fetch", "overlap_start": at(48.5), "overlap_end": at(49.5), "overlap_s": 1.0,
         "fetches": 2, "first_evidence": f"Fetch responses on {conn(50004)} from {at(48.5)} to {at(49.5)}"},
    ]


def e2e_latency() -> list[dict]:
    """orders to orders-cg (a spike in the fencing's window; the first window's offsets were produced before the
    capture) and tasks to share-g, in 10 s windows."""
    rows = []
    for t in range(0, SPAN_S, 10):
        for topic, group, base in [("orders", "orders-cg", 12.0), ("tasks", "share-g", 30.0)]:
            spike = 80.0 if topic == "orders" and t == 50 else 1.0
            missing = 10 if t == 0 else 0
            rows.append({"window_start": at(t), "window_end": at(t + 10), "topic": topic, "partition": 0,
                         "group_id": group, "records": 40, "produce_seen": 40 - missing, "produce_missing": missing,
                         "p50_ms": base, "p95_ms": base * 2 * spike, "p99_ms": base * 3 * spike,
                         "max_ms": base * 4 * spike})
    return rows


def write_report(root: Path) -> Path:
    """A complete report in `root` (every table of pipelines.schema plus summary.json)."""
    data, requests, lag = _throughput()
    for name, rows in [("sessions/connections", _connections()), ("sessions/groups", _groups()),
                       ("sessions/commits", _commits()), ("sessions/members", _members()),
                       ("sessions/producers", _producers()), ("sessions/transactions", _transactions()),
                       ("sessions/share_members", _share_members()), ("sessions/fetch_links", []),
                       ("sessions/epoch_events", _epoch_events()),
                       ("fenced_epochs", _fenced()), ("duplicate_deliveries", duplicates()),
                       ("throughput/data", data), ("throughput/requests", requests),
                       ("throughput/latency", _latency(requests)), ("throughput/lag", lag)]:
        write_table(root, name, rows)
    for name, rows in zip(("share_records", "share_spso/windows", "share_spso/pinned"), share_records()):
        write_table(root, name, rows)
    for name, rows in [("rebalances", rebalances()), ("e2e_latency", e2e_latency()),
                       ("ownership_conflicts", ownership_conflicts())]:
        write_table(root, name, rows)
    (root / "summary.json").write_text(json.dumps(summary(), indent=2))
    return root
