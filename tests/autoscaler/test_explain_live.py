"""`promop hpa explain` on a live HPA in the sandbox, with metrics straight from a real Prometheus."""

from __future__ import annotations

import argparse
import io

import pytest
import yaml

from promop.autoscaler.explain_live import HPAS, LiveError, explain_live
from tests.autoscaler.harness import DEPLOYMENTS, MI, deployment, wait_for

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def hpa(target: str) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": target},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": 1, "maxReplicas": 10,
                     "metrics": [{"type": "Resource", "resource": {"name": "memory", "target": {
                         "type": "Utilization", "averageUtilization": 40}}}]}}


def args(env, name="default/web", what_if=(), output="text"):
    return argparse.Namespace(name=name, kubeconfig=env.kubeconfig, prometheus_url=env.prometheus.url,
                              what_if=list(what_if), output=output)


def run(env, **kw) -> str:
    out = io.StringIO()
    assert explain_live(args(env, **kw), client=env.client, out=out) == 0
    return out.getvalue()


def test_explain_live_hpa_from_prometheus(env):
    env.usage_per_pod = 80 * MI  # 80% of the 100Mi request against 40%: ratio 2 -> 4
    env.client.create(DEPLOYMENTS, deployment("web", 2), "default")
    env.client.create(HPAS, hpa("web"), "default")
    wait_for(lambda: len(env.pods()) == 2, what="2 pods")
    wait_for(lambda: len(env.prometheus.query('container_memory_working_set_bytes{namespace="default"}')) == 2,
             what="both pods scraped")
    text = run(env)
    assert "decision: 2 -> 4 replicas (memory resource utilization (percentage of request) above target)" in text
    assert "80% of request" in text and "first pass" in text
    out = yaml.safe_load(run(env, output="yaml"))
    assert out["desiredReplicas"] == 4 and out["metrics"][0]["currentUtilization"] == 80
    halved = run(env, what_if=["memory=0.5x"])
    assert "decision: 2 -> 2 replicas" in halved and "what if: memory=0.5x" in halved


def test_explain_live_errors_are_clear(env):
    with pytest.raises(LiveError, match="HorizontalPodAutoscaler default/nope not found"):
        explain_live(args(env, name="default/nope"), client=env.client, out=io.StringIO())
    env.client.create(HPAS, hpa("web"), "default")
    with pytest.raises(LiveError, match="cannot read the scale of Deployment/default/web"):
        explain_live(args(env), client=env.client, out=io.StringIO())
    env.client.create(DEPLOYMENTS, deployment("web", 1), "default")
    with pytest.raises(LiveError, match="--what-if"):
        explain_live(args(env, what_if=["cpu"]), client=env.client, out=io.StringIO())


def test_explain_command_as_a_user_runs_it(env):
    import subprocess
    import sys

    env.usage_per_pod = 80 * MI
    env.client.create(DEPLOYMENTS, deployment("web", 2), "default")
    env.client.create(HPAS, hpa("web"), "default")
    wait_for(lambda: len(env.prometheus.query('container_memory_working_set_bytes{namespace="default"}')) == 2,
             what="both pods scraped")
    proc = subprocess.run([sys.executable, "-m", "promop", "hpa", "explain", "default/web", "--kubeconfig",
                           env.kubeconfig, "--prometheus-url", env.prometheus.url], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "decision: 2 -> 4 replicas" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "promop", "hpa", "explain", "default/missing", "--kubeconfig",
                           env.kubeconfig], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: HorizontalPodAutoscaler default/missing not found"
