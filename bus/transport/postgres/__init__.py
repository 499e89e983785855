"""The PostgreSQL transport (``[store] type = "postgres"``): see :mod:`.transport`."""
