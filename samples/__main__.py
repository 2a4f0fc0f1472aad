"""`python -m kafkatap.samples ...` is `kafkatap samples ...`."""

import sys

from kafkatap.samples.cli import main

sys.exit(main())
