"""`python -m samples ...` is `kafkatap samples ...`."""

import sys

from samples.cli import main

sys.exit(main())
