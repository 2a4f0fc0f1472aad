"""`kafkatap analyze OUT -o REPORT [--master local[*]] [--window 1s]`: every pipeline over one dissector output.

The pipelines' command line, in one place: `kafkatap analyze`, `python -m kafkatap.pipelines` and, on a cluster,
`spark-submit pipelines/submit/analyze.py OUT -o REPORT` (the master then comes from spark-submit) all run `main`.
"""

import argparse
import json
import os
import sys

from kafkatap import errors
from kafkatap.pipelines.failures import spark_failures
from kafkatap.pipelines.inputs import check_local, short_run
from kafkatap.pipelines.launch import log_path
from kafkatap.pipelines.report import JOBS, run
from kafkatap.pipelines.spark import get_spark
from kafkatap.pipelines.storage import window_interval


def window_arg(text: str) -> str:
    """--window as given, once it is known to parse: a typo then costs no JVM start."""
    try:
        window_interval(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def jobs_arg(text: str) -> list[str]:
    jobs = [j.strip() for j in text.split(",") if j.strip()]
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown jobs {', '.join(unknown)}: choose from {', '.join(JOBS)}")
    return jobs


def parse(argv: list[str]) -> argparse.Namespace:
    parser = errors.ArgumentParser(prog="kafkatap analyze", description=__doc__.splitlines()[0])
    parser.add_argument("frames", metavar="OUT", help="the dissector's output directory (path or URI)")
    parser.add_argument("-o", "--out", required=True, metavar="REPORT", help="report directory (path or URI)")
    parser.add_argument("--master", default=None,
                        help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--window", default="1s", type=window_arg,
                        help="throughput window, e.g. 500ms, 1s, 1m (default 1s)")
    needs = "; ".join(f"{job} needs {' and '.join(j.needs)}" for job, j in JOBS.items() if j.needs)
    parser.add_argument("--jobs", default=list(JOBS), type=jobs_arg,
                        help=f"comma-separated subset of {', '.join(JOBS)} (the jobs a job needs run first: {needs})")
    parser.add_argument("--verbose", action="store_true",
                        help="leave Spark's own log on the terminal instead of a file under the temp folder")
    return parser.parse_args(argv)


@errors.command("analyze")
def main(argv: list[str]) -> int:
    args = parse(argv)
    check_local(args.frames)
    # Under spark-submit the JVM started this process (PYSPARK_GATEWAY_PORT): its --master wins.
    master = args.master or (None if os.environ.get("PYSPARK_GATEWAY_PORT") else "local[*]")
    log = None if args.verbose else log_path("analyze")
    with spark_failures(args.out, log):
        spark = get_spark("kafkatap-analyze", master, log=log, short_run=short_run(args.frames))
        result = run(spark, args.frames, args.out, args.jobs, args.window,
                     on_job=lambda job, seconds: print(f"{job}: done in {seconds:.1f} s", file=sys.stderr, flush=True))
    print(json.dumps(result, indent=2, sort_keys=True))
    if log and os.path.exists(log):
        print(f"Spark's log: {log}", file=sys.stderr)
    return 0
