"""Who owned which partition when: one interval per (group member, partition) as the wire shows it.

Ownership begins with the response that hands the member the partition (a KIP-848 heartbeat response carrying an
assignment, a classic SyncGroup response whose consumer protocol assignment the dissector decoded) and ends with
the first of: a later assignment without the partition, the member's own JoinGroup request (a classic member gives
up what its subscription does not list as `owned_partitions`: everything under the eager protocol, only the
revoked partitions under the cooperative one), its leave (LeaveGroup, or a heartbeat with epoch -1/-2), a fencing
error answered to it, else its last request to the coordinator. A member the broker expired without telling it
keeps its partitions until it hears so: that is what a zombie is.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.intermediates import intermediate
from kafkatap.pipelines.transforms.common import MEMBER_FENCING, request_source, request_str, response_source
from kafkatap.pipelines.transforms.members import is_leave, member_frames, received_assignments

OWNED = "array<struct<topic:string,partitions:array<int>>>"
INTERVAL = ["kind", "group_id", "member_id", "client_id", "conn_id", "topic", "partition", "own_start", "own_end",
            "start_evidence", "end_evidence"]


def _tp(topic: Column, partition: Column) -> Column:
    return F.concat_ws(":", topic, partition.cast("string"))


def _releases(frames: DataFrame) -> DataFrame:
    """Events that end a member's ownership of every partition but `keep` (group_id, member_id, ts, keep, evidence)."""
    mf = member_frames(frames)
    owned = F.from_json(request_str("$.protocols[0].metadata['$consumer'].owned_partitions"), OWNED)
    kept = F.coalesce(F.flatten(F.transform(owned, lambda o: F.transform(
        o["partitions"], lambda p: _tp(o["topic"], p)))), F.array().cast("array<string>"))
    nothing = F.array().cast("array<string>")
    fenced = F.col("error_name").isin(MEMBER_FENCING)
    return mf.where(fenced | is_leave() | (F.col("api_key") == ApiKey.JOIN_GROUP)).select(
        "group_id", "member_id",
        F.when(fenced, F.coalesce("ts_response", "ts_request")).otherwise(F.col("ts")).alias("ts"),
        F.when(F.col("api_key") == ApiKey.JOIN_GROUP, kept).otherwise(nothing).alias("keep"),
        F.when(fenced, F.concat(response_source(F.col("api_name")), F.lit(" "), F.col("error_name")))
        .otherwise(request_source()).alias("evidence"))


@intermediate
def ownership(frames: DataFrame, batches: DataFrame) -> DataFrame:
    """One row per (member, partition, uninterrupted ownership), columns INTERVAL (`conn_id`: where it was handed);
    evidence as `<api> response corr=… conn=… at …` (or the request that ended it)."""
    received = received_assignments(frames, batches)
    given = (received.withColumn("evidence", response_source(F.col("api_name"), F.col("ts")))
             .select("kind", "group_id", "member_id", "client_id", "conn_id", "ts", "assignment", "evidence"))
    held = given.select("kind", "group_id", "member_id", "client_id", "conn_id", F.col("ts").alias("own_start"),
                        F.col("evidence").alias("start_evidence"), F.explode("assignment").alias("tp"))
    enders = (given.select("group_id", "member_id", "ts", F.col("assignment").alias("keep"), "evidence")
              .unionByName(_releases(frames)))
    e = enders.alias("e")
    ended = (held.alias("h").join(e, (F.col("h.group_id") == F.col("e.group_id"))
                                  & (F.col("h.member_id") == F.col("e.member_id"))
                                  & (F.col("e.ts") > F.col("h.own_start"))
                                  & ~F.array_contains(F.col("e.keep"), F.col("h.tp")), "left")
             .groupBy("h.kind", "h.group_id", "h.member_id", "h.client_id", "h.conn_id", "h.tp", "h.own_start",
                      "h.start_evidence")
             .agg(F.min_by(F.struct("e.ts", "e.evidence"), "e.ts").alias("end")))
    last = (member_frames(frames).groupBy("group_id", "member_id")
            .agg(F.max(F.coalesce("ts_response", "ts_request")).alias("last_seen")))
    whole = Window.partitionBy("group_id", "member_id", "tp", "own_end")
    split = {"topic": F.regexp_extract("tp", r"^(.*):(\d+)$", 1).alias("topic"),
             "partition": F.regexp_extract("tp", r"^(.*):(\d+)$", 2).cast("int").alias("partition")}
    return (ended.join(last, ["group_id", "member_id"], "left")
            .withColumns({"own_end": F.coalesce(F.col("end.ts"), F.greatest("last_seen", "own_start")),
                          "end_evidence": F.coalesce(F.col("end.evidence"), F.lit("last request seen"))})
            # an assignment repeating a partition the member already held continues the same ownership
            .withColumn("_first", F.min("own_start").over(whole))
            .where(F.col("own_start") == F.col("_first"))
            .select(*[split.get(c, c) for c in INTERVAL]))
