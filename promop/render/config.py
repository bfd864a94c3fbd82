"""The top-level Prometheus config, its YAML text and the gzipped config Secret.

Top-level order is upstream's: global, runtime, rule_files, scrape_configs,
storage, alerting, remote_write. The YAML text is assembled from per-job
fragments dumped separately (so RenderCache can reuse them); this gives the
same bytes as dumping the whole dict at once (tested).
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping, Sequence
from typing import Any

from promop.render.emit import emit
from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions

CONFIG_KEY = "prometheus.yaml.gz"
RULES_DIR = "/etc/prometheus/rules"


def dump(data: Any) -> str:
    """YAML text as the renderer writes it everywhere (block style, insertion order; promop.render.emit)."""
    return emit(data)


def dump_job(job: Mapping[str, Any]) -> str:
    """One scrape job as a `- job_name: ...` item, ready to concatenate under `scrape_configs:`."""
    return dump([job])


def rule_files(rule_configmap_names: Sequence[str]) -> list[str]:
    return [f"{RULES_DIR}/{name}/*.yaml" for name in rule_configmap_names]


def assemble(head: Mapping[str, Any], job_texts: Sequence[str], tail: Mapping[str, Any]) -> str:
    """Config text from the head (global, runtime, rule_files), dumped jobs and the tail."""
    parts = [dump(dict(head)) if head else ""]
    parts.append("scrape_configs:\n" + "".join(job_texts) if job_texts else "scrape_configs: []\n")
    if tail:
        parts.append(dump(dict(tail)))
    return "".join(parts)


def compress(text: str) -> bytes:
    """gzip with mtime 0, so equal configs give equal bytes; an empty config gives empty bytes."""
    if not text:
        return b""
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def config_secret(prometheus: Mapping[str, Any], options: RenderOptions, gz: bytes | None) -> dict:
    """Secret `prometheus-<name>` with key prometheus.yaml.gz (no data at all when unmanaged)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": managed_metadata(prometheus, prefixed_name(prometheus), options),
        "data": {},
    }
    if gz is not None:
        secret["data"][CONFIG_KEY] = base64.b64encode(gz).decode("ascii")
    return secret
