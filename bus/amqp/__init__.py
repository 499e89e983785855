"""Pieces of the RabbitMQ transport (:mod:`coupler.bus.amqp_transport`): the envelope mapping
onto AMQP properties and headers, broker names, and the connection thread."""
