"""`python -m dissect ...`: the same as `kafkatap dissect ...`."""

import sys

from dissect.cli import main

sys.exit(main(sys.argv[1:]))
