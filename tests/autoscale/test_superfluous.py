"""Samples for pods not in the pod list (pods that went away; metrics APIs lag the pod list) are
taken as upstream's replica calculator takes them (issue 21 §5): a Utilization target skips them
(GetResourceUtilizationRatio: no request to divide by), an average counts them
(GetMetricUsageRatio averages every returned sample) over the ready pods listed. The explanation
says which samples and what was done. Numbers: upstream's TestReplicaCalcSuperfluousMetrics."""

from __future__ import annotations

import yaml

from promop.cli import main

T = "2026-01-01T00:00:00Z"
POD = "{name: %s, phase: Running, ready: true, readyTransitionTime: '%s', startTime: '%s', containers: [{name: app, requests: {cpu: '1'}}]}"


def simulate(tmp_path, text: str, capsys) -> dict:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    assert main(["hpa", "simulate", "-f", str(path)]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def utilization_scenario() -> str:
    pods = "\n".join(f"- {POD % (f'web-{i}', T, T)}" for i in range(4))
    levels = {"web-0": 4000, "web-1": 9500, "web-2": 3000, "web-3": 7000, "gone-4": 3200, "gone-5": 2000}
    samples = "\n".join(f"      {pod}: {{value: {v}m, timestamp: '2026-01-01T00:09:45Z', window: 30s}}"
                        for pod, v in levels.items())
    return (f"now: '2026-01-01T00:10:00Z'\nhpa:\n  spec:\n    maxReplicas: 30\n    metrics:\n"
            "    - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 100}}}\n"
            f"scale: {{specReplicas: 4}}\npods:\n{pods}\nmetrics:\n  resource:\n    cpu:\n{samples}\n")


def test_utilization_ignores_samples_of_pods_not_listed(tmp_path, capsys):
    out = simulate(tmp_path, utilization_scenario(), capsys)
    assert out["metrics"][0]["currentUtilization"] == 587  # (4000+9500+3000+7000) / 4000 cores
    assert out["metricReplicas"] == 24                     # ceil(5.875 x 4)
    line = next(l for l in out["explanation"] if "not in the pod list" in l)
    assert "(gone-4, gone-5)" in line and "ignored" in line


def test_an_average_counts_samples_of_pods_not_listed(tmp_path, capsys):
    text = ("now: '2026-01-01T00:10:00Z'\nhpa: {spec: {maxReplicas: 10, metrics: [{type: Pods, pods: {metric: "
            "{name: http_requests}, target: {type: AverageValue, averageValue: '100'}}}]}}\n"
            "scale: {specReplicas: 3}\npods: [{name: p1}, {name: p2}, {name: p3}]\n"
            "metrics: {pods: {http_requests: {p1: {value: '150'}, p2: {value: '200'}, p3: {value: '250'}, "
            "gone: {value: '400'}}}}\n")
    out = simulate(tmp_path, text, capsys)
    assert out["metrics"][0]["currentAverageValue"] == "250"  # (150+200+250+400) / 4
    assert out["metricReplicas"] == 8                         # ceil(2.5 x 3 ready pods)
    line = next(l for l in out["explanation"] if "not in the pod list" in l)
    assert "(gone)" in line and "count in the average" in line


def test_memhpa_explanation_says_of_limit(capsys):
    from pathlib import Path

    scenarios = Path(__file__).parent / "scenarios"
    assert main(["hpa", "simulate", "-f", str(scenarios / "memhpa-scale-up.yaml")]) == 0
    memhpa = yaml.safe_load(capsys.readouterr().out)["explanation"]
    assert any("90% of limit (" in l for l in memhpa), memhpa
    assert not any("of request" in l for l in memhpa)
    assert main(["hpa", "simulate", "-f", str(scenarios / "resource-utilization.yaml")]) == 0
    hpa = yaml.safe_load(capsys.readouterr().out)["explanation"]
    assert any("110% of request (" in l for l in hpa), hpa
    assert not any("not in the pod list" in l for l in hpa)  # every sample names a listed pod
