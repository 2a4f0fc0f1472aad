"""ownership_conflicts: one partition owned by two members of one group at once, the mark of zombie consumers and of
KIP-848 reconciliation bugs.

Two rules, each a row `source`:
- `assignment`: two members' ownership intervals (`ownership.ownership`) of the same partition overlap: the later
  owner was handed it while the earlier one had not given it up on the wire. `fetches` counts the Fetch responses
  that brought the earlier owner the partition during the overlap: 0 is a slow release, more is a zombie at work.
- `fetch`: a member (linked to its fetches as in `sessions/fetch_links`) received the partition in Fetch responses
  while it did not own it and another member did. Its fetches are grouped per (member, owner).
Ownership intervals are few per partition (one per assignment change), so the self-join stays small.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.common import ISO, batch_taken, with_client_host
from kafkatap.pipelines.transforms.links import link_deliveries
from kafkatap.pipelines.transforms.ownership import ownership

OUTPUT = ["kind", "group_id", "topic", "partition", "source", "first_member_id", "first_client_id",
          "second_member_id", "second_client_id", "overlap_start", "overlap_end", "overlap_s", "fetches",
          "first_evidence", "second_evidence"]


def _span(start: str, end: str):
    return (F.unix_micros(F.col(end)) - F.unix_micros(F.col(start))) / 1e6


def _assignment_overlaps(owned: DataFrame, linked: DataFrame) -> DataFrame:
    a, b = owned.alias("a"), owned.alias("b")
    pairs = a.join(b, (F.col("a.group_id") == F.col("b.group_id")) & (F.col("a.topic") == F.col("b.topic"))
                   & (F.col("a.partition") == F.col("b.partition")) & (F.col("a.member_id") != F.col("b.member_id"))
                   & (F.col("a.own_start") <= F.col("b.own_start")) & (F.col("b.own_start") < F.col("a.own_end")))
    # equal starts would pair both ways: keep the one in member id order
    pairs = pairs.where((F.col("a.own_start") < F.col("b.own_start")) | (F.col("a.member_id") < F.col("b.member_id")))
    overlaps = pairs.select(
        F.col("a.kind").alias("kind"), F.col("a.group_id").alias("group_id"), F.col("a.topic").alias("topic"),
        F.col("a.partition").alias("partition"), F.lit("assignment").alias("source"),
        F.col("a.member_id").alias("first_member_id"), F.col("a.client_id").alias("first_client_id"),
        F.col("b.member_id").alias("second_member_id"), F.col("b.client_id").alias("second_client_id"),
        F.col("b.own_start").alias("overlap_start"), F.least("a.own_end", "b.own_end").alias("overlap_end"),
        F.concat(F.lit("held since "), F.col("a.start_evidence"), F.lit(", until "), F.col("a.end_evidence"))
        .alias("first_evidence"),
        F.concat(F.lit("handed by "), F.col("b.start_evidence")).alias("second_evidence"))
    o, d = overlaps.alias("o"), linked.alias("d")
    during = (o.join(d, (F.col("d.member_id") == F.col("o.first_member_id"))
                     & (F.col("d.group_id") == F.col("o.group_id")) & (F.col("d.topic") == F.col("o.topic"))
                     & (F.col("d.partition") == F.col("o.partition"))
                     & F.col("d.ts").between(F.col("o.overlap_start"), F.col("o.overlap_end")))
              .groupBy("o.group_id", "o.topic", "o.partition", "o.first_member_id", "o.second_member_id",
                       "o.overlap_start").agg(F.count(F.lit(1)).alias("fetches")))
    key = ["group_id", "topic", "partition", "first_member_id", "second_member_id", "overlap_start"]
    return overlaps.join(during, key, "left").withColumn("fetches", F.coalesce("fetches", F.lit(0)))


def _linked_fetches(batches: DataFrame, spans: DataFrame) -> DataFrame:
    """Fetch responses that delivered a partition, one row each, linked to the one member that fetched them."""
    fetched = (with_client_host(batches).drop("group_id", "member_id")
               .where((F.col("direction") == "fetch") & ~F.col("is_control")
                      & batch_taken())
               .select("conn_id", "correlation_id", "client_id", "client_host", "ts", "topic", "partition")
               .dropDuplicates(["conn_id", "correlation_id", "topic", "partition"]))
    return link_deliveries(fetched, spans).where(F.col("link") == "linked")


def _fetch_overlaps(owned: DataFrame, linked: DataFrame) -> DataFrame:
    def at(who: str) -> Column:
        """The ownership interval `who` covers the delivery `d`'s partition at its time."""
        return ((F.col(f"{who}.group_id") == F.col("d.group_id")) & (F.col(f"{who}.topic") == F.col("d.topic"))
                & (F.col(f"{who}.partition") == F.col("d.partition"))
                & (F.col(f"{who}.own_start") <= F.col("d.ts")) & (F.col("d.ts") <= F.col(f"{who}.own_end")))

    d, mine, other = linked.alias("d"), owned.alias("m"), owned.alias("o")
    stray = (d.join(mine, at("m") & (F.col("m.member_id") == F.col("d.member_id")), "left_anti").alias("d")
             .join(other, at("o") & (F.col("o.member_id") != F.col("d.member_id"))))
    return (stray.groupBy("o.kind", "d.group_id", "d.topic", "d.partition", "d.member_id", "d.client_id",
                          "o.member_id", "o.client_id", "o.start_evidence")
            .agg(F.min("d.ts").alias("overlap_start"), F.max("d.ts").alias("overlap_end"),
                 F.count(F.lit(1)).alias("fetches"),
                 F.min_by(F.struct("d.conn_id", "d.correlation_id"), "d.ts").alias("f"))
            .select("kind", "group_id", "topic", "partition", F.lit("fetch").alias("source"),
                    F.col("d.member_id").alias("first_member_id"), F.col("d.client_id").alias("first_client_id"),
                    F.col("o.member_id").alias("second_member_id"), F.col("o.client_id").alias("second_client_id"),
                    "overlap_start", "overlap_end", "fetches",
                    F.concat(F.col("fetches").cast("string"), F.lit(" Fetch responses after it was handed away, the "
                                                                    "first corr="),
                             F.col("f.correlation_id").cast("string"), F.lit(" conn="), F.col("f.conn_id"),
                             F.lit(" at "), F.date_format("overlap_start", ISO)).alias("first_evidence"),
                    F.concat(F.lit("owner, handed by "), F.col("start_evidence")).alias("second_evidence")))


def ownership_conflicts(frames: DataFrame, batches: DataFrame, spans: DataFrame) -> DataFrame:
    """`spans`: members' spans (`members.member_spans`), for linking fetches to members."""
    owned, linked = ownership(frames, batches), _linked_fetches(batches, spans)
    rows = _assignment_overlaps(owned, linked).unionByName(_fetch_overlaps(owned, linked))
    return rows.withColumn("overlap_s", _span("overlap_start", "overlap_end")).select(OUTPUT)
