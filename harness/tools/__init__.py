"""Built-in tools, one module each, every one shaped like `harness.tools.base.Tool`."""
