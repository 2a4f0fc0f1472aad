"""fenced_epochs: every fencing the broker reported, plus the zombies it did not (inferred from the epochs)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.pipelines.intermediates import emptied, materialize
from kafkatap.pipelines.transforms.causes import CAUSE, with_causes
from kafkatap.pipelines.transforms.common import (
    FENCING_ERRORS, MEMBER_FENCING, PRODUCER_FENCING, SHARE_SESSION_FENCING,
)
from kafkatap.pipelines.transforms.epochs import handed_epochs, used_epochs, with_current_epoch
from kafkatap.pipelines.transforms.fencers import FENCER, with_fencers
from kafkatap.pipelines.transforms.leader_epochs import leader_fencings
from kafkatap.pipelines.transforms.ownership import ownership

OUTPUT = ["kind", "group_id", "transactional_id", "member_id", "group_instance_id", "producer_id", "client_id",
          "stale_epoch", "current_epoch", "current_epoch_source", "error_code", "error_name", "api_key", "api_name",
          "correlation_id", "conn_id", "ts", "inferred", "requests", "topic", "partition", *FENCER, *CAUSE]


def _reported(usage: DataFrame) -> Column:
    """A broker error that fences this kind of party. UNKNOWN_MEMBER_ID only counts after the member held an epoch
    (before that it is an ordinary join race, not a fencing)."""
    is_session = F.col("party").startswith("share:")
    member_error = F.col("error_name").isin(MEMBER_FENCING) & (
        (F.col("error_name") != "UNKNOWN_MEMBER_ID") | F.col("current_epoch").isNotNull())
    return (F.when(F.col("kind") == "producer", F.col("error_name").isin(PRODUCER_FENCING))
            .when(is_session, F.col("error_name").isin(SHARE_SESSION_FENCING))
            .otherwise(member_error))


def _inferred(usage: DataFrame) -> Column:
    """A request using an epoch older than one already handed to its party, that the broker did not reject as
    fenced. Producer epochs start at 0, member epochs and generations at 1; share sessions are always checked by the
    broker, so they are not inferred."""
    floor = F.when(F.col("kind") == "producer", 0).otherwise(1)
    return (~F.col("party").startswith("share:") & F.col("current_epoch").isNotNull()
            & (F.col("epoch") >= floor) & (F.col("epoch") < F.col("current_epoch"))
            & ~F.coalesce(F.col("error_name").isin(FENCING_ERRORS), F.lit(False)))


def _fold(rows: DataFrame) -> DataFrame:
    """One row per (party, stale epoch, error): the first rejected request, with the count of all of them.

    A refused request that carries no epoch (-1) counts with the party's nearest refusal that does, the one before it
    else the one after: the Java consumer, once fenced, commits without its member epoch and is refused again for the
    same fencing (its commit's answer can arrive before its heartbeat's)."""
    error = F.coalesce(F.col("error_name"), F.lit(""))
    order = ["ts", "conn_id", "correlation_id"]
    party = Window.partitionBy("kind", "party", "inferred", error)
    known = F.when(F.col("stale_epoch") >= 0, F.col("stale_epoch"))
    # the one after as the last one over the reversed order: a frame from the row to the partition's end would be
    # evaluated again for every row
    after = party.orderBy(*[F.col(c).desc() for c in order]).rowsBetween(Window.unboundedPreceding, 0)
    nearest = F.coalesce(F.last(known, ignorenulls=True).over(party.orderBy(*order)),
                         F.last(known, ignorenulls=True).over(after))
    epoch = F.coalesce(F.when(F.col("stale_epoch") < 0, nearest), F.col("stale_epoch"))
    key = ["kind", "party", "_epoch", "inferred", error]
    ordered = Window.partitionBy(*key).orderBy(*order)
    whole = Window.partitionBy(*key)
    return (rows.withColumn("_epoch", epoch)
            .withColumns({"_n": F.row_number().over(ordered), "requests": F.count(F.lit(1)).over(whole)})
            .where(F.col("_n") == 1).drop("_n", "_epoch"))


def fenced_epochs(frames: DataFrame, batches: DataFrame) -> DataFrame:
    handed = handed_epochs(frames)
    events = with_current_epoch(handed.unionByName(used_epochs(frames, batches)))
    usage = events.where(~F.col("handed"))
    reported = _reported(usage)
    # Kept, and on a large input known empty when it is (`emptied`): most captures have no fencing, and then the
    # fencers, causes and ownership below are planned as the empty table they make instead of computed
    flagged = emptied(usage.where(reported | _inferred(usage)).select(
        *[F.col(c).alias("stale_epoch") if c == "epoch" else c for c in usage.columns if c != "handed"],
        (~reported).alias("inferred")))
    txn_ids = (handed.where((F.col("kind") == "producer") & F.col("transactional_id").isNotNull())
               .groupBy("producer_id").agg(F.min("transactional_id").alias("_txn_id")))
    # Materialized: the fencers read the fencings three times (producers', members', and the join back).
    folded = materialize(_fold(flagged).join(txn_ids, "producer_id", "left")
                         .withColumn("transactional_id", F.coalesce("transactional_id", "_txn_id")).drop("_txn_id"))
    # Materialized: the causes read the rows three times (the member's history, the group's generations, the join
    # back)
    folded = with_causes(materialize(with_fencers(folded, handed, ownership(frames, batches))), frames, handed)
    return folded.unionByName(leader_fencings(frames), allowMissingColumns=True).select(OUTPUT)
