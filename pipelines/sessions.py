"""spark-submit pipelines/sessions.py --frames OUT --out REPORT [--window 1s]"""

import os
import sys

# As a script, sys.path[0] is pipelines/ itself, where this file would shadow the packages: use the project root.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from pipelines.report import job_main  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    return job_main("sessions", argv)


if __name__ == "__main__":
    sys.exit(main())
