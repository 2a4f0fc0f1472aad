"""The stream layer's driver: capture files in, ordered TCP byte streams out (to a StreamSink).

Each chunk of frames is parsed down to the TCP header at once (packets/frames.py: the compiled core, or numpy); Python
runs once per TCP segment that carries payload or SYN/FIN/RST, plus a slower path for IP fragments and IPv6 extension
headers. Pure ACKs stay columns, except while some stream has a hole: then they go to the reassembler too, whose ACK
numbers tell a hole the capture missed (the receiver acknowledged it) from one a retransmission will still fill.
Every frame that does not reach the reassembler is counted by reason in `PacketStats.skipped_bytes`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from kafkatap.dissect import native
from kafkatap.dissect.packets import frames as fr
from kafkatap.dissect.packets import ip, tcp
from kafkatap.dissect.packets.ahead import ReadAhead
from kafkatap.dissect.packets.arrays import distinct
from kafkatap.dissect.packets.files import first_ts_us, open_capture
from kafkatap.dissect.packets.pcap import CHUNK_SIZE, Anomaly, CaptureFormatError, Chunk, PcapReader
from kafkatap.dissect.packets.pcapng import PcapngReader
from kafkatap.dissect.streams.analysis import analyse
from kafkatap.dissect.streams.reassembly import Conn, Reassembler, StreamSink, Where
from kafkatap.dissect.streams.workers import owners

_compiled = native.extension("kafkatap.dissect.streams._driver")


@dataclass
class PacketStats:
    packets: int = 0
    bytes: int = 0  # captured frame bytes
    tcp_packets: int = 0
    non_tcp_packets: int = 0
    slow_not_tcp: int = 0  # of tcp_packets, the IP fragments (or IPv6 extension headers) that were not TCP after all
    files: int = 0  # capture files read (files that are not captures are anomalies instead)
    first_ts_us: int | None = None
    last_ts_us: int | None = None
    connections: int = 0  # connections that carried payload (the ones the sink saw)
    payload_bytes: int = 0  # stream bytes delivered with on_data
    gap_bytes: int = 0  # stream bytes reported lost with on_gap
    anomalies: dict[str, int] = field(default_factory=dict)  # kind -> occurrences
    anomaly_bytes: dict[str, int] = field(default_factory=dict)  # kind -> bytes they cost
    skipped_bytes: dict[str, int] = field(default_factory=dict)  # reason -> bytes not delivered as stream data
    interrupted: bool = False  # stop() asked the run to end before the input did
    files_unread: list[str] = field(default_factory=list)  # files an interrupted run did not reach
    unreadable_files: dict[str, str] = field(default_factory=dict)  # path -> why it is not a capture it could read


def run_streams(paths: Iterable[str], sink: StreamSink, *, progress: Callable[[int], None] | None = None,
                ordered: bool = False, chunk_size: int = CHUNK_SIZE, part: tuple[int, int] = (0, 1),
                stop: Callable[[], bool] | None = None, **limits: int) -> PacketStats:
    """Reassemble every TCP connection of the capture files (one capture, in order of their first packet).

    ordered=True: the files come already in time order, possibly one at a time from a live capture's ring, so
    each is read as soon as the iterable yields it (connections carry on across files) and the iterable is asked
    for the next one only after the previous file has been read to its end.
    progress(n) is called after each chunk with the number of file bytes consumed since the previous call.
    part=(k, n): worker k of n; the segments of connections another worker owns (workers.owner) are dropped as soon
    as their headers are parsed, except the few that take the slow path (IP fragments): the sink drops those.
    stop() is asked after every chunk: once it says True the run ends as if the input ended there (open
    connections are finished, so the byte account still balances) and the stats say `interrupted`.
    limits are passed to the Reassembler (max_buffer, max_total, idle_timeout_us, linger_us)."""
    return Driver(sink, progress, chunk_size, part, limits, stop).run(paths, ordered)


def _never() -> bool:
    return False


class Driver:
    """Capture files in, TCP segments to the reassembler, one chunk of frames at a time (run_streams)."""

    def __init__(self, sink: StreamSink, progress: Callable[[int], None] | None, chunk_size: int,
                 part: tuple[int, int], limits: dict[str, int], stop: Callable[[], bool] | None = None) -> None:
        self.sink = sink
        self.stop = stop or _never
        self.part, self.parts = part
        self.progress = progress
        self.chunk_size = chunk_size
        self.stats = PacketStats()
        self.reasm = Reassembler(sink, self.report, self.stats.skipped_bytes, **limits)
        self.deliver = native.pick(deliver, _compiled)  # chosen once per run
        self.frags = ip.Fragments()
        self.file = ""
        self.index = 0
        self.unknown_links: set[int] = set()  # link types already reported for the current file

    def report(self, kind: str, detail: str, where: Where, nbytes: int, conn: Conn | None = None,
               side: int | None = None) -> None:
        s = self.stats
        s.anomalies[kind] = s.anomalies.get(kind, 0) + 1
        s.anomaly_bytes[kind] = s.anomaly_bytes.get(kind, 0) + nbytes
        self.sink.on_anomaly(kind, detail, where, nbytes, conn, side)

    def skip(self, reason: str, nbytes: int) -> None:
        if nbytes:
            self.stats.skipped_bytes[reason] = self.stats.skipped_bytes.get(reason, 0) + nbytes

    def run(self, paths: Iterable[str], ordered: bool) -> PacketStats:
        order = paths if ordered else self.by_first_packet(paths)
        for n, path in enumerate(order):
            if self.stop():
                self.stats.interrupted = True
                if isinstance(order, list):
                    self.stats.files_unread = order[n:]
                break
            try:
                reader = open_capture(path, self.chunk_size)
            except (CaptureFormatError, OSError) as e:
                self.bad_file(path, e)
                continue
            self.read_file(path, reader)
        return self.finish()

    def finish(self) -> PacketStats:
        """The end of the capture: every connection still open is closed where the last chunk ended."""
        self.reasm.finish(self.index)
        self.frags.flush()
        self.fragment_anomalies()
        s, r = self.stats, self.reasm
        s.connections, s.payload_bytes, s.gap_bytes = r.connections, r.payload_bytes, r.gap_bytes
        return s

    def by_first_packet(self, paths: Iterable[str]) -> list[str]:
        """The readable files in order of their first packet (files without packets last)."""
        order = []
        for n, path in enumerate(paths):
            try:
                ts = first_ts_us(path)
            except (CaptureFormatError, OSError) as e:
                self.bad_file(path, e)
                continue
            order.append((ts if ts is not None else 1 << 62, n, path))
        return [path for _, _, path in sorted(order)]

    def bad_file(self, path: str, error: Exception | str, size: int | None = None) -> None:
        if size is None:
            size = os.path.getsize(path) if os.path.isfile(path) else 0
        self.stats.unreadable_files[path] = str(error)
        self.report("bad_capture_file", str(error), Where(path, None, None), size)
        self.skip("bad_capture_file", size)

    def start_file(self, path: str) -> None:
        self.file = self.reasm.file = path
        self.stats.files += 1
        self.unknown_links.clear()

    def after_chunk(self, now: int | None) -> None:
        """What follows each chunk of a file: fragments and connections idle since before `now` are let go."""
        self.frags.expire(now)
        self.fragment_anomalies()
        self.reasm.sweep(now, self.index)

    def read_file(self, path: str, reader: PcapReader | PcapngReader) -> None:
        self.start_file(path)
        size = os.path.getsize(path)  # now, while it is open: a live ring may delete it once read
        consumed = 0
        ahead = ReadAhead(reader)
        try:
            for chunk, anomalies in ahead:
                self.chunk(chunk)
                self.file_anomalies(anomalies)
                consumed += chunk.nbytes
                if self.progress:
                    self.progress(chunk.nbytes)
                self.after_chunk(self.stats.last_ts_us)
                if self.stop():
                    self.stats.interrupted = True
                    return
            self.file_anomalies(ahead.rest)
        finally:
            ahead.close()
            reader.close()
        if self.progress:
            self.progress(size - consumed)

    def file_anomalies(self, anomalies: list[Anomaly]) -> None:
        for a in anomalies:
            self.report(a.kind, a.detail, Where(self.file, a.packet_index, self.stats.last_ts_us), a.nbytes)
            self.skip(a.kind, a.nbytes)

    def fragment_anomalies(self) -> None:
        for reason, nbytes in self.frags.dropped:
            self.report(reason, f"an IP datagram of which {nbytes} bytes of fragments arrived was never completed",
                        Where(self.file, self.index, self.stats.last_ts_us), nbytes)
            self.skip(reason, nbytes)
        self.frags.dropped.clear()

    def count(self, c: Chunk) -> None:
        s = self.stats
        n = len(c.off)
        s.packets += n
        s.bytes += int(c.caplen.sum())
        if s.first_ts_us is None:
            s.first_ts_us = int(c.ts_us[0])
        s.last_ts_us = max(s.last_ts_us or 0, int(c.ts_us.max()))
        self.index = c.index0 + n

    def chunk(self, c: Chunk, index: np.ndarray | None = None) -> None:
        """The frames of a chunk. index: each frame's packet index when the chunk holds a selection of a file's
        frames (a Spark partition's share, streams/spread.py; counted by whoever selected them), else they are
        numbered from c.index0 on and counted here."""
        s = self.stats
        n = len(c.off)
        if index is None:
            self.count(c)
            at = _Numbering(c.index0, None)
        else:
            at = _Numbering(0, index)
        snapped = c.caplen < c.origlen
        cut = np.flatnonzero(snapped)
        for i, ts, wire, cap in zip(cut.tolist(), c.ts_us[cut].tolist(), c.origlen[cut].tolist(),
                                    c.caplen[cut].tolist()):
            self.report("snapped_packet", f"{wire - cap} of {wire} bytes not captured (snaplen)",
                        Where(self.file, at(i), ts), wire - cap)
            self.skip("snapped_packet", wire - cap)
        f = fr.frames(c)
        v = f.verdict
        counts = np.bincount(v, minlength=fr.VERDICTS)

        def which(verdict: int) -> np.ndarray:
            return np.flatnonzero(v == verdict) if counts[verdict] else np.zeros(0, np.int64)

        if counts[fr.UNKNOWN_LINK]:
            self.unknown_link(c, which(fr.UNKNOWN_LINK), at)
        self.skip("not_ip", int(c.caplen[which(fr.NOT_IP)].sum()))
        self.bad(c, which(fr.BAD_LINK), "bad_link_header", snapped, at)
        self.bad(c, which(fr.BAD_IP), "bad_ip_header", snapped, at)
        self.bad(c, which(fr.SHORT_IP), "bad_ip_header", snapped, at)
        self.skip("not_tcp", int(c.caplen[which(fr.NOT_TCP)].sum()))
        tcp_packets = int(counts[fr.SLOW:].sum())
        s.tcp_packets += tcp_packets
        s.non_tcp_packets += n - tcp_packets
        self.bad(c, which(fr.BAD_TCP), "bad_tcp_header", snapped, at)
        self.bad(c, which(fr.SHORT_TCP), "bad_tcp_header", snapped, at)
        segments, acks = (f.segments, f.acks) if self.parts == 1 else (self.own(f.segments), self.own(f.acks))
        if index is not None:
            segments, acks = segments._replace(index=index[segments.index]), acks._replace(index=index[acks.index])
        pure_acks = _PureAcks(self.reasm.segment, at.base, acks)
        if counts[fr.SLOW]:
            self.segments_mixed(c, segments, which(fr.SLOW), f.slow_l3, pure_acks, at)
        else:
            self.deliver(self.reasm, c.buf, at.base, at.end(n), segments, pure_acks)
        analyse(self.reasm, segments, acks)

    def own(self, cols: fr.Segments) -> fr.Segments:
        """The segments of the connections this worker follows."""
        keep = owners(cols.src_hi, cols.src_lo, cols.dst_hi, cols.dst_lo, cols.ports, self.parts) == self.part
        return fr.Segments(*(col[keep] for col in cols))

    def unknown_link(self, c: Chunk, frames: np.ndarray, at: _Numbering) -> None:
        """Frames of link types the dissector does not parse: skipped, and said once per link type and file."""
        types = c.linktype[frames]
        for lt in distinct(types):
            sel = frames[types == lt]
            nbytes = int(c.caplen[sel].sum())
            self.skip("unknown_link_type", nbytes)
            if lt not in self.unknown_links:
                self.unknown_links.add(lt)
                i = int(sel[0])
                self.report("unknown_link_type", f"link type {lt} is not supported; its packets are skipped",
                            Where(self.file, at(i), int(c.ts_us[i])), nbytes)

    def bad(self, c: Chunk, frames: np.ndarray, kind: str, snapped: np.ndarray, at: _Numbering) -> None:
        """Frames whose link, IP or TCP header is unusable: an anomaly each, unless the snaplen cut it (already one)."""
        for i in frames.tolist():
            nbytes = int(c.caplen[i])
            self.skip("snapped_headers" if snapped[i] else kind, nbytes)
            if not snapped[i]:
                self.report(kind, f"{kind.replace('_', ' ')} in a frame of {nbytes} bytes",
                            Where(self.file, at(i), int(c.ts_us[i])), nbytes)

    def segments_mixed(self, c: Chunk, cols: fr.Segments, slow: np.ndarray, l3: np.ndarray, acks: _PureAcks,
                       at: _Numbering) -> None:
        """Fast-path segments merged in packet order with the ones of fragments and IPv6 extension headers (items
        are ordered by their number after at.base: cols.index, the slow frames' own numbers)."""
        buf = c.buf
        items = [(i, ts, (shi, slo, dhi, dlo, ports), seq, ack, flags, buf[po:po + pl], miss)
                 for i, ts, shi, slo, dhi, dlo, ports, seq, ack, flags, po, pl, miss
                 in zip(*(col.tolist() for col in cols.placed()))]
        for i, l3_i in zip(slow.tolist(), l3.tolist()):
            ts = int(c.ts_us[i])
            r = ip.parse_slow(buf, l3_i, int(c.off[i] + c.caplen[i]), int(c.off[i] + c.origlen[i]), ts, self.frags)
            if r.status == ip.NOT_TCP:
                self.skip("not_tcp", int(c.caplen[i]))
                self.stats.tcp_packets -= 1
                self.stats.non_tcp_packets += 1
                self.stats.slow_not_tcp += 1
            elif r.status == ip.BAD:
                self.report("bad_ip_header", "unusable IPv6 extension headers", Where(self.file, at(i), ts),
                            int(c.caplen[i]))
                self.skip("bad_ip_header", int(c.caplen[i]))
            elif r.status == ip.SHORT:
                self.skip("snapped_headers", int(c.caplen[i]))
            if r.status != ip.OK_TCP:
                continue
            hdr = tcp.parse_segment(r.segment)
            if hdr is None:
                self.report("bad_tcp_header", "unusable TCP header after IP reassembly",
                            Where(self.file, at(i), ts), len(r.segment))
                self.skip("bad_tcp_header", len(r.segment))
                continue
            sport, dport, seq, ack, flags, hlen = hdr
            items.append((at.key(i), ts, (r.src_hi, r.src_lo, r.dst_hi, r.dst_lo, sport << 16 | dport), seq, ack,
                          flags, r.segment[hlen:], r.missing))
        items.sort(key=lambda item: item[0])
        reasm, last = self.reasm, -1
        for i, ts, key, seq, ack, flags, payload, miss in items:
            if reasm.pending_total:
                acks.feed(last, i)
            reasm.segment(at.base + i, ts, key, seq, ack, flags, payload, miss)
            last = i
        if reasm.pending_total:
            acks.feed(last, at.end(len(c.off)))


class _Numbering:
    """The packet index of a chunk's frames: base + position for a whole chunk; for a selection of a file's frames
    (index given) base is 0 and each frame's index is looked up, so columns renumbered with it can be handed on."""

    __slots__ = ("base", "index")

    def __init__(self, base: int, index: np.ndarray | None) -> None:
        self.base, self.index = base, index

    def __call__(self, i: int) -> int:
        return self.base + i if self.index is None else int(self.index[i])

    def key(self, i: int) -> int:
        """Frame i's number after base (its position in a whole chunk)."""
        return i if self.index is None else int(self.index[i])

    def end(self, frames: int) -> int:
        """The number after base past the chunk's last frame."""
        return frames if self.index is None else int(self.index[-1]) + 1


def deliver(reasm: Reassembler, buf: bytes, index0: int, frames: int, cols: fr.Segments, acks: _PureAcks) -> None:
    """The segments of a chunk (of `frames` frames, the first numbered index0) to the reassembler in frame order,
    the pure ACKs between them while some stream has a hole."""
    segment = reasm.segment
    last = -1
    for i, ts, shi, slo, dhi, dlo, ports, seq, ack, flags, po, pl, miss in zip(*(col.tolist() for col in
                                                                              cols.placed())):
        if reasm.pending_total:
            acks.feed(last, i)
        segment(index0 + i, ts, (shi, slo, dhi, dlo, ports), seq, ack, flags, buf[po:po + pl], miss)
        last = i
    if reasm.pending_total:
        acks.feed(last, frames)


class _PureAcks:
    """The pure ACKs of a chunk, fed to the reassembler only between the segments during which some stream has a
    hole: otherwise an ACK cannot change anything, and skipping it keeps those packets out of Python."""

    def __init__(self, segment: Callable, index0: int, cols: fr.Segments) -> None:
        self.segment = segment
        self.index0 = index0
        self.cols = cols[:10]  # up to flags: a pure ACK carries no payload
        self.lists: list[list] | None = None

    def feed(self, after: int, before: int) -> None:
        """The ACKs with chunk positions strictly between after and before."""
        a = int(np.searchsorted(self.cols[0], after, "right"))
        b = int(np.searchsorted(self.cols[0], before, "left"))
        if a >= b:
            return
        if self.lists is None:
            self.lists = [col.tolist() for col in self.cols]
        i, ts, shi, slo, dhi, dlo, ports, seq, ack, flags = self.lists
        for r in range(a, b):
            self.segment(self.index0 + i[r], ts[r], (shi[r], slo[r], dhi[r], dlo[r], ports[r]), seq[r], ack[r],
                         flags[r], b"", 0)
