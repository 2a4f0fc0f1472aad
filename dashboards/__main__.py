import sys

from kafkatap.dashboards.cli import main

sys.exit(main())
