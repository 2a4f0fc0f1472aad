"""Command lines of the capture engines and the reading of what they print.

dumpcap and tcpdump do the capturing (kernel ring, BPF, rotation, drop accounting); this module only builds their
argv and turns their stderr into numbers: live packet counts, the file being written, drop counts at exit, errors.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Callable

ENGINES = ("dumpcap", "tcpdump", "scapy")
PACKAGES = {"dumpcap": "tshark (it pulls in wireshark-common, which holds /usr/bin/dumpcap)", "tcpdump": "tcpdump"}
PREFIX = "kafkatap"


class EngineMissing(RuntimeError):
    """The engine asked for is not on PATH; the message names the Debian package to install."""


@dataclass(frozen=True)
class Spec:
    """One capture: where, what, how much. ring_files=0 keeps every file (no file is ever deleted)."""

    iface: str
    bpf: str
    out_dir: str
    ring_mb: float = 100.0
    ring_files: int = 0
    snaplen: int = 0
    duration: float = 0.0
    packets: int = 0


def choose(name: str | None) -> tuple[str, str | None, str | None]:
    """(engine, binary, note). Without a name: dumpcap, else tcpdump, else scapy with a note saying so."""
    if name in ("dumpcap", "tcpdump"):
        binary = shutil.which(name)
        if binary is None:
            raise EngineMissing(f"{name} is not installed (not on PATH): apt install {PACKAGES[name]}")
        return name, binary, None
    if name == "scapy":
        return "scapy", None, None
    for candidate in ("dumpcap", "tcpdump"):
        binary = shutil.which(candidate)
        if binary is not None:
            return candidate, binary, None
    note = ("neither dumpcap nor tcpdump is installed: falling back to scapy's sniffer (slower, writes pcap, "
            "no kernel drop counts). For a real engine: apt install tshark, or apt install tcpdump")
    return "scapy", None, note


def argv(engine: str, binary: str | None, spec: Spec) -> list[str]:
    """The engine's command line; output files go to spec.out_dir with the kafkatap prefix."""
    if engine == "dumpcap":
        return dumpcap_argv(binary or "dumpcap", spec)
    if engine == "tcpdump":
        return tcpdump_argv(binary or "tcpdump", spec)
    return scapy_argv(spec)


def dumpcap_argv(binary: str, spec: Spec) -> list[str]:
    # printname:stdout prints each file's name when dumpcap closes it: the ring watcher's close events.
    cmd = [binary, "-i", spec.iface, "-f", spec.bpf, "-w", os.path.join(spec.out_dir, PREFIX + ".pcapng"),
           "-b", f"filesize:{max(1, round(spec.ring_mb * 1000))}", "-b", "printname:stdout"]
    if spec.ring_files:
        cmd += ["-b", f"files:{spec.ring_files}"]
    if spec.snaplen:
        cmd += ["-s", str(spec.snaplen)]
    if spec.duration:
        cmd += ["-a", f"duration:{spec.duration:g}"]
    if spec.packets:
        cmd += ["-c", str(spec.packets)]
    return cmd


def tcpdump_argv(binary: str, spec: Spec) -> list[str]:
    # -U: packet-buffered, so a file is complete at every packet boundary; -v: "Got N" once a second on stderr.
    # -C counts millions of bytes and takes integers only. As root tcpdump would switch to the "tcpdump" user before
    # opening the rotated files (which it then cannot write): -Z keeps the current user. No -W: tcpdump's ring
    # rewrites kafkatap.pcap0 in place, under a reader that may still need it; capture.ring keeps the last K instead.
    cmd = [binary, "-i", spec.iface, "-n", "-U", "-v", "-w", os.path.join(spec.out_dir, PREFIX + ".pcap"),
           "-C", str(max(1, math.ceil(spec.ring_mb)))]
    if os.geteuid() == 0:
        cmd += ["-Z", "root"]
    if spec.snaplen:
        cmd += ["-s", str(spec.snaplen)]
    if spec.packets:
        cmd += ["-c", str(spec.packets)]
    return cmd + [spec.bpf]


def scapy_argv(spec: Spec) -> list[str]:
    cmd = [sys.executable, "-m", "kafkatap.capture.scapy_engine", "-i", spec.iface, "-f", spec.bpf, "-w",
           os.path.join(spec.out_dir, PREFIX + ".pcap"), "--ring-mb", f"{spec.ring_mb:g}",
           "--ring-files", str(spec.ring_files)]
    if spec.snaplen:
        cmd += ["-s", str(spec.snaplen)]
    if spec.packets:
        cmd += ["-c", str(spec.packets)]
    return cmd


_LIVE = re.compile(r"^(?:Packets: |Got )(\d+)\s*")
_LIVE_PENDING = re.compile(r"^Packets: (\d+) $")
_FILE = re.compile(r"^File: (.+)$")
_DUMPCAP_CAPTURED = re.compile(r"^Packets captured: (\d+)")
_DUMPCAP_IFACE = re.compile(r"^Packets received/dropped on interface '.*': (\d+)/(\d+) "
                            r"\(pcap:(\d+)/dumpcap:(\d+)/flushed:(\d+)/ps_ifdrop:(\d+)\)")
_TCPDUMP_INFO = re.compile(r"^(?:tcpdump: )?(\d+) packets? captured, (\d+) packets? received by filter, "
                           r"(\d+) packets? dropped by kernel(?:, (\d+) packets? dropped by interface)?")
_TCPDUMP_LINE = re.compile(r"^(\d+) packets? (captured|received by filter|dropped by kernel|dropped by interface)$")
_NOISE = re.compile(r"^(Capturing on |tcpdump: listening on |tcpdump: verbose output suppressed)")


@dataclass
class EngineLog:
    """What the engine said on stderr, folded into counters. None = the engine did not (yet) say."""

    packets: int = 0  # live count, then the final "captured" count
    current_file: str | None = None
    received: int | None = None
    dropped: int | None = None  # dropped by the kernel/libpcap/engine buffers
    if_dropped: int | None = None  # dropped by the interface (ps_ifdrop)
    final: bool = False  # the engine printed its exit statistics
    messages: list[str] = field(default_factory=list)  # everything else: warnings and errors, verbatim
    on_file: Callable[[str], None] | None = None  # called with each new file the engine opens
    _partial: str = ""

    def feed(self, text: str) -> None:
        """Any chunk of stderr; status updates end in \\r, messages in \\n."""
        pieces = re.split(r"[\r\n]", self._partial + text)
        self._partial = pieces.pop()
        for piece in pieces:
            self.line(piece)
        if m := _LIVE_PENDING.match(self._partial):  # dumpcap ends "Packets: N " with the *next* update's \r
            self.packets = int(m.group(1))

    def close(self) -> None:
        if self._partial:
            self.line(self._partial)
            self._partial = ""

    def line(self, line: str) -> None:
        live = _LIVE.match(line)
        if live:
            self.packets = int(live.group(1))
            line = line[live.end():]
        line = line.rstrip()
        if not line or _NOISE.match(line):
            return
        if m := _FILE.match(line):
            self.current_file = m.group(1)
            if self.on_file is not None:
                self.on_file(self.current_file)
        elif m := _DUMPCAP_CAPTURED.match(line):
            self.packets, self.final = int(m.group(1)), True
        elif m := _DUMPCAP_IFACE.match(line):
            self.received, self.dropped, self.if_dropped = int(m.group(1)), int(m.group(2)), int(m.group(6))
        elif m := _TCPDUMP_INFO.match(line):
            self.packets, self.received, self.dropped = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if m.group(4) is not None:
                self.if_dropped = int(m.group(4))
        elif m := _TCPDUMP_LINE.match(line):
            value, what = int(m.group(1)), m.group(2)
            if what == "captured":
                self.packets, self.final = value, True
            elif what == "received by filter":
                self.received = value
            elif what == "dropped by kernel":
                self.dropped = value
            else:
                self.if_dropped = value
        else:
            self.messages.append(line)


def classify(messages: list[str]) -> str:
    """The kind of failure the engine reported: permission, no_device, disk_full, bad_filter or other."""
    text = "\n".join(messages).lower()
    if "permission to capture" in text or "permission to perform this capture" in text \
            or "operation not permitted" in text:
        return "permission"
    if "no device named" in text or "no such device" in text:
        return "no_device"
    if "no space left" in text:
        return "disk_full"
    if "capture filter" in text or "syntax error" in text:
        return "bad_filter"
    return "other"
