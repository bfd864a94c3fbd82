"""Helpers for the renderer tests: object builders and promtool. Test data lives in testdata/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

TESTDATA = Path(__file__).parent / "testdata"
PROMTOOL = "/usr/bin/promtool"
PROMTOOL_VERSION = "v2.42.0"  # Debian's promtool: render with this spec.version before checking


def promtool_path() -> str:
    """The promtool binary; skip (or fail under CI) when it is missing."""
    path = PROMTOOL if os.path.exists(PROMTOOL) else shutil.which("promtool")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("promtool is required under CI (apt-get install prometheus)")
        pytest.skip("promtool not installed (apt-get install -y --no-install-recommends prometheus)")
    return path


def run_promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([promtool_path(), *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def prometheus_obj(name: str = "k8s", namespace: str = "monitoring", **spec) -> dict:
    """A Prometheus selecting every ServiceMonitor/PodMonitor/PrometheusRule in all namespaces."""
    base = {
        "version": PROMTOOL_VERSION,
        "serviceMonitorSelector": {},
        "serviceMonitorNamespaceSelector": {},
        "podMonitorSelector": {},
        "podMonitorNamespaceSelector": {},
        "ruleSelector": {},
        "ruleNamespaceSelector": {},
    }
    base.update(spec)
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": base,
    }


def service_monitor(name: str, namespace: str = "monitoring", labels: dict | None = None, **spec) -> dict:
    spec.setdefault("selector", {"matchLabels": {"app": name}})
    spec.setdefault("endpoints", [{"port": "web"}])
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def pod_monitor(name: str, namespace: str = "monitoring", labels: dict | None = None, **spec) -> dict:
    spec.setdefault("selector", {"matchLabels": {"app": name}})
    spec.setdefault("podMetricsEndpoints", [{"port": "metrics"}])
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def secret(name: str, namespace: str = "monitoring", **string_data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "stringData": dict(string_data)}


def by_key(objs) -> dict:
    return {((o["metadata"].get("namespace") or ""), o["metadata"]["name"]): o for o in objs}


def load_yaml_dir(path: Path) -> list[dict]:
    docs = []
    for f in sorted(path.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(f.read_text()) if d]
    return docs


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# File-path keys in a Prometheus config that promtool checks for existence.
_FILE_KEYS = ("ca_file", "cert_file", "key_file", "bearer_token_file", "credentials_file", "password_file")


def _walk_files(node, found: set[str]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k in _FILE_KEYS and isinstance(v, str):
                found.add(v)
            else:
                _walk_files(v, found)
    elif isinstance(node, list):
        for item in node:
            _walk_files(item, found)


def lay_out(result, root: Path, pod: str = "prometheus-k8s-0", shard: str = "0") -> Path:
    """Write a RenderResult under `root` the way the StatefulSet mounts it; returns the config path.

    /etc/prometheus/... becomes root/etc/prometheus/...: the env-substituted
    config in config_out/, rule ConfigMaps under rules/<cm>/, TLS asset
    Secrets under certs/. Other absolute files a config names (the service
    account token, user-mounted files) are created empty, as Kubernetes would
    mount them; files under /etc/prometheus/certs must come from our Secrets.
    """
    import base64

    etc = root / "etc" / "prometheus"
    for cm in result.rule_configmaps:
        d = etc / "rules" / cm["metadata"]["name"]
        d.mkdir(parents=True, exist_ok=True)
        for key, content in (cm.get("data") or {}).items():
            (d / key).write_text(content)
    certs = etc / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    for s in result.tls_secrets:
        for key, value in (s.get("data") or {}).items():
            (certs / key).write_bytes(base64.b64decode(value))
    text = result.config_text.replace("$(POD_NAME)", pod).replace("$(SHARD)", shard)
    files: set[str] = set()
    _walk_files(yaml.load(text, Loader=_Loader), files)
    for f in files:
        if f.startswith("/") and not f.startswith("/etc/prometheus/certs/"):
            target = root / f.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    text = text.replace("/etc/prometheus/", f"{etc}/").replace(" /var/", f" {root}/var/")
    text = without_kubernetes_sd(text)
    out = etc / "config_out" / "prometheus.env.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


def promtool_check_config(*configs: Path) -> subprocess.CompletedProcess:
    return run_promtool("check", "config", *(str(c) for c in configs))


# Debian's prometheus/promtool 2.42 (+ds) is built WITHOUT Kubernetes service
# discovery: it rejects `kubernetes_sd_configs` as an unknown field. So the test
# harness checks those blocks against Prometheus 2.42's schema itself and swaps
# them for dns_sd_configs, letting promtool check everything else.
_K8S_SD_KEYS = {
    "role", "api_server", "namespaces", "selectors", "attach_metadata", "kubeconfig_file",
    "basic_auth", "authorization", "oauth2", "bearer_token", "bearer_token_file", "tls_config",
    "proxy_url", "no_proxy", "proxy_from_environment", "proxy_connect_header", "follow_redirects", "enable_http2",
}
_K8S_ROLES = {"endpoints", "endpointslice", "pod", "service", "node", "ingress"}
_SELECTOR_ROLES = {
    "endpoints": {"endpoints", "service", "pod"},
    "endpointslice": {"endpointslice", "service", "pod"},
    "pod": {"pod"},
}


def check_kubernetes_sd(sd: dict) -> None:
    """Raise AssertionError if Prometheus 2.42 would refuse this kubernetes_sd_config."""
    assert isinstance(sd, dict), sd
    unknown = set(sd) - _K8S_SD_KEYS
    assert not unknown, f"unknown kubernetes_sd_config keys {unknown}"
    assert sd.get("role") in _K8S_ROLES, sd
    ns = sd.get("namespaces")
    if ns is not None:
        assert set(ns) <= {"names", "own_namespace"}, ns
        assert all(isinstance(n, str) and n for n in ns.get("names") or []), ns
    for sel in sd.get("selectors") or []:
        assert set(sel) <= {"role", "label", "field"}, sel
        assert sel["role"] in _SELECTOR_ROLES.get(sd["role"], {sd["role"]}), (sd["role"], sel)
    if "attach_metadata" in sd:
        assert set(sd["attach_metadata"]) <= {"node"}, sd
    if "api_server" in sd:
        assert isinstance(sd["api_server"], str) and sd["api_server"], sd


def without_kubernetes_sd(text: str) -> str:
    """The config with every kubernetes_sd_configs checked and replaced by a DNS SD config."""
    config = yaml.load(text, Loader=_Loader)
    holders = list(config.get("scrape_configs") or [])
    holders += list((config.get("alerting") or {}).get("alertmanagers") or [])
    for holder in holders:
        sds = holder.pop("kubernetes_sd_configs", None)
        if sds is None:
            continue
        for sd in sds:
            check_kubernetes_sd(sd)
        # DNS SD: promtool does not apply relabeling to it (it would to static targets)
        holder.setdefault("dns_sd_configs", []).append({"names": ["targets.example.com"], "type": "A", "port": 9090})
    return yaml.dump(config, Dumper=_Dumper, sort_keys=False)
