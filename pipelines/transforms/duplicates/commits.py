"""Member commits: where a consumer's application stopped in each delivery.

Clients commit the position their application reached, so the member's next commit for the partition cuts its
delivery: records fetched but never consumed (dropped on a revocation, held by a frozen process) crossed the wire
without reaching the application, and are reported as `wire_only`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.intermediates import broadcast_small, clustered
from kafkatap.pipelines.transforms.common import nonempty, of_apis, request_str

COMMIT = ("struct<topics:array<struct<name:string,"
          "partitions:array<struct<partition_index:int,committed_offset:bigint>>>>>")


def commits(frames: DataFrame) -> DataFrame:
    """Offsets members committed or tried to commit (rejected commits included: they still state the position the
    client had reached): (group_id, member_id, topic, partition, committed_offset, ts, error_code), the error code
    the response carried (null when it is not in the capture)."""
    c = (of_apis(frames, ApiKey.OFFSET_COMMIT)
         .select("group_id", F.coalesce(nonempty(F.col("member_id")), request_str("$.member_id")).alias("member_id"),
                 F.coalesce("ts_request", "ts_response").alias("ts"), "error_code",
                 F.from_json(F.col("request_json"), COMMIT).alias("j")))
    topics = c.select("group_id", "member_id", "ts", "error_code", F.explode("j.topics").alias("t"))
    return topics.select("group_id", "member_id", "ts", "error_code", F.col("t.name").alias("topic"),
                         F.explode("t.partitions").alias("p")).select(
        "group_id", "member_id", "ts", "topic", F.col("p.partition_index").alias("partition"),
        F.col("p.committed_offset").alias("committed_offset"), "error_code")


def with_consumed(deliveries: DataFrame, committed: DataFrame) -> DataFrame:
    """Add `next_position` (the offset the member next committed for the partition after the delivery) and
    `consumed_last`, the end of what its application consumed of the delivery.

    Clients commit the position their application reached, so a delivery is cut at the furthest position the member
    commits for the partition before it fetches it again (a fetch's records often reach the application over several
    polls, each followed by a commit), else at its next commit. When the member's next step on the partition does not
    continue where the delivery ended (its next fetch starts elsewhere, or its next commit jumps past offsets it
    never fetched), its position was reset in between (the partition was revoked and reassigned, or reset to the
    committed offset): the delivery is then cut where a refetch goes back to, or else at the member's last commit
    before it (auto-commit clients commit on revocation). Members that never commit the partition give no evidence:
    their fetches count whole."""
    key = ["group_id", "member_id", "topic", "partition"]
    # The windows sort a narrow projection (the wide delivery rows are joined back by id), and only for the
    # partitions the member committed: without a commit a delivery counts whole, so no sort can change it.
    narrow = deliveries.select(*key, "ts", "delivery_id", "clip", "last_offset")
    marks = committed.select(*key, "ts", F.col("committed_offset").alias("_commit"))
    committing = broadcast_small(marks.select(*key).distinct())  # a row per member and partition it committed
    pairs = [narrow[c].eqNullSafe(committing[c]) for c in key]
    is_fetch = F.col("delivery_id").isNotNull()
    response = Window.partitionBy(*key, "ts")  # a fetch response's batches share its time
    us = F.unix_micros("ts")
    both = (narrow.join(committing, pairs, "left_semi").unionByName(marks, allowMissingColumns=True)
            .transform(lambda rows: clustered(rows, *key))  # one exchange for every window below
            .withColumns({"_us": us,
                          "_fetch_clip": F.min(F.when(is_fetch, F.col("clip"))).over(response),
                          "_resp_last": F.max(F.when(is_fetch, F.col("last_offset"))).over(response),
                          "_fetch_us": F.when(is_fetch, us),
                          "_commit_us": F.when(F.col("_commit").isNotNull(), us)}))
    ordered = Window.partitionBy(*key).orderBy("ts")  # the response windows' order: no sort of its own
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
    # the commits after a fetch response and before the member's next one: the last fetch time at or before a row
    # names the stretch it belongs to
    stretch = F.max("_fetch_us").over(ordered.rangeBetween(Window.unboundedPreceding, 0))
    furthest = F.max("_commit").over(Window.partitionBy(*key, "_stretch"))
    # windows of one order side by side, so each order is one sort
    cuts = (both.withColumns({"_stretch": stretch, "_prev_commit": F.last("_commit", ignorenulls=True).over(
                ordered.rangeBetween(Window.unboundedPreceding, 0))})
            .withColumn("_furthest", furthest)
            .withColumns({"_next_commit": nxt["_commit"], "_ncommit_us": nxt["_commit_us"],
                          "_nfetch_us": nxt["_fetch_us"], "_nfetch_clip": nxt["_fetch_clip"]})
            .withColumn("next_position", F.coalesce("_furthest", "_next_commit"))
            .where(is_fetch)
            .select("delivery_id", "next_position", F.when(reset & evidence & reset_at.isNotNull(),
                                                           F.least(F.col("last_offset"), reset_at - 1))
                    .otherwise(cut).alias("consumed_last")))
    return (deliveries.join(cuts, "delivery_id", "left")
            .withColumn("consumed_last", F.coalesce("consumed_last", "last_offset")))
