"""Spark session settings for one test, restored after it: tests share one session."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def spark_settings(spark, settings: dict[str, str]) -> Iterator[None]:  # spark: pyspark's SparkSession
    """The session's `settings` inside, its own after."""
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
