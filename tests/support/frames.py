"""Frames of every shape the packet layer tells apart (each link type, VLAN stacks, IPv4 options and fragments, IPv6
extension headers, non-IP, non-TCP, TCP flags and options, cut and bad headers), seeded damage to them, and the deep
comparison of results, for the tests that hold the compiled packet layer to its numpy reference."""

from __future__ import annotations

import random
import struct

import numpy as np

from tests.support.pcap import (ACK, FIN, PSH, RST, SYN, ether, ipv4, ipv6, null, sll, sll2, tcp_segment)

UNSUPPORTED_LINK = 147  # a user-defined link type: its frames are counted, never parsed

A4, B4 = "10.0.0.1", "10.0.0.2"
A6, B6 = "2001:db8::1", "2001:db8::2"


def _seg(flags: int = ACK | PSH, payload: bytes = b"kafka bytes", options: bytes = b"") -> bytes:
    return tcp_segment(40000, 9092, 0xFFFFFFF0, 0x12345678, flags, payload, options=options)


def shapes() -> list[tuple[int, bytes]]:
    """(link type, frame) pairs: one of each shape, whole and well formed unless its shape is a broken header."""
    seg = _seg()
    v4, v6 = ipv4(A4, B4, seg), ipv6(A6, B6, seg)
    hop_by_hop = struct.pack(">BB6x", 6, 0)
    bad_offset = bytearray(seg)
    bad_offset[12] = 0x30  # data offset 3: 12 bytes
    frames = [
        (1, ether(v4)),
        (1, ether(ipv4(A4, B4, _seg(ACK, b"")))),
        (1, ether(ipv4(A4, B4, _seg(0, b"")))),
        *[(1, ether(ipv4(A4, B4, _seg(flag | ACK, b"")))) for flag in (SYN, FIN, RST)],
        (1, ether(ipv4(A4, B4, _seg(options=b"\x01\x01\x08\x0a" + b"\0" * 8)))),
        (1, ether(ipv4(A4, B4, seg, options=b"\x01\x01\x01\x00"))),
        (1, ether(ipv4(A4, B4, seg, total=0))),
        (1, ether(ipv4(A4, B4, seg[:16], ident=7, frag=0x2000))),
        (1, ether(ipv4(A4, B4, seg[16:], ident=7, frag=2))),
        (1, ether(ipv4(A4, B4, b"\0" * 8, proto=17))),
        (1, ether(ipv4(A4, B4, bytes(bad_offset)))),
        (1, ether(v6, 0x86DD)),
        (1, ether(ipv6(A6, B6, hop_by_hop + seg, next_header=0), 0x86DD)),
        (1, ether(ipv6(A6, B6, struct.pack(">BBHI", 6, 0, 1, 99) + seg, next_header=44), 0x86DD)),
        (1, ether(v6[:4] + b"\0\0" + v6[6:], 0x86DD)),  # payload length 0
        (1, ether(v4, vlans=[(0x8100, 5)])),
        (1, ether(v4, vlans=[(0x88A8, 100), (0x8100, 200)])),
        (1, ether(v4, vlans=[(0x9100, n) for n in range(9)])),  # more tags than are followed
        (1, ether(b"\0" * 28, 0x0806)),  # ARP
        (1, ether(v6)),  # the ethertype says IPv4
        (113, sll(v4)),
        (113, sll(v6, 0x86DD)),
        (276, sll2(v4)),
        (0, null(v4)),
        (0, null(v6, 30)),
        (108, null(v4, 2, ">")),
        (0, null(v4, 7)),
        (101, v4), (101, v6), (12, v4), (14, v6), (228, v4), (229, v6), (228, v6),
        (101, b"\x55" + v4[1:]),  # IP version 5
        (UNSUPPORTED_LINK, ether(v4)),
    ]
    return frames


def damage(frame: bytes, rnd: random.Random) -> tuple[bytes, int]:
    """(frame with a few bytes of its headers changed, wire length): random flips, a cut, or an absurd field."""
    buf = bytearray(frame)
    kind = rnd.randrange(4)
    if kind == 0:
        for _ in range(rnd.randrange(1, 4)):
            buf[rnd.randrange(min(len(buf), 80))] ^= 1 << rnd.randrange(8)
    elif kind == 1:
        cut = rnd.randrange(len(buf) + 1)
        return bytes(buf[:cut]), len(buf) if rnd.random() < 0.5 else cut
    elif kind == 2:
        at = rnd.randrange(min(len(buf), 80))
        buf[at:at + 2] = rnd.choice((b"\xff\xff", b"\0\0", b"\x80\x00", b"\x86\xdd", b"\x81\x00"))
    wire = len(buf) + (rnd.choice((1, 1000, 70000)) if rnd.random() < 0.2 else 0)
    return bytes(buf[:len(frame)]), wire


def assert_same(a: object, b: object, where: str = "") -> None:
    """Equal values of equal types, arrays by dtype and content, through tuples and lists."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b), where
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), where
        for n, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{n}]")
    else:
        assert a == b, where
