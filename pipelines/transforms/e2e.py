"""e2e_latency: how long records take from the producer to each consumer, per offset, summarised per window.

The producer side of an offset is the Produce request whose response assigned its batch a base offset
(`assigned_offset`): offsets `assigned_offset .. assigned_offset + last_offset - base_offset`. The consumer side is
the first Fetch (clipped at the fetch offset asked for) or ShareFetch response that carried the offset to that
consumer: a group (share group, or the group its fetch connection is linked to in `sessions/fetch_links`), else the
client id. Offsets are exploded one row each, so the cost grows with the records delivered, like `records/`. Each
side's rows are exchanged by (topic, partition, offset) once (`clustered`), before it keeps its first time per offset:
that one partitioning serves both aggregations and the join between them, with no exchange of the aggregated rows. The
percentiles are exact, by nearest rank (`percentiles`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkatap.pipelines.intermediates import clustered
from kafkatap.pipelines.transforms.common import batch_taken
from kafkatap.pipelines.transforms.percentiles import nearest_rank, ranked

KEY = ["topic", "partition", "offset"]
GROUP = ["window_start", "window_end", "topic", "partition", "group_id", "client_id"]


def _ms_since(start: str) -> Column:
    return (F.unix_micros("delivered_ts") - F.unix_micros(start)) / 1000.0


def _produced(batches: DataFrame) -> DataFrame:
    sent = batches.where((F.col("direction") == "produce") & F.col("assigned_offset").isNotNull()
                         & (F.col("assigned_offset") >= 0) & ~F.col("is_control"))
    last = F.col("assigned_offset") + F.col("last_offset") - F.col("base_offset")
    offsets = sent.select("topic", "partition", "ts", F.explode(F.sequence("assigned_offset", last)).alias("offset"))
    return clustered(offsets, *KEY).groupBy(*KEY).agg(F.min("ts").alias("produced_ts"))


def _delivered(batches: DataFrame, links: DataFrame) -> DataFrame:
    """First delivery of each offset per consumer (group_id, client_id)."""
    groups = links.where(F.col("group_id").isNotNull()).select("conn_id", F.col("group_id").alias("_linked"))
    group = F.when(F.col("direction") == "share_fetch", F.col("group_id")).otherwise(F.col("_linked"))
    got = (batches.where(F.col("direction").isin("fetch", "share_fetch") & ~F.col("is_control")
                         & batch_taken())
           .join(F.broadcast(groups), "conn_id", "left")
           .withColumns({"group_id": group, "client_id": F.when(group.isNull(), F.col("client_id")),
                         "first": F.greatest("base_offset", F.coalesce("fetch_offset", "base_offset"))})
           .where(F.col("last_offset") >= F.col("first")))
    offsets = got.select("group_id", "client_id", "topic", "partition", "ts",
                         F.explode(F.sequence("first", "last_offset")).alias("offset"))
    return clustered(offsets, *KEY).groupBy("group_id", "client_id", *KEY).agg(F.min("ts").alias("delivered_ts"))


def _create_times(records: DataFrame | None) -> DataFrame | None:
    if records is None:
        return None
    return records.groupBy(*KEY).agg(F.min("timestamp").alias("create_ts"))


def offset_latency(batches: DataFrame, records: DataFrame | None, links: DataFrame) -> DataFrame:
    """One row per offset and consumer: group_id, client_id, topic, partition, offset, produced_ts, delivered_ts,
    create_ts, `ms` (null when the capture lacks the produce side, or shows it after the delivery) and `create_ms`.
    `links`: sessions/fetch_links; `records`: the dissector's records/, or None (then no CreateTime)."""
    joined = _delivered(batches, links).join(_produced(batches), KEY, "left")
    created = _create_times(records)
    joined = (joined.join(created, KEY, "left") if created is not None
              else joined.withColumn("create_ts", F.lit(None).cast("timestamp")))
    latency = F.when(F.col("produced_ts") <= F.col("delivered_ts"), _ms_since("produced_ts"))
    return joined.withColumns({"ms": latency, "create_ms": _ms_since("create_ts")})


def e2e_latency(batches: DataFrame, records: DataFrame | None, links: DataFrame, interval: str) -> DataFrame:
    """`offset_latency` summarised per window of delivery, topic, partition and consumer, with exact percentiles."""
    window = F.window("delivered_ts", interval)
    measured = (offset_latency(batches, records, links)
                .withColumn("window_start", window.start).withColumn("window_end", window.end))
    return (ranked(ranked(measured, GROUP, "ms"), GROUP, "create_ms").groupBy(*GROUP)
            .agg(F.count(F.lit(1)).alias("records"), F.count("ms").alias("produce_seen"),
                 (F.count(F.lit(1)) - F.count("ms")).alias("produce_missing"),
                 nearest_rank("ms", 0.5).alias("p50_ms"), nearest_rank("ms", 0.95).alias("p95_ms"),
                 nearest_rank("ms", 0.99).alias("p99_ms"), F.max("ms").alias("max_ms"),
                 nearest_rank("create_ms", 0.5).alias("create_time_p50_ms"),
                 nearest_rank("create_ms", 0.99).alias("create_time_p99_ms")))
