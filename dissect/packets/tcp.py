"""TCP headers: ports, sequence number, flags and where the payload starts, for a whole chunk at once (and for one
reassembled IP datagram)."""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from kafkatap.dissect.packets.gather import be16, be32, u8

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

# status of each segment
OK, BAD, SHORT = 0, 1, 2


class TcpFields(NamedTuple):
    status: np.ndarray
    sport: np.ndarray
    dport: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    flags: np.ndarray
    payload: np.ndarray  # offset of the payload
    payload_len: np.ndarray  # captured payload bytes
    window: np.ndarray  # the receive window advertised, unscaled (0: the sender cannot take more data)


def parse_tcp(data: np.ndarray, l4: np.ndarray, l4end: np.ndarray) -> TcpFields:
    avail = l4end - l4
    hlen = (u8(data, l4 + 12) >> 4) * 4
    status = np.where(hlen < 20, BAD, OK)
    status = np.where(avail < np.maximum(hlen, 20), SHORT, status)
    payload = l4 + hlen
    return TcpFields(status, be16(data, l4), be16(data, l4 + 2), be32(data, l4 + 4), be32(data, l4 + 8),
                     u8(data, l4 + 13) & 0x3F, payload, np.maximum(l4end - payload, 0), be16(data, l4 + 14))


def parse_segment(segment: bytes) -> tuple[int, int, int, int, int, int] | None:
    """(sport, dport, seq, ack, flags, header length) of one TCP segment, or None if its header is cut or invalid."""
    if len(segment) < 20:
        return None
    sport, dport, seq, ack, off_flags = struct.unpack_from(">HHIIH", segment, 0)
    hlen = (off_flags >> 12) * 4
    if hlen < 20 or hlen > len(segment):
        return None
    return sport, dport, seq, ack, off_flags & 0x3F, hlen
