"""percentiles: exact nearest-rank percentiles over groups larger than percentile_approx keeps exactly."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.percentiles import nearest_rank, ranked

pytestmark = pytest.mark.spark


def test_nearest_rank_is_exact_per_group_with_nulls_and_empty_groups(spark):
    """Group a: 30,001 distinct values in a scrambled order and 5 nulls; group b: one value; group c: nulls only.
    Each percentile is the value at rank ceil(q * n) of the non-null values (n counts no null)."""
    n = 30_001
    a = spark.range(n).select(F.lit("a").alias("g"), F.pmod(F.col("id") * 7919, F.lit(n)).alias("v"))
    others = spark.createDataFrame([("a", None)] * 5 + [("b", 42), ("c", None)], "g string, v long")
    got = {r.g: r for r in ranked(a.unionByName(others), ["g"], "v").groupBy("g").agg(
        *(nearest_rank("v", q).alias(f"p{round(q * 100)}") for q in (0.5, 0.95, 0.99, 1.0)),
        F.count("v").alias("n")).collect()}
    assert (got["a"].p50, got["a"].p95, got["a"].p99, got["a"].p100, got["a"].n) == (
        math.ceil(0.5 * n) - 1, math.ceil(0.95 * n) - 1, math.ceil(0.99 * n) - 1, n - 1, n)
    assert (got["b"].p50, got["b"].p99) == (42, 42)
    assert (got["c"].p50, got["c"].p100) == (None, None)
