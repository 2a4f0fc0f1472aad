"""Link layers: golden frames of every supported link type, VLAN stacks, and what happens to the others."""

from __future__ import annotations

import numpy as np
import pytest

from kafkatap.dissect.packets import link
from kafkatap.dissect.streams.driver import run_streams
from tests.support.pcap import PcapngWriter, RecordingSink, ether, ipv4, ipv6, null, sll, sll2, tcp_segment, write_pcap

IP4 = ipv4("192.0.2.1", "192.0.2.2", tcp_segment(1234, 9092, 1, payload=b"kafka"))
IP6 = ipv6("2001:db8::1", "2001:db8::2", tcp_segment(1234, 9092, 1, payload=b"kafka"))

GOLDEN_VLAN_QINQ = bytes.fromhex(
    "020000000002" "020000000001"  # destination, source MAC
    "88a8" "0064"  # 802.1ad service tag, VLAN 100
    "8100" "00c8"  # 802.1Q customer tag, VLAN 200
    "0800"  # IPv4
) + IP4

GOLDEN_SLL = bytes.fromhex(
    "0000"  # packet type: to us
    "0304"  # ARPHRD_LOOPBACK (772)
    "0006" "000000000000" "0000"  # address length 6, address (8 bytes)
    "86dd"  # protocol IPv6
) + IP6

GOLDEN_SLL2 = bytes.fromhex(
    "0800"  # protocol IPv4
    "0000"  # reserved
    "00000001"  # interface index 1
    "0304"  # ARPHRD_LOOPBACK
    "00" "06" "0000000000000000"  # packet type, address length, address
) + IP4


def _one(frame: bytes, linktype: int) -> tuple[int, int, int]:
    data = np.frombuffer(frame, np.uint8)
    l3, version, status = link.network_layer(data, np.array([0]), np.array([len(frame)]), linktype)
    return int(l3[0]), int(version[0]), int(status[0])


@pytest.mark.parametrize("frame, linktype, expected", [
    (ether(IP4), link.ETHERNET, (14, 4, link.OK)),
    (ether(IP6, 0x86DD), link.ETHERNET, (14, 6, link.OK)),
    (GOLDEN_VLAN_QINQ, link.ETHERNET, (22, 4, link.OK)),
    (ether(IP4, vlans=[(0x9100, 1), (0x9100, 2), (0x8100, 3)]), link.ETHERNET, (26, 4, link.OK)),
    (ether(b"\0" * 28, 0x0806), link.ETHERNET, (14, 0, link.NOT_IP)),  # ARP
    (b"\x02\0\0\0\0\x02\x02\0\0\0", link.ETHERNET, (14, 0, link.SHORT)),
    (GOLDEN_SLL, link.SLL, (16, 6, link.OK)),
    (GOLDEN_SLL2, link.SLL2, (20, 4, link.OK)),
    (null(IP4, 2, "<"), link.NULL, (4, 4, link.OK)),
    (null(IP4, 2, ">"), link.NULL, (4, 4, link.OK)),  # written on a big-endian host
    (null(IP6, 24, "<"), link.NULL, (4, 6, link.OK)),
    (null(IP6, 28, ">"), link.LOOP, (4, 6, link.OK)),
    (null(IP6, 30, "<"), link.NULL, (4, 6, link.OK)),
    (null(b"\0" * 20, 7, "<"), link.NULL, (4, 0, link.NOT_IP)),
    (IP4, link.RAW, (0, 0, link.OK)),
    (IP6, link.RAW_OPENBSD, (0, 0, link.OK)),
    (IP4, link.IPV4, (0, 4, link.OK)),
    (IP6, link.IPV6, (0, 6, link.OK)),
])
def test_network_layer(frame, linktype, expected):
    assert _one(frame, linktype) == expected


@pytest.mark.parametrize("frame, linktype", [
    (GOLDEN_VLAN_QINQ, 1), (GOLDEN_SLL, 113), (GOLDEN_SLL2, 276), (null(IP6, 30), 0), (null(IP4, 2, ">"), 108),
    (IP4, 101), (IP6, 229), (IP4, 12), (IP6, 14)])
def test_every_link_type_reaches_the_stream(tmp_path, frame, linktype):
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / "l.pcap", [(1, frame)], linktype)], sink)
    (conn,) = sink.conns
    assert sink.data(conn, 0) == b"kafka" and conn.addr[0][1] == 1234 and stats.skipped_bytes == {}


def test_writer_builds_the_golden_cooked_headers():
    assert sll(IP6, 0x86DD) == GOLDEN_SLL and sll2(IP4) == GOLDEN_SLL2
    assert ether(IP4, vlans=[(0x88A8, 100), (0x8100, 200)]) == GOLDEN_VLAN_QINQ


def test_unknown_link_type_is_one_anomaly_per_file_and_counted(tmp_path):
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / "u.pcap", [(1, IP4), (2, IP4)], 147)], sink)
    (a,) = sink.anomalies("unknown_link_type")
    assert "147" in a[2] and stats.skipped_bytes["unknown_link_type"] == 2 * len(IP4)
    assert stats.packets == 2 and stats.non_tcp_packets == 2 and not sink.conns


def test_mixed_link_types_in_one_chunk(tmp_path):
    w = PcapngWriter().shb().idb(1).idb(147).idb(113)
    w.epb(0, 1, ether(IP4)).epb(1, 2, b"whatever").epb(2, 3, GOLDEN_SLL)
    path = w.write(str(tmp_path / "m.pcapng"))
    sink = RecordingSink()
    stats = run_streams([path], sink)
    assert [sink.data(c, 0) for c in sink.conns] == [b"kafka", b"kafka"]
    assert stats.skipped_bytes == {"unknown_link_type": 8} and stats.anomalies == {"unknown_link_type": 1}


def test_non_ip_frames_are_counted(tmp_path):
    arp = ether(b"\0" * 28, 0x0806)
    stats = run_streams([write_pcap(tmp_path / "a.pcap", [(1, arp)])], RecordingSink())
    assert stats.skipped_bytes == {"not_ip": len(arp)} and stats.non_tcp_packets == 1


def test_frame_shorter_than_its_link_header(tmp_path):
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / "s.pcap", [(1, b"\x02" * 10), (2, b"\x02" * 10, 60)])], sink)
    assert [a[4] for a in sink.anomalies("bad_link_header")] == [10]  # the snapped one is a snapped_packet instead
    assert stats.skipped_bytes == {"bad_link_header": 10, "snapped_headers": 10, "snapped_packet": 50}
