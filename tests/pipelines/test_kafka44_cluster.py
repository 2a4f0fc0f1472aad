"""The three-node Apache Kafka 4.4 sample (samples/workloads/kafka44_cluster_restart.py), analysed end to end by
`kafkatap analyze`, against what the Java clients recorded: the producer's acknowledged offsets and retry count,
the consumer's delivered offsets, the errors their NetworkClient logged, and when the node was stopped and started.

The capture holds the cluster's every port: beside the clients, the followers' replication Fetches and the KRaft
quorum's traffic. Those are decoded, and none of them is consumption, a client, a group or a producer of the
application: the counts of what was consumed equal the consumer's truth, not that plus the followers' fetches.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.samples import load_truth
from kafkatap.samples.make import kafka_ports
from kafkatap.samples.workloads.kafka44_cluster_restart import SPEC
from tests.support.paths import SAMPLES

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.own_run]  # `kafkatap analyze` opens its own run
SAMPLE = "kafka44_cluster_restart"
# The KRaft quorum's and the brokers' lifecycle apis, as the brokers' request logs name them (truth broker_requests)
QUORUM_APIS = {"Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "Fetch", "BrokerRegistration", "BrokerHeartbeat",
               "ControllerRegistration", "AlterPartition", "UpdateRaftVoter"}


@pytest.fixture(scope="module")
def truth() -> dict:
    return load_truth(SAMPLE)


@pytest.fixture(scope="module")
def dissected(truth, tmp_path_factory) -> Path:
    from kafkatap.dissect.run import dissect_captures

    out = tmp_path_factory.mktemp(SAMPLE) / "dissected"
    dissect_captures([str(SAMPLES / truth["capture"])], str(out), ports=truth["broker_ports"], records=True)
    return out


@pytest.fixture(scope="module")
def report(spark, dissected) -> Path:
    """The whole `kafkatap analyze`, as a user runs it on the capture."""
    from kafkatap.pipelines import cli as analyze

    out = dissected.parent / "report"
    assert analyze.main([str(dissected), "-o", str(out)]) == 0
    return out


def _table(root: Path, name: str) -> list[dict]:
    return pq.read_table(root / name).to_pylist()


def _summary(report: Path) -> dict:
    return json.loads((report / "summary.json").read_text())


def _wall(truth: dict, t: float) -> float:
    return datetime.fromisoformat(truth["started_at"]).timestamp() + t


def _broker_clients(truth: dict) -> set[str]:
    return {c["client_id"] for c in truth["clients"] if c["role"] == "broker"}


def _consumed(truth: dict) -> Counter:
    return Counter({(c["client_id"], c["topic"], c["partition"]): c["records"] for c in truth["consumed"]})


def _client_errors(truth: dict, name: str) -> int:
    return sum(n for apis in truth["response_errors"].values() for errors in apis.values()
               for error, n in errors.items() if error == name)


# ---- the capture: client, replication and controller traffic, decoded ----------------------------------------------

def test_the_followers_replication_fetches_are_decoded(truth, dissected):
    """Every broker's fetcher the brokers' request logs name fetched over the capture with its replica id, decoded
    and answered; the logs' counts are approximate (truth broker_requests), the capture holds at least as many."""
    fetchers = {c: per["Fetch"] for c, per in truth["broker_requests"]["by_client"].items() if "-fetcher-" in c}
    assert len(fetchers) == 3
    frames = [f for f in _table(dissected, "frames") if f["client_id"] in fetchers]
    assert {f["api_name"] for f in frames} == {"Fetch"}
    for client, logged in fetchers.items():
        mine = [f for f in frames if f["client_id"] == client]
        node = int(client.split("-")[1])
        assert {json.loads(f["request_json"])["replica_state"]["replica_id"] for f in mine} == {node}
        assert len(mine) >= logged and all(f["decode_error"] is None for f in mine)
        # a fetch the leader answered into the connection of a node shutting down stays unpaired (and logged)
        assert {f["status"] for f in mine} <= {"ok", "unpaired_request"}


def test_the_controller_quorum_traffic_is_decoded(truth, dissected):
    """The quorum's apis the brokers logged are in the capture at the controllers' ports, decoded; the node the
    workload stopped was the quorum leader, so its resignation and the election are there too."""
    restart = truth["restarts"][0]
    client_ports, controller_ports = map(set, kafka_ports(SPEC))
    assert restart["controller_port"] in controller_ports and client_ports | controller_ports == set(
        truth["broker_ports"])
    logged = {api for client, per in truth["broker_requests"]["by_client"].items() if "-fetcher-" not in client
              for api in per} & QUORUM_APIS
    assert {"Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "BrokerRegistration", "BrokerHeartbeat"} <= logged
    at_controllers = [f for f in _table(dissected, "frames")
                      if int(f["broker_addr"].rsplit(":", 1)[1]) in controller_ports]
    assert logged <= {f["api_name"] for f in at_controllers}
    assert all(f["decode_error"] is None for f in at_controllers)
    assert {f["client_id"] for f in at_controllers if f["client_id"]} <= _broker_clients(truth)
    (registration,) = [f for f in at_controllers if f["api_name"] == "BrokerRegistration"]
    assert registration["client_id"] == str(restart["node_id"])  # the restarted node registering again
    assert _wall(truth, restart["starting"]) <= registration["ts_request"].timestamp() <= _wall(
        truth, restart["started"])


def test_the_only_anomalies_are_the_capture_joining_and_the_node_leaving(truth, dissected):
    """A capture of a running cluster starts inside its open connections (resync at their first byte) and the
    stopped node's fetchers are cut mid-response when it shuts down (truncated_frame): nothing else."""
    restart = truth["restarts"][0]
    frames = _table(dissected, "frames")
    client_of = {f["conn_id"]: f["client_id"] for f in frames if f["client_id"]}
    anomalies = _table(dissected, "anomalies")
    assert {a["kind"] for a in anomalies} <= {"resync", "truncated_frame"}
    first = min(f["ts_request"] or f["ts_response"] for f in frames).timestamp()
    for a in anomalies:
        if a["kind"] == "resync":
            assert a["stream_offset"] == 0 and a["ts"].timestamp() - first < 0.5, a
        else:
            assert client_of[a["conn_id"]] == f"broker-{restart['node_id']}-fetcher-0", a
            assert _wall(truth, restart["stopping"]) <= a["ts"].timestamp() <= _wall(truth, restart["stopped"]), a


# ---- leader changes -----------------------------------------------------------------------------------------------

def test_leader_changes_show_up_in_the_errors(truth, report):
    """The refusals the clients logged while leadership moved are counted; the followers' own refusals come on top
    (the clients' truth is a lower bound of the wire's)."""
    summary = _summary(report)
    for name in ("NOT_LEADER_OR_FOLLOWER", "FENCED_LEADER_EPOCH"):
        assert _client_errors(truth, name) > 0, name
        assert summary["errors_by_name"][name] >= _client_errors(truth, name), name
    produce_errors = sum(r["errors"] for r in _table(report, "throughput/requests") if r["api_name"] == "Produce")
    assert produce_errors == sum(truth["response_errors"]["kt-load"]["Produce"].values())


def test_only_the_consumers_leader_epoch_fencings_are_fenced_epochs(truth, report):
    """kt-reader's Fetch refused FENCED_LEADER_EPOCH is a partition_leader fencing, once the node began to stop
    (a row's time is its request's: a Fetch waits up to fetch.max.wait.ms, 500, for data before the refusal); the
    followers' refusals (replication, which truncates and goes on) are not rows."""
    rows = _table(report, "fenced_epochs")
    assert {(r["kind"], r["client_id"], r["topic"]) for r in rows} == {("partition_leader", "kt-reader", "orders")}
    assert sum(r["requests"] for r in rows) == truth["response_errors"]["kt-reader"]["Fetch"]["FENCED_LEADER_EPOCH"]
    assert all(r["ts"].timestamp() >= _wall(truth, truth["restarts"][0]["stopping"]) - 0.5 for r in rows)


# ---- replication is not consumption --------------------------------------------------------------------------------

def test_consumed_records_equal_the_consumers_truth(truth, report):
    """throughput's fetched records per client and summary.fetched_records are the consumer's, not the followers'
    (their fetched data is `replication`)."""
    data = _table(report, "throughput/data")
    fetched: Counter = Counter()
    for r in data:
        if r["direction"] == "fetch":
            fetched[(r["client_id"], r["topic"], r["partition"])] += r["records"]
    assert fetched == _consumed(truth)
    assert _summary(report)["fetched_records"] == sum(c["records"] for c in truth["consumed"])
    followers = {r["client_id"] for r in data if r["direction"] == "replication"}
    assert followers and followers <= _broker_clients(truth)
    assert {r["client_id"] for r in _table(report, "throughput/lag")} == {"kt-reader"}


def test_end_to_end_latency_is_the_consumers_only(truth, report):
    """Every offset the consumer received is measured once, for its group; no follower catching up after the
    restart is a consumer (its latencies were the restart's length)."""
    rows = _table(report, "e2e_latency")
    assert {(r["group_id"], r["client_id"]) for r in rows} == {("kt-cluster", None)}
    per_partition: Counter = Counter()
    for r in rows:
        per_partition[(r["topic"], r["partition"])] += r["records"]
        assert r["produce_missing"] == 0
    assert per_partition == Counter({(t, p): n for (_, t, p), n in _consumed(truth).items()})
    restart = truth["restarts"][0]
    assert _summary(report)["e2e_p99_ms"]["orders"] < (restart["started"] - restart["stopping"]) * 1000


def test_no_duplicate_deliveries_from_replication(truth, report):
    assert truth["duplicate_deliveries"] == []
    assert _table(report, "duplicate_deliveries") == []
    assert _summary(report)["wire_duplicate_records"] == {}


def test_sessions_hold_the_applications_parties_only(truth, report):
    """The brokers' fetchers and the quorum's clients make no members, groups, producers or fetch links."""
    assigned = [e for e in truth["events"] if e["what"] == "partitions_assigned"]
    members = _table(report, "sessions/members")
    assert [(m["group_id"], m["member_id"], m["client_id"]) for m in members] == [
        ("kt-cluster", assigned[0]["member_id"], "kt-reader")]
    assert [g["group_id"] for g in _table(report, "sessions/groups")] == ["kt-cluster"]
    links = _table(report, "sessions/fetch_links")
    assert {(r["client_id"], r["link"], r["group_id"]) for r in links} == {("kt-reader", "linked", "kt-cluster")}
    assert [p["client_id"] for p in _table(report, "sessions/producers")] == ["kt-load"]
    summary = _summary(report)
    assert (summary["groups"], summary["members"], summary["producers"]) == (1, 1, 1)
    assert summary["clients"] == len(truth["clients"])  # the brokers' clients are clients on the wire (role broker)


# ---- produced records ------------------------------------------------------------------------------------------------

def test_produced_records_equal_the_producers_truth(truth, report):
    """Batches refused NOT_LEADER_OR_FOLLOWER while leadership moved were sent again: counted once as written, and
    flagged in sessions/producers as the records the producer's own retry metric counted."""
    acked = sum(p["records"] for p in truth["produced"])
    assert _summary(report)["produced_records"] == acked
    (producer,) = _table(report, "sessions/producers")
    assert producer["refused_records"] == truth["producer_metrics"]["kt-load"]["record_retry_total"] > 0
    assert producer["records"] - producer["refused_records"] == acked
    on_wire = sum(r["records"] for r in _table(report, "throughput/data") if r["direction"] == "produce")
    assert on_wire == producer["records"]  # throughput counts what went on the wire, resends included
