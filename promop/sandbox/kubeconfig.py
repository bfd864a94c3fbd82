"""A kubeconfig pointing at the sandbox, for kubectl and kubernetes.config."""

from __future__ import annotations

import os

import yaml


def kubeconfig_dict(url: str, name: str = "promop-sandbox") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": "sandbox"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name,
                                                "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: str | os.PathLike, url: str) -> str:
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.dump(kubeconfig_dict(url), handle, Dumper=dumper, sort_keys=False)
    return path
