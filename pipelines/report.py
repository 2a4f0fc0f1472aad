"""The jobs as read -> transform -> write steps over an OUT directory (the dissector's) and a REPORT directory.

Each job computes its tables with the pure functions of `pipelines.jobs`, casts them to `pipelines.schema` and writes
them; `summary.json` is rebuilt from whatever the report holds after every run, so running one job or all of them
leaves a consistent report.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from kafkatap.dissect.schema import ANOMALIES, BATCHES, FRAMES, RECORDS, SHARE
from kafkatap.pipelines import schema
from kafkatap.pipelines.jobs.connections import connections
from kafkatap.pipelines.jobs.duplicates import duplicate_deliveries
from kafkatap.pipelines.jobs.epochs import epoch_events
from kafkatap.pipelines.jobs.fenced import fenced_epochs
from kafkatap.pipelines.jobs.links import fetch_links
from kafkatap.pipelines.jobs.members import member_spans, members
from kafkatap.pipelines.jobs.producers import producers, transactions
from kafkatap.pipelines.jobs.share_members import share_members
from kafkatap.pipelines.jobs.summary import summary
from kafkatap.pipelines.jobs import throughput
from kafkatap.pipelines.storage import exists, join_uri, read_table, window_interval, write_json, write_table


@dataclass
class Inputs:
    frames: DataFrame
    batches: DataFrame
    records: DataFrame | None  # None when the capture was dissected without --records
    share: DataFrame
    anomalies: DataFrame


def read_inputs(spark: SparkSession, out: str) -> Inputs:
    has_records = exists(spark, join_uri(out, "records"))
    return Inputs(
        frames=read_table(spark, out, "frames", FRAMES),
        batches=read_table(spark, out, "batches", BATCHES),
        records=read_table(spark, out, "records", RECORDS) if has_records else None,
        share=read_table(spark, out, "share", SHARE),
        anomalies=read_table(spark, out, "anomalies", ANOMALIES),
    )


def _write(spark: SparkSession, report: str, tables: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """Write tables, then hand back the written copies so later jobs read Parquet instead of recomputing."""
    for name, df in tables.items():
        write_table(df, report, name, schema.TABLES[name])
    return {name: read_table(spark, report, name, schema.TABLES[name]) for name in tables}


def run_sessions(spark: SparkSession, inp: Inputs, report: str, done: dict[str, DataFrame]) -> dict[str, DataFrame]:
    written = _write(spark, report, {
        "sessions/connections": connections(inp.frames),
        "sessions/members": members(inp.frames, inp.batches),
        "sessions/producers": producers(inp.frames, inp.batches),
        "sessions/transactions": transactions(inp.frames, inp.batches),
        "sessions/share_members": share_members(inp.frames, inp.share),
        "sessions/epoch_events": epoch_events(inp.frames),
    })
    spans = member_spans(written["sessions/members"])
    return written | _write(spark, report, {"sessions/fetch_links": fetch_links(inp.frames, spans)})


def run_fenced(spark: SparkSession, inp: Inputs, report: str, done: dict[str, DataFrame]) -> dict[str, DataFrame]:
    return _write(spark, report, {"fenced_epochs": fenced_epochs(inp.frames, inp.batches)})


def run_duplicates(spark: SparkSession, inp: Inputs, report: str,
                   done: dict[str, DataFrame]) -> dict[str, DataFrame]:
    members_df = done.get("sessions/members")
    members_df = members_df if members_df is not None else members(inp.frames, inp.batches)
    fenced_df = done.get("fenced_epochs")
    fenced_df = fenced_df if fenced_df is not None else fenced_epochs(inp.frames, inp.batches)
    table = duplicate_deliveries(inp.frames, inp.batches, inp.records, inp.share, member_spans(members_df), fenced_df)
    return _write(spark, report, {"duplicate_deliveries": table})


def run_throughput(spark: SparkSession, inp: Inputs, report: str, done: dict[str, DataFrame],
                   window: str = "1s") -> dict[str, DataFrame]:
    interval = window_interval(window)
    return _write(spark, report, {
        "throughput/data": throughput.data(inp.batches, interval),
        "throughput/requests": throughput.requests(inp.frames, interval),
        "throughput/lag": throughput.lag(inp.batches, interval),
    })


JOBS: dict[str, Callable[..., dict[str, DataFrame]]] = {
    "sessions": run_sessions,
    "fenced_epochs": run_fenced,
    "duplicate_deliveries": run_duplicates,
    "throughput": run_throughput,
}


def existing_tables(spark: SparkSession, report: str) -> dict[str, DataFrame]:
    return {name: read_table(spark, report, name, sch) for name, sch in schema.TABLES.items()
            if exists(spark, join_uri(report, name))}


def run(spark: SparkSession, out: str, report: str, jobs: list[str], window: str = "1s",
        on_job: Callable[[str, float], None] | None = None) -> dict:
    """Run `jobs` in order (later jobs reuse earlier tables), then rewrite REPORT/summary.json; returns it.
    `on_job(job, seconds)` hears of each job as it finishes."""
    window_interval(window)
    inp = read_inputs(spark, out)
    done: dict[str, DataFrame] = {}
    for job in jobs:
        kwargs = {"window": window} if job == "throughput" else {}
        start = time.perf_counter()
        done |= JOBS[job](spark, inp, report, done, **kwargs)
        if on_job is not None:
            on_job(job, time.perf_counter() - start)
    tables = existing_tables(spark, report)
    result = summary(inp.frames, inp.batches, inp.anomalies, tables, window)
    write_json(spark, join_uri(report, "summary.json"), result)
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
    from kafkatap.pipelines.session import get_spark

    args = job_args(f"{job}.py", argv)
    spark = get_spark(f"kafkatap-{job}", args.master)
    run(spark, args.frames, args.out, [job], args.window)
    return 0
