"""The poll thread of the file adapters: the bus's polling helper (:class:`coupler.bus.api.Poller`)."""

from coupler.bus.api import Poller

__all__ = ["Poller"]
