"""Is a connection Kafka, TLS on a Kafka port, or something else, and which side is the client?

Direction comes from the SYN (side 0 sent it: the client), else from the port (the side talking to a Kafka port),
else from the shape of the first bytes (the side whose stream starts with a plausible request header). Kafka on an
unconfigured port is found the same way, so a user need not know the brokers' ports.
"""

from __future__ import annotations

from kafkatap.dissect.kafka.framing import YES
from kafkatap.dissect.kafka.plausible import request_check
from kafkatap.dissect.streams.reassembly import Conn

PROBE_LIMIT = 64 * 1024
"""Bytes held per connection while deciding whether an unknown port speaks Kafka."""

HEAD_BYTES = 32 * 1024
"""Bytes of a side's start enough to judge its first request header."""

Probe = list[tuple[int, int, "bytes | int", object]]
"""What a connection delivered while undecided: (side, ts_us, data or a gap's byte count, where)."""


def classify(conn: Conn, probe: Probe, ports: set[int], final: bool = False) -> tuple[str, int | None]:
    """('kafka' | 'tls' | 'ignored' | 'probe', client side). 'probe': more bytes are needed (never when final)."""
    on_port = conn.addr[0][1] in ports or conn.addr[1][1] in ports
    by_port = port_side(conn, ports)
    spoken: dict[int, bytes] = {}
    for side, _, data, _ in probe:
        if side not in spoken:
            spoken[side] = b"" if isinstance(data, int) else data[:3]  # a gap first: its start is unknown
    for side, head in spoken.items():
        if is_tls(head):
            if not on_port:
                return "ignored", None
            return "tls", 0 if conn.syn_seen else (by_port if by_port is not None else side)
    if on_port and (conn.syn_seen or by_port is not None):
        return "kafka", 0 if conn.syn_seen else by_port
    undecided = False
    for side in (0,) if conn.syn_seen else (0, 1):
        if side not in spoken:
            undecided = True
            continue
        verdict = request_check(side_bytes(probe, side), 0, body=False)
        if verdict == YES:
            return "kafka", side
        undecided |= verdict < 0
    if undecided and not final:
        return "probe", None
    if on_port:  # both ends on Kafka ports and no request-shaped start: keep it, the first sender as client
        return "kafka", 0
    return "ignored", None


def is_tls(head: bytes) -> bool:
    """A TLS record header: handshake (0x16) or application data (0x17), version 3.0-3.4."""
    return len(head) == 3 and head[0] in (0x16, 0x17) and head[1] == 3 and head[2] <= 4


def side_bytes(probe: Probe, side: int) -> bytes:
    """The first bytes one side delivered (up to a gap)."""
    out = b""
    for s, _, data, _ in probe:
        if s == side:
            if isinstance(data, int):
                break
            out += data
            if len(out) >= HEAD_BYTES:
                break
    return out


def port_side(conn: Conn, ports: set[int]) -> int | None:
    """The client side by port: the side talking to a Kafka port. None if neither or both ports are Kafka's."""
    to0 = conn.addr[0][1] in ports
    to1 = conn.addr[1][1] in ports
    if to0 == to1:
        return None
    return 1 if to0 else 0
