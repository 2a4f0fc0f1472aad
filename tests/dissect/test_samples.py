"""The dissector against the bundled real captures and their ground truth (samples/<name>.truth.json).

Each sample is dissected once per session; the tests compare the Parquet tables with what the clients themselves
logged: every request they sent, the errors they were answered, the records they produced and consumed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.tables.schema import TABLES
from kafkatap.samples import load_truth
from kafkatap.samples.truth import request_bounds
from tests.support.pairing import assert_paired_but_in_flight
from tests.support.paths import SAMPLES

NAMES = sorted(p.name[:-len(".truth.json")] for p in SAMPLES.glob("*.truth.json")
               if (SAMPLES / (p.name[:-len(".truth.json")] + ".pcapng")).exists())

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not NAMES, reason="no samples/*.pcapng yet")]


class Dissected:
    def __init__(self, name: str, out: Path) -> None:
        self.name = name
        self.truth = load_truth(name)
        self.out = out
        self.summary = dissect_captures([str(SAMPLES / f"{name}.pcapng")], str(out),
                                        ports=self.truth["broker_ports"], records=True)

    def table(self, name: str) -> list[dict]:
        return pq.read_table(self.out / name).to_pylist()


@pytest.fixture(scope="session")
def dissected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Dissected]:
    base = tmp_path_factory.mktemp("dissected")
    return {name: Dissected(name, base / name) for name in NAMES}


@pytest.fixture(params=NAMES)
def sample(request: pytest.FixtureRequest, dissected: dict[str, Dissected]) -> Dissected:
    return dissected[request.param]


def test_tables_follow_the_schema_exactly(sample: Dissected) -> None:
    for name, schema in TABLES.items():
        written = pq.read_schema(sample.out / name / "part-00000.parquet")
        assert written.equals(schema, check_metadata=False), name
        assert [f.metadata for f in written] == [f.metadata for f in schema], name


def test_every_request_the_clients_logged_is_a_row(sample: Dissected) -> None:
    got: dict[str, Counter] = defaultdict(Counter)
    for row in sample.table("frames"):
        if row["client_id"] is not None:
            got[row["client_id"]][row["api_name"]] += 1
    expected = sample.truth["requests"]["by_client"]
    bounds = request_bounds(sample.truth)  # exact, but for requests a client cancelled in flight
    assert all(set(got[c]) <= set(per_api) for c, per_api in expected.items())
    assert {k: got[k[0]][k[1]] for k in bounds} == {k: min(max(got[k[0]][k[1]], lo), hi) for k, (lo, hi) in
                                                     bounds.items()}


def test_every_request_is_paired_and_decoded(sample: Dissected) -> None:
    assert_paired_but_in_flight(sample.table("frames"))
    ok = [r for r in sample.table("frames") if r["status"] == "ok"]
    assert all(r["request_json"] and r["response_json"] and r["latency_us"] >= 0 for r in ok)


def test_no_anomalies_and_the_byte_account_balances(sample: Dissected) -> None:
    anomalies = dict(sample.summary["anomalies_by_kind"])
    # the mock ends some flexible responses with an extra tag buffer
    expected = {"trailing_bytes"} if "librdkafka_mock" in sample.truth["broker"]["kind"] else set()
    if "broker_requests" in sample.truth:  # a cluster never pauses: the capture starts inside its connections, and
        expected |= {"resync", "truncated_frame"}  # a node stopping cuts its own (test_kafka44_cluster.py: where)
    for kind in expected:
        anomalies.pop(kind, None)
    assert anomalies == {}
    account = sample.summary["byte_account"]
    assert account["balanced"]
    for stream in account["streams"]:
        assert stream["seen"] == stream["decoded"] + sum(stream["skipped"].values())
    assert account["totals"]["decoded"] + sum(account["totals"]["skipped"].get(kind, 0) for kind in expected) \
        == account["totals"]["seen"] > 0


def test_response_errors_match_what_kafka_python_clients_decoded(sample: Dissected) -> None:
    python_clients = {c["client_id"] for c in sample.truth["clients"] if c["library"].startswith("kafka-python")}
    got: dict = defaultdict(lambda: defaultdict(Counter))
    for row in sample.table("frames"):
        if row["client_id"] in python_clients and row["error_code"]:
            got[row["client_id"]][row["api_name"]][row["error_name"]] += 1
    expected = {c: v for c, v in sample.truth["response_errors"].items() if c in python_clients}
    assert {c: {a: dict(e) for a, e in v.items()} for c, v in got.items()} == expected


def test_produced_records_are_acknowledged_batches(sample: Dissected) -> None:
    expected: Counter = Counter()
    for p in sample.truth["produced"]:
        expected[(p["client_id"], p["topic"], p["partition"])] += p["records"]
    got: Counter = Counter()
    for b in sample.table("batches"):
        if b["direction"] == "produce" and b["partition_error_code"] == 0:
            got[(b["client_id"], b["topic"], b["partition"])] += b["record_count"]
    assert got == expected


def test_consumed_offsets_are_covered_by_fetched_batches(sample: Dissected) -> None:
    fetched = defaultdict(set)
    for b in sample.table("batches"):
        if b["direction"] in ("fetch", "share_fetch"):
            fetched[(b["client_id"], b["topic"], b["partition"])].update(range(b["base_offset"], b["last_offset"] + 1))
    for c in sample.truth["consumed"]:
        for first, last in c["offsets"]:
            missing = set(range(first, last + 1)) - fetched[(c["client_id"], c["topic"], c["partition"])]
            assert not missing, (c["client_id"], c["topic"], c["partition"], sorted(missing)[:5])


def test_records_table_has_every_batch_record(sample: Dissected) -> None:
    batches = sample.table("batches")
    records = sample.table("records")
    data_batches = [b for b in batches if not b["is_control"]]
    assert len(records) >= sum(b["record_count"] for b in data_batches)
    assert all(r["key"] is None and r["value"] is None for r in records)  # no --payloads
    assert all(r["value_size"] == -1 or r["value_hash"] is not None for r in records)


def test_producer_ids_match_the_producers(sample: Dissected) -> None:
    init = {(r["client_id"], r["producer_id"], r["producer_epoch"]) for r in sample.table("frames")
            if r["api_name"] == "InitProducerId" and r["error_code"] == 0}
    for p in sample.truth["producers"]:
        assert (p["client_id"], p["producer_id"], p["producer_epoch"]) in init


def test_group_and_member_columns(sample: Dissected) -> None:
    frames = sample.table("frames")
    groups = {c["group_id"] for c in sample.truth["consumed"] if c["group_id"]}
    for group in groups:
        joins = [r for r in frames if r["api_name"] in ("JoinGroup", "ConsumerGroupHeartbeat", "ShareGroupHeartbeat")
                 and r["group_id"] == group]
        assert joins, group
        assert any(r["member_id"] for r in joins)
    for row in frames:
        if row["api_name"] == "Produce" and row["topics"]:
            assert set(row["topics"]) <= set(sample.truth["topics"])


def reached(truth: dict) -> dict[tuple[str, str], set[tuple[str, int]]]:
    """(group, client) -> the (member id, generation or member epoch) pairs the truth says the member was handed.

    Classic generations are recorded from 1 (samples/workloads/member.py skips 0), while Tansu hands out 0 first:
    generation 0 counts as reached under the member's first member id."""
    out = {}
    for group in truth["groups"]:
        for client, steps in group.get("generations_by_member", {}).items():
            out[(group["group_id"], client)] = {(s["member_id"], s["generation_id"]) for s in steps} | {
                (steps[0]["member_id"], 0)}
        for client, steps in group.get("member_epochs_by_member", {}).items():
            out[(group["group_id"], client)] = {(s["member_id"], s["member_epoch"]) for s in steps}
    return out


@pytest.mark.parametrize("name", [n for n in NAMES if "groups" in load_truth(n)])
def test_offset_commits_carry_a_generation_or_member_epoch_the_member_reached(name: str, dissected: dict) -> None:
    """Members whose generations the truth does not follow (it has no `groups` entry for them) are not checked. A
    commit without one (-1: the Java consumer's once it was fenced, Apache Kafka 4.4 sample) must be refused."""
    sample = dissected[name]
    steps = reached(sample.truth)
    commits = [r for r in sample.table("frames") if r["api_name"] == "OffsetCommit"
               and (r["group_id"], r["client_id"]) in steps]
    assert commits
    assert all(r["error_name"] != "NONE" for r in commits if r["generation_id"] is None)
    for row in (r for r in commits if r["generation_id"] is not None):
        assert (row["member_id"], row["generation_id"]) in steps[(row["group_id"], row["client_id"])], (
            row["client_id"], row["correlation_id"], row["member_id"], row["generation_id"])


def test_share_rows_match_the_share_deliveries(sample: Dissected) -> None:
    deliveries = sample.truth["share_deliveries"]
    acked: Counter = Counter()
    acquired: Counter = Counter()
    for row in sample.table("share"):
        n = row["last_offset"] - row["first_offset"] + 1
        if row["kind"] == "ack":
            acked[(row["client_id"], row["topic"], row["partition"], row["ack_type"])] += n
        else:
            acquired[(row["client_id"], row["topic"], row["partition"], row["delivery_count"])] += n
    # a delivery the consumer held and never acknowledged (`ack` null) sent no ack
    assert acked == Counter((d["client_id"], d["topic"], d["partition"], d["ack"]) for d in deliveries
                            if d["ack"] is not None)
    assert acquired == Counter((d["client_id"], d["topic"], d["partition"], d["delivery_count"]) for d in deliveries)
