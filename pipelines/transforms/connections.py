"""sessions/connections: what each TCP connection carried, and the TCP analysis counts the dissector made of it."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.tables.schema import TCP_COUNTS
from kafkatap.pipelines.transforms.common import with_client_host
from kafkatap.pipelines.transforms.percentiles import percentiles, spread

LATENCY = {"latency_p50_us": 0.5, "latency_p99_us": 0.99}


def connections(frames: DataFrame, tcp: DataFrame) -> DataFrame:
    """frames: the dissector's frames/; tcp: its connections/ (empty for an output written before it had one: the
    counts are then null)."""
    per_api = (frames.groupBy("conn_id", "api_name").agg(F.count(F.lit(1)).alias("n"))
               .groupBy("conn_id").agg(F.map_from_entries(F.collect_list(F.struct(
                   F.coalesce("api_name", F.lit("unknown")), "n"))).alias("requests_by_api")))
    per_client = (frames.where(F.col("client_id").isNotNull()).groupBy("conn_id", "client_id")
                  .agg(F.count(F.lit(1)).alias("n"))
                  .groupBy("conn_id").agg(
                      F.max_by("client_id", F.struct("n", F.col("client_id"))).alias("client_id"),
                      F.sort_array(F.collect_list("client_id")).alias("client_ids")))
    totals = spread(frames.groupBy("conn_id").agg(
        F.first("client_addr", ignorenulls=True).alias("client_addr"),
        F.first("broker_addr", ignorenulls=True).alias("broker_addr"),
        F.min(F.least("ts_request", "ts_response")).alias("first_seen"),
        F.max(F.greatest("ts_request", "ts_response")).alias("last_seen"),
        F.count(F.lit(1)).alias("requests"),
        F.sum(F.coalesce("request_bytes", F.lit(0))).alias("request_bytes"),
        F.sum(F.coalesce("response_bytes", F.lit(0))).alias("response_bytes"),
        F.count(F.when(F.col("error_code") != 0, 1)).alias("errors"),
        F.count(F.when(F.col("status").isin("unpaired_request", "unpaired_response"), 1)).alias("unpaired"),
        percentiles("latency_us", LATENCY),
    ), "latency_us", LATENCY, "long")
    return (with_client_host(totals).join(per_client, "conn_id", "left").join(per_api, "conn_id", "left")
            .join(tcp.select("conn_id", *TCP_COUNTS), "conn_id", "left")
            .withColumn("client_ids", F.coalesce("client_ids", F.array().cast("array<string>"))))
