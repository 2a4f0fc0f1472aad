"""sessions/share_members: share-group members, their share sessions, acquisitions and acknowledgements."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.transforms.common import (SHARE_GROUP_APIS, capture_bounds, is_ok, nonempty, of_apis,
                                                  response_str, with_client_host)
from kafkatap.pipelines.transforms.members import DEFAULT_SESSION_TIMEOUT_MS

SHARE_FENCING = ["FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"]


def share_members(frames: DataFrame, share: DataFrame) -> DataFrame:
    member = F.coalesce(F.when(F.col("api_key") == ApiKey.SHARE_GROUP_HEARTBEAT, nonempty(response_str("$.member_id"))),
                        nonempty(F.col("member_id")))
    sf = (with_client_host(of_apis(frames, *SHARE_GROUP_APIS))
          .where(member.isNotNull() & F.col("group_id").isNotNull())
          .withColumns({"member_id": member, "ts": F.coalesce("ts_request", "ts_response")}))
    hb = F.col("api_key") == ApiKey.SHARE_GROUP_HEARTBEAT
    fetch = F.col("api_key") == ApiKey.SHARE_FETCH
    last = F.struct("ts", "correlation_id")
    agg = sf.groupBy("group_id", "member_id").agg(
        F.min_by("client_id", "ts").alias("client_id"), F.min_by("client_host", "ts").alias("client_host"),
        F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"),
        F.sort_array(F.collect_set(F.when(hb & is_ok(F.col("error_code")) & (F.col("response_member_epoch") > 0),
                                          F.col("response_member_epoch")))).alias("member_epochs"),
        F.count(F.when(fetch & (F.col("share_session_epoch") == 0), 1)).alias("share_sessions"),
        F.max(F.when(F.col("api_key").isin(ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE), F.col("share_session_epoch")))
        .alias("max_share_session_epoch"),
        F.count(F.when(fetch, 1)).alias("share_fetches"),
        F.max_by(F.when(hb & (F.col("member_epoch") == -1), F.lit("leave")).otherwise(F.lit("request")), last)
        .alias("last_event"),
        F.max_by("error_name", last).alias("last_error"))
    length = F.col("last_offset") - F.col("first_offset") + 1
    counts = share.groupBy("group_id", "member_id").agg(
        F.count(F.when(F.col("kind") == "acquired", 1)).alias("acquired_ranges"),
        F.sum(F.when(F.col("kind") == "acquired", length).otherwise(0)).alias("acquired_records"),
        *[F.sum(F.when((F.col("kind") == "ack") & (F.col("ack_type") == t), length).otherwise(0)).alias(name)
          for t, name in [("accept", "accepted"), ("release", "released"), ("reject", "rejected"),
                          ("renew", "renewed")]])
    silent_ms = (F.unix_micros("capture_end") - F.unix_micros("last_seen")) / 1000
    ended = (F.when(F.col("last_event") == "leave", "left").when(F.col("last_error").isin(SHARE_FENCING), "fenced")
             .when(silent_ms > DEFAULT_SESSION_TIMEOUT_MS, "expired").otherwise("alive"))
    zero = F.lit(0).cast("long")
    return (agg.join(counts, ["group_id", "member_id"], "left").crossJoin(F.broadcast(capture_bounds(frames)))
            .withColumns({c: F.coalesce(c, zero) for c in ["acquired_ranges", "acquired_records", "accepted",
                                                           "released", "rejected", "renewed"]})
            .withColumn("ended", ended).withColumn("end_ts", F.col("last_seen"))
            .drop("last_event", "last_error", "capture_start", "capture_end"))
