"""IPv4/IPv6 headers, extension headers and fragment reassembly, through parse_ip and the whole driver."""

from __future__ import annotations

import struct

import numpy as np

from kafkatap.dissect.packets import ip
from kafkatap.dissect.streams.driver import run_streams
from tests.support.pcap import RecordingSink, ether, ipv4, ipv6, tcp_segment, write_pcap

SEG = tcp_segment(40000, 9092, 100, payload=b"0123456789")

GOLDEN_IPV4_OPTIONS = bytes.fromhex(
    "46"  # version 4, IHL 6 (24 bytes)
    "00"  # DSCP/ECN
    "0036"  # total length 54 = 24 + 30
    "1234" "4000"  # identification, flags DF, fragment offset 0
    "40" "06" "0000"  # TTL 64, protocol TCP, checksum (not checked)
    "c0000201" "c0000202"  # 192.0.2.1 -> 192.0.2.2
    "01010100"  # options: NOP NOP NOP EOL
) + SEG

GOLDEN_IPV6_EXT = bytes.fromhex(
    "60000000"  # version 6, traffic class, flow label
    "002e"  # payload length 46 = 8 + 8 + 30
    "00" "40"  # next header hop-by-hop, hop limit
    "20010db8000000000000000000000001" "20010db8000000000000000000000002"
    "3c" "00" "010400000000"  # hop-by-hop: next = destination options (60), length 0 (8 bytes), PadN
    "06" "00" "010400000000"  # destination options: next = TCP, 8 bytes
) + SEG


def _parse(frame: bytes, version: int = 0) -> dict:
    d = np.frombuffer(frame, np.uint8)
    f = ip.parse_ip(d, np.array([0]), np.array([len(frame)]), np.array([len(frame)]), np.array([version]))
    return {k: int(v[0]) for k, v in f._asdict().items()}


def test_ipv4_with_options():
    f = _parse(GOLDEN_IPV4_OPTIONS, 4)
    assert f["status"] == ip.OK_TCP and f["l4"] == 24 and f["l4end"] == 54 and f["missing"] == 0
    assert (f["src_hi"], f["src_lo"], f["dst_lo"]) == (ip.IPV4_HI, 0xC0000201, 0xC0000202)
    assert ip.address(f["src_hi"], f["src_lo"]) == "192.0.2.1"


def test_ethernet_padding_and_tso_length_zero():
    short = ipv4("10.0.0.1", "10.0.0.2", b"\0" * 20)
    assert _parse(short + b"\0" * 6)["l4end"] == 40  # frame padded to the Ethernet minimum
    assert _parse(ipv4("10.0.0.1", "10.0.0.2", SEG, total=0))["l4end"] == 50  # TSO: length 0


def test_bad_and_cut_headers():
    assert _parse(b"\x45" + b"\0" * 10)["status"] == ip.SHORT
    assert _parse(b"\x43" + GOLDEN_IPV4_OPTIONS[1:])["status"] == ip.BAD  # IHL 3
    assert _parse(GOLDEN_IPV4_OPTIONS, 6)["status"] == ip.BAD  # the link said IPv6
    assert _parse(ipv4("10.0.0.1", "10.0.0.2", b"", proto=17))["status"] == ip.NOT_TCP


def test_ipv6_extension_headers_take_the_slow_path(tmp_path):
    f = _parse(GOLDEN_IPV6_EXT)
    assert f["status"] == ip.SLOW
    r = ip.parse_slow(GOLDEN_IPV6_EXT, 0, len(GOLDEN_IPV6_EXT), len(GOLDEN_IPV6_EXT), 0, ip.Fragments())
    assert r.status == ip.OK_TCP and r.segment == SEG
    assert ip.address(r.src_hi, r.src_lo) == "2001:db8::1"
    sink = RecordingSink()
    run_streams([write_pcap(tmp_path / "e.pcap", [(1, ether(GOLDEN_IPV6_EXT, 0x86DD))])], sink)
    assert sink.data(sink.conns[0], 0) == b"0123456789"
    assert sink.conns[0].addr == (("2001:db8::1", 40000), ("2001:db8::2", 9092))


def _v4_fragments(segment: bytes, size: int, ident: int = 7) -> list[bytes]:
    out = []
    for off in range(0, len(segment), size):
        more = 0x2000 if off + size < len(segment) else 0
        out.append(ether(ipv4("10.0.0.1", "10.0.0.2", segment[off:off + size], ident=ident, frag=more | off // 8)))
    return out


def test_ipv4_fragments_reassembled_in_any_order(tmp_path):
    seg = tcp_segment(40000, 9092, 100, payload=bytes(range(200)) * 20)
    frags = _v4_fragments(seg, 1480)
    frames = [(n, f) for n, f in enumerate([frags[2], frags[0], frags[0], frags[1]])] + \
        [(10, ether(ipv4("10.0.0.1", "10.0.0.2", tcp_segment(40000, 9092, 100 + 4000, payload=b"next"))))]
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / "f.pcap", frames)], sink)
    assert sink.data(sink.conns[0], 0) == bytes(range(200)) * 20 + b"next"
    assert stats.tcp_packets == 5 and not stats.anomalies


def test_ipv6_fragments(tmp_path):
    seg = tcp_segment(40000, 9092, 100, payload=b"x" * 3000)
    frames = []
    for off in range(0, len(seg), 1448):
        more = 1 if off + 1448 < len(seg) else 0
        fh = struct.pack(">BBHI", 6, 0, off | more, 99)  # next header TCP, offset (8-byte units << 3) + M flag
        frames.append((off, ether(ipv6("::1", "::1", seg[off:off + 1448], next_header=44, ext=fh), 0x86DD)))
    sink = RecordingSink()
    run_streams([write_pcap(tmp_path / "f6.pcap", frames[::-1])], sink)
    assert sink.data(sink.conns[0], 0) == b"x" * 3000


def test_incomplete_fragments_time_out_as_anomalies(tmp_path):
    frags = _v4_fragments(tcp_segment(40000, 9092, 100, payload=b"y" * 3000), 1480)
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / "t.pcap", [(1, frags[0]), (2, frags[2])])], sink)
    (a,) = sink.anomalies("fragment_timeout")
    assert a[4] == 1480 + (3020 - 2960) and stats.skipped_bytes["fragment_timeout"] == a[4]


def test_fragment_memory_is_bounded():
    frags = ip.Fragments(max_bytes=3000)
    for ident in range(5):
        assert frags.add((4, 1, 2, ident, 6), 0, 0, b"z" * 1000, True) is None
    assert frags.nbytes <= 3000 and [r for r, _ in frags.dropped] == ["fragments_evicted"] * 2


def test_snapped_payload_becomes_a_gap(tmp_path):
    full = ether(ipv4("10.0.0.1", "10.0.0.2", tcp_segment(40000, 9092, 100, payload=b"A" * 1000)))
    after = ether(ipv4("10.0.0.1", "10.0.0.2", tcp_segment(40000, 9092, 1100, payload=b"B" * 10)))
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / "s.pcap", [(1, full[:154], len(full)), (2, after)])], sink)
    assert sink.pieces(sink.conns[0], 0) == [b"A" * 100, ("gap", 900), b"B" * 10]
    assert stats.anomalies == {"snapped_packet": 1} and stats.gap_bytes == 900
