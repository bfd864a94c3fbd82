"""SIGTERM/SIGINT into a `stop` event: the graceful shutdown every long-running command shares."""

from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger("promop.host")


def install_signal_handlers(stop: threading.Event, hard_stop: float | None = None) -> None:
    """SIGTERM/SIGINT set `stop` (a second SIGINT still interrupts via KeyboardInterrupt). With
    `hard_stop`, the process exits that many seconds after the first signal whatever it is doing."""

    def on_signal(signum, frame) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not stop.is_set() and hard_stop is not None:
            timer = threading.Timer(hard_stop, exit_now, args=(hard_stop,))
            timer.daemon = True
            timer.start()
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


HARD_STOP_EXIT_CODE = 1


def exit_now(after: float) -> None:
    """The hard stop: log once, flush the logs, leave without waiting for threads. The exit code is
    not 0, so a supervisor (and a reader of `kubectl get pod`'s last state) can tell a shutdown that
    hung from a clean one."""
    log.error("shutdown did not finish in time; exiting now", extra={"kv": {"after_s": after}})
    logging.shutdown()
    os._exit(HARD_STOP_EXIT_CODE)
