"""duplicate_deliveries: offsets delivered (or appended) more than once, with the likely cause.

Consumer deliveries are computed per log batch: batches on a partition's log are immutable, so every fetch of an
offset returns the same batch (same base and last offset), clipped at the fetch offset the client asked for (records
below it are skipped by clients). Deliveries of one batch to one group therefore cover [clip, last_offset] ranges that
all end at the same offset, and the part of a later delivery already delivered is exactly
[max(clip, min earlier clip), last_offset]: an equi-grouping with window functions, no range self-join.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.jobs.common import (
    CONSUMER_GROUP_HEARTBEAT, JOIN_GROUP, OFFSET_COMMIT, OFFSET_FETCH, SYNC_GROUP, group_kinds, is_ok, nonempty,
    request_str, response_str, with_client_host,
)
from pipelines.jobs.links import link_deliveries

OUTPUT = ["kind", "group_id", "topic", "partition", "first_offset", "last_offset", "records", "deliveries",
          "first_delivery_ts", "redelivery_ts", "first_member_id", "redelivery_member_id", "first_conn_id",
          "redelivery_conn_id", "first_client_id", "redelivery_client_id", "delivery_count", "ack_history",
          "producer_id", "producer_epoch", "base_sequence", "original_offset", "cause", "possible", "first_position",
          "wire_only"]
COMMIT = "struct<topics:array<struct<name:string,partitions:array<struct<partition_index:int,committed_offset:bigint>>>>>"

# A non-idempotent producer's retry re-sends the same batch within its delivery timeout (120 s by default).
RETRY_WINDOW_S = 120


def _consumer_deliveries(batches: DataFrame, spans: DataFrame) -> DataFrame:
    """Fetched batches (control batches included: they keep ranges contiguous but hold no records for the app)."""
    fetched = (with_client_host(batches)
               .drop("group_id", "member_id")
               .where((F.col("direction") == "fetch") & F.col("fetch_offset").isNotNull()
                      & (F.col("last_offset") >= F.col("fetch_offset"))
                      & (F.coalesce(F.col("partition_error_code"), F.lit(0)) == 0))
               .withColumn("clip", F.greatest("base_offset", "fetch_offset"))
               .withColumn("delivery_id", F.monotonically_increasing_id()))
    linked = link_deliveries(fetched, spans)
    unlinked_key = F.concat(F.lit("client:"), F.col("client_id"), F.lit("@"), F.col("client_host"))
    return linked.withColumn("group_key", F.coalesce(F.col("group_id"), unlinked_key))


def _redelivered_batches(deliveries: DataFrame, records: DataFrame | None) -> DataFrame:
    """One row per (batch, later delivery): the already-delivered part of the batch and who got it first."""
    key = ["group_key", "topic", "partition", "base_offset"]
    order = Window.partitionBy(*key).orderBy("ts", "conn_id", "correlation_id")
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    firsts = {f"first_{c}": F.first(c).over(order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
              for c in ["ts", "member_id", "conn_id", "client_id"]}
    rows = (deliveries.withColumn("prev_clip", F.min("clip").over(before)).withColumns(firsts)
            .where(F.col("prev_clip").isNotNull())
            .withColumn("first_offset", F.greatest("clip", "prev_clip")))
    if records is None:
        whole = F.col("first_offset") == F.col("base_offset")
        count = F.when(F.col("is_control"), 0).when(whole, F.col("record_count").cast("long")).otherwise(
            F.col("last_offset") - F.col("first_offset") + 1)
        return rows.withColumn("records", count)
    fetched = (records.where(F.col("direction") == "fetch")
               .select("conn_id", "correlation_id", "topic", "partition", "base_offset", "offset"))
    counted = (rows.join(fetched, ["conn_id", "correlation_id", "topic", "partition", "base_offset"], "left")
               .groupBy(*rows.columns)
               .agg(F.count(F.when(F.col("offset") >= F.col("first_offset"), 1)).alias("records")))
    return counted.withColumn("records", F.when(F.col("is_control"), 0).otherwise(F.col("records")))


def _group_events(frames: DataFrame, fenced: DataFrame) -> DataFrame:
    """(group_id, ts, rank) of events that explain a redelivery: fencing (3) > rebalance (2) > offset fetch (1)."""
    ts = F.coalesce("ts_request", "ts_response")
    rebalance = frames.where(
        F.col("api_key").isin(JOIN_GROUP, SYNC_GROUP)
        | ((F.col("api_key") == CONSUMER_GROUP_HEARTBEAT) & is_ok(F.col("error_code"))
           & (response_str("$.assignment").isNotNull() | (F.col("response_member_epoch") > F.col("member_epoch")))))
    return (fenced.where(F.col("group_id").isNotNull()).select("group_id", "ts", F.lit(3).alias("rank"))
            .unionByName(rebalance.select("group_id", ts.alias("ts"), F.lit(2).alias("rank")))
            .unionByName(frames.where(F.col("api_key") == OFFSET_FETCH)
                         .select("group_id", ts.alias("ts"), F.lit(1).alias("rank")))
            .where(F.col("group_id").isNotNull()))


def _with_cause(ranges: DataFrame, events: DataFrame) -> DataFrame:
    e = events.alias("e")
    joined = ranges.alias("r").join(
        e, (F.col("r.group_id") == F.col("e.group_id")) & (F.col("e.ts") > F.col("r.first_delivery_ts"))
        & (F.col("e.ts") <= F.col("r.redelivery_ts")), "left")
    best = joined.groupBy(*[F.col(f"r.{c}") for c in ranges.columns]).agg(F.max("e.rank").alias("rank"))
    cause = (F.when(F.col("group_id").isNull(), "unlinked").when(F.col("rank") == 3, "fencing")
             .when(F.col("rank") == 2, "rebalance").when(F.col("rank") == 1, "seek_to_committed")
             .otherwise("refetch"))
    return best.withColumn("cause", cause).drop("rank")


def commits(frames: DataFrame) -> DataFrame:
    """Offsets members committed or tried to commit (rejected commits included: they still state the position the
    client had reached): (group_id, member_id, topic, partition, committed_offset, ts)."""
    c = (frames.where(F.col("api_key") == OFFSET_COMMIT)
         .select("group_id", F.coalesce(nonempty(F.col("member_id")), request_str("$.member_id")).alias("member_id"),
                 F.coalesce("ts_request", "ts_response").alias("ts"),
                 F.from_json(F.col("request_json"), COMMIT).alias("j")))
    topics = c.select("group_id", "member_id", "ts", F.explode("j.topics").alias("t"))
    return topics.select("group_id", "member_id", "ts", F.col("t.name").alias("topic"),
                         F.explode("t.partitions").alias("p")).select(
        "group_id", "member_id", "ts", "topic", F.col("p.partition_index").alias("partition"),
        F.col("p.committed_offset").alias("committed_offset"))


def _with_first_position(ranges: DataFrame, committed: DataFrame) -> DataFrame:
    """The first member's highest commit for the partition after the first delivery, and what it shows."""
    k = committed.alias("k")
    joined = ranges.alias("r").join(
        k, (F.col("k.group_id") == F.col("r.group_id")) & (F.col("k.member_id") == F.col("r.first_member_id"))
        & (F.col("k.topic") == F.col("r.topic")) & (F.col("k.partition") == F.col("r.partition"))
        & (F.col("k.ts") > F.col("r.first_delivery_ts")), "left")
    out = joined.groupBy(*[F.col(f"r.{c}") for c in ranges.columns]).agg(
        F.max("k.committed_offset").alias("first_position"))
    return out.withColumn("wire_only", F.coalesce(F.col("first_position") <= F.col("first_offset"), F.lit(False)))


def _merge_ranges(rows: DataFrame, same: list[str]) -> DataFrame:
    """Merge ranges that touch (next first_offset = last_offset + 1) and agree on `same` into one row."""
    order = Window.partitionBy(*same).orderBy("first_offset", "last_offset")
    island = F.sum(F.when(F.col("first_offset") == F.lag("last_offset").over(order) + 1, 0).otherwise(1)).over(
        order.rowsBetween(Window.unboundedPreceding, 0))
    return (rows.withColumn("_island", island)
            .groupBy(*same, "_island").agg(
                F.min("first_offset").alias("first_offset"), F.max("last_offset").alias("last_offset"),
                F.sum("records").alias("records"), F.min("first_delivery_ts").alias("first_delivery_ts"),
                F.min("redelivery_ts").alias("redelivery_ts"), F.max("first_position").alias("first_position"))
            .drop("_island"))


def consumer_duplicates(batches: DataFrame, records: DataFrame | None, spans: DataFrame, frames: DataFrame,
                        fenced: DataFrame) -> DataFrame:
    redelivered = _redelivered_batches(_consumer_deliveries(batches, spans), records)
    per_range = (redelivered.groupBy("group_key", "group_id", "topic", "partition", "first_offset", "last_offset")
                 .agg(F.min_by(F.struct("records", "first_ts", "first_member_id", "first_conn_id", "first_client_id",
                                        F.col("ts").alias("redelivery_ts"),
                                        F.col("member_id").alias("redelivery_member_id"),
                                        F.col("conn_id").alias("redelivery_conn_id"),
                                        F.col("client_id").alias("redelivery_client_id")), "ts").alias("x"),
                      (F.count(F.lit(1)) + 1).alias("deliveries"))
                 .select("*", "x.*").drop("x").withColumnRenamed("first_ts", "first_delivery_ts"))
    caused = _with_first_position(_with_cause(per_range, _group_events(frames, fenced)), commits(frames))
    same = ["group_key", "group_id", "topic", "partition", "deliveries", "first_member_id", "redelivery_member_id",
            "first_conn_id", "redelivery_conn_id", "first_client_id", "redelivery_client_id", "cause", "wire_only"]
    merged = _merge_ranges(caused, same).where(F.col("records") > 0)
    kinds = group_kinds(frames).withColumnRenamed("kind", "group_kind")
    return merged.drop("group_key").join(kinds, "group_id", "left").withColumns({
        "kind": F.coalesce(F.col("group_kind"), F.lit("none")), "delivery_count": F.lit(None).cast("int"),
        "ack_history": F.lit(None).cast("array<string>"), "producer_id": F.lit(None).cast("long"),
        "producer_epoch": F.lit(None).cast("int"), "base_sequence": F.lit(None).cast("int"),
        "original_offset": F.lit(None).cast("long"), "possible": F.lit(False)}).select(OUTPUT)


def _not_consumer() -> dict:
    return {"first_position": F.lit(None).cast("long"), "wire_only": F.lit(False)}


def share_duplicates(share: DataFrame) -> DataFrame:
    """Re-acquisitions the broker counted (delivery count > 1), with the acks and acquisitions before them. Rows for
    the same range are folded: deliveries is the highest delivery count seen."""
    acquired = share.where(F.col("kind") == "acquired")
    again = acquired.where(F.col("delivery_count") > 1).alias("a")
    overlap = lambda o: ((F.col(f"{o}.group_id") == F.col("a.group_id")) & (F.col(f"{o}.topic") == F.col("a.topic"))  # noqa: E731
                         & (F.col(f"{o}.partition") == F.col("a.partition")) & (F.col(f"{o}.ts") < F.col("a.ts"))
                         & (F.col(f"{o}.first_offset") <= F.col("a.last_offset"))
                         & (F.col(f"{o}.last_offset") >= F.col("a.first_offset")))
    acks = share.where((F.col("kind") == "ack") & (F.col("ack_type") != "gap")).alias("k")
    with_acks = again.join(acks, overlap("k"), "left").groupBy(
        "a.group_id", "a.topic", "a.partition", "a.first_offset", "a.last_offset", "a.ts", "a.member_id",
        "a.conn_id", "a.client_id", "a.delivery_count").agg(
        F.transform(F.array_sort(F.collect_list(F.when(F.col("k.ack_type").isNotNull(),
                                                       F.struct("k.ts", "k.ack_type")))),
                    lambda s: F.concat(s["ack_type"], F.lit("@"),
                                       F.date_format(s["ts"], "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"))).alias("ack_history"),
        F.max_by("k.ack_type", "k.ts").alias("last_ack"))
    firsts = acquired.alias("f")
    w = with_acks.alias("a").join(firsts, overlap("f"), "left").groupBy(*[F.col(f"a.{c}") for c in with_acks.columns]).agg(
        F.min_by(F.struct(F.col("f.ts").alias("first_delivery_ts"), F.col("f.member_id").alias("first_member_id"),
                          F.col("f.conn_id").alias("first_conn_id"), F.col("f.client_id").alias("first_client_id")),
                 "f.ts").alias("f"))
    cause = (F.when(F.col("last_ack") == "release", "released").when(F.col("last_ack") == "reject", "rejected")
             .otherwise("lock_timeout"))
    per_row = w.select(
        "group_id", "topic", "partition", "first_offset", "last_offset", "delivery_count", "ack_history",
        F.col("ts").alias("redelivery_ts"), F.col("member_id").alias("redelivery_member_id"),
        F.col("conn_id").alias("redelivery_conn_id"), F.col("client_id").alias("redelivery_client_id"),
        "f.*", cause.alias("cause"))
    folded = per_row.groupBy("group_id", "topic", "partition", "first_offset", "last_offset").agg(
        F.min_by(F.struct(*[c for c in per_row.columns if c not in
                            ("group_id", "topic", "partition", "first_offset", "last_offset")]),
                 "redelivery_ts").alias("x"),
        F.max("delivery_count").alias("max_count")).select("*", "x.*").drop("x")
    return folded.withColumns({
        "kind": F.lit("share_group"), "deliveries": F.col("max_count").cast("long"),
        "delivery_count": F.col("max_count").cast("int"),
        "records": F.col("last_offset") - F.col("first_offset") + 1,
        "producer_id": F.lit(None).cast("long"), "producer_epoch": F.lit(None).cast("int"),
        "base_sequence": F.lit(None).cast("int"), "original_offset": F.lit(None).cast("long"),
        "possible": F.lit(False), **_not_consumer()}).select(OUTPUT)


def producer_duplicates(batches: DataFrame, records: DataFrame | None) -> DataFrame:
    """Idempotent producers: the same (producer id, epoch, base sequence) appended at two offsets. Non-idempotent
    ones (with `records/`): the same batch content re-sent within the retry window, flagged as possible."""
    produced = batches.where((F.col("direction") == "produce") & ~F.col("is_control"))
    key = ["producer_id", "producer_epoch", "base_sequence", "topic", "partition"]
    appends = (produced.where((F.col("producer_id") >= 0) & (F.col("assigned_offset") >= 0))
               .groupBy(*key, "assigned_offset")
               .agg(F.min_by(F.struct("ts", "conn_id", "client_id", "record_count"), "ts").alias("x"))
               .select("*", "x.*").drop("x"))
    order = Window.partitionBy(*key).orderBy("ts", "assigned_offset")
    everything = order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    proven = (appends.withColumn("n", F.row_number().over(order))
              .withColumn("deliveries", F.count(F.lit(1)).over(everything))
              .withColumn("original_offset", F.first("assigned_offset").over(everything))
              .withColumn("first_delivery_ts", F.first("ts").over(everything))
              .withColumn("first_conn_id", F.first("conn_id").over(everything))
              .withColumn("first_client_id", F.first("client_id").over(everything))
              .where(F.col("n") == 2)
              .select(*key, "original_offset", "first_delivery_ts", "first_conn_id", "first_client_id",
                      "deliveries", F.col("assigned_offset").alias("first_offset"),
                      (F.col("assigned_offset") + F.col("record_count") - 1).alias("last_offset"),
                      F.col("record_count").cast("long").alias("records"), F.col("ts").alias("redelivery_ts"),
                      F.col("conn_id").alias("redelivery_conn_id"), F.col("client_id").alias("redelivery_client_id"),
                      F.lit("retry_appended_twice").alias("cause"), F.lit(False).alias("possible")))
    result = proven
    if records is not None:
        result = result.unionByName(_possible_resends(produced, records))
    return result.withColumns({
        "kind": F.lit("producer"), "group_id": F.lit(None).cast("string"),
        "first_member_id": F.lit(None).cast("string"), "redelivery_member_id": F.lit(None).cast("string"),
        "delivery_count": F.lit(None).cast("int"), "ack_history": F.lit(None).cast("array<string>"),
        **_not_consumer()}).select(OUTPUT)


def _possible_resends(produced: DataFrame, records: DataFrame) -> DataFrame:
    """Non-idempotent batches whose records hash the same as an earlier batch of the same client and partition,
    sent in another request within RETRY_WINDOW_S."""
    batch_key = ["conn_id", "correlation_id", "topic", "partition", "base_offset"]
    prints = (records.where(F.col("direction") == "produce")
              .groupBy(*batch_key)
              .agg(F.xxhash64(F.array_sort(F.collect_list(F.struct(
                  F.col("offset") - F.col("base_offset"), "key_hash", "value_hash")))).alias("fingerprint")))
    sent = (produced.where(F.col("producer_id") < 0).join(prints, batch_key, "inner")
            .withColumn("assigned", F.coalesce("assigned_offset", F.lit(-1))))
    order = Window.partitionBy("client_id", "topic", "partition", "fingerprint", "record_count").orderBy("ts")
    everything = order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    return (sent.withColumn("prev_ts", F.lag("ts").over(order))
            .withColumn("n", F.row_number().over(order))
            .withColumn("deliveries", F.count(F.lit(1)).over(everything))
            .withColumn("first_assigned", F.first("assigned").over(everything))
            .withColumn("first_delivery_ts", F.first("ts").over(everything))
            .withColumn("first_conn_id", F.first("conn_id").over(everything))
            .where((F.col("n") == 2)
                   & (F.unix_micros("ts") - F.unix_micros("prev_ts") <= RETRY_WINDOW_S * 1_000_000))
            .select(F.col("producer_id").cast("long"), F.col("producer_epoch").cast("int"),
                    F.col("base_sequence").cast("int"), "topic", "partition",
                    F.when(F.col("first_assigned") >= 0, F.col("first_assigned")).alias("original_offset"),
                    "first_delivery_ts", "first_conn_id", F.col("client_id").alias("first_client_id"),
                    F.col("deliveries").cast("long"),
                    F.when(F.col("assigned") >= 0, F.col("assigned")).alias("first_offset"),
                    F.when(F.col("assigned") >= 0, F.col("assigned") + F.col("record_count") - 1).alias("last_offset"),
                    F.col("record_count").cast("long").alias("records"), F.col("ts").alias("redelivery_ts"),
                    F.col("conn_id").alias("redelivery_conn_id"), F.col("client_id").alias("redelivery_client_id"),
                    F.lit("possible_retry").alias("cause"), F.lit(True).alias("possible")))


def duplicate_deliveries(frames: DataFrame, batches: DataFrame, records: DataFrame | None, share: DataFrame,
                         spans: DataFrame, fenced: DataFrame) -> DataFrame:
    return (consumer_duplicates(batches, records, spans, frames, fenced)
            .unionByName(share_duplicates(share))
            .unionByName(producer_duplicates(batches, records)))
