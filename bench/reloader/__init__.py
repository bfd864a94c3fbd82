"""Benchmarks of promop-config-reloader (see run.py)."""
