"""Read Kubernetes objects from YAML files and directories, for the offline CLI.

Directories are read recursively (*.yaml, *.yml, *.json, in sorted order);
files may hold several documents and `kind: List` objects. One bad document (not a
mapping, no kind, no metadata.name, an unknown monitoring.coreos.com kind) is listed in
`Loaded.rejected` and the others are still read; only an unreadable path or a YAML
syntax error stops the load (LoadError). Objects without a
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

from promop.render.yaml_load import load_all_marked

EXTENSIONS = (".yaml", ".yml", ".json")
INPUT_KINDS = ("Prometheus", "ServiceMonitor", "PodMonitor", "PrometheusRule", "Secret", "ConfigMap", "Namespace",
               "Alertmanager", "AlertmanagerConfig", "ThanosRuler", "PrometheusAgent", "Probe", "ScrapeConfig")
MONITORING_GROUP = "monitoring.coreos.com"
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
    # documents that cannot be used: "<Kind> <file>#<document number>: <reason>" (numbers from 1)
    rejected: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[dict]:
        return self.objects[kind]


def _inside(path: Path, folders: Iterable[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved == f or f in resolved.parents for f in folders)


def _files(path: Path, exclude: Iterable[Path] = ()) -> Iterable[Path]:
    if path.is_dir():
        for child in sorted(path.rglob("*")):
            if child.is_file() and child.suffix in EXTENSIONS and not _inside(child, exclude):
                yield child
    elif path.exists():
        yield path
    else:
        raise LoadError(f"{path}: no such file or directory")


def _documents(path: Path) -> list[tuple[Any, bool]]:
    """(document, shares) for each document: `shares` when an alias makes it hold one object twice."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(f"{path}: cannot read: {exc}") from exc
    try:
        return load_all_marked(text)
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


def _normalise(obj: dict, shares: bool) -> dict:
    """The object with a namespace and uid. Only what is changed is copied (the document was
    just loaded and is ours), unless aliases in it made several places share an object."""
    if shares:
        obj = copy.deepcopy(obj)
    else:
        obj = {**obj, "metadata": dict(obj["metadata"])}
    md = obj["metadata"]
    kind = obj["kind"]
    if kind not in CLUSTER_SCOPED:
        md["namespace"] = md.get("namespace") or DEFAULT_NAMESPACE
    md.setdefault("uid", deterministic_uid(kind, md.get("namespace", ""), md["name"]))
    return obj


def _problem(obj: Any) -> str | None:
    """Why a document cannot be an input object, or None."""
    if not isinstance(obj, dict):
        what = {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(obj), "value")
        return f"not a Kubernetes object: a YAML {what}, where a mapping with apiVersion, kind and metadata belongs"
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        return "not a Kubernetes object: no kind"
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return "metadata is missing or not a mapping; set metadata.name"
    name = md.get("name")
    if not isinstance(name, str) or not name:
        return "metadata.name is missing; every object needs a name"
    if md.get("namespace") is not None and not isinstance(md.get("namespace"), str):
        return "metadata.namespace must be a string"
    return None


def _unknown_monitoring_kind(obj: dict) -> bool:
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return group == MONITORING_GROUP and obj["kind"] not in INPUT_KINDS


def load(paths: Iterable[str | Path], exclude: Iterable[str | Path] = ()) -> Loaded:
    """Every input object under `paths` (files under `exclude` are not read).

    Raises LoadError naming the file (and line) for an unreadable path or a YAML syntax
    error; any other bad document is listed in `rejected` and the rest is read.
    """
    loaded = Loaded()
    excluded = [Path(e).resolve() for e in exclude]
    for root in paths:
        for path in _files(Path(root), excluded):
            for index, (doc, shares) in enumerate(_documents(path)):
                for obj in _flatten(doc):
                    where = f"{path}#{index + 1}"
                    problem = _problem(obj)
                    kind = obj.get("kind") if isinstance(obj, dict) and isinstance(obj.get("kind"), str) else ""
                    if problem is not None:
                        if kind and kind not in INPUT_KINDS and problem.startswith("metadata"):
                            loaded.skipped.append(f"{kind} in {where}")  # not ours to judge
                        else:
                            loaded.rejected.append(f"{kind or 'document'} {where}: {problem}")
                        continue
                    if kind not in INPUT_KINDS:
                        if _unknown_monitoring_kind(obj):
                            known = ", ".join(INPUT_KINDS[:4] + INPUT_KINDS[7:])
                            loaded.rejected.append(
                                f"{kind} {where}: unknown kind in {obj['apiVersion']}; the kinds are {known}")
                        else:
                            md = obj["metadata"]
                            loaded.skipped.append(f"{kind} {md.get('namespace', '')}/{md.get('name', '')} in {path}")
                        continue
                    obj = _normalise(obj, shares)
                    md = obj["metadata"]
                    loaded.objects[kind].append(obj)
                    loaded.sources[(kind, md.get("namespace", ""), md["name"])] = str(path)
    return loaded
