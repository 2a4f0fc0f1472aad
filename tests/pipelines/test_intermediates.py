"""Shared intermediates are computed once per run and read as rows; small inputs stay one partition; a job's needs
run before it."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.pipelines.intermediates import (
    ONE_PARTITION_BYTES, intermediate, materialize, once_per_run, partitioned, run_conf
)
from kafkatap.pipelines.report import JOBS, with_needs

calls: list[int] = []


@intermediate
def counted(df: DataFrame) -> DataFrame:
    calls.append(1)
    return df.groupBy("k").agg(F.count(F.lit(1)).alias("n"))


def _leaf(df: DataFrame) -> str:
    return df._jdf.queryExecution().logical().toString()


def test_needed_jobs_run_first_once_and_in_order() -> None:
    assert with_needs(["duplicate_deliveries"]) == ["sessions", "fenced_epochs", "duplicate_deliveries"]
    assert with_needs(["e2e_latency", "ownership_conflicts"]) == ["sessions", "e2e_latency", "ownership_conflicts"]
    assert with_needs(list(JOBS)) == list(JOBS)  # analyze's own order already has every need first
    assert all(need in JOBS for job in JOBS.values() for need in job.needs)


@pytest.mark.spark
def test_an_intermediate_is_computed_once_per_run_and_kept_as_rows(spark) -> None:
    df = spark.createDataFrame([(1,), (1,), (2,)], ["k"])
    other = spark.createDataFrame([(3,)], ["k"])
    calls.clear()
    assert counted(df) is not counted(df) and len(calls) == 2  # outside a run: a plain function
    calls.clear()
    with once_per_run(spark, ONE_PARTITION_BYTES + 1):
        first = counted(df)
        assert counted(df) is first and len(calls) == 1
        assert "LogicalRDD" in _leaf(first)  # a plan that starts from the kept rows, not from the lineage
        assert sorted(tuple(r) for r in first.collect()) == [(1, 2), (2, 1)]
        assert counted(other) is not first and len(calls) == 2
    calls.clear()
    with once_per_run(spark, ONE_PARTITION_BYTES + 1):
        assert counted(df) is not first and len(calls) == 1  # a new run computes it again


@pytest.mark.spark
def test_a_one_partition_run_needs_no_shuffle_and_restores_the_settings(spark) -> None:
    before = {key: spark.conf.get(key, None) for key in run_conf(0)}
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        df = spark.createDataFrame([(i % 3, i) for i in range(30)], ["k", "v"])
        assert df.rdd.getNumPartitions() > 1
        with once_per_run(spark, 0):
            assert spark.conf.get("spark.sql.autoBroadcastJoinThreshold") == "-1"
            one = partitioned(df, True)
            kept = materialize(one.groupBy("k").agg(F.sum("v").alias("s")))
            assert kept.rdd.getNumPartitions() == 1
            joined = kept.join(one.groupBy("k").agg(F.max("v").alias("m")), "k")
            plan = joined._jdf.queryExecution().executedPlan().toString()
            assert "Exchange" not in plan, plan  # aggregations and the join in the stage that reads the rows
            assert sorted(tuple(r) for r in joined.collect()) == [(0, 135, 27), (1, 145, 28), (2, 155, 29)]
        assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before["spark.sql.shuffle.partitions"] or "200")
    assert partitioned(df, False) is df
    assert run_conf(ONE_PARTITION_BYTES + 1) == {}  # a large input keeps Spark's own settings