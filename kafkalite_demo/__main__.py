"""``python -m kafkalite_demo``."""

import sys

from kafkalite_demo import main

sys.exit(main())
