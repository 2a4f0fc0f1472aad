import sys

from dashboards.cli import main

sys.exit(main())
