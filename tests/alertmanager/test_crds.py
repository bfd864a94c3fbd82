"""crds/ Alertmanager and AlertmanagerConfig: upstream-compatible, small enough for client-side apply, safe-loadable."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from .helpers import ROOT

CRDS = ROOT / "crds"
FILES = {"Alertmanager": "monitoring.coreos.com_alertmanagers.yaml",
         "AlertmanagerConfig": "monitoring.coreos.com_alertmanagerconfigs.yaml"}
UPSTREAM_CANDIDATES = [p / "shared" / "reference" / "upstream-crds" for p in (ROOT.parent, ROOT.parents[1])]
LIMIT = 256 * 1024


def generator():
    spec = importlib.util.spec_from_file_location("gen_am", CRDS / "generate_alertmanager.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def upstream_dir():
    found = next((p for p in UPSTREAM_CANDIDATES if p.exists()), None)
    if found is None:
        pytest.skip("../shared is not checked out")
    return found


def ours(kind):
    return yaml.safe_load((CRDS / FILES[kind]).read_text())  # the plain safe loader must read our files


@pytest.mark.parametrize("kind", FILES)
def test_small_enough_and_safe_loadable(kind):
    text = (CRDS / FILES[kind]).read_text()
    assert len(text.encode()) < LIMIT
    assert len(json.dumps(yaml.safe_load(text), separators=(",", ":")).encode()) < LIMIT


def test_upstream_alertmanagerconfig_crd_needs_the_value_tag_fix():
    path = upstream_dir() / FILES["AlertmanagerConfig"]
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.safe_load(path.read_text())
    enum = generator().load(path)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["route"]["properties"]["matchers"]["items"]["properties"]["matchType"]["enum"]
    assert "=" in enum
    mine = ours("AlertmanagerConfig")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["route"]["properties"]["matchers"]["items"]["properties"]["matchType"]["enum"]
    assert mine == enum


def _paths(node, prefix=""):
    """Every property path, stopping at preserve-unknown subtrees."""
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return
    while node.get("type") == "array" and "items" in node:
        node = node["items"]
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return
    for key, sub in (node.get("properties") or {}).items():
        yield f"{prefix}.{key}"
        yield from _paths(sub, f"{prefix}.{key}")


def _resolvable(node, path):
    for part in path.strip(".").split("."):
        while node.get("type") == "array" and "items" in node:
            node = node["items"]
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return True
        if part not in (node.get("properties") or {}):
            return False
        node = node["properties"][part]
    return True


@pytest.mark.parametrize("kind", FILES)
def test_same_names_versions_columns_and_every_field(kind):
    theirs = generator().load(upstream_dir() / generator().SOURCES.get(FILES[kind], FILES[kind]))
    mine = ours(kind)
    assert mine["metadata"]["name"] == theirs["metadata"]["name"]
    assert mine["spec"]["names"] == theirs["spec"]["names"]
    for a, b in zip(mine["spec"]["versions"], theirs["spec"]["versions"], strict=True):
        assert (a["name"], a["served"], a["storage"]) == (b["name"], b["served"], b["storage"])
        assert a.get("subresources") == b.get("subresources")
        assert a.get("additionalPrinterColumns") == b.get("additionalPrinterColumns")
        root = a["schema"]["openAPIV3Schema"]
        missing = [p for p in _paths(b["schema"]["openAPIV3Schema"]) if not _resolvable(root, p)]
        assert not missing


def test_generated_files_are_up_to_date():
    proc = subprocess.run([sys.executable, str(CRDS / "generate_alertmanager.py"), "--check", "--source",
                           str(upstream_dir())], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.kubectl
def test_kubectl_client_side_apply(sandbox_kubeconfig, tmp_path):
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    if not os.path.exists(kubectl):
        pytest.skip("kubectl not installed")
    base = [kubectl, "--kubeconfig", sandbox_kubeconfig, "--cache-dir", str(tmp_path / "kcache")]
    files = [arg for name in FILES.values() for arg in ("-f", str(CRDS / name))]
    proc = subprocess.run([*base, "apply", "--validate=false", *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    again = subprocess.run([*base, "apply", "--validate=false", *files], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout.count("unchanged") == 2, again.stdout + again.stderr
