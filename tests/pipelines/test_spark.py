"""Which masters `get_spark` treats as this machine: those get loopback binding, few shuffle partitions and the
driver's Python on executors; and how a JVM's failures read."""

from __future__ import annotations

import re
import subprocess

import pytest

from kafkatap.errors import CommandError
from kafkatap.pipelines.failures import spark_failures
from kafkatap.pipelines.launch import find_java
from kafkatap.pipelines.spark import QUICK_JIT, on_this_machine, one_machine_settings


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "spark://127.0.0.1:7077", "spark://localhost:7077",
                                    "spark://[::1]:7077", "spark://127.0.0.1:7077,127.0.0.2:7078"])
def test_local_mode_and_loopback_masters_are_this_machine(master):
    assert on_this_machine(master)


@pytest.mark.parametrize("master", [None, "", "yarn", "k8s://https://10.0.0.1:6443", "spark://10.0.0.5:7077",
                                    "spark://spark-master:7077", "spark://127.0.0.1:7077,10.0.0.5:7077"])
def test_other_masters_are_a_cluster(master):
    assert not on_this_machine(master)


def test_a_short_run_starts_every_jvm_on_this_machine_with_the_quick_compiler_only():
    """The driver's and a loopback cluster's executors (the cluster tests'): C2 compiling Spark's code costs a small
    input's run more CPU than it saves; a large input keeps both compilers."""
    short = one_machine_settings(True, "-XX:SharedArchiveFile=A")
    assert set(QUICK_JIT.split()) <= set(short["spark.driver.extraJavaOptions"].split())
    assert "-XX:SharedArchiveFile=A" in short["spark.driver.extraJavaOptions"].split()
    assert short["spark.executor.extraJavaOptions"] == QUICK_JIT
    long = one_machine_settings(False, "")
    assert QUICK_JIT not in long["spark.driver.extraJavaOptions"] and "spark.executor.extraJavaOptions" not in long


def _code_cache_bytes(*options: str) -> int:
    flags = subprocess.run([find_java(), *options, "-XX:+PrintFlagsFinal", "-version"], capture_output=True,
                           text=True, check=True).stdout
    return int(re.search(r"ReservedCodeCacheSize\s+=\s+(\d+)", flags).group(1))


@pytest.mark.skipif(find_java() is None, reason="no Java")
def test_the_quick_compiler_keeps_the_code_cache_of_both():
    """Alone, the quick compiler gets a 48 MB code cache: a 228k-frame capture's run filled it, and the JVM then
    stopped compiling for the rest of the run (48 s against 39 s)."""
    assert _code_cache_bytes(*QUICK_JIT.split()) >= _code_cache_bytes()


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
