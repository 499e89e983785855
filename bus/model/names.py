"""What a channel name is: the one rule, used by the site configuration and every transport.

A channel name is 1 to 200 letters, digits, ``_``, ``.``, ``:`` and ``-``, not starting with
``.``, ``:`` or ``-`` (``orders.eu``, ``coupler.replies.sftp-in``). Adapter and route names
follow the same rule, since the runtime names channels after them (reply channels, the
subscriptions ``adapter:NAME`` and ``route:NAME``). The queue of a topic's durable
subscription is ``TOPIC#SUBSCRIPTION``, both parts names of this kind.
"""

from __future__ import annotations

import re

CHANNEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,199}$")

#: how :data:`CHANNEL_NAME` is explained in error messages
CHANNEL_NAME_RULE = "1 to 200 letters, digits, '_', '.', ':', '-'; not starting with '.', ':' or '-'"


def is_channel_name(name: object) -> bool:
    """Whether ``name`` is a channel name (not a subscription queue)."""
    return isinstance(name, str) and CHANNEL_NAME.match(name) is not None


def is_queue_name(name: object) -> bool:
    """Whether ``name`` is a channel name or a subscription queue ``TOPIC#SUBSCRIPTION``."""
    if not isinstance(name, str):
        return False
    topic, sep, subscription = name.partition("#")
    return is_channel_name(topic) and (not sep or is_channel_name(subscription))
