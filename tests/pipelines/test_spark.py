"""Which masters `get_spark` treats as this machine: those get loopback binding, few shuffle partitions and the
driver's Python on executors; and how a JVM's failures read."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys

import pytest

from kafkatap.errors import CommandError
from kafkatap.pipelines.failures import MORE_MEMORY, spark_failures
from kafkatap.pipelines.launch import find_java
from kafkatap.pipelines.spark import (EXIT_ON_OUT_OF_MEMORY, QUICK_JIT, THROUGHPUT_GC, on_this_machine,
                                      one_machine_settings)


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "spark://127.0.0.1:7077", "spark://localhost:7077",
                                    "spark://[::1]:7077", "spark://127.0.0.1:7077,127.0.0.2:7078"])
def test_local_mode_and_loopback_masters_are_this_machine(master):
    assert on_this_machine(master)


@pytest.mark.parametrize("master", [None, "", "yarn", "k8s://https://10.0.0.1:6443", "spark://10.0.0.5:7077",
                                    "spark://spark-master:7077", "spark://127.0.0.1:7077,10.0.0.5:7077"])
def test_other_masters_are_a_cluster(master):
    assert not on_this_machine(master)


def test_every_jvm_on_this_machine_collects_for_throughput_and_a_short_runs_compiles_quickly():
    """The driver's and a loopback cluster's executors (the cluster tests'): G1's work beside the run costs a batch run
    more CPU than its short pauses are worth to it, and C2 compiling Spark's code costs a small input's run more than
    it saves; a large input keeps both compilers."""
    short = one_machine_settings(True, "-XX:SharedArchiveFile=A")
    driver = short["spark.driver.extraJavaOptions"].split()
    assert {*QUICK_JIT.split(), THROUGHPUT_GC, "-XX:SharedArchiveFile=A"} <= set(driver)
    assert short["spark.executor.extraJavaOptions"].split() == [*QUICK_JIT.split(), THROUGHPUT_GC]
    long = one_machine_settings(False, "")
    assert THROUGHPUT_GC in long["spark.driver.extraJavaOptions"].split()
    assert not set(QUICK_JIT.split()) & set(long["spark.driver.extraJavaOptions"].split())
    assert long["spark.executor.extraJavaOptions"] == THROUGHPUT_GC


def _flags(*options: str) -> str:
    """The JVM's final flags with these options (`-XX:+PrintFlagsFinal`)."""
    return subprocess.run([find_java(), *options, "-XX:+PrintFlagsFinal", "-version"], capture_output=True,
                          text=True, check=True).stdout


def _code_cache_bytes(*options: str) -> int:
    return int(re.search(r"ReservedCodeCacheSize\s+=\s+(\d+)", _flags(*options)).group(1))


@pytest.mark.skipif(find_java() is None, reason="no Java")
def test_the_quick_compiler_keeps_the_code_cache_of_both():
    """Alone, the quick compiler gets a 48 MB code cache: a 228k-frame capture's run filled it, and the JVM then
    stopped compiling for the rest of the run (48 s against 39 s)."""
    assert _code_cache_bytes(*QUICK_JIT.split()) >= _code_cache_bytes()


@pytest.mark.skipif(find_java() is None, reason="no Java")
def test_the_options_select_the_throughput_collector_not_g1():
    """The option is one this JVM takes (a misspelt -XX flag stops the JVM; a flag another one overrode would gain
    nothing), and G1, the default on a machine of two cores or more, is off."""
    chosen = {flag: re.search(rf"\b{flag}\s+= (\w+)", _flags(*QUICK_JIT.split(), THROUGHPUT_GC)).group(1)
              for flag in ("UseParallelGC", "UseG1GC")}
    assert chosen == {"UseParallelGC": "true", "UseG1GC": "false"}


def test_a_refused_connection_to_a_jvm_the_interrupt_stopped_is_the_interrupt():
    """Ctrl-C or SIGTERM kills the JVM too; a `finally` restoring settings then meets a refused connection (py4j
    opens a new one), which must still end as the interrupt (exit 130), and without one as Spark's failure."""
    def refused_after_interrupt():
        try:
            raise KeyboardInterrupt
        finally:
            raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(KeyboardInterrupt), spark_failures("REPORT", None):
        refused_after_interrupt()
    with pytest.raises(CommandError, match="Spark stopped answering"), spark_failures("REPORT", None):
        raise ConnectionRefusedError(111, "Connection refused")


def test_a_driver_out_of_memory_exits_and_says_how_to_give_it_more(tmp_path):
    """Every driver on this machine exits when its heap runs out: one that ran out in Spark's own message loop went on
    without it, and the command waited for good. py4j then sees a closed connection only; the JVM's last line, in its
    log, says why. A job that failed of it says so in its own text."""
    for short_run in (True, False):
        assert EXIT_ON_OUT_OF_MEMORY in one_machine_settings(short_run, "")["spark.driver.extraJavaOptions"].split()
    log = tmp_path / "spark.log"
    log.write_text("26/11/29 21:44:32 INFO Executor: Running task 0.0\n"
                   "Terminating due to java.lang.OutOfMemoryError: Java heap space\n")
    expected = (f"Spark ran out of memory (OutOfMemoryError: Java heap space): give its driver more, e.g. "
                f"{MORE_MEMORY}; see Spark's log in {log}")
    with pytest.raises(CommandError) as failed, spark_failures("REPORT", str(log)):
        raise ConnectionRefusedError(111, "Connection refused")
    assert str(failed.value) == expected
    log.write_text("")
    with pytest.raises(CommandError, match=r"^Spark ran out of memory \(SparkOutOfMemoryError: \[UNABLE"), \
            spark_failures("REPORT", str(log)):
        raise ConnectionRefusedError("org.apache.spark.memory.SparkOutOfMemoryError: [UNABLE_TO_ACQUIRE_MEMORY] 64 B")


# A driver with Spark's smallest heap, handed 150 MB of rows to turn into one task: its scheduler's message loop runs
# out of heap serializing the task (`Exception in thread "dispatcher-event-loop-1"`), and the job it was to run never
# ends unless the JVM exits.
HEAP_RUNS_OUT = """
import sys
import pyarrow as pa
from kafkatap.errors import CommandError
from kafkatap.pipelines.failures import spark_failures
from kafkatap.pipelines.spark import get_spark
try:
    with spark_failures("REPORT", sys.argv[1]):
        spark = get_spark("heap", "local[2]", log=sys.argv[1], short_run=True)
        spark.createDataFrame(pa.table({"s": ["x" * 1000] * 150_000})).coalesce(1).localCheckpoint().count()
except CommandError as failed:
    sys.exit(str(failed))
"""


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(find_java() is None, reason="no Java")
def test_a_driver_whose_scheduler_runs_out_of_heap_ends_the_command(tmp_path):
    log = tmp_path / "spark.log"
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": "--driver-memory 512m pyspark-shell"}
    proc = subprocess.Popen([sys.executable, "-c", HEAP_RUNS_OUT, str(log)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=120)  # about 5 s; without the JVM's exit, never
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM, if it is still up
    assert proc.returncode == 1, stderr
    assert stderr.startswith("Spark ran out of memory (OutOfMemoryError: Java heap space)"), stderr
