"""Every frame of a chunk through link, IP and TCP: what became of each frame (its verdict), and the columns of the
TCP segments the stream layer takes.

`parse_frames` is the numpy reference, built on link.network_layer, ip.parse_ip and tcp.parse_tcp; `_frames.pyx`
holds its compiled twin. `frames` runs whichever kafkatap.dissect.native picks and names the columns.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kafkatap.dissect import native
from kafkatap.dissect.packets import ip, link, tcp
from kafkatap.dissect.packets.arrays import distinct
from kafkatap.dissect.packets.pcap import Chunk

_frames = native.extension("kafkatap.dissect.packets._frames")

# verdict of each frame, one per way the driver counts or reports it; the TCP ones come last (from SLOW on)
UNKNOWN_LINK, NOT_IP, BAD_LINK, BAD_IP, SHORT_IP, NOT_TCP, SLOW, BAD_TCP, SHORT_TCP, SEGMENT, ACK_ONLY, IDLE = range(12)
VERDICTS = 12
# SEGMENT: payload, bytes the snaplen cut, or SYN/FIN/RST; ACK_ONLY: none of these, an ACK; IDLE: not even an ACK


class Segments(NamedTuple):
    """Columns of some TCP frames of a chunk, in frame order."""

    index: np.ndarray  # position of the frame in the chunk
    ts_us: np.ndarray
    src_hi: np.ndarray  # addresses as ip.py's (hi, lo) halves
    src_lo: np.ndarray
    dst_hi: np.ndarray
    dst_lo: np.ndarray
    ports: np.ndarray  # sport << 16 | dport
    seq: np.ndarray
    ack: np.ndarray
    flags: np.ndarray
    payload: np.ndarray  # offset of the payload in the chunk's buffer
    payload_len: np.ndarray  # captured payload bytes
    missing: np.ndarray  # IP payload bytes the snaplen cut off
    window: np.ndarray  # receive window advertised (unscaled): only its zeros are counted (streams/analysis.py)

    def placed(self) -> tuple[np.ndarray, ...]:
        """The columns the reassembler places a segment with (all but the window)."""
        return self[:13]


class Frames(NamedTuple):
    """What the driver needs of a chunk's frames: how to count and report each, and the segments to reassemble."""

    verdict: np.ndarray  # int8 per frame
    segments: Segments  # the SEGMENT frames
    acks: Segments  # the ACK_ONLY frames
    slow_l3: np.ndarray  # IP header offset of each SLOW frame (fragments, IPv6 extension headers), for ip.parse_slow


def frames(c: Chunk) -> Frames:
    """The chunk's verdicts and columns, from the compiled twin or the reference (native's switch), named."""
    verdict, segments, acks, slow_l3 = native.pick(parse_frames, _frames)(c.buf, c.off, c.caplen, c.origlen,
                                                                          c.ts_us, c.linktype)
    return Frames(verdict, Segments(*segments), Segments(*acks), slow_l3)


def parse_frames(buf: bytes, off: np.ndarray, caplen: np.ndarray, origlen: np.ndarray, ts_us: np.ndarray,
                 linktype: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...], np.ndarray]:
    """(verdict per frame, Segments columns of the SEGMENT frames, of the ACK_ONLY frames, l3 of the SLOW frames)."""
    data = np.frombuffer(buf, np.uint8)
    verdict = np.full(len(off), IDLE, np.int8)
    l3, version, lstatus = _link(data, off, caplen, linktype)
    verdict[lstatus == -1] = UNKNOWN_LINK
    verdict[lstatus == link.NOT_IP] = NOT_IP
    verdict[lstatus == link.SHORT] = BAD_LINK
    ipi = np.flatnonzero(lstatus == link.OK)
    cap_end = off + caplen
    f = ip.parse_ip(data, l3[ipi], cap_end[ipi], off[ipi] + origlen[ipi], version[ipi])
    for status, v in ((ip.BAD, BAD_IP), (ip.SHORT, SHORT_IP), (ip.NOT_TCP, NOT_TCP), (ip.SLOW, SLOW)):
        verdict[ipi[f.status == status]] = v
    tcp_mask = f.status == ip.OK_TCP
    ti = ipi[tcp_mask]
    t = tcp.parse_tcp(data, f.l4[tcp_mask], f.l4end[tcp_mask])
    verdict[ti[t.status == tcp.BAD]] = BAD_TCP
    verdict[ti[t.status == tcp.SHORT]] = SHORT_TCP
    missing = f.missing[tcp_mask]
    ok = t.status == tcp.OK
    useful = (t.payload_len > 0) | (missing > 0) | (t.flags & (tcp.SYN | tcp.FIN | tcp.RST) != 0)
    segment, ack = ok & useful, ok & ~useful & (t.flags & tcp.ACK != 0)
    verdict[ti[segment]] = SEGMENT
    verdict[ti[ack]] = ACK_ONLY
    columns = (ti, ts_us[ti], f.src_hi[tcp_mask], f.src_lo[tcp_mask], f.dst_hi[tcp_mask], f.dst_lo[tcp_mask],
               t.sport << 16 | t.dport, t.seq, t.ack, t.flags, t.payload, t.payload_len, missing, t.window)
    return (verdict, tuple(col[segment] for col in columns), tuple(col[ack] for col in columns),
            l3[verdict == SLOW])


def _link(data: np.ndarray, off: np.ndarray, caplen: np.ndarray,
          linktype: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """link.network_layer over frames of any mix of link types; status -1 for the unsupported ones."""
    types = distinct(linktype)
    if len(types) == 1 and types[0] in link.SUPPORTED:
        return link.network_layer(data, off, caplen, types[0])
    n = len(off)
    l3, version, status = np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64)
    for lt in types:
        if lt in link.SUPPORTED:
            sel = linktype == lt
            l3[sel], version[sel], status[sel] = link.network_layer(data, off[sel], caplen[sel], lt)
    return l3, version, status
