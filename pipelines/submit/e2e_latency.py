"""spark-submit pipelines/submit/e2e_latency.py --frames OUT --out REPORT [--window 1s]"""

import sys

from kafkatap.pipelines.report import job_main


def main(argv: list[str] | None = None) -> int:
    return job_main("e2e_latency", argv)


if __name__ == "__main__":
    sys.exit(main())
