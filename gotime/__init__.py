"""Go's standard-library behaviour that both promop and the standalone reloader need.

A top-level package (not under `promop`) so that `reloader/`, which must import
nothing of promop, can share it with the operator and the adapter.
"""
