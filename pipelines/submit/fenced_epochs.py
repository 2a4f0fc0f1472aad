"""spark-submit pipelines/submit/fenced_epochs.py --frames OUT --out REPORT [--window 1s]"""

import sys

from kafkatap.pipelines.report import job_main


def main(argv: list[str] | None = None) -> int:
    return job_main("fenced_epochs", argv)


if __name__ == "__main__":
    sys.exit(main())
