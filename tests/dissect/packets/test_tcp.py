"""TCP header parsing: golden bytes, options, bad data offsets."""

from __future__ import annotations

import numpy as np

from kafkatap.dissect.packets import tcp
from kafkatap.dissect.streams.driver import run_streams
from tests.support.pcap import RecordingSink, ether, ipv4, write_pcap

GOLDEN = bytes.fromhex(
    "9c40"  # source port 40000
    "2384"  # destination port 9092
    "fffffffe"  # sequence number 4294967294
    "00000001"  # acknowledgment number
    "80"  # data offset 8 (32 bytes: 12 bytes of options)
    "18"  # flags PSH|ACK
    "ffff" "0000" "0000"  # window, checksum, urgent pointer
    "0101080a0000000100000002"  # options: NOP NOP timestamps
    "6b61666b61"  # payload "kafka"
)


def _vec(segment: bytes) -> dict:
    d = np.frombuffer(segment, np.uint8)
    f = tcp.parse_tcp(d, np.array([0]), np.array([len(segment)]))
    return {k: int(v[0]) for k, v in f._asdict().items()}


def test_golden_header():
    f = _vec(GOLDEN)
    assert f == {"status": tcp.OK, "sport": 40000, "dport": 9092, "seq": 0xFFFFFFFE, "ack": 1,
                 "flags": tcp.PSH | tcp.ACK, "payload": 32, "payload_len": 5, "window": 0xFFFF}
    assert tcp.parse_segment(GOLDEN) == (40000, 9092, 0xFFFFFFFE, 1, tcp.PSH | tcp.ACK, 32)


def test_bad_and_cut_headers():
    assert _vec(GOLDEN[:12] + b"\x40" + GOLDEN[13:])["status"] == tcp.BAD  # data offset 4
    assert _vec(GOLDEN[:25])["status"] == tcp.SHORT  # options cut
    assert _vec(GOLDEN[:10])["status"] == tcp.SHORT
    assert tcp.parse_segment(GOLDEN[:25]) is None and tcp.parse_segment(b"") is None


def test_bad_tcp_header_is_an_anomaly(tmp_path):
    frame = ether(ipv4("10.0.0.1", "10.0.0.2", GOLDEN[:12] + b"\x20" + GOLDEN[13:]))
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / "b.pcap", [(1, frame)])], sink)
    (a,) = sink.anomalies("bad_tcp_header")
    assert a[4] == len(frame) and stats.skipped_bytes == {"bad_tcp_header": len(frame)} and not sink.conns
