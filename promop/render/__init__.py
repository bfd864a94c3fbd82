"""The pure renderer: Prometheus + monitors + rules in, Kubernetes objects out.

No I/O, no clock, no globals. See model.py for the shapes.
"""
