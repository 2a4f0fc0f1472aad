"""`python -m kafkatap.capture` = `kafkatap capture`."""

import sys

from kafkatap.capture.cli import main

sys.exit(main())
