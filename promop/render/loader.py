"""Read Kubernetes objects from YAML files and directories, for the offline CLI.

Directories are read recursively (*.yaml, *.yml, *.json, in sorted order);
files may hold several documents and `kind: List` objects. Objects without a
namespace get `default` (as kubectl would apply them); objects without a uid
get a deterministic one derived from kind, namespace and name, so rule file
names (`<ns>-<name>-<uid>.yaml`) are stable from run to run.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
EXTENSIONS = (".yaml", ".yml", ".json")
INPUT_KINDS = ("Prometheus", "ServiceMonitor", "PodMonitor", "PrometheusRule", "Secret", "ConfigMap", "Namespace",
               "Alertmanager", "AlertmanagerConfig")
CLUSTER_SCOPED = ("Namespace",)
DEFAULT_NAMESPACE = "default"
_UID_NAMESPACE = uuid.UUID("5b0c3a4e-6f1d-4c39-9a55-70726f6d6f70")  # fixed: uids must not change between runs


class LoadError(Exception):
    """A file that cannot be read or parsed; the message names the file (and line)."""


def deterministic_uid(kind: str, namespace: str, name: str) -> str:
    """The uid an object read from a file gets when it has none."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


@dataclass
class Loaded:
    """Input objects by kind, each with (file) where it came from; other kinds are listed as skipped."""

    objects: dict[str, list[dict]] = field(default_factory=lambda: {k: [] for k in INPUT_KINDS})
    sources: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (kind, ns, name) -> file
    skipped: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[dict]:
        return self.objects[kind]


def _files(path: Path) -> Iterable[Path]:
    if path.is_dir():
        for child in sorted(path.rglob("*")):
            if child.is_file() and child.suffix in EXTENSIONS:
                yield child
    elif path.exists():
        yield path
    else:
        raise LoadError(f"{path}: no such file or directory")


def _documents(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(f"{path}: cannot read: {exc}") from exc
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = exc.problem or exc.context or "invalid YAML"
        raise LoadError(f"{where}: YAML syntax error: {problem}") from exc
    except yaml.YAMLError as exc:
        raise LoadError(f"{path}: YAML error: {exc}") from exc


def _flatten(doc: Any) -> Iterable[Any]:
    if isinstance(doc, dict) and doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _flatten(item)
    elif doc is not None:
        yield doc


def _normalise(obj: dict, where: str) -> dict:
    obj = copy.deepcopy(obj)
    md = obj.get("metadata")
    if not isinstance(md, dict) or not md.get("name"):
        raise LoadError(f"{where}: {obj.get('kind')} has no metadata.name")
    kind = obj["kind"]
    if kind not in CLUSTER_SCOPED:
        md["namespace"] = md.get("namespace") or DEFAULT_NAMESPACE
    md.setdefault("uid", deterministic_uid(kind, md.get("namespace", ""), md["name"]))
    return obj


def load(paths: Iterable[str | Path]) -> Loaded:
    """Every input object under `paths`; raises LoadError naming the file and line."""
    loaded = Loaded()
    for root in paths:
        for path in _files(Path(root)):
            for index, doc in enumerate(_documents(path)):
                for obj in _flatten(doc):
                    where = f"{path} (document {index + 1})"
                    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
                        loaded.skipped.append(f"{where}: not a Kubernetes object (no kind)")
                        continue
                    kind = obj["kind"]
                    if kind not in INPUT_KINDS:
                        md = obj.get("metadata") or {}
                        loaded.skipped.append(f"{kind} {md.get('namespace', '')}/{md.get('name', '')} in {path}")
                        continue
                    obj = _normalise(obj, where)
                    md = obj["metadata"]
                    loaded.objects[kind].append(obj)
                    loaded.sources[(kind, md.get("namespace", ""), md["name"])] = str(path)
    return loaded
