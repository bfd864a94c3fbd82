"""End to end: the real renderer, the operator in-process, the sandbox API and the real kubectl."""

from __future__ import annotations

import pytest
import yaml
from operator_testlib import (NS, OPERATOR_AGENT, config, eventually, job, jobs, modify, names, operator_writes,
                              prometheus, rule, scaled, service_monitor)

from promop.kube.errors import NotFound
from promop.kube.resources import (CONFIGMAPS, EVENTS, NAMESPACES, PROMETHEUSES, PROMETHEUSRULES, SECRETS,
                                   SERVICEMONITORS, SERVICES, STATEFULSETS)


@pytest.fixture
def ns(kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


def test_kubectl_apply_edit_delete_servicemonitor(kube, kubectl, start_operator, ns, tmp_path):
    start_operator()
    f = tmp_path / "objs.yaml"
    f.write_text(yaml.safe_dump_all([prometheus(), service_monitor("api", interval="30s")]))
    kubectl("apply", "-f", str(f))
    eventually(lambda: job(kube, "serviceMonitor/team/api/0"), 20, "the job in the config Secret")
    assert job(kube, "serviceMonitor/team/api/0")["scrape_interval"] == "30s"

    f.write_text(yaml.safe_dump(service_monitor("api", interval="15s")))
    kubectl("apply", "-f", str(f))
    eventually(lambda: (job(kube, "serviceMonitor/team/api/0") or {}).get("scrape_interval") == "15s", 20,
               "the edit in the config")

    kubectl("delete", "-f", str(f))
    eventually(lambda: jobs(kube) == [], 20, "the job gone")


def test_no_api_write_when_nothing_changed(cluster, kube, start_operator, ns):
    op = start_operator()
    kube.create(PROMETHEUSES, prometheus(shards=2))
    for i in range(5):
        kube.create(SERVICEMONITORS, service_monitor(f"sm{i}"))
    kube.create(PROMETHEUSRULES, rule("r", "up", "sum(up)"))
    eventually(lambda: len(jobs(kube) or []) == 5, 20, "5 jobs")
    op.settle(cluster)
    cluster.reset_requests()
    ctl = op.controller
    done = ctl.metrics.reconcile_operations.labels("prometheus")._value.get()
    for _ in range(3):
        ctl.enqueue_all()
        eventually(op.idle, 20, "idle after resync")
    assert ctl.metrics.reconcile_operations.labels("prometheus")._value.get() >= done + 1
    # it compared without reading: the metadata cache shows the versions it wrote last
    mine = [(r.verb, r.resource) for r in cluster.requests if r.user_agent.startswith(OPERATOR_AGENT)]
    assert ("get", "secrets") not in mine and ("list", "configmaps") not in mine
    assert cluster.count_requests(verb="get", resource="services") >= 3  # no cache for Services: read
    assert operator_writes(cluster) == []

    # one ServiceMonitor change: exactly the config Secret is written (plus its own status binding)
    cluster.reset_requests()
    before = ctl.metrics.reconcile_operations.labels("prometheus")._value.get()
    modify(kube, SERVICEMONITORS, "sm0", NS, lambda sm: sm["spec"]["endpoints"][0].update(interval="5s"))
    eventually(lambda: (job(kube, "serviceMonitor/team/sm0/0") or {}).get("scrape_interval") == "5s", 20)
    op.settle(cluster)
    writes = [(w.resource, w.name, w.subresource) for w in operator_writes(cluster)]
    assert writes == [("secrets", "prometheus-p", None), ("servicemonitors", "sm0", "status")]
    # one sync: the watch echo of our own Secret write does not cause another
    assert ctl.metrics.reconcile_operations.labels("prometheus")._value.get() == before + 1


def test_rule_changes_update_configmaps_with_sharding(cluster, kube, start_operator, ns):
    op = start_operator()
    kube.create(PROMETHEUSES, prometheus())
    kube.create(PROMETHEUSRULES, rule("small", "up"))
    eventually(lambda: names(kube, CONFIGMAPS) == ["prometheus-p-rulefiles-0"], 20, "one rule ConfigMap")

    def rule_text() -> str:
        return "".join(kube.get(CONFIGMAPS, "prometheus-p-rulefiles-0", NS).get("data", {}).values())
    eventually(lambda: "rec_0" in rule_text(), 20, "the rule in the ConfigMap")
    assert "sum(up)" not in rule_text()
    modify(kube, PROMETHEUSRULES, "small", NS,
           lambda r: r["spec"]["groups"][0]["rules"].append({"record": "rec_1", "expr": "sum(up)"}))
    eventually(lambda: "sum(up)" in rule_text(), 20, "the rule change in the ConfigMap")

    big = "x" * 300_000  # two of these do not fit one 512 KiB ConfigMap
    kube.create(PROMETHEUSRULES, rule("big1", "up", annotation=big))
    kube.create(PROMETHEUSRULES, rule("big2", "up", annotation=big))
    eventually(lambda: len(names(kube, CONFIGMAPS)) >= 2, 30, "rules sharded over ConfigMaps")
    cfg = config(kube)
    assert len(cfg["rule_files"]) >= 3
    cluster.reset_requests()
    kube.delete(PROMETHEUSRULES, "big1", NS)
    kube.delete(PROMETHEUSRULES, "big2", NS)
    eventually(lambda: names(kube, CONFIGMAPS) == ["prometheus-p-rulefiles-0"], 30, "stale ConfigMaps deleted")
    eventually(op.idle)
    # upstream's order: the remaining ConfigMap is updated before the stale ones go
    cm_writes = [w.verb for w in operator_writes(cluster) if w.resource == "configmaps"]
    assert "delete" in cm_writes and cm_writes.index("update") < cm_writes.index("delete"), cm_writes


def test_shards_scale_up_and_down(kube, start_operator, ns):
    start_operator()
    kube.create(PROMETHEUSES, prometheus())
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"], 20)
    kube.patch(PROMETHEUSES, "p", {"spec": {"shards": 3}}, NS)
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p", "prometheus-p-shard-1", "prometheus-p-shard-2"],
               20, "3 shards")
    eventually(lambda: kube.get(PROMETHEUSES, "p", NS).get("status", {}).get("shards") == 3, 20, "status shards 3")
    kube.patch(PROMETHEUSES, "p", {"spec": {"shards": 1}}, NS)
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"], 20, "back to 1 shard")


def test_immutable_statefulset_change_is_recreated(cluster, kube, start_operator, ns):
    op = start_operator()
    kube.create(PROMETHEUSES, prometheus())
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"], 20)
    uid = kube.get(STATEFULSETS, "prometheus-p", NS)["metadata"]["uid"]
    kube.patch(PROMETHEUSES, "p", {"spec": {"serviceName": "custom-governing"}}, NS)

    def recreated():
        try:
            sts = kube.get(STATEFULSETS, "prometheus-p", NS)
        except NotFound:
            return False
        return sts["metadata"]["uid"] != uid and sts["spec"]["serviceName"] == "custom-governing"
    eventually(recreated, 30, "the StatefulSet recreated with the new serviceName")
    assert op.controller.metrics.sts_delete_create.labels("prometheus")._value.get() >= 1
    invalid = [r for r in cluster.requests if r.resource == "statefulsets" and r.code == 422]
    deletes = [r for r in cluster.requests if r.resource == "statefulsets" and r.verb == "delete"]
    assert invalid and deletes


def test_paused_stops_writes(cluster, kube, start_operator, ns):
    op = start_operator()
    kube.create(PROMETHEUSES, prometheus(paused=True))
    kube.create(SERVICEMONITORS, service_monitor("a"))
    eventually(lambda: op.controller.syncer.last_report.get(f"{NS}/p"), 20, "a sync of the paused Prometheus")
    eventually(op.idle)
    assert op.controller.syncer.last_report[f"{NS}/p"].skipped == "paused"
    assert operator_writes(cluster) == []
    assert config(kube) is None
    kube.patch(PROMETHEUSES, "p", {"spec": {"paused": False}}, NS)
    eventually(lambda: jobs(kube) == ["serviceMonitor/team/a/0"], 20, "resumed")


def test_deleting_prometheus_garbage_collects_everything(kube, start_operator, ns):
    start_operator()
    kube.create(PROMETHEUSES, prometheus())
    kube.create(PROMETHEUSRULES, rule("r", "up"))
    kube.create(SERVICEMONITORS, service_monitor("a"))
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"] and names(kube, CONFIGMAPS), 20)
    eventually(lambda: kube.get(SERVICEMONITORS, "a", NS).get("status", {}).get("bindings"), 20, "a binding")
    assert {"prometheus-p", "prometheus-p-tls-assets-0"} <= set(names(kube, SECRETS))
    kube.delete(PROMETHEUSES, "p", NS)
    def collected() -> bool:
        left = (names(kube, STATEFULSETS) + names(kube, CONFIGMAPS) + names(kube, SERVICES)
                + [n for n in names(kube, SECRETS) if n.startswith("prometheus-p")])
        assert not left, f"still there: {left}"
        return True
    eventually(collected, 20, "everything collected")
    eventually(lambda: not kube.get(SERVICEMONITORS, "a", NS)["status"]["bindings"], 20, "its binding removed")


def test_foreign_writer_edit_is_restored(kube, start_operator, ns):
    start_operator()
    kube.create(PROMETHEUSES, prometheus())
    kube.create(SERVICEMONITORS, service_monitor("a"))
    eventually(lambda: jobs(kube) == ["serviceMonitor/team/a/0"], 20)

    def vandalise(secret: dict) -> None:
        secret["data"] = {"prometheus.yaml.gz": ""}
        secret["metadata"]["labels"]["foreign"] = "kept"
    modify(kube, SECRETS, "prometheus-p", NS, vandalise)
    eventually(lambda: jobs(kube) == ["serviceMonitor/team/a/0"], 20, "the config restored")
    assert kube.get(SECRETS, "prometheus-p", NS)["metadata"]["labels"]["foreign"] == "kept"
    wanted: dict = {}

    def inject(cm: dict) -> None:
        wanted.clear()
        wanted.update(cm.get("data") or {})
        cm["data"] = {"injected.yaml": "groups: []"}
    modify(kube, CONFIGMAPS, "prometheus-p-rulefiles-0", NS, inject)
    eventually(lambda: (kube.get(CONFIGMAPS, "prometheus-p-rulefiles-0", NS).get("data") or {}) == wanted, 20,
               "the rule ConfigMap restored")


def test_invalid_objects_get_bindings_and_one_event_others_unaffected(kube, kubectl, start_operator, ns):
    op = start_operator()
    kube.create(PROMETHEUSES, prometheus())
    kube.create(SERVICEMONITORS, service_monitor("good"))
    kube.create(SERVICEMONITORS, service_monitor("bad", interval="10s", scrapeTimeout="30s"))
    eventually(lambda: jobs(kube) == ["serviceMonitor/team/good/0"], 20, "only the good job")

    def accepted(name):
        bindings = kube.get(SERVICEMONITORS, name, NS).get("status", {}).get("bindings") or []
        return bindings and bindings[0]["conditions"][0]
    bad = eventually(lambda: accepted("bad"), 20, "bindings on the bad monitor")
    assert bad["status"] == "False" and bad["reason"] == "InvalidConfiguration"
    assert "scrapeTimeout" in bad["message"]
    assert eventually(lambda: accepted("good"), 20)["status"] == "True"
    binding = kube.get(SERVICEMONITORS, "bad", NS)["status"]["bindings"][0]
    assert (binding["resource"], binding["name"], binding["namespace"]) == ("prometheuses", "p", NS)

    def warning_events():
        return [e for e in kube.list(EVENTS, NS)["items"]
                if e["reason"] == "InvalidConfiguration" and e["involvedObject"]["name"] == "bad"]
    eventually(warning_events, 20, "an InvalidConfiguration event")
    assert warning_events()[0]["type"] == "Warning"
    for _ in range(2):  # resyncs do not repeat the Event
        op.controller.enqueue_all()
        eventually(op.idle)
    assert len(warning_events()) == 1
    out = kubectl("get", "servicemonitor", "bad", "-n", NS, "-o", "yaml").stdout
    assert "InvalidConfiguration" in out and "scrapeTimeout" in out

    kube.patch(SERVICEMONITORS, "bad", {"spec": {"endpoints": [{"port": "web", "interval": "30s"}]}}, NS)
    eventually(lambda: (accepted("bad") or {}).get("status") == "True", 20, "accepted after the fix")
    assert jobs(kube) == ["serviceMonitor/team/bad/0", "serviceMonitor/team/good/0"]
    status = kube.get(PROMETHEUSES, "p", NS)["status"]
    assert {c["type"] for c in status["conditions"]} == {"Available", "Reconciled"}


def test_referenced_secret_change_in_another_namespace_updates_config(kube, start_operator, ns):
    import base64

    kube.create(NAMESPACES, {"metadata": {"name": "apps"}})
    start_operator()
    kube.create(PROMETHEUSES, prometheus(serviceMonitorNamespaceSelector={}))
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    kube.create(SECRETS, {"metadata": {"name": "creds", "namespace": "apps"},
                          "data": {"user": b64("alice"), "pass": b64("one")}})
    sm = service_monitor("auth")
    sm["metadata"]["namespace"] = "apps"
    sm["spec"]["endpoints"][0]["basicAuth"] = {"username": {"name": "creds", "key": "user"},
                                               "password": {"name": "creds", "key": "pass"}}
    kube.create(SERVICEMONITORS, sm)
    name = "serviceMonitor/apps/auth/0"
    eventually(lambda: (job(kube, name) or {}).get("basic_auth", {}).get("password") == "one", 20, "inlined")
    secret = kube.get(SECRETS, "creds", "apps")
    secret["data"]["pass"] = b64("two")
    kube.update(SECRETS, secret, "apps")
    eventually(lambda: job(kube, name)["basic_auth"]["password"] == "two", 20, "the Secret change in the config")


def test_namespace_label_change_changes_selection(kube, start_operator, ns):
    kube.create(NAMESPACES, {"metadata": {"name": "apps"}})
    start_operator()
    kube.create(PROMETHEUSES, prometheus(serviceMonitorNamespaceSelector={"matchLabels": {"monitored": "yes"}}))
    sm = service_monitor("web")
    sm["metadata"]["namespace"] = "apps"
    kube.create(SERVICEMONITORS, sm)
    eventually(lambda: jobs(kube) == [], 20, "no job while the namespace is unlabelled")
    kube.patch(NAMESPACES, "apps", {"metadata": {"labels": {"monitored": "yes"}}})
    eventually(lambda: jobs(kube) == ["serviceMonitor/apps/web/0"], 20, "selected once labelled")
    kube.patch(NAMESPACES, "apps", {"metadata": {"labels": {"monitored": None}}})
    eventually(lambda: jobs(kube) == [], 20, "deselected once unlabelled")


def test_allow_listed_namespaces_only(kube, start_operator, ns):
    kube.create(NAMESPACES, {"metadata": {"name": "elsewhere"}})
    op = start_operator(namespaces=(NS,))
    other = prometheus("q")
    other["metadata"]["namespace"] = "elsewhere"
    kube.create(PROMETHEUSES, other)
    kube.create(PROMETHEUSES, prometheus())
    eventually(lambda: jobs(kube) == [], 20, "the allowed Prometheus reconciled")
    eventually(op.idle)
    assert [k for k in op.controller.prometheuses.store.keys()] == [f"{NS}/p"]
    assert not kube.list(SECRETS, "elsewhere")["items"]


def test_unsupported_fields_get_one_warning_event(kube, start_operator, ns):
    op = start_operator()
    # a field upstream's sidecar ignores too (promop says so; upstream is silent)
    kube.create(PROMETHEUSES, prometheus(thanos={"grpcServerTlsConfig": {"insecureSkipVerify": True}}))

    def events():
        return [e for e in kube.list(EVENTS, NS)["items"] if e["involvedObject"]["kind"] == "Prometheus"]
    eventually(events, 20, "a Warning Event about the Prometheus")
    ev = events()[0]
    assert ev["type"] == "Warning" and ev["reason"] == "UnsupportedConfiguration"
    assert "thanos.grpcServerTlsConfig.insecureSkipVerify" in ev["message"]
    op.controller.enqueue_all()
    eventually(op.idle)
    assert len(events()) == 1


def test_statefulset_status_change_refreshes_only_the_prometheus_status(cluster, kube, start_operator, ns):
    op = start_operator()
    ctl = op.controller
    kube.create(PROMETHEUSES, prometheus())
    kube.create(SERVICEMONITORS, service_monitor("a"))
    eventually(lambda: jobs(kube) == ["serviceMonitor/team/a/0"], 20, "the job")

    def available() -> str:
        conds = kube.get(PROMETHEUSES, "p", NS).get("status", {}).get("conditions") or []
        return next((c["status"] for c in conds if c["type"] == "Available"), "")
    eventually(lambda: available() == "True", 20, "Available=True")
    op.settle(cluster)

    def sts_update_events() -> float:
        return ctl.metrics.triggered.labels("prometheus", "StatefulSet", "update")._value.get()

    def operator_requests() -> list:
        return [(r.verb, r.resource, r.subresource) for r in cluster.requests
                if r.user_agent.startswith(OPERATOR_AGENT) and r.verb not in ("list", "watch")]

    syncs = ctl.metrics.reconcile_operations.labels("prometheus")._value.get()
    # the pods go down: the StatefulSet controller reports it in status only
    assert cluster.background.wait_idle(scaled(10))  # the simulated controller's own status write is done
    cluster.reset_requests()
    sts = kube.get(STATEFULSETS, "prometheus-p", NS)
    sts["status"].update(readyReplicas=0, availableReplicas=0)
    kube.update(STATEFULSETS, sts, NS, subresource="status")
    eventually(lambda: available() == "False", 20, "Available=False")
    op.settle(cluster)
    assert operator_requests() == [("update", "prometheuses", "status")]  # no render, no read
    assert ctl.metrics.reconcile_operations.labels("prometheus")._value.get() == syncs

    # a status change that does not change the Prometheus status: no request at all
    cluster.reset_requests()
    seen = sts_update_events()
    sts = kube.get(STATEFULSETS, "prometheus-p", NS)
    sts["status"]["currentRevision"] = "prometheus-p-12345"
    kube.update(STATEFULSETS, sts, NS, subresource="status")
    eventually(lambda: sts_update_events() > seen, 20, "the StatefulSet update event")
    op.settle(cluster)
    assert operator_requests() == []
    assert ctl.metrics.reconcile_operations.labels("prometheus")._value.get() == syncs

    # a spec change by someone else is not status-only: a full sync (which, like upstream's, leaves
    # the StatefulSet alone while its input-hash annotation matches)
    sts = kube.get(STATEFULSETS, "prometheus-p", NS)
    sts["spec"]["replicas"] = 3
    kube.update(STATEFULSETS, sts, NS)
    eventually(lambda: ctl.metrics.reconcile_operations.labels("prometheus")._value.get() > syncs, 20, "a full sync")


def test_bindings_of_a_prometheus_deleted_while_the_operator_was_down_are_removed(kube, start_operator, ns):
    first = start_operator()
    kube.create(PROMETHEUSES, prometheus())
    kube.create(SERVICEMONITORS, service_monitor("a"))

    def bindings() -> list[tuple[str, str]]:
        status = kube.get(SERVICEMONITORS, "a", NS).get("status") or {}
        return sorted((b["namespace"], b["name"]) for b in status.get("bindings") or [])
    eventually(lambda: bindings() == [(NS, "p")], 20, "the binding")
    eventually(first.idle, 20)
    assert first.shutdown() == 0
    kube.delete(PROMETHEUSES, "p", NS)
    # a binding another operator wrote, for a Prometheus in a namespace this one does not manage
    sm = kube.get(SERVICEMONITORS, "a", NS)
    other = {**sm["status"]["bindings"][0], "namespace": "elsewhere", "name": "q"}
    sm["status"]["bindings"].append(other)
    kube.update(SERVICEMONITORS, sm, NS, subresource="status")

    second = start_operator(deny_namespaces=("elsewhere",))  # no Prometheus left: nothing else syncs
    eventually(lambda: bindings() == [("elsewhere", "q")], 20, "the stale binding removed, the foreign one kept")
    eventually(second.idle, 20)
    assert bindings() == [("elsewhere", "q")]


def test_run_flags_shape_what_it_creates_and_watches(cluster, kube, start_operator, ns):
    op = start_operator(labels={"team": "infra"}, annotations={"owner": "sre"},
                        config_reloader_image="registry.example/reloader:1",
                        prometheus_default_base_image="registry.example/prometheus",
                        secret_field_selector="type!=helm.sh/release.v1")
    kube.create(PROMETHEUSES, prometheus())
    kube.create(PROMETHEUSRULES, rule("r", "up"))
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p"] and names(kube, CONFIGMAPS), 20)
    op.settle(cluster)  # the add events of its own Secrets are in before the baseline below is read
    created = [kube.get(SECRETS, "prometheus-p", NS), kube.get(STATEFULSETS, "prometheus-p", NS),
               kube.get(CONFIGMAPS, "prometheus-p-rulefiles-0", NS)]
    for obj in created:  # --labels / --annotations
        md = obj["metadata"]
        assert md["labels"]["team"] == "infra" and md["annotations"]["owner"] == "sre", (obj["kind"], md)
    pod = created[1]["spec"]["template"]["spec"]
    images = {c["name"]: c["image"] for c in pod["containers"] + pod.get("initContainers", [])}
    assert images["prometheus"].startswith("registry.example/prometheus:"), images
    assert images["config-reloader"] == "registry.example/reloader:1", images

    # --secret-field-selector: a Helm release Secret is neither cached nor a reason to sync
    ctl = op.controller
    adds = ctl.metrics.triggered.labels("prometheus", "Secret", "add")._value.get()
    kube.create(SECRETS, {"metadata": {"name": "release", "namespace": NS}, "type": "helm.sh/release.v1",
                          "data": {"release": "eA=="}})
    kube.create(SECRETS, {"metadata": {"name": "plain", "namespace": NS}, "data": {"k": "eA=="}})
    secret_adds = ctl.metrics.triggered.labels("prometheus", "Secret", "add")
    eventually(lambda: ctl.secrets.store.get(f"{NS}/plain") and secret_adds._value.get() > adds, 20,
               "the plain Secret cached and handled")
    eventually(op.idle, 20)
    assert ctl.secrets.store.get(f"{NS}/release") is None  # created first: its event would have come first
    assert secret_adds._value.get() == adds + 1
    assert "data" not in ctl.secrets.store.get(f"{NS}/plain"), "Secrets are cached as metadata only"


def test_metrics_endpoint_has_upstreams_names(kube, start_operator, ns):
    import urllib.request

    op = start_operator(web=True)
    kube.create(PROMETHEUSES, prometheus(shards=2, replicas=3))
    eventually(lambda: names(kube, STATEFULSETS) == ["prometheus-p", "prometheus-p-shard-1"], 20)
    eventually(op.idle, 20)
    with urllib.request.urlopen(f"http://127.0.0.1:{op.operator.web.port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    c = 'controller="prometheus"'
    for sample in (f"prometheus_operator_reconcile_operations_total{{{c}}}",
                   f"prometheus_operator_reconcile_errors_total{{{c}}} 0.0",
                   f"prometheus_operator_reconcile_duration_seconds_count{{{c}}}",
                   f'prometheus_operator_triggered_total{{action="add",{c},triggered_by="Prometheus"}}',
                   "prometheus_operator_list_operations_total", "prometheus_operator_watch_operations_total",
                   f'prometheus_operator_managed_resources{{{c},resource="servicemonitors",state="selected"}} 0.0',
                   f'prometheus_operator_syncs{{{c},status="ok"}} 1.0',
                   f"prometheus_operator_ready{{{c}}} 1.0",
                   f'prometheus_operator_spec_replicas{{{c},name="p",namespace="team"}} 3.0',
                   f'prometheus_operator_spec_shards{{{c},name="p",namespace="team"}} 2.0',
                   "prometheus_operator_workqueue_depth", "prometheus_operator_workqueue_adds_total",
                   "prometheus_operator_kubernetes_client_http_requests_total",
                   "prometheus_operator_build_info{"):
        assert sample in text, sample
