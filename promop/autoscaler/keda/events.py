"""Events on ScaledObjects with KEDA's reasons and source, deduplicated per object.

A loop that fails the same way every poll must not write an Event every poll: the same
(reason, message) for the same object within `repeat_after` seconds is counted once.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable

from promop.host.logs import fields
from promop.kube.errors import ApiError
from promop.kube.resources import EVENTS

from promop.autoscaler.keda.resources import COMPONENT

log = logging.getLogger("promop.autoscaler.keda")


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(int(t), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Recorder:
    def __init__(self, client: Any, clock: Callable[[], float] = time.time, repeat_after: float = 600.0) -> None:
        self.client = client
        self.clock = clock
        self.repeat_after = repeat_after
        self._last: dict[tuple, float] = {}
        self._lock = threading.Lock()

    def forget(self, uid: str) -> None:
        with self._lock:
            for k in [k for k in self._last if k[0] == uid]:
                del self._last[k]

    def event(self, obj: dict, type_: str, reason: str, message: str, *, dedupe: bool = True) -> None:
        meta = obj.get("metadata") or {}
        now = self.clock()
        key = (meta.get("uid"), reason, message)
        with self._lock:
            last = self._last.get(key)
            if dedupe and last is not None and now - last < self.repeat_after:
                return
            self._last[key] = now
        stamp = rfc3339(now)
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{meta.get('name', 'scaledobject')}.", "namespace": meta.get("namespace")},
                "involvedObject": {"apiVersion": obj.get("apiVersion", "keda.sh/v1alpha1"),
                                   "kind": obj.get("kind", "ScaledObject"), "name": meta.get("name"),
                                   "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                                   "resourceVersion": meta.get("resourceVersion")},
                "reason": reason, "message": message[:1024], "type": type_,
                "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1}
        try:
            self.client.create(EVENTS, body, meta.get("namespace"))
        except ApiError as exc:  # an Event is best effort
            log.warning("event not recorded", **fields(reason=reason, error=str(exc)))
