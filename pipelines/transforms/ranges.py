"""Joining rows whose offset ranges intersect, in time that stays linear as a partition's history grows.

A join on (topic, partition) plus a range condition compares every row of a partition with every other one: fine
on a sample, quadratic on a day of traffic. Here both sides are also split into fixed-width offset buckets and joined
on the bucket too, so a row only meets rows near its offsets; each pair is kept in one bucket only (the one where
their intersection starts), so no pair is counted twice. Ranges wider than WIDE buckets (huge or corrupt batches) are
joined on the key alone instead of being exploded into millions of buckets; they are rare.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

BUCKET = 1024
WIDE = 256


def _bucketed(df: DataFrame, lo: str, hi: str, name: str) -> DataFrame:
    """One row per bucket the range [lo, hi] touches (`name`), or one row with a null bucket when it is wide."""
    first, last = F.floor(F.col(lo) / BUCKET), F.floor(F.col(hi) / BUCKET)
    wide = F.coalesce(last - first > WIDE, F.lit(False))
    buckets = F.when(wide, F.array(F.lit(None).cast("long"))).otherwise(F.sequence(first, F.greatest(first, last)))
    return df.withColumn(f"{name}_wide", wide).withColumn(name, F.explode(buckets))


def overlapping(left: DataFrame, right: DataFrame, key: list[str], left_range: tuple[str, str],
                right_range: tuple[str, str], prefix: str) -> DataFrame:
    """Each `left` row beside every `right` row with the same `key` (nulls equal) whose inclusive offset range
    intersects its own; right's columns come back renamed `prefix + name`."""
    r = right.select(*[F.col(c).alias(prefix + c) for c in right.columns])
    llo, lhi = left_range
    rlo, rhi = prefix + right_range[0], prefix + right_range[1]
    lb, rb = _bucketed(left, llo, lhi, "_lb"), _bucketed(r, rlo, rhi, "_rb")
    same_key: list[Column] = [F.col(k).eqNullSafe(F.col(prefix + k)) for k in key]
    overlap = (F.col(llo) <= F.col(rhi)) & (F.col(rlo) <= F.col(lhi))
    start = F.floor(F.greatest(F.col(llo), F.col(rlo)) / BUCKET)
    narrow = (lb.where(~F.col("_lb_wide"))
              .join(rb.where(~F.col("_rb_wide")), [*same_key, F.col("_lb") == F.col("_rb")])
              .where(overlap & (F.col("_lb") == start)))
    wide_left = (lb.where(F.col("_lb_wide")).join(rb, same_key)
                 .where(overlap & (F.col("_rb_wide") | (F.col("_rb") == start))))
    wide_right = (lb.where(~F.col("_lb_wide")).join(rb.where(F.col("_rb_wide")), same_key)
                  .where(overlap & (F.col("_lb") == start)))
    return narrow.unionByName(wide_left).unionByName(wide_right).drop("_lb", "_lb_wide", "_rb", "_rb_wide")
