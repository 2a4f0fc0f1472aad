"""The driver's class loader that remembers misses (ClassLookups.java, `class_lookups`): what it answers, and which
threads of a local session ask it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from kafkatap.pipelines import jvm_jar
from kafkatap.pipelines.launch import find_java

pytestmark = pytest.mark.skipif(find_java("javac") is None, reason="no Java compiler: no kafkatap JVM classes")


def _java_error(call: Callable[[], object]) -> str:
    """The class of the Java exception `call` raised."""
    from py4j.protocol import Py4JJavaError

    with pytest.raises(Py4JJavaError) as raised:
        call()
    return raised.value.java_exception.getClass().getName()


@pytest.mark.spark
def test_a_miss_is_told_again_at_once_and_classes_still_load(spark):
    assert jvm_jar.jar() is not None  # the tests' session loads it (`planner_extension`)
    jvm = spark.sparkContext._jvm
    parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    lookups = jvm.kafkatap.ClassLookups(parent)
    assert lookups.loadClass("java.lang.String").getName() == "java.lang.String"
    assert lookups.loadClass("kafkatap.OneTaskShuffles").getName() == "kafkatap.OneTaskShuffles"  # the parent's jars
    assert _java_error(lambda: lookups.loadClass("org.apache.NoSuchClass")) == "java.lang.ClassNotFoundException"
    # the second time from the loader's memory: its own ClassNotFoundException, no search of the jars
    assert _java_error(lambda: lookups.loadClass("org.apache.NoSuchClass")) == "kafkatap.ClassLookups$Missing"
    assert lookups.loadClass("java.lang.String").getName() == "java.lang.String"


# A local session as the commands start one: which loader the threads that plan and run its queries have. The
# executor's task threads ("Executor task ...") keep the loader of their last task, its session's class loader, whose
# parents lead to the one the thread that started the SparkContext had.
THREADS = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from pyspark import SparkContext
from kafkatap.pipelines import class_lookups
from kafkatap.pipelines.spark import get_spark

spark = get_spark("lookups", "local[1]", log=sys.argv[1], short_run=True)
jvm = spark.sparkContext._jvm

def chain(loader):
    names = []
    while loader is not None:
        names.append(loader.getClass().getName())
        loader = loader.getParent()
    return names

def here():
    return chain(jvm.java.lang.Thread.currentThread().getContextClassLoader())

with ThreadPoolExecutor(1, initializer=class_lookups.on_this_thread) as pool:
    job = pool.submit(here).result()
with ThreadPoolExecutor(1) as pool:
    plain = pool.submit(here).result()
total = spark.range(100).selectExpr("id * 2 AS x").groupBy().sum("x").first()[0]
tasks = [chain(t.getContextClassLoader()) for t in jvm.java.lang.Thread.getAllStackTraces().keySet()
         if t.getName().startswith("Executor task")]
print(json.dumps({"main": here(), "job": job, "plain": plain, "total": total, "tasks": tasks}))
"""


@pytest.mark.spark
@pytest.mark.slow
def test_a_local_session_plans_and_runs_its_queries_through_the_loader(tmp_path):
    result = subprocess.run([sys.executable, "-c", THREADS, str(tmp_path / "spark.log")], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    lookups = "kafkatap.ClassLookups"
    assert seen["main"][0] == lookups and seen["job"][0] == lookups, seen  # the command's thread, its job threads
    assert lookups not in seen["plain"], seen  # a thread the package did not start as a job thread: as Spark has it
    assert seen["total"] == 9900
    assert seen["tasks"] and all(lookups in chain for chain in seen["tasks"]), seen  # the executor's tasks
