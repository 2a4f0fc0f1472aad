"""The dissector's entry point: captures in, Parquet tables and summary.json out.

With workers > 1 the run is split over processes by connection: every worker reads the whole capture (the packet
layer is numpy and cheap) but follows only the connections whose key hashes to it, and writes its own part of each
table (OUT/<table>/part-0000k.parquet). Kafka pairs within a connection, so nothing crosses workers except topic
names, merged at the end. It pays off on captures of many small messages (the per-message Python work dominates)
when cores are free; on bulk traffic the packet layer dominates and every worker repeats it, so one is the default.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dissect import summary as summary_mod
from dissect.schema import TABLES
from dissect.sink import Sink
from dissect.streams import run_streams
from dissect.writer import Output, clear, part_name

_progress_counter: Any = None  # shared input-byte counter of worker 0, when a progress bar is shown


def dissect_captures(paths: list[str], out_dir: str, *, ports: Iterable[int] = (9092,), records: bool = False,
                     payloads: bool = False, progress: bool = False, workers: int = 1) -> dict:
    """Dissect the capture files (one capture, in time order) into out_dir; returns the summary.json content.

    Tables: frames/, batches/, share/, anomalies/, and records/ with records=True (key/value bytes only with
    payloads=True). Problems in the input never raise: they become anomaly rows. workers: processes to split the
    connections over (1: in-process).
    """
    paths = [str(p) for p in paths]
    out = Path(out_dir)
    tables = {name: schema for name, schema in TABLES.items() if records or name != "records"}
    out.mkdir(parents=True, exist_ok=True)
    clear(out, tables)
    total = sum(os.path.getsize(p) for p in paths if os.path.isfile(p))
    n = max(1, workers)
    args = (paths, str(out), sorted(set(ports)), records, payloads)
    with _progress_bar(total, progress) as bar:
        if n == 1:
            parts = [_dissect_part(*args, 0, 1, bar)]
        else:
            parts = _run_workers(args, n, bar)
    names: dict[str, str] = {}
    for part in parts:
        names.update(part["names"])
    late: dict[str, int] = {}
    for k, part in enumerate(parts):
        for table, count in part["topics"].rewrite(out, part_name(k), names).items():
            late[table] = late.get(table, 0) + count
    result = summary_mod.build(paths, parts, late)
    with open(out / "summary.json", "w") as f:
        json.dump(result, f, indent=1)
    return result


def _dissect_part(paths: list[str], out_dir: str, ports: list[int], records: bool, payloads: bool, part: int,
                  parts: int, progress: Callable[[int], None] | None = None) -> dict:
    """One worker: the connections hashing to `part`; returns what the summary and the topic rewrite need."""
    tables = {name: schema for name, schema in TABLES.items() if records or name != "records"}
    out = Output(out_dir, tables, part)
    sink = Sink(out, set(ports), records=records, payloads=payloads, part=(part, parts))
    if progress is None and part == 0 and _progress_counter is not None:
        progress = _count_progress
    try:
        stats = run_streams(paths, sink, progress=progress)
    finally:
        rows = out.close()
    return {"stats": stats, "rows": rows, "out_of_range": out.out_of_range(), "connections": sink.connections,
            "messages": sink.rows.messages, "statuses": sink.rows.statuses, "anomalies": sink.rows.anomaly_counts,
            "streams": sink.streams, "warnings": sink.warnings, "names": sink.topics.names, "topics": sink.topics}


def _count_progress(n: int) -> None:
    with _progress_counter.get_lock():
        _progress_counter.value += n


def _init_worker(counter: Any) -> None:
    global _progress_counter
    _progress_counter = counter


def _run_workers(args: tuple, n: int, bar: Callable[[int], None] | None) -> list[dict]:
    """Run n workers in fresh (spawned) processes; while they run, feed worker 0's progress to the bar."""
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("q", 0)
    with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker, initargs=(counter,)) as pool:
        futures = [pool.submit(_dissect_part, *args, k, n) for k in range(n)]
        seen = 0
        while wait(futures, timeout=0.2).not_done:
            if bar is not None:
                now = counter.value
                bar(now - seen)
                seen = now
        return [f.result() for f in futures]


@contextmanager
def _progress_bar(total: int, enabled: bool) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar over input bytes (on stderr), or nothing."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    with Progress("dissect", BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("dissect", total=total)
        yield lambda n: bar.advance(task, n)
