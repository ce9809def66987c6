"""``python -m drla``: see ``drla.cli``."""

import sys

from .cli import main

sys.exit(main())
