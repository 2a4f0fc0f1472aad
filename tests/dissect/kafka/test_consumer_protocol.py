"""The classic consumer protocol decoded inside JoinGroup / SyncGroup frames: on real captures (kafka-python with
Tansu, librdkafka), and on a crafted capture with damaged, foreign and unlabelled bytes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.protocol import embedded
from kafkatap.dissect.run import dissect_captures
from kafkatap.samples import capture_path, load_truth
from tests.support.kafka_messages import request, response
from tests.support.pcap import TcpFlow, pcap_bytes, timed

JOIN_GROUP, SYNC_GROUP = 11, 14


def frames_of(name: str, out: Path) -> tuple[list[dict], list[dict]]:
    summary = dissect_captures([str(capture_path(name))], str(out), ports=load_truth(name)["broker_ports"])
    assert summary["byte_account"]["balanced"]
    return pq.read_table(out / "frames").to_pylist(), pq.read_table(out / "anomalies").to_pylist()


@pytest.fixture(scope="module")
def classic(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict]]:
    if not capture_path("classic_group").exists():
        pytest.skip("sample not generated")
    return frames_of("classic_group", tmp_path_factory.mktemp("classic"))


def test_kafka_python_subscriptions_and_assignments_are_decoded(classic: tuple[list[dict], list[dict]]) -> None:
    frames, anomalies = classic
    assert not [a for a in anomalies if a["kind"] == "malformed_consumer_protocol"]
    joins = [json.loads(f["request_json"]) for f in frames if f["api_key"] == JOIN_GROUP]
    assert joins
    for join in joins:
        for protocol in join["protocols"]:
            assert protocol["metadata"]["$consumer"] == {"version": 0, "topics": ["clicks"],
                                                         "user_data": {"$bytes": ""}}
            assert embedded.decode_subscription(base64.b64decode(protocol["metadata"]["$bytes"]))["version"] == 0
    by_generation: dict[int, list[int]] = {}
    for f in frames:
        if f["api_key"] != SYNC_GROUP or f["error_code"] != 0:
            continue
        assert "clicks" in f["topics"]
        consumer = json.loads(f["response_json"])["assignment"]["$consumer"]
        assert consumer["version"] == 0 and consumer["user_data"] == {"$bytes": ""}
        for tp in consumer["assigned_partitions"]:
            assert tp["topic"] == "clicks"
            by_generation.setdefault(f["generation_id"], []).extend(tp["partitions"])
        leader = json.loads(f["request_json"])["assignments"]
        for given in leader:  # the leader's plan names the same bytes, decoded the same way
            assert given["assignment"]["$consumer"]["assigned_partitions"][0]["topic"] == "clicks"
    # the truth's generations; in each one the members' assignments cover clicks/0-3 exactly once
    truth = load_truth("classic_group")["groups"][0]["generations_by_member"]
    generations = {g["generation_id"] for member in truth.values() for g in member}
    assert set(by_generation) >= generations
    for generation in generations:
        assert sorted(by_generation[generation]) == [0, 1, 2, 3], generation


def test_librdkafka_sync_group_without_protocol_type(tmp_path: Path) -> None:
    """SyncGroup v3 names no protocol type: the group's JoinGroup request did ("consumer")."""
    if not capture_path("produce_consume").exists():
        pytest.skip("sample not generated")
    frames, anomalies = frames_of("produce_consume", tmp_path)
    assert not [a for a in anomalies if a["kind"] == "malformed_consumer_protocol"]
    syncs = [f for f in frames if f["api_key"] == SYNC_GROUP and f["client_id"] == "kt-consumer-1"]
    assert syncs and all(f["api_version"] < 5 for f in syncs)
    assigned = set()
    for f in syncs:
        for tp in json.loads(f["response_json"])["assignment"]["$consumer"]["assigned_partitions"]:
            assigned |= {(tp["topic"], p) for p in tp["partitions"]}
    consumed = {(c["topic"], c["partition"]) for c in load_truth("produce_consume")["consumed"]
                if c["client_id"] == "kt-consumer-1"}
    assert consumed <= assigned
    join = next(f for f in frames if f["api_key"] == JOIN_GROUP and f["client_id"] == "kt-consumer-1")
    metadata = json.loads(join["request_json"])["protocols"][0]["metadata"]["$consumer"]
    assert metadata["version"] == 3 and metadata["topics"] == ["orders", "payments"]


# ---- a crafted capture -------------------------------------------------------------------------------------------

PORT = 39094
GOOD = embedded.encode(embedded.ASSIGNMENT, {"version": 1, "assigned_partitions": [{"topic": "t", "partitions": [0]}],
                                             "user_data": None})
SUBSCRIPTION = embedded.encode(embedded.SUBSCRIPTION, {"version": 0, "topics": ["t"], "user_data": None})


def exchanges() -> list[tuple[bytes, bytes]]:
    join = {"group_id": "g", "session_timeout_ms": 6000, "member_id": "m", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION[:-3]}]}  # cut short
    join_resp = {"error_code": 0, "generation_id": 1, "protocol_name": "range", "leader": "m", "member_id": "m",
                 "members": [{"member_id": "m", "metadata": SUBSCRIPTION}]}
    sync = {"group_id": "g", "generation_id": 1, "member_id": "m",
            "assignments": [{"member_id": "m", "assignment": GOOD + b"\x01"}]}  # a byte too many
    sync_resp = {"error_code": 0, "assignment": b"\x00\x00\x7f\xff\xff\xff"}  # impossible topic count
    connect = {"group_id": "c", "session_timeout_ms": 6000, "member_id": "w", "protocol_type": "connect",
               "protocols": [{"name": "sessioned", "metadata": GOOD}]}
    connect_resp = {"error_code": 0, "generation_id": 1, "protocol_name": "sessioned", "leader": "w",
                    "member_id": "w", "members": [{"member_id": "w", "metadata": GOOD}]}
    unseen = {"group_id": "u", "generation_id": 1, "member_id": "x", "assignments": []}  # no JoinGroup captured
    return [
        (request(JOIN_GROUP, 5, 1, join), response(JOIN_GROUP, 5, 1, join_resp)),
        (request(SYNC_GROUP, 3, 2, sync), response(SYNC_GROUP, 3, 2, sync_resp)),
        (request(JOIN_GROUP, 5, 3, connect), response(JOIN_GROUP, 5, 3, connect_resp)),
        (request(SYNC_GROUP, 3, 4, unseen), response(SYNC_GROUP, 3, 4, {"assignment": GOOD})),
        (request(SYNC_GROUP, 3, 5, unseen), response(SYNC_GROUP, 3, 5, {"assignment": b"\x00\x00\x01"})),
        (request(SYNC_GROUP, 3, 6, unseen), response(SYNC_GROUP, 3, 6, {"error_code": 27})),
    ]


def test_damaged_foreign_and_unlabelled_bytes(tmp_path: Path) -> None:
    flow = TcpFlow(client=("10.0.0.1", 40000), server=("10.0.0.2", PORT))
    packets = flow.handshake()
    for req, resp in exchanges():
        packets += flow.send(0, req) + flow.send(1, resp)
    capture = tmp_path / "crafted.pcap"
    capture.write_bytes(pcap_bytes(timed(packets + flow.fin(0) + flow.fin(1))))
    summary = dissect_captures([str(capture)], str(tmp_path / "out"), ports=[PORT])
    assert summary["byte_account"]["balanced"]
    frames = {f["correlation_id"]: f for f in pq.read_table(tmp_path / "out" / "frames").to_pylist()}
    anomalies = pq.read_table(tmp_path / "out" / "anomalies").to_pylist()
    assert all(f["status"] == "ok" for f in frames.values())  # the messages decoded; only the embedded bytes did not

    bad = sorted((a["correlation_id"], a["direction"], a["bytes"]) for a in anomalies
                 if a["kind"] == "malformed_consumer_protocol")
    assert bad == [(1, "request", len(SUBSCRIPTION) - 3), (2, "request", len(GOOD) + 1), (2, "response", 6)]
    details = [a["detail"] for a in anomalies if a["kind"] == "malformed_consumer_protocol"]
    assert "JoinGroup v5 request protocols[0].metadata: consumer protocol subscription does not decode: " \
           "truncated at offset 9" in details[0]

    join_q, join_r = (json.loads(frames[1][k]) for k in ("request_json", "response_json"))
    assert join_q["protocols"][0]["metadata"]["$consumer_error"] == "truncated at offset 9"
    assert "$consumer" not in join_q["protocols"][0]["metadata"] and join_q["protocols"][0]["metadata"]["$bytes"]
    assert join_r["members"][0]["metadata"]["$consumer"]["topics"] == ["t"]  # v5 response: the request said consumer
    sync_q, sync_r = (json.loads(frames[2][k]) for k in ("request_json", "response_json"))
    assert sync_q["assignments"][0]["assignment"]["$consumer_error"] == f"trailing_bytes at offset {len(GOOD)}"
    assert sync_r["assignment"]["$consumer_error"] == "length_too_large at offset 2"

    connect = json.loads(frames[3]["request_json"])["protocols"][0]["metadata"]
    assert list(connect) == ["$bytes"]  # a connect group's bytes are its own business
    assert frames[3]["topics"] is None
    unlabelled = json.loads(frames[4]["response_json"])["assignment"]
    assert unlabelled["$consumer"]["assigned_partitions"] == [{"topic": "t", "partitions": [0]}]
    assert frames[4]["topics"] == ["t"]
    assert list(json.loads(frames[5]["response_json"])["assignment"]) == ["$bytes"]  # not the consumer protocol
    assert json.loads(frames[6]["response_json"])["assignment"] == {"$bytes": ""}  # error response: nothing there
