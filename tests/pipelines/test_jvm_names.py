"""jvm_names: PySpark's lookups of JVM classes and static methods answered once, the rest asked every time."""

from __future__ import annotations

import pytest
from py4j.java_gateway import JavaPackage, JVMView
from py4j.protocol import Py4JError

from kafkatap.pipelines.jvm_names import remember_names

pytestmark = pytest.mark.spark


def _lookups(commands: list[str]) -> list[str]:
    """The reflection commands (lookups of names) among py4j's commands."""
    return [c for c in commands if c.startswith("r\n")]


def test_a_column_function_looks_its_names_up_once(spark, py4j_commands) -> None:
    from pyspark.sql import functions as F

    F.col("a"), F.lit(1), spark.range(1).select("id", F.col("id") + 1)  # the names' first use, whenever that was
    py4j_commands.clear()
    rows = spark.range(3).select(F.col("id"), (F.col("id") * 2).alias("twice"), F.lit("x").alias("x")).collect()
    assert _lookups(py4j_commands) == []
    assert [tuple(r) for r in rows] == [(0, 0, "x"), (1, 2, "x"), (2, 4, "x")]


def test_fields_packages_and_failed_lookups_are_asked_every_time(spark, py4j_commands) -> None:
    jvm = spark.sparkContext._jvm
    assert isinstance(jvm.java, JavaPackage) and "java" not in vars(jvm)
    integer = jvm.Integer  # java.lang.* is imported: a class, kept
    assert integer.MAX_VALUE == 2**31 - 1 and integer.MAX_VALUE == 2**31 - 1
    assert "MAX_VALUE" not in vars(integer)
    for _ in range(2):
        with pytest.raises(Py4JError):
            jvm.PythonUtils.noSuchMethodAnywhere()
    lookups = _lookups(py4j_commands)
    assert sum("MAX_VALUE" in c for c in lookups) == 2 and sum("noSuchMethodAnywhere" in c for c in lookups) == 2


def test_only_a_plain_view_is_changed(spark) -> None:
    jvm = spark.sparkContext._jvm
    assert type(jvm) is not JVMView  # the session's view remembers (`spark.get_spark`, the tests' session)
    kind = type(jvm)
    remember_names(jvm)  # again: nothing more
    assert type(jvm) is kind
