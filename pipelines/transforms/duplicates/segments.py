"""What every kind of duplicate shares: the table's columns, the sweep that counts how many ranges cover each
offset, and the merging of its segments into runs."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.pipelines.intermediates import clustered

OUTPUT = ["kind", "group_id", "topic", "partition", "first_offset", "last_offset", "records", "deliveries",
          "first_delivery_ts", "redelivery_ts", "first_member_id", "redelivery_member_id", "first_conn_id",
          "redelivery_conn_id", "first_client_id", "redelivery_client_id", "delivery_count", "ack_history",
          "producer_id", "producer_epoch", "base_sequence", "original_offset", "cause", "possible", "first_position",
          "wire_only", "wire_deliveries"]


def sweep(key: list[str], *sources: tuple[DataFrame, str, str, dict[str, Column]]) -> DataFrame:
    """Maximal offset segments with, per counter, the summed weight of the ranges covering each: a sweep over range
    starts (+weight) and ends (-weight) with running sums, exact per offset without a range self-join. A source is
    (ranges, first-offset column, last-offset column, {counter: weight})."""
    names = sorted({n for *_, weights in sources for n in weights})
    events = None
    for df, lo, hi, weights in sources:
        edges = [F.struct(pos.alias("pos"), *[(weights.get(n, F.lit(0)) * sign).alias(n) for n in names])
                 for pos, sign in ((F.col(lo), 1), (F.col(hi) + 1, -1))]
        part = df.select(*key, F.inline(F.array(*edges)))  # both edges of a range in one pass over it
        events = part if events is None else events.unionByName(part)
    by_pos = Window.partitionBy(*key).orderBy("pos")
    upto = by_pos.rowsBetween(Window.unboundedPreceding, 0)
    # one exchange by key serves the grouping by position and the windows (an exchange by (key, pos) would not)
    return (clustered(events, *key).groupBy(*key, "pos").agg(*[F.sum(n).alias(n) for n in names])
            .withColumns({**{n: F.sum(n).over(upto) for n in names}, "last_offset": F.lead("pos").over(by_pos) - 1})
            .where(F.col("last_offset").isNotNull()).withColumnRenamed("pos", "first_offset"))


def islands(segments: DataFrame, same: list[str], *aggs: Column, key: list[str] | None = None) -> DataFrame:
    """Adjacent segments that agree on `same`, merged into runs. Segments that never overlap within `key` (columns
    of `same`), as a sweep's, are ordered by `key` alone, in the order and partitioning the sweep left them in: a
    segment continues its run when the one before it is adjacent and agrees on the rest of `same`."""
    key = same if key is None else key
    order = Window.partitionBy(*key).orderBy("first_offset")
    adjacent = F.col("first_offset") == F.lag("last_offset").over(order) + 1
    for c in (c for c in same if c not in key):
        adjacent &= F.lag(c).over(order).eqNullSafe(F.col(c))
    island = F.sum(F.when(adjacent, 0).otherwise(1)).over(order.rowsBetween(Window.unboundedPreceding, 0))
    return (segments.withColumn("_island", island).groupBy(*same, "_island")
            .agg(F.min("first_offset").alias("first_offset"), F.max("last_offset").alias("last_offset"), *aggs)
            .drop("_island"))


def not_consumer() -> dict[str, Column]:
    """The consumer-only columns, empty for share and producer rows."""
    return {"first_position": F.lit(None).cast("long"), "wire_only": F.lit(False),
            "wire_deliveries": F.lit(None).cast("long")}
