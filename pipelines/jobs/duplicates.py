"""duplicate_deliveries: offsets delivered (or appended) more than once, with the likely cause.

A consumer delivery is a fetched batch clipped at the fetch offset the client asked for (records below it are skipped
by clients). Counting how many deliveries cover each offset is a sweep over range starts and ends with running sums
(window functions, no range self-join). The member's next commit for the partition cuts its delivery where its
application stopped: records fetched but never consumed (dropped on a revocation, held by a frozen process) crossed
the wire without reaching the application, and are reported as `wire_only`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.pipelines.jobs.common import (
    CONSUMER_GROUP_HEARTBEAT, ISO, JOIN_GROUP, OFFSET_COMMIT, OFFSET_FETCH, SYNC_GROUP, group_kinds, is_ok, nonempty,
    request_str, response_str, with_client_host,
)
from kafkatap.pipelines.jobs.links import link_deliveries
from kafkatap.pipelines.jobs.ranges import overlapping

OUTPUT = ["kind", "group_id", "topic", "partition", "first_offset", "last_offset", "records", "deliveries",
          "first_delivery_ts", "redelivery_ts", "first_member_id", "redelivery_member_id", "first_conn_id",
          "redelivery_conn_id", "first_client_id", "redelivery_client_id", "delivery_count", "ack_history",
          "producer_id", "producer_epoch", "base_sequence", "original_offset", "cause", "possible", "first_position",
          "wire_only", "wire_deliveries"]
COMMIT = "struct<topics:array<struct<name:string,partitions:array<struct<partition_index:int,committed_offset:bigint>>>>>"

# A non-idempotent producer's retry re-sends the same batch within its delivery timeout (120 s by default).
RETRY_WINDOW_S = 120


def _consumer_deliveries(batches: DataFrame, spans: DataFrame) -> DataFrame:
    """Fetched data batches, clipped at the fetch offset, linked to the member that fetched them."""
    fetched = (with_client_host(batches)
               .drop("group_id", "member_id")
               .where((F.col("direction") == "fetch") & F.col("fetch_offset").isNotNull()
                      & (F.col("last_offset") >= F.col("fetch_offset")) & ~F.col("is_control")
                      & (F.coalesce(F.col("partition_error_code"), F.lit(0)) == 0))
               .withColumn("clip", F.greatest("base_offset", "fetch_offset"))
               .withColumn("delivery_id", F.xxhash64("conn_id", "correlation_id", "topic", "partition",
                                                     "base_offset")))
    linked = link_deliveries(fetched, spans)
    unlinked_key = F.concat(F.lit("client:"), F.col("client_id"), F.lit("@"), F.col("client_host"))
    return linked.withColumn("group_key", F.coalesce(F.col("group_id"), unlinked_key))


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


def _with_consumed(deliveries: DataFrame, committed: DataFrame) -> DataFrame:
    """Add `next_position` (the offset the member next committed for the partition after the delivery) and
    `consumed_last`, the end of what its application consumed of the delivery.

    Clients commit the position their application reached, so a delivery is cut at the member's next commit of the
    partition. When the member's next step on the partition does not continue where the delivery ended (its next
    fetch starts elsewhere, or its next commit jumps past offsets it never fetched), its position was reset in
    between (the partition was revoked and reassigned, or reset to the committed offset): the delivery is then cut where a refetch goes back to, or else at the member's last commit before it
    (auto-commit clients commit on revocation). Members that never commit the partition give no evidence: their
    fetches count whole."""
    key = ["group_id", "member_id", "topic", "partition"]
    marks = committed.select(*key, "ts", F.col("committed_offset").alias("_commit"))
    is_fetch = F.col("delivery_id").isNotNull()
    both = (deliveries.unionByName(marks, allowMissingColumns=True)
            .withColumn("_us", F.unix_micros("ts"))
            .withColumn("_fetch_clip", F.min(F.when(is_fetch, F.col("clip"))).over(Window.partitionBy(*key, "ts")))
            .withColumn("_resp_last", F.max(F.when(is_fetch, F.col("last_offset"))).over(Window.partitionBy(*key, "ts")))
            .withColumn("_fetch_us", F.when(is_fetch, F.col("_us")))
            .withColumn("_commit_us", F.when(F.col("_commit").isNotNull(), F.col("_us"))))
    ordered = Window.partitionBy(*key).orderBy("_us")
    # "the next value at a later time" as the last one over a reversed, growing frame: Spark evaluates a frame that
    # runs to unboundedFollowing from a moving start again for every row (quadratic in a partition's fetches)
    later = Window.partitionBy(*key).orderBy(F.col("_us").desc()).rangeBetween(Window.unboundedPreceding, -1)
    nxt = {c: F.last(c, ignorenulls=True).over(later) for c in ["_commit", "_commit_us", "_fetch_us", "_fetch_clip"]}
    cut = F.when(F.col("next_position").isNull(), F.col("last_offset")).otherwise(
        F.least(F.col("last_offset"), F.col("next_position") - 1))
    fetch_first = F.col("_nfetch_us") < F.coalesce(F.col("_ncommit_us"), F.lit(2**62))
    commit_first = F.col("_ncommit_us") <= F.coalesce(F.col("_nfetch_us"), F.lit(2**62))
    # continuity is judged on the whole fetch response (its batches share a time), not on each batch
    reset = ((fetch_first & (F.col("_nfetch_clip") != F.col("_resp_last") + 1))
             | (commit_first & (F.col("next_position") > F.col("_resp_last") + 1)))
    backward = fetch_first & (F.col("_nfetch_clip") <= F.col("_resp_last"))
    reset_at = F.when(backward, F.col("_nfetch_clip")).otherwise(F.col("_prev_commit"))
    evidence = F.col("_prev_commit").isNotNull() | F.col("next_position").isNotNull()
    return (both.withColumn("next_position", nxt["_commit"]).withColumn("_ncommit_us", nxt["_commit_us"])
            .withColumn("_nfetch_us", nxt["_fetch_us"]).withColumn("_nfetch_clip", nxt["_fetch_clip"])
            .withColumn("_prev_commit", F.last("_commit", ignorenulls=True).over(
                ordered.rangeBetween(Window.unboundedPreceding, 0)))
            .where(is_fetch)
            .withColumn("consumed_last", F.when(reset & evidence & reset_at.isNotNull(),
                                                F.least(F.col("last_offset"), reset_at - 1)).otherwise(cut))
            .drop("_commit", "_us", "_fetch_clip", "_fetch_us", "_commit_us", "_ncommit_us", "_nfetch_us",
                  "_nfetch_clip", "_prev_commit", "_resp_last"))


def _sweep(key: list[str], *sources: tuple[DataFrame, str, str, dict[str, Column]]) -> DataFrame:
    """Maximal offset segments with, per counter, the summed weight of the ranges covering each: a sweep over range
    starts (+weight) and ends (-weight) with running sums, exact per offset without a range self-join. A source is
    (ranges, first-offset column, last-offset column, {counter: weight})."""
    names = sorted({n for *_, weights in sources for n in weights})
    events = None
    for df, lo, hi, weights in sources:
        for pos, sign in ((F.col(lo), 1), (F.col(hi) + 1, -1)):
            part = df.select(*key, pos.alias("pos"), *[(weights.get(n, F.lit(0)) * sign).alias(n) for n in names])
            events = part if events is None else events.unionByName(part)
    by_pos = Window.partitionBy(*key).orderBy("pos")
    upto = by_pos.rowsBetween(Window.unboundedPreceding, 0)
    return (events.groupBy(*key, "pos").agg(*[F.sum(n).alias(n) for n in names])
            .withColumns({n: F.sum(n).over(upto) for n in names})
            .withColumn("last_offset", F.lead("pos").over(by_pos) - 1)
            .where(F.col("last_offset").isNotNull()).withColumnRenamed("pos", "first_offset"))


def _islands(segments: DataFrame, same: list[str], *aggs: Column) -> DataFrame:
    """Adjacent segments that agree on `same`, merged into runs."""
    order = Window.partitionBy(*same).orderBy("first_offset")
    island = F.sum(F.when(F.col("first_offset") == F.lag("last_offset").over(order) + 1, 0).otherwise(1)).over(
        order.rowsBetween(Window.unboundedPreceding, 0))
    return (segments.withColumn("_island", island).groupBy(*same, "_island")
            .agg(F.min("first_offset").alias("first_offset"), F.max("last_offset").alias("last_offset"), *aggs)
            .drop("_island"))


def _coverage_runs(deliveries: DataFrame, key: list[str]) -> DataFrame:
    """Runs of offsets fetched at least twice, with how many fetches (`wire_deliveries`) and how many consumed
    deliveries (`deliveries`) cover each."""
    consumed = deliveries.where(F.col("consumed_last") >= F.col("clip"))
    segments = (_sweep(key, (deliveries, "clip", "last_offset", {"wire_deliveries": F.lit(1)}),
                       (consumed, "clip", "consumed_last", {"deliveries": F.lit(1)}))
                .where(F.col("wire_deliveries") >= 2)
                .withColumn("_app", F.col("deliveries") >= 2))
    segments = segments.withColumn("_count", F.when(F.col("_app"), F.col("deliveries"))
                                   .otherwise(F.col("wire_deliveries")))
    return _islands(segments, [*key, "_app", "_count"], F.max("wire_deliveries").alias("wire_deliveries"),
                    F.max("deliveries").alias("deliveries")).drop("_app", "_count")


def _first_two(runs: DataFrame, deliveries: DataFrame, key: list[str]) -> DataFrame:
    """The first two deliveries covering each run's first offset (consumed ones, or fetches for wire-only runs)."""
    pairs = overlapping(runs, deliveries, key, ("first_offset", "first_offset"), ("clip", "last_offset"), "d_")
    end = F.when(F.col("deliveries") >= 2, F.col("d_consumed_last")).otherwise(F.col("d_last_offset"))
    who = F.struct(F.col("d_ts").alias("ts"), F.col("d_member_id").alias("member_id"),
                   F.col("d_conn_id").alias("conn_id"), F.col("d_client_id").alias("client_id"),
                   F.col("d_next_position").alias("next_position"))
    pair = (pairs.where(end >= F.col("first_offset")).groupBy(*runs.columns)
            .agg(F.slice(F.array_sort(F.collect_list(who)), 1, 2).alias("ds")))
    f, s = F.col("ds")[0], F.col("ds")[1]
    return pair.select(
        *runs.columns, f["ts"].alias("first_delivery_ts"), s["ts"].alias("redelivery_ts"),
        f["member_id"].alias("first_member_id"), s["member_id"].alias("redelivery_member_id"),
        f["conn_id"].alias("first_conn_id"), s["conn_id"].alias("redelivery_conn_id"),
        f["client_id"].alias("first_client_id"), s["client_id"].alias("redelivery_client_id"),
        f["next_position"].alias("first_position"))


def _record_counts(runs: DataFrame, records: DataFrame | None) -> DataFrame:
    """Records in each run: its length, or with `records/` the distinct fetched offsets inside it (compacted topics
    and transaction markers leave holes), counted with a running sum instead of a range join."""
    length = F.col("last_offset") - F.col("first_offset") + 1
    if records is None:
        return runs.withColumn("records", length)
    ids = runs.withColumn("_run", F.xxhash64(*runs.columns))
    offsets = (records.where(F.col("direction") == "fetch").select("topic", "partition", "offset").distinct()
               .select("topic", "partition", F.col("offset").alias("pos"), F.lit(None).cast("long").alias("_run"),
                       F.lit(None).cast("string").alias("_edge"), F.lit(1).alias("_rank")))
    edges = (ids.select("topic", "partition", F.col("first_offset").alias("pos"), "_run",
                        F.lit("start").alias("_edge"), F.lit(0).alias("_rank"))
             .unionByName(ids.select("topic", "partition", (F.col("last_offset") + 1).alias("pos"), "_run",
                                     F.lit("end").alias("_edge"), F.lit(0).alias("_rank"))))
    before = (Window.partitionBy("topic", "partition").orderBy("pos", "_rank")
              .rowsBetween(Window.unboundedPreceding, -1))
    seen = (edges.unionByName(offsets).withColumn("_seen", F.coalesce(F.sum("_rank").over(before), F.lit(0)))
            .where(F.col("_run").isNotNull())
            .groupBy("_run").agg((F.max(F.when(F.col("_edge") == "end", F.col("_seen")))
                                  - F.max(F.when(F.col("_edge") == "start", F.col("_seen")))).alias("records")))
    return ids.join(seen, "_run", "left").drop("_run")


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
    """The strongest event of the range's group after its first delivery and at or before its redelivery.

    A sweep instead of a time-range join (which would pair every range with every event of its group): ranges and
    events in one time order per group (events first on ties), and for each rank the time of the latest event of
    that rank so far; an event explains the redelivery when it came after the first delivery."""
    order = Window.partitionBy("group_id").orderBy("ts", "_is_range").rowsBetween(Window.unboundedPreceding, 0)
    latest = {r: F.last(F.when(F.col("rank") == r, F.col("ts")), ignorenulls=True).over(order) for r in (3, 2, 1)}
    after = {r: F.coalesce(latest[r] > F.col("first_delivery_ts"), F.lit(False)) for r in latest}
    swept = (ranges.withColumn("ts", F.col("redelivery_ts")).withColumn("_is_range", F.lit(True))
             .unionByName(events.withColumn("_is_range", F.lit(False)), allowMissingColumns=True))
    cause = (F.when(F.col("group_id").isNull(), "unlinked").when(after[3], "fencing").when(after[2], "rebalance")
             .when(after[1], "seek_to_committed").otherwise("refetch"))
    return swept.withColumn("cause", cause).where(F.col("_is_range")).select(*ranges.columns, "cause")


def consumer_duplicates(batches: DataFrame, records: DataFrame | None, spans: DataFrame, frames: DataFrame,
                        fenced: DataFrame) -> DataFrame:
    key = ["group_key", "group_id", "topic", "partition"]
    # Materialized once: every later step reads the deliveries several times, and Spark would otherwise plan and
    # run their whole lineage (links, windows, commits) again inside each of those steps.
    deliveries = _with_consumed(_consumer_deliveries(batches, spans), commits(frames)).localCheckpoint()
    runs = _first_two(_coverage_runs(deliveries, key), deliveries, key).localCheckpoint()
    caused = _with_cause(_record_counts(runs, records), _group_events(frames, fenced))
    kinds = group_kinds(frames).withColumnRenamed("kind", "group_kind")
    return (caused.where(F.col("records") > 0).drop("group_key").join(kinds, "group_id", "left")
            .withColumn("wire_only", F.col("deliveries") < 2)
            .withColumn("deliveries", F.when(F.col("wire_only"), F.col("wire_deliveries"))
                        .otherwise(F.col("deliveries")))
            .withColumns({
                "kind": F.coalesce(F.col("group_kind"), F.lit("none")), "delivery_count": F.lit(None).cast("int"),
                "ack_history": F.lit(None).cast("array<string>"), "producer_id": F.lit(None).cast("long"),
                "producer_epoch": F.lit(None).cast("int"), "base_sequence": F.lit(None).cast("int"),
                "original_offset": F.lit(None).cast("long"), "possible": F.lit(False),
                "deliveries": F.col("deliveries").cast("long")})
            .select(*OUTPUT))


def _not_consumer() -> dict:
    return {"first_position": F.lit(None).cast("long"), "wire_only": F.lit(False),
            "wire_deliveries": F.lit(None).cast("long")}


def _acquisition_segments(acquired: DataFrame, again: DataFrame, key: list[str]) -> DataFrame:
    """One sweep over a share partition's acquisitions: per offset segment, how many acquisitions cover it
    (`deliveries`) and how many of those had a delivery count above 1 (`_again`)."""
    offsets = ("first_offset", "last_offset")
    return _sweep(key, (acquired, *offsets, {"deliveries": F.lit(1)}), (again, *offsets, {"_again": F.lit(1)}))


def _acquired_before_capture(segments: DataFrame, again: DataFrame, key: list[str]) -> DataFrame:
    """Offsets acquired once in the capture with a delivery count above 1: the broker had delivered them before the
    capture began. One run per acquisition, its columns prefixed `a_`."""
    offsets = ("first_offset", "last_offset")
    once = segments.where((F.col("deliveries") == 1) & (F.col("_again") == 1)).select(*key, *offsets)
    who = ["a_ts", "a_conn_id", "a_correlation_id", "a_member_id", "a_client_id", "a_delivery_count"]
    pairs = overlapping(once, again, key, offsets, offsets, "a_").select(*key, *offsets, *who)
    return _islands(pairs, [*key, *who])


def share_duplicates(share: DataFrame) -> DataFrame:
    """Offsets acquired more than once in the capture (`deliveries` counts the acquisitions seen; `delivery_count`
    is the broker's own highest count), with the acks between the first two acquisitions and the likely cause; and
    offsets acquired once in the capture whose delivery count says they were delivered before it began."""
    key = ["group_id", "topic", "partition"]
    acquired = share.where(F.col("kind") == "acquired")
    again = acquired.where(F.col("delivery_count") > 1)
    segments = _acquisition_segments(acquired, again, key)
    runs = _islands(segments.where(F.col("deliveries") >= 2), [*key, "deliveries"])
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
                F.lit(False).alias("possible"), *[v.alias(k) for k, v in _not_consumer().items()])
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
        F.lit(False).alias("possible"), *[v.alias(k) for k, v in _not_consumer().items()]).select(OUTPUT)


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
