"""Controller pieces without threads: OOM kills from pod status, conditions, policy errors, recommender names."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from promop.recommender.controller import Recommender, policies_of
from promop.recommender.options import Options
from promop.vpa.timeutil import parse_time

NOW = parse_time("2026-01-10T00:00:00Z")
MI = 1 << 20


class NoProm:
    def query_range(self, *a, **k):
        raise AssertionError("not used")


def make(kube) -> Recommender:
    return Recommender(kube, Options(), CollectorRegistry(), prom_client=NoProm(), clock=lambda: NOW)


def pod(restarts: int, finished: str | None) -> dict:
    status = {"phase": "Running", "containerStatuses": [{"name": "app", "restartCount": restarts}]}
    if finished:
        status["containerStatuses"][0]["lastState"] = {"terminated": {"reason": "OOMKilled", "finishedAt": finished}}
    return {"metadata": {"name": "web-1", "namespace": "ns", "uid": "u1", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "resources": {"requests": {"memory": "500Mi"}}}]},
            "status": status}


def test_oom_kill_from_last_state_is_recorded_once(kube):
    r = make(kube)
    r._observe_pod(pod(0, None))
    c = r.model.container("ns", "web-1", "app", NOW)
    c.add_memory_sample(300 * MI, NOW - 3600)
    r._observe_pod(pod(1, "2026-01-09T23:30:00Z"))
    assert c.oom_peak == 629145600  # V7: max(500Mi + 100Mi, 500Mi x 1.2)
    r._observe_pod(pod(1, "2026-01-09T23:30:00Z"))   # the same kill seen again: not counted twice
    assert r.metrics.ooms._value.get() == 1
    r._observe_pod(pod(2, "2026-01-09T23:45:00Z"))   # a second kill: bumped from the request, not the OOM peak
    assert r.metrics.ooms._value.get() == 2 and c.oom_peak == 629145600


def test_conditions_follow_upstream(kube):
    r = make(kube)
    vpa = {"metadata": {"name": "v", "namespace": "ns"}, "spec": {}}
    st = r.desired_status(vpa, {}, 0, "")
    conds = {c["type"]: c for c in st["conditions"]}
    assert conds["NoPodsMatched"]["status"] == "True"
    assert conds["RecommendationProvided"] == {"type": "RecommendationProvided", "status": "False",
                                               "lastTransitionTime": "2026-01-10T00:00:00Z",
                                               "reason": "NoPodsMatched", "message": "No pods match this VPA object"}
    assert st["recommendation"] is None
    st2 = r.desired_status({**vpa, "status": st}, {}, 0, "cannot read Deployment/x")
    conds2 = {c["type"]: c for c in st2["conditions"]}
    assert conds2["ConfigUnsupported"]["message"] == "cannot read Deployment/x"
    assert conds2["NoPodsMatched"]["lastTransitionTime"] == "2026-01-10T00:00:00Z"


def test_policy_errors_name_the_field():
    import pytest

    vpa = {"spec": {"resourcePolicy": {"containerPolicies": [{"containerName": "app"},
                                                             {"containerName": "x", "maxAllowed": {"cpu": "lots"}}]}}}
    with pytest.raises(ValueError, match=r"containerPolicies\[1\]\.maxAllowed\.cpu"):
        policies_of(vpa)
    ok = policies_of({"spec": {"resourcePolicy": {"containerPolicies": [
        {"containerName": "*", "mode": "Off"}, {"containerName": "app", "minAllowed": {"memory": "1Gi"}}]}}})
    assert ok[0].mode == "Off" and ok[1].min_allowed == {"memory": 1 << 30}


def test_other_recommenders_vpas_are_left_alone(kube):
    r = make(kube)
    assert r._for_us({"spec": {}})
    assert r._for_us({"spec": {"recommenders": [{"name": "default"}]}})
    assert not r._for_us({"spec": {"recommenders": [{"name": "custom"}]}})


def test_per_vpa_intake_overrides(kube):
    from promop.vpa.recommend import ContainerPolicy
    import pytest

    p = ContainerPolicy.from_spec({"containerName": "app", "oomBumpUpRatio": "2", "oomMinBumpUp": "200Mi",
                                   "memoryAggregationIntervalSeconds": 3600, "memoryAggregationIntervalCount": 24})
    cfg = p.intake_config(Options().model)
    assert (cfg.oom_bump_up_ratio, cfg.oom_min_bump_up_bytes, cfg.memory_aggregation_interval,
            cfg.memory_aggregation_window) == (2.0, 200.0 * MI, 3600.0, 86400.0)
    with pytest.raises(ValueError, match="memoryAggregationIntervalCount"):
        ContainerPolicy.from_spec({"memoryAggregationIntervalCount": 0})
    r = make(kube)
    r._observe_pod(pod(0, None))
    vpa = {"metadata": {"name": "v", "namespace": "ns"},
           "spec": {"resourcePolicy": {"containerPolicies": [{"containerName": "app", "oomBumpUpRatio": 2}]}}}
    r.model.set_vpa("ns/v", "ns", lambda labels: labels.get("app") == "web")
    r.apply_intake_overrides("ns/v", vpa)
    c = r.model.container("ns", "web-1", "app", NOW)
    assert c.oom_sample(500 * MI) == 1000 * MI   # x2 beats +100Mi


class FreshProm:
    """Answers the two instant queries of a round like Prometheus would (labels as kube-prometheus has them)."""

    def __init__(self):
        self.queries = []

    def query_vector(self, query, at):
        from promop.prom.results import Sample

        self.queries.append((query, at))
        labels = {"namespace": "ns", "pod": "web-1", "container": "app"}
        value = 0.5 if "cpu" in query else 600.0 * MI
        return [Sample(labels, value, at), Sample({"namespace": "ns", "pod": "x"}, 1.0, at)]  # 2nd: no container


def test_fresh_samples_from_prometheus_every_round(kube):
    from promop.recommender.history import HistoryConfig

    opts = Options(history=HistoryConfig(ctr_pod_name_label="pod", ctr_name_label="container"))
    clock = [NOW]
    prom = FreshProm()
    r = Recommender(kube, opts, CollectorRegistry(), prom_client=prom, clock=lambda: clock[0])
    for i in range(3):
        assert r.fetch_fresh_samples(clock[0]) == 2
        clock[0] += 60
    assert r.fetch_fresh_samples(NOW) == 0          # not newer than the last sample: dropped
    q = prom.queries[0][0]
    assert q.startswith("rate(container_cpu_usage_seconds_total{") and q.endswith("[5m])") and 'name!="POD"' not in q
    a = r.model.container("ns", "web-1", "app", NOW).aggregate
    assert a.total_samples_count == 3 and a.last_sample_start == NOW + 120


def test_fresh_samples_from_metrics_api(kube, cluster):
    class MetricsClient:
        def list(self, res, ns):
            assert res.group == "metrics.k8s.io"
            return {"items": [{"metadata": {"name": "web-1", "namespace": "ns"}, "timestamp": "2026-01-10T00:00:00Z",
                               "window": "30s", "containers": [{"name": "app",
                                                               "usage": {"cpu": "250m", "memory": "300Mi"}}]}]}

    r = Recommender(kube, Options(metrics_source="metrics-api"), CollectorRegistry(), prom_client=NoProm(),
                    clock=lambda: NOW)
    r.client = MetricsClient()
    assert r.fetch_fresh_samples(NOW) == 2
    c = r.model.container("ns", "web-1", "app", NOW)
    assert c.aggregate.total_samples_count == 1 and c.memory_peak == 300 * MI


def test_history_columns_load_equals_samples_fed_one_by_one():
    """load_history on range-query columns: two series for one container (cAdvisor ids) merged in time
    order, NaN and negative points as to_amounts treats them, unlabelled series skipped; the model ends
    as if every sample had been fed one at a time."""
    from array import array

    from promop.prom.results import SeriesColumns
    from promop.recommender.history import HistoryConfig, load_history, to_amounts
    from promop.vpa.cluster import ClusterState

    cfg = HistoryConfig(cadvisor_job_name="", ctr_pod_name_label="pod", ctr_name_label="container",
                        metric_for_pod_labels="", history_length="2d", history_resolution="1h")
    start = NOW - 2 * 86400
    hours = [start + 3600 * h for h in range(49)]
    lab = {"namespace": "ns", "pod": "web-1", "container": "app"}
    cpu = [SeriesColumns(dict(lab, id="a"), array("d", hours[::2]), array("d", [0.25 + 0.01 * i for i in range(25)])),
           SeriesColumns(dict(lab, id="b"), array("d", hours[1::2]), array("d", [float("nan")] + [0.5] * 23)),
           SeriesColumns({"pod": "x"}, array("d", hours), array("d", [1.0] * 49))]
    mem = [SeriesColumns(lab, array("d", hours), array("d", [3e8 + 1e6 * ((h * 7) % 11) for h in range(48)] + [-5.0]))]

    class Columns:
        def query(self, *a, **k):
            return []

        def query_range_columns(self, query, s, e, step, timeout=None):
            series = cpu if "cpu" in query else mem
            return [SeriesColumns(c.labels, array("d", [t for t in c.times if s <= t <= e]),
                                  array("d", [v for t, v in zip(c.times, c.values) if s <= t <= e])) for c in series]

    model = ClusterState()
    stats = load_history(Columns(), cfg, model, NOW, {("ns", "web-1"): {"app": "web"}}, chunk_steps=7)
    assert stats.containers == 1 and stats.pods == 1

    ref = ClusterState()
    ref.add_or_update_pod("ns", "web-1", {"app": "web"}, NOW)
    c = ref.container("ns", "web-1", "app", NOW)
    points = sorted([(t, v) for s in cpu[:2] for t, v in zip(s.times, s.values)], key=lambda p: p[0])
    for t, m in to_amounts(points, "cpu"):
        c.add_cpu_sample(m, t)
    for t, b in to_amounts(list(zip(mem[0].times, mem[0].values)), "memory"):
        c.add_memory_sample(b, t)
    got, want = model.container("ns", "web-1", "app", NOW), c
    for h in ("cpu", "memory"):
        assert getattr(got.aggregate, h).equals(getattr(want.aggregate, h))
    assert (got.aggregate.total_samples_count, got.window_end, got.memory_peak) == \
        (want.aggregate.total_samples_count, want.window_end, want.memory_peak)
    assert got.aggregate.total_samples_count == 48   # the NaN point is not a sample
