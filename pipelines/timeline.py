"""What the driver of a Spark dissect works out between reading and dissecting: whether the splits of each file read
what a read from its start reads, and the Timeline (streams/spread.py) that every partition replays, from the splits'
counts. Pure functions of the splits' SplitMeta, so they are tested without Spark."""

from __future__ import annotations

from collections import defaultdict

from kafkatap.dissect.packets.splits import agree
from kafkatap.dissect.streams.driver import PacketStats
from kafkatap.dissect.streams.spread import FileRead, SplitMeta, Timeline, Window


def by_file(metas: list[SplitMeta]) -> dict[int, list[SplitMeta]]:
    """The splits' metas per file order, each file's in split order."""
    files: dict[int, list[SplitMeta]] = defaultdict(list)
    for meta in sorted(metas, key=lambda m: (m.order, m.split)):
        files[meta.order].append(meta)
    return files


def disagreeing(metas: list[SplitMeta]) -> list[int]:
    """The files (by order) whose splits do not read what a read from the start reads."""
    return [order for order, splits in by_file(metas).items() if not agree([m.outcome for m in splits])]


def timeline(paths: list[str], unreadable: list[tuple[str, str, int]], metas: list[SplitMeta]) -> Timeline:
    """The Timeline of the readable files `paths` (in capture order) from their splits' metas."""
    files, bases, now = [], {}, None
    for order, splits in by_file(metas).items():
        index = 0
        counts: dict[int, list[int]] = {}
        for m in splits:
            bases[(order, m.split)] = index
            index += m.packets
            for window, (n, latest) in m.windows.items():
                c = counts.setdefault(window, [0, latest])
                c[0] += n
                c[1] = max(c[1], latest)
        windows, end = [], 0
        for window in sorted(counts):
            end += counts[window][0]
            now = counts[window][1] if now is None else max(now, counts[window][1])
            windows.append(Window(order, window, end, now, []))
        at_end = []
        for m in splits:
            for kind, detail, nbytes, index_in_split, window in m.anomalies:
                anomaly = (kind, detail, nbytes, bases[(order, m.split)] + index_in_split)
                after = next((w for w in windows if w.window >= window), None)
                (after.anomalies if after is not None else at_end).append(anomaly)
        files.append(FileRead(paths[order], windows, at_end, now))
    return Timeline(unreadable, files, bases)


def packet_stats(metas: list[SplitMeta], files: int, unreadable: dict[str, str]) -> PacketStats:
    """The capture's packet counts, as one local reader of every file counts them."""
    ordered = sorted(metas, key=lambda m: (m.order, m.split))
    firsts = [m.first_ts_us for m in ordered if m.first_ts_us is not None]
    lasts = [latest for m in metas for _, latest in m.windows.values()]
    return PacketStats(packets=sum(m.packets for m in metas), bytes=sum(m.bytes for m in metas),
                       tcp_packets=sum(m.tcp_packets for m in metas), files=files,
                       first_ts_us=firsts[0] if firsts else None, last_ts_us=max(lasts) if lasts else None,
                       unreadable_files=unreadable)
