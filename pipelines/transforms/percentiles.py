"""Exact percentiles by nearest rank: the value at rank ceil(q * n) of a group's n non-null values, two ways.

Why not Spark's other aggregates: `percentile_approx` is exact only while a group holds fewer values than its
accuracy (10,000 by default), and its summaries cost more than a sort (e2e_latency at 3 M generated frames);
`percentile` interpolates. Nearest rank is what `percentile_approx` gives on a small group, so a report of small
groups reads the same as before.

The two ways give the same values and suit different groups:
- `ranked` and `nearest_rank`: a window sorts each group's rows by the column. Over many small groups (e2e_latency's
  windows of one partition and consumer) this is the faster: 30 M rows in 300,000 groups took 25-28 s against 32-34 s
  for the aggregate.
- `percentiles` and `spread`: SQL's `percentile_disc` (Spark's fixed one, SPARK-44871), one aggregate per column
  that keeps each distinct value of a group once with its count, so no row is sorted. Over a few large groups (whole
  connections) this is the faster: `sessions/connections` at 10 M generated frames took 37 task-seconds against 53.
  A group's distinct values are held in memory, as `percentile` holds them for `throughput/latency`; latencies in
  microseconds repeat, so they stay far fewer than the rows.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F


def ranked(df: DataFrame, group: list[str], col: str) -> DataFrame:
    """`df` with each row's rank by `col` within its `group` (nulls last) and the group's count of non-null `col`,
    for `nearest_rank` in an aggregation by `group`."""
    order = Window.partitionBy(*group).orderBy(F.col(col).asc_nulls_last())
    whole = order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    return df.withColumns({f"_{col}_rank": F.row_number().over(order), f"_{col}_count": F.count(col).over(whole)})


def nearest_rank(col: str, q: float) -> Column:
    """The `q` percentile of `col` over a group `ranked` by it: the smallest value with at least `q` of the group's
    values at or below it (null when the group has none)."""
    rank = F.greatest(F.lit(1), F.ceil(F.col(f"_{col}_count") * q))
    return F.max(F.when(F.col(f"_{col}_rank") == rank, F.col(col)))


def _array_name(col: str) -> str:
    return f"_{col}_percentiles"


def percentiles(col: str, named: Mapping[str, float]) -> Column:
    """An aggregate: the `named` percentiles of `col` as one array, for `spread` (one aggregate per column, not per
    percentile: each keeps its own counts)."""
    qs = ", ".join(repr(float(q)) for q in named.values())
    return F.expr(f"percentile_disc(array({qs})) WITHIN GROUP (ORDER BY `{col}`)").alias(_array_name(col))


def spread(df: DataFrame, col: str, named: Mapping[str, float], type_: str) -> DataFrame:
    """`df`, aggregated with `percentiles(col, named)`, with that array replaced in its place by one column per name,
    as `type_` (Spark gives doubles)."""
    array = _array_name(col)
    values = [F.col(array)[i].cast(type_).alias(name) for i, name in enumerate(named)]
    return df.select(*(c for name in df.columns for c in (values if name == array else [df[name]])))
