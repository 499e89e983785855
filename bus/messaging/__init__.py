"""Messaging patterns over a transport: channels, request-reply, idempotent receiver,
sequence, throttle."""
