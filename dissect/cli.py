"""`kafkatap dissect CAPTURE [CAPTURE ...] -o OUT [--port 9092 ...] [--records] [--payloads]`."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console

from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.tables.summary import render


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafkatap dissect",
        description="Turn pcap/pcapng captures of Kafka traffic into Parquet tables (frames, batches, records, "
                    "share, anomalies) and summary.json. Kafka on other ports is found from the first bytes of "
                    "each connection.")
    p.add_argument("captures", nargs="+", metavar="CAPTURE", help="pcap or pcapng files (one capture, time-ordered)")
    p.add_argument("-o", "--out", required=True, metavar="OUT", help="output directory")
    p.add_argument("--port", type=int, action="append", metavar="PORT",
                   help="a Kafka broker port (repeatable; default 9092)")
    p.add_argument("--records", action="store_true", help="also write records/: one row per record")
    p.add_argument("--payloads", action="store_true", help="with --records, keep record key and value bytes")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="split the connections over N processes (helps captures of many small messages)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    missing = [c for c in args.captures if not os.path.isfile(c)]
    if missing:
        print(f"kafkatap dissect: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.payloads and not args.records:
        print("kafkatap dissect: --payloads needs --records", file=sys.stderr)
        return 2
    ports = args.port or [9092]
    if any(not 0 < port < 65536 for port in ports):
        print("kafkatap dissect: a port must be 1-65535", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("kafkatap dissect: --workers must be at least 1", file=sys.stderr)
        return 2
    console = Console(stderr=True)
    summary = dissect_captures(args.captures, args.out, ports=ports, records=args.records, payloads=args.payloads,
                               progress=console.is_terminal and not args.quiet, workers=args.workers)
    if args.quiet:
        for warning in summary["warnings"]:
            console.print(f"[yellow]warning:[/] {warning}")
    else:
        render(summary, console)
    return 0
