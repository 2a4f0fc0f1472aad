"""spark-submit pipelines/submit/dissect.py --captures 'URI/*.pcapng' --out OUT [--port 9092 ...] [--records]

Dissects many captures in parallel, one capture set per Spark task, into the same OUT layout as `kafkatap dissect`.
"""

import argparse
import sys

from kafkatap.pipelines.captures import (
    capture_sets, clear_out, dissect_set, list_captures, merge_summaries, write_summary,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dissect.py", description=__doc__.splitlines()[0])
    parser.add_argument("--captures", required=True, action="append",
                        help="capture file or pattern (wildcards in the last component); repeatable")
    parser.add_argument("--out", required=True, help="output directory (path or URI)")
    parser.add_argument("--port", type=int, action="append", help="broker port (repeatable, default 9092)")
    parser.add_argument("--records", action="store_true", help="also write records/")
    parser.add_argument("--payloads", action="store_true", help="with --records, keep key and value bytes")
    parser.add_argument("--one-per-file", action="store_true",
                        help="dissect every file on its own instead of grouping rotated files of one capture")
    parser.add_argument("--master", default=None, help="Spark master when not started by spark-submit")
    args = parser.parse_args(argv)
    files = sorted({f for pattern in args.captures for f in list_captures(pattern)})
    if not files:
        print(f"dissect.py: no capture matches {args.captures}", file=sys.stderr)
        return 2
    sets = capture_sets(files, args.one_per_file)
    ports, out, records, payloads = args.port or [9092], args.out, args.records, args.payloads

    from kafkatap.pipelines.spark import get_spark

    spark = get_spark("kafkatap-dissect", args.master)
    clear_out(out, records)
    jobs = spark.sparkContext.parallelize(list(enumerate(sets)), len(sets))
    parts = jobs.map(lambda item: dissect_set(item[0], item[1], out, ports, records, payloads)).collect()
    write_summary(out, merge_summaries(parts))
    print(f"dissected {len(files)} files in {len(sets)} capture sets into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
