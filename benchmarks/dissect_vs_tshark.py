"""Throughput and peak memory of `kafkatap dissect` against `tshark -T fields` on the same captures.

Two workloads, both recorded on lo from real client traffic against a broker on 127.0.0.1 (`--broker`: Tansu, or
Apache Kafka 4.4 in KRaft mode from the jars `make kafka` fetches; each broker's captures are kept apart):
- bulk: a kafka-python producer writing ~1 MB batches of incompressible 10 KB values to 8 partitions, and a consumer
  fetching them back; replicated to --bulk-mb.
- chatty: a producer waiting for each 100-byte record's ack, and a consumer fetching with a 1 KB partition limit, so
  thousands of small requests; replicated to --chatty-mb.
Replication writes copies of the recorded connections (each copy on its own client address, later in time, same
bytes), rebuilding packets (Ethernet/IPv4/TCP) around the captured payloads and leaving out pure ACKs, in two shapes:
- loopback: the recorded segments as they are (frames up to 64 KB, as GSO leaves them on lo);
- mss: the payloads cut to 1,448-byte segments, the shape of a 1,500-byte-MTU network.

Both tools get the same fields: frame time, TCP stream, api_key, api_version, correlation_id and error code(s)
(kafkatap writes all its tables regardless). Each runs under a probe process: wall time, the probe's RUSAGE_CHILDREN
the CPU seconds of the whole run and the peak RSS of its largest process. `dissect` is the default single process,
`dissect_2_workers` adds --workers 2, `dissect_records` --records (what `kafkatap report` runs: a row per record,
and each batch's fingerprint); `floor` is the least any Python run writing Parquet could take on the file
(the interpreter with numpy and pyarrow, and the file read once and checksummed: `_FLOOR`), to set beside tshark's
time / 5. The commands alternate for --runs rounds and each figure is the median (peak RSS: the largest). `--cache
cold` evicts the capture from the page cache before every run (posix_fadvise DONTNEED), so each command reads it from
the disk, as a capture bigger than the machine's memory is read. Usage:

    python benchmarks/dissect_vs_tshark.py [--workdir /tmp/kt-bench] [--bulk-mb 550] [--chatty-mb 120] [--runs 3]
        [--shapes loopback,mss] [--cache warm,cold] [--broker tansu|kafka]

`--profile chatty` (or bulk) makes that capture the same way, in the first of --shapes, then runs dissect on it
in-process under cProfile and prints the functions by own CPU time instead of benchmarking (profiled time is about
twice the real one).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

from kafkatap.dissect.streams.driver import run_streams
from kafkatap.samples.brokers import Tansu
from kafkatap.samples.kafka import Kafka

PYTHON = sys.executable
PORT = 39310
FIELDS = ["frame.time_epoch", "tcp.stream", "kafka.api_key", "kafka.api_version", "kafka.correlation_id",
          "kafka.error"]


# ---- real traffic -----------------------------------------------------------------------------------------------

def running_broker(broker: str, port: int, workdir: Path) -> Tansu | Kafka:
    """A broker on 127.0.0.1:port, as the samples start theirs (a context manager that always stops it): Tansu in
    memory, or one Apache Kafka 4.4 node with fresh storage in workdir (a node refuses a data folder formatted for
    another cluster)."""
    if broker == "tansu":
        return Tansu(port)
    shutil.rmtree(workdir, ignore_errors=True)
    return Kafka(workdir, nodes=1, ports=[port])


def capture_workload(path: Path, workload: str, broker: str, port: int = PORT) -> None:
    """Run a broker and one workload against it while tcpdump records the broker's client port."""
    with running_broker(broker, port, path.parent / f"{path.stem}-broker"):
        dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-s", "0", "-B", "131072", "-w", str(path),
                                 f"tcp port {port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            subprocess.run([PYTHON, __file__, "--workload", workload, "--port", str(port)], check=True, timeout=900)
            time.sleep(0.5)
        finally:
            dump.send_signal(signal.SIGINT)
            dump.wait(timeout=30)


def workload(kind: str, port: int) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    bootstrap = f"127.0.0.1:{port}"
    topic = f"bench-{kind}"
    partitions = 8 if kind == "bulk" else 2
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    rnd = random.Random(1)
    if kind == "bulk":
        producer = KafkaProducer(bootstrap_servers=bootstrap, batch_size=1 << 20, linger_ms=100, acks=1,
                                 max_request_size=32 << 20)
        n = 5000
        for i in range(n):
            producer.send(topic, value=rnd.randbytes(10_000), key=b"%d" % i, partition=i % partitions)
        producer.flush()
        consumer_config = {"fetch_max_bytes": 50 << 20, "max_partition_fetch_bytes": 8 << 20}
    else:
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks=1)
        n = 6000
        for i in range(n):
            producer.send(topic, value=rnd.randbytes(100), key=b"%d" % i, partition=i % partitions).get(timeout=30)
        consumer_config = {"max_partition_fetch_bytes": 1024, "fetch_max_bytes": 2048}
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000, **consumer_config)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    got = sum(1 for _ in consumer)
    consumer.close()
    if got < n:
        raise RuntimeError(f"consumed {got} of {n}")


# ---- replication ------------------------------------------------------------------------------------------------

class _Keep:
    """A StreamSink keeping every payload in capture order."""

    def __init__(self) -> None:
        self.conns: list = []
        self.events: list[tuple[int, int, int, bytes]] = []  # (conn index, side, ts_us, data)
        self.index: dict[int, int] = {}

    def on_open(self, conn) -> None:
        self.index[id(conn)] = len(self.conns)
        self.conns.append(conn)

    def on_data(self, conn, side, ts_us, data, where) -> bool:
        self.events.append((self.index[id(conn)], side, ts_us, data))
        return True

    def on_gap(self, *args) -> None:
        pass

    def on_close(self, *args) -> None:
        pass

    def on_forget(self, *args) -> None:
        pass

    def on_anomaly(self, *args) -> None:
        pass


def _ip(addr: str) -> bytes:
    return socket.inet_aton(addr)


SHAPES: dict[str, int | None] = {"loopback": None, "mss": 1448}
"""Segment size of each shape's packets: None keeps the recorded segments (up to 64 KB on lo), 1448 is Ethernet's,
as on a broker's network (40 times the packets of a loopback capture for the same bulk bytes)."""


def replicate(source: Path, target: Path, target_mb: float, mss: int | None) -> int:
    """Write copies of source's connections to target until it holds target_mb, cutting payloads to mss bytes
    unless it is None; returns the packet count."""
    keep = _Keep()
    run_streams([str(source)], keep)
    if not keep.events:
        raise RuntimeError(f"{source}: no TCP payload")
    per_copy = sum(len(e[3]) + (len(e[3]) // mss + 1 if mss else 1) * (54 + 16) for e in keep.events)
    copies = max(1, int(target_mb * 1e6 // per_copy) + 1)
    t0 = keep.events[0][2]
    span = keep.events[-1][2] - t0 + 1000
    packets = 0
    with open(target, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for k in range(copies):
            seq = {}
            client_ip = _ip(f"10.{1 + k // 250}.{k % 250}.1")
            server_ip = _ip("10.0.0.2")
            for conn, side, ts, payload in keep.events:
                c = keep.conns[conn]
                cport, sport = c.addr[0][1], c.addr[1][1]
                src, dst, p1, p2 = (client_ip, server_ip, cport, sport) if side == 0 else \
                    (server_ip, client_ip, sport, cport)
                t = ts - t0 + k * span + 1_700_000_000_000_000
                step = mss or len(payload)
                for i in range(0, len(payload), step):
                    data = payload[i:i + step]
                    key = (conn, side)
                    s = seq.get(key, 1000 + 7919 * conn if side == 0 else 5_000_000 + 7919 * conn)
                    seq[key] = (s + len(data)) % (1 << 32)
                    tcp = struct.pack(">HHIIBBHHH", p1, p2, s, 0, 0x50, 0x18, 65535, 0, 0) + data
                    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, src, dst) + tcp
                    frame = b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip
                    f.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame), len(frame)) + frame)
                    packets += 1
    return packets


# ---- measuring --------------------------------------------------------------------------------------------------

_PROBE = """
import json, os, resource, subprocess, sys, time
cmd = sys.argv[1:]
if cmd[0] == "--cold":  # evict the capture from the page cache first: the run reads it from the disk
    fd = os.open(cmd[1], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    cmd = cmd[2:]
start = time.perf_counter()
subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
wall = time.perf_counter() - start
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": u.ru_utime + u.ru_stime, "rss_mb": u.ru_maxrss / 1024}))
"""


INSTALLED_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""Commands run as an installed package runs: with Python's bytecode cache, which pip writes at install time (with
PYTHONDONTWRITEBYTECODE set, as in some shells and containers, every run would compile the package's sources)."""


_FLOOR = """
import sys
import numpy, pyarrow.parquet
from crc32c import crc32c
buf = bytearray(16 << 20)
with open(sys.argv[1], "rb", buffering=0) as f:
    while n := f.readinto(buf):
        crc32c(memoryview(buf)[:n])
"""
"""The floor of any run on a capture that writes Parquet from Python: the interpreter with numpy and pyarrow imported,
and every byte of the file read once and checksummed (each record batch's CRC covers nearly all of its bytes). No
parsing, no output: a run cannot take less than this."""


def measure(cmd: list[str], cold: Path | None = None) -> dict:
    """Wall seconds, CPU seconds (all processes of the run) and peak RSS (largest process) of one command, run
    under a fresh probe process so each measurement's rusage covers that command alone; cold: evict this file from
    the page cache first."""
    evict = ["--cold", str(cold)] if cold is not None else []
    out = subprocess.run([PYTHON, "-c", _PROBE, *evict, *cmd], check=True, capture_output=True, text=True,
                         env=INSTALLED_ENV)
    return json.loads(out.stdout)


def bench(capture: Path, shape: str, packets: int, workdir: Path, skip_tshark: bool, rounds: int,
          cold: bool = False) -> dict:
    """Run dissect, dissect --workers 2, dissect --records, tshark and the floor in turn, rounds times; medians of wall
    and CPU, largest RSS. cold: each run reads the capture from the disk, not the page cache."""
    size_mb = capture.stat().st_size / 1e6
    out = workdir / f"{capture.stem}-out"
    row: dict = {"shape": shape, "capture": capture.name, "mb": round(size_mb, 1), "packets": packets,
                 "runs": rounds, "cache": "cold" if cold else "warm"}
    dissect = [PYTHON, "-m", "kafkatap.dissect", str(capture), "-o", str(out), "--port", str(PORT), "-q"]
    runs = {"dissect": dissect, "dissect_2_workers": dissect + ["--workers", "2"],
            "dissect_records": dissect + ["--records"]}
    if not skip_tshark:
        runs["tshark"] = ["tshark", "-r", str(capture), "-d", f"tcp.port=={PORT},kafka", "-Y", "kafka",
                          "-T", "fields", *sum((["-e", f] for f in FIELDS), []), "-E", "occurrence=a"]
    runs["floor"] = [PYTHON, "-c", _FLOOR, str(capture)]
    seen: dict[str, list[dict]] = {name: [] for name in runs}
    measure(dissect)  # untimed: writes the bytecode cache an editable install lacks until its first run
    for _ in range(rounds):
        for name, cmd in runs.items():
            seen[name].append(measure(cmd, capture if cold else None))
    for name, ms in seen.items():
        wall = statistics.median(m["wall"] for m in ms)
        cpu = statistics.median(m["cpu"] for m in ms)
        row[name] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "mb_s": round(size_mb / wall, 1),
                     "pkt_s": round(packets / wall), "mb_per_cpu_s": round(size_mb / cpu, 1),
                     "peak_rss_mb": round(max(m["rss_mb"] for m in ms)),
                     "walls_s": [round(m["wall"], 2) for m in ms], "cpus_s": [round(m["cpu"], 2) for m in ms]}
    row["frames"] = json.loads((out / "summary.json").read_text())["rows"]["frames"]
    if "tshark" in row:
        row["speedup_wall"] = round(row["tshark"]["wall_s"] / row["dissect"]["wall_s"], 2)
        row["speedup_cpu"] = round(row["tshark"]["cpu_s"] / row["dissect"]["cpu_s"], 2)
    return row


def table(results: list[dict]) -> str:
    """The results as a fixed-width table: medians in seconds, peak RSS in MB, ratios tshark / single dissect."""
    head = ["broker", "shape", "capture", "cache", "MB", "packets", "kt wall", "kt CPU", "kt RSS", "2w wall", "2w CPU",
            "rec wall", "rec CPU", "ts wall", "ts CPU", "ts RSS", "x wall", "x CPU", "floor", "ts/5"]
    lines = [head]
    for r in results:
        d, w, rec, t = r["dissect"], r["dissect_2_workers"], r["dissect_records"], r.get("tshark", {})
        target = f"{t['wall_s'] / 5:.2f}" if t else "-"
        lines.append([r["broker"], r["shape"], r["capture"], r["cache"], f"{r['mb']:.1f}", f"{r['packets']:,}",
                      f"{d['wall_s']:.2f}", f"{d['cpu_s']:.2f}", f"{d['peak_rss_mb']}", f"{w['wall_s']:.2f}",
                      f"{w['cpu_s']:.2f}", f"{rec['wall_s']:.2f}", f"{rec['cpu_s']:.2f}",
                      f"{t.get('wall_s', '-')}", f"{t.get('cpu_s', '-')}",
                      f"{t.get('peak_rss_mb', '-')}", f"{r.get('speedup_wall', '-')}", f"{r.get('speedup_cpu', '-')}",
                      f"{r['floor']['wall_s']:.2f}", target])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(n) if i > 3 else c.ljust(n) for i, (c, n) in enumerate(zip(line, widths)))
                     for line in lines)


def profile(capture: Path, workdir: Path, top: int = 40) -> None:
    """Where dissect's CPU goes on one capture: one in-process worker under cProfile, top functions by own time."""
    import cProfile
    import pstats

    from kafkatap.dissect.run import dissect_captures

    prof = cProfile.Profile()
    start = time.process_time()
    prof.runcall(dissect_captures, [str(capture)], str(workdir / f"{capture.stem}-profile"), ports=[PORT], workers=1)
    print(f"{capture.name}: {time.process_time() - start:.2f} CPU s under cProfile")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", default="/tmp/kt-bench")
    p.add_argument("--bulk-mb", type=float, default=550)
    p.add_argument("--chatty-mb", type=float, default=120)
    p.add_argument("--runs", type=int, default=3, help="alternating rounds of the commands (median of them)")
    p.add_argument("--shapes", default="loopback,mss", help="comma-separated, of: " + ", ".join(SHAPES))
    p.add_argument("--cache", default="warm", help="comma-separated, of: warm (the capture in the page cache), "
                   "cold (evicted before each run, so read from the disk)")
    p.add_argument("--broker", choices=["tansu", "kafka"], default="tansu",
                   help="the broker the workloads are recorded against (kafka: Apache Kafka 4.4, after `make kafka`)")
    p.add_argument("--skip-tshark", action="store_true")
    p.add_argument("--profile", choices=["bulk", "chatty"], help="profile dissect on this capture instead")
    p.add_argument("--workload", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=PORT, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.workload:
        workload(args.workload, args.port)
        return 0
    if shutil.which("tcpdump") is None or (shutil.which("tshark") is None and not (args.skip_tshark or args.profile)):
        print("needs tcpdump and tshark", file=sys.stderr)
        return 2
    shapes = args.shapes.split(",")
    caches = args.cache.split(",")
    if not set(shapes) <= set(SHAPES) or not set(caches) <= {"warm", "cold"} or args.runs < 1:
        p.error(f"--shapes takes {', '.join(SHAPES)}; --cache warm and/or cold; --runs at least 1")
    # Each broker's captures in their own folder: the replicated captures are reused when they exist
    workdir = Path(args.workdir) / ("" if args.broker == "tansu" else args.broker)
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    for shape in shapes:
        for kind, target_mb in (("bulk", args.bulk_mb), ("chatty", args.chatty_mb)):
            if args.profile not in (None, kind):
                continue
            source = workdir / f"{kind}-source.pcap"
            if not source.exists():
                capture_workload(source, kind, args.broker)
            capture = workdir / f"{kind}-{shape}.pcap"
            meta = workdir / f"{kind}-{shape}.json"
            if capture.exists() and meta.exists() and json.loads(meta.read_text())["mb"] == target_mb:
                packets = json.loads(meta.read_text())["packets"]
            else:
                packets = replicate(source, capture, target_mb, SHAPES[shape])
                meta.write_text(json.dumps({"mb": target_mb, "packets": packets}))
            if args.profile:
                profile(capture, workdir)
                return 0
            for cache in caches:
                results.append({"broker": args.broker, **bench(capture, shape, packets, workdir, args.skip_tshark,
                                                                args.runs, cache == "cold")})
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    (workdir / "results.json").write_text(json.dumps(results, indent=1))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
