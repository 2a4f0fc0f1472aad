"""Classic pcap reader: golden bytes for both byte orders and both resolutions, big frames, cut files."""

from __future__ import annotations

import struct

import pytest

from kafkatap.dissect.packets.files import open_capture
from kafkatap.dissect.packets.pcap import CaptureFormatError, PcapReader
from kafkatap.dissect.streams.driver import run_streams
from tests.support.pcap import RecordingSink, pcap_bytes

# little-endian, microseconds, snaplen 65535, Ethernet
LE_US = bytes.fromhex(
    "d4c3b2a1"  # magic 0xa1b2c3d4 written little-endian
    "0200" "0400"  # version 2.4
    "00000000" "00000000"  # thiszone, sigfigs
    "ffff0000"  # snaplen 65535
    "01000000"  # link type 1 (Ethernet)
    # record 0
    "00f15365"  # ts_sec 0x6553f100 = 1700000000
    "40e20100"  # ts_usec 123456
    "03000000"  # caplen 3
    "05000000"  # origlen 5
    "aabbcc"  # frame
    # record 1
    "01f15365" "00000000" "00000000" "00000000"  # ts 1700000001.0, empty frame
)

# big-endian, nanoseconds, Linux cooked (113)
BE_NS = bytes.fromhex(
    "a1b23c4d"  # magic 0xa1b23c4d (nanosecond) written big-endian
    "0002" "0004" "00000000" "00000000"
    "00040000"  # snaplen 262144
    "00000071"  # link type 113
    "6553f100"  # ts_sec 1700000000
    "075bcd15"  # ts_nsec 123456789 -> 123456 us
    "00000002" "00000002"  # caplen 2, origlen 2
    "0102"
)


def _reader(tmp_path, data: bytes, chunk_size: int = 1 << 20) -> PcapReader:
    p = tmp_path / "f.pcap"
    p.write_bytes(data)
    return open_capture(str(p), chunk_size)


def test_golden_little_endian_microseconds(tmp_path):
    r = _reader(tmp_path, LE_US)
    assert (r.endian, r.nano, r.snaplen, r.linktype) == ("<", False, 65535, 1)
    (c,) = list(r.chunks())
    assert c.ts_us.tolist() == [1_700_000_000_123_456, 1_700_000_001_000_000]
    assert c.caplen.tolist() == [3, 0] and c.origlen.tolist() == [5, 0]
    assert c.buf[c.off[0]:c.off[0] + 3] == b"\xaa\xbb\xcc"
    assert c.index0 == 0 and c.nbytes == len(LE_US) - 24 and not r.anomalies


def test_golden_big_endian_nanoseconds(tmp_path):
    r = _reader(tmp_path, BE_NS)
    assert (r.endian, r.nano, r.linktype) == (">", True, 113)
    (c,) = list(r.chunks())
    assert c.ts_us.tolist() == [1_700_000_000_123_456]
    assert c.linktype.tolist() == [113] and c.buf[c.off[0]:c.off[0] + 2] == b"\x01\x02"


def test_writer_round_trip_both_orders(tmp_path):
    packets = [(1_700_000_000_000_001 + n, bytes([n]) * n) for n in range(50)]
    for endian in "<>":
        for nano in (False, True):
            r = _reader(tmp_path, pcap_bytes(packets, 228, endian=endian, nano=nano), chunk_size=64)
            chunks = list(r.chunks())
            assert len(chunks) > 1  # records cross chunk boundaries
            got = [(int(c.ts_us[i]), c.buf[c.off[i]:c.off[i] + c.caplen[i]]) for c in chunks for i in range(len(c.off))]
            assert got == packets and [c.index0 for c in chunks] == sorted({c.index0 for c in chunks})


def test_frame_larger_than_64k_and_snaplen(tmp_path):
    big = bytes(range(256)) * 1000  # 256,000 bytes, snaplen says 65535
    r = _reader(tmp_path, pcap_bytes([(1, b"x"), (2, big), (3, b"y")], snaplen=65535), chunk_size=4096)
    frames = [c.buf[o:o + n] for c in r.chunks() for o, n in zip(c.off.tolist(), c.caplen.tolist())]
    assert frames == [b"x", big, b"y"] and not r.anomalies


@pytest.mark.parametrize("cut", [3, 16 + 10])  # inside the record header / inside the frame
def test_truncated_file(tmp_path, cut):
    data = pcap_bytes([(1, b"a" * 10), (2, b"b" * 20)])
    whole = len(data) - 36
    r = _reader(tmp_path, data[:whole + cut])
    assert sum(len(c.off) for c in r.chunks()) == 1
    (a,) = r.anomalies
    assert (a.kind, a.nbytes, a.packet_index) == ("truncated_file", cut, 1)


def test_corrupt_record_length_is_not_read(tmp_path):
    data = pcap_bytes([(1, b"a" * 10)]) + struct.pack("<IIII", 2, 0, 0xFFFFFFF0, 0xFFFFFFF0) + b"z" * 100
    r = _reader(tmp_path, data)
    assert sum(len(c.off) for c in r.chunks()) == 1
    assert [(a.kind, a.nbytes) for a in r.anomalies] == [("truncated_file", 116)]


def test_bad_magic_is_a_clear_error_and_an_anomaly(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("this is not a capture\n")
    with pytest.raises(CaptureFormatError, match="not a pcap or pcapng"):
        open_capture(str(p))
    sink = RecordingSink()
    stats = run_streams([str(p)], sink)
    (a,) = sink.anomalies("bad_capture_file")
    assert a[3].capture_file == str(p) and a[4] == p.stat().st_size
    assert stats.files == 0 and stats.skipped_bytes == {"bad_capture_file": p.stat().st_size}


def test_snapped_packet_is_reported(tmp_path):
    p = tmp_path / "s.pcap"
    p.write_bytes(pcap_bytes([(5, b"\0" * 60, 1514)]))
    sink = RecordingSink()
    stats = run_streams([str(p)], sink)
    (a,) = sink.anomalies("snapped_packet")
    assert a[4] == 1454 and a[3].packet_index == 0 and stats.anomalies["snapped_packet"] == 1


def test_empty_capture(tmp_path):
    r = _reader(tmp_path, pcap_bytes([]))
    assert list(r.chunks()) == [] and not r.anomalies
