"""Packet-layer throughput: pcap -> reassembled TCP streams (dissect.streams.driver.run_streams), no Kafka decoding.

Two synthetic capture shapes written with tests/support/pcap.py:
  loopback: 64 KB frames (what tcpdump sees on lo with GSO), one data frame per ACK;
  ethernet: 1,500-byte MTU frames from 64 interleaved connections, one pure ACK per two data frames.
Prints packets/s and MB/s (file bytes) per shape, per second of CPU time of this process (the wall time is shown
too; on a shared machine it mostly measures the neighbours). Run: python benchmarks/packets_bench.py [--mb 200]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time


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

    def on_anomaly(self, kind, detail, where, nbytes, conn, side) -> None:
        self.anomalies += 1


def write_shape(path: str, target_bytes: int, mss: int, conns: int, acks_every: int) -> int:
    """Write a pcap of about target_bytes; returns the payload bytes it carries."""
    flows = [TcpFlow(client=("10.1.0.%d" % (n % 250 + 1), 40000 + n), server=("10.2.0.1", 9092),
                     isn=[n * 7919, n * 104729]) for n in range(conns)]
    block = os.urandom(mss)
    header = b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + b"\0" * 8 + (262144).to_bytes(4, "little") + b"\x01\0\0\0"
    written, payload, ts, n = len(header), 0, 1_700_000_000_000_000, 0
    with open(path, "wb") as f:
        f.write(header)
        frames = [fr for flow in flows for fr in flow.handshake()]
        while written < target_bytes:
            flow = flows[n % conns]
            frames += flow.send(0, block, mss)
            payload += mss
            if n % acks_every == 0:
                frames.append(tcp_frame(flow.server, flow.client, flow.next[1], b"", ACK, flow.next[0]))
            for fr in frames:
                ts += 10
                f.write((ts // 1_000_000).to_bytes(4, "little") + (ts % 1_000_000).to_bytes(4, "little")
                        + len(fr).to_bytes(4, "little") * 2 + fr)
                written += 16 + len(fr)
            frames = []
            n += 1
    return payload


def measure(name: str, path: str, payload: int) -> None:
    sink = CountingSink()
    t0, c0 = time.perf_counter(), time.process_time()
    stats = run_streams([path], sink)
    wall, dt = time.perf_counter() - t0, time.process_time() - c0
    size = os.path.getsize(path)
    assert sink.data == payload and sink.gaps == 0 and sink.anomalies == 0, (sink.data, payload, stats)
    print(f"{name:9s} {stats.packets:>9,} packets {size / 1e6:8.1f} MB  cpu {dt:5.2f} s (wall {wall:5.2f} s)  "
          f"{stats.packets / dt:>10,.0f} packets/s  {size / 1e6 / dt:7.1f} MB/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200, help="size of each synthetic capture in MB")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, mss, conns, acks_every in (("loopback", 65483, 4, 1), ("ethernet", 1460, 64, 2)):
            path = os.path.join(tmp, name + ".pcap")
            payload = write_shape(path, args.mb << 20, mss, conns, acks_every)
            measure(name, path, payload)
            os.remove(path)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
