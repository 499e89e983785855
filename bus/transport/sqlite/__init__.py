"""The embedded default transport: SQLite (WAL) in the site's data directory."""
