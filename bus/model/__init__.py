"""Pure types of the bus: commands and replies, identities, message selectors."""
