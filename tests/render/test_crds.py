"""crds/: compatible with upstream's CRDs, small enough for client-side apply, covering what we read."""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from promop.render.unsupported import ALL, SUPPORTED

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"
UPSTREAM = ROOT.parent / "shared" / "reference" / "upstream-crds"
FILES = {
    "Prometheus": "monitoring.coreos.com_prometheuses.yaml",
    "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
    "PodMonitor": "monitoring.coreos.com_podmonitors.yaml",
    "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
}
SHORT_NAMES = {"Prometheus": "prom", "ServiceMonitor": "smon", "PodMonitor": "pmon", "PrometheusRule": "promrule"}
LIMIT = 256 * 1024


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=_Loader)


def ours(kind: str) -> dict:
    return copy.deepcopy(_load(CRDS / FILES[kind]))


def upstream(kind: str) -> dict:
    path = UPSTREAM / FILES[kind]
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not checked out)")
    return copy.deepcopy(_load(path))


def schema(crd: dict) -> dict:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("kind", FILES)
def test_small_enough_for_client_side_apply(kind):
    text = (CRDS / FILES[kind]).read_text()
    assert len(text.encode()) < LIMIT
    # kubectl stores the object as JSON in the last-applied-configuration annotation (limit 256 KiB)
    assert len(json.dumps(yaml.safe_load(text), separators=(",", ":")).encode()) < LIMIT


@pytest.mark.parametrize("kind", FILES)
def test_names_and_subresources_match_upstream(kind):
    mine, theirs = ours(kind), upstream(kind)
    assert mine["metadata"]["name"] == theirs["metadata"]["name"]
    assert mine["spec"]["group"] == theirs["spec"]["group"] == "monitoring.coreos.com"
    assert mine["spec"]["names"] == theirs["spec"]["names"]
    assert mine["spec"]["names"]["shortNames"] == [SHORT_NAMES[kind]]
    assert mine["spec"]["names"]["categories"] == ["prometheus-operator"]
    assert mine["spec"]["scope"] == theirs["spec"]["scope"] == "Namespaced"
    for a, b in zip(mine["spec"]["versions"], theirs["spec"]["versions"], strict=True):
        assert (a["name"], a["served"], a["storage"]) == (b["name"], b["served"], b["storage"]) == ("v1", True, True)
        assert a["subresources"] == b["subresources"]
        assert a.get("additionalPrinterColumns") == b.get("additionalPrinterColumns")


def test_prometheus_scale_subresource():
    scale = ours("Prometheus")["spec"]["versions"][0]["subresources"]["scale"]
    assert scale == {"specReplicasPath": ".spec.shards", "statusReplicasPath": ".status.shards",
                     "labelSelectorPath": ".status.selector"}


def _resolve(node: dict, path: list[str]) -> dict | None:
    """The schema node at `path` (list items entered automatically), or the preserve-unknown ancestor."""
    for part in path:
        while node.get("type") == "array" and "items" in node:
            node = node["items"]
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return node
        props = node.get("properties") or {}
        if part not in props:
            return None
        node = props[part]
    return node


def _supported_paths(tree, prefix=()):
    for key, sub in tree.items():
        yield (*prefix, key)
        if sub is not ALL:
            yield from _supported_paths(sub, (*prefix, key))


@pytest.mark.parametrize("kind", FILES)
def test_every_field_we_read_is_in_our_schema(kind):
    spec = schema(ours(kind))["properties"]["spec"]
    missing = [".".join(p) for p in _supported_paths(SUPPORTED[kind]) if _resolve(spec, list(p)) is None]
    assert not missing


def _defaults(node, path="", out=None) -> dict:
    out = {} if out is None else out
    if isinstance(node, dict):
        if "default" in node:
            out[path] = node["default"]
        for key, sub in (node.get("properties") or {}).items():
            _defaults(sub, f"{path}.{key}", out)
        if isinstance(node.get("items"), dict):
            _defaults(node["items"], path + "[]", out)
    return out


@pytest.mark.parametrize("kind", FILES)
def test_defaults_kept_outside_passed_through_subtrees(kind):
    import importlib.util

    spec = importlib.util.spec_from_file_location("crds_generate", CRDS / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    preserved = gen.PRESERVED_SPEC_FIELDS.get(ours(kind)["spec"]["names"]["plural"], ())
    mine, theirs = _defaults(schema(ours(kind))), _defaults(schema(upstream(kind)))
    for path, value in theirs.items():
        top = path.split(".")[2].split("[")[0] if path.startswith(".spec.") else ""
        if top in preserved:
            continue
        assert mine.get(path) == value, path


def test_generated_files_are_up_to_date():
    if not UPSTREAM.exists():
        pytest.skip("../shared not present")
    proc = subprocess.run([sys.executable, str(CRDS / "generate.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.kubectl
def test_kubectl_client_side_apply(sandbox_kubeconfig, tmp_path):
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    if not os.path.exists(kubectl):
        pytest.skip("kubectl not installed")
    base = [kubectl, "--kubeconfig", sandbox_kubeconfig, "--cache-dir", str(tmp_path / "kcache")]
    proc = subprocess.run([*base, "apply", "--validate=false", "-f", str(CRDS)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    for kind in FILES:
        assert f"{ours(kind)['metadata']['name']} created" in proc.stdout
    # applying again is a no-op, which needs the last-applied annotation to have fitted
    again = subprocess.run([*base, "apply", "--validate=false", "-f", str(CRDS)], capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("unchanged") == len(list(CRDS.glob("*.yaml"))), again.stdout  # every file in crds/
