"""The recommender's ClusterRole is exactly what it uses.

The recommender (with leader election, fresh samples from metrics.k8s.io, Prometheus unreachable so it
resumes from checkpoints) runs through a scenario reaching every code path that talks to the API: VPAs
of every target kind (found or not), a custom target through its scale subresource, pods owned through
a ReplicaSet and a Job, a checkpoint to resume from and rewrite, a deleted VPA, an orphaned checkpoint.
The (group, resource, verb) triples of its requests, read from the sandbox's request log, must be
covered by the ClusterRole, and every granted triple must have been used.
"""

from __future__ import annotations

import re
import threading
import time

from prometheus_client import CollectorRegistry

from deadlines import scaled
from promop.kube.client import KubeClient
from promop.kube.resources import Resource
from promop.operator.bundle import render_bundle
from promop.recommender.app import App
from promop.recommender.controller import CHECKPOINTS, VPAS
from promop.recommender.history import HistoryConfig
from promop.recommender.options import Options
from promop.recommender.rbac import cluster_role_rules

AGENT = "promop-recommender-rbac-test"
NS = "team"
DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
PODS = Resource("", "v1", "pods", kind="Pod")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
PATH = re.compile(r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/[^/]+)?/(?P<res>[^/]+)"
                  r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/?]+))?)?")


def eventually(check, timeout=60.0, what="condition"):
    deadline = time.monotonic() + scaled(timeout)  # times PROMOP_TEST_TIMEOUT_SCALE (tests/deadlines.py)
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def granted() -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in cluster_role_rules() for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def triple(rec) -> tuple[str, str, str] | None:
    if rec.resource:
        return rec.group or "", rec.resource + (f"/{rec.subresource}" if rec.subresource else ""), rec.verb
    m = PATH.match(rec.path.split("?")[0])
    if not m:
        return None
    group = m.group("group") or ""
    res = m.group("res") + (f"/{m.group('sub')}" if m.group("sub") else "")
    verb = {"GET": "get" if m.group("name") else "list"}.get(rec.method, rec.method.lower())
    return group, res, verb


def covered(t: tuple[str, str, str], grants: set) -> bool:
    g, r, v = t
    for gg, rr, vv in grants:
        if vv != v or gg not in (g, "*"):
            continue
        if rr == r or (rr.startswith("*/") and r.endswith(rr[1:])):
            return True
    return False


def vpa(name: str, kind: str, target: str, api_version: str = "apps/v1") -> dict:
    return {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"targetRef": {"apiVersion": api_version, "kind": kind, "name": target}}}


def test_cluster_role_is_exactly_what_the_recommender_uses(cluster, kube):
    kube.create(NAMESPACES, {"metadata": {"name": NS}})
    kube.create(DEPLOYMENTS, {"metadata": {"name": "web", "namespace": NS},
                              "spec": {"selector": {"matchLabels": {"app": "web"}},
                                       "template": {"metadata": {"labels": {"app": "web"}},
                                                    "spec": {"containers": [{"name": "app", "image": "x"}]}}}})
    kube.create(Resource("apps", "v1", "statefulsets", kind="StatefulSet"), {
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "db", "image": "x"}]}}}})
    for name, owner in (("web-1", ("ReplicaSet", "web-5f")), ("batch-1", ("Job", "nightly-1"))):
        kube.create(PODS, {"metadata": {"name": name, "namespace": NS, "labels": {"app": name.split("-")[0]},
                                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner[0],
                                                             "name": owner[1], "uid": "u", "controller": True}]},
                           "spec": {"containers": [{"name": "app", "image": "x"}]}})
    for v in (vpa("web", "Deployment", "web"), vpa("db", "StatefulSet", "db"), vpa("ds", "DaemonSet", "ds"),
              vpa("rs", "ReplicaSet", "rs"), vpa("job", "Job", "job", "batch/v1"),
              vpa("cron", "CronJob", "cron", "batch/v1"), vpa("rc", "ReplicationController", "rc", "v1"),
              vpa("custom", "Widget", "w", "example.com/v1"), vpa("doomed", "Deployment", "web")):
        kube.create(VPAS, v)
    status = {"version": "v3", "totalSamplesCount": 1440, "firstSampleStart": "2026-01-01T00:00:00Z",
              "lastSampleStart": "2026-01-02T00:00:00Z",
              "cpuHistogram": {"referenceTimestamp": "2026-01-02T00:00:00Z", "bucketWeights": {"25": 10000},
                               "totalWeight": 100.0},
              "memoryHistogram": {"referenceTimestamp": "2026-01-02T00:00:00Z", "bucketWeights": {"29": 10000},
                                  "totalWeight": 1.0}}
    for name, vpa_name in (("web-app", "web"), ("doomed-app", "doomed"), ("orphan-app", "orphan")):
        kube.create(CHECKPOINTS, {"metadata": {"name": name, "namespace": NS},
                                  "spec": {"vpaObjectName": vpa_name, "containerName": "app"}, "status": status})

    api = cluster.api_client()
    api.user_agent = AGENT
    registry = CollectorRegistry()
    history = HistoryConfig(prometheus_address="http://127.0.0.1:9", metric_for_pod_labels="")
    opts = Options(history=history, interval=0.5, checkpoints_gc_interval=0.5, prometheus_timeout=1.0,
                   metrics_source="metrics-api", leader_elect=True, lease_name="rec", lease_namespace="default",
                   identity="rbac", listen_address="127.0.0.1:0")
    app = App(opts, client=KubeClient(api, registry=registry), registry=registry, web=False,
              leader_kwargs={"lease_duration": 30.0, "renew_deadline": 20.0, "retry_period": 0.2})
    stop = threading.Event()
    thread = threading.Thread(target=app.run, args=(stop,), daemon=True)
    thread.start()
    try:
        def web_recommended():
            st = kube.get(VPAS, "web", NS).get("status") or {}
            return (st.get("recommendation") or {}).get("containerRecommendations")
        eventually(web_recommended, 60, "a recommendation from the checkpoint")
        assert app.recommender.history_source == "checkpoints"
        def ds_unsupported():  # written in the same round as web's recommendation, possibly after it
            conds = {c["type"]: c for c in (kube.get(VPAS, "ds", NS).get("status") or {}).get("conditions") or []}
            return conds.get("ConfigUnsupported")
        cond = eventually(ds_unsupported, 60, "the DaemonSet VPA's ConfigUnsupported condition")
        assert cond["status"] == "True" and "DaemonSet/ds" in cond["message"]
        kube.delete(VPAS, "doomed", NS)
        names = lambda: sorted(c["metadata"]["name"] for c in kube.list(CHECKPOINTS, NS)["items"])  # noqa: E731
        eventually(lambda: "doomed-app" not in names() and "orphan-app" not in names(), 60,
                   "the deleted VPA's and the orphaned checkpoints to go")

        def used() -> set:
            return {t for r in cluster.requests if r.user_agent.startswith(AGENT) and (t := triple(r))}

        last_close = [0.0]

        def every_grant_used() -> bool:
            u = used()
            missing = {g for g in granted() if not covered(g, set())  # the exact triple, or a wildcard's use
                       and not any(covered(x, {g}) for x in u)}
            if missing and all(v == "watch" for _, _, v in missing) and time.monotonic() - last_close[0] > 1:
                cluster.faults.close_watches()  # a watch is logged when it ends
                last_close[0] = time.monotonic()
            leases = sorted({(r.verb, r.code) for r in cluster.requests if r.resource == "leases"})
            assert not missing, (f"granted but not (yet) used: {sorted(missing)}; leader: "
                                 f"{app.elector.is_leader() if app.elector else None}, lease requests {leases}")
            return True

        eventually(every_grant_used, 120, "every granted permission to be used")
        extra = {t for t in used() if not covered(t, granted())}
        assert not extra, f"the recommender uses permissions its ClusterRole lacks: {sorted(extra)}"
    finally:
        stop.set()
        thread.join(30)


def test_bundle_cluster_role_is_the_rbac_table():
    docs = [d for f in render_bundle(component="recommender") for d in f.documents()]
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    assert role["rules"] == cluster_role_rules()
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding")
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == sa["metadata"]["name"]
    dep = next(d for d in docs if d["kind"] == "Deployment")
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    assert dep["spec"]["template"]["spec"]["containers"][0]["args"][0] == "recommender"
