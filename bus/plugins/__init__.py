"""Plugins: the hook specifications, the plugin manager and the built-in plugin."""
