"""The console entry point: catch SIGTERM before anything heavy is imported.

In a pod the reloader is PID 1 of its container, and the kernel discards a signal sent to PID 1
that has no handler. A SIGTERM that arrives while Python is still importing the reloader (a
noticeable time under a small CPU limit) was lost that way: the pod then stayed Terminating for
its whole grace period, and a StatefulSet rollout stalled behind it (seen on the real node). So
this module imports nothing but `signal`, records such a signal at once, and `cli.main` acts on it
as soon as its own handler is in place. Only the interpreter's own start-up, before this module
runs, is left uncovered.
"""
from __future__ import annotations

import signal
from types import ModuleType
from typing import Sequence

EARLY_SIGNALS: list[int] = []


def _record(signum: int, _frame: object) -> None:
    EARLY_SIGNALS.append(signum)


def load_cli() -> ModuleType:
    """The heavy part of start-up: a function, so a test can send a signal right inside it."""
    from . import cli

    return cli


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _record)
    return load_cli().main(argv, early_signals=EARLY_SIGNALS)
