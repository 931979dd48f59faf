"""``python -m kafkalite_server`` is ``kafkalite-server``."""

import sys

from kafkalite_server.cli import main

sys.exit(main())
