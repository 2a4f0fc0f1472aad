"""spark-submit pipelines/submit/dissect.py --captures 'URI/*.pcapng' --out OUT [--port 9092 ...] [--records]

Dissects the capture files as one capture on Spark, each file read in splits by many tasks, into the same OUT as
`kafkatap dissect` (pipelines/spark_dissect.py).
"""

import argparse
import sys

from kafkatap.pipelines.filesystems import list_captures
from kafkatap.pipelines.spark_dissect import SPLIT_SIZE, dissect_on_spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dissect.py", description=__doc__.splitlines()[0])
    parser.add_argument("--captures", required=True, action="append",
                        help="capture file or pattern (wildcards in the last component); repeatable")
    parser.add_argument("--out", required=True, help="output directory (path every executor sees, or URI)")
    parser.add_argument("--port", type=int, action="append", help="broker port (repeatable, default 9092)")
    parser.add_argument("--records", action="store_true", help="also write records/")
    parser.add_argument("--payloads", action="store_true", help="with --records, keep key and value bytes")
    parser.add_argument("--split-size", type=int, default=SPLIT_SIZE >> 20, metavar="MB",
                        help="MiB of a file each task reads")
    parser.add_argument("--partitions", type=int, default=None,
                        help="partitions the connections are spread over (default: Spark's default parallelism)")
    parser.add_argument("--master", default=None, help="Spark master when not started by spark-submit")
    args = parser.parse_args(argv)
    files = sorted({f for pattern in args.captures for f in list_captures(pattern)})
    if not files:
        print(f"dissect.py: no capture matches {args.captures}", file=sys.stderr)
        return 2

    from kafkatap.pipelines.spark import get_spark

    spark = get_spark("kafkatap-dissect", args.master)
    summary = dissect_on_spark(spark, files, args.out, ports=args.port or [9092], records=args.records,
                               payloads=args.payloads, split_size=args.split_size << 20, parts=args.partitions)
    print(f"dissected {len(files)} files in {summary['splits']} splits over {summary['workers']} partitions "
          f"into {args.out}")
    return 1 if summary["unreadable_files"] else 0


if __name__ == "__main__":
    sys.exit(main())
