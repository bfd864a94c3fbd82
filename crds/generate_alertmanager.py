"""Generate promop's Alertmanager and AlertmanagerConfig CRDs from upstream's (operator 0.93.0).

Same discipline as crds/generate.py (whose helpers this uses): every field
name, default, enum, printer column and subresource kept; descriptions only
for the top levels; big pod-template subtrees become
`x-kubernetes-preserve-unknown-fields`, so the files fit client-side
`kubectl apply` (256 KiB). Upstream's AlertmanagerConfig CRD has an unquoted
`=` enum value that YAML 1.1 loaders (PyYAML's safe loader) read as the
`tag:yaml.org,2002:value` type and refuse; we read it as the string "=" and
write it quoted, so our file loads everywhere.

Usage (from the repository root):  python3 crds/generate_alertmanager.py [--source DIR] [--check]
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_promop_crds_generate", HERE / "generate.py")
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)  # type: ignore[union-attr]

FILES = ("monitoring.coreos.com_alertmanagers.yaml", "monitoring.coreos.com_alertmanagerconfigs.yaml")
PRESERVED_SPEC_FIELDS = {
    "alertmanagers": ("affinity", "containers", "initContainers", "volumes", "volumeMounts", "storage",
                      "securityContext", "topologySpreadConstraints", "dnsConfig", "clusterTLS", "web",
                      "tolerations", "resources", "hostAliases", "imagePullSecrets", "podMetadata"),
}


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """A safe loader that reads YAML 1.1's `=` value token as the plain string "="."""


Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def load(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Loader)


def trim(crd: dict) -> dict:
    crd = copy.deepcopy(crd)
    plural = crd["spec"]["names"]["plural"]
    crd["metadata"]["annotations"] = {
        "promop.dev/generated-from": f"prometheus-operator {base.UPSTREAM_VERSION}",
        "operator.prometheus.io/version": base.UPSTREAM_VERSION,
    }
    for version in crd["spec"]["versions"]:
        root = version["schema"]["openAPIV3Schema"]
        spec = root["properties"]["spec"]
        for name in PRESERVED_SPEC_FIELDS.get(plural, ()):
            if name in spec["properties"]:
                spec["properties"][name] = base._preserved(spec["properties"][name])
        if plural == "alertmanagerconfigs":
            _preserve_receiver_http_subtrees(spec)
        for key in ("spec", "status"):
            if key in root["properties"]:
                root["properties"][key] = base._strip_descriptions(root["properties"][key], 0)
    return crd


def _preserve_receiver_http_subtrees(spec: dict) -> None:
    """Each of the 15 receiver types repeats the same httpConfig schema; its two big parts (oauth2,
    tlsConfig) become any-object there. promop validates them when rendering (rejection with a field path)."""
    receivers = spec["properties"]["receivers"]["items"]["properties"]
    for receiver in receivers.values():
        http = ((receiver.get("items") or {}).get("properties") or {}).get("httpConfig")
        if not http:
            continue
        for name in ("oauth2", "tlsConfig"):
            if name in http.get("properties", {}):
                http["properties"][name] = base._preserved(http["properties"][name])


# Our file -> upstream's source: AlertmanagerConfig comes from the `-full` variant, which also serves
# v1beta1 (storage stays v1alpha1); `promop admission-webhook` converts between them (docs/admission.md).
SOURCES = {"monitoring.coreos.com_alertmanagerconfigs.yaml": "monitoring.coreos.com_alertmanagerconfigs-full.yaml"}


def generate(source: Path) -> dict[str, str]:
    return {name: base.render(trim(load(source / SOURCES.get(name, name)))) for name in FILES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=base.DEFAULT_SOURCE, help="directory of upstream CRD YAMLs")
    parser.add_argument("--check", action="store_true", help="fail if the files in crds/ are not up to date")
    args = parser.parse_args(argv)
    stale = []
    for name, text in generate(args.source).items():
        size = len(text.encode())
        if size > base.MAX_BYTES:
            print(f"error: {name} is {size} bytes, over {base.MAX_BYTES}", file=sys.stderr)
            return 1
        path = HERE / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent)} ({size} bytes)")
    if stale:
        print(f"stale: {', '.join(stale)}; run python3 crds/generate_alertmanager.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
