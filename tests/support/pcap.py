"""Write pcap/pcapng files and build Ethernet/IPv4/IPv6/TCP frames byte by byte.

Hand-written with struct (not scapy) so every byte a test feeds the reader is visible and golden-byte tests can
compare against it. `TcpFlow` crafts the segments of one connection so tests can drop, reorder or duplicate them.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


# ---- capture files --------------------------------------------------------------------------------------------

def pcap_bytes(packets: Iterable[tuple], linktype: int = 1, *, endian: str = "<", nano: bool = False,
               snaplen: int = 262144) -> bytes:
    """A classic pcap file. packets: (ts_us, frame) or (ts_us, frame, origlen) to mark a snapped frame."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for p in packets:
        ts_us, frame = p[0], p[1]
        origlen = p[2] if len(p) > 2 else len(frame)
        frac = ts_us % 1_000_000 * (1000 if nano else 1)
        out.append(struct.pack(endian + "IIII", ts_us // 1_000_000, frac, len(frame), origlen))
        out.append(frame)
    return b"".join(out)


def write_pcap(path: str, packets: Iterable[tuple], linktype: int = 1, **kw) -> str:
    with open(path, "wb") as f:
        f.write(pcap_bytes(packets, linktype, **kw))
    return str(path)


class PcapngWriter:
    """Builds a pcapng file block by block: shb(), idb(), epb()/spb()/opb(), then bytes() or write(path)."""

    def __init__(self) -> None:
        self.blocks: list[bytes] = []
        self.endian = "<"
        self.tsresol: list[int] = []

    def block(self, btype: int, body: bytes) -> "PcapngWriter":
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        self.blocks.append(struct.pack(self.endian + "II", btype, n) + body + struct.pack(self.endian + "I", n))
        return self

    def shb(self, endian: str = "<") -> "PcapngWriter":
        self.endian = endian
        self.tsresol = []
        return self.block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))

    def idb(self, linktype: int = 1, tsresol: int = 6, snaplen: int = 0, tsoffset: int = 0) -> "PcapngWriter":
        opts = b""
        if tsresol != 6:
            opts += struct.pack(self.endian + "HHB3x", 9, 1, tsresol)
        if tsoffset:
            opts += struct.pack(self.endian + "HHq", 14, 8, tsoffset)
        if opts:
            opts += struct.pack(self.endian + "HH", 0, 0)
        self.tsresol.append(tsresol)
        return self.block(1, struct.pack(self.endian + "HHI", linktype, 0, snaplen) + opts)

    def _ts(self, iface: int, ts_us: int) -> int:
        r = self.tsresol[iface] if iface < len(self.tsresol) else 6
        if r & 0x80:
            return ts_us * (1 << (r & 0x7F)) // 1_000_000
        return ts_us * 10 ** (r - 6) if r >= 6 else ts_us // 10 ** (6 - r)

    def epb(self, iface: int, ts_us: int, frame: bytes, origlen: int | None = None) -> "PcapngWriter":
        ts = self._ts(iface, ts_us)
        return self.block(6, struct.pack(self.endian + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(frame),
                                         origlen if origlen is not None else len(frame)) + frame)

    def opb(self, iface: int, ts_us: int, frame: bytes) -> "PcapngWriter":
        ts = self._ts(iface, ts_us)
        return self.block(2, struct.pack(self.endian + "HHIIII", iface, 0, ts >> 32, ts & 0xFFFFFFFF, len(frame),
                                         len(frame)) + frame)

    def spb(self, frame: bytes) -> "PcapngWriter":
        return self.block(3, struct.pack(self.endian + "I", len(frame)) + frame)

    def bytes(self) -> bytes:
        return b"".join(self.blocks)

    def write(self, path: str) -> str:
        with open(path, "wb") as f:
            f.write(self.bytes())
        return str(path)


# ---- headers --------------------------------------------------------------------------------------------------

def tcp_segment(sport: int, dport: int, seq: int, ack: int = 0, flags: int = ACK, payload: bytes = b"",
                window: int = 65535, options: bytes = b"") -> bytes:
    options += b"\0" * (-len(options) % 4)
    off = (20 + len(options)) // 4
    return struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, off << 4, flags, window, 0,
                       0) + options + payload


def ipv4(src: str, dst: str, payload: bytes, proto: int = 6, ident: int = 0, frag: int = 0,
         options: bytes = b"", total: int | None = None) -> bytes:
    """frag: the 16-bit flags+offset field (0x2000 = more fragments, offset in 8-byte units)."""
    options += b"\0" * (-len(options) % 4)
    ihl = 5 + len(options) // 4
    length = total if total is not None else ihl * 4 + len(payload)
    return struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, length, ident, frag, 64, proto, 0,
                       ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed) + options + payload


def ipv6(src: str, dst: str, payload: bytes, next_header: int = 6, ext: bytes = b"") -> bytes:
    """ext: extension headers already encoded (their chain must end with next header = the payload's protocol)."""
    return struct.pack(">IHBB16s16s", 0x60000000, len(ext) + len(payload), next_header, 64,
                       ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(dst).packed) + ext + payload


def ether(payload: bytes, ethertype: int = 0x0800, vlans: Iterable[tuple[int, int]] = ()) -> bytes:
    """vlans: (tpid, vlan id) outermost first, e.g. [(0x88A8, 100), (0x8100, 200)] for QinQ."""
    tags = b"".join(struct.pack(">HH", tpid, vid) for tpid, vid in vlans)
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + tags + struct.pack(">H", ethertype) + payload


def sll(payload: bytes, protocol: int = 0x0800) -> bytes:
    return struct.pack(">HHH8sH", 0, 772, 6, b"\0" * 8, protocol) + payload


def sll2(payload: bytes, protocol: int = 0x0800) -> bytes:
    return struct.pack(">HHIHBB8s", protocol, 0, 1, 772, 0, 6, b"\0" * 8) + payload


def null(payload: bytes, family: int = 2, endian: str = "<") -> bytes:
    return struct.pack(endian + "I", family) + payload


def tcp_frame(src: tuple[str, int], dst: tuple[str, int], seq: int, payload: bytes = b"", flags: int = ACK | PSH,
              ack: int = 0) -> bytes:
    """Ethernet + IPv4 (or IPv6 when the address has a colon) + TCP."""
    seg = tcp_segment(src[1], dst[1], seq, ack, flags, payload)
    if ":" in src[0]:
        return ether(ipv6(src[0], dst[0], seg), 0x86DD)
    return ether(ipv4(src[0], dst[0], seg))


@dataclass
class TcpFlow:
    """Segments of one connection with sequence numbers tracked per side (0 = client, 1 = server).

    Each method returns Ethernet frames; the test decides which to keep, repeat or reorder."""

    client: tuple[str, int] = ("10.0.0.1", 40000)
    server: tuple[str, int] = ("10.0.0.2", 9092)
    isn: list[int] = field(default_factory=lambda: [1000, 5000])

    def __post_init__(self) -> None:
        self.next = [self.isn[0], self.isn[1]]

    def _frame(self, side: int, seq: int, payload: bytes, flags: int) -> bytes:
        src, dst = (self.client, self.server) if side == 0 else (self.server, self.client)
        return tcp_frame(src, dst, seq, payload, flags, self.next[1 - side])

    def handshake(self) -> list[bytes]:
        frames = [self._frame(0, self.isn[0], b"", SYN), self._frame(1, self.isn[1], b"", SYN | ACK)]
        self.next = [(self.isn[0] + 1) % 2 ** 32, (self.isn[1] + 1) % 2 ** 32]
        return frames + [self._frame(0, self.next[0], b"", ACK)]

    def send(self, side: int, data: bytes, mss: int = 1460) -> list[bytes]:
        frames = []
        for i in range(0, len(data), mss):
            frames.append(self._frame(side, self.next[side], data[i:i + mss], ACK | PSH))
            self.next[side] = (self.next[side] + len(data[i:i + mss])) % 2 ** 32
        return frames

    def fin(self, side: int) -> list[bytes]:
        frame = self._frame(side, self.next[side], b"", FIN | ACK)
        self.next[side] = (self.next[side] + 1) % 2 ** 32
        return [frame]

    def rst(self, side: int) -> list[bytes]:
        return [self._frame(side, self.next[side], b"", RST | ACK)]


def timed(frames: Iterable[bytes], start_us: int = 1_700_000_000_000_000, step_us: int = 1000) -> list[tuple]:
    """(ts_us, frame) pairs, one step apart, ready for pcap_bytes/write_pcap."""
    return [(start_us + n * step_us, f) for n, f in enumerate(frames)]


# ---- a sink that records everything ---------------------------------------------------------------------------

class RecordingSink:
    """A StreamSink keeping every event; streams() joins each direction's data (gaps shown as ('gap', n))."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.events: list[tuple] = []
        self.conns: list = []
        self.stop_after = stop_after

    def on_open(self, conn) -> None:
        self.conns.append(conn)
        self.events.append(("open", conn))

    def on_data(self, conn, side, ts_us, data, where) -> bool:
        self.events.append(("data", conn, side, data, where))
        return self.stop_after is None or sum(e[0] == "data" for e in self.events) < self.stop_after

    def on_gap(self, conn, side, ts_us, nbytes, where) -> None:
        self.events.append(("gap", conn, side, nbytes, where))

    def on_close(self, conn, ts_us, reason, where) -> None:
        self.events.append(("close", conn, reason))

    def on_forget(self, conn) -> None:
        pass

    def on_anomaly(self, kind, detail, where, nbytes, conn, side) -> None:
        self.events.append(("anomaly", kind, detail, where, nbytes, conn, side))

    def data(self, conn, side: int) -> bytes:
        return b"".join(e[3] for e in self.events if e[0] == "data" and e[1] is conn and e[2] == side)

    def pieces(self, conn, side: int) -> list:
        """Data and gaps of one direction in order, adjacent data joined: [b"abc", ("gap", 5), b"def"]."""
        out: list = []
        for e in self.events:
            if e[0] in ("data", "gap") and e[1] is conn and e[2] == side:
                if e[0] == "gap":
                    out.append(("gap", e[3]))
                elif out and isinstance(out[-1], bytes):
                    out[-1] += e[3]
                else:
                    out.append(e[3])
        return out

    def closes(self) -> list[tuple]:
        return [(e[1], e[2]) for e in self.events if e[0] == "close"]

    def anomalies(self, kind: str | None = None) -> list[tuple]:
        return [e for e in self.events if e[0] == "anomaly" and (kind is None or e[1] == kind)]


def web_capture(path: Path) -> Path:
    """A capture of two HTTP exchanges and nothing else (14 packets): no Kafka in it."""
    frames = []
    for port in (40000, 40001):
        flow = TcpFlow(client=("10.0.0.1", port), server=("10.0.0.2", 80))
        frames += [*flow.handshake(), *flow.send(0, b"GET / HTTP/1.1\r\nHost: example\r\n\r\n"),
                   *flow.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), *flow.fin(0), *flow.fin(1)]
    write_pcap(str(path), timed(frames))
    return path
