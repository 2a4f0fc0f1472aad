"""`kafkatap analyze OUT -o REPORT [--master local[*]] [--window 1s]`: every pipeline over one dissector output.

Also `spark-submit pipelines/submit/analyze.py OUT -o REPORT` on a cluster (the master then comes from spark-submit).
"""

import argparse
import json
import os
import sys

from kafkatap.pipelines.report import JOBS, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafkatap analyze", description=__doc__.splitlines()[0])
    parser.add_argument("frames", metavar="OUT", help="the dissector's output directory (path or URI)")
    parser.add_argument("-o", "--out", required=True, metavar="REPORT", help="report directory (path or URI)")
    parser.add_argument("--master", default=None,
                        help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--window", default="1s", help="throughput window, e.g. 500ms, 1s, 1m (default 1s)")
    parser.add_argument("--jobs", default=",".join(JOBS), help=f"comma-separated subset of {', '.join(JOBS)}")
    args = parser.parse_args(argv)
    jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        parser.error(f"unknown jobs {unknown}")
    from kafkatap.pipelines.spark import get_spark

    # Under spark-submit the JVM started this process (PYSPARK_GATEWAY_PORT): its --master wins.
    master = args.master or (None if os.environ.get("PYSPARK_GATEWAY_PORT") else "local[*]")
    spark = get_spark("kafkatap-analyze", master)
    result = run(spark, args.frames, args.out, jobs, args.window,
                 on_job=lambda job, seconds: print(f"{job}: done in {seconds:.1f} s", file=sys.stderr, flush=True))
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
