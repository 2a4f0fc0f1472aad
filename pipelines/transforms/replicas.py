"""Followers' Fetches: replication, not consumption.

A broker replicating a partition from its leader, and a KRaft controller replicating the metadata log from the quorum
leader, send Fetch like consumers do, naming themselves with a replica id >= 0 (`replica_id` before Fetch v15,
`replica_state.replica_id` since; a consumer's is -1). A capture of a cluster's ports holds them beside the
consumers' fetches, and every record they carry is one the producer wrote once: counted as a delivery, it would
double consumption, invent duplicates and give end-to-end latencies of a follower catching up after a restart.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.transforms.common import request_str

REPLICATION = "replication"
"""The `direction` the pipelines give a follower's fetched batches and records (the dissector's says `fetch`)."""


def replica_id() -> Column:
    """The replica id a Fetch request names (-1, a consumer's, when it names none)."""
    return F.coalesce(request_str("$.replica_state.replica_id").cast("int"), request_str("$.replica_id").cast("int"),
                      F.lit(-1))


def replica_connections(frames: DataFrame) -> list[str]:
    """The connections a follower fetches over (a fetcher thread's or a controller's connection carries nothing
    else): collected once, a few per broker, so that every later plan filters by a short list instead of joining."""
    followers = frames.where((F.col("api_key") == ApiKey.FETCH) & (replica_id() >= 0))
    return sorted(r["conn_id"] for r in followers.select("conn_id").distinct().collect())


def mark_replication(df: DataFrame, connections: list[str]) -> DataFrame:
    """`batches` or `records` with the direction of followers' fetched data set to `replication`: every analysis
    of consumption selects `fetch` and so leaves them out, and throughput shows them apart."""
    if not connections:
        return df
    follower = (F.col("direction") == "fetch") & F.col("conn_id").isin(connections)
    return df.withColumn("direction", F.when(follower, F.lit(REPLICATION)).otherwise(F.col("direction")))
