import sys

from kafkatap.cli import main

sys.exit(main())
