"""Benchmark of the pure renderer (see __main__.py)."""
