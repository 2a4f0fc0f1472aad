"""Followers' Fetches on hand-made frames: a broker's (Fetch v15+ `replica_state`), an older broker's (`replica_id`)
and a KRaft controller's are replication; a consumer's (replica id -1) is not, and its data keeps direction `fetch`."""

from __future__ import annotations

import pytest

from kafkatap.dissect.tables.schema import BATCHES, FRAMES, RECORDS
from kafkatap.pipelines import schema
from kafkatap.pipelines.storage import conform
from tests.support.dissected_rows import batch, frame, record, rows, table
from kafkatap.pipelines.transforms import throughput
from kafkatap.pipelines.transforms.replicas import mark_replication, replica_connections

pytestmark = pytest.mark.spark


def _frames() -> list[dict]:
    return [
        frame(1, "Fetch", 0.1, conn_id="follower", client_id="broker-2-fetcher-0",
              request={"replica_state": {"replica_id": 2, "replica_epoch": 7}}),
        frame(1, "Fetch", 0.2, conn_id="old-follower", client_id="broker-3-fetcher-0", request={"replica_id": 3}),
        frame(1, "Fetch", 0.3, conn_id="controller", client_id="raft-client-1",
              request={"replica_state": {"replica_id": 1, "replica_epoch": -1}}),
        frame(1, "Fetch", 0.4, conn_id="consumer", request={"replica_id": -1,
                                                            "replica_state": {"replica_id": -1}}),
        frame(1, "Fetch", 0.5, conn_id="consumer-v15"),  # v15+: a consumer sends no replica_state at all
        frame(0, "Produce", 0.6, conn_id="producer"),
    ]


def test_followers_and_controllers_connections_are_replication(spark):
    assert replica_connections(table(spark, FRAMES, _frames())) == ["controller", "follower", "old-follower"]


def test_their_fetched_data_is_replication_and_throughput_shows_it_apart(spark):
    followers = replica_connections(table(spark, FRAMES, _frames()))
    batches = [batch("fetch", 0.1, "t", 0, 0, 9, conn_id="follower", client_id="broker-2-fetcher-0"),
               batch("fetch", 0.4, "t", 0, 0, 9, conn_id="consumer"),
               batch("produce", 0.6, "t", 0, 0, 9, conn_id="producer")]
    marked = mark_replication(table(spark, BATCHES, batches), followers)
    got = rows(conform(throughput.data(marked, "1 seconds"), schema.THROUGHPUT_DATA))
    assert sorted((r["direction"], r["client_id"], r["records"]) for r in got) == [
        ("fetch", "app", 10), ("produce", "app", 10), ("replication", "broker-2-fetcher-0", 10)]
    assert rows(conform(throughput.lag(marked, "1 seconds"), schema.THROUGHPUT_LAG)) == []  # no high watermarks
    records = [record("fetch", 0.1, "t", 0, 3, conn_id="follower"), record("fetch", 0.4, "t", 0, 3, conn_id="consumer")]
    assert {r["conn_id"]: r["direction"] for r in rows(mark_replication(table(spark, RECORDS, records), followers))
            } == {"follower": "replication", "consumer": "fetch"}


def test_nothing_to_mark_without_followers(spark):
    batches = table(spark, BATCHES, [batch("fetch", 0.4, "t", 0, 0, 9)])
    assert mark_replication(batches, []) is batches
