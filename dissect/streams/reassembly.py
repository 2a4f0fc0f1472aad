"""Per-connection, per-direction TCP reassembly into ordered byte streams.

Sequence numbers are compared modulo 2**32. Each direction keeps a stream position (bytes delivered or declared lost
so far) and a bounded set of out-of-order pieces. Bytes already seen are dropped (an overlap whose bytes differ is an
`overlap_mismatch` anomaly: the first copy wins); a hole the capture never fills becomes a gap with its exact byte
count, reported to the sink instead of being zero-filled. Connections with no payload never reach the sink.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from typing import Any, Callable, NamedTuple, Protocol

from kafkatap.dissect import native
from kafkatap.dissect.packets.ip import address
from kafkatap.dissect.packets.tcp import ACK, FIN, RST, SYN

MOD = 1 << 32
HALF = 1 << 31
TAIL = 4096  # at most this many of the last delivered bytes are kept to compare retransmissions against
MAX_BUFFER = 16 << 20  # out-of-order bytes held per direction before the hole is declared a gap
MAX_TOTAL = 256 << 20  # out-of-order bytes held over all connections
IDLE_TIMEOUT_US = 900_000_000  # an open connection silent this long (capture time) is closed
LINGER_US = 60_000_000  # a closed connection's key stays known this long, so stray late packets are not a new one
WINDOW = 1 << 30  # TCP's largest window (65535 << 14): data further from the expected byte is not of this stream...
RESYNC_AFTER = 3  # ...unless this many such segments come in a row: the capture lost that much, follow the stream
OUT_OF_ORDER_US = 3000  # a hole filled sooner than this after the furthest segment is reordering (tshark's default)


class Where(NamedTuple):
    """Where a stream event or a problem was met."""

    capture_file: str
    packet_index: int | None  # 0-based, in that file; None when the problem is the file itself
    ts_us: int | None


class Conn:
    """One TCP connection. Side 0 is the SYN sender (client) when syn_seen, else the sender of the first packet.

    Its TCP analysis counts follow tshark's `tcp.analysis` flags (analysis.py): retransmissions and out_of_order
    (segments with payload, counted here), resets, zero_windows, and handshake_rtt_us (SYN to the client's ACK of the
    SYN-ACK, as `tcp.analysis.initial_rtt`; None without both)."""

    __slots__ = ("conn_key", "addr", "syn_seen", "first_ts_us", "state", "halves", "opened", "closed", "ignored",
                 "last_ts_us", "retransmissions", "out_of_order", "resets", "zero_windows", "syn_ts_us",
                 "handshake_rtt_us")

    def __init__(self, conn_key: tuple, addr: tuple, syn_seen: bool, ts_us: int) -> None:
        self.conn_key = conn_key
        self.addr = addr
        self.syn_seen = syn_seen
        self.first_ts_us = ts_us
        self.state: Any = None
        self.halves = (_Half(), _Half())
        self.opened = False  # on_open was called (the connection carried payload)
        self.closed = False
        self.ignored = False  # the sink asked to stop tracking it
        self.last_ts_us = ts_us
        self.retransmissions = self.out_of_order = self.resets = self.zero_windows = 0
        self.syn_ts_us: int | None = None  # the client's first SYN
        self.handshake_rtt_us: int | None = None

    def __repr__(self) -> str:
        return f"Conn({self.addr[0]} -> {self.addr[1]}, syn_seen={self.syn_seen})"


class StreamSink(Protocol):
    def on_open(self, conn: Conn) -> None: ...
    def on_data(self, conn: Conn, side: int, ts_us: int, data: bytes, where: Where) -> bool: ...
    def on_gap(self, conn: Conn, side: int, ts_us: int, nbytes: int, where: Where) -> None: ...
    def on_close(self, conn: Conn, ts_us: int, reason: str, where: Where) -> None: ...
    def on_forget(self, conn: Conn) -> None: ...
    def on_anomaly(self, kind: str, detail: str, where: Where, nbytes: int, conn: Conn | None,
                   side: int | None) -> None: ...


class _Half:
    """One direction: stream position `pos` sits at sequence number (base + pos) mod 2**32."""

    __slots__ = ("base", "isn", "pos", "starts", "pending", "pending_bytes", "fin_pos", "tail", "strays", "front",
                 "front_ts")

    def __init__(self) -> None:
        self.base: int | None = None
        self.isn: int | None = None
        self.pos = 0
        self.starts: list[int] = []  # sorted stream positions of the pending pieces
        self.pending: dict[int, bytes | int] = {}  # position -> bytes, or a count of bytes the capture cut off
        self.pending_bytes = 0
        self.fin_pos: int | None = None
        self.tail = b""
        self.strays = 0  # consecutive segments out of the window
        self.front = 0  # the stream position past the furthest byte seen, when a piece came ahead (else pos is)
        self.front_ts = 0  # when the front last moved on that way


_compiled = native.extension("kafkatap.dissect.streams._conn")
if native.compiled and _compiled is not None:  # their compiled twins, whose fields the compiled driver reads in C
    Conn, _Half = _compiled.Conn, _compiled.Half  # type: ignore[misc]


def _len(piece: bytes | int) -> int:
    return piece if isinstance(piece, int) else len(piece)


def _held(half: _Half, start: int, end: int) -> bool:
    """Whether a pending piece overlaps stream positions [start, end)."""
    starts = half.starts
    j = bisect_right(starts, start) - 1
    if j >= 0 and starts[j] + _len(half.pending[starts[j]]) > start:
        return True
    return j + 1 < len(starts) and starts[j + 1] < end


Report = Callable[[str, str, Where, int, "Conn | None", "int | None"], None]


_OrderingBase: type = _compiled.OrderingFields if native.compiled and _compiled is not None else object


class _Ordering(_OrderingBase):  # type: ignore[valid-type, misc]
    """Each direction's bytes in stream order: pieces that came early are held (bounded), bytes that come again are
    compared with the first copy, holes become gaps, and the sink is handed data and gaps in order. `Reassembler`
    adds the connections these directions belong to; `file` names the capture file being read. With the compiled
    core, pending_total and payload_bytes are C struct members of the compiled base, which the driver reads."""

    def __init__(self, sink: StreamSink, report: Report, skipped: dict[str, int], max_buffer: int,
                 max_total: int) -> None:
        self.sink = sink
        self.report = report
        self.skipped = skipped
        self.max_buffer = max_buffer
        self.max_total = max_total
        self.file = ""
        self.pending_total = 0
        self.payload_bytes = 0
        self.gap_bytes = 0
        self.connections = 0

    def _skip(self, reason: str, nbytes: int) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + nbytes

    def _data(self, conn: Conn, side: int, half: _Half, start: int, payload: bytes, missing: int, ts: int,
              idx: int) -> None:
        if start == half.pos and not half.starts:
            if payload:
                self._deliver(conn, side, half, payload, ts, idx)
            if missing and not conn.ignored:
                self._gap(conn, side, half, missing, ts, idx)
            return
        if payload:
            self._insert(conn, side, half, start, payload, ts, idx)
        if missing:
            self._insert(conn, side, half, start + len(payload), missing, ts, idx)
        self._drain(conn, side, half, ts, idx)
        while half.pending_bytes > self.max_buffer and not conn.ignored:
            self._gap(conn, side, half, half.starts[0] - half.pos, ts, idx)
            self._drain(conn, side, half, ts, idx)

    def _insert(self, conn: Conn, side: int, half: _Half, start: int, piece: bytes | int, ts: int, idx: int) -> None:
        """Keep the parts of piece not already delivered or pending; compare the parts that are."""
        end = start + _len(piece)
        cur = start
        if start < half.pos:
            cur = min(end, half.pos)
            self._compare(conn, side, piece, start, half.tail, half.pos - len(half.tail), start, cur, ts, idx)
        free: list[tuple[int, int]] = []
        j = max(bisect_right(half.starts, cur) - 1, 0)
        while j < len(half.starts) and half.starts[j] < end and cur < end:
            s2 = half.starts[j]
            other = half.pending[s2]
            e2 = s2 + _len(other)
            if e2 > cur:
                if s2 > cur:
                    free.append((cur, s2))
                self._compare(conn, side, piece, start, other, s2, max(cur, s2), min(end, e2), ts, idx)
                cur = min(end, e2)
            j += 1
        if cur < end:
            free.append((cur, end))
        for a, b in free:
            insort(half.starts, a)
            half.pending[a] = b - a if isinstance(piece, int) else piece[a - start:b - start]
            half.pending_bytes += b - a
            self.pending_total += b - a

    def _compare(self, conn: Conn, side: int, piece: bytes | int, p0: int, other: bytes | int, o0: int, a: int,
                 b: int, ts: int, idx: int) -> None:
        """Bytes [a, b) arrived again: piece starts at stream position p0, the earlier copy `other` at o0."""
        if b <= a:
            return
        self._skip("retransmitted", b - a if not isinstance(piece, int) else 0)
        if isinstance(piece, int) or isinstance(other, int):
            return
        lo = max(a, o0)
        if lo < b and piece[lo - p0:b - p0] != other[lo - o0:b - o0]:
            self.report("overlap_mismatch", f"{b - lo} retransmitted bytes at stream offset {lo} differ from the "
                        "first copy (the first copy is kept)", Where(self.file, idx, ts), b - lo, conn, side)

    def _drain(self, conn: Conn, side: int, half: _Half, ts: int, idx: int) -> None:
        starts, pending = half.starts, half.pending
        k = 0
        while k < len(starts) and starts[k] <= half.pos and not conn.ignored:
            s = starts[k]
            k += 1
            piece = pending.pop(s)
            n = _len(piece)
            half.pending_bytes -= n
            self.pending_total -= n
            cut = half.pos - s
            if cut >= n:
                continue
            if isinstance(piece, int):
                self._gap(conn, side, half, n - cut, ts, idx)
            else:
                self._deliver(conn, side, half, piece[cut:] if cut else piece, ts, idx)
        del starts[:k]  # once, not one pop(0) per piece (if the sink stopped the connection, this list is dropped)

    def _deliver(self, conn: Conn, side: int, half: _Half, data: bytes, ts: int, idx: int) -> None:
        if not conn.opened:
            conn.opened = True
            self.connections += 1
            self.sink.on_open(conn)
        half.pos += len(data)
        half.tail = data if len(data) <= TAIL else data[-TAIL:]  # a reference, not a copy, for common segments
        self.payload_bytes += len(data)
        if self.sink.on_data(conn, side, ts, data, Where(self.file, idx, ts)) is False:
            self._ignore(conn)

    def _gap(self, conn: Conn, side: int, half: _Half, nbytes: int, ts: int, idx: int) -> None:
        if not conn.opened:
            conn.opened = True
            self.connections += 1
            self.sink.on_open(conn)
        half.pos += nbytes
        half.tail = b""
        self.gap_bytes += nbytes
        self.sink.on_gap(conn, side, ts, nbytes, Where(self.file, idx, ts))

    def _acked(self, conn: Conn, side: int, ack: int, ts: int, idx: int) -> None:
        """The receiver of `side` acknowledged up to `ack`: bytes below it the capture never showed are lost."""
        half = conn.halves[side]
        if half.base is None:
            return
        rel = (ack - half.base - half.pos + HALF) % MOD - HALF
        if 0 < rel <= WINDOW:
            upto = half.pos + rel
            while half.starts and half.pos < upto and not conn.ignored:
                if half.starts[0] > half.pos:
                    self._gap(conn, side, half, min(half.starts[0], upto) - half.pos, ts, idx)
                self._drain(conn, side, half, ts, idx)

    def _resync(self, conn: Conn, side: int, half: _Half, seq: int, ts: int, idx: int) -> None:
        """Jump to seq: what is pending becomes data or gaps, and the distance to seq one more gap."""
        while half.starts and not conn.ignored:
            if half.starts[0] > half.pos:
                self._gap(conn, side, half, half.starts[0] - half.pos, ts, idx)
            self._drain(conn, side, half, ts, idx)
        jump = (seq - half.base - half.pos) % MOD
        self.report("sequence_jump", f"the stream continues {jump} bytes (modulo 2**32) after the expected sequence "
                    "number; the bytes in between are reported as a gap", Where(self.file, idx, ts), jump, conn, side)
        if jump and not conn.ignored:
            self._gap(conn, side, half, jump, ts, idx)

    def _release(self, conn: Conn) -> None:
        for half in conn.halves:
            self.pending_total -= half.pending_bytes
            half.starts, half.pending, half.pending_bytes, half.tail = [], {}, 0, b""

    def _ignore(self, conn: Conn) -> None:
        conn.ignored = True
        self._release(conn)

    def _flush(self, conn: Conn, ts: int, idx: int) -> None:
        """Declare every hole of both directions a gap: nothing more will arrive for this connection."""
        for side, half in enumerate(conn.halves):
            while half.starts and not conn.ignored:
                if half.starts[0] > half.pos:
                    self._gap(conn, side, half, half.starts[0] - half.pos, ts, idx)
                self._drain(conn, side, half, ts, idx)
            if half.fin_pos is not None and half.fin_pos > half.pos and not conn.ignored:
                self._gap(conn, side, half, half.fin_pos - half.pos, ts, idx)


class Reassembler(_Ordering):
    """Feeds TCP segments (in capture order) to a StreamSink: finds each segment's connection (a new one, or a port
    reused), places the segment in its direction, and closes connections on FIN/RST, when idle, or at the end."""

    def __init__(self, sink: StreamSink, report: Report, skipped: dict[str, int], *, max_buffer: int = MAX_BUFFER,
                 max_total: int = MAX_TOTAL, idle_timeout_us: int = IDLE_TIMEOUT_US, linger_us: int = LINGER_US):
        super().__init__(sink, report, skipped, max_buffer, max_total)
        self.idle_timeout_us = idle_timeout_us
        self.linger_us = linger_us
        self.keys: dict[tuple, tuple[Conn, int]] = {}  # directional key -> (connection, side sending with that key)
        self.keys_version = 0
        """One more at every change to keys (`_new`, `_forget`, nowhere else): the compiled driver's copy of the
        lookups it made (`_driver.pyx`) holds while this is what it was."""
        self.conns: dict[tuple, Conn] = {}  # conn_key -> connection
        self.handshakes: dict[tuple, tuple[Conn, int, int]] = {}
        """conn_key -> (connection, the ACK number that completes its handshake, time of the SYN-ACK), from the
        SYN-ACK until analysis.py finds the client's ACK: the handshake RTT."""

    def segment(self, idx: int, ts: int, key: tuple, seq: int, ack: int, flags: int, payload: bytes,
                missing: int) -> None:
        """One TCP segment: key is (src_hi, src_lo, dst_hi, dst_lo, sport << 16 | dport); missing counts payload
        bytes the capture cut off after `payload`."""
        found = self.keys.get(key)
        if not (payload or missing or flags & (SYN | FIN | RST)):  # a pure ACK: only useful against holes
            if found is not None and flags & ACK and found[0].halves[1 - found[1]].starts:
                self._acked(found[0], 1 - found[1], ack, ts, idx)
            return
        if found is not None and flags & (SYN | ACK) == SYN:
            conn, side = found
            half = conn.halves[side]
            if conn.closed or conn.ignored or half.isn is None or half.isn != seq:
                self._forget(conn, ts, idx, "port_reuse")
                found = None
        if found is None:
            if flags & RST and not payload:
                return
            found = self._new(key, ts, flags)
        conn, side = found
        if flags & RST:
            conn.resets += 1
        if conn.closed or conn.ignored:
            self._skip("ignored_connection" if conn.ignored else "after_close", len(payload))
            return
        conn.last_ts_us = ts
        if flags & ACK and conn.halves[1 - side].starts:
            self._acked(conn, 1 - side, ack, ts, idx)
            if conn.ignored:
                return
        half = conn.halves[side]
        if flags & SYN:
            if half.isn is None:
                half.isn = seq
                half.base = (seq + 1) % MOD
                if side == 0 and not flags & ACK:
                    conn.syn_ts_us = ts
                elif side == 1 and conn.syn_ts_us is not None:
                    self.handshakes[conn.conn_key] = (conn, (seq + 1) % MOD, ts)
            seq = (seq + 1) % MOD
        elif half.base is None:
            half.base = seq
        rel = (seq - half.base - half.pos + HALF) % MOD - HALF  # signed distance from the next expected byte
        if not -WINDOW <= rel <= WINDOW and (payload or missing):
            half.strays += 1
            if half.strays < RESYNC_AFTER:
                self._skip("out_of_window", len(payload))
                self.report("out_of_window", f"a segment {rel:+} bytes from the expected sequence number is skipped",
                            Where(self.file, idx, ts), len(payload), conn, side)
                return
            self._resync(conn, side, half, seq, ts, idx)
            rel = 0
        half.strays = 0
        start = half.pos + rel
        if rel == 0 and payload and not missing and not half.starts and conn.opened:  # the common case, inlined
            half.pos += len(payload)
            half.tail = payload if len(payload) <= TAIL else payload[-TAIL:]
            self.payload_bytes += len(payload)
            if self.sink.on_data(conn, side, ts, payload, Where(self.file, idx, ts)) is False:
                self._ignore(conn)
                return
        elif payload or missing:
            if rel == -1 and len(payload) <= 1 and not missing and not flags & (SYN | FIN):
                self._skip("keepalive", len(payload))  # keep-alive probe: one old byte (or none)
            else:
                self._order(conn, half, start, len(payload) + missing, ts)
                self._data(conn, side, half, start, payload, missing, ts, idx)
                if self.pending_total > self.max_total:
                    self._relieve(ts, idx)
                if conn.ignored:
                    return
        if flags & RST:
            self._close(conn, ts, idx, "rst")
        elif flags & FIN:
            if half.fin_pos is None:
                half.fin_pos = start + len(payload) + missing
            if conn.halves[1 - side].fin_pos is not None:
                self._close(conn, ts, idx, "fin")

    def _order(self, conn: Conn, half: _Half, start: int, nbytes: int, ts: int) -> None:
        """Count a segment that lands behind the furthest byte seen, as tshark's `tcp.analysis` does: bytes seen
        before make it a retransmission; new bytes (a hole filled) are out of order if they came within the
        handshake RTT (OUT_OF_ORDER_US without one) of the segment that went furthest, else a retransmission of a
        segment lost before the capture point."""
        front = max(half.front, half.pos)
        end = start + nbytes
        if start < front:
            if start < half.pos or _held(half, start, end):
                conn.retransmissions += 1
            elif end != front and ts - half.front_ts < (conn.handshake_rtt_us or OUT_OF_ORDER_US):
                conn.out_of_order += 1
            else:
                conn.retransmissions += 1
        if end > front:
            half.front, half.front_ts = end, ts

    def _new(self, key: tuple, ts: int, flags: int) -> tuple[Conn, int]:
        rkey = (key[2], key[3], key[0], key[1], (key[4] & 0xFFFF) << 16 | key[4] >> 16)
        client_first = not (flags & SYN and flags & ACK)  # a SYN-ACK seen first: its receiver is the client
        ckey, skey = (key, rkey) if client_first else (rkey, key)
        addr = ((address(ckey[0], ckey[1]), ckey[4] >> 16), (address(ckey[2], ckey[3]), ckey[4] & 0xFFFF))
        conn = Conn(ckey, addr, bool(flags & SYN), ts)
        self.keys[ckey] = (conn, 0)
        self.keys[skey] = (conn, 1)
        self.keys_version += 1
        self.conns[ckey] = conn
        return self.keys[key]

    def _close(self, conn: Conn, ts: int, idx: int, reason: str) -> None:
        if conn.closed:
            return
        if not conn.ignored:
            self._flush(conn, ts, idx)
        conn.closed = True
        self._release(conn)
        if conn.opened and not conn.ignored:
            self.sink.on_close(conn, ts, reason, Where(self.file, idx, ts))

    def _forget(self, conn: Conn, ts: int, idx: int, reason: str) -> None:
        self._close(conn, ts, idx, reason)
        ckey = conn.conn_key
        self.handshakes.pop(ckey, None)
        if conn.opened:
            self.sink.on_forget(conn)
        self.conns.pop(ckey, None)
        self.keys.pop(ckey, None)
        self.keys.pop((ckey[2], ckey[3], ckey[0], ckey[1], (ckey[4] & 0xFFFF) << 16 | ckey[4] >> 16), None)
        self.keys_version += 1

    def _relieve(self, ts: int, idx: int) -> None:
        """Over the global bound: turn the holes of the connections holding most into gaps."""
        for conn in sorted(self.conns.values(), key=lambda c: -(c.halves[0].pending_bytes + c.halves[1].pending_bytes)):
            if self.pending_total <= self.max_total // 2:
                break
            self._flush(conn, ts, idx)

    def sweep(self, now_us: int, idx: int) -> None:
        """Close connections idle for too long and forget closed ones, so memory follows open connections.

        Connections that never carried payload (unanswered SYNs, scans) are forgotten after linger_us."""
        for conn in list(self.conns.values()):
            if conn.closed or conn.ignored:
                if now_us - conn.last_ts_us > self.linger_us:
                    self._forget(conn, conn.last_ts_us, idx, "")
            elif now_us - conn.last_ts_us > (self.idle_timeout_us if conn.opened else self.linger_us):
                self._forget(conn, conn.last_ts_us, idx, "idle_timeout")

    def finish(self, idx: int) -> None:
        for conn in list(self.conns.values()):
            self._forget(conn, conn.last_ts_us, idx, "end_of_capture")
