"""Packet-layer throughput, compiled core against the pure-Python dissector: pcap/pcapng -> reassembled TCP streams
(dissect.streams.driver.run_streams), no Kafka decoding.

Synthetic capture shapes written with tests/support/pcap.py:
  loopback: 64 KB frames (what tcpdump sees on lo with GSO), one data frame per ACK;
  ethernet: 1,500-byte MTU frames from 64 interleaved connections, one pure ACK per two data frames;
  chatty:   Kafka-like request/response pairs on 64 connections (requests of 60-400 bytes, responses of 80-600 bytes
            and one in 16 of 3,000, cut at a 1,448-byte MSS), a pure ACK per four pairs: many small frames (~300 bytes
            on average), as pcap and as pcapng (the samples' format).
For each shape and each path (KAFKATAP_PURE_PYTHON's switch, flipped in-process) it prints the packet layer per chunk
(the reader's record walk, then link/IP/TCP in packets/frames.py) and the whole run_streams, in CPU seconds of this
process (the wall time is shown too; on a shared machine it mostly measures the neighbours).
Run from the repository root (tests/support is imported from there):
    python -m benchmarks.packets_bench [--mb 200] [--shapes chatty,chatty-ng,loopback,ethernet]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import resource
import struct
import sys
import tempfile
import time
from collections.abc import Iterator

from kafkatap.dissect import native
from kafkatap.dissect.packets.files import open_capture
from kafkatap.dissect.packets.frames import frames
from kafkatap.dissect.streams.driver import run_streams
from tests.support.pcap import ACK, TcpFlow, tcp_frame


class CountingSink:
    """The cheapest possible sink: counts what the reassembler delivers."""

    def __init__(self) -> None:
        self.data = self.gaps = self.anomalies = 0

    def on_open(self, conn) -> None:
        pass

    def on_data(self, conn, side, ts_us, data, where) -> bool:
        self.data += len(data)
        return True

    def on_gap(self, conn, side, ts_us, nbytes, where) -> None:
        self.gaps += nbytes

    def on_close(self, conn, ts_us, reason, where) -> None:
        pass

    def on_forget(self, conn) -> None:
        pass

    def on_anomaly(self, kind, detail, where, nbytes, conn, side) -> None:
        self.anomalies += 1


def flows(conns: int) -> list[TcpFlow]:
    return [TcpFlow(client=("10.1.0.%d" % (n % 250 + 1), 40000 + n), server=("10.2.0.1", 9092),
                    isn=[n * 7919, n * 104729]) for n in range(conns)]


def bulk(mss: int, conns: int, acks_every: int) -> Iterator[tuple[bytes, int]]:
    """(frame, payload bytes) of one-way transfers."""
    fs = flows(conns)
    yield from ((fr, 0) for flow in fs for fr in flow.handshake())
    block = os.urandom(mss)
    for n in itertools.count():
        flow = fs[n % conns]
        yield from ((fr, mss) for fr in flow.send(0, block, mss))
        if n % acks_every == 0:
            yield tcp_frame(flow.server, flow.client, flow.next[1], b"", ACK, flow.next[0]), 0


def chatty(conns: int = 64, mss: int = 1448) -> Iterator[tuple[bytes, int]]:
    """(frame, payload bytes) of request/response exchanges."""
    rnd = random.Random(1)
    fs = flows(conns)
    yield from ((fr, 0) for flow in fs for fr in flow.handshake())
    blob = os.urandom(3000)
    for n in itertools.count():
        flow = fs[n % conns]
        response = 3000 if n % 16 == 0 else rnd.choice((80, 150, 300, 600))
        for side, size in ((0, rnd.randrange(60, 400)), (1, response)):
            pieces = [min(mss, size - at) for at in range(0, size, mss)]
            yield from zip(flow.send(side, blob[:size], mss), pieces)
        if n % 4 == 0:
            yield tcp_frame(flow.client, flow.server, flow.next[0], b"", ACK, flow.next[1]), 0


def write(path: str, shape: Iterator[tuple[bytes, int]], target_bytes: int, pcapng: bool) -> int:
    """Write frames until the file has about target_bytes; returns the payload bytes it carries."""
    if pcapng:
        head = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
        head += struct.pack("<IIHHII", 1, 20, 1, 0, 262144, 20)
    else:
        head = b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + b"\0" * 8 + (262144).to_bytes(4, "little") + b"\x01\0\0\0"
    written, payload, ts = len(head), 0, 1_700_000_000_000_000
    with open(path, "wb") as f:
        f.write(head)
        for fr, nbytes in shape:
            if written >= target_bytes:
                break
            ts += 10
            if pcapng:
                pad = b"\0" * (-len(fr) % 4)
                blen = 32 + len(fr) + len(pad)
                record = struct.pack("<IIIIIII", 6, blen, 0, ts >> 32, ts & 0xFFFFFFFF, len(fr), len(fr)) + fr + pad
                record += struct.pack("<I", blen)
            else:
                record = struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(fr), len(fr)) + fr
            f.write(record)
            written += len(record)
            payload += nbytes
    return payload


def packet_layer(path: str) -> tuple[int, int, float, float, float]:
    """(chunks, packets, CPU s in the reader, CPU s in frames(), wall s) of one pass over the file."""
    reader = open_capture(path)
    chunks = packets = 0
    read_s = parse_s = 0.0
    w0 = time.perf_counter()
    try:
        it = reader.chunks()
        while True:
            c0 = time.process_time()
            c = next(it, None)
            c1 = time.process_time()
            if c is None:
                break
            frames(c)
            read_s += c1 - c0
            parse_s += time.process_time() - c1
            chunks += 1
            packets += len(c.off)
    finally:
        reader.close()
    return chunks, packets, read_s, parse_s, time.perf_counter() - w0


def measure(name: str, path: str, payload: int) -> None:
    size = os.path.getsize(path)
    for compiled in (False, True):
        native.compiled = compiled
        chunks, packets, read_s, parse_s, layer_wall = packet_layer(path)
        sink = CountingSink()
        t0, c0 = time.perf_counter(), time.process_time()
        stats = run_streams([path], sink)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert sink.data == payload and sink.gaps == 0 and sink.anomalies == 0, (sink.data, payload, stats)
        per_chunk = (read_s + parse_s) / chunks * 1e3
        print(f"{name:10s} {'compiled' if compiled else 'pure':8s} {packets:>9,} packets {size / 1e6:6.1f} MB | "
              f"packet layer {per_chunk:7.1f} ms/chunk ({chunks} chunks): reader {read_s / packets * 1e9:5.0f} + "
              f"headers {parse_s / packets * 1e9:5.0f} ns/packet, wall {layer_wall:5.2f} s | "
              f"run_streams cpu {cpu:5.2f} s (wall {wall:5.2f} s) {packets / cpu:>10,.0f} packets/s")


SHAPES = {
    "loopback": (lambda: bulk(65483, 4, 1), False),
    "ethernet": (lambda: bulk(1460, 64, 2), False),
    "chatty": (chatty, False),
    "chatty-ng": (chatty, True),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200, help="size of each synthetic capture in MB")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES))
    args = ap.parse_args()
    if native.missing():
        sys.exit(f"the compiled core is not built: {native.missing()}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.shapes.split(","):
            make, pcapng = SHAPES[name]
            path = os.path.join(tmp, name + (".pcapng" if pcapng else ".pcap"))
            payload = write(path, make(), args.mb << 20, pcapng)
            measure(name, path, payload)
            os.remove(path)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
