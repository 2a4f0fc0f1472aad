"""Fallback engine when neither dumpcap nor tcpdump is installed: scapy's packet socket, written with PcapWriter.

Run as a child process (`python -m kafkatap.capture.scapy_engine`) that speaks like dumpcap on its pipes
("File: NAME" and "Packets: N" on stderr, each closed file's name on stdout, "Packets captured: N" at exit), so the
capture command drives every engine the same way. It rotates files itself: kafkatap_00001.pcap, ... (a ring of --ring-files).
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import time

SCAPY_LIMIT = 65535
SNAP_WARNING = f"scapy: its socket reads at most {SCAPY_LIMIT} bytes per frame: longer frames (loopback allows " \
               "65536-byte packets) are truncated"


class Rotator:
    """pcap files of at most ring_bytes each, keeping the last ring_files (0: all)."""

    def __init__(self, base: str, ring_bytes: int, ring_files: int, linktype: int, snaplen: int) -> None:
        from scapy.utils import PcapWriter

        self._writer_class = PcapWriter
        self.stem, self.ext = os.path.splitext(base)
        self.ring_bytes, self.ring_files = ring_bytes, ring_files
        self.linktype, self.snaplen = linktype, snaplen
        self.index = 0
        self.names: list[str] = []
        self.writer = None
        self.written = 0

    def open_next(self) -> None:
        self.index += 1
        name = f"{self.stem}_{self.index:05d}{self.ext}"
        self.writer = self._writer_class(name, linktype=self.linktype, snaplen=self.snaplen, sync=True)
        self.writer.write_header(None)
        self.names.append(name)
        self.written = 24
        print(f"File: {name}", file=sys.stderr, flush=True)
        if self.ring_files and len(self.names) > self.ring_files:
            os.unlink(self.names.pop(0))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            print(self.names[-1], flush=True)
            self.writer = None

    def write(self, frame: bytes, ts: float) -> None:
        if self.written + 16 + len(frame) > self.ring_bytes and self.written > 24:
            self.close()
            self.open_next()
        sec = int(ts)
        self.writer.write_packet(frame, sec=sec, usec=int((ts - sec) * 1_000_000), wirelen=len(frame))
        self.written += 16 + len(frame)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kafkatap.capture.scapy_engine")
    p.add_argument("-i", dest="iface", required=True)
    p.add_argument("-f", dest="bpf", required=True)
    p.add_argument("-w", dest="base", required=True)
    p.add_argument("--ring-mb", type=float, default=100.0)
    p.add_argument("--ring-files", type=int, default=0)
    p.add_argument("-s", dest="snaplen", type=int, default=0)
    p.add_argument("-c", dest="count", type=int, default=0)
    args = p.parse_args(argv)

    from scapy.all import conf  # loads the platform layer that sets conf.L2socket

    stop = False

    def on_signal(signum, frame) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    print(SNAP_WARNING, file=sys.stderr, flush=True)
    try:
        sock = conf.L2socket(iface=args.iface, filter=args.bpf)
    except PermissionError as exc:
        print(f"scapy: You don't have permission to capture on that device ({exc.strerror})", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"scapy: cannot capture on {args.iface}: {exc}", file=sys.stderr)
        return 1
    linktype = conf.l2types.layer2num.get(sock.LL, 1)
    rotator = Rotator(args.base, int(args.ring_mb * 1_000_000), args.ring_files, linktype, args.snaplen or 262144)
    rotator.open_next()
    packets = truncated = 0
    last_report = time.monotonic()
    status = 0
    try:
        while not stop and not (args.count and packets >= args.count):
            if not select.select([sock], [], [], 0.25)[0]:
                continue
            _, frame, ts = sock.recv_raw(SCAPY_LIMIT)
            if frame is None:
                continue
            if args.snaplen:
                frame = frame[:args.snaplen]
            rotator.write(frame, ts or time.time())
            packets += 1
            truncated += len(frame) >= SCAPY_LIMIT
            if time.monotonic() - last_report >= 0.5:
                print(f"\rPackets: {packets} ", end="", file=sys.stderr, flush=True)
                last_report = time.monotonic()
    except OSError as exc:
        print(f"scapy: writing the capture failed: {exc}", file=sys.stderr)
        status = 1
    finally:
        sock.close()
        try:
            rotator.close()
        except OSError as exc:
            print(f"scapy: closing the capture failed: {exc}", file=sys.stderr)
            status = 1
    if truncated:
        print(f"scapy: {truncated} frames reached {SCAPY_LIMIT} bytes and are probably truncated", file=sys.stderr)
    print(f"\rPackets captured: {packets}", file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
