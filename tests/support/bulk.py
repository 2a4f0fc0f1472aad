"""A large capture of many small Fetch exchanges, written in seconds: one pair's frames built once, then copied with
the ports, sequence numbers and correlation id patched in place (tests that need a run lasting a while)."""

from __future__ import annotations

import struct
from pathlib import Path

from tests.support.kafka_messages import fetch_request, fetch_response
from tests.support.pcap import TcpFlow, pcap_bytes

SPORT, DPORT, SEQ, ACK_NO = 34, 36, 38, 42  # offsets in an Ethernet + IPv4 + TCP frame without options
PAYLOAD = 54


def chatty_pcap(path: Path, connections: int, pairs: int, port: int = 9092) -> Path:
    """connections x pairs Fetch request/response pairs on loopback-like addresses, each connection opened with
    a handshake; the file is written as one pcap."""
    flow = TcpFlow(server=("10.0.0.2", port))
    request, response = fetch_request(0), fetch_response(0)
    ask, answer = bytearray(flow.send(0, request)[0]), bytearray(flow.send(1, response)[0])
    out = bytearray(pcap_bytes([]))
    record = struct.Struct("<IIII")
    ts = 1_700_000_000_000_000
    for c in range(connections):
        client_port = 20000 + c
        flow = TcpFlow(client=("10.0.0.1", client_port), server=("10.0.0.2", port))
        for frame in flow.handshake():
            out += record.pack(ts // 1_000_000, ts % 1_000_000, len(frame), len(frame)) + frame
            ts += 10
        seq = list(flow.next)
        for corr in range(pairs):
            for side, frame, corr_at in ((0, ask, PAYLOAD + 8), (1, answer, PAYLOAD + 4)):
                struct.pack_into(">HH", frame, SPORT, *((client_port, port) if side == 0 else (port, client_port)))
                struct.pack_into(">II", frame, SEQ, seq[side], seq[1 - side])
                struct.pack_into(">i", frame, corr_at, corr)
                out += record.pack(ts // 1_000_000, ts % 1_000_000, len(frame), len(frame)) + frame
                seq[side] = (seq[side] + len(frame) - PAYLOAD) % 2 ** 32
                ts += 10
    path.write_bytes(out)
    return path
