"""sessions/producers and sessions/transactions: each producer's epochs, transactions and how it ended."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.transforms.common import (PRODUCER_FENCING, TXN_APIS, batch_taken, of_apis, request_str,
                                                  response_str, with_client_host)


def producer_frames(frames: DataFrame) -> DataFrame:
    """InitProducerId and transaction frames with the producer id and epoch they are about (InitProducerId: the
    answered ones)."""
    init = F.col("api_key") == ApiKey.INIT_PRODUCER_ID
    return (with_client_host(of_apis(frames, ApiKey.INIT_PRODUCER_ID, *TXN_APIS))
            .withColumns({
                "producer_id": F.when(init, response_str("$.producer_id").cast("long")).otherwise(F.col("producer_id")),
                "producer_epoch": F.when(init, response_str("$.producer_epoch").cast("int"))
                .otherwise(F.col("producer_epoch").cast("int")),
                "committed": F.when(F.col("api_key") == ApiKey.END_TXN, request_str("$.committed").cast("boolean")),
                "ts": F.coalesce("ts_request", "ts_response")})
            .where(F.col("producer_id") >= 0))


def _producer_key(df: DataFrame, txn_ids: DataFrame) -> DataFrame:
    """Key producers by transactional id, else by producer id (batches carry no transactional id: use the one
    InitProducerId / the transaction apis paired with the producer id)."""
    if "transactional_id" not in df.columns:
        df = df.withColumn("transactional_id", F.lit(None).cast("string"))
    txn_id = F.coalesce("transactional_id", "_txn_id")
    return (df.join(F.broadcast(txn_ids), "producer_id", "left")
            .withColumns({"transactional_id": txn_id, "producer_key": F.coalesce(
                txn_id, F.concat(F.lit("pid:"), F.col("producer_id").cast("string")))})
            .drop("_txn_id"))


def _txn_ids(pf: DataFrame) -> DataFrame:
    return (pf.where(F.col("transactional_id").isNotNull()).groupBy("producer_id")
            .agg(F.min("transactional_id").alias("_txn_id")))


def _produced(batches: DataFrame) -> DataFrame:
    """Every producer's data batches, idempotent or not (a plain producer's batches carry producer id -1)."""
    return with_client_host(batches.where((F.col("direction") == "produce") & ~F.col("is_control")))


def transactions(frames: DataFrame, batches: DataFrame) -> DataFrame:
    """Transactions split at EndTxn requests within each (producer id, epoch)."""
    pf = producer_frames(frames)
    txn_ids = _txn_ids(pf)
    requests = pf.where(F.col("api_key").isin(*TXN_APIS)).select(
        "producer_id", "producer_epoch", "transactional_id", "ts", "api_key", "committed", "error_name",
        F.lit(None).cast("string").alias("tp"), F.lit(0).alias("batches"), F.lit(0).alias("records"))
    data = _produced(batches).where(F.col("is_transactional") & (F.col("producer_id") >= 0)).select(
        "producer_id", F.col("producer_epoch").cast("int"), F.lit(None).cast("string").alias("transactional_id"),
        "ts", F.lit(0).cast("short").alias("api_key"), F.lit(None).cast("boolean").alias("committed"),
        F.lit(None).cast("string").alias("error_name"),
        F.concat_ws(":", "topic", F.col("partition").cast("string")).alias("tp"),
        F.lit(1).alias("batches"), F.col("record_count").alias("records"))
    events = requests.unionByName(data)
    is_end = F.col("api_key") == ApiKey.END_TXN
    w = (Window.partitionBy("producer_id", "producer_epoch").orderBy("ts", F.col("api_key").desc())
         .rowsBetween(Window.unboundedPreceding, -1))
    indexed = events.withColumn("txn_index", F.coalesce(F.sum(F.when(is_end, 1).otherwise(0)).over(w), F.lit(0)))
    grouped = indexed.groupBy("producer_id", "producer_epoch", "txn_index").agg(
        F.max("transactional_id").alias("transactional_id"),
        F.min(F.when(~is_end, F.col("ts"))).alias("start_ts"),
        F.max(F.when(is_end, F.col("ts"))).alias("end_ts"),
        F.max(F.when(is_end, F.col("committed").cast("int"))).alias("_committed"),
        F.max(F.when(is_end, F.col("error_name"))).alias("end_error"),
        F.max(F.col("error_name").isin(PRODUCER_FENCING)).alias("_fenced"),
        F.sum("batches").cast("long").alias("batches"),
        F.sum("records").cast("long").alias("records"),
        F.sort_array(F.collect_set("tp")).alias("partitions"))
    outcome = (F.when(F.col("_fenced"), "fenced").when(F.col("end_ts").isNull(), "open")
               .when(F.col("_committed") == 1, "commit").otherwise("abort"))
    return (_producer_key(grouped, txn_ids).drop("producer_key")
            .withColumns({"start_ts": F.coalesce("start_ts", "end_ts"), "outcome": outcome})
            .drop("_committed", "_fenced"))


def producers(frames: DataFrame, batches: DataFrame) -> DataFrame:
    """One row per producer: transactional, idempotent (by producer id) and plain (by client id and host)."""
    pf = producer_frames(frames)
    txn_ids = _txn_ids(pf)
    produce = _produced(batches)
    last = F.struct("ts", "correlation_id")
    frame_side = _producer_key(pf, txn_ids).select(
        "producer_key", "transactional_id", "producer_id", "client_id", "client_host", "ts", "correlation_id",
        F.col("producer_epoch").alias("epoch"), "api_key", "committed", "error_name",
        F.lit(0).alias("batches"), F.lit(0).alias("records"), F.lit(0).cast("long").alias("bytes"),
        F.lit(0).alias("refused"), F.lit(False).alias("is_transactional"))
    # A plain producer has no id of its own on the wire: it is its client id on its host (over all its connections).
    plain = F.concat(F.lit("client:"), F.coalesce("client_id", F.lit("")), F.lit("@"),
                     F.coalesce("client_host", F.lit("")))
    keyed = F.when(F.col("producer_id") >= 0, F.col("producer_key")).otherwise(plain)
    batch_side = _producer_key(produce, txn_ids).withColumn("producer_key", keyed).select(
        "producer_key", "transactional_id", "producer_id", "client_id", "client_host", "ts", "correlation_id",
        F.col("producer_epoch").cast("int").alias("epoch"), F.lit(0).cast("short").alias("api_key"),
        F.lit(None).cast("boolean").alias("committed"), F.lit(None).cast("string").alias("error_name"),
        F.lit(1).alias("batches"), F.col("record_count").alias("records"), F.col("batch_bytes").alias("bytes"),
        F.when(~batch_taken(), F.col("record_count")).otherwise(0)
        .alias("refused"), "is_transactional")
    events = frame_side.unionByName(batch_side)
    is_end = F.col("api_key") == ApiKey.END_TXN
    agg = events.groupBy("producer_key").agg(
        F.max("transactional_id").alias("transactional_id"),
        F.max_by("producer_id", last).alias("producer_id"),
        F.sort_array(F.collect_set("producer_id")).alias("producer_ids"),
        F.min_by("client_id", "ts").alias("client_id"),
        F.min_by("client_host", "ts").alias("client_host"),
        F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"),
        F.sort_array(F.collect_set(F.when(F.col("epoch") >= 0, F.col("epoch")))).alias("epochs"),
        F.count(F.when(is_end, 1)).alias("transactions"),
        F.count(F.when(is_end & F.col("committed"), 1)).alias("commits"),
        F.count(F.when(is_end & ~F.col("committed"), 1)).alias("aborts"),
        F.count(F.when(is_end & (F.col("error_name") != "NONE"), 1)).alias("failed_end_txns"),
        F.sum("batches").cast("long").alias("batches"), F.sum("records").cast("long").alias("records"),
        F.sum("bytes").cast("long").alias("bytes"), F.sum("refused").cast("long").alias("refused_records"),
        F.max_by(F.struct("ts", "error_name"), F.when(F.col("error_name").isin(PRODUCER_FENCING), last))
        .alias("fence"),
        F.max_by(F.struct("ts", "committed", "error_name"), F.when(is_end, last)).alias("end"),
        F.max(F.when(F.col("is_transactional"), F.col("ts"))).alias("last_txn_data"),
    )
    ended = (F.when(F.col("fence").isNotNull() & (F.col("fence.ts") >= F.coalesce(F.col("end.ts"), F.col("fence.ts"))),
                    "fenced")
             .when(F.col("last_txn_data") > F.coalesce(F.col("end.ts"), F.col("first_seen") - F.expr("INTERVAL 1 DAY")),
                   "open_transaction")
             .when(F.col("end").isNull(), "active")
             .when(F.col("end.committed"), "committed").otherwise("aborted"))
    kind = (F.when(F.col("transactional_id").isNotNull(), "transactional")
            .when(F.col("producer_id") >= 0, "idempotent").otherwise("plain"))
    return (agg.withColumns({"ended": ended, "kind": kind,
                             "end_ts": F.when(ended == "fenced", F.col("fence.ts"))
                             .when(ended.isin("committed", "aborted"), F.col("end.ts")).otherwise(F.col("last_seen")),
                             "end_error": F.when(ended == "fenced", F.col("fence.error_name"))})
            .drop("fence", "end", "last_txn_data", "producer_key"))
