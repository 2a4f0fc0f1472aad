"""python -m kafkatap.pipelines: `kafkatap analyze`."""

import sys

from kafkatap.pipelines.cli import main

sys.exit(main(sys.argv[1:]))
