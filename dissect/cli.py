"""`kafkatap dissect CAPTURE [CAPTURE ...] -o OUT [--port 9092 ...] [--records] [--payloads]`.

Exit codes: 0 every input was dissected; 1 an input could not be read as a capture (the others were dissected, and
its anomaly row says why) or the output could not be written (nothing was published); 2 the command line is wrong;
130 interrupted by Ctrl-C or SIGTERM (what was read so far is published, summary.json says so).
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

from kafkatap import errors
from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.stop import stop_on_signal
from kafkatap.dissect.tables.summary import render
from kafkatap.errors import UsageError


def parser() -> errors.ArgumentParser:
    p = errors.ArgumentParser(
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


@errors.command("dissect")
def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    missing = [c for c in args.captures if not os.path.exists(c)]
    if missing:
        raise UsageError(f"no such file: {', '.join(missing)}")
    folders = [c for c in args.captures if os.path.isdir(c)]
    if folders:
        raise UsageError(f"{folders[0]} is a folder: give the capture files in it (e.g. {folders[0]}/*.pcapng)")
    if args.payloads and not args.records:
        raise UsageError("--payloads needs --records")
    ports = args.port or [9092]
    if any(not 0 < port < 65536 for port in ports):
        raise UsageError("a port must be 1-65535")
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    console = Console(stderr=True)
    with stop_on_signal() as stop:
        summary = dissect_captures(args.captures, args.out, ports=ports, records=args.records,
                                   payloads=args.payloads, progress=console.is_terminal and not args.quiet,
                                   workers=args.workers, stop=stop)
    if args.quiet:
        for warning in summary["warnings"]:
            if warning not in summary["unreadable_files"].values():  # the closing line names those
                console.print(f"[yellow]warning:[/] {warning}")
    else:
        render(summary, console)
    return outcome(summary, args.out)


def outcome(summary: dict, out: str) -> int:
    """The exit code of a finished run, with its one line when that is not 0."""
    if summary["interrupted"]:
        print(f"kafkatap dissect: interrupted: {out} holds what was read before the signal (its summary.json says "
              "\"interrupted\": true)", file=sys.stderr)
        return errors.INTERRUPTED
    bad = summary["unreadable_files"]
    if not bad:
        return errors.OK
    listed = "; ".join(list(bad.values())[:3]) + ("; ..." if len(bad) > 3 else "")  # each names its file
    if summary["capture_files_read"] == 0:
        print(f"kafkatap dissect: no input was a capture it could read ({listed}): nothing was dissected",
              file=sys.stderr)
    else:
        print(f"kafkatap dissect: {len(bad)} of {len(summary['files'])} inputs could not be read as captures "
              f"({listed}); the others were dissected into {out}", file=sys.stderr)
    return errors.FAILED
