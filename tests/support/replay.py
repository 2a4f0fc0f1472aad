"""A sample's connections re-packetised (same addresses, same bytes, fresh TCP segments), so fault and fuzz tests can
drop, reorder, duplicate or corrupt segments and know exactly which Kafka messages the damage touched."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkatap.dissect.streams.driver import run_streams
from kafkatap.samples import capture_path, load_truth
from tests.support.pcap import RecordingSink, TcpFlow


@dataclass
class Segment:
    conn: int
    side: int
    start: int  # stream offset of the first payload byte (0 for control segments)
    end: int
    frame: bytes


class Replay:
    """The data of every connection of sample `name`, in capture order, ready to be re-packetised."""

    def __init__(self, name: str) -> None:
        sink = RecordingSink()
        run_streams([str(capture_path(name))], sink)
        self.conns = sink.conns
        index = {id(c): i for i, c in enumerate(self.conns)}
        self.events = [(index[id(e[1])], e[2], e[3]) for e in sink.events if e[0] == "data"]
        self.port = load_truth(name)["broker_ports"][0]

    def segments(self, handshake: bool = True, mss: int = 1460, edit=None) -> list[Segment]:
        """TCP segments of all connections; edit(conn, side, n, data) may replace the n-th data event's bytes."""
        flows: dict[int, TcpFlow] = {}
        offsets: dict[tuple[int, int], int] = {}
        counts: dict[tuple[int, int], int] = {}
        out: list[Segment] = []
        for conn, side, data in self.events:
            if conn not in flows:
                c = self.conns[conn]
                flows[conn] = TcpFlow(client=c.addr[0], server=c.addr[1], isn=[1000 + conn, 900000 + conn])
                frames = flows[conn].handshake()
                if handshake:
                    out += [Segment(conn, -1, 0, 0, f) for f in frames]
            n = counts.get((conn, side), 0)
            counts[(conn, side)] = n + 1
            if edit is not None:
                data = edit(conn, side, n, data)
            for i in range(0, len(data), mss):
                piece = data[i:i + mss]
                start = offsets.get((conn, side), 0)
                offsets[(conn, side)] = start + len(piece)
                out.append(Segment(conn, side, start, start + len(piece), flows[conn].send(side, piece, mss)[0]))
        for conn, flow in flows.items():
            out += [Segment(conn, -1, 0, 0, f) for f in flow.fin(0) + flow.fin(1)]
        return out

    def messages(self, conn: int, side: int) -> list[tuple[int, int, int]]:
        """(start, end, correlation_id) of every Kafka message of one direction of the original stream."""
        data = b"".join(d for c, s, d in self.events if c == conn and s == side)
        out, pos = [], 0
        while pos + 4 <= len(data):
            size = struct.unpack_from(">i", data, pos)[0]
            corr = struct.unpack_from(">i", data, pos + 8 if side == 0 else pos + 4)[0]
            out.append((pos, pos + 4 + size, corr))
            pos += 4 + size
        return out
