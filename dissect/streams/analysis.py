"""TCP analysis read from a chunk's header columns: zero-window advertisements, and the ACK that completes a handshake.

Both are mostly pure ACKs, which stay columns (driver.py): found here with numpy over the chunk, they never bring those
packets into Python. They are counted on the reassembler's connections beside what Reassembler.segment counts
itself (retransmissions, out-of-order segments, resets), with tshark's `tcp.analysis` rules: a zero window is one
advertised on a segment without SYN, FIN or RST (`tcp.analysis.zero_window`); the handshake RTT is from the client's
SYN to its ACK of the SYN-ACK (`tcp.analysis.initial_rtt`), whether that ACK is pure or carries data.
"""

from __future__ import annotations

import numpy as np

from kafkatap.dissect.packets.frames import Segments
from kafkatap.dissect.packets.tcp import ACK, FIN, RST, SYN
from kafkatap.dissect.streams.reassembly import Reassembler


def analyse(reasm: Reassembler, *parts: Segments) -> None:
    """Count the zero windows of the connections the segments belong to, and find the ACKs that complete the
    handshakes reasm waits on (parts: columns of one chunk, after the reassembler placed its segments)."""
    for cols in parts:
        for r in np.flatnonzero((cols.window == 0) & (cols.flags & (SYN | FIN | RST) == 0)).tolist():
            found = reasm.keys.get(_key(cols, r))
            if found is not None:
                found[0].zero_windows += 1
    if reasm.handshakes:
        _handshake_acks(reasm, parts)


def _handshake_acks(reasm: Reassembler, parts: tuple[Segments, ...]) -> None:
    """Each waiting handshake's first ACK (in packet order) of the SYN-ACK: the connection's handshake RTT."""
    ports = np.array([key[4] for key in reasm.handshakes], np.int64)
    found = []
    for cols in parts:
        for r in np.flatnonzero((cols.flags & (ACK | SYN | RST) == ACK) & np.isin(cols.ports, ports)).tolist():
            found.append((int(cols.index[r]), int(cols.ts_us[r]), _key(cols, r), int(cols.ack[r])))
    for _, ts, key, ack in sorted(found):
        waiting = reasm.handshakes.get(key)
        if waiting is not None and ack == waiting[1] and ts >= waiting[2]:
            conn = waiting[0]
            conn.handshake_rtt_us = ts - conn.syn_ts_us
            del reasm.handshakes[key]


def _key(cols: Segments, r: int) -> tuple[int, int, int, int, int]:
    return (int(cols.src_hi[r]), int(cols.src_lo[r]), int(cols.dst_hi[r]), int(cols.dst_lo[r]), int(cols.ports[r]))
