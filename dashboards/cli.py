"""`kafkatap dashboard REPORT -o dashboard.html`: the self-contained HTML dashboard of a `kafkatap analyze` report."""

from __future__ import annotations

import os
import time

from kafkatap import errors
from kafkatap.dashboards.build import write_dashboard


@errors.command("dashboard")
def main(argv: list[str]) -> int:
    parser = errors.ArgumentParser(
        prog="kafkatap dashboard",
        description="Write one HTML file (charts inlined, opens offline) from a `kafkatap analyze` report.")
    parser.add_argument("report", help="report folder written by `kafkatap analyze` (local path or pyarrow URI)")
    parser.add_argument("-o", "--out", default="dashboard.html", help="HTML file to write (default dashboard.html)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    write_dashboard(args.report, args.out)
    size = os.path.getsize(args.out)
    print(f"wrote {args.out} ({size / 1e6:.1f} MB) in {time.perf_counter() - started:.1f} s")
    return 0
