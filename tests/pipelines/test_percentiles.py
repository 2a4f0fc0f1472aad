"""percentiles: exact nearest-rank percentiles over groups larger than percentile_approx keeps exactly."""

from __future__ import annotations

import math
import random

import pytest
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.percentiles import nearest_rank, ranked

pytestmark = pytest.mark.spark

QS = {"p50": 0.5, "p95": 0.95, "p99": 0.99, "p100": 1.0}


def oracle(values: list[int | None], q: float) -> int | None:
    """The value at rank ceil(q * n) of the sorted non-null values."""
    values = sorted(v for v in values if v is not None)
    return values[max(1, math.ceil(q * len(values))) - 1] if values else None


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


def test_repeated_values_and_null_group_keys(spark):
    """Values that repeat (latencies do) rank as often as they occur, and a group whose key is null (an unknown api)
    gets its own percentiles, not its neighbours'."""
    rng = random.Random(7)
    groups = {("x", 1): [rng.choice([5, 5, 5, 7, 9, 120]) for _ in range(997)],
              (None, 1): [rng.randint(0, 3) for _ in range(101)] + [None] * 3,
              ("x", None): [1000, 1000, 3]}
    df = spark.createDataFrame([(g, h, v) for (g, h), values in groups.items() for v in values],
                               "g string, h int, v long")
    got = {(r.g, r.h): r for r in ranked(df, ["g", "h"], "v").groupBy("g", "h").agg(
        *(nearest_rank("v", q).alias(name) for name, q in QS.items())).collect()}
    assert set(got) == set(groups)
    for key, values in groups.items():
        assert [getattr(got[key], name) for name in QS] == [oracle(values, q) for q in QS.values()], key
