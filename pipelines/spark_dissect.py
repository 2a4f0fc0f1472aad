"""`kafkatap dissect --master URL` and `spark-submit pipelines/submit/dissect.py`: one capture dissected on Spark, split
inside its files, writing what the local `kafkatap dissect --workers N` writes with N the partitions.

1. Tasks read byte ranges of the files (`split_size` each, dissect/packets/splits.py), parse the frames' headers and
   route them by connection (dissect/streams/spread.py) into a shuffle of `parts` partitions plus one more for the
   splits' counts, which the driver collects first (the shuffle is written once: the dissecting job reuses it).
2. The driver checks that every file's splits read what a read from its start reads; the files whose splits do not
   (a damaged file, a second pcapng section) are read again as one split each, in a second shuffle.
3. From the counts it builds the Timeline every partition replays; each partition sorts its pieces into capture
   order (pipelines/spill.py) and dissects them into part-<k> of each table, as local worker k would.
4. Topic names found by one partition are written into the others' parts and summary.json is written, as run.py does.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafkatap.dissect.packets.files import first_ts_us
from kafkatap.dissect.packets.pcap import CHUNK_SIZE, CaptureFormatError
from kafkatap.dissect.packets.splits import ranges
from kafkatap.dissect.run import conclude, dissect_part, read_keylogs
from kafkatap.dissect.streams.spread import Frames, Replay, SplitMeta, SplitTask, Timeline
from kafkatap.dissect.tables import publish
from kafkatap.pipelines import filesystems, timeline
from kafkatap.pipelines.spill import in_order

SPLIT_SIZE = 64 << 20
"""Bytes of a file one task reads: a multiple of the reader's chunk, so a split ends where a chunk of a whole-file
read ends (reading past that only finishes its last record)."""


def dissect_on_spark(spark: Any, files: list[str], out: str, *, ports: list[int], records: bool = False,
                     payloads: bool = False, tls_keylog: list[str] = (), split_size: int = SPLIT_SIZE,
                     parts: int | None = None, chunk_size: int = CHUNK_SIZE) -> dict:
    """Dissect the capture files (one capture, as `kafkatap dissect`) into out (a path every executor sees, or a
    URI); returns summary.json's content, which adds `splits` to the local run's. parts: partitions the connections
    are spread over (default: Spark's default parallelism)."""
    sc = spark.sparkContext
    parts = parts or sc.defaultParallelism
    keylog = read_keylogs(list(tls_keylog))
    readable, unreadable, sizes = _survey(files)
    plan = [(o, s, lo, hi) for o in range(len(readable))
            for s, (lo, hi) in enumerate(ranges(sizes[o], split_size))]
    shuffled, metas = _read(sc, readable, plan, parts, chunk_size)
    redo = timeline.disagreeing(metas)
    if redo:
        plan = [p for p in plan if p[0] not in redo] + [(o, 0, 0, sizes[o]) for o in redo]
        shuffled, metas = _read(sc, readable, plan, parts, chunk_size)
    line = sc.broadcast(timeline.timeline(readable, unreadable, metas))
    stats = timeline.packet_stats(metas, len(readable), {path: why for path, why, _ in unreadable})
    local = filesystems.is_local(out)
    settings = (ports, records, payloads, keylog, parts, line)

    def run(target: str) -> list[dict]:
        results = sc.runJob(shuffled, _dissecting(target, local, settings), range(parts))
        results.sort(key=lambda r: r["part"])
        return [_global(r, stats) if r["part"] == 0 else r for r in results]

    extra = {"splits": len(plan)}
    try:
        if local:
            with publish.staged(Path(filesystems.local_path(out))) as staging:
                return conclude(staging, list(files), run(str(staging)), list(tls_keylog), keylog, **extra)
        filesystems.clear_out(out)
        return filesystems.conclude_remote(out, list(files), run(out), list(tls_keylog), keylog, extra)
    finally:
        line.destroy()  # the timeline is held by the driver and every executor until destroyed


def _survey(files: list[str]) -> tuple[list[str], list[tuple[str, str, int]], list[int]]:
    """The readable files in order of their first packet (files without packets last), the others with why, and
    the readable ones' sizes."""
    order, bad = [], []
    for n, path in enumerate(files):
        try:
            with filesystems.open_input(path) as f:
                size = filesystems.size_of(f)
                ts = first_ts_us(path, f)
        except (CaptureFormatError, OSError) as e:
            bad.append((path, str(e), filesystems.size_or_zero(path)))
            continue
        order.append((ts if ts is not None else 1 << 62, n, path, size))
    order.sort()
    return [p for _, _, p, _ in order], bad, [size for *_, size in order]


def _read(sc: Any, paths: list[str], plan: list[tuple[int, int, int, int]], parts: int,
          chunk_size: int) -> tuple[Any, list[SplitMeta]]:
    """The shuffle of the splits' frames over parts + 1 partitions (the last one: their metas), and the metas."""
    def task(items: Iterator[tuple[int, int, int, int]]) -> Iterator[tuple[int, Any]]:
        for order, split, lo, hi in items:
            with filesystems.open_input(paths[order]) as f:
                reading = SplitTask(paths[order], f, order, split, lo, hi, parts, chunk_size)
                for part, key, frames in reading.routed():
                    yield part, (key, frames)
                yield parts, reading.meta

    shuffled = sc.parallelize(plan, len(plan)).mapPartitions(task).partitionBy(parts + 1, _identity)
    metas = sc.runJob(shuffled, _values, [parts])
    return shuffled, metas


def _identity(part: int) -> int:
    return part


def _values(pairs: Iterator[tuple[int, Any]]) -> Iterator[Any]:
    return (value for _, value in pairs)


def _dissecting(target: str, local: bool, settings: tuple) -> Any:
    """The task dissecting one partition into target (a local folder, or a URI its parts are uploaded to)."""
    ports, records, payloads, keylog, parts, line = settings

    def dissect(pairs: Iterator[tuple[int, tuple]]) -> Iterator[dict]:
        from pyspark import TaskContext

        part = TaskContext.get().partitionId()
        work = target if local else tempfile.mkdtemp(prefix="kafkatap-dissect-")
        try:
            with in_order((value for _, value in pairs), _cost) as pieces:
                result = dissect_part(work, ports, records, payloads, keylog, part, parts,
                                      _replaying(part, parts, line.value, pieces))
            if not local:
                filesystems.upload_parts(work, target)
        finally:
            if not local:
                shutil.rmtree(work, ignore_errors=True)
        yield {**result, "part": part}

    return dissect


def _replaying(part: int, parts: int, line: Timeline, pieces: Iterator[tuple]) -> Any:
    def read(sink: Any, rows: Any, out: Any) -> Any:
        return Replay(sink, (part, parts)).replay(line, pieces)

    return read


def _cost(frames: Frames) -> int:
    return len(frames.data) + 64 * len(frames.index)


def _global(result: dict, stats: Any) -> dict:
    """Part 0's result with the capture's packet counts (part 0 saw only its own packets), as summary.build takes
    them from the first part."""
    mine = result["stats"]
    stats.tcp_packets -= mine.slow_not_tcp  # every part followed the IP fragments; part 0 tells what they were
    for name in ("connections", "payload_bytes", "gap_bytes", "anomalies", "anomaly_bytes", "skipped_bytes"):
        setattr(stats, name, getattr(mine, name))
    return {**result, "stats": stats}
