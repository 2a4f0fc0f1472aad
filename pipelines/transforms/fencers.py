"""Who fenced whom: the party that received the newer epoch a fencing names.

Producers: the InitProducerId response that started the instance holding the current epoch (a second instance of the
transactional id bumping it). Under transactions v1 that response handed the current epoch itself; under transactions
v2 (KIP-890) every EndTxn response hands its producer the next epoch, so the current epoch may come from the new
instance's own EndTxn: the chain of epochs is followed back to the latest InitProducerId that handed an epoch newer
than the one the refused request used (`fenced_by_epoch`, kept for the explanation). Group members: the first member
handed one of the fenced member's partitions after the fenced member got it and before the fencing (`ownership`), by
the heartbeat or SyncGroup response that took it over (a streams member's tasks, as the partitions they read).
Null when the capture does not show it (share sessions, leader epochs, members whose partitions nobody took).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.transforms.common import MEMBER_KINDS

FENCER = ["fenced_by_client_id", "fenced_by_conn_id", "fenced_by_member_id", "fenced_by_ts"]
FENCER_EPOCH = "fenced_by_epoch"
"""The epoch the fencer's InitProducerId was handed (null for members): the causes' explanation quotes it, the final
select drops it."""
ROW_KEY = ["kind", "party", "stale_epoch", "inferred", "ts"]
"""What names one fencing row before the final select (`stale_epoch` may be null: join on it null-safely)."""


def _producer_fencers(rows: DataFrame, handed: DataFrame) -> DataFrame:
    init = handed.where((F.col("kind") == "producer") & (F.col("api_key") == ApiKey.INIT_PRODUCER_ID)).alias("h")
    r = rows.where(F.col("kind") == "producer").alias("r")
    # an InitProducerId up to the current epoch that handed an epoch newer than the refused request's: epochs only
    # grow, so the one with the highest epoch (the earliest of equals) started the instance holding the current one
    newer = F.coalesce(F.col("h.epoch") > F.col("r.stale_epoch"), F.col("h.epoch") == F.col("r.current_epoch"))
    pairs = r.join(init, (F.col("h.producer_id") == F.col("r.producer_id")) & newer
                   & (F.col("h.epoch") <= F.col("r.current_epoch")) & (F.col("h.ts") <= F.col("r.ts")))
    return (pairs.select(*[F.col(f"r.{c}") for c in ROW_KEY],
                         F.struct(F.lit(None).cast("string").alias("member_id"), "h.client_id", "h.conn_id", "h.ts",
                                  "h.epoch").alias("w"))
            .groupBy(*ROW_KEY).agg(F.max_by("w", F.struct("w.epoch", (-F.unix_micros("w.ts")).alias("t")))
                                   .alias("w")))


def _member_fencers(rows: DataFrame, owned: DataFrame) -> DataFrame:
    r = rows.where(F.col("kind").isin(MEMBER_KINDS)).alias("r")
    mine, theirs = owned.alias("m"), owned.alias("o")
    held = r.join(mine, (F.col("m.group_id") == F.col("r.group_id")) & (F.col("m.member_id") == F.col("r.member_id"))
                  & (F.col("m.own_start") <= F.col("r.ts")))
    taken = held.join(theirs, (F.col("o.group_id") == F.col("m.group_id")) & (F.col("o.topic") == F.col("m.topic"))
                      & (F.col("o.partition") == F.col("m.partition")) & (F.col("o.member_id") != F.col("m.member_id"))
                      & (F.col("o.own_start") > F.col("m.own_start")) & (F.col("o.own_start") <= F.col("r.ts")))
    return (taken.select(*[F.col(f"r.{c}") for c in ROW_KEY],
                         F.struct("o.member_id", "o.client_id", "o.conn_id", F.col("o.own_start").alias("ts"),
                                  F.lit(None).cast("int").alias("epoch")).alias("w"))
            .groupBy(*ROW_KEY).agg(F.min_by("w", "w.ts").alias("w")))


def with_fencers(rows: DataFrame, handed: DataFrame, owned: DataFrame) -> DataFrame:
    """Add FENCER and FENCER_EPOCH to fencing rows (with `party`, `current_epoch`, `ts`); `handed` from
    `epochs.handed_epochs`, `owned` from `ownership.ownership`."""
    found = _producer_fencers(rows, handed).unionByName(_member_fencers(rows, owned))
    keys = [F.col(f"r.{c}").eqNullSafe(F.col(f"f.{c}")) for c in ROW_KEY]
    return (rows.alias("r").join(found.alias("f"), keys, "left")
            .select("r.*", F.col("f.w.client_id").alias("fenced_by_client_id"),
                    F.col("f.w.conn_id").alias("fenced_by_conn_id"),
                    F.col("f.w.member_id").alias("fenced_by_member_id"), F.col("f.w.ts").alias("fenced_by_ts"),
                    F.col("f.w.epoch").alias(FENCER_EPOCH)))
