"""kube-aggregator's discovery manager in the sandbox: the aggregated discovery document of `/api` and
`/apis` (apidiscovery.k8s.io v2 and v2beta1), with every APIService backend's group-versions merged in
by asking the backend as the aggregator does (k8s.io/kube-aggregator pkg/apiserver/handler_discovery.go):

- `GET /apis` from the backend as system:kube-aggregator, `Accept` aggregated v2 then v2beta1;
- 200: the body must decode as an APIGroupDiscoveryList (v1.26-v1.29 decode every 200 so, v1.30+ also
  want its Content-Type); the APIService's group-version is taken from it, `Current` (with no
  resources when the backend does not list it);
- 406: legacy fallback, `GET /apis/<group>/<version>` (`Accept: application/json`), which must be a
  200 APIResourceList whose subresources agree with their parent's scope (ConvertGroupVersionIntoToDiscovery);
- anything else (a 200 that is not an APIGroupDiscoveryList, such as a plain APIGroupList, 404, 503,
  no answer): the group-version is published `freshness: Stale` with no resources. client-go (kubectl
  top, the HPA's custom-metrics client) leaves stale versions out, so their group looks absent.

The aggregator refreshes on APIService changes and every minute; the sandbox asks when a discovery
document is read, reusing an answer for RECHECK_AFTER seconds (kubectl reads /api and /apis together).
Where aggregator versions differ, the sandbox takes the stricter one, so a test fails where any would.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import urllib3

from promop.kube import discovery as disco

if TYPE_CHECKING:
    from promop.sandbox.aggregation import Aggregator

AGGREGATOR_ACCEPT = f"{disco.media_type('v2')},{disco.media_type('v2beta1')}"
TIMEOUT = 5.0            # the aggregator's http.TimeoutHandler around the backend
CONNECT_TIMEOUT = 1.0    # inside a client's read: an address nobody answers must not stall it
RECHECK_AFTER = 1.0


class DiscoveryFailed(Exception):
    """Why a backend's discovery is unusable (the group-version goes Stale)."""


class _NotAcceptable:
    """The backend refused aggregated discovery: fall back to legacy per group-version."""


NOT_ACCEPTABLE = _NotAcceptable()


def version_map(doc: Any) -> dict[tuple[str, str], dict]:
    """(group, version) -> APIVersionDiscovery of a backend's answer, or DiscoveryFailed when the
    body is not an APIGroupDiscoveryList (what the aggregator's universal decoder would refuse)."""
    if not disco.is_discovery_list(doc):
        kind = f"{doc.get('apiVersion')}/{doc.get('kind')}" if isinstance(doc, dict) else type(doc).__name__
        raise DiscoveryFailed(f"the answer to GET /apis is {kind}, not an apidiscovery.k8s.io APIGroupDiscoveryList")
    out: dict[tuple[str, str], dict] = {}
    for item in doc.get("items") or []:
        name = ((item or {}).get("metadata") or {}).get("name", "")
        for v in (item or {}).get("versions") or []:
            resources = []
            for r in v.get("resources") or []:   # nil responseKinds filled, as the aggregator does
                r = {**r, "responseKind": r.get("responseKind") or {"group": "", "version": "", "kind": ""}}
                if r.get("subresources"):
                    r["subresources"] = [{**s, "responseKind": s.get("responseKind") or
                                          {"group": "", "version": "", "kind": ""}} for s in r["subresources"]]
                resources.append(r)
            out[(name, v.get("version", ""))] = {**v, "resources": resources}
    return out


def legacy_entry(version: str, doc: Any) -> dict:
    """A version entry from a legacy APIResourceList answer; DiscoveryFailed when it would not decode
    as one or its conversion fails."""
    if not isinstance(doc, dict) or doc.get("kind", "APIResourceList") not in ("", "APIResourceList") \
            or doc.get("apiVersion", "v1") not in ("", "v1"):
        kind = f"{doc.get('apiVersion')}/{doc.get('kind')}" if isinstance(doc, dict) else type(doc).__name__
        raise DiscoveryFailed(f"legacy discovery answered {kind}, not an APIResourceList")
    try:
        return disco.version_entry(version, disco.to_discovery_resources(doc.get("resources") or []))
    except disco.ScopeMismatch as exc:
        raise DiscoveryFailed(f"Error: {exc}") from None


class DiscoveryManager:
    def __init__(self, aggregator: "Aggregator") -> None:
        self.aggregator = aggregator
        self._lock = threading.Lock()
        self._cache: dict[tuple, tuple[float, Any]] = {}

    def _cached(self, key: tuple, fetch: Any) -> Any:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[0] < RECHECK_AFTER:
            result = hit[1]
        else:
            try:
                result = fetch()
            except DiscoveryFailed as exc:
                result = exc
            with self._lock:
                self._cache[key] = (now, result)
        if isinstance(result, DiscoveryFailed):
            raise result
        return result

    def _get(self, apiservice: dict, url: str, accept: str, groups: tuple[str, ...]) -> tuple[int, str, Any]:
        headers = self.aggregator.identity_headers("system:kube-aggregator", groups)
        headers["Accept"] = accept
        try:
            resp = self.aggregator.send(apiservice, "GET", url, headers, None, TIMEOUT, CONNECT_TIMEOUT)
        except Exception as exc:  # unreachable, TLS refused: no usable answer
            raise DiscoveryFailed(f"GET {url}: {type(exc).__name__}: {exc}") from None
        try:
            body = json.loads(resp.data) if resp.data else None
        except ValueError:
            body = resp.data[:200]
        return resp.status, resp.headers.get("Content-Type", ""), body

    def _service_document(self, apiservice: dict, base: str) -> Any:
        """The backend's aggregated answer as a version map, or NOT_ACCEPTABLE (a 406)."""
        status, _, body = self._get(apiservice, f"{base}/apis", AGGREGATOR_ACCEPT, ("system:masters",))
        if status == 406:
            return NOT_ACCEPTABLE
        if status != 200:
            raise DiscoveryFailed(f"service {base} returned non-success response code: {status}")
        return version_map(body)

    def _legacy(self, apiservice: dict, base: str, group: str, version: str) -> dict:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        status, _, body = self._get(apiservice, base + path, "application/json", ())
        if status != 200:
            raise DiscoveryFailed(f"failed to download legacy discovery for {path}: ResponseCode: {status}")
        return legacy_entry(version, body)

    def entry(self, apiservice: dict) -> dict:
        """The APIService's version entry for the merged document, Current or Stale."""
        spec = apiservice.get("spec") or {}
        group, version = spec.get("group", ""), spec.get("version", "")
        try:
            try:
                base = self.aggregator.backend(apiservice)
            except Exception as exc:  # aggregation.Unavailable: no service, no address
                raise DiscoveryFailed(getattr(exc, "message", str(exc))) from None
            found = self._cached(("apis", base, apiservice["metadata"]["name"]),
                                 lambda: self._service_document(apiservice, base))
            if found is NOT_ACCEPTABLE:
                entry = self._cached(("legacy", base, group, version),
                                     lambda: self._legacy(apiservice, base, group, version))
            else:
                entry = found.get((group, version)) or {"version": version}
        except DiscoveryFailed:
            return {"version": version, "freshness": disco.STALE}
        return {**entry, "version": version, "freshness": disco.CURRENT}

    def apiservice_groups(self, served: set[tuple[str, str]]) -> list[dict]:
        """APIGroupDiscovery items of every non-local APIService whose group-version the sandbox does
        not serve itself: groups by groupPriorityMinimum (highest first), versions by versionPriority."""
        wanted = []
        for obj in self.aggregator.apiservices():
            spec = obj.get("spec") or {}
            if (spec["group"], spec.get("version", "")) in served or not self.aggregator.proxied(obj):
                continue
            wanted.append(obj)
        if not wanted:
            return []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
            with ThreadPoolExecutor(max_workers=min(8, len(wanted)), thread_name_prefix="sandbox-discovery") as ex:
                entries = list(ex.map(self.entry, wanted))
        groups: dict[str, list[tuple[tuple, dict]]] = {}
        priority: dict[str, int] = {}
        for obj, entry in zip(wanted, entries):
            spec = obj["spec"]
            groups.setdefault(spec["group"], []).append(((-int(spec.get("versionPriority") or 0),
                                                          spec.get("version", "")), entry))
            priority[spec["group"]] = max(priority.get(spec["group"], 0), int(spec.get("groupPriorityMinimum") or 0))
        order = sorted(groups, key=lambda g: (-priority[g], g))
        return [disco.group_entry(g, [e for _, e in sorted(groups[g], key=lambda t: t[0])]) for g in order]
