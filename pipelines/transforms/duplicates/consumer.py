"""Consumer duplicates: offsets a group member (or an unlinked client) fetched more than once, with the likely cause.

A consumer delivery is a fetched batch clipped at the fetch offset the client asked for (records below it are skipped
by clients), linked to the member that fetched it and cut where the member's commits show its application stopped.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.intermediates import broadcast_small, emptied, materialize
from kafkatap.pipelines.transforms.common import group_kinds, is_ok, of_apis, response_str, with_client_host
from kafkatap.pipelines.transforms.duplicates.commits import commits, with_consumed
from kafkatap.pipelines.transforms.duplicates.segments import OUTPUT, islands, sweep
from kafkatap.pipelines.transforms.links import link_deliveries
from kafkatap.pipelines.transforms.ranges import overlapping


def _consumer_deliveries(batches: DataFrame, spans: DataFrame) -> DataFrame:
    """Fetched data batches, clipped at the fetch offset, linked to the member that fetched them: only the columns
    the later steps read (the deliveries are materialized twice and joined back by id, so each column left out is
    one less to copy millions of times)."""
    fetched = (with_client_host(batches)
               .where((F.col("direction") == "fetch") & F.col("fetch_offset").isNotNull()
                      & (F.col("last_offset") >= F.col("fetch_offset")) & ~F.col("is_control")
                      & (F.coalesce(F.col("partition_error_code"), F.lit(0)) == 0))
               .select(F.xxhash64("conn_id", "correlation_id", "topic", "partition", "base_offset")
                       .alias("delivery_id"), "conn_id", "ts", "client_id", "client_host", "topic", "partition",
                       F.greatest("base_offset", "fetch_offset").alias("clip"), "last_offset"))
    linked = link_deliveries(fetched, spans)
    unlinked_key = F.concat(F.lit("client:"), F.col("client_id"), F.lit("@"), F.col("client_host"))
    return linked.withColumn("group_key", F.coalesce(F.col("group_id"), unlinked_key))


def _coverage_runs(deliveries: DataFrame, key: list[str]) -> DataFrame:
    """Runs of offsets fetched at least twice, with how many fetches (`wire_deliveries`) and how many consumed
    deliveries (`deliveries`) cover each."""
    # A delivery consumed to its end is one range for both counters; only those cut short add a range of their own
    # (the sweep then reads half the edges: most deliveries are consumed whole).
    whole = F.col("consumed_last") == F.col("last_offset")
    cut = deliveries.where((F.col("consumed_last") >= F.col("clip")) & ~whole)
    app = F.col("deliveries") >= 2
    segments = (sweep(key, (deliveries, "clip", "last_offset",
                            {"wire_deliveries": F.lit(1), "deliveries": F.when(whole, 1).otherwise(0)}),
                       (cut, "clip", "consumed_last", {"deliveries": F.lit(1)}))
                .where(F.col("wire_deliveries") >= 2)
                .withColumns({"_app": app, "_count": F.when(app, F.col("deliveries"))
                              .otherwise(F.col("wire_deliveries"))}))
    return islands(segments, [*key, "_app", "_count"], F.max("wire_deliveries").alias("wire_deliveries"),
                    F.max("deliveries").alias("deliveries"), key=key).drop("_app", "_count")


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
    rebalance = of_apis(frames, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.CONSUMER_GROUP_HEARTBEAT).where(
        (F.col("api_key") != ApiKey.CONSUMER_GROUP_HEARTBEAT)
        | (is_ok(F.col("error_code"))
           & (response_str("$.assignment").isNotNull() | (F.col("response_member_epoch") > F.col("member_epoch")))))
    return (fenced.where(F.col("group_id").isNotNull()).select("group_id", "ts", F.lit(3).alias("rank"))
            .unionByName(rebalance.select("group_id", ts.alias("ts"), F.lit(2).alias("rank")))
            .unionByName(of_apis(frames, ApiKey.OFFSET_FETCH)
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
    swept = (ranges.withColumns({"ts": F.col("redelivery_ts"), "_is_range": F.lit(True)})
             .unionByName(events.withColumn("_is_range", F.lit(False)), allowMissingColumns=True))
    cause = (F.when(F.col("group_id").isNull(), "unlinked").when(after[3], "fencing").when(after[2], "rebalance")
             .when(after[1], "seek_to_committed").otherwise("refetch"))
    return swept.withColumn("cause", cause).where(F.col("_is_range")).select(*ranges.columns, "cause")


def consumer_duplicates(batches: DataFrame, records: DataFrame | None, spans: DataFrame, frames: DataFrame,
                        fenced: DataFrame) -> DataFrame:
    """Runs of offsets a group (or an unlinked client) fetched at least twice: `deliveries` counts the consumed
    deliveries, or the fetches for `wire_only` runs that reached the application once."""
    key = ["group_key", "group_id", "topic", "partition"]
    # Materialized once: every later step reads the deliveries several times, and Spark would otherwise plan and
    # run their whole lineage (links, windows, commits) again inside each of those steps.
    # The linked deliveries too: `with_consumed` reads them twice (its windows' narrow rows, the join back).
    deliveries = materialize(with_consumed(materialize(_consumer_deliveries(batches, spans)), commits(frames)))
    # the runs are few next to the deliveries (89,442 against 4.4 M at 10 M generated frames): broadcast when few
    # enough, the deliveries then meet them without an exchange and a sort
    runs = emptied(_first_two(broadcast_small(_coverage_runs(deliveries, key)), deliveries, key))
    caused = _with_cause(_record_counts(runs, records), _group_events(frames, fenced))
    kinds = group_kinds(frames).withColumnRenamed("kind", "group_kind")
    wire_only = F.col("deliveries") < 2
    return (caused.where(F.col("records") > 0).drop("group_key").join(kinds, "group_id", "left")
            .withColumns({
                "wire_only": wire_only,
                "deliveries": F.when(wire_only, F.col("wire_deliveries")).otherwise(F.col("deliveries")).cast("long"),
                "kind": F.coalesce(F.col("group_kind"), F.lit("none")), "delivery_count": F.lit(None).cast("int"),
                "ack_history": F.lit(None).cast("array<string>"), "producer_id": F.lit(None).cast("long"),
                "producer_epoch": F.lit(None).cast("int"), "base_sequence": F.lit(None).cast("int"),
                "original_offset": F.lit(None).cast("long"), "possible": F.lit(False)})
            .select(*OUTPUT))

