"""``python -m tollwatch``: the command line (tollwatch.cli)."""

import sys

from .cli import main

sys.exit(main())
