"""Exact percentiles by nearest rank, from one window sort per column.

Why not Spark's aggregates: `percentile_approx` is exact only while a group holds fewer values than its accuracy
(10,000 by default), and its summaries cost more than the sort (e2e_latency at 3 M generated frames); `percentile`
is exact but interpolates and holds a group's values in memory, where a sort spills to disk. Nearest rank is what
`percentile_approx` gives on a small group, so a report of small groups reads the same as before.
"""

from __future__ import annotations

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
