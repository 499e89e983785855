"""The site at run time: daemon, adapter stages, router, context, Control Bus."""
