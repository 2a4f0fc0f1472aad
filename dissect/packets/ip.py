"""IPv4 and IPv6: vectorized header parse for whole chunks, a per-packet path for fragments and IPv6 extension
headers, and fragment reassembly with bounded memory and a timeout.

Addresses are carried as two int64 halves (hi, lo) so one connection key works for both versions: IPv4 has hi = -1
(an IPv6 address never has all 64 upper bits set for unicast TCP) and lo = the 32-bit address. IPv4 header checksums
are not checked: captures taken on the sending host carry checksum-offloaded (wrong) values.
"""

from __future__ import annotations

import ipaddress
import struct
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from kafkatap.dissect.packets.gather import be16, be32, be64, u8

TCP = 6
V6_EXT_SKIP = frozenset({0, 43, 60})  # hop-by-hop, routing, destination options: (len + 1) * 8 bytes
V6_AH, V6_FRAGMENT = 51, 44
V6_EXT = frozenset(V6_EXT_SKIP | {V6_AH, V6_FRAGMENT})
IPV4_HI = -1

# status of each packet
OK_TCP, NOT_TCP, BAD, SHORT, SLOW = 0, 1, 2, 3, 4


class IpFields(NamedTuple):
    status: np.ndarray
    l4: np.ndarray  # offset of the TCP header
    l4end: np.ndarray  # end of the captured IP payload
    missing: np.ndarray  # IP payload bytes the capture cut off (snaplen)
    src_hi: np.ndarray
    src_lo: np.ndarray
    dst_hi: np.ndarray
    dst_lo: np.ndarray


def parse_ip(data: np.ndarray, l3: np.ndarray, cap_end: np.ndarray, wire_end: np.ndarray,
             version: np.ndarray) -> IpFields:
    """Parse the IP headers at l3 (version 0 = read from the header); fragments and IPv6 extension headers of TCP
    packets get status SLOW and go through `parse_slow`."""
    first = u8(data, l3)
    nibble = first >> 4
    version = np.where(version == 0, nibble, version)
    avail = cap_end - l3
    v4 = version == 4
    # IPv4
    ihl = (first & 0x0F) * 4
    total = be16(data, l3 + 2)
    frag = be16(data, l3 + 6) & 0x3FFF
    proto4 = u8(data, l3 + 9)
    # IPv6
    plen6 = be16(data, l3 + 4)
    next6 = u8(data, l3 + 6)
    hlen = np.where(v4, ihl, 40)
    total = np.where(v4, total, plen6 + 40)
    total = np.where(total == hlen, np.where(v4, total, avail), total)  # IPv6 jumbo/TSO: length 0, use the frame
    total = np.where(v4 & (total == 0), avail, total)  # IPv4 TSO: length 0, use the frame
    proto = np.where(v4, proto4, next6)
    ip_end = l3 + total
    l4end = np.minimum(ip_end, cap_end)
    missing = np.maximum(np.minimum(ip_end, wire_end) - cap_end, 0)
    bad = (nibble != version) | ~(v4 | (version == 6)) | (v4 & ((ihl < 20) | (total < ihl)))
    short = avail < np.where(v4, np.maximum(ihl, 20), 40)
    slow = np.where(v4, (frag != 0) & (proto == TCP), np.isin(next6, list(V6_EXT)))
    status = np.where(proto == TCP, OK_TCP, NOT_TCP)
    status = np.where(slow, SLOW, status)
    status = np.where(bad, BAD, status)
    status = np.where(short & (nibble == version), SHORT, status)
    src_hi = np.where(v4, IPV4_HI, be64(data, l3 + 8))
    src_lo = np.where(v4, be32(data, l3 + 12), be64(data, l3 + 16))
    dst_hi = np.where(v4, IPV4_HI, be64(data, l3 + 24))
    dst_lo = np.where(v4, be32(data, l3 + 16), be64(data, l3 + 32))
    return IpFields(status, l3 + hlen, l4end, missing, src_hi, src_lo, dst_hi, dst_lo)


def address(hi: int, lo: int) -> str:
    """Text form of an address given as the (hi, lo) halves above."""
    if hi == IPV4_HI:
        return str(ipaddress.IPv4Address(lo & 0xFFFFFFFF))
    return str(ipaddress.IPv6Address(((hi & (2 ** 64 - 1)) << 64) | (lo & (2 ** 64 - 1))))


def _signed64(b: bytes) -> int:
    return struct.unpack(">q", b)[0]


class SlowResult(NamedTuple):
    status: int  # OK_TCP (segment is the TCP header and payload), NOT_TCP, BAD, SHORT, or SLOW = fragment kept
    segment: bytes
    missing: int
    src_hi: int
    src_lo: int
    dst_hi: int
    dst_lo: int


class Fragments:
    """IP fragments waiting for the rest of their datagram; memory is bounded and stale datagrams expire.

    Datagrams dropped (timed out or evicted for memory) are kept in `dropped` as (reason, bytes) for the driver."""

    def __init__(self, max_bytes: int = 32 << 20, timeout_us: int = 30_000_000) -> None:
        self.max_bytes = max_bytes
        self.timeout_us = timeout_us
        self.nbytes = 0
        self.dropped: list[tuple[str, int]] = []
        # key -> [first_ts_us, {offset: data}, total length or -1, bytes held]
        self._pending: OrderedDict[tuple, list] = OrderedDict()

    def add(self, key: tuple, ts_us: int, offset: int, data: bytes, more: bool) -> bytes | None:
        """Keep one fragment; return the whole payload when this fragment completes it."""
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = [ts_us, {}, -1, 0]
        pieces = entry[1]
        if offset not in pieces:
            pieces[offset] = data
            entry[3] += len(data)
            self.nbytes += len(data)
        if not more:
            entry[2] = offset + len(data)
        whole = self._complete(entry)
        if whole is not None:
            del self._pending[key]
            self.nbytes -= entry[3]
        while self.nbytes > self.max_bytes and self._pending:
            self._drop(next(iter(self._pending)), "fragments_evicted")
        return whole

    def expire(self, now_us: int) -> None:
        for key in [k for k, e in self._pending.items() if now_us - e[0] > self.timeout_us]:
            self._drop(key, "fragment_timeout")

    def flush(self) -> None:
        for key in list(self._pending):
            self._drop(key, "fragment_timeout")

    def _drop(self, key: tuple, reason: str) -> None:
        entry = self._pending.pop(key)
        self.nbytes -= entry[3]
        self.dropped.append((reason, entry[3]))

    @staticmethod
    def _complete(entry: list) -> bytes | None:
        total = entry[2]
        if total < 0:
            return None
        out = bytearray()
        for offset in sorted(entry[1]):
            data = entry[1][offset]
            if offset > len(out):
                return None
            out += data[len(out) - offset:]  # overlapping fragments: the bytes that came first win
        return bytes(out[:total]) if len(out) >= total else None


def parse_slow(buf: bytes, l3: int, cap_end: int, wire_end: int, ts_us: int, frags: Fragments) -> SlowResult:
    """One IPv4 fragment or IPv6 packet with extension headers (both already known to be well-formed enough)."""
    if buf[l3] >> 4 == 4:
        ihl = (buf[l3] & 0x0F) * 4
        total, ident, frag = struct.unpack_from(">HHH", buf, l3 + 2)
        proto = buf[l3 + 9]
        src, dst = struct.unpack_from(">II", buf, l3 + 12)
        end = min(l3 + total, cap_end) if total else cap_end
        missing = max(min(l3 + total, wire_end) - cap_end, 0)
        if missing:
            return SlowResult(SHORT, b"", missing, IPV4_HI, src, IPV4_HI, dst)
        whole = frags.add((4, src, dst, ident, proto), ts_us, (frag & 0x1FFF) * 8, buf[l3 + ihl:end],
                          bool(frag & 0x2000))
        if whole is None:
            return SlowResult(SLOW, b"", 0, IPV4_HI, src, IPV4_HI, dst)
        return SlowResult(OK_TCP if proto == TCP else NOT_TCP, whole, 0, IPV4_HI, src, IPV4_HI, dst)
    src_hi, src_lo, dst_hi, dst_lo = (_signed64(buf[l3 + k:l3 + k + 8]) for k in (8, 16, 24, 32))
    plen = struct.unpack_from(">H", buf, l3 + 4)[0]
    ip_end = l3 + 40 + plen if plen else cap_end
    missing = max(min(ip_end, wire_end) - cap_end, 0)
    data, nh, pos = buf[l3:min(ip_end, cap_end)], buf[l3 + 6], 40
    while True:
        if nh == TCP:
            return SlowResult(OK_TCP, data[pos:], missing, src_hi, src_lo, dst_hi, dst_lo)
        if nh not in V6_EXT:
            return SlowResult(NOT_TCP, b"", 0, src_hi, src_lo, dst_hi, dst_lo)
        if pos + 8 > len(data):
            return SlowResult(SHORT if missing else BAD, b"", missing, src_hi, src_lo, dst_hi, dst_lo)
        if nh == V6_FRAGMENT:
            if missing:
                return SlowResult(SHORT, b"", missing, src_hi, src_lo, dst_hi, dst_lo)
            frag, ident = struct.unpack_from(">HI", data, pos + 2)
            whole = frags.add((6, src_hi, src_lo, dst_hi, dst_lo, ident), ts_us, frag & 0xFFF8, data[pos + 8:],
                              bool(frag & 1))
            if whole is None:
                return SlowResult(SLOW, b"", 0, src_hi, src_lo, dst_hi, dst_lo)
            nh, data, pos = data[pos], whole, 0
        elif nh == V6_AH:
            nh, pos = data[pos], pos + (data[pos + 1] + 2) * 4
        else:
            nh, pos = data[pos], pos + (data[pos + 1] + 1) * 8
