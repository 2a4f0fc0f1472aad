"""The one way pipelines get a SparkSession, so local runs, tests and clusters share the same settings."""

from __future__ import annotations

import ipaddress
import os
import sys
import warnings
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from kafkatap.pipelines import class_archive, gateway_objects, planner_extension
from kafkatap.pipelines.jvm_columns import make_once
from kafkatap.pipelines.jvm_names import remember_names
from kafkatap.pipelines.launch import launch, starts_jvm
from kafkatap.pipelines.ship import ship

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
STARTUP_SETTINGS: dict[str, str] = {
    # PySpark's DataFrame debugging asks the JVM for the active session and a setting, and sets the call site there,
    # on every DataFrame and column function the pipelines call: half the Python-to-JVM calls of a report (89,600
    # against 41,400 for the bundled sample). It only adds the Python call site to an analysis error's message, which
    # the commands never show (a failure is one line from its root cause: `failures`). Read at start only.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
"""The JVM's quick compiler only. A short run executes a great deal of Spark's code a few times each, and the
optimizing compiler (C2) spent more CPU compiling it than the run then saved: the bundled sample's run took 111 s of
CPU with both compilers, 81 s with C1 only. Since the runs' plans shrank, a 215k-frame capture gains too (55 -> 44 s),
and a million frames need C2's code: inputs up to `intermediates.QUICK_JIT_BYTES` get this. With the quick compiler
alone the JVM reserves 48 MB for compiled code instead of 240 MB; a 228k-frame capture's run filled that, and the JVM
stopped compiling for the rest of it (`kafkatap analyze`: 48 s against 39 s with 240 MB), so it keeps the 240 MB."""


THROUGHPUT_GC = "-XX:+UseParallelGC"
"""The throughput collector for every JVM a session on this machine starts, in place of JDK 17's default (G1). G1 is
built for short pauses over large heaps: it does part of its work beside the application (remembered sets, concurrent
refinement) and its write barriers cost every reference store of Spark's planner and tasks. A batch run on a few cores
wants the least CPU in all and does not mind its pauses: the bundled sample 14.6 against 15.5 s, a 228k-frame capture
21.4 against 23.6 s, every job at 10 M generated frames 311 against 333 s (docs/performance.md, "The throughput
collector")."""


EXIT_ON_OUT_OF_MEMORY = "-XX:+ExitOnOutOfMemoryError"
"""A local driver whose heap ran out in one of Spark's own threads (its scheduler's message loop, not a task) went on
without it, and the command waited for good for a job nothing would finish (1 GB of heap, a 14 MB input kept as rows
in a trial); exited, it is a JVM that died, which the command tells in one line (`failures.out_of_memory`)."""


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def on_this_machine(master: str | None) -> bool:
    """Local mode, or a standalone master on loopback: its workers reach it there, so they run on this machine too."""
    if not master:
        return False
    if master.startswith("local"):
        return True
    addresses = master.removeprefix("spark://").split(",") if master.startswith("spark://") else []
    return bool(addresses) and all(_loopback(address.rpartition(":")[0]) for address in addresses)


def one_machine_settings(short_run: bool, archive_options: str) -> dict[str, str]:
    """What a session on this machine (`on_this_machine`) is started with. A terminal, not a cluster UI: the commands
    print each job's progress themselves, and Spark's progress bars would overwrite those lines. The driver binds to
    loopback (no "hostname resolves to a loopback address" warning, nothing listening on other interfaces) and logs
    with the package's log4j2 configuration from its first line on; `archive_options` map the class archive
    (`class_archive.java_options`). The driver exits when its heap runs out (`EXIT_ON_OUT_OF_MEMORY`). Its JVMs,
    the driver's and a standalone cluster's executors on loopback, collect with the throughput collector
    (`THROUGHPUT_GC`), and a short run's compile with the quick compiler only (`QUICK_JIT`)."""
    jvm = f"{QUICK_JIT} {THROUGHPUT_GC}" if short_run else THROUGHPUT_GC
    return {"spark.ui.showConsoleProgress": "false",
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.driver.extraJavaOptions": " ".join(filter(None, [
                f"-Dlog4j2.configurationFile={LOG4J2}", EXIT_ON_OUT_OF_MEMORY, jvm, archive_options])),
            "spark.executor.extraJavaOptions": jvm}


def fewer_jvm_calls(context: SparkContext) -> None:
    """What PySpark asks the JVM through py4j, asked less: the classes and static methods it names looked up once
    (`jvm_names`), a column by name and a plain literal made once (`jvm_columns`), and lists and releases of Java
    objects many in one call (`gateway_objects`, where the JVM has kafkatap's classes)."""
    remember_names(context._jvm)
    make_once(context._jvm)
    gateway_objects.use(context)


def get_spark(app: str, master: str | None = None, shuffle_partitions: int | None = None,
              log: str | None = None, short_run: bool = False) -> SparkSession:
    """Reuse the running session (spark-submit, tests) or start one; `master` only applies to a new one, and so do
    `log`, the file a JVM started here writes its output to (None: the terminal), and `short_run` (a small input,
    `inputs.short_run`: its JVMs on this machine then compile with C1 only, `QUICK_JIT`). A JVM that cannot start (no
    Java, no master) is a `CommandError`. A session on a cluster gets the package shipped to its executors (`ship`);
    one whose JVM starts here on this machine loads kafkatap's JVM classes: the planner extension
    (`planner_extension`) and the driver's class loader that remembers misses (`class_lookups`). Python asks the JVM
    less (`fewer_jvm_calls`)."""
    options = {"spark.app.name": app, **({"spark.master": master} if master else {}), **SETTINGS, **STARTUP_SETTINGS}
    one_machine = on_this_machine(master)
    launched = starts_jvm()  # not so under spark-submit: its JVM has its class path, jars and extensions already
    ours: dict[str, str] = {}  # the settings that load kafkatap's JVM classes, when they do
    if one_machine:
        options |= one_machine_settings(short_run, class_archive.java_options() if launched else "")
        if launched:
            ours = planner_extension.session_settings()
            options |= ours
        # Its Python workers run the driver's Python (PySpark's default, `python3` on the PATH, may be one without
        # pyspark or kafkatap).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if shuffle_partitions is None and one_machine:
        # One machine: a few partitions per core, not Spark's cluster-sized default of 200 (most of which would be
        # tiny tasks here).
        shuffle_partitions = 8
    if shuffle_partitions:
        options["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    conf = SparkConf(loadDefaults=False).setAll(options.items())
    builder = SparkSession.builder.config(conf=conf)
    spark = launch(builder, master, log, conf if ours else None) if launched else builder.getOrCreate()
    fewer_jvm_calls(spark.sparkContext)
    if one_machine and launched:
        class_archive.check_mapped(spark)  # the archive it was given, if any: removed if refused
    if one_machine:
        spark.sparkContext.setLogLevel("ERROR")  # WARNs about plan sizes and native libraries mean nothing to a user
    ship(spark)
    for key, value in SETTINGS.items():
        spark.conf.set(key, value)
    return spark
