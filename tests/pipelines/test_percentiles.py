"""percentiles: exact nearest-rank percentiles over groups larger than percentile_approx keeps exactly, the same
both ways (a window's ranks, and `percentile_disc`'s one aggregate per column)."""

from __future__ import annotations

import math
import random

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.percentiles import nearest_rank, percentiles, ranked, spread

pytestmark = pytest.mark.spark

QS = {"p50": 0.5, "p95": 0.95, "p99": 0.99, "p100": 1.0}
WAYS = ["window", "aggregate"]


def oracle(values: list[float | None], q: float) -> float | None:
    """The value at rank ceil(q * n) of the sorted non-null values."""
    values = sorted(v for v in values if v is not None)
    return values[max(1, math.ceil(q * len(values))) - 1] if values else None


def summarize(way: str, df: DataFrame, group: list[str], col: str, named: dict[str, float], type_: str) -> DataFrame:
    """Per group: the count of non-null `col` as `n`, the `named` percentiles, and the max, computed `way`."""
    if way == "window":
        return ranked(df, group, col).groupBy(*group).agg(
            F.count(col).alias("n"), *(nearest_rank(col, q).cast(type_).alias(name) for name, q in named.items()),
            F.max(col).alias("max"))
    summary = df.groupBy(*group).agg(F.count(col).alias("n"), percentiles(col, named), F.max(col).alias("max"))
    return spread(summary, col, named, type_)


@pytest.mark.parametrize("way", WAYS)
def test_nearest_rank_is_exact_per_group_with_nulls_and_empty_groups(spark, way):
    """Group a: 30,001 distinct values in a scrambled order and 5 nulls; group b: one value; group c: nulls only.
    Each percentile is the value at rank ceil(q * n) of the non-null values (n counts no null)."""
    n = 30_001
    a = spark.range(n).select(F.lit("a").alias("g"), F.pmod(F.col("id") * 7919, F.lit(n)).alias("v"))
    others = spark.createDataFrame([("a", None)] * 5 + [("b", 42), ("c", None)], "g string, v long")
    got = {r.g: r for r in summarize(way, a.unionByName(others), ["g"], "v", QS, "long").collect()}
    assert (got["a"].p50, got["a"].p95, got["a"].p99, got["a"].p100, got["a"].n) == (
        math.ceil(0.5 * n) - 1, math.ceil(0.95 * n) - 1, math.ceil(0.99 * n) - 1, n - 1, n)
    assert (got["b"].p50, got["b"].p99) == (42, 42)
    assert (got["c"].p50, got["c"].p100) == (None, None)


@pytest.mark.parametrize("way", WAYS)
def test_repeated_values_and_null_group_keys(spark, way):
    """Values that repeat (latencies do) rank as often as they occur, and a group whose key is null (an unknown api)
    gets its own percentiles, not its neighbours'."""
    rng = random.Random(7)
    groups = {("x", 1): [rng.choice([5, 5, 5, 7, 9, 120]) for _ in range(997)],
              (None, 1): [rng.randint(0, 3) for _ in range(101)] + [None] * 3,
              ("x", None): [1000, 1000, 3]}
    df = spark.createDataFrame([(g, h, v) for (g, h), values in groups.items() for v in values],
                               "g string, h int, v long")
    got = {(r.g, r.h): r for r in summarize(way, df, ["g", "h"], "v", QS, "long").collect()}
    assert set(got) == set(groups)
    for key, values in groups.items():
        assert [getattr(got[key], name) for name in QS] == [oracle(values, q) for q in QS.values()], key


@pytest.mark.parametrize("way", WAYS)
def test_every_rank_of_small_groups_and_doubles(spark, way):
    """Group sizes and quantiles where q * n lands on or near a whole number (0.29 * 100 is 28.999... in floating
    point), over doubles as e2e_latency's milliseconds are: each is the oracle's value."""
    rng = random.Random(11)
    named = {f"q{i}": q for i, q in enumerate([0.0, 0.01, 0.1, 0.29, 0.33, 0.5, 0.57, 0.9, 0.95, 0.99, 0.999, 1.0])}
    groups = {n: [rng.randint(0, 50) / 8 for _ in range(n)] for n in (1, 2, 3, 7, 19, 20, 21, 99, 100, 101, 1001)}
    df = spark.createDataFrame([(n, v) for n, values in groups.items() for v in values], "g int, v double")
    got = {r.g: r for r in summarize(way, df, ["g"], "v", named, "double").collect()}
    for n, values in groups.items():
        assert [got[n][name] for name in named] == [oracle(values, q) for q in named.values()], n


def test_spread_puts_the_percentiles_in_the_array_s_place(spark):
    df = spark.createDataFrame([(1, 2.0), (1, 4.0)], "g int, v double")
    assert summarize("aggregate", df, ["g"], "v", {"p50": 0.5, "p99": 0.99}, "double").columns == [
        "g", "n", "p50", "p99", "max"]
