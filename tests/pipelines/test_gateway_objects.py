"""gateway_objects: a list of Java objects in one py4j call, the objects Python dropped released in batches."""

from __future__ import annotations

import gc
import time

import pytest
from py4j.clientserver import JavaClient
from py4j.java_collections import JavaList
from py4j.java_gateway import JavaObject
from py4j.protocol import GATEWAY_SERVER_OBJECT_ID

from kafkatap.pipelines import gateway_objects

pytestmark = pytest.mark.spark


def test_the_session_lists_and_releases_through_the_jvm_class(spark) -> None:
    client = spark.sparkContext._gateway._gateway_client
    assert type(client) is not JavaClient  # `spark.get_spark` and the tests' session both use it
    kind = type(client)
    gateway_objects.use(spark.sparkContext)  # again: nothing more
    assert type(client) is kind


def test_a_list_of_java_objects_is_one_call(spark, py4j_commands) -> None:
    from pyspark.sql import functions as F

    jvm = spark.sparkContext._jvm
    columns = [F.col(name)._jc for name in ("a", "b", "c", "d", "e")]
    to_seq = jvm.PythonUtils.toSeq  # its names looked up (once per process: `jvm_names`)
    py4j_commands.clear()
    seq = to_seq(columns)
    assert len(py4j_commands) == 2  # the list, then toSeq: py4j alone sends 5 adds and a new ArrayList too
    assert seq.length() == 5 and [seq.apply(i).toString() for i in range(5)] == ["a", "b", "c", "d", "e"]
    made = jvm.java.util.Objects.requireNonNull(columns)
    assert isinstance(made, JavaList) and made.getClass().getName() == "java.util.ArrayList"


def test_other_lists_are_made_as_py4j_makes_them(spark, py4j_commands) -> None:
    jvm = spark.sparkContext._jvm
    for given in (["x", "y"], [1, [2, 3]], (), []):
        made = jvm.java.util.Objects.requireNonNull(given)
        assert [list(e) if isinstance(e, JavaList) else e for e in made] == [list(e) if isinstance(e, list) else e
                                                                          for e in given]
    rows = spark.range(4).select("id").dropDuplicates(["id"]).orderBy("id").collect()  # a list of names
    assert [r.id for r in rows] == [0, 1, 2, 3]


def test_dropped_objects_are_released_in_batches(spark, py4j_commands) -> None:
    jvm = spark.sparkContext._jvm
    made = [jvm.java.lang.StringBuilder(str(i)) for i in range(300)]
    ids = {m._target_id for m in made}
    py4j_commands.clear()
    del made
    gc.collect()
    deadline = time.monotonic() + 30  # py4j's finalizer thread wakes up every second
    released: set[str] = set()
    while not ids <= released and time.monotonic() < deadline:
        time.sleep(0.2)
        released = {i for c in list(py4j_commands) if c.startswith("c\n") and "\nrelease\n" in c
                    for i in c.split("\n")[3][1:].split(",")}
    assert ids <= released
    client = spark.sparkContext._gateway._gateway_client
    bindings = JavaObject(GATEWAY_SERVER_OBJECT_ID, client).getGateway().getBindings()  # what the JVM holds for Python
    assert not [i for i in ids if bindings.containsKey(i)]
    assert not [c for c in py4j_commands if c.startswith("m\nd\n")]  # none one at a time
    assert sum("\nrelease\n" in c for c in py4j_commands) < 30  # batches, not one call per object
