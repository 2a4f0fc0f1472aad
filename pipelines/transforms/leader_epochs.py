"""FENCED_LEADER_EPOCH, per partition: a client naming a partition leader epoch older than the leader's (followers'
replication Fetches refused so are not clients fenced).

Fetch, ListOffsets and OffsetsForLeaderEpoch requests carry each partition's `current_leader_epoch`, and the broker
rejects the partitions whose epoch is behind its own. The stale epoch is the request's; the current one is what the
rejecting response states (Fetch v12+ `current_leader`), else the highest epoch a Metadata response had handed out
for the partition before the rejection (epochs only grow, so the highest is the newest whichever broker said it).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.protocol.generated.errors import ErrorCode
from kafkatap.pipelines.intermediates import emptied
from kafkatap.pipelines.transforms.common import LEADER_FENCING, of_apis, response_source
from kafkatap.pipelines.transforms.replicas import replica_id

_TOPICS = "array<struct<topic:string,name:string,topic_id:string,partitions:array<struct<{}>>>>"
REQUEST = "struct<topics:{}>".format(_TOPICS.format("partition:int,partition_index:int,current_leader_epoch:int"))
_ANSWER = _TOPICS.format("partition:int,partition_index:int,error_code:int,current_leader:struct<leader_epoch:int>")
RESPONSE = f"struct<responses:{_ANSWER},topics:{_ANSWER}>"
HANDED = "struct<topics:{}>".format(_TOPICS.format("partition:int,partition_index:int,leader_epoch:int"))


def _partitions(df: DataFrame, topics, *cols) -> DataFrame:
    """One row per (topic, partition) of a parsed message: topic is the name, else the id."""
    t = df.select(*cols, F.explode(topics).alias("t"))
    p = t.select(*cols, F.coalesce("t.topic", "t.name").alias("topic_name"), F.col("t.topic_id").alias("topic_id"),
                 F.explode("t.partitions").alias("p"))
    return p.withColumn("partition", F.coalesce("p.partition", "p.partition_index"))


def _metadata(frames: DataFrame) -> DataFrame:
    """Metadata responses, parsed once for both uses: topic names and the leader epochs they hand out."""
    return of_apis(frames, ApiKey.METADATA).select(
        "conn_id", "correlation_id", F.coalesce("ts_response", "ts_request").alias("ts"),
        F.from_json(F.col("response_json"), HANDED).alias("j"))


def _names(md: DataFrame) -> DataFrame:
    """topic_id -> name, from the Metadata responses of the capture (Fetch v13+ names topics by id only)."""
    return (md.select(F.explode("j.topics").alias("t")).where(F.col("t.name").isNotNull())
            .select(F.col("t.topic_id").alias("topic_id"), F.col("t.name").alias("_name"))
            .where(F.col("topic_id").isNotNull()).groupBy("topic_id").agg(F.min("_name").alias("_name")))


def _resolved(df: DataFrame, names: DataFrame) -> DataFrame:
    return (df.join(F.broadcast(names), "topic_id", "left")
            .withColumn("topic", F.coalesce("topic_name", "_name", "topic_id")).drop("_name", "topic_name"))


def leader_fencings(frames: DataFrame) -> DataFrame:
    """One row per rejected (request, partition); a rejection whose partitions cannot be read keeps one row with
    them null, so no reported fencing is lost."""
    md = _metadata(frames)
    names = _names(md)
    # a follower behind a leader change is refused too: it truncates and goes on replicating, no client is fenced
    follower = (F.col("api_key") == ApiKey.FETCH) & (replica_id() >= 0)
    # read three times below; without any (most captures), Spark's optimizer drops the Metadata parsing and sweep
    rejected = emptied(frames.where(F.col("error_name").isin(LEADER_FENCING) & ~follower).withColumn(
        "ts", F.coalesce("ts_request", "ts_response")))
    keys = ["conn_id", "correlation_id"]
    resp = F.from_json(F.col("response_json"), RESPONSE)
    answered = _resolved(_partitions(rejected, F.coalesce(resp["responses"], resp["topics"]), *keys), names).where(
        F.col("p.error_code") == ErrorCode.FENCED_LEADER_EPOCH).select(
        *keys, "topic", "partition", F.col("p.current_leader.leader_epoch").alias("_answered"))
    asked = _resolved(_partitions(rejected, F.from_json(F.col("request_json"), REQUEST)["topics"], *keys), names)
    asked = asked.select(*keys, "topic", "partition", F.col("p.current_leader_epoch").alias("stale_epoch"))
    rows = (rejected.join(answered, keys, "left").join(asked, [*keys, "topic", "partition"], "left")
            .withColumn("_answered", F.when(F.col("_answered") >= 0, F.col("_answered"))))
    return _with_handed(rows, md, names)


def _with_handed(rows: DataFrame, md: DataFrame, names: DataFrame) -> DataFrame:
    """current_epoch / current_epoch_source: the response's own epoch, else the highest Metadata handed before."""
    source = response_source(F.lit("Metadata"), F.col("ts"))
    handed = (_resolved(_partitions(md.withColumn("_source", source), F.col("j.topics"), "ts", "_source"), names)
              .where(F.col("p.leader_epoch") >= 0)
              .select("topic", "partition", "ts", F.struct(F.col("p.leader_epoch").alias("epoch"),
                                                           F.col("_source").alias("source")).alias("_handed"))
              .join(rows.select("topic", "partition").distinct(), ["topic", "partition"], "left_semi"))
    order = (Window.partitionBy("topic", "partition").orderBy("ts", "_is_row")
             .rowsBetween(Window.unboundedPreceding, 0))
    swept = (rows.withColumn("_is_row", F.lit(True))
             .unionByName(handed.withColumn("_is_row", F.lit(False)), allowMissingColumns=True)
             .withColumn("_best", F.max("_handed").over(order))
             .where(F.col("_is_row")))
    from_response = F.concat(response_source(F.col("api_name")), F.lit(" (current_leader)"))
    return (swept.withColumns({"current_epoch": F.coalesce("_answered", "_best.epoch"),
                               "current_epoch_source": F.when(F.col("_answered").isNotNull(), from_response)
                               .otherwise(F.col("_best.source"))})
            .select(F.lit("partition_leader").alias("kind"), "client_id", "topic", "partition",
                    F.col("stale_epoch").cast("int"), F.col("current_epoch").cast("int"), "current_epoch_source",
                    "error_code", "error_name", "api_key", "api_name", "correlation_id", "conn_id", "ts",
                    F.lit(False).alias("inferred"), F.lit(1).cast("long").alias("requests")))
