"""The redact step, tested without a daemon (coupler.bus.api.try_step)."""

from __future__ import annotations

import json

import pytest
from coupler_redact import Redact, coupler_step_types

from coupler.bus.api import Continue, Invalid, OptionsError, try_step
from coupler.canonical import Envelope

PAYMENT = Envelope(format="acme.Payment@1;application/json",
                   body=json.dumps({"card": {"number": "4111111111111111"}, "amount": 12}).encode())


def test_the_plugin_contributes_the_step_type() -> None:
    assert coupler_step_types() == {"redact": Redact}


def test_fields_are_masked_but_for_the_last_characters() -> None:
    outcome, sent = try_step(Redact, {"fields": ["card.number", "card.cvv"], "keep_last": 4}, PAYMENT)
    assert isinstance(outcome, Continue) and sent == []
    [out] = outcome.messages
    assert json.loads(out.body) == {"card": {"number": "************1111"}, "amount": 12}
    assert outcome.note == "masked card.number"


def test_a_body_that_is_not_json_is_invalid() -> None:
    outcome, _ = try_step(Redact, {"fields": ["x"]}, PAYMENT.replace(body=b"<xml/>"))
    assert isinstance(outcome, Invalid) and "not JSON" in outcome.reason


def test_options_are_checked_as_the_site_loader_checks_them() -> None:
    with pytest.raises(OptionsError, match="keep_last"):
        try_step(Redact, {"fields": ["x"], "keep_last": -1}, PAYMENT)
