"""`kafkatap samples make [NAME...]`: regenerate the bundled captures and their ground truth; `list` shows them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kafkatap import errors


@errors.command("samples")
def main(argv: list[str]) -> int:
    from kafkatap.samples.workloads import NAMES

    parser = errors.ArgumentParser(prog="kafkatap samples", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    mk = sub.add_parser("make", help="run workloads under capture and write <name>.pcapng + <name>.truth.json")
    mk.add_argument("names", nargs="*", metavar="NAME", help=f"samples to make (default: all): {', '.join(NAMES)}")
    mk.add_argument("-o", "--out", type=Path, default=Path(__file__).parent, help="output directory")
    sub.add_parser("list", help="list the samples and their files")
    args = parser.parse_args(argv)

    if args.command == "list":
        from kafkatap.samples import capture_path
        for name in NAMES:
            pcap = capture_path(name)
            size = f"{pcap.stat().st_size:>9,} bytes" if pcap.exists() else "  (not made)"
            print(f"{name:<28} {size}")
        return 0

    unknown = [n for n in args.names if n not in NAMES]
    if unknown:
        parser.error(f"unknown sample(s) {unknown}; known: {', '.join(NAMES)}")
    try:
        from kafkatap.samples.make import capture_file, make
    except ImportError as exc:
        raise errors.CommandError(f"making samples needs real Kafka clients and a broker ({exc.name} is missing): "
                                  "pip install 'kafkatap[samples]'") from None

    failed = []
    for name in args.names or NAMES:
        t0 = time.monotonic()
        try:
            doc = make(name, args.out)
        except Exception as exc:  # one broken workload must not stop the others from being made
            failed.append(name)
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            continue
        size = capture_file(name, args.out).stat().st_size
        print(f"{name}: {size:,} bytes, {sum(doc['requests']['by_api'].values())} requests, "
              f"{time.monotonic() - t0:.1f} s")
    return 1 if failed else 0
