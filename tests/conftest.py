"""Shared pytest fixtures: one local SparkSession for every Spark test in the run (starting one costs seconds).

A gate: the run stops at once when the compiled dissector core does not import, unless KAFKATAP_PURE_PYTHON=1
asks for the pure-Python dissector, so a broken build cannot pass by falling back to it. And the failures' root
causes as the run's last lines (`tests/support/causes.py`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkatap.dissect import native
from kafkatap.pipelines import class_archive
from tests.support.causes import write_causes
from tests.support.cli import run_cli
from tests.support.made_once import made_once
from tests.support.paths import ROOT, SAMPLES


def pytest_sessionstart(session: pytest.Session) -> None:
    # The commands the tests run start local JVMs, which map (or record and dump) the class archive: in the
    # checkout's cache beside Kafka's jars, not the user's home
    os.environ.setdefault(class_archive.ENV, str(ROOT / ".cache" / "class-archives"))
    missing = native.missing()
    if missing and not native.pure_requested():
        reasons = "; ".join(f"{name}: {error}" for name, error in missing.items())
        pytest.exit(f"the compiled dissector core does not import ({reasons}). Build it with `pip install -e .` "
                    f"(needs a C compiler and the Python headers: `make` installs them), or set {native.ENV}=1 to "
                    "test the pure-Python dissector", returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Test files with a `slow` test first, each file's tests in their order. `make test` hands whole files to its
    two processes in this order (`--dist loadfile --no-loadscope-reorder`), so both start on the long files and the
    many short ones fill the end: xdist's own order, the files with the most tests first, left the long files to the
    end, and one process idle for the last 28 s of a fresh clone's run."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Iterator[None]:
    yield
    write_causes(terminalreporter)


@pytest.fixture(scope="session")
def spark() -> Iterator["pyspark.sql.SparkSession"]:  # noqa: F821 - pyspark imported lazily
    """local[2] with the settings `kafkatap analyze` gives a small input (`intermediates.run_conf`: no shuffle
    partitions to speak of, no broadcasts, expressions interpreted), the planner extension (`planner_extension`),
    fewer calls into the JVM (`spark.fewer_jvm_calls`) and every session's settings (`spark.SETTINGS`,
    `STARTUP_SETTINGS`): test frames are tiny, and thousands of different small queries are what the session runs.
    Both of the JVM's compilers, unlike a short run's quick one only (`spark.QUICK_JIT`): this JVM plans queries for
    the whole test process, long enough for the optimizing compiler's code of Spark's planner to pay back its
    compiling (measured in docs/performance.md, "Both compilers for the tests' session"); the throughput collector
    of every JVM the commands start (`spark.THROUGHPUT_GC`): test_fenced and test_duplicates took 125 s with it
    against 128 s with G1, alternating. 2 GB of driver heap: the pipelines' query plans are large (many windows and
    unions) and every test keeps adding to the same JVM. 2 MB memory pages: Spark sizes a page from the heap and the
    cores (32 MB here) and each hash aggregation, sort and broadcast table takes whole pages, while the session's
    storage keeps earlier broadcasts; late in a run, a task could not get one more page for a few kB of groups
    (AGGREGATE_OUT_OF_MEMORY in tests/pipelines/test_samples on share_group, in a fresh clone; CI failed in the same
    fixture)."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from kafkatap.pipelines import planner_extension
    from kafkatap.pipelines.intermediates import run_conf
    from kafkatap.pipelines.spark import SETTINGS, STARTUP_SETTINGS, THROUGHPUT_GC, fewer_jvm_calls

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("kafkatap-tests")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", THROUGHPUT_GC)
        .config("spark.buffer.pageSize", "2m")
        .config("spark.sql.ui.retainedExecutions", "5")
    )
    for key, value in {**SETTINGS, **STARTUP_SETTINGS, **planner_extension.session_settings(), **run_conf(0)}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    fewer_jvm_calls(session.sparkContext)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """`kafkatap report` of the demo's sample as a user runs it (DIR/dissected with the records, DIR/report,
    DIR/dashboard.html), made once for the run (`made_once`): the dashboard's test draws its page, the cluster test
    compares its own analysis of the same tables with its report. Each made its own before: the dashboard's test ran
    every job in the tests' session (48 s of its setup in a run), the cluster test a local `kafkatap analyze`."""
    def make(folder: Path) -> None:
        from tests.support.spark_cluster import client_env  # pyspark's, imported by the Spark tests only

        result = run_cli("report", str(SAMPLES / "day_in_the_life.pcapng"), "-o", str(folder / "out"), "-q",
                         env=client_env(), timeout=900)
        assert result.returncode == 0, result.stderr

    return made_once(tmp_path_factory, worker_id, "demo_report", make) / "out"


@pytest.fixture(autouse=True)
def one_run(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every Spark test inside one `once_per_run` block, as `kafkatap analyze` runs its jobs: intermediates computed
    once and kept as rows, the settings of a small input. Without it, a test of a job that reads an intermediate
    several times plans and runs its whole lineage again each time (a rebalances test: 169 s against 13 s). Tests
    marked `own_run` open their blocks themselves."""
    if "spark" not in request.fixturenames or request.node.get_closest_marker("own_run"):
        yield
        return
    from kafkatap.pipelines.intermediates import once_per_run

    with once_per_run(request.getfixturevalue("spark"), 0):
        yield
