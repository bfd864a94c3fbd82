"""KEDA's ScaledObject on the real node: a Deployment of real pods goes 0 -> 1 -> N -> 0.

Installed as docs/keda.md tells users: `kubectl apply -f crds/` (the keda.sh CRDs among them),
`promop manifests --component autoscaler | kubectl apply -f -` (`--keda=auto`: on, the CRDs are
there) and `promop manifests --component adapter | kubectl apply -f -` (its
`--keda-metrics-url` forwards ScaledObject metrics to the autoscaler's Service). Two edits, both
for the kit's lack of DNS (components_kit.point_at): the bundles' Prometheus URL names the test's
stand-in Prometheus, and the adapter's `--keda-metrics-url` the autoscaler Service's ClusterIP. The
adapter's APIServices are applied last, once its Service answers at its ClusterIP: a kit race, see
components_kit.apply_apiservices_last.

The stand-in Prometheus (keda_kit.StandInPrometheus) listens on the node's pod-bridge address, so
the autoscaler's pods query it as they would a Prometheus Service; the test sets its answer:
- 5 (above activationThreshold 0, below threshold 10): the autoscaler's scale loop takes the
  Deployment from 0 to 1 (KEDA's part; kcm's HPA never scales from 0);
- 35: kube-controller-manager's HPA `keda-hpa-<name>` (sync every 5 s in the tier), reading
  `s0-prometheus` through the real aggregator -> the adapter pod -> the autoscaler pod, wants
  ceil(35 / 10) = 4 = maxReplicaCount;
- 0: inactive; after cooldownPeriod (5 s) the scale loop takes it to 0 (the HPA would stop at 1).
At each step the pods are really Running and Ready (or gone), and a user's view agrees: the
ScaledObject's conditions, `kubectl get so`, the HPA's status and KEDA's Events.
"""

from __future__ import annotations

import json
import time
import urllib.error
from dataclasses import dataclass, field
from typing import Iterator

import pytest

import realkube
from deadlines import scaled

from .components_kit import (apply_apiservices_last, point_at, point_at_prometheus, ready_pods, remove_bundles,
                             render_bundle, wait_for)
from .keda_kit import StandInPrometheus, scaled_app_manifests, so_columns
from .stack import install_crds, record

APP = "web"
MAX_REPLICAS = 4
THRESHOLD = 10
EXTERNAL_APISERVICE = "v1beta1.external.metrics.k8s.io"
AUTOSCALER = "app.kubernetes.io/name=promop-autoscaler"
ADAPTER = "app.kubernetes.io/name=promop-adapter"


@dataclass
class Keda:
    cluster: realkube.RealCluster
    ns: str
    prom: StandInPrometheus
    bundles: list[str] = field(default_factory=list)

    def get(self, *args: str, check: bool = True):
        return self.cluster.get_json(*args, "-n", self.ns, check=check)

    def kubectl(self, *args: str) -> str:
        return self.cluster.kubectl("-n", self.ns, *args).stdout

    def replicas(self) -> int:
        return self.get("deployment", APP)["spec"].get("replicas", 1)

    def app_pods(self) -> list[dict]:
        """Every pod of the app, including those being deleted (0 means none left at all)."""
        return self.get("pods", "-l", f"app={APP}")["items"]

    def conditions(self) -> dict[str, dict]:
        status = self.get("scaledobject", APP).get("status") or {}
        return {c["type"]: c for c in status.get("conditions") or []}

    def columns(self) -> dict[str, str]:
        return so_columns(self.kubectl("get", "so", APP))

    def replica_answers(self) -> dict[str, str]:
        """Each autoscaler pod's own answer for the HPA's metric (`value`, or the HTTP error and its
        body): the Service behind `--keda-metrics-url` may send the HPA's request to either, leader or
        standby, and the adapter's kept-alive connection stays with the one it got."""
        path = f"/keda/v1/namespaces/{self.ns}/scaledobjects/{APP}/metrics/s0-prometheus"
        answers = {}
        for pod in self.get("pods", "-l", AUTOSCALER)["items"]:
            url = f"http://{pod['status'].get('podIP')}:9666{path}"
            try:
                answers[pod["metadata"]["name"]] = realkube.http_json(url)["items"][0]["value"]
            except urllib.error.HTTPError as exc:
                answers[pod["metadata"]["name"]] = f"HTTP {exc.code}: {exc.read().decode(errors='replace')}"
            except OSError as exc:
                answers[pod["metadata"]["name"]] = repr(exc)
        return answers

    def all_answer(self, value: str):
        """A check for wait_for: every replica answers `value` (else it raises, naming the answers)."""
        def check() -> dict[str, str]:
            answers = self.replica_answers()
            if set(answers.values()) != {value}:
                raise AssertionError(f"not every replica answers {value}: {answers}")
            return answers
        return check

    def describe(self) -> str:
        """What a user would look at when a step does not happen: objects, the HPA's conditions,
        Events, each autoscaler pod's own answer for the metric (the Service picks either) and the
        components' logs."""
        out = [self.cluster.kubectl("get", "deploy,rs,pods,hpa,so", "-n", self.ns, "-o", "wide",
                                    check=False).stdout]
        hpa = self.get("hpa", f"keda-hpa-{APP}", check=False) or {}
        out.append(json.dumps((hpa.get("status") or {}), indent=1))
        out.append(self.cluster.kubectl("get", "events", "-n", self.ns, "--sort-by=.lastTimestamp",
                                        check=False).stdout[-4000:])
        out.append(f"each autoscaler pod's answer for s0-prometheus: {self.replica_answers()}")
        for selector in (AUTOSCALER, ADAPTER):
            for pod in self.get("pods", "-l", selector)["items"]:
                name = pod["metadata"]["name"]
                log = self.cluster.kubectl("logs", "-n", self.ns, name, check=False).stdout
                out.append(f"--- {name} log:\n{log[-3000:]}")
        return "\n".join(out)

    def events(self, reason: str) -> list[str]:
        data = self.get("events", "--field-selector", f"involvedObject.kind=ScaledObject,reason={reason}")
        return [e["message"] for e in data["items"]]


@pytest.fixture(scope="module")
def keda(real_cluster: realkube.RealCluster) -> Iterator[Keda]:
    cp = real_cluster.cp
    install_crds(real_cluster)   # docs/keda.md: `kubectl apply -f crds/`, the keda.sh CRDs among them
    ns = realkube.create_namespace(cp, "keda")
    query = f'sum(web_queue{{namespace="{ns}"}})'
    k = Keda(real_cluster, ns, StandInPrometheus(query))
    try:
        autoscaler = point_at_prometheus(render_bundle("autoscaler", ns, real_cluster.image), ns, k.prom.url)
        k.bundles.append(autoscaler)
        real_cluster.apply(autoscaler)
        ip = k.get("service", "promop-autoscaler")["spec"]["clusterIP"]
        adapter = point_at(point_at_prometheus(render_bundle("adapter", ns, real_cluster.image), ns, k.prom.url),
                           f"http://promop-autoscaler.{ns}.svc:9666", f"http://{ip}:9666")
        k.bundles.append(adapter)
        apply_apiservices_last(real_cluster, adapter, ns, "promop-adapter", scaled(60))
        for name, selector in (("autoscaler", AUTOSCALER), ("adapter", ADAPTER)):
            count = k.get("deployment", f"promop-{name}")["spec"]["replicas"]
            pods = wait_for(f"promop-{name}: {count} pods Ready",
                            lambda: ready_pods(real_cluster, ns, selector, count), scaled(60))
            record(f"keda: {name} pods creation -> Ready (s)", [realkube.pod_ready_seconds(p) for p in pods])
        wait_for(f"APIService {EXTERNAL_APISERVICE} Available", lambda: apiservice_available(real_cluster),
                 scaled(60))
        yield k
    finally:
        remove_bundles(cp, k.bundles)
        realkube.delete_namespace(cp, ns)
        k.prom.close()


def apiservice_available(cluster: realkube.RealCluster) -> bool:
    """True once the external metrics APIService is Available; else it raises with the aggregator's
    condition (wait_for reports the last one: why the aggregator cannot reach the adapter)."""
    conditions = cluster.get_json("apiservice", EXTERNAL_APISERVICE)["status"].get("conditions", [])
    available = next((c for c in conditions if c["type"] == "Available"), {})
    if available.get("status") != "True":
        endpoints = cluster.get_json("endpoints", "-A", "-l", ADAPTER)["items"]
        raise AssertionError(f"{available}; adapter endpoints: {[e.get('subsets') for e in endpoints]}")
    return True


def timed(what: str, check, timeout: float, since: float):
    """wait_for `check`, and the seconds from `since` (a time.monotonic()) until it held."""
    value = wait_for(what, check, timeout, interval=0.25)
    return value, round(time.monotonic() - since, 1)


def test_scaled_object_takes_real_pods_0_1_n_0(keda: Keda):
    started = time.monotonic()
    keda.cluster.apply(scaled_app_manifests(keda.ns, APP, keda.prom.url, keda.prom.query,
                                            max_replicas=MAX_REPLICAS, threshold=THRESHOLD))
    # Ready from the reconcile, Active=False from the first poll (before it: Unknown, as in KEDA)
    _, reconciled = timed("the ScaledObject Ready and not Active, its HPA named in its status", lambda: (
        keda.get("scaledobject", APP).get("status", {}).get("hpaName") == f"keda-hpa-{APP}"
        and [keda.conditions().get(c, {}).get("status") for c in ("Ready", "Active")] == ["True", "False"]),
        scaled(30), started)
    record("keda: ScaledObject applied -> Ready, Active=False (s)", reconciled)
    conditions = keda.conditions()
    assert (conditions["Ready"]["reason"], conditions["Active"]["status"], conditions["Active"]["reason"]) == \
        ("ScaledObjectReady", "False", "ScalerNotActive"), conditions
    # The CRD's printer columns (KEDA's, byte for byte) over the status promop writes
    columns = keda.columns()
    assert columns | {"AGE": ""} == {
        "NAME": APP, "SCALETARGETKIND": "apps/v1.Deployment", "SCALETARGETNAME": APP, "MIN": "0",
        "MAX": str(MAX_REPLICAS), "READY": "True", "ACTIVE": "False",
        "FALLBACK": conditions.get("Fallback", {}).get("status", ""),
        "PAUSED": conditions.get("Paused", {}).get("status", ""),
        "TRIGGERS": "prometheus", "AUTHENTICATIONS": "", "AGE": ""}, columns
    hpa = wait_for("the HPA keda-hpa-web", lambda: keda.get("hpa", f"keda-hpa-{APP}", check=False), scaled(30))
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, MAX_REPLICAS), hpa["spec"]
    assert [m["external"]["metric"]["name"] for m in hpa["spec"]["metrics"]] == ["s0-prometheus"]
    assert keda.replicas() == 0 and keda.app_pods() == []
    # Leader and standby both answer the HPA's metric (the Service may send its requests to either)
    wait_for("every autoscaler replica answering s0-prometheus with 0", keda.all_answer("0"), scaled(10))

    try:
        up_from_zero(keda)
        up_to_n(keda)
        down_to_zero(keda)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{keda.describe()}") from None

    # The pods asked the stand-in, not the host: every query came from an autoscaler pod.
    pod_ips = {p["status"].get("podIP") for p in keda.get("pods", "-l", AUTOSCALER)["items"]}
    assert keda.prom.asked_by() and set(keda.prom.asked_by()) <= pod_ips, (keda.prom.asked_by(), pod_ips)
    for pod in keda.get("pods", "-l", AUTOSCALER)["items"]:
        log = keda.kubectl("logs", pod["metadata"]["name"])
        assert "forbidden" not in log.lower(), log[-3000:]  # the bundle's RBAC is enough
    record("keda: 0 -> 1 -> N -> 0, whole test after setup (s)", round(time.monotonic() - started, 1))


def up_from_zero(keda: Keda) -> None:
    """Active (5 > activationThreshold 0): KEDA's scale loop takes the Deployment from 0 to 1."""
    since = time.monotonic()
    keda.prom.set("5")
    _, spec_s = timed("0 -> 1: replicas 1", lambda: keda.replicas() == 1, scaled(30), since)
    pods, ready_s = timed("0 -> 1: one pod Running and Ready",
                          lambda: ready_pods(keda.cluster, keda.ns, f"app={APP}", 1), scaled(60), since)
    record("keda: 0 -> 1, value set -> replicas 1; -> pod Ready (s)", [spec_s, ready_s])
    record("keda: app pod creation -> Ready (s)", [realkube.pod_ready_seconds(p) for p in pods])
    wait_for("Active=True", lambda: keda.conditions().get("Active", {}).get("status") == "True", scaled(15))
    assert keda.conditions()["Active"]["reason"] == "ScalerActive"
    columns = keda.columns()
    assert (columns["READY"], columns["ACTIVE"]) == ("True", "True"), columns
    assert keda.events("KEDAScaleTargetActivated") == [
        f"Scaled apps/v1.Deployment {keda.ns}/{APP} from 0 to 1, triggered by s0-prometheus"]


def up_to_n(keda: Keda) -> None:
    """35 against an AverageValue target of 10: kube-controller-manager's HPA wants 4 (its max)."""
    since = time.monotonic()
    keda.prom.set("35")
    _, spec_s = timed(f"1 -> {MAX_REPLICAS} by kube-controller-manager's HPA",
                      lambda: keda.replicas() == MAX_REPLICAS, scaled(60), since)
    _, ready_s = timed(f"{MAX_REPLICAS} pods Running and Ready",
                       lambda: ready_pods(keda.cluster, keda.ns, f"app={APP}", MAX_REPLICAS), scaled(60), since)
    record(f"keda: 1 -> {MAX_REPLICAS}, value set -> replicas; -> pods Ready (s)", [spec_s, ready_s])
    hpa = keda.get("hpa", f"keda-hpa-{APP}")
    conditions = {c["type"]: c for c in hpa["status"]["conditions"]}
    assert (conditions["ScalingActive"]["status"], conditions["ScalingActive"]["reason"]) == \
        ("True", "ValidMetricFound"), conditions
    current = hpa["status"]["currentMetrics"][0]["external"]
    assert current["metric"]["name"] == "s0-prometheus", current
    # What the HPA reads, as a user asks the aggregator for it: KEDA's value, `%.3f` as a Quantity
    raw = json.loads(keda.cluster.kubectl(
        "get", "--raw", f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{keda.ns}/s0-prometheus"
        f"?labelSelector=scaledobject.keda.sh%2Fname%3D{APP}").stdout)
    assert [(i["metricName"], i["value"]) for i in raw["items"]] == [("s0-prometheus", "35")], raw
    columns = keda.columns()
    assert (columns["READY"], columns["ACTIVE"]) == ("True", "True"), columns


def down_to_zero(keda: Keda) -> None:
    """Inactive: after cooldownPeriod the scale loop takes it to 0 and the pods go."""
    since = time.monotonic()
    keda.prom.set("0")
    _, spec_s = timed(f"{MAX_REPLICAS} -> 0: replicas 0", lambda: keda.replicas() == 0, scaled(60), since)
    _, gone_s = timed("every app pod gone", lambda: keda.app_pods() == [], scaled(60), since)
    record(f"keda: {MAX_REPLICAS} -> 0 (cooldownPeriod 5 s), value set -> replicas 0; -> pods gone (s)",
           [spec_s, gone_s])
    conditions = keda.conditions()
    assert (conditions["Ready"]["status"], conditions["Active"]["status"], conditions["Active"]["reason"]) == \
        ("True", "False", "ScalerNotActive"), conditions
    columns = keda.columns()
    assert (columns["READY"], columns["ACTIVE"]) == ("True", "False"), columns
    assert keda.events("KEDAScaleTargetDeactivated") == [
        f"Deactivated apps/v1.Deployment {keda.ns}/{APP} from {MAX_REPLICAS} to 0"]
    # KEDA tracks `health` only for a ScaledObject with a fallback (reference §fallback): none here
    status = keda.get("scaledobject", APP)["status"]
    assert not status.get("health") and status["triggersTypes"] == "prometheus", status
