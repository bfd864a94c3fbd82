"""The agent's pods: a StatefulSet per shard (`prom-agent-<name>[-shard-N]`) or one DaemonSet.

Built on the Prometheus StatefulSet builder (render/statefulset.py) with upstream's agent
differences: the agent's labels and selector (`app.kubernetes.io/name: prometheus-agent`,
mode `agent`, no `prometheus` label), the governing Service `prometheus-agent-operated`,
no rule ConfigMaps, and the agent's flags (`--agent` on Prometheus 3, `--enable-feature=agent`
on 2.x, `--storage.agent.*` instead of `--storage.tsdb.*`, no query/rules/console flags).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions
from promop.render.shards import shard_count
from promop.render.statefulset import (STORAGE_DIR, build_statefulset, prometheus_args, statefulset_annotations,
                                       statefulset_name, topology_spread_constraints)
from promop.render.versions import Version, VersionError

GOVERNING_SERVICE_NAME = "prometheus-agent-operated"
APP_NAME = "prometheus-agent"
MODE_LABEL = "operator.prometheus.io/mode"
# server flags an agent does not take (it has no TSDB blocks, rules, queries or console)
_SERVER_ONLY_FLAGS = ("--web.console.", "--storage.tsdb.", "--no-storage.tsdb.", "--rules.", "--query.",
                      "--web.enable-admin-api")


def _version(spec: Mapping[str, Any]) -> Version:
    try:
        return Version(spec.get("version"))
    except VersionError:
        return Version(None)


def selector_labels(agent: Mapping[str, Any], shard: int | None) -> dict[str, str]:
    """The pod selector: no shard label in DaemonSet mode (shard None)."""
    name = agent["metadata"]["name"]
    out = {
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": "prometheus-operator",
        "app.kubernetes.io/name": APP_NAME,
        "operator.prometheus.io/name": name,
    }
    if shard is not None:
        out["operator.prometheus.io/shard"] = str(shard)
    return out


def _is_v3(version: Version) -> bool:
    return version.major >= 3


def agent_args(spec: Mapping[str, Any]) -> list[str]:
    """The prometheus container's flags in agent mode, then spec.additionalArgs (managed ones skipped)."""
    version = _version(spec)
    server = prometheus_args({**spec, "additionalArgs": []}, version)
    args = [a for a in server if not a.startswith(_SERVER_ONLY_FLAGS)]
    if _is_v3(version):
        args.append("--agent")
    else:
        features = [a for a in args if a.startswith("--enable-feature=")]
        if features:
            i = args.index(features[0])
            args[i] = f"{features[0]},agent"
        else:
            args.append("--enable-feature=agent")
    args.append(f"--storage.agent.path={STORAGE_DIR}")
    if spec.get("walCompression") is not None:
        args.append("--storage.agent.wal-compression" if spec["walCompression"]
                    else "--no-storage.agent.wal-compression")
    web = [a for a in args if a.startswith("--web.config.file=")]  # upstream keeps it last
    args = [a for a in args if a not in web] + web
    managed = {a.split("=", 1)[0].lstrip("-").removeprefix("no-") for a in args}
    for extra in spec.get("additionalArgs") or ():
        name = str(extra.get("name", "")).lstrip("-")
        if name and name.removeprefix("no-") not in managed:
            value = extra.get("value")
            args.append(f"--{name}={value}" if value not in (None, "") else f"--{name}")
    return args


def conflicting_agent_args(spec: Mapping[str, Any]) -> list[str]:
    """Names in spec.additionalArgs that the operator already sets in agent mode (agent_args skips them)."""
    managed = {a.split("=", 1)[0].lstrip("-").removeprefix("no-") for a in agent_args({**spec, "additionalArgs": []})}
    return [str(a.get("name")) for a in spec.get("additionalArgs") or ()
            if isinstance(a, Mapping) and str(a.get("name", "")).lstrip("-").removeprefix("no-") in managed]


def _relabel_pod(obj: dict, agent: Mapping[str, Any], options: RenderOptions, name: str, shard: int | None,
                 annotations: Mapping[str, str]) -> dict:
    """Turn a Prometheus StatefulSet into the agent's: labels, selector, flags."""
    md = agent["metadata"]
    spec = agent.get("spec") or {}
    sel = selector_labels(agent, shard)
    labels = {**(md.get("labels") or {}), MODE_LABEL: "agent", **sel}
    obj["metadata"] = managed_metadata(agent, name, options, labels=labels, annotations=annotations)
    template = obj["spec"]["template"]
    pod_labels = {k: v for k, v in template["metadata"]["labels"].items()
                  if k not in ("prometheus", "operator.prometheus.io/shard")}
    pod_labels.update(sel)
    template["metadata"]["labels"] = dict(sorted(pod_labels.items()))
    obj["spec"]["selector"] = {"matchLabels": dict(sorted(sel.items()))}
    spread = topology_spread_constraints(spec, sel)  # with the agent's selector labels, not the server's
    if spread:
        template["spec"]["topologySpreadConstraints"] = spread
    containers = template["spec"]["containers"]
    for c in containers:
        if c.get("name") == "prometheus":
            c["args"] = agent_args(spec)
    return obj


def build_agent_statefulsets(agent: dict, options: RenderOptions, tls_secret_names: list[str],
                             input_hash: str) -> list[dict]:
    """One StatefulSet per shard, as upstream's agent makeStatefulSet."""
    spec = agent.get("spec") or {}
    out = []
    for shard in range(shard_count(spec)):
        sts = build_statefulset(agent, options, [], tls_secret_names, input_hash, shard)
        _relabel_pod(sts, agent, options, statefulset_name(agent, shard), shard,
                     statefulset_annotations(agent["metadata"], input_hash))
        sts["spec"]["serviceName"] = spec.get("serviceName") or GOVERNING_SERVICE_NAME
        out.append(sts)
    return out


NODE_NAME_ENV = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}


def build_agent_daemonset(agent: dict, options: RenderOptions, tls_secret_names: list[str]) -> dict:
    """The DaemonSet `prom-agent-<name>`: one agent per node; the reloaders get NODE_NAME to substitute
    `$(NODE_NAME)` in the config's node filter. No shard label, no input-hash annotation (upstream)."""
    spec = agent.get("spec") or {}
    sts = build_statefulset(agent, options, [], tls_secret_names, "", 0)
    annotations = {k: v for k, v in (agent["metadata"].get("annotations") or {}).items()
                   if not k.startswith("kubectl.kubernetes.io/")}
    _relabel_pod(sts, agent, options, prefixed_name(agent), None, annotations)
    pod = sts["spec"]["template"]
    for c in [*pod["spec"]["containers"], *pod["spec"].get("initContainers", [])]:
        if c.get("name") in ("config-reloader", "init-config-reloader"):
            c["env"] = [e for e in c.get("env", []) if e.get("name") != "SHARD"] + [copy.deepcopy(NODE_NAME_ENV)]
    ds_spec: dict = {"selector": sts["spec"]["selector"], "template": pod}
    if spec.get("minReadySeconds") is not None:
        ds_spec["minReadySeconds"] = spec["minReadySeconds"]
    md = sts["metadata"]
    if not annotations:
        md.pop("annotations", None)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": md, "spec": ds_spec}


def build_agent_service(agent: Mapping[str, Any], options: RenderOptions, service: dict) -> dict:
    """The governing Service, from the Prometheus one: `prometheus-agent-operated` selecting agent pods."""
    service = copy.deepcopy(service)
    service["metadata"]["name"] = GOVERNING_SERVICE_NAME
    service["spec"]["selector"] = {"app.kubernetes.io/name": APP_NAME}
    return service
