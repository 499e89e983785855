"""``python -m coupler.bus.cli``: the ``coupler`` command."""

import sys

from coupler.bus.cli.main import main

sys.exit(main())
