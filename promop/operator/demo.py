"""Helpers of `promop demo`: apply the examples, wait for the first sync, decode and summarise."""

from __future__ import annotations

import base64
import gzip
import time
from pathlib import Path
import threading

from promop.kube.client import KubeClient
from promop.kube.errors import NotFound
from promop.kube.resources import SECRETS
from promop.operator.app import Operator
from promop.operator.install import apply_document, load_documents

CONFIG_KEY = "prometheus.yaml.gz"


def apply_examples(client: KubeClient, examples: Path) -> list[str]:
    """Apply every document in `examples` (Namespaces first); returns `Kind ns/name` per object."""
    docs = load_documents([examples])
    docs.sort(key=lambda d: d.get("kind") != "Namespace")
    out = []
    for doc in docs:
        apply_document(client, doc)
        md = doc.get("metadata") or {}
        out.append(f"{doc['kind']} {md.get('namespace', '')}/{md['name']}".replace(" /", " "))
    return out


def first_sync_done(operator: Operator) -> bool:
    """Every known Prometheus was synced at least once and the queue is idle."""
    ctl = operator.controller
    if ctl is None or not operator.synced.is_set():
        return False
    keys = ctl.prometheuses.store.keys()
    done = all(k in ctl.syncer.last_report for k in keys)
    others = all(c.idle() for c in operator.controllers[1:] if hasattr(c, "idle"))  # the Alertmanager controller
    return done and others and len(ctl.queue) == 0 and ctl.queue.processing() == 0 and ctl.reporter.idle()


def wait_for_first_sync(operator: Operator, timeout: float, stop: threading.Event | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if first_sync_done(operator):
            return True
        if stop is not None and stop.wait(0.05):
            return False
        if stop is None:
            time.sleep(0.05)
    return False


def decode_config(secret: dict) -> str:
    """The prometheus.yaml a config Secret carries (gzip, base64)."""
    raw = base64.b64decode((secret.get("data") or {}).get(CONFIG_KEY, ""))
    return gzip.decompress(raw).decode() if raw else ""


class ConfigFiles:
    """The decoded prometheus.yaml of each Prometheus, kept current: `refresh` rewrites the files
    whose config Secret changed (the operator's metadata cache says which, by resourceVersion)."""

    def __init__(self, client: KubeClient, operator: Operator, out_dir: Path) -> None:
        self.client = client
        self.operator = operator
        self.out_dir = out_dir
        self._versions: dict[str, str] = {}

    def refresh(self, changed_only: bool = False) -> dict[str, Path]:
        """Rewrite what changed (everything unless `changed_only`); key -> path of each written file."""
        ctl = self.operator.controller
        if ctl is None:
            return {}
        written = {}
        for key in sorted(ctl.prometheuses.store.keys()):
            ns, _, name = key.partition("/")
            meta = ctl.secrets.store.get(f"{ns}/prometheus-{name}")
            version = ((meta or {}).get("metadata") or {}).get("resourceVersion", "")
            if changed_only and (not version or self._versions.get(key) == version):
                continue
            try:
                secret = self.client.get(SECRETS, f"prometheus-{name}", ns)
            except NotFound:
                continue
            path = self.out_dir / f"{ns}_{name}_prometheus.yaml"
            tmp = path.with_suffix(".yaml.tmp")
            tmp.write_text(decode_config(secret), encoding="utf-8")
            tmp.replace(path)  # readers never see a half-written file
            self._versions[key] = (secret.get("metadata") or {}).get("resourceVersion", "")
            written[key] = path
        return written


def write_configs(client: KubeClient, operator: Operator, out_dir: Path) -> dict[str, Path]:
    """Decode each Prometheus's config Secret into `<ns>_<name>_prometheus.yaml`; key -> path."""
    assert operator.controller is not None
    written = {}
    for key in sorted(operator.controller.prometheuses.store.keys()):
        ns, _, name = key.partition("/")
        try:
            secret = client.get(SECRETS, f"prometheus-{name}", ns)
        except NotFound:
            continue
        path = out_dir / f"{ns}_{name}_prometheus.yaml"
        path.write_text(decode_config(secret), encoding="utf-8")
        written[key] = path
    from promop.operator.alertmanager.demo import write_configs as write_alertmanager_configs  # hook

    written.update(write_alertmanager_configs(client, operator, out_dir))
    return written


def summary(operator: Operator, written: dict[str, Path]) -> str:
    """A short human summary: per Prometheus what was selected, rejected (and why), and written."""
    assert operator.controller is not None
    lines = []
    for key, result in sorted(operator.controller.syncer.last_result.items()):
        lines.append(f"\nPrometheus {key}:")
        for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule"):
            selected = sum(1 for d in result.selection if d.kind == kind and d.selected)
            accepted = len(result.accepted(kind))
            lines.append(f"  {kind + 's':<16} selected {selected:>3}, accepted {accepted:>3}")
        jobs = sum(len(j) for j in result.jobs.values())
        lines.append(f"  scrape jobs      {jobs}")
        for p in result.rejected:
            lines.append(f"  rejected: {p}")
        if result.warnings:
            lines.append(f"  warnings: {len(result.warnings)} (unsupported fields; see Events)")
        objs = ", ".join(f"{o['kind']} {o['metadata']['name']}" for o in result.objects())
        lines.append(f"  objects: {objs}")
        if key in written:
            lines.append(f"  decoded prometheus.yaml: {written[key]}")
    from promop.operator.alertmanager.demo import summary as alertmanager_summary  # hook

    lines += alertmanager_summary(operator, written)
    return "\n".join(lines)
