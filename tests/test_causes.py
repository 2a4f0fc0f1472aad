"""A failed run ends with its root causes, so a log cut to its tail (as CI keeps it) still says what went wrong."""

from __future__ import annotations

import pytest

from tests.support.causes import causes

pytest_plugins = ["pytester"]

SPARK_MESSAGE = """py4j.protocol.Py4JJavaError: An error occurred while calling o4121.collectToPython.
: org.apache.spark.SparkException: [BROADCAST] Not enough memory to build and broadcast the table.
\tat org.apache.spark.sql.execution.exchange.BroadcastExchangeExec.doExecuteBroadcast(BroadcastExchangeExec.scala:1)
\tat org.apache.spark.sql.execution.UnionExec.unionRDDs(basicPhysicalOperators.scala:1382)
Caused by: java.lang.OutOfMemoryError: Java heap space
\tat org.apache.spark.unsafe.memory.HeapMemoryAllocator.allocate(HeapMemoryAllocator.java:1)
\t... 42 more
\tSuppressed: org.apache.spark.util.Utils$OriginalTryStackTraceException: original caller
\t\tat org.apache.spark.util.LazyTry.tryT(LazyTry.scala:46)"""


def test_causes_keep_what_went_wrong_and_drop_the_frames() -> None:
    assert causes(SPARK_MESSAGE) == (
        "py4j.protocol.Py4JJavaError: An error occurred while calling o<id>.collectToPython.",
        ": org.apache.spark.SparkException: [BROADCAST] Not enough memory to build and broadcast the table.",
        "Caused by: java.lang.OutOfMemoryError: Java heap space",
        "Suppressed: org.apache.spark.util.Utils$OriginalTryStackTraceException: original caller",
    )
    assert causes("assert 1 == 2\n +  where 1 = f()") == ("assert 1 == 2",)


def test_a_failed_run_ends_with_each_cause_once(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import pytest
        from tests.support.causes import write_causes

        @pytest.hookimpl(wrapper=True, tryfirst=True)
        def pytest_terminal_summary(terminalreporter):
            yield
            write_causes(terminalreporter)
    """)
    pytester.makepyfile(f"""
        import pytest

        @pytest.fixture(scope="module")
        def results():
            raise RuntimeError({SPARK_MESSAGE.split(chr(10), 1)[1]!r})

        @pytest.mark.parametrize("sample", ["a", "b", "c"])
        def test_sample(results, sample):
            pass

        def test_other():
            assert 1 == 2
    """)
    result = pytester.runpytest("-ra")
    result.assert_outcomes(errors=3, failed=1)
    lines = result.outlines
    tail = lines[max(i for i, line in enumerate(lines) if "root causes" in line):]
    assert tail[1:-1] == [
        "3 x test_a_failed_run_ends_with_each_cause_once.py::test_sample[a] and 2 more:",
        "    RuntimeError: : org.apache.spark.SparkException: [BROADCAST] Not enough memory to build and broadcast "
        "the table.",
        "    Caused by: java.lang.OutOfMemoryError: Java heap space",
        "    Suppressed: org.apache.spark.util.Utils$OriginalTryStackTraceException: original caller",
        "1 x test_a_failed_run_ends_with_each_cause_once.py::test_other:",
        "    assert 1 == 2",
    ]
    assert "1 failed, 3 errors" in tail[-1]
