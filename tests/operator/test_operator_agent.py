"""The PrometheusAgent controller on the sandbox: applying an agent creates its StatefulSet (or, with the
PrometheusAgentDaemonSet gate, its DaemonSet), config Secret and Service; status, bindings and refusals."""

from __future__ import annotations

import base64
import gzip

import yaml
from operator_testlib import eventually

from promop.kube.errors import NotFound
from promop.kube.resources import EVENTS, PODMONITORS, SECRETS, SERVICES, STATEFULSETS
from promop.operator.agent import DAEMONSETS, PROMETHEUSAGENTS

NS = "default"


def agent(name: str = "edge", **spec) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "PrometheusAgent",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"podMonitorSelector": {}, "remoteWrite": [{"url": "http://central:9090/api/v1/write"}], **spec}}


def pod_monitor(name: str = "app") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor", "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": name}}, "podMetricsEndpoints": [{"port": "web"}]}}


def _get(kube, res, name):
    try:
        return kube.get(res, name, NS)
    except NotFound:
        return None


def _config(kube, name: str) -> dict:
    secret = kube.get(SECRETS, name, NS)
    return yaml.safe_load(gzip.decompress(base64.b64decode(secret["data"]["prometheus.yaml.gz"])))


def test_statefulset_mode(kube, start_operator):
    start_operator()
    kube.create(PODMONITORS, pod_monitor(), NS)
    kube.create(PROMETHEUSAGENTS, agent(shards=2), NS)
    sts = eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-edge"), 30, "the agent's StatefulSet")
    assert sts["metadata"]["labels"]["operator.prometheus.io/mode"] == "agent"
    assert "--agent" in sts["spec"]["template"]["spec"]["containers"][0]["args"]
    assert sts["spec"]["serviceName"] == "prometheus-agent-operated"
    eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-edge-shard-1"), 30, "shard 1")
    assert _get(kube, SERVICES, "prometheus-agent-operated") is not None
    # the PodMonitor may reach the operator's cache after the agent's first sync: wait for its job
    cfg = eventually(lambda: (lambda c: c if [j["job_name"] for j in c.get("scrape_configs") or ()]
                              == ["podMonitor/default/app/0"] else None)(_config(kube, "prom-agent-edge")),
                     30, "the PodMonitor's job in the agent's config")
    assert cfg["remote_write"][0]["url"] == "http://central:9090/api/v1/write"
    assert "alerting" not in cfg and "rule_files" not in cfg

    def available():
        st = kube.get(PROMETHEUSAGENTS, "edge", NS).get("status") or {}
        conds = {c["type"]: c["status"] for c in st.get("conditions") or ()}
        # the counts may lag the conditions by one status write: wait for both, not one then the other
        ready = conds.get("Reconciled") == "True" and conds.get("Available") == "True"
        return st if ready and st.get("shards") == 2 and st.get("availableReplicas") == 2 else None
    eventually(available, 30, "the agent's status Available and Reconciled, 2 shards, 2 replicas available")

    def bound():
        bindings = (kube.get(PODMONITORS, "app", NS).get("status") or {}).get("bindings") or []
        return [b for b in bindings if b["resource"] == "prometheusagents" and b["name"] == "edge"]
    binding = eventually(bound, 30, "the PodMonitor's binding to the agent")[0]
    assert binding["conditions"][0]["status"] == "True"

    # scale down to one shard: the stale shard goes; then the agent goes, and its binding with it
    kube.patch(PROMETHEUSAGENTS, "edge", {"spec": {"shards": 1}}, NS)  # not GET+PUT: status writes race it
    eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-edge-shard-1") is None, 30, "shard 1 deleted")
    kube.delete(PROMETHEUSAGENTS, "edge", NS)
    eventually(lambda: not bound(), 30, "the PodMonitor's binding removed")


def test_daemonset_mode_with_the_gate(kube, start_operator):
    from promop.featuregates import FeatureGates

    start_operator(feature_gates=FeatureGates((("PrometheusAgentDaemonSet", True),)))
    kube.create(PODMONITORS, pod_monitor(), NS)
    kube.create(PROMETHEUSAGENTS, agent("node", mode="DaemonSet"), NS)
    ds = eventually(lambda: _get(kube, DAEMONSETS, "prom-agent-node"), 30, "the agent's DaemonSet")
    assert "operator.prometheus.io/shard" not in ds["spec"]["selector"]["matchLabels"]
    assert _get(kube, STATEFULSETS, "prom-agent-node") is None
    sd = _config(kube, "prom-agent-node")["scrape_configs"][0]["kubernetes_sd_configs"][0]
    assert sd["selectors"] == [{"role": "pod", "field": "spec.nodeName=$(NODE_NAME)"}]


def test_daemonset_mode_without_the_gate_is_reported(kube, start_operator):
    start_operator()
    kube.create(PROMETHEUSAGENTS, agent("nogate", mode="DaemonSet"), NS)

    def refused():
        st = kube.get(PROMETHEUSAGENTS, "nogate", NS).get("status") or {}
        return next((c for c in st.get("conditions") or () if c["type"] == "Reconciled" and c["status"] == "False"),
                    None)
    cond = eventually(refused, 30, "Reconciled=False on the agent")
    assert "PrometheusAgentDaemonSet feature gate" in cond["message"]
    assert _get(kube, DAEMONSETS, "prom-agent-nogate") is None
    assert _get(kube, STATEFULSETS, "prom-agent-nogate") is None
    events = eventually(lambda: [e for e in kube.list(EVENTS, NS)["items"]
                                 if e["involvedObject"].get("name") == "nogate"], 30, "a Warning Event")
    assert events[0]["involvedObject"]["kind"] == "PrometheusAgent"


def test_daemonset_restrictions_refused_by_the_apiserver(kube):
    """The CRD's rules: fields DaemonSet mode does not allow are refused at apply, with upstream's message."""
    from promop.kube.errors import ApiError

    try:
        kube.create(PROMETHEUSAGENTS, agent("bad", mode="DaemonSet", replicas=2), NS)
    except ApiError as exc:
        assert "replicas cannot be set when mode is DaemonSet" in str(exc)
    else:
        raise AssertionError("the apiserver accepted replicas in DaemonSet mode")


class _Cache(dict):
    """A stand-in informer cache: the test decides what the operator believes."""

    def list(self) -> list:
        return list(self.values())


def test_a_status_write_refused_for_a_stale_cache_is_retried_not_dropped(cluster, kube):
    """The cached agent is older than the stored one (our own last status write not seen yet): the refresh's
    write gets 409. Dropped, the status stayed behind for good when no later event came (the workloads were
    already ready); it must say RetryLater so the worker tries again with backoff."""
    import pytest

    from promop.operator.agent.sync import AgentStores, AgentSyncer
    from promop.operator.apply import RetryLater
    from promop.render.model import RenderOptions

    key = f"{NS}/edge"
    agents = _Cache({key: kube.create(PROMETHEUSAGENTS, agent(), NS)})
    stss = _Cache()
    stores = AgentStores(agents, _Cache(), _Cache(), _Cache(), stss, _Cache())
    syncer = AgentSyncer(kube, stores, RenderOptions())
    syncer.sync(key)  # writes the workload and a first status (the cache does not see that write)
    sts = eventually(lambda: _get(kube, STATEFULSETS, "prom-agent-edge"), 30, "the StatefulSet")
    stss[f"{NS}/prom-agent-edge"] = {**sts, "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1,
                                                      "updatedReplicas": 1, "observedGeneration": 1}}
    with pytest.raises(RetryLater):
        syncer.refresh_status(key)
    agents[key] = kube.get(PROMETHEUSAGENTS, "edge", NS)  # the cache catches up: the retry writes
    syncer.refresh_status(key)
    status = kube.get(PROMETHEUSAGENTS, "edge", NS)["status"]
    assert status.get("availableReplicas") == 1


def test_a_binding_write_refused_for_a_stale_cache_is_retried_not_dropped(cluster, kube):
    """Two agents bind one PodMonitor: the second agent's cached PodMonitor predates the first one's binding,
    so its write gets 409. Dropped, its binding stayed missing for good (a monitor's status-only change
    queues no sync); seen in CI as a restarted operator writing the PodMonitor. It must say RetryLater, and
    the retry, with the cache caught up, keeps the first agent's binding and adds its own."""
    import pytest

    from promop.operator.agent.sync import AgentStores, AgentSyncer
    from promop.operator.apply import RetryLater
    from promop.render.model import RenderOptions

    pm = kube.create(PODMONITORS, pod_monitor(), NS)
    agents = _Cache({f"{NS}/{n}": kube.create(PROMETHEUSAGENTS, agent(n), NS) for n in ("one", "two")})
    podmonitors = _Cache({f"{NS}/app": pm})
    stss = _Cache()
    stores = AgentStores(agents, _Cache(), podmonitors, _Cache(), stss, _Cache())
    syncer = AgentSyncer(kube, stores, RenderOptions())
    syncer.sync(f"{NS}/one")  # binds the PodMonitor; the cache still holds the unbound copy
    with pytest.raises(RetryLater, match="PodMonitor default/app"):
        syncer.sync(f"{NS}/two")
    # the caches catch up (what the first try wrote, the first agent's binding): the retry writes
    stss[f"{NS}/prom-agent-two"] = kube.get(STATEFULSETS, "prom-agent-two", NS)
    agents[f"{NS}/two"] = kube.get(PROMETHEUSAGENTS, "two", NS)
    podmonitors[f"{NS}/app"] = kube.get(PODMONITORS, "app", NS)
    syncer.sync(f"{NS}/two")
    bound = kube.get(PODMONITORS, "app", NS)["status"]["bindings"]
    assert [(b["resource"], b["name"]) for b in bound] == [("prometheusagents", "one"), ("prometheusagents", "two")]
    assert all(b["conditions"][0]["status"] == "True" for b in bound)


def test_prometheus_and_agent_share_one_monitor_informer_and_both_follow_an_edit(kube, start_operator):
    """One LIST and one cached copy of each PodMonitor for both controllers (promop.kube.shared_informers),
    and each still gets every event: an edit reaches the Prometheus's config and the agent's."""
    from promop.kube.resources import PROMETHEUSES
    from promop.operator.agent.controller import AgentController

    r = start_operator()
    prom_ctl = r.operator.controllers[0]
    agent_ctl = next(c for c in r.operator.controllers if isinstance(c, AgentController))
    assert prom_ctl.podmonitors.informer is agent_ctl.podmonitors.informer
    assert prom_ctl.servicemonitors.informer is agent_ctl.servicemonitors.informer
    assert prom_ctl.namespaces.informer is agent_ctl.namespaces.informer
    assert prom_ctl.statefulsets.informer is not agent_ctl.statefulsets.informer  # other selectors
    kube.create(PODMONITORS, pod_monitor(), NS)
    kube.create(PROMETHEUSES, {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                               "metadata": {"name": "main", "namespace": NS},
                               "spec": {"podMonitorSelector": {}}}, NS)
    kube.create(PROMETHEUSAGENTS, agent(), NS)

    def paths(secret: str) -> list | None:
        try:
            cfg = _config(kube, secret)
        except NotFound:
            return None
        return [j.get("metrics_path") for j in cfg.get("scrape_configs") or ()]  # None: the default

    eventually(lambda: paths("prometheus-main") == [None], 30, "the Prometheus's job")
    eventually(lambda: paths("prom-agent-edge") == [None], 30, "the agent's job")
    # A merge patch, not GET+PUT: the controllers write the PodMonitor's status binding meanwhile (409 race).
    endpoints = kube.get(PODMONITORS, "app", NS)["spec"]["podMetricsEndpoints"]
    endpoints[0]["path"] = "/edited"
    kube.patch(PODMONITORS, "app", {"spec": {"podMetricsEndpoints": endpoints}}, NS)
    eventually(lambda: paths("prometheus-main") == ["/edited"], 30, "the edit in the Prometheus's config")
    eventually(lambda: paths("prom-agent-edge") == ["/edited"], 30, "the edit in the agent's config")
