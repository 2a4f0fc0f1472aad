"""spark-submit pipelines/submit/analyze.py OUT -o REPORT [--window 1s] [--jobs ...]: every pipeline, in order
(`kafkatap analyze`'s command line, `pipelines/cli.py`)."""

import sys

from kafkatap.pipelines.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
