"""The daemon's HTTP endpoint: operator console, JSON API, Prometheus metrics, health.

``[http] listen`` in site.toml turns it on (:mod:`.server`); the pages (:mod:`.pages`) and the
API call the same :class:`~coupler.bus.runtime.control.ControlService` as ``coupler ctl``;
``/metrics`` comes from :mod:`.metrics`.
"""
