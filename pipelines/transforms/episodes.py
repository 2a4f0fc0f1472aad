"""When each rebalance episode of a group began and ended, per group kind, as the wire shows it.

Classic groups: an episode closes with the last successful SyncGroup response of a generation every member of which
(every member its JoinGroup responses named) got one; generations some member never synced (REBALANCE_IN_PROGRESS on
SyncGroup, a rejoin) are failed rounds of the same episode. It opens with the first sign of PreparingRebalance after
the previous episode closed: a JoinGroup request, a LeaveGroup request (the broker starts rebalancing as it reads
one), or REBALANCE_IN_PROGRESS answered to a Heartbeat, OffsetCommit or SyncGroup.
KIP-848 and streams groups (KIP-1071; a streams member's active tasks stand for its partitions): an epoch E
closes when every member handed E has been handed it and the last assignment handed at E
(a member reaches the target epoch once it has revoked what it must; a joiner may get its partitions later at the
same epoch, once others released them); epochs handed before the previous one closed belong to the same episode. An
assignment at E that takes partitions away from what the member was handed at E is a revocation towards the next
target, so it belongs to the next episode. An episode opens with the first heartbeat response after the previous
episode that hands a member a new assignment or a new epoch, or with a member's leave (a heartbeat at epoch -1),
whichever comes first. A join (epoch 0) opens nothing by itself: the assignor may have nothing to give the joiner.
A KIP-848 member is its static instance id where it has one: a static member restarted under its group.instance.id
comes back with a new member id at the epoch it left, restated its assignment, and the group does not rebalance; an
assignment that restates what the member holds at the epoch it holds is nothing new (no signal, no reconciliation).
Every row: kind, group_id, start_ts, end_ts, generation_or_epoch, rounds, before (member ids of the previous
episode, a member's latest), after, before_members / after_members ({member id: member}, a member being a KIP-848
static instance id, else the member id), prev_end, open_evidence, close_evidence.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.protocol.generated.errors import ErrorCode
from kafkatap.pipelines.intermediates import intermediate
from kafkatap.pipelines.transforms.common import (
    MEMBER_EPOCH_KINDS, MEMBER_HEARTBEATS, is_ok, request_source, response_source, response_str
)
from kafkatap.pipelines.transforms.members import member_frames, member_keys

_ASSIGNED = "array<struct<topic_id:string,partitions:array<int>>>"
_MEMBERS = "map<string,string>"
COLUMNS = ["kind", "group_id", "start_ts", "end_ts", "generation_or_epoch", "rounds", "before", "after",
           "before_members", "after_members", "prev_end",
           "open_evidence", "close_evidence"]


def _response_at() -> F.Column:
    return response_source(F.col("api_name"), F.coalesce("ts_response", "ts_request"))


def _with_previous(closed: DataFrame, kind: F.Column) -> DataFrame:
    """Add `before`, `before_members` and `prev_end` from the group's previous episode."""
    order = Window.partitionBy("group_id").orderBy("end_ts")
    return closed.withColumns({
        "before": F.coalesce(F.lag("after").over(order), F.array().cast("array<string>")),
        "before_members": F.coalesce(F.lag("after_members").over(order), F.create_map().cast(_MEMBERS)),
        "prev_end": F.lag("end_ts").over(order), "kind": kind})


def _opened(episodes: DataFrame, signals: DataFrame) -> DataFrame:
    """start_ts / open_evidence: the first signal in (prev_end, end_ts], else `fallback_start`."""
    s = signals.alias("s")
    first = (episodes.alias("e").join(s, (F.col("s.group_id") == F.col("e.group_id"))
                                      & (F.col("s.ts") <= F.col("e.end_ts"))
                                      & (F.col("e.prev_end").isNull() | (F.col("s.ts") > F.col("e.prev_end"))))
             .groupBy("e.group_id", "e.end_ts").agg(F.min_by(F.struct("s.ts", "s.evidence"), "s.ts").alias("o")))
    return (episodes.join(first, ["group_id", "end_ts"], "left")
            .withColumns({"start_ts": F.least(F.coalesce(F.col("o.ts"), F.col("fallback_start")),
                                              F.col("fallback_start")),
                          "open_evidence": F.when(F.col("o.ts") <= F.col("fallback_start"), F.col("o.evidence"))
                          .otherwise(F.col("fallback_evidence"))})
            .select(*COLUMNS))


def classic_episodes(frames: DataFrame) -> DataFrame:
    mf = member_frames(frames).where(F.col("kind") == "classic_group")
    ok = is_ok(F.col("error_code"))
    joined = (mf.where((F.col("api_key") == ApiKey.JOIN_GROUP) & ok)
              .select("group_id", "member_id", F.coalesce(
                  response_str("$.generation_id").cast("int"), "generation_id").alias("gen"),
                      F.coalesce("ts_response", "ts_request").alias("ts"), _response_at().alias("evidence")))
    synced = (mf.where((F.col("api_key") == ApiKey.SYNC_GROUP) & ok)
              .select("group_id", "member_id", F.col("generation_id").alias("gen"),
                      F.coalesce("ts_response", "ts_request").alias("ts"), _response_at().alias("evidence")))
    gens = (joined.groupBy("group_id", "gen").agg(F.array_sort(F.collect_set("member_id")).alias("after"),
                                                  F.min_by(F.struct("ts", "evidence"), "ts").alias("j"))
            .withColumn("after_members", F.map_from_arrays("after", "after"))
            .join(synced.groupBy("group_id", "gen").agg(F.collect_set("member_id").alias("synced"),
                                                        F.max_by(F.struct("ts", "evidence"), "ts").alias("s")),
                  ["group_id", "gen"], "left"))
    complete = F.coalesce(F.size(F.array_except("after", "synced")) == 0, F.lit(False))
    order = Window.partitionBy("group_id").orderBy("gen")
    closed = (gens.withColumns({"complete": complete,
                                # generations since the previous complete one are this episode's rounds
                                "_n": F.sum(complete.cast("int")).over(order) - complete.cast("int")})
              .withColumns({"rounds": F.count(F.lit(1)).over(Window.partitionBy("group_id", "_n")),
                            "fallback": F.min(F.col("j")).over(Window.partitionBy("group_id", "_n"))})
              .where(F.col("complete"))
              .select("group_id", F.col("gen").alias("generation_or_epoch"), "rounds", "after", "after_members",
                      F.col("s.ts").alias("end_ts"), F.col("s.evidence").alias("close_evidence"),
                      F.col("fallback.ts").alias("fallback_start"),
                      F.col("fallback.evidence").alias("fallback_evidence")))
    rip = ((F.col("error_code") == ErrorCode.REBALANCE_IN_PROGRESS)
           & F.col("api_key").isin(ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT, ApiKey.SYNC_GROUP))
    signals = mf.where(rip | F.col("api_key").isin(ApiKey.JOIN_GROUP, ApiKey.LEAVE_GROUP)).select(
        "group_id", F.when(rip, F.coalesce("ts_response", "ts_request")).otherwise(F.col("ts")).alias("ts"),
        F.when(rip, F.concat(_response_at(), F.lit(" REBALANCE_IN_PROGRESS"))).otherwise(request_source())
        .alias("evidence"))
    return _opened(_with_previous(closed, F.lit("classic_group")), signals)


def kip848_episodes(frames: DataFrame) -> DataFrame:
    mf = (member_frames(frames).where(F.col("kind").isin(MEMBER_EPOCH_KINDS))
          .join(member_keys(frames), ["group_id", "member_id"]))
    # a streams member's active tasks as (subtopology, partitions): what it holds, like a consumer's topic partitions
    tasks = F.transform("active_tasks", lambda t: F.struct(t["subtopology_id"].alias("topic_id"),
                                                           t["partitions"].alias("partitions")))
    hb = (mf.where(F.col("api_key").isin(MEMBER_HEARTBEATS) & is_ok(F.col("error_code"))
                   & (F.col("response_member_epoch") > 0))
          .select("kind", "group_id", "member", "member_id", F.col("response_member_epoch").alias("epoch"),
                  F.coalesce("ts_response", "ts_request").alias("ts"), _response_at().alias("evidence"),
                  F.coalesce(F.from_json(response_str("$.assignment.topic_partitions"),
                                         _ASSIGNED), tasks).alias("assigned")))
    held = F.array_sort(F.flatten(F.transform("assigned", lambda tp: F.transform(
        tp["partitions"], lambda p: F.concat_ws(":", tp["topic_id"], p.cast("string"))))))
    mine = Window.partitionBy("group_id", "member").orderBy("ts")
    last_held = F.last(F.when(F.col("assigned").isNotNull(), F.col("held")), ignorenulls=True).over(
        mine.rowsBetween(Window.unboundedPreceding, -1))
    restated = (F.lag("epoch").over(mine) == F.col("epoch")) & (last_held == F.col("held"))
    hb = (hb.withColumn("held", held)
          .withColumn("assigns", F.col("assigned").isNotNull() & ~F.coalesce(restated, F.lit(False))))
    # a member has reconciled to E when it first holds E and has received the last assignment handed at E; an
    # assignment at E after a higher epoch was handed in the group, or one that takes partitions away from the
    # member's previous assignment at E, is a revocation towards the next target instead
    earlier = Window.partitionBy("group_id").orderBy("ts").rowsBetween(Window.unboundedPreceding, -1)
    previous = Window.partitionBy("group_id", "member", "epoch", "assigns").orderBy("ts")
    revokes = F.coalesce(F.size(F.array_except(F.lag("held").over(previous), "held")) > 0, F.lit(False))
    at_target = (F.col("assigns") & ~revokes
                 & ~F.coalesce(F.max("epoch").over(earlier) > F.col("epoch"), F.lit(False)))
    reached = (hb.withColumn("_at_target", at_target).groupBy("group_id", "member", "epoch").agg(F.greatest(
        F.min(F.struct("ts", "evidence")), F.max(F.when(F.col("_at_target"), F.struct("ts", "evidence"))))
        .alias("r"), F.max_by("member_id", "ts").alias("member_id"), F.first("kind").alias("kind")))
    epochs = reached.groupBy("group_id", "epoch").agg(F.first("kind").alias("kind"),
        F.array_sort(F.collect_set("member_id")).alias("members"),
        F.map_from_entries(F.collect_list(F.struct("member_id", "member"))).alias("keys"),
        F.min("r").alias("first"), F.max("r").alias("last"))
    order = Window.partitionBy("group_id").orderBy("epoch")
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    closed_before = F.max(F.col("last.ts")).over(before)
    runs = (epochs.withColumn("_new", F.coalesce(F.col("first.ts") > closed_before, F.lit(True)).cast("int"))
            .withColumn("_run", F.sum("_new").over(order)))
    closed = (runs.groupBy("group_id", "_run").agg(
        F.first("kind").alias("kind"), F.max("epoch").alias("generation_or_epoch"), F.count(F.lit(1)).alias("rounds"),
        F.max_by("members", "epoch").alias("after"), F.max_by("keys", "epoch").alias("after_members"),
        F.max("last").alias("s"), F.min("first").alias("f"))
        .select("kind", "group_id", "generation_or_epoch", "rounds", "after", "after_members",
                F.col("s.ts").alias("end_ts"),
                F.col("s.evidence").alias("close_evidence"), F.col("f.ts").alias("fallback_start"),
                F.col("f.evidence").alias("fallback_evidence")))
    leaves = mf.where(F.col("api_key").isin(MEMBER_HEARTBEATS) & (F.col("member_epoch") == -1)).select(
        "group_id", "ts", request_source().alias("evidence"))
    signals = hb.where(F.col("assigns")).select("group_id", "ts", "evidence").unionByName(leaves)
    return _opened(_with_previous(closed, F.col("kind")), signals)


@intermediate
def episodes(frames: DataFrame) -> DataFrame:
    return classic_episodes(frames).unionByName(kip848_episodes(frames))
