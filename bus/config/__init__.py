"""Site configuration: ``site.toml``, its schema, and the reference generated from it."""
