"""``python -m jupyter_recap.cli``: the same as the ``jupyter recap`` command."""

import sys

from . import main

sys.exit(main())
