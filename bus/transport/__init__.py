"""Durable channels: the Transport interface, the policy every transport shares, and the
embedded (``sqlite``) and broker (``amqp``) implementations."""
