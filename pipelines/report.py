"""The jobs as read -> transform -> write steps over an OUT directory (the dissector's) and a REPORT directory.

A job is a sequence of steps, and every step has the one signature `Step`:

    step(inputs: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]

It gets the dissector's tables (`inputs`), the report tables this run has already written (`done`) and the throughput
window, and returns new report tables built with the pure functions of `kafkatap.pipelines.transforms`. Steps read
and write nothing themselves: `run` reads the inputs once, casts each step's tables to `kafkatap.pipelines.schema`,
writes them, and hands the written copies to later steps, which then read Parquet instead of recomputing a lineage.
A job has a second step only where a table is built from one the job itself writes (sessions' fetch links from its
members). `summary.json` is rebuilt from whatever the report holds after every run, so running one job or all of
them leaves a consistent report. The spark-submit mains of `kafkatap.pipelines.submit` run one job through `run`,
`kafkatap analyze` runs them all.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from kafkatap.dissect.tables.schema import ANOMALIES, BATCHES, FRAMES, RECORDS, SHARE
from kafkatap.pipelines import schema
from kafkatap.pipelines.inputs import check_inputs
from kafkatap.pipelines.storage import delete, exists, join_uri, read_table, window_interval, write_json, write_table
from kafkatap.pipelines.transforms import throughput
from kafkatap.pipelines.transforms.conflicts import ownership_conflicts
from kafkatap.pipelines.transforms.connections import connections
from kafkatap.pipelines.transforms.duplicates.table import duplicate_deliveries
from kafkatap.pipelines.transforms.e2e import e2e_latency
from kafkatap.pipelines.transforms.epochs import epoch_events
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.transforms.links import fetch_links
from kafkatap.pipelines.transforms.members import member_spans, members
from kafkatap.pipelines.transforms.producers import producers, transactions
from kafkatap.pipelines.transforms.rebalances import rebalances
from kafkatap.pipelines.transforms.share_members import share_members
from kafkatap.pipelines.transforms.share_records import share_records
from kafkatap.pipelines.transforms.share_spso import spso_pinned, spso_windows
from kafkatap.pipelines.transforms.summary import summary


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


Step = Callable[[Inputs, Mapping[str, DataFrame], str], dict[str, DataFrame]]


def _write(spark: SparkSession, report: str, tables: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """Write tables, then hand back the written copies so later steps read Parquet instead of recomputing."""
    for name, df in tables.items():
        write_table(df, report, name, schema.TABLES[name])
    return {name: read_table(spark, report, name, schema.TABLES[name]) for name in tables}


def session_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    return {
        "sessions/connections": connections(inp.frames),
        "sessions/members": members(inp.frames, inp.batches),
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
    """Reuses the members and fencings this run wrote; computes them when the jobs that write them did not run."""
    members_df = done.get("sessions/members")
    members_df = members_df if members_df is not None else members(inp.frames, inp.batches)
    fenced_df = done.get("fenced_epochs")
    fenced_df = fenced_df if fenced_df is not None else fenced_epochs(inp.frames, inp.batches)
    table = duplicate_deliveries(inp.frames, inp.batches, inp.records, inp.share, member_spans(members_df), fenced_df)
    return {"duplicate_deliveries": table}


def throughput_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    interval = window_interval(window)
    return {
        "throughput/data": throughput.data(inp.batches, interval),
        "throughput/requests": throughput.requests(inp.frames, interval),
        "throughput/lag": throughput.lag(inp.batches, interval),
    }


def rebalance_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    return {"rebalances": rebalances(inp.frames, inp.batches)}


def e2e_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    """Reuses the fetch links this run wrote; computes them when the sessions job did not run."""
    links = done.get("sessions/fetch_links")
    links = links if links is not None else fetch_links(inp.frames, member_spans(members(inp.frames, inp.batches)))
    return {"e2e_latency": e2e_latency(inp.batches, inp.records, links, window_interval(window))}


def conflict_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    members_df = done.get("sessions/members")
    members_df = members_df if members_df is not None else members(inp.frames, inp.batches)
    return {"ownership_conflicts": ownership_conflicts(inp.frames, inp.batches, member_spans(members_df))}


def share_record_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    return {"share_records": share_records(inp.frames, inp.share)}


def share_spso_tables(inp: Inputs, done: Mapping[str, DataFrame], window: str) -> dict[str, DataFrame]:
    """A step of its own: the SPSO is read off the share_records table as written."""
    records = done["share_records"]
    return {"share_spso/windows": spso_windows(records, inp.batches, window_interval(window)),
            "share_spso/pinned": spso_pinned(records, inp.frames)}


JOBS: dict[str, tuple[Step, ...]] = {
    "sessions": (session_tables, fetch_link_tables),
    "fenced_epochs": (fenced_tables,),
    "duplicate_deliveries": (duplicate_tables,),
    "throughput": (throughput_tables,),
    "share_records": (share_record_tables, share_spso_tables),
    "rebalances": (rebalance_tables,),
    "e2e_latency": (e2e_tables,),
    "ownership_conflicts": (conflict_tables,),
}


def existing_tables(spark: SparkSession, report: str) -> dict[str, DataFrame]:
    return {name: read_table(spark, report, name, sch) for name, sch in schema.TABLES.items()
            if exists(spark, join_uri(report, name))}


def run(spark: SparkSession, out: str, report: str, jobs: list[str], window: str = "1s",
        on_job: Callable[[str, float], None] | None = None) -> dict:
    """Run `jobs` in order (later jobs reuse earlier tables), then rewrite REPORT/summary.json; returns it.
    `on_job(job, seconds)` hears of each job as it finishes. OUT must be a dissector output (`check_inputs`), and the
    old summary.json goes first, so a run that fails part-way leaves no summary claiming a complete report."""
    window_interval(window)
    check_inputs(spark, out)
    delete(spark, join_uri(report, "summary.json"))
    inp = read_inputs(spark, out)
    done: dict[str, DataFrame] = {}
    for job in jobs:
        start = time.perf_counter()
        for step in JOBS[job]:
            done |= _write(spark, report, step(inp, done, window))
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
    from kafkatap.pipelines.spark import get_spark

    args = job_args(f"{job}.py", argv)
    spark = get_spark(f"kafkatap-{job}", args.master)
    run(spark, args.frames, args.out, [job], args.window)
    return 0
