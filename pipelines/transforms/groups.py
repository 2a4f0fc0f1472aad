"""sessions/groups and sessions/commits: every group the wire names, joined or commit-only, and what it committed.

A group whose clients commit offsets without joining (manual assignment, `assign()`, or a capture that began after
the joins) has no members, yet its commits are what a restarted consumer resumes from: it is a group of the capture
all the same.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.transforms.common import group_kinds, nonempty
from kafkatap.pipelines.transforms.duplicates.commits import commits

MEMBERSHIP_APIS = [ApiKey.JOIN_GROUP, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT,
                   ApiKey.STREAMS_GROUP_HEARTBEAT]
"""The requests a member joins a group with: a group none of them names only commits (or reads) offsets."""


def groups(frames: DataFrame) -> DataFrame:
    """sessions/groups: one row per group id any request names."""
    ts = F.coalesce("ts_request", "ts_response")
    joined = F.max(F.col("api_key").isin(MEMBERSHIP_APIS))
    agg = (frames.where(nonempty(F.col("group_id")).isNotNull()).groupBy("group_id").agg(
        F.min(ts).alias("first_seen"), F.max(ts).alias("last_seen"),
        F.count_distinct(nonempty(F.col("member_id"))).alias("members"),
        F.sort_array(F.collect_set("client_id")).alias("client_ids"),
        joined.alias("joined"),
        F.count(F.when(F.col("api_key") == ApiKey.OFFSET_COMMIT, 1)).alias("commits"),
        F.count(F.when(F.col("api_key") == ApiKey.OFFSET_FETCH, 1)).alias("offset_fetches"),
        F.count(F.when(F.col("error_code") != 0, 1)).alias("errors"),
        F.mode("broker_addr").alias("coordinator")))
    return (agg.join(group_kinds(frames), "group_id", "left")
            .withColumn("commit_only", ~F.col("joined") & (F.col("commits") > 0)))


def group_commits(frames: DataFrame, batches: DataFrame) -> DataFrame:
    """sessions/commits: per group and partition, its commits, the last offset the broker accepted and how far the
    partition's last high watermark in the capture was beyond it (the commit lag at the capture's end)."""
    committed = commits(frames)
    ok = F.col("error_code") == 0
    per = committed.groupBy("group_id", "topic", "partition").agg(
        F.count(F.lit(1)).alias("commits"), F.count(F.when(~ok | F.col("error_code").isNull(), 1)).alias("refused"),
        F.min("ts").alias("first_commit"), F.max("ts").alias("last_commit"),
        F.max_by(F.when(ok, F.col("committed_offset")), F.when(ok, F.col("ts"))).alias("committed_offset"),
        F.sort_array(F.collect_set(nonempty(F.col("member_id")))).alias("member_ids"))
    watermarks = (batches.where(F.col("high_watermark").isNotNull()).groupBy("topic", "partition")
                  .agg(F.max_by("high_watermark", "ts").alias("high_watermark")))
    return (per.join(watermarks, ["topic", "partition"], "left")
            .withColumn("commit_lag", F.greatest(F.col("high_watermark") - F.col("committed_offset"), F.lit(0))))
