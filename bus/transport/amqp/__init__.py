"""The broker transport: RabbitMQ (AMQP 0-9-1) with the site's shared state in PostgreSQL."""
