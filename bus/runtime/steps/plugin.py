"""The core plugin of the built-in step types: they come through ``coupler_step_types`` like
a third party's (``coupler plugins`` lists them under ``steps``)."""

from __future__ import annotations

from typing import Any

from coupler.bus.plugins.hookspecs import hookimpl


@hookimpl
def coupler_step_types() -> dict[str, Any]:
    from coupler.bus.runtime.steps.aggregate import Aggregator
    from coupler.bus.runtime.steps.builtin import BUILTIN_STEPS
    from coupler.bus.runtime.steps.enrich import Enricher
    from coupler.bus.runtime.steps.process import ProcessManager
    from coupler.bus.runtime.steps.resequence import Resequencer

    return {**BUILTIN_STEPS, **{cls.type_name: cls for cls in (Aggregator, Resequencer, Enricher, ProcessManager)}}
