"""One failing trigger does not stall the others' scaling when its fallback is set (issue 31).

KEDA (the oracle where it applies, reference §2.6/§2.10): a failing trigger's metric is an error
("metric:<name> encountered error") until numberOfFailures > failureThreshold, then the fallback value;
failures are counted from the loop and the metrics path alike; without fallback nothing changes.
promop's deviation (docs/keda.md): with fallback set, before it is active, the HPA is served the
trigger's last good value, for at most failureThreshold + 1 polling intervals.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from deadlines import scaled
from promop.autoscaler.keda.metrics_api import MetricError, MetricsEndpoint
from promop.autoscaler.keda.resources import DEPLOYMENTS, SCALEDOBJECTS
from tests.keda.runtime_harness import KedaHarness, deployment, scaled_object, wait_for

A, B = "s0-prometheus", "s1-prometheus"


@pytest.fixture
def h(sandbox):
    harness = KedaHarness(sandbox)
    yield harness
    harness.close()


class Clock:
    """The controller's wall clock, moved by the test (the window is counted on it)."""

    def __init__(self) -> None:
        self.now = datetime.now(timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def two_triggers(name: str, url: str, qa: str, qb: str, **spec) -> dict:
    so = scaled_object(name, name, url, qa, pollingInterval=3600, **spec)
    so["spec"]["triggers"].append({"type": "prometheus", "metadata": {"serverAddress": url, "query": qb,
                                                                      "threshold": "10"}})
    return so


def start(h, name: str, qa: str, qb: str, clock: Clock | None = None, **spec):
    h.client.create(DEPLOYMENTS, deployment(name, 2), "default")
    h.prom.set(qa, "42")
    h.prom.set(qb, "5")
    h.client.create(SCALEDOBJECTS, two_triggers(name, h.prom.url, qa, qb, **spec), "default")
    ctl = h.start(first_tick_jitter=False, **({"wall": clock} if clock else {}))
    key = f"default/{name}"
    wait_for(lambda: key in ctl.states, what="state")
    # the loop's first poll (at once): both triggers evaluated; with fallback their health is counted
    if spec.get("fallback"):
        wait_for(lambda: ctl.states[key].health.get(A) == {"numberOfFailures": 0, "status": "Happy"}
                 and ctl.states[key].health.get(B), what="the first poll")
    else:
        wait_for(lambda: (h.so(name).get("status") or {}).get("triggersActivity"), what="the first poll")
    return ctl, ctl.states[key]


def value(ctl, name: str, metric: str) -> str:
    return ctl.scaled_object_metric("default", name, metric)["items"][0]["value"]


def fail(h, ctl, query: str, answer: object = 500) -> None:
    h.prom.set(query, answer)
    ctl.cache.prune(set())      # the cached result is 1 h young (pollingInterval 3600): forget it


def test_last_good_value_until_fallback_then_fallback(h, sandbox_kubeconfig, caplog):
    ctl, state = start(h, "lg", "q_lg_a", "q_lg_b", fallback={"failureThreshold": 3, "replicas": 6})
    fail(h, ctl, "q_lg_a")
    with caplog.at_level(logging.INFO, logger="promop.autoscaler.keda"):
        assert value(ctl, "lg", A) == "42"                      # failure 1: the last good value, not an error
        assert state.health[A] == {"numberOfFailures": 1, "status": "Failing"}   # still counted
        assert value(ctl, "lg", B) == "5"                       # the other metric as ever
        ctl.scale_loop.poll("default/lg")                       # failure 2, from the loop
        assert state.health[A]["numberOfFailures"] == 2
        st = wait_for(lambda: (h.so("lg").get("status") or {}).get("health", {}).get(A, {}).get(
            "numberOfFailures") == 2 and h.so("lg")["status"], what="status after the poll")
        # the stand-in's activity is its last good value's (42 > activationThreshold 0), still an error
        assert st["triggersActivity"][A] == {"isActive": True}
        ready = next(c for c in st["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("Unknown", "PartialTriggerError")

        ep = MetricsEndpoint("127.0.0.1", 0, ctl.scaled_object_metric, ctl.last_good).start()
        try:
            out = subprocess.run([sys.executable, "-m", "promop", "keda", "explain", "default/lg", "--kubeconfig",
                                  sandbox_kubeconfig, "--keda-metrics-url", f"http://127.0.0.1:{ep.port}",
                                  "-o", "json"], capture_output=True, text=True, timeout=120)
        finally:
            ep.stop()
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        trig = doc["triggers"][0]
        assert trig["lastGood"]["serving"] is True and trig["lastGood"]["value"] == 42.0
        assert trig["lastGood"]["numberOfFailures"] == 2 and trig["lastGood"]["failingSince"]
        assert trig["servedToHpa"] == "42"                      # explain's own GET: failure 3, still <= 3
        assert any(f"trigger {A} fails" in w and "the HPA is served the last good value 42.0" in w
                   for w in doc["why"]), doc["why"]
        assert "lastGood" not in doc["triggers"][1]

        assert value(ctl, "lg", A) == "60"      # failure 4 > 3: KEDA's fallback, threshold 10 x 6 replicas
        assert ctl.last_good("default", "lg")["lastGood"][A]["serving"] is False
    lines = [r for r in caplog.records if "serving its last good value" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    assert lines[0].kv["metric"] == A and lines[0].kv["value"] == 42.0

    h.prom.set("q_lg_a", "7")                   # recovers: health reset, a new last good value
    ctl.cache.prune(set())
    assert value(ctl, "lg", A) == "7" and state.health[A] == {"numberOfFailures": 0, "status": "Happy"}
    fail(h, ctl, "q_lg_a")
    assert value(ctl, "lg", A) == "7"


def test_the_last_good_value_expires_after_threshold_plus_one_intervals(h):
    clock = Clock()
    ctl, state = start(h, "ex", "q_ex_a", "q_ex_b", clock, fallback={"failureThreshold": 5, "replicas": 6})
    fail(h, ctl, "q_ex_a")
    assert value(ctl, "ex", A) == "42"
    clock.now += timedelta(seconds=6 * 3600 - 30)     # the window: (5 + 1) x 3600 s from the last success
    assert value(ctl, "ex", A) == "42"
    clock.now += timedelta(seconds=60)
    with pytest.raises(MetricError) as err:
        value(ctl, "ex", A)
    assert str(err.value) == f"metric:{A} encountered error" and err.value.code == 500
    assert state.health[A]["numberOfFailures"] == 3


def test_without_fallback_a_failing_trigger_is_kedas_error(h):
    ctl, state = start(h, "nf", "q_nf_a", "q_nf_b")
    fail(h, ctl, "q_nf_a")
    with pytest.raises(MetricError) as err:
        value(ctl, "nf", A)
    assert str(err.value) == f"metric:{A} encountered error"
    assert value(ctl, "nf", B) == "5" and not state.health and not state.last_good


def test_no_last_good_value_is_kedas_error_then_fallback(h):
    h.prom.set("q_nl_a", 500)
    h.client.create(DEPLOYMENTS, deployment("nl", 2), "default")
    h.client.create(SCALEDOBJECTS, two_triggers("nl", h.prom.url, "q_nl_a", "q_nl_b",
                                                fallback={"failureThreshold": 2, "replicas": 3}), "default")
    ctl = h.start(first_tick_jitter=False)
    wait_for(lambda: (ctl.states.get("default/nl") and ctl.states["default/nl"].health.get(A)), what="poll")
    with pytest.raises(MetricError) as err:
        value(ctl, "nl", A)                  # failure 2 (<= 2), never a success: KEDA's error
    assert str(err.value) == f"metric:{A} encountered error"
    assert value(ctl, "nl", A) == "30"       # failure 3 > 2: fallback 10 x 3


# --- a hanging server delays no other trigger (the scale loop's evaluation) -------------------------------

class HangingServer:
    """Answers nothing until released (then 503): a Prometheus that hangs until the trigger's timeout."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.asked.set()
                outer.release.wait(scaled(60))
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_hanging_trigger_does_not_delay_the_others(h):
    hang = HangingServer()
    try:
        h.client.create(DEPLOYMENTS, deployment("hg", 1), "default")
        h.prom.set("q_hg_b", "5")
        so = scaled_object("hg", "hg", hang.url, "q_hg_a", pollingInterval=3600)
        so["spec"]["triggers"][0]["metadata"]["timeout"] = "120s"      # the hanging trigger comes first
        so["spec"]["triggers"].append({"type": "prometheus", "metadata": {"serverAddress": h.prom.url,
                                                                          "query": "q_hg_b", "threshold": "10"}})
        h.client.create(SCALEDOBJECTS, so, "default")
        ctl = h.start(first_tick_jitter=False)
        wait_for(lambda: hang.asked.is_set(), what="the loop's first poll reaching the hanging server")
        t0 = time.monotonic()
        # evaluated one after another, the second trigger's query would wait for the first's 120 s timeout
        wait_for(lambda: h.prom.count("q_hg_b") >= 1, timeout=5, what="the second trigger's query")
        assert time.monotonic() - t0 < scaled(5) < 120
        assert not h.so("hg").get("status", {}).get("triggersActivity")      # the poll still waits for both
        hang.release.set()
        st = wait_for(lambda: (h.so("hg").get("status") or {}).get("triggersActivity") and h.so("hg")["status"],
                      what="the poll's status")
        assert st["triggersActivity"] == {A: {"isActive": False}, B: {"isActive": True}}   # spec order kept
        assert ctl.states["default/hg"].last_poll["results"][0]["metric"] == A
        assert ctl.states["default/hg"].last_poll["results"][0]["error"]
        assert ctl.states["default/hg"].last_poll["results"][1]["value"] == 5.0
    finally:
        hang.close()
