"""The sample harness itself: it makes a sample from scratch (real Tansu, real capture) and its helpers are right."""

from __future__ import annotations

import shutil

import pytest

from kafkatap.samples.make import MAX_CAPTURE_BYTES
from kafkatap.samples.truth import duplicate_ranges, offset_ranges, validate


def test_offset_ranges_keep_redeliveries_visible() -> None:
    assert offset_ranges([3, 4, 5, 9, 3, 4]) == [[3, 5], [9, 9], [3, 4]]
    assert offset_ranges([]) == []


def test_duplicate_ranges_merge_equal_counts_only() -> None:
    assert duplicate_ranges([1, 2, 3, 2, 3, 4, 3]) == [(2, 2, 2), (3, 3, 3)]
    assert duplicate_ranges([5, 6, 7, 5, 6, 7]) == [(5, 7, 2)]
    assert duplicate_ranges([1, 2, 3]) == []


def test_validate_reports_missing_keys() -> None:
    assert "missing key sample" in validate({})


def test_cli_rejects_unknown_sample(capsys: pytest.CaptureFixture) -> None:
    from kafkatap.samples.cli import main

    assert main(["make", "no_such_sample"]) == 2
    assert "unknown sample" in capsys.readouterr().err


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_make_transactions_sample_from_scratch(tmp_path) -> None:
    """The quickest real sample (~2 s): Tansu up, capture on, workload, truth; nothing left running."""
    from kafkatap.samples.brokers import port_is_free
    from kafkatap.samples.make import make
    from kafkatap.samples.workloads.transactions import SPEC

    if not port_is_free(SPEC.tansu_port):
        pytest.skip(f"port {SPEC.tansu_port} busy (a sample is being made)")
    doc = make("transactions", tmp_path)
    assert validate(doc) == []
    assert (tmp_path / "transactions.pcapng").stat().st_size > 10_000
    assert (tmp_path / "transactions.truth.json").exists()
    assert not list(tmp_path.glob(".*.partial"))
    assert [f["error_name"] for f in doc["fenced_epochs"]] == ["PRODUCER_FENCED"]
    outcomes = {t["outcome"] for t in doc["transactions"]}
    assert outcomes == {"committed", "aborted"}
    assert port_is_free(SPEC.tansu_port)  # the broker is gone


def test_synthetic_sample_is_reproducible(tmp_path) -> None:
    """The synthesizer runs on a fixed clock: regenerating gives the committed capture byte for byte."""
    from kafkatap.samples import capture_path
    from kafkatap.samples.make import make

    if not capture_path("synthetic_read_committed").exists():
        pytest.skip("synthetic sample not made")
    doc = make("synthetic_read_committed", tmp_path)
    assert doc["synthetic"] is True
    assert (tmp_path / "synthetic_read_committed.pcapng").read_bytes() == capture_path(
        "synthetic_read_committed").read_bytes()
    assert doc["isolation"]["records_received"] == {"read_committed": 16, "read_uncommitted": 24}


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_make_kafka44_consumer_group_from_scratch(tmp_path) -> None:
    """Apache Kafka 4.4 and the Java clients (~40 s): the member frozen past its session is refused and its
    uncommitted records go to another member; the broker and every JVM are gone afterwards."""
    from kafkatap.samples.brokers import port_is_free
    from kafkatap.samples.make import make
    from kafkatap.samples.workloads.kafka44_consumer_group import SPEC

    if not port_is_free(SPEC.kafka_port):
        pytest.skip(f"port {SPEC.kafka_port} busy (a sample is being made)")
    doc = make("kafka44_consumer_group", tmp_path)
    assert validate(doc) == []
    assert doc["broker"]["kind"] == "apache_kafka" and doc["broker"]["versions"]["apache_kafka"] == "4.4.0"
    assert [(f["client_id"], f["error_name"] in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH"))
            for f in doc["fenced_epochs"]] == [("kt-j-3", True)]
    assert any(e["what"] == "exception" and e["exception"] == "CommitFailedException" for e in doc["events"])
    assert doc["duplicate_records"].get("consumer_group", 0) > 0
    assert sum(p["records"] for p in doc["produced"]) == 76
    assert (tmp_path / "kafka44_consumer_group.pcapng").stat().st_size < MAX_CAPTURE_BYTES
    assert port_is_free(SPEC.kafka_port)


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_make_kafka44_transactions_from_scratch(tmp_path) -> None:
    """Transactions v2 with the Java client (~30 s): one producer epoch per transaction, the first instance refused
    once the second took its transactional id, a read_committed reader that sees only committed records."""
    from kafkatap.samples.brokers import port_is_free
    from kafkatap.samples.make import make
    from kafkatap.samples.workloads.kafka44_transactions import SPEC

    if not port_is_free(SPEC.kafka_port):
        pytest.skip(f"port {SPEC.kafka_port} busy (a sample is being made)")
    doc = make("kafka44_transactions", tmp_path)
    assert validate(doc) == []
    first = [t["producer_epoch"] for t in doc["transactions"] if t["client_id"] == "kt-txn-1"]
    assert first == list(range(first[0], first[0] + 6))  # transactions v2: a new epoch after every EndTxn
    assert {f["client_id"] for f in doc["fenced_epochs"]} == {"kt-txn-1"}
    committed = sum(t["records"] for t in doc["transactions"] if t["outcome"] == "committed")
    assert doc["isolation"]["records_received"]["read_committed"] == committed
    assert port_is_free(SPEC.kafka_port)


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_make_kafka44_share_group_from_scratch(tmp_path) -> None:
    """KIP-932 share group with the Java share consumer (~35 s): the held record's lock runs out and the other
    member gets it as delivery 2, a released record comes back once, a rejected one does not, and the poison record
    is delivered exactly up to the broker's delivery count limit, never after."""
    from kafkatap.samples.brokers import port_is_free
    from kafkatap.samples.make import make
    from kafkatap.samples.workloads.kafka44_share_group import DELIVERY_LIMIT, HELD, POISON, REJECTED, RELEASED, SPEC

    if not port_is_free(SPEC.kafka_port):
        pytest.skip(f"port {SPEC.kafka_port} busy (a sample is being made)")
    doc = make("kafka44_share_group", tmp_path)
    assert validate(doc) == []

    def counts(offset: int) -> list[tuple[int, str]]:
        return [(d["delivery_count"], d["ack"]) for d in doc["share_deliveries"] if d["offset"] == offset]

    holders = {d["client_id"] for d in doc["share_deliveries"] if d["offset"] == HELD}
    assert counts(HELD) == [(1, "accept"), (2, "accept")] and len(holders) == 2
    assert counts(RELEASED) == [(1, "release"), (2, "accept")] and counts(REJECTED) == [(1, "reject")]
    assert counts(POISON) == [(n, "release") for n in range(1, DELIVERY_LIMIT + 1)]
    configs = [e["configs"] for e in doc["events"] if e["what"] == "group_configs"]
    assert configs and configs[0]["share.delivery.count.limit"] == str(DELIVERY_LIMIT)
    assert not [e for e in doc["events"] if e["what"] == "exception"]
    assert (tmp_path / "kafka44_share_group.pcapng").stat().st_size < MAX_CAPTURE_BYTES
    assert port_is_free(SPEC.kafka_port)


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_make_kafka44_cluster_restart_from_scratch(tmp_path) -> None:
    """Three KRaft nodes and the Java clients (~50 s): the quorum leader's node stops and starts again under load,
    the producer retries its refused batches (its own metric says how many records) and every record it had
    acknowledged reaches the consumer once; all six ports are captured and every node and JVM is gone afterwards."""
    from kafkatap.samples.brokers import port_is_free
    from kafkatap.samples.make import kafka_ports, make
    from kafkatap.samples.workloads.kafka44_cluster_restart import SPEC

    ports = sum(kafka_ports(SPEC), [])
    if not all(port_is_free(p) for p in ports):
        pytest.skip(f"ports {ports} busy (a sample is being made)")
    doc = make("kafka44_cluster_restart", tmp_path)
    assert validate(doc) == []
    assert doc["broker_ports"] == ports and len(ports) == 6
    (restart,) = doc["restarts"]
    assert restart["was_quorum_leader"] and restart["stopping"] < restart["stopped"] < restart["starting"] < \
        restart["started"]
    assert {c["client_id"] for c in doc["clients"] if c["role"] == "broker"} >= {
        f"broker-{n}-fetcher-0" for n in (1, 2, 3)} | {f"raft-client-{n}" for n in (1, 2, 3)}
    produced = {(p["partition"], p["first_offset"], p["last_offset"]) for p in doc["produced"]}
    consumed = {(c["partition"], *c["offsets"][0]) for c in doc["consumed"] if len(c["offsets"]) == 1}
    assert produced == consumed and doc["duplicate_deliveries"] == []
    assert doc["producer_metrics"]["kt-load"]["record_error_total"] == 0
    assert (tmp_path / "kafka44_cluster_restart.pcapng").stat().st_size < MAX_CAPTURE_BYTES
    assert all(port_is_free(p) for p in ports)


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_make_kafka44_streams_group_from_scratch(tmp_path) -> None:
    """Kafka Streams 4.4 in a KIP-1071 streams group (~45 s): the second instance takes a task from the first, loses
    it when frozen past the streams session timeout, is fenced when resumed, rejoins under the same member id and
    takes a task again, and gives it back when it closes; every record is processed once; the broker and every JVM
    are gone afterwards."""
    from kafkatap.samples.brokers import port_is_free
    from kafkatap.samples.make import make
    from kafkatap.samples.workloads.kafka44_streams_group import PARTITIONS, SPEC

    if not port_is_free(SPEC.kafka_port):
        pytest.skip(f"port {SPEC.kafka_port} busy (a sample is being made)")
    doc = make("kafka44_streams_group", tmp_path)
    assert validate(doc) == []
    (group,) = doc["groups"]
    assert group["kind"] == "streams_group"
    tasks = group["tasks_by_instance"]
    # all, shared with kt-st-2, all while kt-st-2 is frozen, shared again once it rejoined, all once it left
    held = [len(t["active"]) for t in tasks["kt-st-1"]]
    assert held[::2] == [PARTITIONS] * 3 and len(held) == 5 and all(0 < n < PARTITIONS for n in held[1::2])
    assert any(t["active"] for t in tasks["kt-st-2"])
    epochs = group["member_epochs_by_member"]
    assert set(epochs) == {"kt-st-1-StreamThread-1-consumer", "kt-st-2-StreamThread-1-consumer"}
    assert all(e[0]["member_epoch"] == 0 and e[-1]["member_epoch"] > 0 for e in epochs.values())
    (stall,) = [e for e in doc["events"] if e["what"] == "stalled_by_sigstop"]
    (fenced,) = doc["fenced_epochs"]
    assert (fenced["kind"], fenced["client_id"], fenced["member_id"]) == (
        "streams_group", "kt-st-2-StreamThread-1-consumer", stall["member_id"])
    assert fenced["error_name"] in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH")
    # refused, it rejoined at epoch 0 under the same member id
    assert [s["member_epoch"] for s in epochs[fenced["client_id"]]].count(0) == 2
    assert {s["member_id"] for s in epochs[fenced["client_id"]]} == {stall["member_id"]}
    processed = {(e["partition"], e["offset"]) for e in doc["events"] if e["what"] == "processed"}
    assert len(processed) == sum(p["records"] for p in doc["produced"] if p["client_id"] == "kt-producer") == 75
    assert sum(p["records"] for p in doc["produced"] if p["topic"] == "clicks-upper") == 75  # each written once
    assert doc["requests"]["by_client"]["kt-st-2-StreamThread-1-consumer"]["StreamsGroupHeartbeat"] > 0
    assert (tmp_path / "kafka44_streams_group.pcapng").stat().st_size < MAX_CAPTURE_BYTES
    assert port_is_free(SPEC.kafka_port)
