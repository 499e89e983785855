"""A Coupler step type plugin, the example of docs/plugins.md: ``redact`` masks fields of JSON
message bodies (card numbers, national ids) before a message leaves for a system that must not
see them.

Install it next to Coupler (``pip install ./examples/plugin-step``) and ``coupler plugins``
lists ``redact`` under step types; a route then uses it::

    [[routes]]
    name = "to-analytics"
    from = "payments"
    to = ["payments.analytics"]

    [[routes.steps]]
    type = "redact"
    fields = ["card.number", "customer.tax_id"]
    keep_last = 4
"""

from __future__ import annotations

import json
from typing import Any

from coupler.bus.api import (
    Continue,
    Int,
    Invalid,
    OptionsModel,
    Outcome,
    Step,
    StepContext,
    StepSetup,
    Str,
    hookimpl,
    option,
)
from coupler.canonical import Envelope


class RedactOptions(OptionsModel):
    """The keys of ``[[routes.steps]] type = "redact"`` (checked when the site loads)."""

    fields: tuple[Str, ...] = option("Dotted body fields to mask (`card.number`).")
    keep_last: Int = option("Characters left visible at the end of each value.", default=0, ge=0)
    mask: Str = option("The character masking the rest.", default="*")


class Redact(Step):
    """Masks fields of a JSON body; a body that is not JSON is an invalid message."""

    type_name = "redact"
    options_model = RedactOptions

    def __init__(self, options: RedactOptions, setup: StepSetup):
        super().__init__(options, setup)
        self.paths = [f.removeprefix("body.").split(".") for f in options.fields]

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        try:
            record = json.loads(message.body)
        except ValueError as exc:
            return Invalid(f"message {message.message_id}: its body is not JSON: {exc}")
        masked = [".".join(p) for p in self.paths if self._mask(record, p)]
        body = json.dumps(record, sort_keys=True).encode()
        return Continue.one(message.replace(body=body), f"masked {', '.join(masked) or 'nothing'}")

    def _mask(self, record: Any, path: list[str]) -> bool:
        for key in path[:-1]:
            record = record.get(key) if isinstance(record, dict) else None
        if not isinstance(record, dict) or record.get(path[-1]) is None:
            return False
        text = str(record[path[-1]])
        keep = min(self.options.keep_last, len(text))
        record[path[-1]] = self.options.mask * (len(text) - keep) + text[len(text) - keep:]
        return True


@hookimpl
def coupler_step_types() -> dict[str, type]:
    """What ``type = "redact"`` in a site's ``[[routes.steps]]`` refers to."""
    return {"redact": Redact}
