"""A sample's analysis against the ground truth its workload recorded from the clients themselves.

Two test modules hold samples to it: tests/pipelines/test_samples.py (the transforms' rows, computed directly) and
tests/pipelines/test_kafka44_samples.py (the real-broker samples, whose whole `kafkatap report` those tests read
anyway: each sample analyzed once, not once per module). The checks are written once here so that both hold a
sample to the same truth.
"""

from __future__ import annotations

from collections import Counter

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

FENCED_KEYS = ("kind", "group_id", "transactional_id", "member_id", "producer_id", "error_name", "client_id")
DUPLICATE_KEYS = ("kind", "group_id", "topic", "partition", "first_offset", "last_offset", "deliveries")


def produced(batches: DataFrame) -> DataFrame:
    """Records the broker wrote, per topic and partition: produced batches that are not control batches and were
    not refused."""
    written = ((F.col("direction") == "produce") & ~F.col("is_control")
               & (F.coalesce(F.col("partition_error_code"), F.lit(0)) == 0))
    return batches.where(written).groupBy("topic", "partition").agg(F.sum("record_count").alias("records"))


def check_fenced(truth: dict, fenced: list[dict]) -> None:
    """The members' and producers' fencings are the ones the clients saw. A consumer refused a stale partition
    leader epoch (`partition_leader`) is checked against its client's logged errors instead
    (tests/pipelines/test_kafka44_cluster.py)."""
    got = Counter(tuple(r[k] for k in FENCED_KEYS) for r in fenced if r["kind"] != "partition_leader")
    assert got == Counter(tuple(f[k] for k in FENCED_KEYS) for f in truth["fenced_epochs"])


def check_duplicates(truth: dict, duplicates: list[dict]) -> None:
    """The certain duplicate deliveries (neither possible nor seen on the wire only) are the clients' ranges, and
    their records delivered again are the clients' counts per kind."""
    mine = [r for r in duplicates if not r["possible"] and not r["wire_only"]]
    assert Counter(tuple(r[k] for k in DUPLICATE_KEYS) for r in mine) == Counter(
        tuple(d[k] for k in DUPLICATE_KEYS) for d in truth["duplicate_deliveries"])
    again: Counter = Counter()
    for r in mine:
        again[r["kind"]] += r["records"] * (r["deliveries"] - 1)
    assert {k: v for k, v in again.items() if v} == {k: v for k, v in truth["duplicate_records"].items() if v}


def check_produced(truth: dict, produced_rows: list[dict]) -> None:
    """The records written per partition are the ones the producers had acknowledged."""
    assert {f"{r['topic']}/{r['partition']}": r["records"] for r in produced_rows} == truth["produced_by_partition"]


def frozen(truth: dict) -> bool:
    """The workload froze a member (SIGSTOP) until the coordinator removed it."""
    return any(e["what"] == "stalled_by_sigstop" for e in truth["events"])


def check_frozen_member(truth: dict, fenced: list[dict]) -> None:
    """The frozen member's fencing names the session timeout, with a silence the client's own freeze and resume
    times bound (plus at most a couple of heartbeat intervals before the freeze) and, for a classic member, the
    session timeout it was configured with."""
    stop = next(e for e in truth["events"] if e["what"] == "stalled_by_sigstop")
    resume = next(e for e in truth["events"]
                  if e["what"] == "resumed_by_sigcont" and e["client_id"] == stop["client_id"])
    config = next(c["config"] for c in truth["clients"] if c["client_id"] == stop["client_id"])
    (row,) = [f for f in fenced if f["client_id"] == stop["client_id"] and not f["inferred"]]
    silence = resume["t"] - stop["t"]
    assert row["cause"] == "session_timeout", row
    assert silence <= row["silent_s"] <= silence + 2.5, (silence, row["silent_s"])
    assert row["session_timeout_ms"] == config.get("session_timeout_ms")  # KIP-848: a broker setting, not on the wire
    assert stop["client_id"] in row["explanation"] and "the coordinator removed it" in row["explanation"]
