"""Joining rows whose offset ranges intersect, in time that stays linear as a partition's history grows.

A join on (topic, partition) plus a range condition compares every row of a partition with every other one: fine
on a sample, quadratic on a day of traffic. Here both sides are also split into fixed-width offset buckets and joined
on the bucket too, so a row only meets rows near its offsets; each pair is kept in one bucket only (the one where
their intersection starts), so no pair is counted twice. Ranges wider than WIDE buckets (huge or corrupt batches) are
joined on the key alone (through a sentinel bucket) instead of being exploded into millions of buckets; they are
rare. A side whose ranges are single offsets (its first and last columns are one) is never wide, so the other side
needs no sentinel row for it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

BUCKET = 1024
WIDE = 256


# Bucket numbers that stand for "every range of the other side": a wide left row meets right rows at LEFT_WIDE, a
# wide right row meets left rows at RIGHT_WIDE. Narrow rows carry the sentinel of the other side's wide rows only, so
# narrow rows never meet each other there. No offset / BUCKET comes near them (offsets are 64-bit).
LEFT_WIDE, RIGHT_WIDE = -(2**62), -(2**62) - 1


def _bucketed(df: DataFrame, lo: str, hi: str, name: str, meets: int | None) -> DataFrame:
    """One row per bucket the range [lo, hi] touches plus one at `meets` (the other side's wide rows; None when the
    other side has none), as `name`; a wide range gets both sentinels instead of its buckets."""
    first, last = F.floor(F.col(lo) / BUCKET), F.floor(F.col(hi) / BUCKET)
    wide = F.coalesce(last - first > WIDE, F.lit(False))
    narrow = F.sequence(first, F.greatest(first, last))
    if meets is not None:
        narrow = F.concat(narrow, F.array(F.lit(meets).cast("long")))
    buckets = F.when(wide, F.array(F.lit(LEFT_WIDE).cast("long"), F.lit(RIGHT_WIDE).cast("long"))).otherwise(narrow)
    return df.withColumns({f"{name}_wide": wide, name: F.explode(buckets)})


def overlapping(left: DataFrame, right: DataFrame, key: list[str], left_range: tuple[str, str],
                right_range: tuple[str, str], prefix: str) -> DataFrame:
    """Each `left` row beside every `right` row with the same `key` (nulls equal) whose inclusive offset range
    intersects its own; right's columns come back renamed `prefix + name`. One join, each side read once: a pair
    of narrow rows meets in the bucket where their intersection starts, a pair with a wide row at a sentinel."""
    r = right.select(*[F.col(c).alias(prefix + c) for c in right.columns])
    llo, lhi = left_range
    rlo, rhi = prefix + right_range[0], prefix + right_range[1]
    # single offsets are never wide: the ranges a point side meets need no sentinel row (one row fewer each)
    lb = _bucketed(left, llo, lhi, "_lb", None if right_range[0] == right_range[1] else RIGHT_WIDE)
    rb = _bucketed(r, rlo, rhi, "_rb", None if llo == lhi else LEFT_WIDE)
    same_key: list[Column] = [F.col(k).eqNullSafe(F.col(prefix + k)) for k in key]
    overlap = (F.col(llo) <= F.col(rhi)) & (F.col(rlo) <= F.col(lhi))
    start = F.floor(F.greatest(F.col(llo), F.col(rlo)) / BUCKET)
    bucket = F.col("_lb")
    once = ((~bucket.isin(LEFT_WIDE, RIGHT_WIDE) & (bucket == start))
            | ((bucket == LEFT_WIDE) & F.col("_lb_wide"))
            | ((bucket == RIGHT_WIDE) & F.col("_rb_wide") & ~F.col("_lb_wide")))
    return (lb.join(rb, [*same_key, F.col("_lb") == F.col("_rb")]).where(overlap & once)
            .drop("_lb", "_lb_wide", "_rb", "_rb_wide"))
