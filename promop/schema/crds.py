"""Find a CRD version's `openAPIV3Schema` by kind (and group, version) in a folder of CRD files.

The default folder is the one promop ships (`crds/`, see promop.packaged). Files are read
once per folder and kept: CRDs do not change while a process runs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import yaml

from promop.packaged import crds_dir


class SchemaNotFound(LookupError):
    """No CRD in the folder defines that kind/version."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML 1.1's `=` (the "value" tag) is a plain string to Go's YAML reader, and so here."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


@lru_cache(maxsize=8)
def _files(folder: str) -> tuple[str, ...]:
    return tuple(str(path) for path in sorted(Path(folder).glob("*.y*ml")))


@lru_cache(maxsize=64)
def _text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


@lru_cache(maxsize=64)
def _load_file(path: str) -> tuple[dict[str, Any], ...]:
    return tuple(doc for doc in yaml.load_all(_text(path), Loader=_Loader)
                 if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition")


@lru_cache(maxsize=8)
def _load_folder(folder: str) -> tuple[dict[str, Any], ...]:
    return tuple(crd for path in _files(folder) for crd in _load_file(path))


def _candidates(folder: str, kind: str) -> Iterator[dict[str, Any]]:
    """The CRDs of `folder` in file order, first those of the files with a `kind: <kind>` line
    (a CRD's names.kind; YAML or JSON, quoted or not), then, should none of them define it,
    every CRD. The renderer asks for two or three kinds: parsing only their files instead of all
    1.2 MB of promop's CRDs took ~0.25 s off the operator's start-up, where it competes with the
    informers' LISTs."""
    line = _kind_line(kind)
    for path in _files(folder):
        if line.search(_text(path)):
            yield from _load_file(path)
    yield from _load_folder(folder)


@lru_cache(maxsize=64)
def _kind_line(kind: str) -> re.Pattern:
    q = "[\"']?"
    return re.compile(f"kind{q}\\s*:\\s*{q}{re.escape(kind)}{q}\\s*(?:[,}}\\r\\n]|$)", re.MULTILINE)


def load_crds(folder: str | Path | None = None) -> tuple[dict[str, Any], ...]:
    """Every CustomResourceDefinition in `folder` (default: promop's crds/)."""
    return _load_folder(str(folder) if folder is not None else _default_folder())


def split_api_version(api_version: str) -> tuple[str, str]:
    """`monitoring.coreos.com/v1` -> (`monitoring.coreos.com`, `v1`); `v1` -> (``, `v1`)."""
    group, _, version = api_version.rpartition("/")
    return group, version


@lru_cache(maxsize=1)
def _default_folder() -> str:
    return str(crds_dir())


def crd_schema(
    kind: str, version: str | None = None, group: str | None = None, folder: str | Path | None = None
) -> dict[str, Any]:
    """The `openAPIV3Schema` of `kind` at `version` (default: the storage version).

    Raises SchemaNotFound naming what was looked for and where. The same dict is returned for
    the same question (validators built for it are reused); treat it as read-only.
    """
    return _crd_schema(kind, version, group, str(folder) if folder is not None else _default_folder())


@lru_cache(maxsize=256)
def _crd_schema(kind: str, version: str | None, group: str | None, where: str) -> dict[str, Any]:
    for crd in _candidates(where, kind):
        spec = crd.get("spec") or {}
        if (spec.get("names") or {}).get("kind") != kind:
            continue
        if group is not None and spec.get("group") != group:
            continue
        for v in spec.get("versions") or []:
            if (v.get("name") == version) if version is not None else v.get("storage"):
                schema = (v.get("schema") or {}).get("openAPIV3Schema")
                if isinstance(schema, dict):
                    return schema
    what = f"{group + '/' if group else ''}{version or '(storage version)'} {kind}"
    raise SchemaNotFound(f"no CRD schema for {what} in {where}")


def schema_for(obj: dict[str, Any], folder: str | Path | None = None) -> dict[str, Any]:
    """The schema for an object, from its `apiVersion` and `kind`."""
    group, version = split_api_version(str(obj.get("apiVersion") or ""))
    return crd_schema(str(obj.get("kind") or ""), version or None, group or None, folder)
