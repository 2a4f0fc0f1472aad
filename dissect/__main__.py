"""`python -m kafkatap.dissect ...`: the same as `kafkatap dissect ...`."""

import sys

from kafkatap.dissect.cli import main

sys.exit(main(sys.argv[1:]))
