"""Rolling updates on the real node: a new reloader image, and a changed Prometheus field.

Both are started together (each pod restart costs up to a minute on the kit's node) and checked
separately: every StatefulSet and the DaemonSet roll to the new reloader image, and Prometheus
`fast` also comes back with its new log level.
"""

from __future__ import annotations

import json
import subprocess
import time

import realkube
from realkube import KitError, http_json, wait_for

from deadlines import scaled

from .stack import (OPERATOR_NS, READY_BOUND_S, Workloads, pod_container_image, record,
                    wait_operator_leading)


def tag_image(source: str, target: str) -> None:
    """A second reference to the same image content (there is no registry to push a new build
    to); what rolls the pods is the reference in the operator's flag, which is what changes."""
    if target in realkube.containerd_images():
        return
    proc = subprocess.run(["ctr", "-n", "k8s.io", "images", "tag", source, target],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise KitError(f"ctr images tag {source} {target}: {proc.stderr.strip()}")


def set_operator_arg(cluster, prefix: str, value: str) -> None:
    """Edit the operator Deployment's argument starting with `prefix` (as `kubectl edit` would)."""
    deploy = cluster.get_json("deployment", "promop", "-n", OPERATOR_NS)
    args = deploy["spec"]["template"]["spec"]["containers"][0]["args"]
    index = next(i for i, a in enumerate(args) if a.startswith(prefix))
    patch = [{"op": "replace", "path": f"/spec/template/spec/containers/0/args/{index}",
              "value": value}]
    cluster.kubectl("patch", "deployment", "promop", "-n", OPERATOR_NS, "--type=json",
                    "-p", json.dumps(patch))


# A pod being deleted should be gone within seconds (Prometheus and the reloader stop on SIGTERM);
# a StatefulSet's rolling update waits for it. Longer means a container ignored SIGTERM and the pod
# waits out terminationGracePeriodSeconds (600 s for Prometheus).
TERMINATING_BOUND_S = 60.0


def stuck_terminating(cluster, ns: str) -> str | None:
    """What is wrong when a pod has been terminating too long (which container), else None."""
    now = time.time()
    for pod in cluster.get_json("pods", "-n", ns)["items"]:
        deleted = pod["metadata"].get("deletionTimestamp")
        if not deleted:
            continue
        since = now - realkube.parse_time(deleted) + pod["metadata"].get("deletionGracePeriodSeconds", 0)
        if since > TERMINATING_BOUND_S:
            running = [c["name"] for c in pod["status"].get("containerStatuses") or []
                       if "running" in c.get("state", {})]
            return (f"pod {pod['metadata']['name']} has been terminating for {since:.0f} s; still "
                    f"running: {running}. A container that ignores SIGTERM (a PID 1 without a "
                    f"handler, e.g. a reloader still starting) holds the rolling update for the "
                    f"grace period")
    return None


def test_reloader_image_and_prometheus_field_changes_roll_the_pods(real_cluster,
                                                                   workloads: Workloads):
    before = workloads.wait_ready()
    wait_operator_leading(real_cluster, timeout=scaled(120))
    new_image = f"{real_cluster.reloader_image}-rollout"
    tag_image(real_cluster.reloader_image, new_image)
    real_cluster.kubectl("patch", "prometheus", "fast", "-n", workloads.ns, "--type=merge",
                         "-p", json.dumps({"spec": {"logLevel": "debug"}}))
    set_operator_arg(real_cluster, "--config-reloader-image=", f"--config-reloader-image={new_image}")
    try:
        def rolled() -> dict | str | None:
            stuck = stuck_terminating(real_cluster, workloads.ns)
            if stuck:
                return stuck   # ends the wait: failed below, at once and saying why
            pods = workloads.pods()
            if len(pods) != len(before):
                return None
            for key, pod in pods.items():
                if pod["metadata"]["uid"] == before[key]["metadata"]["uid"] \
                        or pod_container_image(pod, "config-reloader") != new_image \
                        or not realkube.pod_is_ready(pod):
                    return None
            return pods
        try:
            pods = wait_for(rolled, scaled(READY_BOUND_S) * 2 + 120,
                            "every workload pod re-created with the new reloader image and Ready",
                            interval=1)
        except KitError as exc:
            raise KitError(f"{exc}\n{workloads.describe()}") from None
        assert not isinstance(pods, str), pods
        seconds = {k: round(realkube.pod_ready_seconds(p), 1) for k, p in pods.items()}
        record("rolled pods creation->Ready s", seconds)
        flags = http_json(workloads.prom_url("fast", "/api/v1/status/flags"))["data"]
        assert flags["log.level"] == "debug"
        assert http_json(workloads.prom_url("slow", "/api/v1/status/flags"))["data"]["log.level"] == "info"
        slow = {k: s for k, s in seconds.items() if s > READY_BOUND_S}
        assert not slow, f"rolled pods took longer than {READY_BOUND_S} s to be Ready: {slow}"
    finally:
        set_operator_arg(real_cluster, "--config-reloader-image=",
                         f"--config-reloader-image={real_cluster.reloader_image}")
