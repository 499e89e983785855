"""The application file for ``spark-submit``: ``spark-submit [...] spark_main.py batch ...``.

Runs the ``coupler`` command line inside the driver ``spark-submit`` starts; use
``--master submit`` so that the session takes the master ``spark-submit`` was given.
"""

from __future__ import annotations

import sys

from coupler.bus.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
