"""pcapng reader: golden blocks, both byte orders, several sections and interfaces with their own resolutions."""

from __future__ import annotations

import numpy as np

from kafkatap.dissect.packets.pcapng import Interface, parse_idb, to_us
from kafkatap.dissect.packets.files import open_capture
from tests.support.pcap import PcapngWriter

GOLDEN = bytes.fromhex(
    # Section Header Block, little-endian
    "0a0d0d0a"  # block type
    "1c000000"  # total length 28
    "4d3c2b1a"  # byte-order magic 0x1a2b3c4d
    "0100" "0000"  # version 1.0
    "ffffffffffffffff"  # section length unknown
    "1c000000"  # total length again
    # Interface Description Block: Ethernet, if_tsresol = 9 (nanoseconds)
    "01000000" "20000000"  # type 1, length 32
    "0100" "0000"  # link type 1, reserved
    "00000400"  # snaplen 262144
    "0900" "0100" "09000000"  # option if_tsresol (9), length 1, value 9, padding
    "0000" "0000"  # opt_endofopt
    "20000000"
    # a Name Resolution Block: skipped
    "04000000" "10000000" "00000000" "10000000"
    # Enhanced Packet Block
    "06000000" "24000000"  # type 6, length 36
    "00000000"  # interface 0
    "fe9c9717" "15cd853d"  # timestamp high 0x17979cfe, low 0x3d85cd15: 1700000000123456789 ns
    "03000000" "03000000"  # caplen 3, origlen 3
    "aabbcc00"  # frame + padding
    "24000000"
)


def _chunks(tmp_path, data: bytes, chunk_size: int = 1 << 20):
    p = tmp_path / "f.pcapng"
    p.write_bytes(data)
    r = open_capture(str(p), chunk_size)
    return r, list(r.chunks())


def _packets(chunks):
    return [(int(c.ts_us[i]), int(c.linktype[i]), c.buf[c.off[i]:c.off[i] + c.caplen[i]])
            for c in chunks for i in range(len(c.off))]


def test_golden_blocks(tmp_path):
    r, chunks = _chunks(tmp_path, GOLDEN)
    assert r.interfaces == [Interface(1, 9, 0)]
    assert _packets(chunks) == [(1_700_000_000_123_456, 1, b"\xaa\xbb\xcc")] and not r.anomalies


def test_writer_matches_golden():
    w = PcapngWriter().shb().idb(1, tsresol=9, snaplen=262144)
    w.block(4, b"\0" * 4)
    assert w.bytes() == GOLDEN[:76]  # section, interface and name resolution blocks


def test_interfaces_with_their_own_resolution_and_link_type(tmp_path):
    ts = 1_700_000_000_654_321
    w = PcapngWriter().shb()
    w.idb(1, tsresol=6).idb(113, tsresol=9).idb(101, tsresol=0x80 | 20).idb(0, tsresol=3, tsoffset=10)
    w.epb(0, ts, b"eth").epb(1, ts + 1, b"sll").epb(2, ts + 2, b"raw").epb(3, ts + 3000, b"null")
    r, chunks = _chunks(tmp_path, w.bytes())
    got = _packets(chunks)
    assert [g[1:] for g in got] == [(1, b"eth"), (113, b"sll"), (101, b"raw"), (0, b"null")]
    assert got[0][0] == ts and got[1][0] == ts + 1
    assert abs(got[2][0] - (ts + 2)) <= 1  # 2**-20 s units round down
    assert got[3][0] == (ts + 3000) // 1000 * 1000 + 10_000_000  # millisecond units plus if_tsoffset


def test_sections_in_both_byte_orders_spb_opb_and_unknown_blocks(tmp_path):
    w = PcapngWriter().shb("<").idb(1).epb(0, 1_000_000, b"a")
    w.block(0x0BAD, b"custom block content")
    w.shb(">").idb(228).idb(229, tsresol=9)
    w.epb(1, 2_000_000, b"b").opb(0, 3_000_000, b"c").spb(b"d").block(5, b"\0" * 8)
    r, chunks = _chunks(tmp_path, w.bytes(), chunk_size=32)
    assert _packets(chunks) == [(1_000_000, 1, b"a"), (2_000_000, 229, b"b"), (3_000_000, 228, b"c"),
                                (3_000_000, 228, b"d")]  # SPB: no timestamp, takes the previous packet's
    assert [i.linktype for i in r.interfaces] == [1, 228, 229] and not r.anomalies


def test_truncated_and_bad_blocks(tmp_path):
    w = PcapngWriter().shb().idb(1).epb(0, 1, b"a" * 8).epb(5, 2, b"no such interface").epb(0, 3, b"c" * 8)
    data = w.bytes()
    r, chunks = _chunks(tmp_path, data[:-7])
    assert [p[2] for p in _packets(chunks)] == [b"a" * 8]
    assert [(a.kind, a.packet_index) for a in r.anomalies] == [("corrupt_block", 1), ("truncated_file", 1)]
    assert r.anomalies[1].nbytes == 40 - 7


def test_binary_resolution_conversion():
    ts = np.array([3 << 20 | 1 << 19], np.uint64)  # 3.5 s in 2**-20 units
    assert to_us(ts, Interface(1, 0x80 | 20, 0)).tolist() == [3_500_000]
    assert parse_idb(bytes.fromhex("0100 0000 ffff0000 0e00 0800 0500000000000000 0000 0000"), "<") == \
        Interface(1, 6, 5)
