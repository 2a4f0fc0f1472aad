"""The `kafkatap` console script: one subcommand per stage, each also runnable on its own."""

from __future__ import annotations

import importlib
import os
import sys

from kafkatap import errors

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "report": ("kafkatap.report_cli", "dissect, analyze and chart captures in one go (DIR/dashboard.html)"),
    "capture": ("kafkatap.capture.cli", "capture live broker traffic to rotating pcapng files"),
    "dissect": ("kafkatap.dissect_cli", "turn pcap/pcapng captures into Parquet frames (on Spark with --master)"),
    "analyze": ("kafkatap.pipelines.cli", "run every PySpark pipeline over dissected frames"),
    "dashboard": ("kafkatap.dashboards.cli", "write the self-contained HTML dashboard of a report"),
    "samples": ("kafkatap.samples.cli", "regenerate the bundled sample captures and their ground truth"),
    "demo": ("kafkatap.demo", "dissect, analyze and chart the bundled sample end to end"),
}


def usage() -> str:
    lines = ["usage: kafkatap <command> [options]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines += ["", "Run `kafkatap <command> --help` for a command's options. `--debug` (or KAFKATAP_DEBUG=1) shows",
              "the traceback of a failure instead of one line. Exit codes: 0 done, 1 the run failed or could not",
              "read its input, 2 wrong command line, 3 the captures hold no Kafka traffic (dissect, report),",
              "130 interrupted (Ctrl-C, SIGTERM)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--debug" in argv:
        os.environ[errors.DEBUG_ENV] = "1"  # read by the subcommand's own error handling
        argv = [a for a in argv if a != "--debug"]
    if not argv or argv[0] in {"-h", "--help"}:
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"kafkatap: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    # kafkatap multiplies no matrices; without this, numpy's OpenBLAS starts a thread per core that polls for work
    # (about 5% of a dissect run's CPU). Set before any subcommand imports numpy; inherited by worker processes.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        module = importlib.import_module(SUBCOMMANDS[name][0])
    except (Exception, KeyboardInterrupt) as exc:  # a broken install: still one line, not a traceback
        return errors.report(name, exc, errors.debug_requested())
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
