"""The planner extension: named to the tests' session as to a local run, and what it changes."""

from __future__ import annotations

import re

import pytest

from kafkatap.pipelines import class_archive, planner_extension
from kafkatap.pipelines.intermediates import session_settings


def test_the_python_and_java_sides_name_the_same_class_and_setting():
    source = planner_extension.SOURCE.read_text()
    package = re.search(r"^package (\w+);", source, re.M).group(1)
    assert f"{package}.{planner_extension.SOURCE.stem}" == planner_extension.EXTENSION
    assert f'ENABLED = "{planner_extension.ENABLED}";' in source


def _joined(spark):
    """Rows whose plan has a window over a full outer join over a chain of joins of materialized rows: where Spark
    cannot bound the size, so it shuffles into one partition."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = spark.range(8).withColumn("k", F.col("id") % 2).localCheckpoint().coalesce(1)
    joined = (rows.join(rows.withColumnRenamed("id", "x"), "k")
              .join(rows.withColumnRenamed("id", "y"), "k", "full")
              .join(rows.withColumnRenamed("id", "z"), "k"))
    return joined.withColumn("n", F.row_number().over(Window.partitionBy("x").orderBy("y", "z", "id")))


@pytest.mark.spark
def test_a_one_partition_run_coalesces_where_spark_would_shuffle(spark):
    # the tests run inside a one-partition run (tests/conftest.py), whose settings turn the rule on
    assert spark.conf.get(planner_extension.ENABLED) == "true"
    on = _joined(spark)
    with session_settings(spark, {planner_extension.ENABLED: "false"}):
        off = _joined(spark)
        off_plan = off._jdf.queryExecution().executedPlan().toString()
        off_rows = sorted(map(tuple, off.collect()))
    on_plan = on._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" in off_plan  # what the rule is for still happens in this Spark
    assert "Exchange" not in on_plan and on_plan.count("Coalesce") > off_plan.count("Coalesce")
    assert sorted(map(tuple, on.collect())) == off_rows and len(off_rows) == 2 * 4**4


@pytest.mark.parametrize("submit_args, defaults", [
    ("--jars /opt/hadoop-aws.jar pyspark-shell", ""),
    ("--conf spark.jars=/opt/hadoop-aws.jar pyspark-shell", ""),
    ("pyspark-shell", "spark.sql.extensions  io.delta.sql.DeltaSparkSessionExtension\n"),
    ("pyspark-shell", "spark.jars /opt/hadoop-aws.jar\n"),
])
def test_a_users_own_jars_or_extensions_are_kept_and_the_extension_stays_out(tmp_path, monkeypatch, submit_args,
                                                                              defaults):
    """A session's settings take precedence over PYSPARK_SUBMIT_ARGS and spark-defaults.conf: setting ours would
    drop the user's jars (a filesystem connector, say) or extensions."""
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", submit_args)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    (tmp_path / "spark-defaults.conf").write_text(defaults)
    assert planner_extension.session_settings() == {}
    assert not (tmp_path / "cache").exists()  # not even compiled


def test_packages_and_other_settings_of_the_user_leave_the_extension_in(tmp_path, monkeypatch):
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--packages org.apache.hadoop:hadoop-aws:3.4.1 --conf "
                       "spark.jars.ivy=/tmp/ivy --conf spark.eventLog.enabled=true pyspark-shell")
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert planner_extension.session_settings()["spark.sql.extensions"] == planner_extension.EXTENSION
