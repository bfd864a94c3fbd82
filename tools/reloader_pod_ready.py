"""Time a Prometheus pod from creation to Ready on a real node, as the operator would make it.

    PYTHONPATH=. python3 tools/reloader_pod_ready.py --kubeconfig K --reloader-image IMG [--cpu-limit 200m] [--name x]

Renders a Prometheus (no monitors) with promop's renderer, applies what its StatefulSet's pod
needs (config Secret, TLS assets, web config, rule ConfigMaps, a ServiceAccount) and creates ONE
POD from the StatefulSet's pod template (no StatefulSet controller in the way), with the
reloaders' resources from --cpu-limit. Prints JSON: seconds from the create request to Ready
(polled every 50 ms), the init container's run time, and the sidecar's first reload after its
start (from its own log timestamps, microseconds). Needs the kit's node running (the caller
holds /tmp/promop-node.lock) and the images imported.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime

from promop.render import RenderInputs, render
from promop.render.model import RenderOptions
from promop.render.reloader_container import ReloaderSettings

KUBECTL = "kubectl"


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", *args], input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def objects(name: str, ns: str, image: str, cpu_limit: str, prom_image: str) -> tuple[list[dict], dict]:
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": name, "namespace": ns, "uid": "00000000-0000-0000-0000-000000000001"},
            "spec": {"serviceMonitorSelector": {}, "ruleSelector": {}, "image": prom_image, "version": "v2.53.3"}}
    opts = RenderOptions(config_reloader_image=image, config_reloader=ReloaderSettings(cpu_limit=cpu_limit))
    result = render(RenderInputs(prometheus=prom, options=opts))
    deps = [result.config_secret, *result.tls_secrets, *result.rule_configmaps]
    if result.web_config_secret is not None:
        deps.append(result.web_config_secret)
    for obj in deps:
        obj["metadata"].pop("ownerReferences", None)
    sts = result.statefulsets[0]
    template = sts["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{sts['metadata']['name']}-0", "namespace": ns,
                        "labels": template["metadata"].get("labels", {})},
           "spec": template["spec"]}
    sa = pod["spec"].get("serviceAccountName") or "default"
    deps.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}})
    return deps, pod


def main() -> int:
    global KUBECTL
    p = argparse.ArgumentParser()
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--kubectl", default="kubectl")
    p.add_argument("--reloader-image", required=True)
    p.add_argument("--prometheus-image", default="quay.io/prometheus/prometheus:v2.53.3")
    p.add_argument("--cpu-limit", default=ReloaderSettings().cpu_limit)
    p.add_argument("--name", default="ready")
    p.add_argument("--namespace", default="default")
    p.add_argument("--timeout", type=float, default=180)
    p.add_argument("--startup-period", type=int, default=0,
                   help="override the Prometheus container's startupProbe periodSeconds (keeping its total duration), "
                        "e.g. 15 to see the Ready time with upstream's period (promop's default is 1)")
    a = p.parse_args()
    KUBECTL = a.kubectl
    deps, pod = objects(a.name, a.namespace, a.reloader_image, a.cpu_limit, a.prometheus_image)
    kubectl(a.kubeconfig, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": deps}))
    if a.startup_period:
        probe = pod["spec"]["containers"][0]["startupProbe"]
        total = probe["periodSeconds"] * probe["failureThreshold"]
        probe["periodSeconds"], probe["failureThreshold"] = a.startup_period, -(-total // a.startup_period)
    pod_name = pod["metadata"]["name"]
    started = time.monotonic()
    created_obj = json.loads(kubectl(a.kubeconfig, "create", "-f", "-", "-o", "json", stdin=json.dumps(pod)))
    created = _ts(created_obj["metadata"]["creationTimestamp"])
    ready = None
    while time.monotonic() - started < a.timeout:
        status = json.loads(kubectl(a.kubeconfig, "-n", a.namespace, "get", "pod", pod_name, "-o", "json"))["status"]
        if any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])):
            ready = time.monotonic() - started
            break
        time.sleep(0.05)
    out: dict = {"cpu_limit": a.cpu_limit, "reloader_image": a.reloader_image, "ready_seconds": ready,
                 "startup_probe_period": pod["spec"]["containers"][0]["startupProbe"]["periodSeconds"]}
    for s in status.get("containerStatuses", []):
        running = s.get("state", {}).get("running")
        if s["name"] == "prometheus" and running:
            out["prometheus_started_after_create_seconds"] = round(_ts(running["startedAt"]) - created, 1)
    init = next((s for s in status.get("initContainerStatuses", []) if s["name"] == "init-config-reloader"), None)
    term = (init or {}).get("state", {}).get("terminated")
    if term:
        out["init_container_seconds"] = _ts(term["finishedAt"]) - _ts(term["startedAt"])  # 1 s resolution
    logs = kubectl(a.kubeconfig, "-n", a.namespace, "logs", pod_name, "-c", "config-reloader")
    times = {}
    for line in logs.splitlines():
        fields = dict(part.split("=", 1) for part in line.split(" ") if "=" in part)
        msg = line.split('msg="', 1)[1].split('"', 1)[0] if 'msg="' in line else fields.get("msg", "")
        if msg in ("starting", "reload triggered") and msg not in times:
            times[msg] = _ts(fields["ts"])
    if len(times) == 2:
        out["sidecar_first_reload_after_start_seconds"] = round(times["reload triggered"] - times["starting"], 3)
    init_logs = kubectl(a.kubeconfig, "-n", a.namespace, "logs", pod_name, "-c", "init-config-reloader")
    out["init_log_lines"] = len(init_logs.splitlines())
    kubectl(a.kubeconfig, "-n", a.namespace, "delete", "pod", pod_name, "--wait=false")
    print(json.dumps(out))
    return 0 if ready is not None else 1


if __name__ == "__main__":
    sys.exit(main())
