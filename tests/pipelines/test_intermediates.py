"""Shared intermediates are computed once per run and read as rows; small inputs stay one partition; a job's needs
run before it."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.tables import schema as dissected
from kafkatap.pipelines import intermediates, report, schema
from kafkatap.pipelines.inputs import short_run
from kafkatap.pipelines.intermediates import (
    KEPT_BYTES, ONE_PARTITION_BYTES, QUICK_JIT_BYTES, broadcast_small, clustered, intermediate, materialize,
    once_per_run, partitioned, run_conf, session_settings
)
from kafkatap.pipelines.report import JOBS, Inputs, _write, with_needs
from kafkatap.pipelines.storage import spark_schema

pytestmark = pytest.mark.own_run

calls: list[int] = []
NO_INPUTS = Inputs(*[None] * 6, input_bytes=0)  # for stand-in jobs, which read no input


@intermediate
def counted(df: DataFrame) -> DataFrame:
    calls.append(1)
    return df.groupBy("k").agg(F.count(F.lit(1)).alias("n"))


def _leaf(df: DataFrame) -> str:
    return df._jdf.queryExecution().logical().toString()


def test_needed_jobs_run_first_once_and_in_order() -> None:
    assert with_needs(["duplicate_deliveries"]) == ["sessions", "fenced_epochs", "duplicate_deliveries"]
    assert with_needs(["e2e_latency", "ownership_conflicts"]) == ["sessions", "e2e_latency", "ownership_conflicts"]
    assert with_needs(list(JOBS)) == list(JOBS)  # analyze's own order already has every need first
    assert all(need in JOBS for job in JOBS.values() for need in job.needs)
    assert all(table in schema.TABLES for job in JOBS.values() for table in job.reads)
    needed = {need for job in JOBS.values() for need in job.needs}
    assert set(list(JOBS)[:len(needed)]) == needed  # a run of them all starts what others wait for before the rest


@pytest.mark.spark
def test_an_intermediate_is_computed_once_per_run_and_kept_as_rows(spark) -> None:
    df = spark.createDataFrame([(1,), (1,), (2,)], ["k"])
    other = spark.createDataFrame([(3,)], ["k"])
    calls.clear()
    assert counted(df) is not counted(df) and len(calls) == 2  # outside a run: a plain function
    calls.clear()
    with once_per_run(spark, ONE_PARTITION_BYTES + 1):
        first = counted(df)
        assert counted(df) is first and len(calls) == 1
        assert "LogicalRDD" in _leaf(first)  # a plan that starts from the kept rows, not from the lineage
        assert sorted(tuple(r) for r in first.collect()) == [(1, 2), (2, 1)]
        assert counted(other) is not first and len(calls) == 2
    calls.clear()
    with once_per_run(spark, ONE_PARTITION_BYTES + 1):
        assert counted(df) is not first and len(calls) == 1  # a new run computes it again


@pytest.mark.spark
def test_an_intermediate_is_computed_by_the_first_query_that_reads_it(spark) -> None:
    """No Spark job of its own: its rows are kept as the first query computes them, and read by the later ones."""
    df = spark.createDataFrame([(1,), (1,), (2,)], ["k"])
    sc = spark.sparkContext
    sc.setJobGroup("intermediate", "materialized")
    try:
        with once_per_run(spark, ONE_PARTITION_BYTES + 1):
            kept = counted(df)
            assert sc.statusTracker().getJobIdsForGroup("intermediate") == []
            rows = kept._jdf.queryExecution().logical().rdd()
            assert not rows.isCheckpointed()
            assert sorted(tuple(r) for r in kept.collect()) == [(1, 2), (2, 1)]
            assert len(sc.statusTracker().getJobIdsForGroup("intermediate")) == 1 and rows.isCheckpointed()
    finally:
        sc._jsc.clearJobGroup()  # all three properties setJobGroup set (PySpark has no clearJobGroup of its own)


@pytest.mark.spark
@pytest.mark.parametrize(("input_bytes", "leaf"), [(KEPT_BYTES, "LogicalRDD"), (KEPT_BYTES + 1, "parquet")])
def test_a_small_runs_tables_go_on_as_kept_rows_and_a_larger_ones_as_written(spark, tmp_path, input_bytes: int,
                                                                            leaf: str) -> None:
    """A step's tables are written either way; a small run hands the next steps the rows it wrote (no Parquet scan in
    each later query), a larger one the written files."""
    name = "throughput/latency"
    table = spark.createDataFrame([], spark_schema(schema.TABLES[name]))
    inp = Inputs(*[table] * 6, input_bytes=input_bytes)
    with once_per_run(spark, input_bytes):
        (handed,) = _write(spark, str(tmp_path), {name: table}, inp).values()
        assert leaf in _leaf(handed) and handed.schema == spark_schema(schema.TABLES[name])
    assert list((tmp_path / name).glob("*.parquet"))


@pytest.mark.spark
def test_a_larger_runs_table_written_without_a_row_goes_on_as_known_empty(spark, tmp_path) -> None:
    """A larger run hands on the written files, and a table written without a row as a relation Spark knows to be
    empty (from the files' footers), so the plans built on it are planned as empty: a capture without group traffic
    has no members, and its consumer deliveries' link to them is then no join."""
    name = "throughput/latency"
    declared = spark_schema(schema.TABLES[name])
    tables = {"empty": spark.createDataFrame([], declared),
              "one row": spark.createDataFrame([(None,) * len(declared)], declared, verifySchema=False)}
    inp = Inputs(*[tables["empty"]] * 6, input_bytes=KEPT_BYTES + 1)
    with once_per_run(spark, inp.input_bytes):
        for kind, table in tables.items():
            (handed,) = _write(spark, str(tmp_path / kind.replace(" ", "_")), {name: table}, inp).values()
            assert intermediates.known_empty(handed.join(tables["one row"], "api_name")) == (kind == "empty")
            assert handed.count() == (kind == "one row")


@pytest.mark.spark
def test_a_one_partition_run_needs_no_shuffle_and_restores_the_settings(spark) -> None:
    before = {key: spark.conf.get(key, None) for key in run_conf(0)}
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        df = spark.createDataFrame([(i % 3, i) for i in range(30)], ["k", "v"])
        assert df.rdd.getNumPartitions() > 1
        with once_per_run(spark, 0):
            assert spark.conf.get("spark.sql.autoBroadcastJoinThreshold") == "-1"
            one = partitioned(df, True)
            kept = materialize(one.groupBy("k").agg(F.sum("v").alias("s")))
            assert kept.rdd.getNumPartitions() == 1
            joined = kept.join(one.groupBy("k").agg(F.max("v").alias("m")), "k")
            plan = joined._jdf.queryExecution().executedPlan().toString()
            assert "Exchange" not in plan, plan  # aggregations and the join in the stage that reads the rows
            assert sorted(tuple(r) for r in joined.collect()) == [(0, 135, 27), (1, 145, 28), (2, 155, 29)]
        assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before["spark.sql.shuffle.partitions"] or "200")
    assert partitioned(df, False) is df
    assert run_conf(ONE_PARTITION_BYTES + 1) == {}  # a large input keeps Spark's own settings


@pytest.mark.spark
def test_a_runs_reads_and_first_query_have_the_runs_settings(spark, tmp_path, monkeypatch) -> None:
    """`read_inputs` reads and asks for the followers with the settings of a run over its input, as the jobs then
    run: with the session's own, the bundled sample's kept inputs and first query compiled their expressions. The
    session's settings are back after it."""
    for name, table in dissected.TABLES.items():
        (tmp_path / name).mkdir()
        pq.write_table(table.empty_table(), tmp_path / name / "part-0.parquet")
    seen: dict[str, str] = {}

    def followers(frames: DataFrame) -> list[str]:
        seen.update({key: spark.conf.get(key) for key in run_conf(0)})
        return []

    monkeypatch.setattr(report, "replica_connections", followers)
    session = {"spark.sql.codegen.wholeStage": "true", "spark.sql.adaptive.enabled": "true"}
    with session_settings(spark, session):
        inp = report.read_inputs(spark, str(tmp_path))
        assert {key: spark.conf.get(key) for key in session} == session
    assert seen == run_conf(inp.input_bytes) and inp.records is not None and inp.frames.isEmpty()


@pytest.mark.spark
def test_clustered_exchanges_once_by_its_keys_except_in_a_one_partition_run(spark) -> None:
    """Exchanged by k, the aggregation by (k, v) and the join on k after it need no exchange of their own; a
    one-partition run's rows need none at all."""
    df = spark.createDataFrame([(i % 3, i) for i in range(30)], ["k", "v"])
    # the plan as planned, not as adapted to 30 rows
    with session_settings(spark, {"spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "false"}):
        with once_per_run(spark, ONE_PARTITION_BYTES + 1):
            by_k = clustered(df, "k")
            firsts = by_k.groupBy("k", "v").agg(F.count(F.lit(1)).alias("n"))
            joined = firsts.join(by_k.groupBy("k").agg(F.max("v").alias("m")), "k")
            plan = joined._jdf.queryExecution().executedPlan().toString()
            exchanges = [line for line in plan.splitlines() if "Exchange hashpartitioning" in line]
            assert exchanges and all("REPARTITION_BY_COL" in line for line in exchanges), plan
    with once_per_run(spark, 0):
        assert clustered(df, "k") is df


@pytest.mark.spark
def test_a_small_materialized_side_is_broadcast_and_a_large_one_is_not(spark, monkeypatch) -> None:
    """Up to BROADCAST_ROWS rows, the join that reads them broadcasts them and leaves the other side as it is; over
    it, the join is planned as Spark plans it; inside a one-partition run, nothing is counted or hinted."""
    big = spark.createDataFrame([(i % 7, i) for i in range(200)], ["k", "v"])
    small = spark.createDataFrame([(k, f"k{k}") for k in range(5)], ["k", "name"])
    plans, rows = {}, {}
    # hints on (the test session's settings are a one-partition run's), and only the hint can make a broadcast
    hints = {"spark.sql.optimizer.disableHints": "false", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    with session_settings(spark, hints):
        for limit in (5, 4):
            monkeypatch.setattr(intermediates, "BROADCAST_ROWS", limit)
            with once_per_run(spark, ONE_PARTITION_BYTES + 1):
                joined = big.join(broadcast_small(small), "k")
                plans[limit] = joined._jdf.queryExecution().executedPlan().toString()
                rows[limit] = sorted(map(tuple, joined.collect()))
    assert "BroadcastHashJoin" in plans[5], plans[5]
    assert "BroadcastHashJoin" not in plans[4], plans[4]
    assert rows[5] == rows[4] and len(rows[5]) == len([i for i in range(200) if i % 7 < 5])
    with once_per_run(spark, 0):
        assert broadcast_small(small) is small


def test_a_short_run_is_a_local_input_of_at_most_quick_jit_bytes(tmp_path) -> None:
    """Only such a run's JVM gets the quick compiler alone (`spark.QUICK_JIT`): a larger input needs C2's code, and
    the size of a remote one is not known before the JVM starts."""
    part = tmp_path / "frames" / "part-00000.parquet"
    part.parent.mkdir()
    with part.open("wb") as f:
        f.truncate(QUICK_JIT_BYTES)  # sparse: its size without writing it
    assert short_run(str(tmp_path)) and short_run(tmp_path.as_uri())
    with part.open("r+b") as f:
        f.truncate(QUICK_JIT_BYTES + 1)
    assert not short_run(str(tmp_path))
    assert not short_run("s3a://bucket/out") and not short_run(str(tmp_path / "absent"))


def test_no_window_frame_runs_from_a_moving_start_to_the_partitions_end() -> None:
    """Spark evaluates such a frame again for every row (quadratic in a partition's rows); the transforms read "the
    rows after" as the rows before in the reversed order instead."""
    import ast
    from pathlib import Path

    import kafkatap.pipelines.transforms as transforms

    def named(node: ast.expr, attr: str) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == attr

    found = []
    for path in Path(transforms.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and (named(node.func, "rowsBetween") or named(node.func, "rangeBetween")) \
                    and len(node.args) == 2 and named(node.args[1], "unboundedFollowing") \
                    and not named(node.args[0], "unboundedPreceding"):
                found.append(f"{path.name}:{node.lineno}")
    assert found == []


@pytest.mark.spark
def test_jobs_in_threads_compute_a_shared_intermediate_once(spark) -> None:
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    df = spark.createDataFrame([(1,), (2,)], ["k"])
    calls.clear()
    with once_per_run(spark, 0), ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(contextvars.copy_context().run, counted, df) for _ in range(4)]
        kept = [f.result() for f in futures]
    assert len(calls) == 1 and all(k is kept[0] for k in kept)


def _timed_jobs(monkeypatch, spans: dict[str, tuple[float, float]], fail: str | None = None,
                seconds: tuple[float, float, float] = (0.4, 0.1, 0.4)) -> None:
    """Stand-in jobs a (0.4 s), b (needs a; 0.1 s), c (0.4 s), or as long as `seconds` says, the one `fail` names
    failing, recording when they ran."""
    import time

    from kafkatap.pipelines import report

    def job(name: str, seconds: float):
        def step(inp, done, window):
            start = time.perf_counter()
            if name == fail:
                raise RuntimeError(f"{name} failed")
            time.sleep(seconds)
            spans[name] = (start, time.perf_counter())
            return {}
        return report.Job((step,), needs=("a",) if name == "b" else ())

    monkeypatch.setattr(report, "JOBS", {name: job(name, s) for name, s in zip("abc", seconds)})


@pytest.mark.spark
def test_independent_jobs_overlap_and_a_job_starts_after_its_needs(spark, monkeypatch) -> None:
    from kafkatap.pipelines import report

    spans: dict[str, tuple[float, float]] = {}
    _timed_jobs(monkeypatch, spans)
    heard: list[str] = []
    report._run_jobs(spark, "unused", NO_INPUTS, ["b", "c"], "1s", lambda job, seconds: heard.append(job))
    assert sorted(heard) == ["a", "b", "c"]
    assert spans["b"][0] >= spans["a"][1]  # b needs a
    assert spans["c"][0] < spans["a"][1] and spans["a"][0] < spans["c"][1]  # a and c side by side


@pytest.mark.spark
def test_the_last_work_fills_a_free_job_thread_once_every_job_has_started(spark, monkeypatch) -> None:
    """The summary's counts of the inputs (`last`) run beside the run's last job, not after it, and not while a job
    waits to start: c ends first, and the thread it frees stays free for b until a ends."""
    import time

    from kafkatap.pipelines import report

    spans: dict[str, tuple[float, float]] = {}
    _timed_jobs(monkeypatch, spans, seconds=(0.4, 0.3, 0.1))

    def last() -> None:
        spans["last"] = (time.perf_counter(), time.perf_counter())

    report._run_jobs(spark, "unused", NO_INPUTS, ["b", "c"], "1s", None, last=last)
    assert spans["c"][1] < spans["a"][1] <= spans["last"][0] < spans["b"][1]


@pytest.mark.spark
def test_a_job_starts_once_the_tables_it_reads_are_written(spark, monkeypatch) -> None:
    """A job that reads only some tables of a job it needs starts once the step writing them has, beside that job's
    later steps, and finds them in `done`; every step's tables end in the run's."""
    import time

    from kafkatap.pipelines import report

    spans: dict[str, float] = {}
    seen: dict[str, str] = {}

    def first(inp, done, window):
        return {"a/first": "rows"}

    def second(inp, done, window):
        time.sleep(0.4)
        spans["a_end"] = time.perf_counter()
        return {"a/second": "rows"}

    def reader(inp, done, window):
        spans["b_start"] = time.perf_counter()
        seen.update(done)
        return {}

    monkeypatch.setattr(report, "JOBS", {"a": report.Job((first, second)),
                                         "b": report.Job((reader,), needs=("a",), reads=("a/first",))})
    monkeypatch.setattr(report, "_write", lambda spark, out, tables, inp: tables)  # the tables as they are
    done = report._run_jobs(spark, "unused", NO_INPUTS, ["b"], "1s", None)
    assert spans["b_start"] < spans["a_end"] and seen == {"a/first": "rows"}
    assert done == {"a/first": "rows", "a/second": "rows"}


@pytest.mark.spark
def test_jobs_over_a_partitioned_input_run_one_at_a_time(spark, monkeypatch) -> None:
    """Their tasks fill the cores: a second job would only share them, and each job's time would be both jobs'."""
    from kafkatap.pipelines import report

    spans: dict[str, tuple[float, float]] = {}
    _timed_jobs(monkeypatch, spans)
    partitioned_input = Inputs(*[None] * 6, input_bytes=ONE_PARTITION_BYTES + 1)
    report._run_jobs(spark, "unused", partitioned_input, ["c", "b"], "1s", None)
    assert spans["a"][0] >= spans["c"][1] and spans["b"][0] >= spans["a"][1]  # in order, none beside another


@pytest.mark.spark
def test_a_failed_job_stops_the_jobs_not_started_and_is_raised(spark, monkeypatch) -> None:
    from kafkatap.pipelines import report

    spans: dict[str, tuple[float, float]] = {}
    _timed_jobs(monkeypatch, spans, fail="a")
    with pytest.raises(RuntimeError, match="a failed"):
        report._run_jobs(spark, "unused", NO_INPUTS, ["a", "b", "c"], "1s", None)
    assert "b" not in spans  # never started: its need failed


@pytest.mark.spark
def test_a_steps_spark_jobs_are_named_after_the_kafkatap_job_and_step(spark, monkeypatch) -> None:
    """Inside a step, every RDD Spark creates has the kafkatap job and step as its call site (what Spark's UI and
    event log show, and no Java stack walked to find one); after the job, Spark finds its own again."""
    import threading

    from kafkatap.pipelines import report

    def call_site() -> tuple[str, str]:
        site = spark.sparkContext._jsc.sc().getCallSite()
        return site.shortForm(), site.longForm()

    seen: list[tuple[str, str]] = []

    def load(inp, done, window):
        seen.append(call_site())
        return {}

    monkeypatch.setattr(report, "JOBS", {"sessions": report.Job((load,))})
    report._run_job(spark, "unused", NO_INPUTS, "sessions", {}, "1s", threading.Event(), lambda tables: None)
    assert seen == [("sessions: load", "sessions: load")]
    assert "sessions" not in call_site()[0]


@pytest.mark.spark
def test_frames_of_apis_the_input_lacks_are_planned_as_empty_through_kept_intermediates(spark) -> None:
    """`of_apis` of apis the run's frames lack is a relation Spark knows to be empty, through an intermediate's kept
    rows and a join after it; the same rows as a filter either way; the frames asked once per run, and only inputs."""
    from kafkatap.pipelines.intermediates import an_input, api_keys_in, has_rows, known_empty
    from kafkatap.pipelines.transforms.common import of_apis, or_empty

    frames = an_input(spark.createDataFrame([(0, "a"), (1, "b"), (1, "c")], "api_key smallint, v string"))
    derived = frames.where(F.col("v") != "a")
    assert api_keys_in(frames) is None and has_rows(frames) is None  # outside a run: not known
    assert not known_empty(of_apis(frames, 12))  # and so planned as the filter it is
    with once_per_run(spark, ONE_PARTITION_BYTES + 1):
        lacking, present = of_apis(frames, 12, 13), of_apis(frames, 1, 12)
        assert known_empty(lacking) and not known_empty(present)
        assert lacking.collect() == [] and sorted(r.v for r in present.collect()) == ["b", "c"]
        kept = intermediate(lambda df: df.groupBy("v").count())(lacking)  # a shared intermediate over no rows
        assert known_empty(kept.join(frames, "v")) and kept.collect() == []
        assert api_keys_in(frames) == {0, 1}
        assert list(intermediates._RUN.get().asked) == [("api_keys", id(frames))]  # asked once
        assert api_keys_in(derived) is None and has_rows(derived) is None  # no input: never asked
        assert known_empty(or_empty(an_input(frames.limit(0).localCheckpoint())))
        assert not known_empty(or_empty(frames))


def test_a_kept_intermediate_without_rows_prunes_the_plans_built_on_it_in_a_large_run_only(spark) -> None:
    """`emptied` asks (one job) whether kept rows exist, on inputs over EMPTIED_BYTES: without rows, a join built on
    them is planned as empty, its other side never read; with rows, or in a small run or outside one, unchanged."""
    from kafkatap.pipelines.intermediates import EMPTIED_BYTES, emptied, known_empty

    other = spark.range(5).withColumnRenamed("id", "k")
    none, some = (spark.range(n).withColumnRenamed("id", "k").where(F.col("k") < 3) for n in (0, 5))
    assert not known_empty(emptied(none).join(other, "k"))  # outside a run: not asked
    for input_bytes in (EMPTIED_BYTES, 0):  # a small run: not asked
        with once_per_run(spark, input_bytes):
            assert not known_empty(emptied(none).join(other, "k"))
    with once_per_run(spark, EMPTIED_BYTES + 1):
        assert known_empty(emptied(none).join(other, "k"))
        joined = emptied(some).join(other, "k")
        assert not known_empty(joined) and sorted(r.k for r in joined.collect()) == [0, 1, 2]


@pytest.mark.spark
def test_a_table_planned_as_empty_is_written_with_the_types_of_one_that_is_not(spark, tmp_path) -> None:
    """An emptied plan's output keeps the declared types' casts Spark's optimizer drops from any other plan (an
    array's elements or a map's values made nullable), so a table's written types would depend on the capture's
    apis. `conform` leaves those casts out: the same types either way."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafkatap.pipelines.intermediates import an_input
    from kafkatap.pipelines.storage import write_table
    from kafkatap.pipelines.transforms.common import of_apis

    declared = pa.schema([("v", pa.string()), ("keys", pa.list_(pa.int16())), ("by", pa.map_(pa.string(), pa.int64()))])
    frames = an_input(spark.createDataFrame([(0, "a"), (1, "b")], "api_key smallint, v string"))
    with once_per_run(spark, ONE_PARTITION_BYTES + 1):
        for name, apis in (("rows", (0, 1)), ("empty", (12,))):
            table = (of_apis(frames, *apis).groupBy("v").agg(F.collect_set("api_key").alias("keys"))
                     .withColumn("by", F.create_map(F.col("v"), F.lit(1).cast("long"))))
            write_table(intermediates.keep(table, True), str(tmp_path), name, declared)  # as `report._write` does
    rows, empty = (pq.read_table(tmp_path / name) for name in ("rows", "empty"))
    assert rows.num_rows == 2 and empty.num_rows == 0 and rows.schema == empty.schema
