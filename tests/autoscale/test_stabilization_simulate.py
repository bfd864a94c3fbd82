"""`promop hpa simulate` with `behavior.scaleUp.stabilizationWindowSeconds` and recorded history:
the scale-up window holds a burst at the lowest recent recommendation (reference §2.4), and a
recommendation recorded exactly a window ago no longer counts (Go's strict `After`)."""

from __future__ import annotations

import pytest
import yaml

from promop.cli import main

SCENARIO = """\
now: "2026-01-01T00:10:00Z"
hpa:
  spec:
    maxReplicas: 20
    behavior:
      scaleUp:
        stabilizationWindowSeconds: 60
        policies: [{type: Pods, value: 100, periodSeconds: 15}]
    metrics:
    - {type: Pods, pods: {metric: {name: jobs}, target: {type: AverageValue, averageValue: "100"}}}
scale: {specReplicas: 4}
pods: [{name: p1}, {name: p2}, {name: p3}, {name: p4}]
metrics:
  pods: {jobs: {p1: "250", p2: "250", p3: "250", p4: "250"}}
history:
  recommendations: %s
"""


def simulate(tmp_path, capsys, recommendations: list[dict]) -> dict:
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO % yaml.safe_dump(recommendations, default_flow_style=True).strip())
    assert main(["hpa", "simulate", "-f", str(path)]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_scale_up_window_holds_at_the_lowest_recent_recommendation(tmp_path, capsys):
    out = simulate(tmp_path, capsys, [{"time": "2026-01-01T00:09:30Z", "replicas": 5},
                                      {"time": "2026-01-01T00:09:40Z", "replicas": 7}])
    assert out["metricReplicas"] == 10
    assert out["desiredReplicas"] == 5
    assert out["stabilized"]["reason"] == "ScaleUpStabilized"


@pytest.mark.parametrize("recorded,desired", [("2026-01-01T00:09:00Z", 10), ("2026-01-01T00:09:01Z", 5)],
                         ids=["exactly-a-window-ago", "inside-the-window"])
def test_scale_up_window_edge(tmp_path, capsys, recorded, desired):
    out = simulate(tmp_path, capsys, [{"time": recorded, "replicas": 5}])
    assert out["desiredReplicas"] == desired
