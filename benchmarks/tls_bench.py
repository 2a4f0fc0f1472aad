"""What decrypting TLS costs `kafkatap dissect`: the same Kafka traffic once in the clear and once inside real TLS
(OpenSSL through Python's ssl, the client writing a key log), dissected without and with `--tls-keylog`, and tshark
given the same key log.

    python -m benchmarks.tls_bench [--connections 20] [--pairs 2000] [--version 1.3|1.2] [--workdir /tmp/kt-tls]

Each connection carries `pairs` Fetch request/response pairs (about 600 bytes of Kafka per pair), so the shape is the
chatty one of dissect_vs_tshark. Times are wall and CPU (user + sys of the child) of whole commands, best of 3.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path

from tests.dissect.tls.kafka_inside import PORT, encrypted, in_the_clear
from tests.support.kafka_messages import fetch_request, fetch_response
from tests.support.pcap import pcap_bytes, timed


def captures(workdir: Path, connections: int, pairs: int, version: str) -> tuple[Path, Path, Path]:
    """The clear and the TLS capture of the same messages, and the TLS one's key log."""
    maximum = ssl.TLSVersion.TLSv1_2 if version == "1.2" else None
    messages = [m for corr in range(pairs) for m in ((0, fetch_request(corr)), (1, fetch_response(corr)))]
    clear, tls, keys = [], [], []
    for c in range(connections):
        clear += in_the_clear(20000 + c, messages)
        captured = encrypted(30000 + c, messages, maximum)
        tls += captured.packets
        keys.append(captured.conversation.keylog)
    paths = workdir / "clear.pcap", workdir / f"tls{version}.pcap", workdir / f"tls{version}.keys"
    paths[0].write_bytes(pcap_bytes(timed(clear, step_us=10)))
    paths[1].write_bytes(pcap_bytes(timed(tls, step_us=10)))
    paths[2].write_bytes(b"".join(keys))
    return paths


def timed_run(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(args: list[str], runs: int = 3) -> tuple[float, float]:
    return min((timed_run(args) for _ in range(runs)), key=lambda t: t[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--version", choices=("1.3", "1.2"), default="1.3")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/kt-tls-bench"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    clear, tls, keys = captures(args.workdir, args.connections, args.pairs, args.version)
    kafkatap = [sys.executable, "-m", "kafkatap.cli", "dissect", "-q", "--port", str(PORT)]
    out = str(args.workdir / "out")
    rows = [
        ("kafkatap, clear", best([*kafkatap, str(clear), "-o", out])),
        ("kafkatap, TLS without key log", best([*kafkatap, str(tls), "-o", out])),
        ("kafkatap, TLS --tls-keylog", best([*kafkatap, str(tls), "-o", out, "--tls-keylog", str(keys)])),
    ]
    if shutil.which("tshark"):
        tshark = ["tshark", "-r", str(tls), "-o", f"tls.keylog_file:{keys}", "-d", f"tcp.port=={PORT},tls",
                  "-d", f"tls.port=={PORT},kafka", "-Y", "kafka", "-T", "fields", "-e", "kafka.api_key",
                  "-e", "kafka.correlation_id"]
        rows.append(("tshark, TLS with the key log", best(tshark)))
    print(f"{args.connections} connections x {args.pairs} Fetch pairs, TLS {args.version}: clear "
          f"{clear.stat().st_size / 1e6:.1f} MB, TLS {tls.stat().st_size / 1e6:.1f} MB")
    for name, (wall, cpu) in rows:
        print(f"{name:<32} {wall:6.2f} s wall {cpu:6.2f} s CPU")


if __name__ == "__main__":
    main()
