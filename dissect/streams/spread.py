"""One capture dissected by many tasks: splits of its files read apart, their frames routed to the part (a Spark
partition) that follows their connection, and each part replaying its frames as `--workers N` worker k would.

The map side (`SplitTask`) reads one split (packets/splits.py), parses its frames' headers and sends each part what
local worker k of a `--workers N` run looks at: the frames of its own connections (workers.owner), the frames of the
slow path (IP fragments, IPv6 extension headers: every worker reassembles those), and, to part 0, the frames that
become packet-level anomalies (bad headers, unknown link types, snapped packets). Frames that only count (ARP, UDP, pure
non-TCP) stay behind: the counts go into the split's `meta`. Each piece is keyed by (file, read chunk, split, seq) so
a part can put its pieces back into capture order.

The reduce side (`Replay`) is the driver of worker k, fed a `Timeline` instead of files: the chunks of the whole-file
reads that hold packets, each with its packet index and the capture time reached (the latest packet so far over every
connection), so connections idle out, fragments expire and anomalies are placed exactly where the local run puts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO, NamedTuple

import numpy as np

from kafkatap.dissect.packets import frames as fr
from kafkatap.dissect.packets.arrays import distinct
from kafkatap.dissect.packets.pcap import CHUNK_SIZE, Chunk
from kafkatap.dissect.packets.splits import Outcome, Split
from kafkatap.dissect.streams.driver import Driver, PacketStats
from kafkatap.dissect.streams.reassembly import StreamSink, Where
from kafkatap.dissect.streams.workers import owners

PROBLEMS = np.array([fr.UNKNOWN_LINK, fr.BAD_LINK, fr.BAD_IP, fr.SHORT_IP, fr.BAD_TCP, fr.SHORT_TCP])
"""Verdicts that part 0 reports as anomalies (it also gets every snapped frame)."""

Key = tuple[int, int, int, int]  # (file order, read chunk, split, seq): capture order of the pieces


class Frames(NamedTuple):
    """Some frames of one chunk, with their bytes back to back."""

    split: int
    index: np.ndarray  # index of each frame within its split
    caplen: np.ndarray
    origlen: np.ndarray
    ts_us: np.ndarray
    linktype: np.ndarray
    data: bytes


class SplitMeta(NamedTuple):
    """What a split found, for the run's driver: where its records start and go on, and the counts of every frame."""

    order: int  # the file's place in the capture
    split: int
    outcome: Outcome
    packets: int
    bytes: int
    tcp_packets: int
    first_ts_us: int | None
    windows: dict[int, tuple[int, int]]  # read chunk -> (packets, latest timestamp)
    anomalies: list[tuple[str, str, int, int, int]]  # (kind, detail, bytes, index in the split, read chunk)


class SplitTask:
    """One split of one file read and routed over `parts` parts: `routed()` yields (part, key, Frames), then `meta`
    holds the split's SplitMeta."""

    def __init__(self, path: str, f: BinaryIO, order: int, split: int, lo: int, hi: int, parts: int,
                 chunk_size: int = CHUNK_SIZE) -> None:
        self.reading = Split(path, f, lo, hi, chunk_size)
        self.order, self.split, self.parts = order, split, parts
        self.meta: SplitMeta | None = None

    def routed(self) -> Iterator[tuple[int, Key, Frames]]:
        r = self.reading
        packets = nbytes = tcp = 0
        first: int | None = None
        windows: dict[int, tuple[int, int]] = {}
        try:
            for seq, (c, window) in enumerate(r.pieces()):
                n = len(c.off)
                if first is None:
                    first = int(c.ts_us[0])
                count, latest = windows.get(window, (0, int(c.ts_us[0])))
                windows[window] = (count + n, max(latest, int(c.ts_us.max())))
                packets += n
                nbytes += int(c.caplen.sum())
                f = fr.frames(c)
                tcp += int(np.count_nonzero(f.verdict >= fr.SLOW))
                for part, pos in self.destinations(c, f):
                    yield part, (self.order, window, self.split, seq), self.select(c, pos)
        finally:
            r.close()
        outcome = Outcome(r.lo, r.hi, r.start, r.next_start, r.plain)
        anomalies = [(a.kind, a.detail, a.nbytes, a.packet_index, w) for a, w in r.anomalies]
        self.meta = SplitMeta(self.order, self.split, outcome, packets, nbytes, tcp, first, windows, anomalies)

    def destinations(self, c: Chunk, f: fr.Frames) -> Iterator[tuple[int, np.ndarray]]:
        """(part, positions of the chunk's frames it gets), for the parts that get any."""
        owner = np.full(len(c.off), -1, np.int64)
        for cols in (f.segments, f.acks):
            owner[cols.index] = owners(cols.src_hi, cols.src_lo, cols.dst_hi, cols.dst_lo, cols.ports, self.parts)
        everyone = f.verdict == fr.SLOW
        problems = np.isin(f.verdict, PROBLEMS) | (c.caplen < c.origlen)
        parts = set(range(self.parts)) if everyone.any() else set(distinct(owner[owner >= 0]))
        if problems.any():
            parts.add(0)
        for part in sorted(parts):
            yield part, np.flatnonzero((owner == part) | everyone | (problems if part == 0 else False))

    def select(self, c: Chunk, pos: np.ndarray) -> Frames:
        lens = c.caplen[pos]
        to = np.cumsum(lens) - lens
        data = c.data[np.repeat(c.off[pos] - to, lens) + np.arange(int(lens.sum()))].tobytes()
        return Frames(self.split, c.index0 + pos, lens, c.origlen[pos], c.ts_us[pos], c.linktype[pos], data)


class Window(NamedTuple):
    """A chunk of a whole-file read that holds packets: what every part needs at its end."""

    order: int
    window: int
    end_index: int  # packets of the file up to its end
    now: int  # the latest packet time of the capture so far
    anomalies: list[tuple[str, str, int, int]]  # the file's reader anomalies reported after it (kind, detail, ...)


class FileRead(NamedTuple):
    """One readable file of the capture as the local run reads it: its chunks with packets, in order."""

    path: str
    windows: list[Window]
    anomalies: list[tuple[str, str, int, int]]  # (kind, detail, bytes, packet index) reported when it ends
    now: int | None  # the latest packet time when it ends


class Timeline(NamedTuple):
    """The capture as every part replays it: files that are not captures, then the readable ones in order, and
    the packet index where each split of each file starts (by (file order, split))."""

    unreadable: list[tuple[str, str, int]]  # (path, why, size)
    files: list[FileRead]
    bases: dict[tuple[int, int], int]


class Replay(Driver):
    """Worker `part` of `parts`, fed its pieces (in capture order) and the timeline instead of reading files."""

    def __init__(self, sink: StreamSink, part: tuple[int, int], **limits: int) -> None:
        super().__init__(sink, None, CHUNK_SIZE, part, limits)

    def replay(self, timeline: Timeline, pieces: Iterable[tuple[Key, Frames]]) -> PacketStats:
        for path, why, size in timeline.unreadable:
            self.bad_file(path, why, size)
        stream = _Peek(iter(pieces))
        for order, read in enumerate(timeline.files):
            self.start_file(read.path)
            for w in read.windows:
                self.index, self.stats.last_ts_us = w.end_index, w.now
                got = stream.take((order, w.window))
                if got:
                    self.chunk(*_chunk(got, timeline.bases, order))
                self.reader_anomalies(w.anomalies, w.now)
                self.after_chunk(w.now)
            self.stats.last_ts_us = read.now
            self.reader_anomalies(read.anomalies, read.now)
        return self.finish()

    def reader_anomalies(self, anomalies: list[tuple[str, str, int, int]], now: int | None) -> None:
        for kind, detail, nbytes, index in anomalies:
            self.report(kind, detail, Where(self.file, index, now), nbytes)
            self.skip(kind, nbytes)


class _Peek:
    """The pieces, taken a read chunk at a time."""

    def __init__(self, it: Iterator[tuple[Key, Frames]]) -> None:
        self.it = it
        self.head = next(it, None)

    def take(self, where: tuple[int, int]) -> list[Frames]:
        got = []
        while self.head is not None and self.head[0][:2] <= where:
            if self.head[0][:2] == where:
                got.append(self.head[1])
            self.head = next(self.it, None)
        return got


def _chunk(pieces: list[Frames], bases: dict[tuple[int, int], int], order: int) -> tuple[Chunk, np.ndarray]:
    """One chunk of a part's frames of a read chunk, and their packet indices in the file."""
    caplen = np.concatenate([p.caplen for p in pieces])
    buf = b"".join(p.data for p in pieces)
    index = np.concatenate([p.index + bases[(order, p.split)] for p in pieces])
    off = np.cumsum(caplen) - caplen
    chunk = Chunk(buf, np.frombuffer(buf, np.uint8), off, caplen, np.concatenate([p.origlen for p in pieces]),
                  np.concatenate([p.ts_us for p in pieces]), np.concatenate([p.linktype for p in pieces]), 0, 0)
    return chunk, index
