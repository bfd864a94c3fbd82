"""What the component tests (test_components*.py) put on the real node, beside promop's bundles.

No pytest here (a conftest-free helper, importable by any test module of the tier):
- `render_bundle`: `promop manifests --component C` as a user runs it, from this working tree;
- `point_at_prometheus`: the bundles name `http://prometheus-operated.<ns>.svc:9090`, which needs
  cluster DNS; the kit has none, so the tests put the Prometheus address there instead (the one
  edit a user of a DNS-less cluster makes);
- `prometheus_manifests`: a Prometheus pod (the kit's trixie image) that scrapes
  * the kubelet's cAdvisor endpoint, as kube-prometheus' `kubelet` job does (`job="kubelet"`,
    labels `namespace`/`pod`/`container`). The kit's kubelet listens on 127.0.0.1:10250 only and
    the apiserver's node proxy refuses loopback, so neither a pod-network Prometheus nor a scrape
    through the apiserver can reach it: this Prometheus runs with hostNetwork and scrapes
    127.0.0.1:10250 directly, and listens on the node's pod-bridge address (10.244.0.1) so pods
    reach it. On a real cluster the same job scrapes <node IP>:10250.
  * the pods of one namespace that have a container port named `metrics` (Kubernetes service
    discovery through the `kubernetes` Service), with `namespace` and `pod` labels;
- `load_app_manifests`: busybox pods that really export a gauge (`httpd` serving a file the test
  rewrites with `kubectl exec`) and can really use memory (a file in a memory-backed emptyDir is
  charged to the container's memory cgroup, so cAdvisor's working set rises).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import yaml

REPO = Path(__file__).resolve().parents[2]
BUSYBOX_IMAGE = "kube-node.local/busybox:1.35"
NODE_IP = "10.244.0.1"      # the kit's node address on the pod bridge kn0


def render_bundle(component: str, namespace: str, image: str, *extra: str) -> str:
    """`promop manifests --component <component>` rendered by this tree's promop."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-m", "promop", "manifests", "--component", component,
                          "--namespace", namespace, "--image", image, *extra],
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"promop manifests --component {component} failed: {out.stderr.strip()}")
    return out.stdout


def point_at(bundle: str, dns_url: str, url: str) -> str:
    """The bundle with the in-cluster DNS URL `dns_url` replaced by `url` (the kit has no DNS)."""
    if dns_url not in bundle:
        raise AssertionError(f"the bundle no longer names {dns_url}: update the tests")
    return bundle.replace(dns_url, url)


def point_at_prometheus(bundle: str, namespace: str, url: str) -> str:
    """The bundle with its in-cluster DNS name of Prometheus replaced by `url` (no DNS in the kit)."""
    return point_at(bundle, f"http://prometheus-operated.{namespace}.svc:9090", url)


def apply_apiservices_last(cluster, bundle: str, namespace: str, service: str, timeout: float) -> None:
    """`kubectl apply` of a bundle with APIServices, those last: once the host reaches the Service's
    own server through its ClusterIP.

    Why (the kit, not promop): the apiserver runs on the host, and until kube-proxy has written the
    new Service's rule, the host routes its ClusterIP like any address, out of the default route;
    this machine's gateway answers HTTPS there with a 404. The aggregator, which dials an APIService's
    Service as soon as it exists (availability check, discovery), keeps that connection and kept
    getting the 404 for minutes (APIService `FailedDiscoveryCheck ... 404`; an HPA's
    `FailedGetExternalMetric ... the server could not find the requested resource`). On a cluster the
    apiserver is not on a node with a route to the Service range, and the race does not arise."""
    docs = [d for d in yaml.safe_load_all(bundle) if d]
    cluster.apply(yaml.safe_dump_all([d for d in docs if d["kind"] != "APIService"], sort_keys=False))
    ip = cluster.get_json("service", service, "-n", namespace)["spec"]["clusterIP"]
    port = cluster.get_json("service", service, "-n", namespace)["spec"]["ports"][0]["port"]
    wait_for(f"{namespace}/{service}'s server answering at its ClusterIP {ip}:{port}",
             lambda: _answers_unauthenticated(f"https://{ip}:{port}/apis"), timeout)
    cluster.apply(yaml.safe_dump_all([d for d in docs if d["kind"] == "APIService"], sort_keys=False))


def _answers_unauthenticated(url: str) -> bool:
    """True when `url` gives an extension apiserver's own 401 Status (not a gateway's answer)."""
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        urllib.request.urlopen(url, timeout=3, context=context)  # noqa: S310 - test-only, local
    except urllib.error.HTTPError as exc:
        body = json.loads(exc.read() or b"{}")
        if exc.code == 401 and body.get("kind") == "Status":
            return True
        raise AssertionError(f"{url}: HTTP {exc.code} {body}") from None
    raise AssertionError(f"{url} answered an unauthenticated request")


def remove_bundles(cp, bundles: list[str]) -> None:
    """Delete what the bundles created, the last applied first.

    The adapter's APIServices are cluster-wide: left pointing at a deleted Service they would make
    discovery fail for the rest of the tier (namespace deletion, kubectl)."""
    for bundle in reversed(bundles):
        cp.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=bundle,
                   check=False, timeout=120)


def ready_pods(cluster, namespace: str, selector: str, count: int) -> list[dict] | None:
    """The pods matching `selector` (not being deleted) when exactly `count` exist and all are
    Running and Ready; else None (for wait_for)."""
    from realkube import pod_is_ready

    pods = [p for p in cluster.get_json("pods", "-n", namespace, "-l", selector)["items"]
            if not p["metadata"].get("deletionTimestamp")]
    return pods if len(pods) == count and all(pod_is_ready(p) for p in pods) else None


def free_host_port() -> int:
    """A TCP port nothing on this machine listens on now (for the host-network Prometheus)."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def prometheus_manifests(namespace: str, image: str, port: int) -> str:
    """ServiceAccount, RBAC for pod discovery, config and the host-network Prometheus pod."""
    config = {
        "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
        "scrape_configs": [
            {"job_name": "kubelet", "scrape_interval": "3s", "scheme": "https",
             "metrics_path": "/metrics/cadvisor", "tls_config": {"insecure_skip_verify": True},
             "static_configs": [{"targets": ["127.0.0.1:10250"]}]},
            {"job_name": "pods",
             "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [namespace]}}],
             "relabel_configs": [
                 {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": "metrics",
                  "action": "keep"},
                 {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                 {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"}]},
        ],
    }
    objs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prometheus", "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "prometheus-discovery", "namespace": namespace},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "prometheus-discovery", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "prometheus-discovery"},
         "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": namespace}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "prometheus-config", "namespace": namespace},
         "data": {"prometheus.yml": json.dumps(config, indent=1)}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "prometheus", "namespace": namespace, "labels": {"app": "prometheus"}},
         "spec": {
             "serviceAccountName": "prometheus", "hostNetwork": True,
             "containers": [{
                 "name": "prometheus", "image": image,
                 "args": ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus",
                          f"--web.listen-address={NODE_IP}:{port}"],
                 "readinessProbe": {"httpGet": {"host": NODE_IP, "path": "/-/ready", "port": port},
                                    "periodSeconds": 1},
                 "volumeMounts": [{"name": "config", "mountPath": "/etc/prometheus"},
                                  {"name": "data", "mountPath": "/prometheus"}]}],
             "volumes": [{"name": "config", "configMap": {"name": "prometheus-config"}},
                         {"name": "data", "emptyDir": {}}]}},
    ]
    return yaml.safe_dump_all(objs, sort_keys=False)


# The app: httpd serves /www/metrics (one gauge the test rewrites); /fill is memory-backed.
APP_SCRIPT = ("mkdir -p /www && echo \"app_load ${LOAD:-0}\" > /www/metrics && "
              "exec httpd -f -p 8080 -h /www")


def load_app_manifests(namespace: str, name: str, *, replicas: int = 1, memory_limit: str = "64Mi",
                       load: int = 0) -> str:
    """A Deployment of busybox pods exporting `app_load` on a port named `metrics`."""
    labels = {"app": name}
    dep = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{
                    "name": "app", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", APP_SCRIPT],
                    "env": [{"name": "LOAD", "value": str(load)}],
                    "ports": [{"name": "metrics", "containerPort": 8080}],
                    "readinessProbe": {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 1},
                    "resources": {"requests": {"cpu": "10m", "memory": memory_limit},
                                  "limits": {"memory": memory_limit}},
                    "volumeMounts": [{"name": "fill", "mountPath": "/fill"}]}],
                "volumes": [{"name": "fill", "emptyDir": {"medium": "Memory"}}]}}}}
    return yaml.safe_dump(dep, sort_keys=False)


def wait_for(what: str, check: Callable[[], object], timeout: float, interval: float = 0.5) -> object:
    """Poll `check` until it returns something truthy; fail naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            last = check()
        except Exception as e:  # noqa: BLE001 - "not yet" (kubectl failed, no answer); reported at the end
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last: {last!r}")
        time.sleep(interval)
