"""The application file for ``spark-submit``: ``spark-submit [...] spark_main.py batch ...``.

Runs the ``coupler`` command line inside the driver ``spark-submit`` starts; use
``--master submit`` so that the session takes the master ``spark-submit`` was given.
"""

from __future__ import annotations

import os
import sys

# run as a script, this file's folder is sys.path[0], where bus/model/selectors.py would shadow
# the standard library's selectors: take it out before importing anything else
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from coupler.bus.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
