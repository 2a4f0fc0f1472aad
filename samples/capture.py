"""Loopback capture of the sample brokers' ports with dumpcap (pcapng natively, full snaplen).

dumpcap rather than tcpdump: it writes pcapng directly (no conversion step) and reports on stderr when the capture
has really started, so no packet of the workload is missed.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path


def port_filter(ports: list[int]) -> str:
    """BPF filter naming only our ports: loopback is shared with other users of the machine."""
    return " or ".join(f"tcp port {p}" for p in sorted(set(ports)))


class Capture:
    """Capture `lo` to `path` (pcapng) while the block runs; stopped with SIGINT so the file is complete."""

    def __init__(self, path: str | Path, ports: list[int]) -> None:
        self.path = Path(path)
        self.ports = ports
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Capture":
        dumpcap = shutil.which("dumpcap")
        if dumpcap is None:
            raise FileNotFoundError("dumpcap not found (Debian package tshark / wireshark-common)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        # -s 0: loopback frames exceed 65,535 bytes; -B: a 128 MiB kernel buffer so bursts are not dropped.
        self.proc = subprocess.Popen(
            [dumpcap, "-q", "-i", "lo", "-s", "0", "-B", "128", "-f", port_filter(self.ports), "-w", str(self.path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dumpcap failed: {self.proc.stderr.read()}")
            if self.path.exists() and self.path.stat().st_size > 0:
                time.sleep(0.3)  # the file header is written just before the capture loop starts
                return self
            time.sleep(0.05)
        self.stop()
        raise TimeoutError("dumpcap did not start within 10 s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        time.sleep(0.3)  # let the last packets of the workload reach the capture buffer
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def __exit__(self, *exc: object) -> None:
        self.stop()
