"""A tiny stand-in renderer for controller plumbing tests (the real one is tested end to end).

It selects ServiceMonitors with the Prometheus's serviceMonitorSelector in its
own namespace, and renders a config Secret (one job per monitor) and one
StatefulSet per shard, with the same metadata helpers the real renderer uses.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json

import yaml

from promop.labelselector import parse_selector
from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import Decision, Problem, RenderResult


def fake_references(inputs, cache=None) -> set:
    return set()


def fake_render(inputs, cache=None) -> RenderResult:
    prom = inputs.prometheus
    md, spec = prom["metadata"], prom.get("spec") or {}
    sel = parse_selector(spec.get("serviceMonitorSelector"))
    selection, rejected, jobs = [], [], {}
    for sm in inputs.service_monitors:
        smd = sm["metadata"]
        if smd["namespace"] != md["namespace"]:
            continue
        ok = sel.matches(smd.get("labels") or {})
        selection.append(Decision("ServiceMonitor", smd["namespace"], smd["name"], ok, "" if ok else "no match"))
        if ok and (sm.get("spec") or {}).get("invalid"):
            rejected.append(Problem("ServiceMonitor", smd["namespace"], smd["name"], "spec.invalid", "is set"))
        elif ok:
            jobs[("ServiceMonitor", smd["namespace"], smd["name"])] = [f"serviceMonitor/{smd['namespace']}/{smd['name']}/0"]
    config = {"scrape_configs": [{"job_name": j} for js in jobs.values() for j in js]}
    data = base64.b64encode(gzip.compress(yaml.safe_dump(config).encode(), mtime=0)).decode()
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": managed_metadata(prom, prefixed_name(prom), inputs.options), "data": {"prometheus.yaml.gz": data}}
    shards = max(1, int(spec.get("shards") or 1))
    h = hashlib.sha256(json.dumps([spec, md.get("labels"), md.get("generation")], sort_keys=True, default=str).encode()).hexdigest()[:16]
    stss = []
    for shard in range(shards):
        name = prefixed_name(prom) + (f"-shard-{shard}" if shard else "")
        labels = {"operator.prometheus.io/name": md["name"], "operator.prometheus.io/shard": str(shard),
                  "operator.prometheus.io/mode": "server", "app.kubernetes.io/name": "prometheus"}
        stsmd = managed_metadata(prom, name, inputs.options, labels=labels,
                                 annotations={"prometheus-operator-input-hash": h})
        stss.append({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": stsmd,
                     "spec": {"replicas": spec.get("replicas", 1), "serviceName": "prometheus-operated",
                              "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels},
                                           "spec": {"containers": [{"name": "prometheus", "image": spec.get("image", "prom")}]}}}})
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "prometheus-operated", "namespace": md["namespace"]},
               "spec": {"clusterIP": "None", "ports": [{"name": "web", "port": 9090, "targetPort": "web"}],
                        "selector": {"app.kubernetes.io/name": "prometheus"}}}
    return RenderResult(config=config, config_secret=secret, tls_secrets=[], rule_configmaps=[], service=service,
                        statefulsets=stss, selection=selection, rejected=rejected, warnings=[], jobs=jobs)


def decode(secret: dict) -> dict:
    return yaml.safe_load(gzip.decompress(base64.b64decode(secret["data"]["prometheus.yaml.gz"])))
