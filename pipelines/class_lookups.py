"""The driver's class loader that remembers misses (ClassLookups.java), for the threads that plan and run queries.

Spark compiles the code it generates for a query with Janino, through the thread's context class loader, and Janino
asks that loader for many names that are no class, each a search of pyspark's 280 jars (the Java source says more).
A local session started here gets the loader on the thread that starts its SparkContext (`starting`), whose executor
then asks it too, and on every thread that runs kafkatap's queries (`on_this_thread`). It is in the jar of kafkatap's
JVM classes (`jvm_jar`); a session without that jar, or started by spark-submit, runs as Spark does.

Measured with `benchmarks/analyze_bench.py --baseline-python` against the same code without it, alternating, the
same reports: a 228k-frame chatty capture 24.7 against 25.6 s (median of 4, 3 pairs faster), 43.5 against 44.6 CPU
seconds, its 657 compilations 3.8 s of the JVM's time against 5.1 s; the bundled sample, whose expressions are
interpreted (`intermediates.INTERPRETED_CONF`) but whose planning asks for missing names too (Scala's reflection), 16.0
against 16.6 s (median of 5, 4 pairs faster), 27.6 against 28.7 CPU seconds.
"""

from __future__ import annotations

from pyspark import SparkContext

_given = None  # (gateway, loader): the loader's JVM object, and the JVM it is in


def starting() -> None:
    """Give the loader to the calling thread, before it starts the SparkContext: the JVM is up (pyspark's gateway)
    and nothing has been planned yet."""
    global _given
    thread = SparkContext._jvm.java.lang.Thread.currentThread()
    loader = SparkContext._jvm.kafkatap.ClassLookups(thread.getContextClassLoader())
    thread.setContextClassLoader(loader)
    _given = (SparkContext._gateway, loader)


def on_this_thread() -> None:
    """Give the loader to the calling thread's side of the JVM (a thread pool's initializer), if the running JVM has
    one (not one a stopped session left: another JVM's object)."""
    if _given is not None and _given[0] is SparkContext._gateway:
        SparkContext._jvm.java.lang.Thread.currentThread().setContextClassLoader(_given[1])
