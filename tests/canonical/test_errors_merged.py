"""The near-duplicate error classes are one class each; the old names still catch them."""

from __future__ import annotations

import pytest

from coupler.adapters.socket.translate import TranslationError as SocketTranslationError
from coupler.canonical.errors import CouplerError, TranslationError
from coupler.canonical.options import OptionsError
from coupler.translators.copybook.errors import CopybookError
from coupler.translators.copybook.options import CopybookOptions
from coupler.translators.copybook.options import OptionsError as CopybookOptionsError
from coupler.translators.mapping import TranslateError


def test_one_translation_error_under_its_three_names() -> None:
    assert TranslateError is TranslationError and SocketTranslationError is TranslationError
    with pytest.raises(TranslateError, match="no such format"):  # what code catching the old name sees
        raise SocketTranslationError("no such format", where="options.translator")


def test_a_copybook_option_error_is_the_options_error_of_every_model() -> None:
    with pytest.raises(OptionsError) as raised:
        CopybookOptions.from_pairs(["record_formt=F"])
    assert isinstance(raised.value, CopybookOptionsError) and isinstance(raised.value, CopybookError)
    assert "unknown option 'record_formt'" in str(raised.value) and raised.value.problems
    single = OptionsError("one problem", where="adapters[x].options")
    assert isinstance(single, CouplerError) and [str(p) for p in single.problems] == ["one problem"]
