"""share_records: the KIP-932 share-partition state machine, rebuilt record range by record range from the wire.

A share partition keeps state per offset: AVAILABLE -> ACQUIRED (a time-bounded lock, delivery count + 1) ->
ACKNOWLEDGED on ACCEPT, back to AVAILABLE on RELEASE or when the lock runs out while the count is under the group's
delivery limit, ARCHIVED on REJECT or when the count is exhausted. The capture holds the transitions the clients
see: acquisitions (ShareFetch responses, with the broker's delivery count and lock duration) and acknowledgements
(ShareFetch / ShareAcknowledge requests, with their responses' errors). Offsets are cut at every range boundary of
either, each elementary segment gets its ordered history (array functions, no Python UDF), and adjacent segments
with the same history are merged back into ranges.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.protocol.generated.errors import ErrorCode
from kafkatap.pipelines.intermediates import materialize
from kafkatap.pipelines.transforms.common import capture_bounds, of_apis, or_empty
from kafkatap.pipelines.transforms.duplicates.segments import islands, sweep
from kafkatap.pipelines.transforms.ranges import overlapping

KEY = ["group_id", "topic", "partition"]
OFFSETS = ("first_offset", "last_offset")
ENDS = {"accept": "accepted", "release": "released", "reject": "rejected", "gap": "gap"}
LOCK_LOST = ["lock_timeout", "reacquired"]
# Broker and group config names of the delivery limit (KIP-932), in DescribeConfigs responses.
BROKER_LIMIT, GROUP_LIMIT = "group.share.delivery.count.limit", "share.delivery.count.limit"
BROKER_RESOURCE, GROUP_RESOURCE = 4, 32
_CONFIGS = ("array<struct<resource_type:int,resource_name:string,error_code:int,"
            "configs:array<struct<name:string,value:string>>>>")


def _error_name(code: Column) -> Column:
    names = F.create_map(*[x for e in ErrorCode for x in (F.lit(int(e)), F.lit(e.name))])
    return F.when(code.isNotNull() & (code != 0), F.coalesce(names[code], F.concat(F.lit("ERROR_"), code)))


def _responses(frames: DataFrame) -> DataFrame:
    """Per ShareFetch / ShareAcknowledge exchange: when it was requested, the lock duration and the top-level error
    of the response (a session error refuses every ack of the request, though its partitions list is empty)."""
    return (of_apis(frames, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE)
            .groupBy("conn_id", "correlation_id")
            .agg(F.min("ts_request").alias("requested"),
                 F.max(F.get_json_object("response_json", "$.acquisition_lock_timeout_ms").cast("int"))
                 .alias("lock_ms"),
                 F.max(F.get_json_object("response_json", "$.error_code").cast("int")).alias("top_error")))


def _acquisitions(share: DataFrame, responses: DataFrame) -> DataFrame:
    return (share.where((F.col("kind") == "acquired") & (F.coalesce("error_code", F.lit(0)) == 0))
            .join(responses, ["conn_id", "correlation_id"], "left")
            .select(*KEY, *OFFSETS, "ts", "member_id", "client_id", F.col("delivery_count").cast("int"), "lock_ms",
                    F.coalesce("requested", "ts").alias("requested")))


def _acks(share: DataFrame, responses: DataFrame) -> DataFrame:
    code = F.when(F.coalesce("error_code", F.lit(0)) != 0, F.col("error_code")).otherwise(F.col("top_error"))
    return (share.where(F.col("kind") == "ack").join(responses, ["conn_id", "correlation_id"], "left")
            .select(*KEY, *OFFSETS, "ts", "member_id", "ack_type", _error_name(code.cast("int")).alias("ack_error")))


def delivery_limits(frames: DataFrame) -> DataFrame:
    """(group_id or null for every group, limit) from DescribeConfigs responses: a group's own config, else the
    broker's; the latest answer wins."""
    results = (of_apis(frames, ApiKey.DESCRIBE_CONFIGS).where(F.col("response_json").isNotNull())
               .select(F.coalesce("ts_response", "ts_request").alias("ts"),
                       F.explode(F.from_json(F.get_json_object("response_json", "$.results"), _CONFIGS)).alias("r"))
               .where(F.coalesce("r.error_code", F.lit(0)) == 0)
               .select("ts", "r.resource_type", "r.resource_name", F.explode("r.configs").alias("c")))
    group = (F.col("resource_type") == GROUP_RESOURCE) & (F.col("c.name") == GROUP_LIMIT)
    broker = (F.col("resource_type") == BROKER_RESOURCE) & (F.col("c.name") == BROKER_LIMIT)
    return (results.where((group | broker) & F.col("c.value").isNotNull())
            .select(F.when(group, F.col("resource_name")).alias("group_id"), "ts",
                    F.col("c.value").cast("int").alias("limit"))
            .groupBy("group_id").agg(F.max_by("limit", "ts").alias("limit")))


def _histories(acquired: DataFrame, acks: DataFrame) -> DataFrame:
    """Elementary segments (cut at every acquisition and ack boundary) with their acquisitions and acks, sorted."""
    segments = sweep(KEY, (acquired, *OFFSETS, {"_n": F.lit(1)}), (acks, *OFFSETS, {"_k": F.lit(0)}))
    segments = segments.where(F.col("_n") > 0).select(*KEY, *OFFSETS)
    got = (overlapping(segments, acquired, KEY, OFFSETS, OFFSETS, "a_").groupBy(*KEY, *OFFSETS)
           .agg(F.array_sort(F.collect_list(F.struct(
               F.col("a_ts").alias("ts"), F.col("a_member_id").alias("member_id"),
               F.col("a_client_id").alias("client_id"), F.col("a_delivery_count").alias("delivery_count"),
               F.col("a_lock_ms").alias("lock_ms"), F.col("a_requested").alias("requested")))).alias("acq")))
    acked = (overlapping(segments, acks, KEY, OFFSETS, OFFSETS, "k_").groupBy(*KEY, *OFFSETS)
             .agg(F.array_sort(F.collect_list(F.struct(
                 F.col("k_ts").alias("ts"), F.col("k_member_id").alias("member_id"),
                 F.col("k_ack_type").alias("ack_type"), F.col("k_ack_error").alias("ack_error")))).alias("acks")))
    return (got.join(acked, [*KEY, *OFFSETS], "left")
            .withColumn("acks", F.coalesce("acks", F.array().cast("array<struct<ts:timestamp,member_id:string,"
                                                                   "ack_type:string,ack_error:string>>"))))


def _with_deliveries(history: DataFrame) -> DataFrame:
    """Each acquisition with the member's acknowledgement of it and how it ended (`h`). A member's ack belongs to
    its latest acquisition before the ack (not to the next member's); it ends the delivery when the broker took it
    (no error) before anyone acquired the records again. `renew` acks extend the lock and end nothing. Three passes,
    so that no step repeats another's array work."""
    def own(a: Column) -> Column:
        mine_next = F.array_min(F.transform(
            F.filter("acq", lambda x: (x["ts"] > a["ts"]) & (x["member_id"] == a["member_id"])), lambda x: x["ts"]))
        acks = F.filter("acks", lambda k: (k["member_id"] == a["member_id"]) & (k["ts"] >= a["ts"])
                        & (mine_next.isNull() | (k["ts"] < mine_next)))
        return a.withField("_acks", acks)

    def ack(a: Column, i: Column) -> Column:
        final = F.filter(a["_acks"], lambda k: k["ack_type"] != "renew")
        taken = F.get(F.filter(final, lambda k: k["ack_error"].isNull()), 0)
        return (a.withField("_taken", taken).withField("_ack", F.coalesce(taken, F.get(final, 0)))
                .withField("_next", F.get("acq", i + 1)["ts"]))

    def ended(a: Column) -> Column:
        taken = a["_taken"]
        renewed = F.array_max(F.transform(
            F.filter(a["_acks"], lambda k: (k["ack_type"] == "renew") & k["ack_error"].isNull()
                     & (taken.isNull() | (k["ts"] < taken["ts"]))), lambda k: k["ts"]))
        # the lock starts when the broker acquires the records: after the ShareFetch request, by its response. A
        # broker that times the lock out answers a waiting ShareFetch at once, which can be on the wire before the
        # acquiring response's time + lock (Apache Kafka 4.4, kafka44_share_group): only a re-acquisition before the
        # request's time + lock proves the broker took the records back early
        deadline = F.timestamp_add("MILLISECOND", a["lock_ms"], F.coalesce(renewed, a["ts"]))
        earliest = F.timestamp_add("MILLISECOND", a["lock_ms"], F.coalesce(renewed, a["requested"]))
        by_ack = taken.isNotNull() & (a["_next"].isNull() | (taken["ts"] < a["_next"]))
        end = (F.when(by_ack, F.create_map(*[F.lit(x) for kv in ENDS.items() for x in kv])[taken["ack_type"]])
               .when(a["_next"].isNotNull(), F.when(a["_next"] >= earliest, "lock_timeout").otherwise("reacquired"))
               .when(deadline <= F.col("capture_end"), "lock_timeout")
               .otherwise("held"))
        return a.withField("_end", end).withField("_ended", F.when(by_ack, taken["ts"]).when(
            a["_next"].isNull() & (deadline <= F.col("capture_end")), deadline).when(
            a["_next"] >= earliest, F.least(a["_next"], deadline)))

    def shaped(a: Column) -> Column:
        return F.struct(a["member_id"].alias("member_id"), a["client_id"].alias("client_id"),
                        a["delivery_count"].alias("delivery_count"), a["ts"].alias("acquired_ts"),
                        a["lock_ms"].alias("lock_ms"), a["_ack"]["ack_type"].alias("ack_type"),
                        a["_ack"]["ts"].alias("ack_ts"), a["_ack"]["ack_error"].alias("ack_error"),
                        a["_end"].alias("end"), a["_ended"].alias("_ended"))

    return (history.withColumn("h", F.transform("acq", own)).withColumn("h", F.transform("h", ack))
            .withColumn("h", F.transform("h", ended)).withColumn("h", F.transform("h", shaped)))


def _skipped_after(history: DataFrame, acquired: DataFrame, ended: Column) -> DataFrame:
    """`_gone`: the range was let go (released or timed out) and the broker later acquired records above it
    without it. Back in AVAILABLE it would have been handed out first (acquisition starts at the lowest available
    offset), so it was archived. The highest offset acquired after each instant is a running maximum over the
    partition's timeline, read as of the range's end: no join of every range with every acquisition."""
    ends = history.select(*KEY, *OFFSETS, ended.alias("_t"), F.lit(None).cast("long").alias("_above"),
                          F.lit(0).alias("_kind"))
    acqs = acquired.select(*KEY, F.lit(None).cast("long").alias("first_offset"),
                           F.lit(None).cast("long").alias("last_offset"), F.col("ts").alias("_t"),
                           F.col("last_offset").alias("_above"), F.lit(1).alias("_kind"))
    # "after" as the rows before in the reversed order: Spark evaluates a frame that runs to unboundedFollowing
    # from a moving start again for every row (quadratic in a partition's acquisitions)
    after = (Window.partitionBy(*KEY).orderBy(F.col("_t").desc(), F.col("_kind").desc())
             .rowsBetween(Window.unboundedPreceding, -1))
    later = (ends.unionByName(acqs).withColumn("_later_max", F.max("_above").over(after))
             .where((F.col("_kind") == 0) & F.col("_t").isNotNull()).select(*KEY, *OFFSETS, "_later_max"))
    return (history.join(later, [*KEY, *OFFSETS], "left")
            .withColumn("_gone", F.col("_let_go") & F.coalesce(F.col("_later_max") > F.col("last_offset"),
                                                               F.lit(False))))


def share_records(frames: DataFrame, share: DataFrame) -> DataFrame:
    share, responses = or_empty(share), _responses(frames)
    # Materialized: each is read by the sweep, the range joins and the skipped ranges; the delivery histories by
    # everything after them. Spark would otherwise plan (and run) their lineage again in each reader.
    acquired, acks = materialize(_acquisitions(share, responses)), materialize(_acks(share, responses))
    end = capture_bounds(frames).select("capture_end")
    history = materialize(_with_deliveries(_histories(acquired, acks).crossJoin(F.broadcast(end))).drop(
        "acq", "acks", "capture_end"))
    last = F.element_at("h", -1)
    history = (_skipped_after(history.withColumn("_let_go", last["end"].isin("released", "lock_timeout")),
                              acquired, last["_ended"])
               .withColumn("_count", F.array_max(F.transform("h", lambda d: d["delivery_count"]))))
    inferred = (history.where("_gone").groupBy("group_id").agg(F.max("_count").alias("_inferred")))
    configured = delivery_limits(frames)
    by_group = configured.where(F.col("group_id").isNotNull()).withColumnRenamed("limit", "_group_limit")
    broker = configured.where(F.col("group_id").isNull()).agg(F.max("limit").alias("_broker_limit"))
    history = (history.join(inferred, "group_id", "left").join(by_group, "group_id", "left")
               .crossJoin(F.broadcast(broker)))
    known = F.coalesce("_group_limit", "_broker_limit")
    limit = F.coalesce(known, F.col("_inferred"))
    source = F.when(known.isNotNull(), "describe_configs").when(F.col("_inferred").isNotNull(), "inferred")
    at_limit = F.col("_count") >= F.col("delivery_limit")
    state = (F.when(last["end"] == "accepted", "acknowledged")
             .when(last["end"].isin("rejected", "gap"), "archived")
             .when(last["end"] == "held", "acquired")
             .when(F.col("_gone") | at_limit, "archived")
             .when(F.col("delivery_limit").isNotNull(), "available")
             .otherwise("unknown"))
    reason = (F.when(state != "archived", None).when(last["end"] == "rejected", "rejected")
              .when(last["end"] == "gap", "gap")
              .when(F.col("delivery_limit").isNull() | at_limit, "delivery_limit").otherwise("unknown"))
    terminal = F.when(state.isin("acknowledged", "archived"), last["_ended"])
    first = F.col("h")[0]["acquired_ts"]
    out = (history.withColumns({"delivery_limit": limit.cast("int"), "delivery_limit_source": source})
           .withColumns({"final_state": state, "archive_reason": reason, "terminal_ts": terminal})
           .select(*KEY, *OFFSETS,
                   F.transform("h", lambda d: d.dropFields("_ended")).alias("deliveries"),
                   F.size("h").cast("long").alias("delivered"), F.col("_count").alias("max_delivery_count"),
                   F.array_distinct(F.transform("h", lambda d: d["member_id"])).alias("members"),
                   F.size(F.filter("h", lambda d: d["end"].isin(*LOCK_LOST))).cast("long").alias("lock_expiries"),
                   "final_state", "archive_reason", "delivery_limit", "delivery_limit_source",
                   first.alias("first_acquired_ts"), "terminal_ts",
                   ((F.unix_micros("terminal_ts") - F.unix_micros(first)) / 1000.0).alias("time_to_terminal_ms"),
                   F.when(F.col("final_state") == "acquired", last["member_id"]).alias("holder")))
    same = [c for c in out.columns if c not in OFFSETS]
    return (islands(out, same)
            .withColumn("records", F.col("last_offset") - F.col("first_offset") + 1)
            .select(*KEY, *OFFSETS, "records", *[c for c in same if c not in KEY]))
