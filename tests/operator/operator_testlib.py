"""Helpers shared by the operator tests (a uniquely named module: `from conftest import` would pick
whichever conftest module pytest imported last).

Polling with deadlines, the in-process operator handle, request filters, and builders of the
objects the end-to-end tests apply.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from deadlines import TIMEOUT_SCALE, scaled  # noqa: F401  (re-exported to the operator tests)

from promop.kube.errors import ApiError, Conflict, NotFound
from promop.kube.resources import SECRETS
from promop.operator.app import Operator
from promop.operator.demo import decode_config
from promop.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_AGENT = "promop-operator-under-test"
FAST_INFORMERS = {"backoff_base": 0.05, "backoff_cap": 0.5, "idle_timeout": 10.0}
# Short enough that a standby takes over a killed leader quickly, long enough that a loaded machine's
# stall does not cost the leader its lease mid-test.
FAST_LEASE = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.2}


def eventually(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll `check` until it returns a truthy value before `timeout` (times TIMEOUT_SCALE, see
    tests/deadlines.py: the timeouts written in the tests are what a quiet machine needs);
    AssertionError and NotFound (the object is not there yet) count as not yet."""
    timeout *= TIMEOUT_SCALE
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except (AssertionError, NotFound) as exc:
            last = exc
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f": {last}" if last else ""))


@dataclass
class Running:
    operator: Operator
    thread: threading.Thread
    stop: threading.Event
    result: dict = field(default_factory=dict)

    @property
    def controller(self):
        return self.operator.controller

    def shutdown(self, timeout: float = 30.0) -> int | None:
        self.stop.set()
        self.thread.join(timeout)
        return self.result.get("code")

    def idle(self) -> bool:
        """Every known Prometheus synced at least once and nothing queued or in flight, twice 50 ms
        apart: an informer's counts miss a delta or a notification for the few instructions
        between taking it off its queue and marking it in flight, and a thread of a loaded
        machine can be switched out right there."""
        if not self._idle_once():
            return False
        time.sleep(0.05)
        return self._idle_once()

    def _idle_once(self) -> bool:
        ctl = self.controller
        if ctl is None or not self.operator.synced.is_set():
            return False
        from promop.operator.ownership import key_managed

        store, cid = ctl.prometheuses.store, ctl.options.controller_id
        done = all(k in ctl.syncer.last_report for k in store.keys() if key_managed(store, k, cid))
        return done and len(ctl.queue) == 0 and ctl.queue.processing() == 0 and ctl.queue.waiting() == 0 and all(
            inf.pending() == 0 for inf in ctl.informers) and ctl.reporter.idle()

    def settle(self, sb: Sandbox, timeout: float = 20.0) -> None:
        """Wait until the sandbox's own background work is done (the simulated StatefulSet
        controller reports readiness ~50 ms after each StatefulSet write, a write the operator
        reacts to), then until every informer has seen the API as it is now (the sandbox's
        bookmarks carry its latest resourceVersion), then until nothing is queued or in flight.
        `idle()` alone can hold while the event of a write just made is still on its way."""
        assert sb.background.wait_idle(scaled(timeout)), "the sandbox's background work never ended"
        target = sb.store.rv
        reflectors = [r for inf in self.controller.informers for r in inf.reflectors]
        eventually(lambda: all(int(r.last_rv or 0) >= target for r in reflectors), timeout,
                   f"every informer to reach resourceVersion {target}")
        eventually(self.idle, timeout, "the operator to be idle")


def modify(kube: Any, res: Any, name: str, namespace: str, mutate: Callable[[dict], None],
           subresource: str | None = None) -> dict:
    """GET, `mutate`, PUT; again on 409, as any client must: the operator may write the object
    (e.g. its status.bindings) between our read and our write."""
    for _ in range(50):
        obj = kube.get(res, name, namespace)
        mutate(obj)
        try:
            return kube.update(res, obj, namespace, subresource=subresource)
        except Conflict:
            continue
    raise AssertionError(f"{res.kind} {namespace}/{name}: still conflicting after 50 attempts")


class Writes(list):
    """Request records that print readably in assertion messages."""

    def __repr__(self) -> str:
        return repr([(r.verb, r.resource, r.subresource, r.namespace, r.name, r.code) for r in self])


def operator_writes(sb: Sandbox, agent: str = OPERATOR_AGENT) -> list:
    return Writes(r for r in sb.requests if r.is_write and r.user_agent.startswith(agent))


KUBECTL = shutil.which("kubectl")


def kubectl_runner(sb: Sandbox, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """kubectl(*args, input=None, check=True) against `sb` (skips the test if kubectl is missing);
    asserts success unless check=False."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    kubeconfig = sb.write_kubeconfig(tmp_path / "kubeconfig")

    def run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "kcache"), *args],
                              capture_output=True, text=True, timeout=60, input=input, cwd=ROOT)
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    return run


# ---- objects the end-to-end tests apply (namespace NS) ----

NS = "team"


def prometheus(name="p", **spec):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"serviceMonitorSelector": {}, "ruleSelector": {}, **spec}}


def service_monitor(name, port="web", **endpoint):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": name}}, "endpoints": [{"port": port, **endpoint}]}}


def rule(name, *exprs, annotation=""):
    rules = [{"record": f"rec_{i}", "expr": e} for i, e in enumerate(exprs)]
    if annotation:
        rules.append({"alert": "Big", "expr": "up == 0", "annotations": {"description": annotation}})
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"groups": [{"name": "g", "rules": rules}]}}


def config(kube, name="p") -> dict | None:
    try:
        return yaml.safe_load(decode_config(kube.get(SECRETS, f"prometheus-{name}", NS)))
    except (ApiError, OSError):  # absent, an injected fault, or a foreign writer's garbage
        return None


def jobs(kube, name="p") -> list[str] | None:
    cfg = config(kube, name)
    return None if cfg is None else [j["job_name"] for j in cfg.get("scrape_configs") or []]


def job(kube, job_name, name="p") -> dict | None:
    cfg = config(kube, name) or {}
    return next((j for j in cfg.get("scrape_configs") or [] if j["job_name"] == job_name), None)


def names(kube, res, **kw) -> list[str]:
    return sorted(o["metadata"]["name"] for o in kube.list(res, NS, **kw)["items"])
