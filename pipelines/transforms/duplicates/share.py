"""Share group duplicates: offsets the broker handed out again, as acquisitions seen twice in the capture or as a
delivery count saying the broker had delivered them before the capture began."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.common import ISO, or_empty
from kafkatap.pipelines.transforms.duplicates.segments import OUTPUT, islands, not_consumer, sweep
from kafkatap.pipelines.transforms.ranges import overlapping


def _again() -> Column:
    """An acquisition of records the broker had delivered before (its delivery count above 1)."""
    return F.col("delivery_count") > 1


def _acquisition_segments(acquired: DataFrame, key: list[str]) -> DataFrame:
    """One sweep over a share partition's acquisitions: per offset segment, how many acquisitions cover it
    (`deliveries`) and how many of those had a delivery count above 1 (`_again`)."""
    weights = {"deliveries": F.lit(1), "_again": F.when(_again(), 1).otherwise(0)}
    return sweep(key, (acquired, "first_offset", "last_offset", weights))


def _acquired_before_capture(segments: DataFrame, again: DataFrame, key: list[str]) -> DataFrame:
    """Offsets acquired once in the capture with a delivery count above 1: the broker had delivered them before the
    capture began. One run per acquisition, its columns prefixed `a_`."""
    offsets = ("first_offset", "last_offset")
    once = segments.where((F.col("deliveries") == 1) & (F.col("_again") == 1)).select(*key, *offsets)
    who = ["a_ts", "a_conn_id", "a_correlation_id", "a_member_id", "a_client_id", "a_delivery_count"]
    pairs = overlapping(once, again, key, offsets, offsets, "a_").select(*key, *offsets, *who)
    return islands(pairs, [*key, *who])


def share_duplicates(share: DataFrame) -> DataFrame:
    """Offsets acquired more than once in the capture (`deliveries` counts the acquisitions seen; `delivery_count`
    is the broker's own highest count), with the acks between the first two acquisitions and the likely cause; and
    offsets acquired once in the capture whose delivery count says they were delivered before it began."""
    key = ["group_id", "topic", "partition"]
    share = or_empty(share)
    acquired = share.where(F.col("kind") == "acquired")
    again = acquired.where(_again())
    segments = _acquisition_segments(acquired, key)
    runs = islands(segments.where(F.col("deliveries") >= 2), [*key, "deliveries"], key=key)
    offsets = ("first_offset", "last_offset")
    who = F.struct(F.col("a_ts").alias("ts"), F.col("a_member_id").alias("member_id"),
                   F.col("a_conn_id").alias("conn_id"), F.col("a_client_id").alias("client_id"))
    firsts = (overlapping(runs, acquired, key, offsets, offsets, "a_")
              .groupBy(*runs.columns)
              .agg(F.array_sort(F.collect_list(who)).alias("ds"), F.max("a_delivery_count").alias("delivery_count"))
              .select("*", F.col("ds")[0].alias("f"), F.col("ds")[1].alias("s")).drop("ds"))
    acks = share.where((F.col("kind") == "ack") & (F.col("ack_type") != "gap"))
    history = (overlapping(firsts, acks, key, offsets, offsets, "k_").where(F.col("k_ts") < F.col("s.ts"))
               .groupBy(*key, "first_offset", "last_offset")
               .agg(F.array_sort(F.collect_list(F.struct(F.col("k_ts").alias("ts"),
                                                         F.col("k_ack_type").alias("ack_type")))).alias("acks")))
    cause = F.coalesce(F.element_at("acks", -1)["ack_type"], F.lit("timeout"))
    stamp = lambda a: F.concat(a["ack_type"], F.lit("@"), F.date_format(a["ts"], ISO))  # noqa: E731
    return (firsts.join(history, [*key, "first_offset", "last_offset"], "left")
            .select(
                F.lit("share_group").alias("kind"), *key, "first_offset", "last_offset",
                (F.col("last_offset") - F.col("first_offset") + 1).alias("records"),
                F.col("deliveries").cast("long").alias("deliveries"),
                F.col("f.ts").alias("first_delivery_ts"), F.col("s.ts").alias("redelivery_ts"),
                F.col("f.member_id").alias("first_member_id"), F.col("s.member_id").alias("redelivery_member_id"),
                F.col("f.conn_id").alias("first_conn_id"), F.col("s.conn_id").alias("redelivery_conn_id"),
                F.col("f.client_id").alias("first_client_id"), F.col("s.client_id").alias("redelivery_client_id"),
                F.col("delivery_count").cast("int").alias("delivery_count"),
                F.coalesce(F.transform("acks", stamp), F.array().cast("array<string>")).alias("ack_history"),
                F.lit(None).cast("long").alias("producer_id"), F.lit(None).cast("int").alias("producer_epoch"),
                F.lit(None).cast("int").alias("base_sequence"), F.lit(None).cast("long").alias("original_offset"),
                F.when(cause == "release", "released").when(cause == "reject", "rejected")
                .otherwise("lock_timeout").alias("cause"),
                F.lit(False).alias("possible"), *[v.alias(k) for k, v in not_consumer().items()])
            .select(OUTPUT)
            .unionByName(_before_capture_rows(_acquired_before_capture(segments, again, key), key)))


def _before_capture_rows(runs: DataFrame, key: list[str]) -> DataFrame:
    """The broker's delivery count is the only evidence: no first delivery, no acks."""
    return runs.select(
        F.lit("share_group").alias("kind"), *key, "first_offset", "last_offset",
        (F.col("last_offset") - F.col("first_offset") + 1).alias("records"),
        F.col("a_delivery_count").cast("long").alias("deliveries"),
        F.lit(None).cast("timestamp").alias("first_delivery_ts"), F.col("a_ts").alias("redelivery_ts"),
        F.lit(None).cast("string").alias("first_member_id"), F.col("a_member_id").alias("redelivery_member_id"),
        F.lit(None).cast("string").alias("first_conn_id"), F.col("a_conn_id").alias("redelivery_conn_id"),
        F.lit(None).cast("string").alias("first_client_id"), F.col("a_client_id").alias("redelivery_client_id"),
        F.col("a_delivery_count").cast("int").alias("delivery_count"),
        F.array().cast("array<string>").alias("ack_history"), F.lit(None).cast("long").alias("producer_id"),
        F.lit(None).cast("int").alias("producer_epoch"), F.lit(None).cast("int").alias("base_sequence"),
        F.lit(None).cast("long").alias("original_offset"), F.lit("delivered_before_capture").alias("cause"),
        F.lit(False).alias("possible"), *[v.alias(k) for k, v in not_consumer().items()]).select(OUTPUT)
