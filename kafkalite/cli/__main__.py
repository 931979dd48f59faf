"""``python -m kafkalite.cli``: the same as the ``kafkalite`` console script."""

import sys

from kafkalite.cli.main import main

sys.exit(main())
