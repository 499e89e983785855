"""Legacy systems for examples and demos: the auto policy rating service (fixed-width EBCDIC over TCP)."""
