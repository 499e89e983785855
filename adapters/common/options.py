"""Typed options of the file-moving adapters (file drop, SFTP): the value types they share.

Each adapter type declares its ``[adapters.options]`` once as a model
(:class:`coupler.canonical.options.OptionsModel`): the inbound options in
:mod:`.inbound`, the outbound ones in :mod:`.outbound`, the polling ones in :mod:`.base`, the
adapter's own in its module. The site loader checks them when the site loads.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, Strict, StrictStr


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _mode(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return int(value, 8)
        except ValueError:
            raise ValueError(f'{value!r} is not a permission mode such as "0640"') from None
    return value


#: a list of strings, or one string
Strings = Annotated[list[StrictStr], BeforeValidator(_one_or_many)]
#: a permission mode: an integer or an octal string such as ``"0640"``
Mode = Annotated[int, BeforeValidator(_mode), Strict(), Field(ge=0, le=0o7777)]
