"""The ``coupler`` command line: one module per command group."""
