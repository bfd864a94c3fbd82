"""Helpers for the Alertmanager controller tests (polling with deadlines, object builders)."""

from __future__ import annotations

import base64
import gzip
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from promop.kube.errors import Conflict
from promop.kube.resources import SECRETS
from promop.operator.app import Operator
from tests.operator.operator_testlib import TIMEOUT_SCALE, eventually  # noqa: F401 - re-exported for the tests here

ROOT = Path(__file__).resolve().parents[2]
AGENT = "promop-operator-under-test"
FAST_INFORMERS = {"backoff_base": 0.05, "backoff_cap": 0.5, "idle_timeout": 10.0}


@dataclass
class Running:
    operator: Operator
    stop: threading.Event
    thread: threading.Thread | None = None
    result: dict = field(default_factory=dict)

    @property
    def am(self):
        """The Alertmanager controller."""
        from promop.operator.alertmanager.controller import AlertmanagerController

        return next(c for c in self.operator.controllers if isinstance(c, AlertmanagerController))

    def shutdown(self, timeout: float = 30.0) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout)


def modify(kube: Any, res: Any, name: str, namespace: str, mutate: Callable[[dict], None]) -> dict:
    for _ in range(50):
        obj = kube.get(res, name, namespace)
        mutate(obj)
        try:
            return kube.update(res, obj, namespace)
        except Conflict:
            continue
    raise AssertionError("still conflicting")


def generated_config(kube: Any, namespace: str, name: str) -> str:
    secret = kube.get(SECRETS, f"alertmanager-{name}-generated", namespace)
    return gzip.decompress(base64.b64decode(secret["data"]["alertmanager.yaml.gz"])).decode()


def alertmanager(name: str = "main", namespace: str = "monitoring", **spec: Any) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"version": "v0.25.0", "alertmanagerConfigSelector": {}, **spec}}


def amc(name: str, namespace: str = "monitoring", receiver: str = "r", **extra: Any) -> dict:
    spec = {"route": {"receiver": receiver, "groupBy": ["job"]},
            "receivers": [{"name": "r", "webhookConfigs": [{"url": "http://127.0.0.1:1/hook"}]}], **extra}
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}
