"""Producer duplicates: one batch appended at two offsets (idempotent producers prove it with their sequence
numbers) or, for non-idempotent producers, the same records re-sent within the retry window."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.common import with_client_host
from kafkatap.pipelines.transforms.duplicates.segments import OUTPUT, not_consumer

# A non-idempotent producer's retry re-sends the same batch within its delivery timeout (120 s by default).
RETRY_WINDOW_S = 120


def producer_duplicates(batches: DataFrame, fingerprinted: bool) -> DataFrame:
    """Idempotent producers: the same (producer id, epoch, base sequence) appended at two offsets. Non-idempotent
    ones (when the dissect read the records, `--records`, which fingerprints the batches): the same batch content
    re-sent within the retry window, flagged as possible."""
    produced = batches.where((F.col("direction") == "produce") & ~F.col("is_control"))
    key = ["producer_id", "producer_epoch", "base_sequence", "topic", "partition"]
    appends = (produced.where((F.col("producer_id") >= 0) & (F.col("assigned_offset") >= 0))
               .groupBy(*key, "assigned_offset")
               .agg(F.min_by(F.struct("ts", "conn_id", "client_id", "record_count"), "ts").alias("x"))
               .select("*", "x.*").drop("x"))
    order = Window.partitionBy(*key).orderBy("ts", "assigned_offset")
    everything = order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    proven = (appends.withColumns({"n": F.row_number().over(order),
                                   "deliveries": F.count(F.lit(1)).over(everything),
                                   "original_offset": F.first("assigned_offset").over(everything),
                                   "first_delivery_ts": F.first("ts").over(everything),
                                   "first_conn_id": F.first("conn_id").over(everything),
                                   "first_client_id": F.first("client_id").over(everything)})
              .where(F.col("n") == 2)
              .select(*key, "original_offset", "first_delivery_ts", "first_conn_id", "first_client_id",
                      "deliveries", F.col("assigned_offset").alias("first_offset"),
                      (F.col("assigned_offset") + F.col("record_count") - 1).alias("last_offset"),
                      F.col("record_count").cast("long").alias("records"), F.col("ts").alias("redelivery_ts"),
                      F.col("conn_id").alias("redelivery_conn_id"), F.col("client_id").alias("redelivery_client_id"),
                      F.lit("retry_appended_twice").alias("cause"), F.lit(False).alias("possible")))
    result = proven
    if fingerprinted:
        result = result.unionByName(_possible_resends(produced))
    return result.withColumns({
        "kind": F.lit("producer"), "group_id": F.lit(None).cast("string"),
        "first_member_id": F.lit(None).cast("string"), "redelivery_member_id": F.lit(None).cast("string"),
        "delivery_count": F.lit(None).cast("int"), "ack_history": F.lit(None).cast("array<string>"),
        **not_consumer()}).select(OUTPUT)


def _possible_resends(produced: DataFrame) -> DataFrame:
    """Non-idempotent batches with the fingerprint (the same records) of an earlier batch of the same client (client
    id and host: a retry comes from the producer that sent the batch, and many hosts run producers of one default
    client id, `producer-1` or `rdkafka`, that may send the same records) and partition, sent in another request within
    RETRY_WINDOW_S."""
    sent = (with_client_host(produced.where((F.col("producer_id") < 0) & F.col("fingerprint").isNotNull()))
            .withColumn("assigned", F.coalesce("assigned_offset", F.lit(-1))))
    # the fingerprint first: the window's sort compares rows by an 8-byte prefix of its first key, and a client's
    # batches share their client id's and topic's first bytes (client id first, that sort took 1.6 s of the 228k-frame
    # chatty capture's 3.6 s of the table's tasks; 0.74 s now)
    order = (Window.partitionBy("fingerprint", "record_count", "client_id", "client_host", "topic", "partition")
             .orderBy("ts"))
    everything = order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    return (sent.withColumns({"prev_ts": F.lag("ts").over(order),
                              "n": F.row_number().over(order),
                              "deliveries": F.count(F.lit(1)).over(everything),
                              "first_assigned": F.first("assigned").over(everything),
                              "first_delivery_ts": F.first("ts").over(everything),
                              "first_conn_id": F.first("conn_id").over(everything)})
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
