"""The dissector's entry point: captures in, Parquet tables and summary.json out.

With workers > 1 the run is split over processes by connection: every worker reads the capture file and parses the
packet headers (compiled, a few ns per packet), keeps only the segments of the connections whose endpoints hash to it
(streams/workers.py) and writes its own part of each table (OUT/<table>/part-0000k.parquet). Kafka pairs within a
connection, so nothing crosses workers except topic names, merged at the end. It pays off on captures of many small
messages when cores are free; on bulk traffic with few connections reading the file dominates, so one is the default.

A streamed run (ordered=True, what `kafkatap capture --dissect` does) takes the files one at a time as a live
capture closes them and dissects each at once. Every few seconds, at a file boundary, it closes the tables' files
written so far (part-00000, part-00001, ...) so OUT can be read while the capture goes on; the tables' content at the
end is the same as a run over the whole list.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from threading import Event
from typing import Any

from kafkatap.dissect.kafka.sink import Sink
from kafkatap.dissect.kafka.topics import TopicNames
from kafkatap.dissect.streams.driver import PacketStats, run_streams
from kafkatap.dissect.tables import publish
from kafkatap.dissect.tables import summary as summary_mod
from kafkatap.dissect.tables.rows import Rows
from kafkatap.dissect.tables.schema import TABLES
from kafkatap.dissect.tables.topic_rewrite import rewrite, rewrite_streamed
from kafkatap.dissect.tables.writer import Output, part_name
from kafkatap.dissect.tls import KeyLog
from kafkatap.errors import UsageError

PUBLISH_EVERY = 5.0
"""Seconds between two publications of a streamed run's Parquet: fresh enough to follow a capture, and few
enough files that a day-long capture does not drown its readers in small files."""

_progress_counter: Any = None  # shared input-byte counter of worker 0, when a progress bar is shown
_stop_event: Any = None  # a worker's view of the run's stop request

OnProgress = Callable[[int, int], None]


def dissect_captures(paths: Iterable[str], out_dir: str, *, ports: Iterable[int] = (9092,), records: bool = False,
                     payloads: bool = False, progress: bool = False, workers: int = 1, ordered: bool = False,
                     publish_every: float = PUBLISH_EVERY, on_progress: OnProgress | None = None,
                     stop: Event | None = None, tls_keylog: Iterable[str] = ()) -> dict:
    """Dissect the capture files (one capture) into out_dir; returns the summary.json content.

    Tables: frames/, batches/, share/, anomalies/, and records/ with records=True (key/value bytes only with
    payloads=True). Problems in the input never raise: they become anomaly rows. workers: processes to split the
    connections over (1: in-process). The files are read in order of their first packet, unless ordered=True:
    then they are taken as already in time order and consumed lazily (a live ring yields each file once closed),
    each dissected as it comes, and the Parquet written so far is published (closed and named) at the first file
    boundary every publish_every seconds. on_progress(messages, nbytes) is called as the run goes with the Kafka
    messages dissected and the capture bytes read so far. Streamed runs and on_progress need workers=1.
    Once `stop` is set the run ends within a chunk, as if the input ended there, and publishes what it read
    (summary `interrupted`). out_dir appears whole when the run ends (publish.py): an earlier output there is
    replaced, a failed run leaves it as it was; a streamed run writes in out_dir as it goes.
    tls_keylog: NSS key log files (SSLKEYLOGFILE format) to decrypt TLS on the Kafka ports with; a file that cannot
    be read raises UsageError before anything is written. Without any, TLS connections are counted, not decrypted.
    """
    if (ordered or on_progress is not None) and workers > 1:
        raise ValueError("a streamed run (ordered=True) and on_progress need workers=1")
    out = Path(out_dir)
    keylogs = [str(path) for path in tls_keylog]
    keylog = read_keylogs(keylogs)
    if ordered:
        publish.replace_in_place(out)
        return _dissect(paths, out, ports, records, payloads, progress, workers, ordered, publish_every, on_progress,
                        stop, keylogs, keylog)
    with publish.staged(out) as staging:
        return _dissect(paths, staging, ports, records, payloads, progress, workers, ordered, publish_every,
                        on_progress, stop, keylogs, keylog)


def read_keylogs(paths: list[str]) -> KeyLog | None:
    """The key log files merged (None without any). Their lines never fail a run (bad ones are counted); a file
    that cannot be read is a wrong argument."""
    if not paths:
        return None
    try:
        return KeyLog.from_files(paths)
    except OSError as exc:
        raise UsageError(f"cannot read the TLS key log {exc.filename or paths[0]}: {exc.strerror or exc}") from None


def _dissect(paths: Iterable[str], out: Path, ports: Iterable[int], records: bool, payloads: bool, progress: bool,
             workers: int, ordered: bool, publish_every: float, on_progress: OnProgress | None,
             stop: Event | None, keylogs: list[str], keylog: KeyLog | None) -> dict:
    seen: list[str] = []  # the files, as they come
    if ordered:
        total = None
        files: Iterable[str] = _noting(paths, seen)
    else:
        seen += [str(p) for p in paths]
        total = sum(os.path.getsize(p) for p in seen if os.path.isfile(p))
        files = seen
    n = max(1, workers)
    args = (files, str(out), sorted(set(ports)), records, payloads, keylog)
    with _progress_bar(total, progress) as bar:
        if n == 1:
            parts = [_dissect_part(*args, 0, 1, bar, ordered, publish_every, on_progress,
                                   stop.is_set if stop is not None else None)]
        else:
            parts = _run_workers(args, n, bar, stop)
    return conclude(out, seen, parts, keylogs, keylog, ordered)


def conclude(out: Path, files: list[str], parts: list[dict], keylogs: list[str], keylog: KeyLog | None,
             ordered: bool = False, **extra: Any) -> dict:
    """The end of a run whose parts (dissect_part's results) are written in out: topic ids that one part named
    rewritten in every part, and summary.json (with `extra` keys) written and returned."""
    names: dict[str, str] = {}
    for part in parts:
        names.update(part["names"])
    late: dict[str, int] = {}
    for k, part in enumerate(parts):
        fixed = rewrite_streamed(out, part["unresolved"], names) if ordered else \
            rewrite(out, part_name(k), part["unresolved"], names)
        for table, count in fixed.items():
            late[table] = late.get(table, 0) + count
    result = {**summary_mod.build(files, parts, late, summary_mod.tls(keylogs, keylog, parts)), **extra}
    with open(out / "summary.json", "w") as f:
        json.dump(result, f, indent=1)
    return result


def _dissect_part(paths: Iterable[str], out_dir: str, ports: list[int], records: bool, payloads: bool,
                  keylog: KeyLog | None, part: int, parts: int, progress: Callable[[int], None] | None = None,
                  ordered: bool = False, publish_every: float = PUBLISH_EVERY, on_progress: OnProgress | None = None,
                  stop: Callable[[], bool] | None = None) -> dict:
    """One worker: the connections hashing to `part`, read from the files."""
    if progress is None and part == 0 and _progress_counter is not None:
        progress = _count_progress
    if stop is None and _stop_event is not None:
        stop = _stop_event.is_set

    def read(sink: Sink, rows: Rows, out: Output) -> PacketStats:
        files, shown = paths, progress
        if on_progress is not None:
            shown = _reporting(rows, on_progress, progress)
        if ordered:
            files = _publishing(paths, out, publish_every)
        return run_streams(files, sink, progress=shown, ordered=ordered, part=(part, parts), stop=stop)

    return dissect_part(out_dir, ports, records, payloads, keylog, part, parts, read)


def dissect_part(out_dir: str, ports: list[int], records: bool, payloads: bool, keylog: KeyLog | None, part: int,
                 parts: int, read: Callable[[Sink, Rows, Output], PacketStats]) -> dict:
    """Part `part` of `parts` of a run, the connections hashing to it, written in out_dir/<table>/part-<part>:
    read(sink, rows, out) feeds them (from the files, or a Spark partition's frames). Returns what the summary and
    the topic rewrite need."""
    tables = {name: schema for name, schema in TABLES.items() if records or name != "records"}
    out = Output(out_dir, tables, part)
    topics = TopicNames()
    rows = Rows(out, topics, records=records, payloads=payloads)
    sink = Sink(rows, topics, set(ports), part=(part, parts), keylog=keylog)
    try:
        with _few_collections():
            stats = read(sink, rows, out)
    except BaseException:
        out.abort()
        raise
    written = out.close()
    return {"stats": stats, "with_payload": sink.with_payload, "rows": written, "out_of_range": out.out_of_range(),
            "connections": sink.connections, "tls_outcomes": sink.tls_outcomes, "messages": rows.messages,
            "statuses": rows.statuses, "anomalies": rows.anomaly_counts, "streams": sink.streams,
            "warnings": sink.warnings, "names": topics.names, "unresolved": topics.unresolved}


@contextmanager
def _few_collections() -> Iterator[None]:
    """Run the collector's youngest generation every 100,000 allocations instead of 700: a run allocates millions
    of short-lived rows and messages (and lets them go once a row group is written), and at the default threshold
    the collector spends about a tenth of the run rescanning them. Older generations keep their default ratios."""
    old = gc.get_threshold()
    gc.set_threshold(100_000, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _noting(paths: Iterable[str], seen: list[str]) -> Iterator[str]:
    for path in paths:
        seen.append(str(path))
        yield str(path)


def _publishing(paths: Iterable[str], out: Output, every: float) -> Iterator[str]:
    """The files, passed on; when the dissector asks for the next one (it has read the last to its end) and
    `every` seconds have passed, the tables' rows so far are published before it waits for that file."""
    part, last = 0, time.monotonic()
    for path in paths:
        yield path
        if time.monotonic() - last >= every:
            part += 1
            out.roll(part)
            last = time.monotonic()


def _reporting(rows: Rows, on_progress: OnProgress, progress: Callable[[int], None] | None) -> Callable[[int], None]:
    """A run_streams progress callback that also tells on_progress the messages and bytes so far."""
    done = 0

    def report(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(n)
        on_progress(sum(rows.messages.values()), done)

    return report


def _count_progress(n: int) -> None:
    with _progress_counter.get_lock():
        _progress_counter.value += n


def _init_worker(counter: Any, stop: Any) -> None:
    """Workers ignore Ctrl-C (the terminal sends it to them too): the parent decides, and tells them through
    `stop`, so each closes its files cleanly."""
    global _progress_counter, _stop_event
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _progress_counter, _stop_event = counter, stop


def _run_workers(args: tuple, n: int, bar: Callable[[int], None] | None, stop: Event | None) -> list[dict]:
    """Run n workers in fresh (spawned) processes; while they run, feed worker 0's progress to the bar and pass on
    a stop request (the run's own, or a worker's failure: the others then stop too instead of running on)."""
    import multiprocessing  # here, not at the top: a one-process run (the usual one) need not pay their import
    from concurrent.futures import ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    counter, shared_stop = ctx.Value("q", 0), ctx.Event()
    with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker, initargs=(counter, shared_stop)) as pool:
        futures = [pool.submit(_dissect_part, *args, k, n) for k in range(n)]
        seen = 0
        try:
            while (state := wait(futures, timeout=0.2)).not_done:
                if (stop is not None and stop.is_set()) or any(f.exception() for f in state.done):
                    shared_stop.set()
                if bar is not None:
                    now = counter.value
                    bar(now - seen)
                    seen = now
        except BaseException:
            shared_stop.set()
            raise
        return [f.result() for f in futures]


@contextmanager
def _progress_bar(total: int | None, enabled: bool) -> Iterator[Callable[[int], None] | None]:
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
