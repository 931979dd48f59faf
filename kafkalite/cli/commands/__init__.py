"""One module per top-level command; each has ``register(commands, parents)``."""
