"""The jobs as read -> transform -> write steps over an OUT directory (the dissector's) and a REPORT directory.

A job is a sequence of steps, and every step has the one signature `Step`:

    step(inputs: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]

It gets the dissector's tables (`inputs`), the report tables this run has already written (`done`) and the throughput
window, and returns new report tables built with the pure functions of `kafkatap.pipelines.transforms`. Steps read
and write nothing themselves: `run` reads the inputs once, casts each step's tables to `kafkatap.pipelines.schema`,
writes them, and hands the written copies to later steps, which then read them (the Parquet, or on small inputs the rows
kept as they were written) instead of recomputing a lineage.
A job has a second step only where a table is built from one the job itself writes (sessions' fetch links from its
members). A job that reads another job's tables names it in `Job.needs`, and `run` runs the needed jobs first: every
table a step reads from `done` was written by this run, from these inputs. Intermediates several jobs share are
computed once per run (`kafkatap.pipelines.intermediates`). `summary.json` is rebuilt from whatever the report holds
after every run, so running one job or all of them leaves a consistent report. The spark-submit mains of
`kafkatap.pipelines.submit` run one job (and what it needs) through `run`, `kafkatap analyze` runs them all.
"""

from __future__ import annotations

import argparse
import contextvars
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession

from kafkatap.dissect.tables.schema import ANOMALIES, BATCHES, CONNECTIONS, FRAMES, RECORDS, SHARE
from kafkatap.pipelines import class_archive, class_lookups, schema
from kafkatap.pipelines.inputs import check_inputs, check_local, local_path
from kafkatap.pipelines.intermediates import (
    an_input, keep, kept_in_memory, once_per_run, one_partition, partitioned, run_conf, session_settings,
)
from kafkatap.pipelines.launch import wind_down_deadline
from kafkatap.pipelines.storage import (
    conform, delete, exists, join_uri, read_local_table, read_table, size_bytes, window_interval, write_json,
    write_table, written_rows,
)
from kafkatap.pipelines.transforms import throughput
from kafkatap.pipelines.transforms.conflicts import ownership_conflicts
from kafkatap.pipelines.transforms.connections import connections
from kafkatap.pipelines.transforms.duplicates.table import duplicate_deliveries
from kafkatap.pipelines.transforms.e2e import e2e_latency
from kafkatap.pipelines.transforms.epochs import epoch_events
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.transforms.groups import group_commits, groups
from kafkatap.pipelines.transforms.links import fetch_links
from kafkatap.pipelines.transforms.members import member_spans, members
from kafkatap.pipelines.transforms.producers import producers, transactions
from kafkatap.pipelines.transforms.rebalances import rebalances
from kafkatap.pipelines.transforms.replicas import mark_replication, replica_connections
from kafkatap.pipelines.transforms.share_members import share_members
from kafkatap.pipelines.transforms.share_records import share_records
from kafkatap.pipelines.transforms.share_spso import spso_pinned, spso_windows
from kafkatap.pipelines.transforms.summary import input_counts, summary


@dataclass
class Inputs:
    frames: DataFrame
    batches: DataFrame
    records: DataFrame | None  # None when the capture was dissected without --records
    share: DataFrame
    anomalies: DataFrame
    connections: DataFrame  # the dissector's connections/, not the report's sessions/connections
    input_bytes: int  # what a run's settings depend on (`intermediates.run_conf`)

    @property
    def one_partition(self) -> bool:
        return one_partition(self.input_bytes)


def read_inputs(spark: SparkSession, out: str) -> Inputs:
    has_records = exists(spark, join_uri(out, "records"))
    size = size_bytes(spark, out)
    one, local = one_partition(size), local_path(out)

    def read(name: str, sch: pa.Schema) -> DataFrame:
        if kept_in_memory(size):
            df = read_local_table(spark, local, name, sch) if local else read_table(spark, out, name, sch)
            return an_input(keep(df, one))
        return an_input(partitioned(read_table(spark, out, name, sch), one))

    # The settings of a run over this input hold for its reads and first query too (on the bundled sample, that
    # query interpreted instead of compiled: the reads 1.3 -> 1.05 s). That query is the followers': slow on a new JVM,
    # so the other tables are read beside it.
    with session_settings(spark, run_conf(size)), ThreadPoolExecutor(
            1, thread_name_prefix="kafkatap-read", initializer=class_lookups.on_this_thread) as pool:
        frames = read("frames", FRAMES)
        asked = pool.submit(replica_connections, frames)
        batches = read("batches", BATCHES)
        records = read("records", RECORDS) if has_records else None
        share, anomalies, conns = read("share", SHARE), read("anomalies", ANOMALIES), read("connections", CONNECTIONS)
        followers = asked.result()  # their fetched data is replication: marked once for every analysis
    return Inputs(
        frames=frames,
        batches=mark_replication(batches, followers),
        records=mark_replication(records, followers) if records is not None else None,
        share=share,
        anomalies=anomalies,
        connections=conns,
        input_bytes=size,
    )


JOB_PROPERTY = "kafkatap.job"
"""The Spark local property naming the kafkatap job a Spark job runs for (in the UI's and the event log's job
properties)."""
CALL_SITE_FORMS = ("callSite.short", "callSite.long")
"""The local properties Spark reads a job's call site from (`org.apache.spark.util.CallSite`'s SHORT_FORM and
LONG_FORM) before it computes one."""

Step = Callable[[Inputs, Mapping[str, DataFrame], str], dict[str, DataFrame]]


def _write(spark: SparkSession, report: str, tables: dict[str, DataFrame], inp: Inputs) -> dict[str, DataFrame]:
    """Write tables, then hand back what later steps read instead of recomputing a lineage: in a run over small inputs
    (`kept_in_memory`), the rows as written, kept while they were written; else the written Parquet (partitioned as
    the inputs are). Both with the declared types, and inputs to the steps that read them (`an_input`)."""
    small = kept_in_memory(inp.input_bytes)
    if small:
        tables = {name: keep(df, inp.one_partition) for name, df in tables.items()}
    for name, df in tables.items():
        write_table(df, report, name, schema.TABLES[name], collect=small)
    if small:
        return {name: an_input(conform(df, schema.TABLES[name])) for name, df in tables.items()}
    # A table written without a row is handed on as one Spark knows to be empty, as `keep` hands on kept rows: the
    # steps that read it then plan what they build on it as empty too (a capture without group traffic has no
    # members, and its consumer deliveries' link to them is then no join). Known from the footers on this machine.
    local = local_path(report)
    read = {}
    for name in tables:
        df = partitioned(read_table(spark, report, name, schema.TABLES[name]), inp.one_partition)
        read[name] = an_input(df.limit(0) if local is not None and written_rows(os.path.join(local, name)) == 0
                              else df)
    return read


def member_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    """A step of its own, the job's first: the jobs that read the members start once they are written (`Job.reads`)."""
    return {"sessions/members": members(inp.frames, inp.batches)}


def session_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    return {
        "sessions/connections": connections(inp.frames, inp.connections),
        "sessions/groups": groups(inp.frames),
        "sessions/commits": group_commits(inp.frames, inp.batches),
        "sessions/producers": producers(inp.frames, inp.batches),
        "sessions/transactions": transactions(inp.frames, inp.batches),
        "sessions/share_members": share_members(inp.frames, inp.share),
        "sessions/epoch_events": epoch_events(inp.frames),
    }


def fetch_link_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    """A step of its own: the links need the members' spans, taken from the members table as written."""
    return {"sessions/fetch_links": fetch_links(inp.frames, member_spans(done["sessions/members"]))}


def fenced_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    return {"fenced_epochs": fenced_epochs(inp.frames, inp.batches)}


def duplicate_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    table = duplicate_deliveries(inp.frames, inp.batches, inp.records, inp.share,
                                 member_spans(done["sessions/members"]), done["fenced_epochs"])
    return {"duplicate_deliveries": table}


def throughput_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    interval = window_interval(window)
    return {
        "throughput/data": throughput.data(inp.batches, interval),
        "throughput/requests": throughput.requests(inp.frames, interval),
        "throughput/latency": throughput.latency(inp.frames),
        "throughput/lag": throughput.lag(inp.batches, interval),
    }


def rebalance_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    return {"rebalances": rebalances(inp.frames, inp.batches)}


def e2e_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    links = done["sessions/fetch_links"]
    return {"e2e_latency": e2e_latency(inp.batches, inp.records, links, window_interval(window))}


def conflict_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    spans = member_spans(done["sessions/members"])
    return {"ownership_conflicts": ownership_conflicts(inp.frames, inp.batches, spans)}


def share_record_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    return {"share_records": share_records(inp.frames, inp.share)}


def share_spso_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    """A step of its own: the SPSO is read off the share_records table as written."""
    records = done["share_records"]
    return {"share_spso/windows": spso_windows(records, inp.batches, window_interval(window)),
            "share_spso/pinned": spso_pinned(records, inp.frames)}


@dataclass(frozen=True)
class Job:
    steps: tuple[Step, ...]
    needs: tuple[str, ...] = ()
    """Jobs whose tables the steps read from `done`: run before this one."""
    reads: tuple[str, ...] = ()
    """When the steps read only some of those tables, which: the job then starts as soon as they are written, while the
    jobs writing them go on with their later steps (the 228k-frame chatty capture's `duplicate_deliveries`, the
    longest job, waited for all of `sessions` before)."""


JOBS: dict[str, Job] = {
    "sessions": Job((member_tables, session_tables, fetch_link_tables)),
    "fenced_epochs": Job((fenced_tables,)),
    "duplicate_deliveries": Job((duplicate_tables,), needs=("sessions", "fenced_epochs"),
                                reads=("sessions/members", "fenced_epochs")),
    "rebalances": Job((rebalance_tables,)),
    "share_records": Job((share_record_tables, share_spso_tables)),
    "throughput": Job((throughput_tables,)),
    "ownership_conflicts": Job((conflict_tables,), needs=("sessions",), reads=("sessions/members",)),
    "e2e_latency": Job((e2e_tables,), needs=("sessions",)),
}
"""Every job, in the order a run of them all starts them (`_run_jobs`, `with_needs`): the jobs others need first, then
the longest, so that the short ones fill the end and the job threads finish together. Before this order the bundled
sample's `rebalances` started last and ran alone for a second while the other core idled."""


def with_needs(jobs: list[str]) -> list[str]:
    """`jobs` in order, each preceded by the jobs it needs (once, first use wins)."""
    ordered: list[str] = []

    def add(job: str) -> None:
        if job not in ordered:
            for need in JOBS[job].needs:
                add(need)
            ordered.append(job)

    for job in jobs:
        add(job)
    return ordered


def existing_tables(spark: SparkSession, report: str, done: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
    """Every table the report holds: this run's as written (`done`), earlier runs' read from REPORT."""
    return {name: done[name] if name in done else read_table(spark, report, name, sch)
            for name, sch in schema.TABLES.items() if name in done or exists(spark, join_uri(report, name))}


CONCURRENT_JOBS = 2
"""Jobs run side by side over a one-partition input. Such a job keeps one core busy, and much of its time is planning
(Python and the JVM's analyzer) rather than tasks: a second job fills the other core and the gaps. Measured on the
bundled sample and a 215k-frame capture on two cores: see docs/performance.md."""


def jobs_at_a_time(inp: Inputs) -> int:
    """`CONCURRENT_JOBS` over a one-partition input; one over a partitioned one, whose tasks fill every core anyway: a
    second job there only takes half of the first one's cores, and each job's time is then the other's too (10 M
    generated frames on two cores, three runs each way: the run as long, 359-385 s against 372-393 s, and `sessions`
    93-96 s instead of 165-182 s)."""
    return CONCURRENT_JOBS if inp.one_partition else 1


def ready(job: str, finished: set[str], written: Mapping[str, DataFrame]) -> bool:
    """Whether `job` can start: the jobs it needs have ended, or the tables it reads of theirs are written."""
    spec = JOBS[job]
    return finished.issuperset(spec.needs) or bool(spec.reads) and all(table in written for table in spec.reads)


def _run_job(spark: SparkSession, report: str, inp: Inputs, job: str, done: Mapping[str, DataFrame], window: str,
             stop: threading.Event, publish: Callable[[dict[str, DataFrame]], None]) -> None:
    """One job's steps, in this thread; each step's tables as written go to `publish` once written. `stop` set: end
    before the next step."""
    sc = spark.sparkContext
    sc.setLocalProperty(JOB_PROPERTY, job)  # Spark's jobs and event log say whose they are
    written: dict[str, DataFrame] = {}
    try:
        for step in JOBS[job].steps:
            if stop.is_set():
                raise CancelledError(job)
            _call_site(sc, f"{job}: {step.__name__}")
            tables = _write(spark, report, step(inp, {**done, **written}, window), inp)
            written |= tables
            publish(tables)
    finally:
        sc.setLocalProperty(JOB_PROPERTY, None)
        _call_site(sc, None)


def _call_site(sc: SparkContext, text: str | None) -> None:
    """Name this thread's Spark jobs after the kafkatap job and step (the UI's and event log's description, instead
    of `parquet at NativeMethodAccessorImpl.java:0`). Spark otherwise walks the Java stack for a call site at every
    RDD it creates, hundreds per query here (`SparkContext.getCallSite`: about 3% of a sample's JVM CPU, Java Flight
    Recorder). None: Spark's own again."""
    for form in CALL_SITE_FORMS:
        sc.setLocalProperty(form, text)


def _run_jobs(spark: SparkSession, report: str, inp: Inputs, jobs: list[str], window: str,
              on_job: Callable[[str, float], None] | None,
              last: Callable[[], object] | None = None) -> dict[str, DataFrame]:
    """Run `jobs` (each after the jobs it needs, or the tables it reads of theirs: `ready`), up to `jobs_at_a_time` at
    a time, in `with_needs` order; returns every table written. `last`, work that reads no table of the run, goes to
    the first job thread free once every job has started, so it fills the end of the run instead of following it.
    The first failure (or Ctrl-C) stops the rest: no new job or step starts, Spark's running jobs are cancelled, and
    it is raised once the other threads have ended."""
    pending, done, finished = with_needs(jobs), {}, set()
    running: dict[str, float] = {}
    # what the job threads tell this one, in the order it happened: a step's tables (a dict), a job's end (its future)
    events: queue.SimpleQueue[dict[str, DataFrame] | tuple[str, Future]] = queue.SimpleQueue()
    stop, at_a_time = threading.Event(), jobs_at_a_time(inp)
    with ThreadPoolExecutor(at_a_time, thread_name_prefix="kafkatap-job",
                            initializer=class_lookups.on_this_thread) as pool:
        try:
            while pending or running or last is not None:
                for job in [j for j in pending if ready(j, finished, done)][:at_a_time - len(running)]:
                    pending.remove(job)
                    # the copied context carries `once_per_run`'s run into the thread; the tables so far as they
                    # are now (the ones it reads among them): `done` grows while the job runs
                    future = pool.submit(contextvars.copy_context().run, _run_job, spark, report, inp, job,
                                         dict(done), window, stop, events.put)
                    running[job] = time.perf_counter()
                    future.add_done_callback(lambda f, job=job: events.put((job, f)))  # after its last step's tables
                if last is not None and not pending and len(running) < at_a_time:
                    future = pool.submit(contextvars.copy_context().run, _run_last, spark, last)
                    running[_LAST] = time.perf_counter()
                    future.add_done_callback(lambda f: events.put((_LAST, f)))
                    last = None
                event = events.get()
                if isinstance(event, dict):
                    done |= event
                    continue
                job, future = event
                future.result()
                start = running.pop(job)
                if job == _LAST:
                    continue
                finished.add(job)
                if on_job is not None:
                    on_job(job, time.perf_counter() - start)
        except BaseException:
            stop.set()
            spark.sparkContext.cancelAllJobs()
            raise
    return done


_LAST = "(last)"
"""`_run_jobs`' name for its `last` work among the running jobs; no job's name."""


def _run_last(spark: SparkSession, last: Callable[[], object]) -> None:
    """`last` on a job thread, its Spark jobs named after its one use, the summary (`_call_site`)."""
    _call_site(spark.sparkContext, "summary")
    try:
        last()
    finally:
        _call_site(spark.sparkContext, None)


def run(spark: SparkSession, out: str, report: str, jobs: list[str], window: str = "1s",
        on_job: Callable[[str, float], None] | None = None) -> dict:
    """Run `jobs`, with the jobs they need before them (`with_needs`; later jobs reuse earlier tables), then
    rewrite REPORT/summary.json; returns it.
    `on_job(job, seconds)` hears of each job as it finishes. OUT must be a dissector output (`check_local`,
    `check_inputs`), and the old summary.json goes first, so a run that fails part-way leaves no summary claiming a
    complete report."""
    window_interval(window)
    with wind_down_deadline():
        if local_path(out) is None:
            check_inputs(spark, out)
        else:  # the same check, without Spark's read of the frames' schema (no small run reads Parquet in Spark)
            check_local(out)
        delete(spark, join_uri(report, "summary.json"))
        inp = read_inputs(spark, out)
        with once_per_run(spark, inp.input_bytes):
            counts: list[dict[str, list[dict]]] = []  # what `last` collected
            done = _run_jobs(spark, report, inp, jobs, window, on_job,
                             last=lambda: counts.append(input_counts(inp.frames, inp.batches, inp.anomalies)))
            tables = existing_tables(spark, report, done)
            result = summary(counts[0], tables, window)
        write_json(spark, join_uri(report, "summary.json"), result)
    class_archive.dump(spark)  # after the first complete local run: what every later one loads
    return result


def job_args(prog: str, argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description="Run a kafkatap pipeline over dissected Parquet.")
    parser.add_argument("--frames", required=True, metavar="OUT",
                        help="the dissector's output directory (URI): OUT/frames, OUT/batches, ...")
    parser.add_argument("--out", required=True, metavar="REPORT", help="report directory (URI)")
    parser.add_argument("--window", default="1s", help="throughput window, e.g. 500ms, 1s, 1m (default 1s)")
    parser.add_argument("--master", default=None, help="Spark master when not started by spark-submit")
    return parser.parse_args(argv)


def job_main(job: str, argv: list[str] | None = None) -> int:
    """The thin main() of one spark-submit job file."""
    from kafkatap.pipelines.spark import get_spark

    args = job_args(f"{job}.py", argv)
    spark = get_spark(f"kafkatap-{job}", args.master)
    run(spark, args.frames, args.out, [job], args.window)
    return 0
