"""`kafkatap demo`: the whole chain on the bundled sample, so a new user sees every stage's output in one command."""

from __future__ import annotations

import argparse
from pathlib import Path

from kafkatap.samples import available, capture_path

DEFAULT_SAMPLE = "day_in_the_life"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkatap demo",
        description="Dissect a bundled sample capture, run every pipeline in local Spark, and write the dashboard.",
    )
    parser.add_argument("--sample", default=DEFAULT_SAMPLE, help=f"bundled sample name (default {DEFAULT_SAMPLE})")
    parser.add_argument("-o", "--out", default="demo-out", help="output folder (default ./demo-out)")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    args = parser.parse_args(argv)

    from kafkatap.dashboards.build import write_dashboard
    from kafkatap.dissect.run import dissect_captures
    from kafkatap.pipelines.report import JOBS, run
    from kafkatap.pipelines.spark import get_spark

    out = Path(args.out).resolve()
    dissected, report, page = out / "dissected", out / "report", out / "dashboard.html"
    if args.sample not in available():
        parser.error(f"no bundled sample {args.sample!r}; bundled: {', '.join(available())}")
    capture = capture_path(args.sample)
    print(f"[1/3] dissecting {capture} -> {dissected}")
    dissect_captures([str(capture)], str(dissected), records=True, progress=True)
    print(f"[2/3] running the pipelines in Spark ({args.master}) -> {report}")
    summary = run(get_spark("kafkatap-demo", args.master), str(dissected), str(report), list(JOBS),
                  on_job=lambda job, seconds: print(f"      {job}: {seconds:.1f} s", flush=True))
    print(f"      fencings: {summary.get('fenced_epochs')}, records delivered again: {summary.get('duplicate_records')}")
    print(f"[3/3] writing the dashboard -> {page}")
    write_dashboard(str(report), str(page))
    print(f"done: open {page}")
    return 0
