"""The one way pipelines get a SparkSession, so local runs, tests and clusters share the same settings."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from pyspark.sql import SparkSession

from kafkatap.pipelines.launch import launch, starts_jvm

# PySpark 4 warns as a session starts that it does not fully support pandas 3. The pipelines never pass data between
# Spark and pandas (no toPandas, no pandas UDFs; the dashboard reads the report's Parquet with pyarrow), so the warning
# does not apply to them: silenced by its text, no other warning is.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

LOG4J2 = Path(__file__).with_name("log4j2.properties")

# UTC so window boundaries and ISO strings do not depend on the machine; microsecond Parquet timestamps so pyarrow,
# duckdb and the dashboard read the report without INT96 conversions.
SETTINGS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def get_spark(app: str, master: str | None = None, shuffle_partitions: int | None = None,
              log: str | None = None) -> SparkSession:
    """Reuse the running session (spark-submit, tests) or start one; `master` only applies to a new one, and so does
    `log`, the file a JVM started here writes its output to (None: the terminal). A JVM that cannot start (no Java,
    no master) is a `CommandError`."""
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    for key, value in SETTINGS.items():
        builder = builder.config(key, value)
    local = bool(master and master.startswith("local"))
    if local:
        # A terminal, not a cluster UI: the commands print each job's progress themselves, and Spark's progress bars
        # would overwrite those lines. One machine: the driver binds to loopback (no "hostname resolves to a
        # loopback address" warning, nothing listening on other interfaces), and logs with the package's log4j2
        # configuration from its first line on.
        builder = (builder.config("spark.ui.showConsoleProgress", "false")
                   .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J2}"))
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if shuffle_partitions is None and local:
        # One machine: a few partitions per core, not Spark's cluster-sized default of 200 (most of which would be
        # tiny tasks here).
        shuffle_partitions = 8
    if shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = launch(builder, master, log) if starts_jvm() else builder.getOrCreate()
    if local:
        spark.sparkContext.setLogLevel("ERROR")  # WARNs about plan sizes and native libraries mean nothing to a user
    for key, value in SETTINGS.items():
        spark.conf.set(key, value)
    return spark
