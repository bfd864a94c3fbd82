"""Create-or-update of CRDs and example objects through the client (for `promop demo` and tests)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable

import orjson
import yaml

from promop.errors import UserError
from promop.kube.client import KubeClient
from promop.kube.errors import AlreadyExists, ApiError, Invalid, NotFound
from promop.kube.resources import (CONFIGMAPS, CRDS, NAMESPACES, PODMONITORS, PROMETHEUSES, PROMETHEUSRULES,
                                   SECRETS, SERVICEMONITORS, SERVICES, Resource)
from promop.kube.resources import PROBES
from promop.operator.alertmanager import ALERTMANAGERCONFIGS, ALERTMANAGERS
from promop.kube.resources import SCRAPECONFIGS

# The kinds `apply_document` writes, built once here and changed nowhere else.
KINDS: dict[str, Resource] = {r.kind: r for r in (
    NAMESPACES, CONFIGMAPS, SECRETS, SERVICES, PROMETHEUSES, SERVICEMONITORS, PODMONITORS, PROMETHEUSRULES, CRDS,
    ALERTMANAGERS, ALERTMANAGERCONFIGS, PROBES)}
KINDS[SCRAPECONFIGS.kind] = SCRAPECONFIGS

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# file -> (mtime_ns, size, its documents as JSON): parsing the shipped CRDs (570 KB of YAML) takes ~0.5 s, and a
# process installs them more than once (--manage-crds after a restart of the watch, the test suite's sandboxes).
_PARSED: dict[Path, tuple[int, int, bytes]] = {}


def _documents_of(f: Path) -> list:
    """The non-empty YAML documents of one file, fresh objects each call (callers may change them)."""
    st = f.stat()
    cached = _PARSED.get(f.resolve())
    if cached and cached[:2] == (st.st_mtime_ns, st.st_size):
        return orjson.loads(cached[2])
    with open(f, encoding="utf-8") as fh:
        try:
            docs = [d for d in yaml.load_all(fh, Loader=_Loader) if d]
        except yaml.YAMLError as exc:
            raise ValueError(f"{f}: not valid YAML ({' '.join(str(exc).split())})") from None
    try:
        _PARSED[f.resolve()] = (st.st_mtime_ns, st.st_size, orjson.dumps(docs))
    except TypeError:  # a YAML-only value (a date, a set): not cached, still returned
        pass
    return docs


def load_documents(paths: Iterable[Path]) -> list[dict]:
    """Every YAML document of every .yaml/.yml file (directories expanded, sorted)."""
    out = []
    for path in paths:
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
        for f in files:
            docs = _documents_of(f)
            bad = next((d for d in docs if not isinstance(d, dict) or not d.get("kind")
                        or not isinstance(d.get("metadata"), dict) or not d["metadata"].get("name")), None)
            if bad is not None:
                raise ValueError(f"{f}: a document without kind and metadata.name is not a Kubernetes object")
            out.extend(docs)
    return out


def resource_for(doc: dict) -> Resource:
    res = KINDS.get(doc.get("kind", ""))
    if res is None:
        raise ValueError(f"cannot apply kind {doc.get('kind')!r} ({doc.get('metadata', {}).get('name')}): "
                         f"supported: {', '.join(sorted(KINDS))}")
    return res


def apply_document(client: KubeClient, doc: dict) -> str:
    """Create `doc`, or replace it if it exists; returns "created" or "configured"."""
    res = resource_for(doc)
    md = doc.get("metadata") or {}
    ns = md.get("namespace") or ("default" if res.namespaced else None)
    try:
        client.create(res, doc, ns)
        return "created"
    except AlreadyExists:
        current = client.get(res, md["name"], ns)
        body = {**doc, "metadata": {**md, "resourceVersion": current["metadata"]["resourceVersion"]}}
        client.update(res, body, ns)
        return "configured"


class CrdRefused(UserError):
    """The apiserver refused one or more CRDs (422 Invalid): a broken CRD file, not a bug of ours."""


def install_crds(client: KubeClient, crd_dir: Path, timeout: float = 30.0) -> list[str]:
    """Apply every CRD in `crd_dir` and wait until each is served (Established, or listable).

    A CRD the apiserver refuses does not stop the others; once all were tried, CrdRefused says
    in one line which CRDs and which fields (`promop run --manage-crds` prints it and exits 2)."""
    names, refused = [], []
    for doc in load_documents([crd_dir]):
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        try:
            apply_document(client, doc)
        except Invalid as exc:
            refused.append(refusal(doc["metadata"]["name"], exc))
            continue
        names.append(doc["metadata"]["name"])
    if refused:
        raise CrdRefused(f"{crd_dir}: the apiserver refused {'; '.join(refused)}; fix the CRD file(s) "
                         f"(or install the CRDs of a promop release) and start again")
    _wait_established(client, names, timeout)
    return names


def refusal(name: str, exc: ApiError) -> str:
    """`CRD <name>: <field>: <reason>` from a 422's Status causes (the message when it has none)."""
    causes = ((exc.body or {}).get("details") or {}).get("causes") or []
    text = "; ".join(f"{c.get('field')}: {c.get('message')}" if c.get("field") else str(c.get("message"))
                     for c in causes if isinstance(c, dict))
    return f"CRD {name}: {' '.join((text or exc.message).split())}"


def _wait_established(client: KubeClient, names: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            try:
                crd = client.get(CRDS, name)
                conds = {c.get("type"): c.get("status") for c in (crd.get("status") or {}).get("conditions") or []}
                if conds.get("Established", "True") == "True":
                    break
            except (NotFound, ApiError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not established after {timeout}s")
            time.sleep(0.1)
