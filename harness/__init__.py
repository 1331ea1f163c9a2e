"""Horsie's core: context assembly, the turn loop and the provider wires.

This package imports no web framework. The Django apps implement the small ports in
`harness.ports`, and `horsie_site.wiring` builds the core's configuration from settings.
"""
