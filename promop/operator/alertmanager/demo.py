"""The Alertmanager part of `promop demo`: decoded alertmanager.yaml files and a summary."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path
from typing import Any

from promop.kube.errors import NotFound
from promop.kube.resources import SECRETS


def _controller(operator: Any):
    from promop.operator.alertmanager.controller import AlertmanagerController

    return next((c for c in getattr(operator, "controllers", []) if isinstance(c, AlertmanagerController)), None)


def write_configs(client: Any, operator: Any, out_dir: Path) -> dict[str, Path]:
    """`<ns>_<name>_alertmanager.yaml` per Alertmanager; key `Alertmanager <ns>/<name>` -> path."""
    ctl = _controller(operator)
    written: dict[str, Path] = {}
    for key in sorted(ctl.alertmanagers.store.keys()) if ctl else []:
        ns, _, name = key.partition("/")
        try:
            secret = client.get(SECRETS, f"alertmanager-{name}-generated", ns)
        except NotFound:
            continue
        raw = base64.b64decode((secret.get("data") or {}).get("alertmanager.yaml.gz", ""))
        path = out_dir / f"{ns}_{name}_alertmanager.yaml"
        path.write_text(gzip.decompress(raw).decode() if raw else "", encoding="utf-8")
        written[f"Alertmanager {key}"] = path
    return written


def summary(operator: Any, written: dict[str, Path]) -> list[str]:
    ctl = _controller(operator)
    if ctl is None:
        return ["\nAlertmanager controller: not running (its CRDs are not installed)"]
    lines = []
    for key, result in sorted(ctl.syncer.last_result.items()):
        lines.append(f"\nAlertmanager {key}:")
        if result.fatal is not None:
            lines.append(f"  no configuration generated: {result.fatal}")
        selected = sum(1 for d in result.selection if d.selected)
        lines.append(f"  AlertmanagerConfigs selected {selected:>3}, accepted {len(result.accepted()):>3}")
        cfg = result.config or {}
        lines.append(f"  receivers {len(cfg.get('receivers') or [])}, routes "
                     f"{len((cfg.get('route') or {}).get('routes') or [])}, inhibit rules {len(cfg.get('inhibit_rules') or [])}")
        lines += [f"  rejected: {p}" for p in result.rejected]
        objs = ", ".join(f"{o['kind']} {o['metadata']['name']}" for o in result.objects())
        lines.append(f"  objects: {objs}")
        path = written.get(f"Alertmanager {key}")
        if path:
            lines.append(f"  decoded alertmanager.yaml: {path}")
    return lines
