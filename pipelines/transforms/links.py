"""Linking fetch traffic to group members.

Fetch requests carry no group id, and consumers fetch over other connections (to partition leaders) than the one to
their coordinator. The only honest link is the client id plus the client ip, at a time the member was alive; when
several members fit, the link is reported as ambiguous instead of guessed.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.transforms.common import with_client_host
from kafkatap.pipelines.transforms.replicas import replica_id


def consumer_fetches(frames: DataFrame) -> DataFrame:
    """Fetch frames of consumers (follower replicas send a replica id >= 0 and are not consumers)."""
    return with_client_host(frames.where((F.col("api_key") == ApiKey.FETCH) & (replica_id() < 0)))


def fetch_links(frames: DataFrame, spans: DataFrame) -> DataFrame:
    """sessions/fetch_links: one row per fetch connection, with its candidate members over its whole life."""
    conns = (consumer_fetches(frames).groupBy("conn_id").agg(
        F.min_by("client_id", "ts_request").alias("client_id"),
        F.first("client_host").alias("client_host"),
        F.min(F.coalesce("ts_request", "ts_response")).alias("first_fetch"),
        F.max(F.coalesce("ts_request", "ts_response")).alias("last_fetch")))
    s = spans.alias("s")
    cand = conns.alias("c").join(
        s, (F.col("c.client_id") == F.col("s.client_id")) & (F.col("c.client_host") == F.col("s.client_host"))
        & (F.col("s.span_start") <= F.col("c.last_fetch")) & (F.col("s.span_end") >= F.col("c.first_fetch")), "left")
    agg = cand.groupBy("c.conn_id", "c.client_id", "c.client_host", "c.first_fetch", "c.last_fetch").agg(
        F.sort_array(F.collect_set(F.when(F.col("s.member_id").isNotNull(),
                                          F.concat_ws("/", "s.group_id", "s.member_id")))).alias("candidates"),
        F.collect_set("s.group_id").alias("groups"),
        F.collect_set("s.member_id").alias("members"))
    n = F.size("candidates")
    return (agg.withColumn("link", F.when(n == 0, "unlinked").when(n == 1, "linked").otherwise("ambiguous"))
            .withColumn("group_id", F.when(F.size("groups") == 1, F.get("groups", 0)))
            .withColumn("member_id", F.when(n == 1, F.get("members", 0)))
            .drop("groups", "members"))


def link_deliveries(deliveries: DataFrame, spans: DataFrame) -> DataFrame:
    """Add group_id / member_id / link to each delivery (a row with `delivery_id`, client_id, client_host, ts),
    matching members alive at the delivery's time."""
    s = spans.alias("s")
    cand = deliveries.alias("d").join(
        s, (F.col("d.client_id") == F.col("s.client_id")) & (F.col("d.client_host") == F.col("s.client_host"))
        & (F.col("s.span_start") <= F.col("d.ts")) & (F.col("s.span_end") >= F.col("d.ts")), "left")
    links = cand.groupBy("d.delivery_id").agg(
        F.collect_set(F.when(F.col("s.member_id").isNotNull(),
                             F.concat_ws("/", "s.group_id", "s.member_id"))).alias("candidates"),
        F.collect_set("s.group_id").alias("groups"),
        F.collect_set("s.member_id").alias("members"))
    n = F.size("candidates")
    links = links.select(
        "delivery_id",
        F.when(n == 0, "unlinked").when(n == 1, "linked").otherwise("ambiguous").alias("link"),
        F.when(F.size("groups") == 1, F.get("groups", 0)).alias("group_id"),
        F.when(n == 1, F.get("members", 0)).alias("member_id"))
    return deliveries.join(links, "delivery_id", "left")
