"""share_spso: the share-partition start offset over time, the ranges that pin it, and share lag, from share_records.

The SPSO is the lowest offset not yet terminal; it only advances over a contiguous prefix of terminal records. In
offset order, with z_k the time range k became terminal, the SPSO passes range k at P_k = max(z_1..z_k): a running
maximum, so the SPSO's whole history comes from one window function per partition, with no join of every range
against every instant. Range k pins the SPSO from when it is the lowest non-terminal range while a later range is
already terminal (the suffix minimum of z) until z_k.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.common import batch_taken, capture_bounds, or_empty

KEY = ["group_id", "topic", "partition"]


def _never() -> Column:
    """Stands for "not terminal in the capture" in running maxima (a column: built once Spark runs)."""
    return F.lit("9999-12-31 00:00:00").cast("timestamp")


def _passes(records: DataFrame) -> DataFrame:
    """Per range: `_passed` (P_k, null when never), `_before` (P_{k-1}), `_later_first` (first terminal time of
    any later range) and `_prefix` (records up to and including it)."""
    by_offset = Window.partitionBy(*KEY).orderBy("first_offset")
    upto = by_offset.rowsBetween(Window.unboundedPreceding, 0)
    passed = F.max(F.coalesce("terminal_ts", _never())).over(upto)
    return records.withColumns({
        "_passed": F.when(passed < _never(), passed),
        "_before": F.lag(passed).over(by_offset),
        # the later ranges as the earlier ones in the reversed order (a frame to unboundedFollowing is quadratic)
        "_later_first": F.min("terminal_ts").over(Window.partitionBy(*KEY).orderBy(F.col("first_offset").desc())
                                                  .rowsBetween(Window.unboundedPreceding, -1)),
        "_prefix": F.sum("records").over(upto)})


def spso_pinned(records: DataFrame, frames: DataFrame) -> DataFrame:
    """Episodes where a range holds the SPSO while a later range is already terminal."""
    ranges = _passes(or_empty(records))
    blocking = F.col("_before").isNull() | (F.coalesce("terminal_ts", _never()) > F.col("_before"))
    start = F.greatest("_before", "_later_first")
    episodes = (ranges.where(blocking & F.col("_later_first").isNotNull()
                             & (F.col("terminal_ts").isNull() | (start < F.col("terminal_ts"))))
                .select(*KEY, F.col("first_offset").alias("pinned_offset"),
                        F.col("last_offset").alias("pinned_last_offset"), start.alias("start_ts"),
                        F.col("terminal_ts").alias("end_ts"), "deliveries", F.col("final_state").alias("pinned_state"),
                        "max_delivery_count", "lock_expiries"))
    later = records.where(F.col("terminal_ts").isNotNull()).select(
        *[F.col(k).alias(f"_{k}") for k in KEY], F.col("first_offset").alias("_first"),
        F.col("terminal_ts").alias("_terminal"), F.col("records").alias("_records"))
    same = [F.col(k).eqNullSafe(F.col(f"_{k}")) for k in KEY]
    behind = (episodes.join(later, [*same, F.col("_first") > F.col("pinned_last_offset"),
                                    F.col("_terminal") <= F.coalesce("end_ts", _never())])
              .groupBy(*KEY, "pinned_offset").agg(F.sum("_records").alias("records_behind")))
    holder = F.try_element_at(F.filter("deliveries", lambda d: d["acquired_ts"] <= F.coalesce("end_ts", _never())),
                              F.lit(-1))
    until = F.coalesce("end_ts", "capture_end")
    return (episodes.join(behind, [*KEY, "pinned_offset"], "left").crossJoin(F.broadcast(capture_bounds(frames)))
            .select(*KEY, "pinned_offset", "pinned_last_offset", holder["member_id"].alias("holder"),
                    holder["client_id"].alias("holder_client_id"), "start_ts", "end_ts",
                    ((F.unix_micros(until) - F.unix_micros("start_ts")) / 1000.0).alias("duration_ms"),
                    F.coalesce("records_behind", F.lit(0)).cast("long").alias("records_behind"),
                    "pinned_state", "max_delivery_count", "lock_expiries"))


def _log_ends(batches: DataFrame) -> DataFrame:
    """(topic, partition, ts, offset + 1) the capture shows the log reaching."""
    produced = F.col("assigned_offset") + F.col("record_count")
    end = F.when(F.col("direction") == "produce", produced).otherwise(
        F.greatest(F.col("last_offset") + 1, F.col("high_watermark")))
    return (batches.where(batch_taken())
            .select("topic", "partition", "ts", end.alias("_end")).where(F.col("_end").isNotNull()))


def _event(df: DataFrame, t: Column, **values: Column) -> DataFrame:
    cols = {"_spso": None, "_prefix": None, "_terminal": None, "_end": None}
    cols.update(values)
    return df.select(*KEY, t.alias("_t"), F.lit(1).alias("_order"),
                     *[(v if v is not None else F.lit(None)).cast("long").alias(k) for k, v in cols.items()],
                     F.lit(None).cast("timestamp").alias("window_start"))


def spso_windows(records: DataFrame, batches: DataFrame, interval: str) -> DataFrame:
    """Per window: the SPSO, the log end, terminal records above the SPSO and share lag, as of the window's end."""
    ranges = _passes(or_empty(records))
    keys = ranges.groupBy(*KEY).agg(
        F.min("first_offset").alias("_first_offset"), F.min("first_acquired_ts").alias("_t0"),
        F.max(F.greatest("first_acquired_ts", "terminal_ts",
                         F.array_max(F.transform("deliveries", lambda d: F.greatest(d["acquired_ts"], d["ack_ts"])))))
        .alias("_t1"))
    step = F.expr(f"INTERVAL {interval}")
    first_start = F.window("_t0", interval)["start"]
    grid = (keys.select(*KEY, F.explode(F.sequence(first_start, F.col("_t1"), step)).alias("window_start"))
            .select(*KEY, F.lit(0).alias("_order"), "window_start",
                    (F.col("window_start") + step).alias("_t")))
    ends = _log_ends(batches).join(keys.select(*KEY), ["topic", "partition"])
    events = (_event(ranges.where(F.col("_passed").isNotNull()), F.col("_passed"),
                     _spso=F.col("last_offset") + 1, _prefix=F.col("_prefix"))
              .unionByName(_event(records.where(F.col("terminal_ts").isNotNull()), F.col("terminal_ts"),
                                  _terminal=F.col("records")))
              .unionByName(_event(records, F.col("first_acquired_ts"), _end=F.col("last_offset") + 1))
              .unionByName(_event(ends, F.col("ts"), _end=F.col("_end"))))
    timeline = grid.unionByName(events, allowMissingColumns=True)
    upto = Window.partitionBy(*KEY).orderBy("_t", "_order").rowsBetween(Window.unboundedPreceding, 0)
    spso = F.coalesce(F.max("_spso").over(upto), F.col("_first_offset"))
    above = F.coalesce(F.sum("_terminal").over(upto), F.lit(0)) - F.coalesce(F.max("_prefix").over(upto), F.lit(0))
    return (timeline.join(keys.select(*KEY, "_first_offset"), KEY)
            .select("*", spso.alias("spso"), above.alias("terminal_above_spso"),
                    F.max("_end").over(upto).alias("_log_end"))
            .where(F.col("_order") == 0)
            .withColumn("log_end_offset", F.greatest("_log_end", "spso"))
            .select("window_start", F.col("_t").alias("window_end"), *KEY, "spso", "log_end_offset",
                    "terminal_above_spso",
                    F.greatest(F.col("log_end_offset") - F.col("spso") - F.col("terminal_above_spso"), F.lit(0))
                    .alias("share_lag"), (F.col("terminal_above_spso") > 0).alias("pinned")))
