"""The controller under injected API faults: failed scale writes, dropped watches and expired history."""

from __future__ import annotations

import pytest

from promop.autoscaler.crd import MEMHPAS
from tests.autoscaler.harness import DEPLOYMENTS, MI, deployment, memhpa, wait_for

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def test_failed_rescale_is_reported_and_retried(env, sandbox):
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    env.usage_per_pod = 90 * MI
    sandbox.faults.fail_next(2, 500, verb="update", resource="deployments")
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    env.start(env.prometheus.url)
    failed = wait_for(lambda: env.events("FailedRescale"), what="a FailedRescale event")[0]
    assert failed["message"].startswith("New size: 2; reason: memory resource utilization (percentage of limit) "
                                        "above target; error: ")
    wait_for(lambda: env.replicas("web") == 2, what="the retried rescale")
    assert sandbox.faults.pending() == 0
    ok = wait_for(lambda: env.events("SuccessfulRescale"), what="SuccessfulRescale")
    assert len(ok) == 1  # one scale, not one per attempt
    # the status with the new condition is written after the Event: wait for it rather than read it once
    wait_for(lambda: env.condition("web", "AbleToScale")["reason"] in ("SucceededRescale", "BackoffBoth"),
             what="AbleToScale after the retried rescale")


def test_converges_after_dropped_watches_and_expired_history(env, sandbox):
    env.client.create(DEPLOYMENTS, deployment("web", 2), "default")
    env.usage_per_pod = 50 * MI  # 50% of limits at a 50% target: within tolerance
    env.client.create(MEMHPAS, memhpa("web", "web"), "default")
    app = env.start(env.prometheus.url)
    wait_for(lambda: env.condition("web", "ScalingActive"), what="a first pass")
    for _ in range(3):
        sandbox.faults.compact()          # a resume from the old resourceVersion gets 410 Gone
        sandbox.faults.close_watches()    # every informer must relist
    env.usage_per_pod = 95 * MI
    wait_for(lambda: env.replicas("web") == 4, what="the scale-up after the relists")
    # a MemHpa created while watches were being dropped is still seen
    env.client.create(DEPLOYMENTS, deployment("api", 1), "default")
    sandbox.faults.close_watches()
    env.client.create(MEMHPAS, memhpa("api", "api"), "default")
    wait_for(lambda: env.replicas("api") == 2, what="the new MemHpa acted on")
    assert app.controller.readiness() == (True, "")
