"""The informer half of a controller's lifecycle, shared by every controller that owns a set of informers.

A controller starts its informers, waits for their first LIST before its workers run, and reports
readiness until then (client-go's `WaitForCacheSync`). Each controller sets `self.informers`.
"""

from __future__ import annotations

import threading
import time

from promop.kube.informer import Informer


class InformerGroup:
    """Mixin: `start_informers`, `synced`, `wait_for_sync` and `readiness` over `self.informers`."""

    informers: list[Informer]

    def start_informers(self) -> None:
        for inf in self.informers:
            inf.start()

    def synced(self) -> bool:
        return all(inf.has_synced() for inf in self.informers)

    def wait_for_sync(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """Wait until every cache holds its first LIST; False on timeout, or as soon as `stop` is set."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.synced():
                return True
            if stop is not None:
                if stop.wait(0.05):
                    return False
            else:
                time.sleep(0.02)
        return self.synced()

    def readiness(self) -> tuple[bool, str]:
        waiting = [inf.name for inf in self.informers if not inf.has_synced()]
        return (not waiting, f"caches not synced: {', '.join(waiting)}" if waiting else "")
