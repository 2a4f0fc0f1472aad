"""`kafkatap dissect CAPTURE [CAPTURE ...] -o OUT [--port 9092 ...] [--records] [--payloads] [--tls-keylog FILE ...]`.

Exit codes: 0 every input was dissected; 1 an input could not be read as a capture (the others were dissected, and
its anomaly row says why) or the output could not be written (nothing was published); 2 the command line is wrong;
3 the captures were read and hold no Kafka traffic (one line says what was looked for); 130 interrupted by Ctrl-C or
SIGTERM (what was read so far is published, summary.json says so).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkatap import errors
from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.stop import stop_on_signal
from kafkatap.dissect.tables.summary import render
from kafkatap.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

KEYLOG_ENV = "SSLKEYLOGFILE"
"""Where TLS libraries write their key log (NSS format): the key log used when no --tls-keylog is given."""


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
    p.add_argument("--master", metavar="URL",
                   help="dissect on Spark (spark://HOST:PORT, yarn, local[N]): the files are read in splits by "
                        "many tasks and the connections spread over its partitions; OUT must be a folder every "
                        "executor sees")
    p.add_argument("--split-size", type=int, default=64, metavar="MB",
                   help="with --master, MiB of a file each task reads (default 64)")
    add_keylog_option(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    return p


def add_keylog_option(p: errors.ArgumentParser) -> None:
    p.add_argument("--tls-keylog", action="append", metavar="FILE",
                   help=f"decrypt TLS on the Kafka ports with this NSS key log (repeatable; default: ${KEYLOG_ENV})")


def keylog_files(given: list[str] | None, warn: Callable[[str], None]) -> list[str]:
    """The key logs to decrypt TLS with: those given, each readable (else a usage error), or else SSLKEYLOGFILE's.
    That variable is often set for other programs (browsers write to it), so when it names no readable file this
    is said and the run goes on without it rather than failing a capture that may hold no TLS."""
    for path in given or ():
        problem = _unreadable(path)
        if problem:
            raise UsageError(f"--tls-keylog {path}: {problem}")
    if given:
        return list(given)
    path = os.environ.get(KEYLOG_ENV)
    if not path:
        return []
    problem = _unreadable(path)
    if problem:
        warn(f"{KEYLOG_ENV}={path} {problem}: TLS is not decrypted")
        return []
    return [path]


def _unreadable(path: str) -> str | None:
    if os.path.isdir(path):
        return "is a folder, not a key log file"
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"


def check_arguments(captures: list[str], ports: list[int], workers: int) -> None:
    """What `dissect` and `report` refuse before reading anything: missing files, folders, ports, workers."""
    missing = [c for c in captures if not os.path.exists(c)]
    if missing:
        raise UsageError(f"no such file: {', '.join(missing)}")
    folders = [c for c in captures if os.path.isdir(c)]
    if folders:
        raise UsageError(f"{folders[0]} is a folder: give the capture files in it (e.g. {folders[0]}/*.pcapng)")
    if any(not 0 < port < 65536 for port in ports):
        raise UsageError("a port must be 1-65535")
    if workers < 1:
        raise UsageError("--workers must be at least 1")


def unreadable(summary: dict) -> str:
    """The first few inputs that were not captures, with why (each reason names its file)."""
    bad = list(summary["unreadable_files"].values())
    return "; ".join(bad[:3]) + ("; ..." if len(bad) > 3 else "")


@errors.command("dissect")
def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.master:
        raise UsageError("--master dissects on Spark: run it as `kafkatap dissect` (or spark-submit "
                         "pipelines/submit/dissect.py)")
    return run(args, local)


def stderr_console() -> Console:
    """rich's console on stderr, made when there is something to say: a quiet run with nothing to say never imports
    rich (about 25 ms, a fortieth of a chatty capture's dissect)."""
    from rich.console import Console

    return Console(stderr=True)


def warn(line: str) -> None:
    stderr_console().print(f"[yellow]warning:[/] {line}", soft_wrap=True)


def local(args: argparse.Namespace, ports: list[int], keylogs: list[str]) -> dict:
    """The dissect of one machine (`--workers N` processes). The objects the imports made (modules, classes,
    pyarrow's and numpy's) live until the command exits: frozen first (`gc.freeze`), they are skipped by the
    collector's passes during the run and by the interpreter's last ones as it exits, which scanned them all each
    time (a chatty capture's source, 6,340 pairs: 1,502 -> 1,453 million instructions; docs/performance.md)."""
    gc.freeze()
    with stop_on_signal() as stop:
        return dissect_captures(args.captures, args.out, ports=ports, records=args.records, payloads=args.payloads,
                                progress=not args.quiet and stderr_console().is_terminal, workers=args.workers,
                                stop=stop, tls_keylog=keylogs)


def run(args: argparse.Namespace, engine: Callable[[argparse.Namespace, list[int], list[str]], dict]) -> int:
    """The checks before a run, the run (engine: `local`, or Spark's), what it says after and its exit code."""
    ports = args.port or [9092]
    check_arguments(args.captures, ports, args.workers)
    if args.payloads and not args.records:
        raise UsageError("--payloads needs --records")
    if args.split_size < 1:
        raise UsageError("--split-size must be at least 1 (MiB)")
    keylogs = keylog_files(args.tls_keylog, warn)
    summary = engine(args, ports, keylogs)
    if args.quiet:
        for warning in summary["warnings"]:
            if warning not in summary["unreadable_files"].values():  # the closing line names those
                warn(warning)
    else:
        render(summary, stderr_console())
    for line in cut_short(summary, args.out):
        warn(line)
    return outcome(summary, args.out, ports)


def no_kafka(summary: dict, ports: list[int]) -> str | None:
    """Why a run that read its captures found no Kafka, and how to point kafkatap at it; None when it found some."""
    if summary["rows"].get("frames", 0) or not summary["capture_files_read"]:
        return None
    looked = (f"every TCP connection was checked for Kafka's framing (port{'s' if len(ports) > 1 else ''} "
              f"{', '.join(map(str, ports))} taken as brokers')")
    tcp, connections = summary["tcp_packets"], summary["connections"]
    if not summary["packets"]:
        found = "the capture holds no packets"
    elif not tcp:
        found = f"{summary['packets']:,} packets and none is TCP (a capture filter, or the wrong interface?)"
    else:
        found = (f"{summary['packets']:,} packets, {tcp:,} of them TCP, on {connections['with_payload']:,} "
                 "connections with data, none of them Kafka")
    hint = ("if the brokers' traffic is in the capture (a connection that began before the capture is only known "
            "by its port), give their port with --port")
    if connections.get("tls"):
        tls = connections["tls"]
        hint = (f"{tls:,} connection{' is' if tls == 1 else 's are'} TLS: give the key log of their clients or "
                "brokers with --tls-keylog")
    return f"no Kafka traffic found: {found}; {looked}. {hint[0].upper()}{hint[1:]}"


def cut_short(summary: dict, out: str) -> list[str]:
    """One line per capture file that ends inside a packet (copied while the capture ran, a disk that filled)."""
    if not summary["anomalies_by_kind"].get("truncated_file"):
        return []
    folder = os.path.join(out, "anomalies")
    if not os.path.isdir(folder):  # an output on a cluster's storage: the count is all there is here
        return [f"{summary['anomalies_by_kind']['truncated_file']} capture file(s) end inside a packet: the tables "
                "hold what came before the cut (anomalies, kind truncated_file)"]
    import pyarrow.dataset as ds  # here: it imports pandas (0.2 s), which no other part of a dissect run needs

    rows = ds.dataset(folder).to_table(columns=["capture_file", "detail"],
                                       filter=ds.field("kind") == "truncated_file").to_pylist()
    return [f"{r['capture_file']} is cut short ({r['detail']}): the tables hold what came before the cut"
            for r in rows]


def outcome(summary: dict, out: str, ports: list[int]) -> int:
    """The exit code of a finished run, with its one line when that is not 0."""
    if summary["interrupted"]:
        print(f"kafkatap dissect: interrupted: {out} holds what was read before the signal (its summary.json says "
              "\"interrupted\": true)", file=sys.stderr)
        return errors.INTERRUPTED
    bad = summary["unreadable_files"]
    if not bad:
        nothing = no_kafka(summary, ports)
        if nothing:
            print(f"kafkatap dissect: {nothing}", file=sys.stderr)
            return errors.NO_KAFKA
        return errors.OK
    listed = unreadable(summary)
    if summary["capture_files_read"] == 0:
        print(f"kafkatap dissect: no input was a capture it could read ({listed}): nothing was dissected",
              file=sys.stderr)
    else:
        print(f"kafkatap dissect: {len(bad)} of {len(summary['files'])} inputs could not be read as captures "
              f"({listed}); the others were dissected into {out}", file=sys.stderr)
    return errors.FAILED
