"""The top-level Prometheus config, its YAML text and the gzipped config Secret.

Top-level order is upstream's: global, runtime, rule_files, scrape_configs,
storage, alerting, remote_write. The YAML text is assembled from per-job
fragments dumped separately (so RenderCache can reuse them); this gives the
same bytes as dumping the whole dict at once (tested).
"""

from __future__ import annotations

import base64
import gzip
from typing import Any, Mapping, Sequence

import yaml

from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions

CONFIG_KEY = "prometheus.yaml.gz"
RULES_DIR = "/etc/prometheus/rules"

_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
_RESOLVED_MAX = 200_000


class ConfigDumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """CSafeDumper without anchors/aliases (configs are plain trees), with memoised tag resolution.

    The emitter asks the (pure Python) resolver twice per scalar whether a
    plain string would read back as another type; configs repeat the same
    strings thousands of times, so the answers are memoised. Output is
    unchanged (tested against a plain CSafeDumper dump).
    """

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is not yaml.ScalarNode or not isinstance(value, str):
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = _RESOLVED.get(key)
        if tag is None:
            if len(_RESOLVED) >= _RESOLVED_MAX:
                _RESOLVED.clear()
            tag = _RESOLVED[key] = super().resolve(kind, value, implicit)
        return tag


def dump(data: Any) -> str:
    """YAML text as the renderer writes it everywhere (block style, insertion order)."""
    return yaml.dump(data, Dumper=ConfigDumper, default_flow_style=False, sort_keys=False, allow_unicode=True)


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
