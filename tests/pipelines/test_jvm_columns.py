"""jvm_columns: a column by name and a literal made once per JVM, each call of the same plain argument answered so."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_a_name_or_plain_literal_is_one_java_column(spark) -> None:
    from pyspark.sql import functions as F

    assert F.col("x")._jc._target_id == F.col("x")._jc._target_id
    assert F.col("x")._jc._target_id != F.col("y")._jc._target_id
    assert F.lit(1)._jc._target_id == F.lit(1)._jc._target_id
    assert F.lit(1)._jc._target_id != F.lit(True)._jc._target_id  # equal in Python, not in Spark
    assert F.lit(0.0)._jc._target_id != F.lit(0.0)._jc._target_id  # floats asked every time (0.0 == -0.0)


def test_a_column_by_name_is_the_one_of_f_col(spark) -> None:
    """PySpark names the class two ways (`functions` for a name passed as a column, its full name for `F.col`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.classic.column import _to_java_column

    assert _to_java_column("z")._target_id == F.col("z")._jc._target_id


def test_shared_columns_give_the_same_rows(spark) -> None:
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(1, True, -0.0), (2, False, 0.0)], "n int, b boolean, f double")
    rows = df.select(F.col("n"), (F.col("n") + F.lit(1)).alias("m"), (F.col("b") == F.lit(True)).alias("t"),
                     (F.col("n") == F.lit(1)).alias("one"), F.lit(-0.0).alias("neg"), F.lit(0.0).alias("pos"),
                     F.col("f").alias("f")).orderBy("n").collect()
    assert [tuple(r) for r in rows] == [(1, 2, True, True, -0.0, 0.0, -0.0), (2, 3, False, False, -0.0, 0.0, 0.0)]
    assert str(rows[0].neg) == "-0.0" and str(rows[0].pos) == "0.0"
