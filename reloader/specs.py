"""The reloader's address and object flags, parsed: kept free of heavy imports.

Every mode checks its flags before anything else, so this parsing must not pull in the HTTP
client, the server or the Kubernetes client (the init container uses none of them).
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectRef:
    """namespace/name of a Secret or ConfigMap."""

    plural: str  # "secrets" or "configmaps"
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.plural}/{self.namespace}/{self.name}"


def parse_object_ref(plural: str, text: str, sep: str) -> tuple[ObjectRef, str]:
    """NAMESPACE/NAME, plus what follows the first `sep` ("" if none)."""
    head, _, rest = text.partition(sep)
    if head.count("/") != 1:
        raise ValueError(f"{text!r}: expected NAMESPACE/NAME")
    namespace, name = head.split("/")
    if not namespace or not name:
        raise ValueError(f"{text!r}: expected NAMESPACE/NAME")
    return ObjectRef(plural, namespace, name), rest


def parse_secret_files(specs: list[str]) -> list[tuple[ObjectRef, str, str, str]]:
    """--watch-secret-file NAMESPACE/NAME:KEY=DIR[,mount=MOUNTED_DIR] -> (ref, key, dir, mounted dir)."""
    out = []
    for spec in specs:
        ref, rest = parse_object_ref("secrets", spec, ":")
        key, _, place = rest.partition("=")
        directory, _, mounted = place.partition(",mount=")
        if not key or not directory or "/" in key or key.startswith("."):
            raise ValueError(f"--watch-secret-file {spec!r}: expected NAMESPACE/NAME:KEY=DIR[,mount=MOUNTED_DIR]")
        out.append((ref, key, directory, mounted))
    return out


def stage_path(output: str) -> str:
    """Where the config chosen from the API or the mount is staged: hidden, next to the output."""
    return os.path.join(os.path.dirname(os.path.abspath(output)), f".{os.path.basename(output)}.from-api")


def parse_specs(watch_secret: str, watch_configmaps: list[str], config_file: str,
                output: str) -> tuple[tuple[ObjectRef, str] | None, list[tuple[ObjectRef, str, str]]]:
    """Validate the flags: ((secret ref, key) or None, [(configmap ref, dir, mounted dir)]). ValueError says why."""
    secret = None
    if watch_secret:
        if not output:
            raise ValueError("--watch-secret needs --config-envsubst-file (where the config is written)")
        ref, key = parse_object_ref("secrets", watch_secret, ":")
        secret = (ref, key or (os.path.basename(config_file) if config_file else "prometheus.yaml.gz"))
    mirrors = []
    for spec in watch_configmaps:
        ref, rest = parse_object_ref("configmaps", spec, "=")
        directory, _, option = rest.partition(",mount=")
        if not directory:
            raise ValueError(f"--watch-configmap {spec!r}: expected NAMESPACE/NAME=DIR[,mount=MOUNTED_DIR]")
        mirrors.append((ref, directory, option))
    return secret, mirrors


def split_address(address: str) -> tuple[str, int]:
    """Parse Go-style listen addresses: ":8080", "0.0.0.0:8080", "[::1]:8080"."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid --listen-address {address!r}: expected [host]:port, e.g. :8080")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)
