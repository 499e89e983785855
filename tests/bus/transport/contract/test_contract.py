"""The transport contract (:mod:`coupler.bus.testing.contract`, shipped in the package) over
every transport of ``support.TRANSPORTS`` (the ``transport`` fixture of conftest.py)."""

from coupler.bus.testing.contract import *  # noqa: F403  (the contract's tests)
