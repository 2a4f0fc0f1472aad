"""`kafkatap capture`: capture Kafka traffic on a live interface into a ring of pcapng files, optionally dissecting.

Exit codes: 0 the capture ran and stopped as asked (Ctrl-C, SIGTERM, --duration, --packets); 1 it failed (no
permission, engine error, full disk, dissector error); 2 the command line is wrong (ports, interface, directory).
"""

from __future__ import annotations

import argparse
import os
import sys

from kafkatap import errors

from kafkatap.capture.bpf import PortError, build_filter, parse_ports
from kafkatap.capture.engines import ENGINES, PREFIX, EngineMissing, Spec, choose, classify
from kafkatap.capture.ring import HOLD_DIR
from kafkatap.capture.session import EngineStartError, Outcome, Session
from kafkatap.capture.status import human_bytes
from kafkatap.errors import CommandError, UsageError

SYS_NET = "/sys/class/net"
LISTED_FILES = 12  # the summary names the first and last files of longer runs


def parser() -> errors.ArgumentParser:
    p = errors.ArgumentParser(prog="kafkatap capture", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-i", "--interface", required=True, help="interface to capture on (lo, eth0, any)")
    p.add_argument("--port", action="append", default=[], metavar="PORT",
                   help="Kafka port; repeat, or give 9092,9093 or 9092-9094 (default 9092 unless --bootstrap)")
    p.add_argument("-w", "--write-dir", required=True, metavar="DIR", help="directory for the ring files")
    p.add_argument("--duration", type=float, default=0.0, metavar="S", help="stop after S seconds")
    p.add_argument("--packets", type=int, default=0, metavar="N", help="stop after N packets")
    p.add_argument("--ring-mb", type=float, default=100.0, metavar="MB", help="start a new file every MB (100)")
    p.add_argument("--ring-files", type=int, default=0, metavar="K",
                   help="keep only the last K files (default: keep every file)")
    p.add_argument("--snaplen", type=int, default=0, metavar="B", help="bytes kept per packet (default: whole; a cut packet cuts Kafka messages)")
    p.add_argument("--engine", choices=ENGINES, help="capture engine (default: dumpcap, else tcpdump, else scapy)")
    p.add_argument("--dissect", metavar="OUT",
                   help="also dissect into Parquet under OUT as the capture goes: each file once closed, OUT readable "
                        "while it runs, and at the end the same output as `kafkatap dissect` over the run's files "
                        "(files the ring deleted included)")
    p.add_argument("--records", action="store_true", help="with --dissect: also write one row per record")
    p.add_argument("--payloads", action="store_true", help="with --dissect --records: keep keys and values")
    p.add_argument("--tls-keylog", action="append", metavar="FILE",
                   help="with --dissect: decrypt TLS on the Kafka ports with this NSS key log (repeatable; default: "
                        "$SSLKEYLOGFILE)")
    p.add_argument("--bootstrap", metavar="HOST:PORT", action="append", default=[],
                   help="ask this broker for the cluster's brokers and capture all their ports")
    return p


@errors.command("capture")
def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("kafkatap capture: interrupted twice: the engine was stopped and its files are complete; "
              "any --dissect output is incomplete (run `kafkatap dissect` on the files)", file=sys.stderr)
        return 130


def run(args: argparse.Namespace) -> int:
    ports = _ports(args)
    check_options(args)
    check_interface(args.interface)
    try:
        engine, binary, note = choose(args.engine)
    except EngineMissing as exc:
        raise CommandError(str(exc)) from None
    if note:
        print(f"kafkatap capture: {note}", file=sys.stderr)
    dissect = _dissector(args, ports) if args.dissect else None
    created = prepare_dir(args.write_dir)
    spec = Spec(args.interface, build_filter(ports), os.path.abspath(args.write_dir), args.ring_mb, args.ring_files,
                args.snaplen, args.duration, args.packets)
    try:
        outcome = Session(engine, binary, spec, dissect, args.dissect).run()
    except EngineStartError as exc:
        if created:
            _remove_empty(args.write_dir)
        raise CommandError(str(exc)) from None
    failure = failure_message(outcome, args.interface, engine)
    if failure and not outcome.ring.files:  # it never captured: no summary, no directory left behind
        if created:
            _remove_empty(args.write_dir)
    else:
        for line in summary(outcome, engine, binary, spec, args.dissect):
            print(line)
    if failure:
        print(f"kafkatap capture: {failure}", file=sys.stderr)
        return 1
    return 1 if outcome.dissect_error else 0


def _ports(args: argparse.Namespace) -> list[int]:
    try:
        ports = parse_ports(args.port) if args.port else [] if args.bootstrap else [9092]
    except PortError as exc:
        raise UsageError(f"--port: {exc}") from None
    for bootstrap in args.bootstrap:
        from kafkatap.capture.discovery import DiscoveryError, discover, parse_hostport

        try:
            parse_hostport(bootstrap)
        except DiscoveryError as exc:
            raise UsageError(str(exc)) from None
        try:
            brokers = discover(bootstrap)
        except DiscoveryError as exc:
            raise CommandError(str(exc)) from None
        for node_id, host, port in brokers:
            print(f"kafkatap capture: broker {node_id} advertises {host}:{port}", file=sys.stderr)
        ports = sorted(set(ports) | {port for _, _, port in brokers})
    if not ports:
        raise CommandError("the bootstrap brokers advertised no broker: nothing to capture")
    return ports


def check_options(args: argparse.Namespace) -> None:
    for name in ("duration", "packets", "ring_mb", "ring_files", "snaplen"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} cannot be negative")
    if args.ring_mb == 0:
        raise UsageError("--ring-mb must be more than 0")
    if args.payloads and not args.records:
        raise UsageError("--payloads needs --records")
    if (args.records or args.payloads) and not args.dissect:
        raise UsageError("--records and --payloads need --dissect OUT")
    if args.tls_keylog and not args.dissect:
        raise UsageError("--tls-keylog needs --dissect OUT")


def interfaces() -> list[str] | None:
    """Interface names of this machine (Linux), or None when they cannot be listed."""
    try:
        return sorted(os.listdir(SYS_NET))
    except OSError:
        return None


def check_interface(name: str) -> None:
    names = interfaces()
    if names is None or name in names or name == "any":
        return
    raise UsageError(f"no interface named {name!r}; this machine has: {', '.join(names)} "
                     "(and 'any' for all of them)")


def prepare_dir(path: str) -> bool:
    """Create the ring directory if needed (True if created); refuse one that holds files of an earlier run."""
    created = not os.path.isdir(path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {path}: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write to {path}: choose a directory this user can write")
    earlier = sorted(n for n in os.listdir(path) if n.startswith((PREFIX + "_", PREFIX + ".pcap", HOLD_DIR)))
    if earlier:
        raise UsageError(f"{path} already holds capture files of an earlier run ({earlier[0]}, ...): "
                         "choose an empty directory so no file is overwritten")
    return created


def _remove_empty(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


def _dissector(args: argparse.Namespace, ports: list[int]):
    try:
        from kafkatap.dissect.cli import keylog_files
        from kafkatap.dissect.run import dissect_captures
    except ImportError as exc:
        raise CommandError(f"--dissect needs the dissector (dissect.run), which cannot be imported: {exc}") from None
    out = args.dissect
    if os.path.exists(out) and os.listdir(out):
        raise UsageError(f"--dissect {out} is not empty: choose a new directory for the Parquet output")
    keylogs = keylog_files(args.tls_keylog, lambda line: print(f"kafkatap capture: warning: {line}", file=sys.stderr))

    def dissect(paths, on_progress) -> dict:
        return dissect_captures(paths, out, ports=ports, records=args.records, payloads=args.payloads, ordered=True,
                                on_progress=on_progress, tls_keylog=keylogs)

    return dissect


PERMISSION_HELP = """no permission to capture on {iface} with {engine}. Either run as root, or let this user capture:
  sudo setcap cap_net_raw,cap_net_admin=eip {binary}
  (Debian: `sudo dpkg-reconfigure wireshark-common` -> Yes makes dumpcap capture for the "wireshark" group, then
  `sudo usermod -aG wireshark $USER` and log in again)"""


def failure_message(outcome: Outcome, iface: str, engine: str) -> str | None:
    """A clear sentence for an engine that failed (None when it stopped as asked)."""
    if outcome.returncode == 0 and outcome.stopped_by != "disk full":
        return None
    kind = "disk_full" if outcome.stopped_by == "disk full" else classify(outcome.log.messages)
    detail = "\n".join(outcome.log.messages[-6:])
    if kind == "permission":
        binary = {"dumpcap": "/usr/bin/dumpcap", "tcpdump": "/usr/bin/tcpdump"}.get(engine, sys.executable)
        return PERMISSION_HELP.format(iface=iface, engine=engine, binary=binary)
    if kind == "no_device":
        names = interfaces() or []
        return f"{engine} cannot open interface {iface!r}; this machine has: {', '.join(names)}"
    if kind == "disk_full":
        return ("the disk holding the capture directory is full: the capture stopped. Every file written is "
                "readable" + (" (the last one was cut back to its last whole packet)" if outcome.trimmed else "") +
                ". Free space or choose another -w directory, or bound the ring with --ring-files.")
    if kind == "bad_filter":
        return f"{engine} rejected the capture filter:\n{detail}"
    return f"{engine} exited with status {outcome.returncode}:\n{detail}" if detail else \
        f"{engine} exited with status {outcome.returncode}"


def summary(outcome: Outcome, engine: str, binary: str | None, spec: Spec, dissect_out: str | None) -> list[str]:
    """Plain lines (one fact per line) printed at the end of every run that started an engine."""
    log = outcome.log
    rotated = set(outcome.rotated_away)
    lines = [f"stopped by: {outcome.stopped_by} after {outcome.elapsed:.1f} s",
             f"engine: {engine}" + (f" ({binary})" if binary else ""),
             f"interface: {spec.iface}", f"filter: {spec.bpf}",
             f"packets captured: {log.packets}"]
    if log.received is not None:
        lines.append(f"packets received: {log.received}")
    lines.append("packets dropped: " + ("not reported by the engine" if log.dropped is None else
                                        f"{log.dropped}" + (f" (interface: {log.if_dropped})"
                                                            if log.if_dropped is not None else "")))
    files = [f.path for f in outcome.ring.files]
    lines.append(f"files: {len(files)} written ({human_bytes(outcome.ring.bytes_written())}), "
                 f"{len(files) - len(rotated)} kept in {spec.out_dir}")
    shown = files if len(files) <= LISTED_FILES else files[:2] + [None] + files[2 - LISTED_FILES:]
    for p in shown:
        if p is None:
            lines.append(f"  ... {len(files) - LISTED_FILES} more")
        else:
            lines.append(f"  {os.path.basename(p)}" + ("  (rotated away by the ring)" if p in rotated else ""))
    for path, cut in outcome.trimmed.items():
        lines.append(f"trimmed: {os.path.basename(path)} lost {cut} bytes of a half-written packet")
    lines += [f"engine said: {m}" for m in log.messages if outcome.returncode == 0]
    if dissect_out:
        lines += dissect_lines(outcome, dissect_out)
    return lines


def dissect_lines(outcome: Outcome, out: str) -> list[str]:
    if outcome.dissect_error:
        return [f"dissect: FAILED ({outcome.dissect_error}); the capture files are intact: "
                f"run `kafkatap dissect` on them"]
    if outcome.dissect_summary is None:
        return ["dissect: nothing to dissect (no capture file was written)"]
    s = outcome.dissect_summary
    lines = [f"dissect: {out}", f"  packets read: {s.get('packets')}"]
    lines += [f"  {table} rows: {n}" for table, n in s.get("rows", {}).items()]
    lines += [f"  {api} messages: {n}" for api, n in s.get("messages_by_api", {}).items()]
    if outcome.parquet_before_end:
        lines.append(f"  Parquet files readable before the capture stopped: {outcome.parquet_before_end}")
    if outcome.rotated_away:
        lines.append(f"  includes {len(outcome.rotated_away) - len(outcome.unreadable)} files the ring has since "
                     "deleted")
    if outcome.unreadable:
        lines.append(f"  MISSING {len(outcome.unreadable)} files removed before they could be read: "
                     + ", ".join(os.path.basename(p) for p in outcome.unreadable[:5]))
    return lines


if __name__ == "__main__":
    sys.exit(main())
