"""The dissector's entry point: captures in, Parquet tables and summary.json out."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dissect import summary as summary_mod
from dissect.schema import TABLES
from dissect.sink import Sink
from dissect.streams import run_streams
from dissect.writer import Output


def dissect_captures(paths: list[str], out_dir: str, *, ports: Iterable[int] = (9092,), records: bool = False,
                     payloads: bool = False, progress: bool = False) -> dict:
    """Dissect the capture files (one capture, in time order) into out_dir; returns the summary.json content.

    Tables: frames/, batches/, share/, anomalies/, and records/ with records=True (key/value bytes only with
    payloads=True). Problems in the input never raise: they become anomaly rows.
    """
    paths = [str(p) for p in paths]
    tables = {name: schema for name, schema in TABLES.items() if records or name != "records"}
    out = Output(out_dir, tables)
    sink = Sink(out, set(ports), records=records, payloads=payloads)
    try:
        with _progress_bar(paths, progress) as advance:
            stats = run_streams(paths, sink, progress=advance)
    finally:
        rows = out.close()
    late = sink.topics.rewrite(Path(out_dir))
    result = summary_mod.build(paths, stats, sink, rows, late)
    with open(Path(out_dir) / "summary.json", "w") as f:
        json.dump(result, f, indent=1)
    return result


@contextmanager
def _progress_bar(paths: list[str], enabled: bool) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar over input bytes (on stderr), or nothing."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    total = sum(os.path.getsize(p) for p in paths if os.path.isfile(p))
    with Progress("dissect", BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                  transient=True) as bar:
        task = bar.add_task("dissect", total=total)
        yield lambda n: bar.advance(task, n)
