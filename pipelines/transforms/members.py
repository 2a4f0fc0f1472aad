"""sessions/members: the life of each consumer group member, classic (JoinGroup), KIP-848 and KIP-1071 (streams
groups, whose members' tasks are read as the partitions they consume) alike.

A row is one life (incarnation) of a member id. A KIP-848 consumer keeps its member id (the Java client generates it,
KIP-1082; librdkafka too, samples consumer_group_848 and kafka44_consumer_group) when it rejoins at member epoch 0
after the coordinator refused it (fenced, or removed after its session timeout): that rejoin starts the member id's
next incarnation, a row of its own, so the refused life keeps its `ended` and `end_error`."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.intermediates import intermediate
from kafkatap.pipelines.transforms.common import (
    MEMBER_EPOCH_KINDS, MEMBER_FENCING, MEMBER_HEARTBEATS, capture_bounds, group_kinds, is_ok, nonempty, of_apis,
    request_str, response_str, with_client_host
)

# Broker defaults (group.consumer.session.timeout.ms, session.timeout.ms): used when the capture does not show the
# member's own session timeout.
DEFAULT_SESSION_TIMEOUT_MS = 45_000
ASSIGNMENT = "struct<topic_partitions:array<struct<topic_id:string,partitions:array<int>>>>"
CONSUMER_ASSIGNMENT = "struct<assigned_partitions:array<struct<topic:string,partitions:array<int>>>>"
"""The dissector's `$consumer` form of a classic SyncGroup assignment (dissect/kafka/consumer_protocol.py)."""
TASKS = "array<struct<subtopology_id:string,partitions:array<int>>>"
SUBTOPOLOGIES = ("array<struct<subtopology_id:string,source_topics:array<string>,"
                 "repartition_source_topics:array<struct<name:string>>>>")


@intermediate
def topic_names(batches: DataFrame) -> DataFrame:
    """(topic_id, topic) pairs the dissector resolved, for naming KIP-848 assignments (which carry ids only)."""
    return (batches.where(F.col("topic_id").isNotNull() & (F.col("topic") != F.col("topic_id")))
            .groupBy("topic_id").agg(F.min("topic").alias("topic")))


@intermediate
def member_frames(frames: DataFrame) -> DataFrame:
    """Coordinator frames of consumer-group members (commits included: a refused commit can be how a member learns
    it was fenced), with the member id the broker answered where it assigned one, and the static instance id of
    KIP-848 and streams group members too (their heartbeats name it `instance_id`, so the dissector's column misses
    it), and a streams member's active tasks as its heartbeat response lists them (decoded once, for its assignments
    and its rebalance episodes)."""
    member = F.coalesce(F.when(F.col("api_key").isin(ApiKey.JOIN_GROUP, *MEMBER_HEARTBEATS),
                               nonempty(response_str("$.member_id"))),
                        nonempty(F.col("member_id")), nonempty(request_str("$.members[0].member_id")))
    instance = F.coalesce(F.col("group_instance_id"), F.when(
        F.col("api_key").isin(MEMBER_HEARTBEATS), nonempty(request_str("$.instance_id"))))
    kinds = group_kinds(frames)
    return (with_client_host(of_apis(frames, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP,
                                     *MEMBER_HEARTBEATS, ApiKey.OFFSET_COMMIT))
            .withColumn("member_id", member).where(F.col("member_id").isNotNull())
            .withColumns({"group_instance_id": instance,
                          "active_tasks": F.when(F.col("api_key") == ApiKey.STREAMS_GROUP_HEARTBEAT,
                                                 F.from_json(response_str("$.active_tasks"), TASKS))})
            .join(kinds.where(F.col("kind") != "share_group"), "group_id", "inner")
            .withColumn("ts", F.coalesce("ts_request", "ts_response")))


@intermediate
def member_keys(frames: DataFrame) -> DataFrame:
    """(group_id, member_id, member): who a member is to its group. A KIP-848 static member restarted under its
    group.instance.id comes back with a new member id at the epoch it left and the group does not rebalance, so its
    member is its instance id; every other member's is its member id."""
    instance = F.when(F.first("kind").isin(MEMBER_EPOCH_KINDS), F.max("group_instance_id"))
    return (member_frames(frames).groupBy("group_id", "member_id")
            .agg(F.coalesce(instance, F.col("member_id")).alias("member")))


def is_leave() -> Column:
    """A member frame that leaves the group: a LeaveGroup, or a KIP-848 or streams group heartbeat at member epoch -1
    (leave) or -2 (a static member's leave)."""
    return (F.col("api_key") == ApiKey.LEAVE_GROUP) | (
        F.col("api_key").isin(MEMBER_HEARTBEATS) & F.col("member_epoch").isin(-1, -2))


def session_timeout_ms() -> Column:
    """The session timeout a member's JoinGroup request asks for (null on its other frames)."""
    return F.when(F.col("api_key") == ApiKey.JOIN_GROUP, request_str("$.session_timeout_ms").cast("long"))


def heartbeat_interval_ms() -> Column:
    """The heartbeat interval an accepted KIP-848 or streams group heartbeat answered the member (null on its other
    frames)."""
    return F.when(F.col("api_key").isin(MEMBER_HEARTBEATS) & is_ok(F.col("error_code")),
                  response_str("$.heartbeat_interval_ms").cast("long"))


MEMBER = ["group_id", "member_id"]


def _task_assignments(mf: DataFrame, keys: list[str]) -> DataFrame:
    """Streams group active tasks received, as the partitions they read: (*keys, ts, assignment as sorted
    `topic:partition` strings). Task (subtopology, p) reads partition p of each source topic of its subtopology, which
    the members declare in their heartbeats' topology; a response without active tasks left them unchanged."""
    streams = F.col("api_key") == ApiKey.STREAMS_GROUP_HEARTBEAT
    sources = (mf.where(streams).select("group_id", F.explode(F.from_json(
        request_str("$.topology.subtopologies"), SUBTOPOLOGIES)).alias("s"))
        .select("group_id", F.col("s.subtopology_id").alias("subtopology_id"), F.explode(F.concat(
            F.col("s.source_topics"), F.transform("s.repartition_source_topics", lambda t: t["name"])))
            .alias("topic"))
        .distinct())
    tasks = (mf.where(streams & is_ok(F.col("error_code")))
             .where(F.col("active_tasks").isNotNull())
             .select(*keys, "ts", F.explode_outer("active_tasks").alias("task"))
             .select(*keys, "ts", F.col("task.subtopology_id").alias("subtopology_id"),
                     F.explode_outer("task.partitions").alias("partition"))
             .join(sources, ["group_id", "subtopology_id"], "left")
             .withColumn("tp", F.when(F.col("partition").isNotNull(), F.concat_ws(
                 ":", F.coalesce("topic", F.concat(F.lit("subtopology "), "subtopology_id")),
                 F.col("partition").cast("string")))))
    return tasks.groupBy(*keys, "ts").agg(F.sort_array(F.collect_set("tp")).alias("assignment"))


def _assignments(mf: DataFrame, names: DataFrame, keys: list[str] = MEMBER) -> DataFrame:
    """KIP-848 and streams group assignments received: (*keys, ts, assignment as sorted `topic:partition`
    strings)."""
    hb = (mf.where((F.col("api_key") == ApiKey.CONSUMER_GROUP_HEARTBEAT) & is_ok(F.col("error_code")))
          .withColumn("a", F.from_json(response_str("$.assignment"), ASSIGNMENT))
          .where(F.col("a").isNotNull())
          .select(*keys, "ts", F.col("a.topic_partitions").alias("tps")))
    exploded = (hb.select(*keys, "ts", F.explode_outer("tps").alias("tp"))
                .select(*keys, "ts", F.col("tp.topic_id").alias("topic_id"),
                        F.explode_outer("tp.partitions").alias("partition"))
                .join(F.broadcast(names), "topic_id", "left")
                .withColumn("tp", F.when(F.col("partition").isNotNull(), F.concat_ws(
                    ":", F.coalesce("topic", "topic_id"), F.col("partition").cast("string")))))
    return (exploded.groupBy(*keys, "ts")
            .agg(F.sort_array(F.collect_set("tp")).alias("assignment"))
            .unionByName(_task_assignments(mf, keys)))


def _classic_assignments(mf: DataFrame, keys: list[str] = MEMBER) -> DataFrame:
    """Classic assignments received: (group_id, member_id, ts, assignment as sorted `topic:partition` strings, raw).
    The assignment is the consumer protocol the dissector decoded from the SyncGroup response (empty bytes: nothing
    assigned); it is null for bytes it could not read as one (another protocol type, damaged bytes), whose base64
    `raw` is all there is to compare."""
    decoded = F.from_json(response_str("$.assignment['$consumer']"), CONSUMER_ASSIGNMENT)
    tps = F.flatten(F.transform(decoded["assigned_partitions"], lambda tp: F.transform(
        tp["partitions"], lambda p: F.concat_ws(":", tp["topic"], p.cast("string")))))
    raw = response_str("$.assignment['$bytes']")
    return (mf.where((F.col("api_key") == ApiKey.SYNC_GROUP) & is_ok(F.col("error_code")))
            .withColumns({"raw": raw,
                          "assignment": F.when(decoded.isNotNull(), F.sort_array(F.array_distinct(tps)))
                          .when(raw == "", F.array().cast("array<string>"))})
            .select(*keys, "ts", "assignment", "raw"))


def received_assignments(frames: DataFrame, batches: DataFrame) -> DataFrame:
    """Every assignment a member received that can be read as partitions: (kind, group_id, member_id, client_id,
    conn_id, correlation_id, api_name, ts, assignment as sorted `topic:partition` strings), from KIP-848 heartbeat
    responses and decoded classic SyncGroup responses; `ts` is the response's time, when the member learnt it."""
    mf = member_frames(frames).withColumn("ts", F.coalesce("ts_response", "ts_request"))
    keys = ["group_id", "member_id", "ts"]
    received = (_assignments(mf, topic_names(batches))
                .unionByName(_classic_assignments(mf).where(F.col("assignment").isNotNull()).drop("raw")))
    frame_cols = mf.where(F.col("api_key").isin(*MEMBER_HEARTBEATS, ApiKey.SYNC_GROUP)
                          & is_ok(F.col("error_code"))).select(
        *keys, "kind", "client_id", "conn_id", "correlation_id", "api_name")
    return received.join(frame_cols, keys, "inner").dropDuplicates([*keys, "conn_id", "correlation_id"])


def _assignment_history(mf: DataFrame, names: DataFrame, keys: list[str] = MEMBER) -> DataFrame:
    """Per member (`keys`): changes, partitions gained and lost, final assignment, from KIP-848 heartbeats and classic
    SyncGroup responses alike; classic assignments the dissector could not decode count as changes when their bytes
    change."""
    w = Window.partitionBy(*keys).orderBy("ts")
    classic = _classic_assignments(mf, keys)
    received = (_assignments(mf, names, keys)
                .unionByName(classic.where(F.col("assignment").isNotNull()).drop("raw")))
    decoded = (received
               .withColumn("prev", F.coalesce(F.lag("assignment").over(w), F.array().cast("array<string>")))
               .groupBy(*keys).agg(
                   F.count(F.when(F.col("assignment") != F.col("prev"), 1)).alias("adecoded"),
                   F.sort_array(F.array_distinct(F.flatten(F.collect_list(
                       F.array_except("assignment", "prev"))))).alias("partitions_gained"),
                   F.sort_array(F.array_distinct(F.flatten(F.collect_list(
                       F.array_except("prev", "assignment"))))).alias("partitions_lost"),
                   F.max_by("assignment", "ts").alias("final_assignment")))
    opaque = (classic.where(F.col("assignment").isNull())
              .withColumn("prev", F.lag("raw").over(w))
              .groupBy(*keys).agg(
                  F.count(F.when(~F.col("raw").eqNullSafe(F.col("prev")), 1)).alias("aopaque")))
    return decoded.join(opaque, keys, "full")


MISSED_HEARTBEATS = 2
"""A KIP-848 member's session timeout is a broker setting, not on the wire: a member refused as unknown after
sending nothing accepted for more than this many of its heartbeat intervals was removed for its silence."""


def removed_for_silence(kind: Column, error_name: Column, silent_ms: Column, session_timeout_ms: Column,
                        heartbeat_interval_ms: Column) -> Column:
    """A member refused after a silence its coordinator removes members for: longer than its session timeout (a
    classic member's, from its JoinGroup), or a KIP-848 or streams member refused UNKNOWN_MEMBER_ID after more than
    `MISSED_HEARTBEATS` heartbeat intervals."""
    return F.coalesce(F.when(kind == "classic_group", silent_ms > session_timeout_ms).otherwise(
        (error_name == "UNKNOWN_MEMBER_ID") & (silent_ms > MISSED_HEARTBEATS * heartbeat_interval_ms)), F.lit(False))


def _ended(last_event: Column, last_error: Column, last_seen: Column, capture_end: Column, timeout_ms: Column,
           removed: Column) -> Column:
    silent_ms = (F.unix_micros(capture_end) - F.unix_micros(last_seen)) / 1000
    return (F.when(last_error.isin(MEMBER_FENCING) & removed, "expired")  # its last request, a leave too, refused
            .when(last_event == "leave", "left")
            .when(last_error.isin(MEMBER_FENCING), "fenced")
            .when(silent_ms > timeout_ms, "expired")
            .otherwise("alive"))


def _incarnations(mf: DataFrame) -> DataFrame:
    """`incarnation` on each member frame: 1, plus one at every KIP-848 heartbeat at member epoch 0 (a join) after a
    response that refused the member id with a fencing error since its previous join."""
    order = Window.partitionBy(*MEMBER).orderBy("ts", "correlation_id")
    earlier = order.rowsBetween(Window.unboundedPreceding, -1)
    join = F.col("api_key").isin(MEMBER_HEARTBEATS) & (F.col("member_epoch") == 0)
    refused = F.max(F.when(F.col("error_name").isin(MEMBER_FENCING), F.col("ts"))).over(earlier)
    joined = F.max(F.when(join, F.col("ts"))).over(earlier)
    rejoin = join & refused.isNotNull() & (joined.isNull() | (refused > joined))
    return (mf.withColumn("_rejoin", F.when(rejoin, 1).otherwise(0))
            .withColumn("incarnation", (1 + F.sum("_rejoin").over(order.rowsBetween(Window.unboundedPreceding, 0)))
                        .cast("int"))
            .drop("_rejoin"))


def members(frames: DataFrame, batches: DataFrame) -> DataFrame:
    mf = _incarnations(member_frames(frames))
    keys = [*MEMBER, "incarnation"]
    ok = is_ok(F.col("error_code"))
    earlier = Window.partitionBy(*keys).orderBy("ts").rowsBetween(Window.unboundedPreceding, -1)
    events = mf.withColumns({"event": F.when(is_leave(), "leave").otherwise("request"),
                             "timeout_ms": session_timeout_ms(),
                             "beat_ms": heartbeat_interval_ms(),
                             "ok_before": F.max(F.when(ok & ~is_leave(), F.col("ts"))).over(earlier)})
    generation = F.when((F.col("api_key") == ApiKey.JOIN_GROUP) & ok,
                        F.coalesce(response_str("$.generation_id").cast("int"), F.col("generation_id")))
    member_epoch = F.when(F.col("api_key").isin(MEMBER_HEARTBEATS) & ok
                          & (F.col("response_member_epoch") > 0), F.col("response_member_epoch"))
    last = F.struct("ts", "correlation_id")
    agg = events.groupBy(*keys).agg(
        F.first("kind").alias("kind"),
        F.max("group_instance_id").alias("group_instance_id"),
        F.min_by("client_id", "ts").alias("client_id"),
        F.min_by("client_host", "ts").alias("client_host"),
        F.sort_array(F.collect_set("conn_id")).alias("conn_ids"),
        F.min("ts").alias("first_seen"),
        F.max("ts").alias("last_seen"),
        F.sort_array(F.collect_set(generation)).alias("generations"),
        F.sort_array(F.collect_set(member_epoch)).alias("member_epochs"),
        F.count(F.when((F.col("api_key") == ApiKey.JOIN_GROUP) | (F.col("api_key").isin(MEMBER_HEARTBEATS)
                                                           & (F.col("member_epoch") == 0)), 1)).alias("joins"),
        F.count(F.when(F.col("api_key").isin(ApiKey.HEARTBEAT, *MEMBER_HEARTBEATS)
                       & ~F.coalesce(F.col("member_epoch").isin(0, -1, -2), F.lit(False)), 1)).alias("heartbeats"),
        F.max_by("event", last).alias("last_event"),
        F.max_by("error_name", last).alias("last_error"),
        F.max_by(F.coalesce("ts_response", "ts_request"), last).alias("last_ts"),
        F.max_by("timeout_ms", F.when(F.col("timeout_ms").isNotNull(), F.col("ts"))).alias("timeout_ms"),
        F.max_by("beat_ms", F.when(F.col("beat_ms").isNotNull(), F.col("ts"))).alias("beat_ms"),
        F.max_by("ok_before", last).alias("ok_before"),
    )
    history = _assignment_history(mf, topic_names(batches), keys)
    empty = F.array().cast("array<string>")
    removed = removed_for_silence(F.col("kind"), F.col("last_error"),
                                  (F.unix_micros("last_ts") - F.unix_micros("ok_before")) / 1000, F.col("timeout_ms"),
                                  F.col("beat_ms"))
    refused = F.col("last_error").isin(MEMBER_FENCING) & ((F.col("last_event") != "leave") | removed)
    out = (agg.join(history, keys, "left").crossJoin(F.broadcast(capture_bounds(frames)))
           .withColumns({
               "assignment_changes": F.coalesce("adecoded", F.lit(0)) + F.coalesce("aopaque", F.lit(0)),
               "partitions_gained": F.coalesce("partitions_gained", empty),
               "partitions_lost": F.coalesce("partitions_lost", empty),
               "final_assignment": F.coalesce("final_assignment", empty),
               "ended": _ended(F.col("last_event"), F.col("last_error"), F.col("last_seen"), F.col("capture_end"),
                               F.coalesce("timeout_ms", F.lit(DEFAULT_SESSION_TIMEOUT_MS)), removed),
               "end_ts": F.when(refused, F.col("last_ts")).otherwise(F.col("last_seen")),
               "end_error": F.when(refused, F.col("last_error")),
               "session_timeout_ms": F.col("timeout_ms"),
           }))
    return out.drop("adecoded", "aopaque", "last_event", "last_error", "last_ts", "timeout_ms", "capture_start",
                    "capture_end", "beat_ms", "ok_before")


def member_spans(members_df: DataFrame, slack_s: int = 60) -> DataFrame:
    """When each member could have been fetching: from its first request to its leave / fencing, or to `slack_s`
    after its last request (fetching goes on between heartbeats and after the capture's last heartbeat)."""
    closed = F.col("ended").isin("left", "fenced") | F.col("end_error").isNotNull()  # expired, then refused
    return members_df.select(
        "group_id", "member_id", "client_id", "client_host",
        F.col("first_seen").alias("span_start"),
        F.when(closed, F.col("end_ts")).otherwise(F.col("last_seen") + F.expr(f"INTERVAL {slack_s} SECONDS"))
        .alias("span_end"))
