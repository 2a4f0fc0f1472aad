"""The one way pipelines get a SparkSession, so local runs, tests and clusters share the same settings."""

from __future__ import annotations

from pyspark.sql import SparkSession

# UTC so window boundaries and ISO strings do not depend on the machine; microsecond Parquet timestamps so pyarrow,
# duckdb and the dashboard read the report without INT96 conversions.
SETTINGS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def get_spark(app: str, master: str | None = None, shuffle_partitions: int | None = None) -> SparkSession:
    """Reuse the running session (spark-submit, tests) or start one; `master` only applies to a new one."""
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    for key, value in SETTINGS.items():
        builder = builder.config(key, value)
    local = bool(master and master.startswith("local"))
    if local:
        # A terminal, not a cluster UI: the commands print each job's progress themselves, and Spark's progress bars
        # would overwrite those lines.
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    if shuffle_partitions is None and local:
        # One machine: a few partitions per core, not Spark's cluster-sized default of 200 (most of which would be
        # tiny tasks here).
        shuffle_partitions = 8
    if shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = builder.getOrCreate()
    if local:
        spark.sparkContext.setLogLevel("ERROR")  # WARNs about plan sizes and native libraries mean nothing to a user
    for key, value in SETTINGS.items():
        spark.conf.set(key, value)
    return spark
