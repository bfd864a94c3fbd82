"""API aggregation in the sandbox: `APIService` objects, and `/apis/<group>/<version>/...`
proxied to the registered service, as kube-apiserver's aggregator does.

So `kubectl get --raw /apis/custom.metrics.k8s.io/v1beta2/...`, `kubectl top pod` and
`kubectl top node` work against a sandbox with `promop adapter` registered.

- The backend's URL: the APIService's `sandbox.promop.dev/url` annotation if set, else its
  Service's `spec.clusterIP` (the sandbox allocates one nothing listens on: set it, e.g. to
  127.0.0.1) and `spec.service.port` (default 443), over HTTPS.
- Proxied requests carry the front proxy's client certificate, `X-Remote-User` and one
  `X-Remote-Group` per group of the user (with `authorization="rbac"` the token's user and all
  its groups; otherwise system:admin in system:masters and system:authenticated).
  The front proxy's CA is published in `kube-system/extension-apiserver-authentication`
  (created with the first APIService), so the backend can verify it as in a cluster.
- The backend's certificate is checked against `spec.caBundle`, or not at all with
  `spec.insecureSkipTLSVerify: true`.
- SubjectAccessReviews (how backends authorize) are answered `allowed`: the sandbox does not
  enforce RBAC.
- `/apis` lists the aggregated groups; `/apis/<group>` answers for them; everything below a
  registered group/version goes to the backend. A backend that cannot be reached gives 503.
- Aggregated discovery (`/api`, `/apis` asked for apidiscovery.k8s.io v2 or v2beta1 first, as kubectl
  1.26+ and client-go ask): built-in groups and CRDs, plus each APIService's group-version as its
  backend describes it, or `freshness: Stale` with no resources when its answer is unusable
  (see promop.sandbox.aggregated_discovery), so kubectl and discovery clients skip it as on a cluster.
- `status.conditions` `Available` as kube-aggregator's availability controller sets it (so
  `kubectl get apiservice` shows AVAILABLE): True `Local` without a service; False
  `ServiceNotFound`, `MissingEndpoints` (no clusterIP) or `FailedDiscoveryCheck` (the backend's
  `/apis/<group>/<version>` unreachable or not 2xx, asked as system:kube-aggregator); else True
  `Passed`. Refreshed when APIServices are read (at most once a second each) and when a proxied
  request fails or succeeds again; not on a timer.
"""

from __future__ import annotations

import base64
import json
import logging
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import urllib3

from promop.kube import discovery as disco
from promop.sandbox import negotiate
from promop.sandbox.aggregated_discovery import DiscoveryManager
from promop.sandbox.errors import ApiError
from promop.sandbox.resources import ResourceType

if TYPE_CHECKING:
    from promop.sandbox.sandbox import Sandbox

log = logging.getLogger("promop.sandbox")

APISERVICES = ResourceType("apiregistration.k8s.io", "v1", "apiservices", "APIService", False,
                           status_subresource=True)
URL_ANNOTATION = "sandbox.promop.dev/url"
USER = "system:admin"
GROUPS = ("system:masters", "system:authenticated")
FRONT_PROXY_CN = "front-proxy-client"
_PASS_HEADERS = ("Accept", "Content-Type", "User-Agent", "Accept-Encoding")
AVAILABLE = "Available"
CHECK_TIMEOUT = 5.0        # kube-aggregator's discovery check timeout
CHECK_CONNECT_TIMEOUT = 1.0  # the check runs inside a read: a backend address nobody answers must not stall it
RECHECK_AFTER = 1.0        # seconds a check result is reused for reads
AGGREGATOR_USER = ("system:kube-aggregator", ("system:masters",))


class Unavailable(Exception):
    """Why an APIService's backend cannot be reached: the condition's reason and message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def install(sandbox: "Sandbox") -> None:
    """Serve APIService objects and attach the aggregator to `sandbox`."""
    from promop.sandbox import tables

    sandbox.registry.add(APISERVICES)
    sandbox.aggregator = Aggregator(sandbox)  # type: ignore[attr-defined]
    tables.PRINTERS.setdefault(APISERVICES.key, (APISERVICE_COLUMNS, apiservice_cells))


APISERVICE_COLUMNS = [
    {"name": "Name", "type": "string", "format": "name", "priority": 0,
     "description": "Name must be unique within a namespace."},
    {"name": "Service", "type": "string", "format": "", "priority": 0,
     "description": "The reference to the service that hosts this API endpoint."},
    {"name": "Available", "type": "string", "format": "", "priority": 0,
     "description": "Whether this service is available."},
    {"name": "Age", "type": "string", "format": "", "priority": 0,
     "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
]


def apiservice_cells(obj: dict) -> list:
    """kube-aggregator's table: the service as namespace/name (or Local), Available as True or
    `False (Reason)`, Unknown before the first check."""
    from promop.sandbox.tables import human_age

    ref = (obj.get("spec") or {}).get("service")
    service = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else "Local"
    available = "Unknown"
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == AVAILABLE:
            available = "True" if c.get("status") == "True" else f"{c.get('status')} ({c.get('reason', '')})"
    return [obj["metadata"]["name"], service, available, human_age(obj["metadata"].get("creationTimestamp"))]


def handle(handler: Any, method: str, url: Any, parts: list[str], raw: bytes) -> bool:
    """The server's hook: True when the request was answered here."""
    aggregator: Aggregator | None = getattr(handler.server.sandbox, "aggregator", None)
    if aggregator is None or not parts or parts[0] not in ("api", "apis"):
        return False
    try:
        if method == "GET" and aggregator.refuses_legacy_discovery(handler, parts):
            raise ApiError(406, "only the following media types are accepted: application/json "
                                f"(asked for {handler.headers.get('Accept')!r})")
        if parts[0] == "api":
            return parts == ["api"] and method == "GET" and aggregator.serve_aggregated(handler, core=True)
        return aggregator.handle(handler, method, url, parts, raw)
    except ApiError as error:
        handler._send_json(error.code, error.status(), error.headers)
        return True


class Aggregator:
    def __init__(self, sandbox: "Sandbox") -> None:
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._pki: dict[str, Any] | None = None
        self._pool: Any = None
        self._checked: dict[str, float] = {}   # APIService name -> when its availability was last checked
        self.discovery = DiscoveryManager(self)

    # -- the front proxy's identity ----------------------------------------------------------------

    def _front_proxy(self) -> dict[str, Any]:
        with self._lock:
            if self._pki is None:
                from promop.certs import CA

                ca = CA.create("sandbox-front-proxy-ca")
                cert, key = ca.issue(FRONT_PROXY_CN, client=True)
                d = Path(tempfile.mkdtemp(prefix="sandbox-front-proxy-"))
                (d / "client.crt").write_bytes(cert)
                (d / "client.key").write_bytes(key)
                self._pki = {"ca": ca.cert_pem.decode(), "cert": (str(d / "client.crt"), str(d / "client.key")),
                             "dir": d}
            return self._pki

    def ensure_auth_configmap(self) -> None:
        """kube-system/extension-apiserver-authentication, as kube-apiserver publishes it."""
        api = self.sandbox.api
        rt = self.sandbox.registry.lookup("", "v1", "configmaps")
        data = {"requestheader-client-ca-file": self._front_proxy()["ca"],
                "requestheader-allowed-names": json.dumps([FRONT_PROXY_CN]),
                "requestheader-username-headers": json.dumps(["X-Remote-User"]),
                "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
                "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"])}
        try:
            api.get(rt, "kube-system", "extension-apiserver-authentication")
        except ApiError:
            try:
                api.create(rt, "kube-system", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                    "name": "extension-apiserver-authentication", "namespace": "kube-system"}, "data": data})
            except ApiError as exc:
                if exc.code != 409:
                    raise

    # -- APIService lookups --------------------------------------------------------------------------

    def apiservices(self) -> list[dict]:
        items = self.sandbox.api.list(APISERVICES, None, None).objects
        return [obj for obj in items if (obj.get("spec") or {}).get("group")]

    def groups(self) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = {}
        for obj in self.apiservices():
            spec = obj["spec"]
            out.setdefault(spec["group"], []).append((-int(spec.get("versionPriority") or 0), spec.get("version", "")))
        return {g: sorted(vs) for g, vs in out.items()}

    def find(self, group: str, version: str) -> dict | None:
        for obj in self.apiservices():
            spec = obj["spec"]
            if spec.get("group") == group and spec.get("version") == version:
                return obj
        return None

    @staticmethod
    def proxied(apiservice: dict) -> bool:
        """Whether requests for the APIService go to a backend (not a Local APIService)."""
        annotations = (apiservice.get("metadata") or {}).get("annotations") or {}
        return bool((apiservice.get("spec") or {}).get("service") or annotations.get(URL_ANNOTATION))

    def backend(self, apiservice: dict) -> str:
        annotations = (apiservice.get("metadata") or {}).get("annotations") or {}
        if annotations.get(URL_ANNOTATION):
            return annotations[URL_ANNOTATION].rstrip("/")
        ref = (apiservice.get("spec") or {}).get("service")
        name = apiservice["metadata"]["name"]
        if not ref:
            raise Unavailable("Local", f"the APIService {name} has no spec.service (a local APIService): "
                                       "nothing to proxy to")
        rt = self.sandbox.registry.lookup("", "v1", "services")
        try:
            svc = self.sandbox.api.get(rt, ref.get("namespace", ""), ref.get("name", ""))
        except ApiError:
            raise Unavailable("ServiceNotFound", f'service/{ref.get("name")} in "{ref.get("namespace")}" is not '
                                                 "present") from None
        ip = (svc.get("spec") or {}).get("clusterIP")
        if not ip or ip == "None":
            raise Unavailable("MissingEndpoints",
                              f"service {ref.get('namespace')}/{ref.get('name')} has no spec.clusterIP: in the "
                              f"sandbox set it (e.g. 127.0.0.1) or annotate the APIService with {URL_ANNOTATION}")
        host = f"[{ip}]" if ":" in ip else ip
        return f"https://{host}:{int(ref.get('port') or 443)}"

    def send(self, apiservice: dict, method: str, target: str, headers: Any, body: bytes | None,
              timeout: float, connect_timeout: float = 5.0) -> Any:
        """One request to the backend, with the front proxy's certificate; urllib3 because each group
        is its own X-Remote-Group header line (requests keeps one value per name)."""
        spec = apiservice.get("spec") or {}
        tls: dict[str, Any] = {}
        if target.startswith("https"):
            tls["cert_file"], tls["key_file"] = self._front_proxy()["cert"]
            if spec.get("insecureSkipTLSVerify"):
                tls["cert_reqs"] = "CERT_NONE"
            else:
                tls["cert_reqs"] = "CERT_REQUIRED"
                if spec.get("caBundle"):
                    ca = self._front_proxy()["dir"] / f"ca-{apiservice['metadata']['name']}.crt"
                    ca.write_bytes(base64.b64decode(spec["caBundle"]))
                    tls["ca_certs"] = str(ca)
        with self._lock:
            if self._pool is None:
                self._pool = urllib3.PoolManager(num_pools=16, maxsize=8)
            pool = self._pool
        conn = pool.connection_from_url(target, pool_kwargs=tls)
        return conn.urlopen(method, urllib3.util.parse_url(target).request_uri, body=body, headers=headers,
                            retries=False, redirect=False,
                            timeout=urllib3.Timeout(connect=min(timeout, connect_timeout), read=timeout),
                            assert_same_host=False)

    @staticmethod
    def identity_headers(user: str, groups: tuple[str, ...] | list[str]) -> Any:
        from urllib3 import HTTPHeaderDict

        headers = HTTPHeaderDict()
        headers["X-Remote-User"] = user
        for g in groups:   # one header per group, as kube-apiserver sends them
            headers.add("X-Remote-Group", g)
        return headers

    # -- availability (kube-aggregator's availability controller) -------------------------------------

    def check(self, apiservice: dict) -> tuple[str, str, str]:
        """(status, reason, message) of the Available condition, from a discovery request to the backend."""
        spec = apiservice.get("spec") or {}
        if not self.proxied(apiservice):
            return "True", "Local", "Local APIServices are always available"
        try:
            base = self.backend(apiservice)
        except Unavailable as exc:
            return "False", exc.reason, exc.message
        url = f"{base}/apis/{spec.get('group', '')}/{spec.get('version', '')}"
        try:
            resp = self.send(apiservice, "GET", url, self.identity_headers(*AGGREGATOR_USER), None, CHECK_TIMEOUT,
                              CHECK_CONNECT_TIMEOUT)
        except Exception as exc:  # urllib3 errors, TLS failures: the backend is not usable either way
            return "False", "FailedDiscoveryCheck", f"failing or missing response from {url}: {_reason(exc)}"
        if not 200 <= resp.status < 300:
            return "False", "FailedDiscoveryCheck", (f"failing or missing response from {url}: bad status from "
                                                     f"{url}: {resp.status}")
        return "True", "Passed", "all checks passed"

    def set_available(self, apiservice: dict, status: str, reason: str, message: str) -> None:
        """Write the Available condition if it changed (lastTransitionTime moves only with the status)."""
        conditions = list((apiservice.get("status") or {}).get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == AVAILABLE), None)
        if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (status, reason, message):
            return
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        new = {"type": AVAILABLE, "status": status,
               "lastTransitionTime": old.get("lastTransitionTime", now) if old and old.get("status") == status else now,
               "reason": reason, "message": message}
        body = {**apiservice, "status": {**(apiservice.get("status") or {}),
                                         "conditions": [c for c in conditions if c is not old] + [new]}}
        try:
            self.sandbox.api.update(APISERVICES, "", apiservice["metadata"]["name"], body, subresource="status")
        except ApiError as exc:   # changed or deleted meanwhile: the next read checks again
            log.debug("apiservice status not written name=%s err=%s", apiservice["metadata"]["name"], exc)
            return
        if old is None or old.get("status") != status:
            log.info("apiservice availability name=%s available=%s reason=%s", apiservice["metadata"]["name"],
                     status, reason)

    def refresh(self, name: str | None = None, force: bool = False) -> None:
        """Check (in parallel) the APIServices (or the one named), unless checked within RECHECK_AFTER."""
        now = time.monotonic()
        items = self.sandbox.api.list(APISERVICES, None, None).objects
        due = []
        with self._lock:
            for obj in items:
                n = obj["metadata"]["name"]
                if (name is None or n == name) and (force or now - self._checked.get(n, -1e9) >= RECHECK_AFTER):
                    self._checked[n] = now
                    due.append(obj)
        if not due:
            return
        # insecureSkipTLSVerify is the APIService's own choice: no warning for it. The filter is set here,
        # around the workers, not by each of them (catch_warnings is process-wide, and not thread-safe).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
            if len(due) == 1:
                results = [self.check(due[0])]
            else:
                with ThreadPoolExecutor(max_workers=min(8, len(due)), thread_name_prefix="sandbox-apiservice") as ex:
                    results = list(ex.map(self.check, due))
        for obj, (status, reason, message) in zip(due, results):
            self.set_available(obj, status, reason, message)

    # -- requests ---------------------------------------------------------------------------------------

    def refuses_legacy_discovery(self, handler: Any, parts: list[str]) -> bool:
        """A 406 for `/api/<v>`, `/apis/<group>` and a served `/apis/<group>/<version>` whose Accept header
        names no legacy document (only aggregated discovery, which lives at `/api` and `/apis` alone).
        A registered APIService's group-version is the backend's to answer."""
        served = len(parts) == 3 and parts[0] == "apis" and any(
            (k[0], k[1]) == (parts[1], parts[2]) for k in list(self.sandbox.registry.types))
        if not ((parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 2) or served):
            return False
        return negotiate.discovery_format(handler.headers.get("Accept"), aggregated=False) == disco.NOT_ACCEPTABLE

    def serve_aggregated(self, handler: Any, core: bool) -> bool:
        """`/api` or `/apis` as an APIGroupDiscoveryList when the Accept header asks for one first (False:
        the legacy document answers); 406 when the header allows neither, as the apiserver answers."""
        answer = negotiate.discovery_format(handler.headers.get("Accept"), aggregated=True)
        if answer == disco.NOT_ACCEPTABLE:
            raise ApiError(406, f"only the following media types are accepted: application/json, "
                                f"{disco.media_type('v2')}, {disco.media_type('v2beta1')}")
        if answer == disco.LEGACY:
            return False
        registry = self.sandbox.registry
        items = registry.aggregated_groups(core)
        if not core:
            served = {(g, v) for g, vs in registry.group_versions().items() for v in vs}
            items += self.discovery.apiservice_groups(served)
        handler._send(200, json.dumps(disco.discovery_list(answer, items)).encode(),
                      content_type=disco.media_type(answer))
        return True

    def handle(self, handler: Any, method: str, url: Any, parts: list[str], raw: bytes) -> bool:
        if parts == ["apis"] and method == "GET":
            if self.serve_aggregated(handler, core=False):
                return True
            doc = self.sandbox.registry.api_group_list()
            known = {g["name"] for g in doc["groups"]}
            for group, versions in sorted(self.groups().items()):
                if group in known:
                    continue
                entries = [{"groupVersion": f"{group}/{v}", "version": v} for _, v in versions]
                doc["groups"].append({"name": group, "versions": entries, "preferredVersion": entries[0]})
            handler._send_json(200, doc)
            return True
        if len(parts) >= 2 and parts[1] == "authorization.k8s.io" and parts[-1] == "subjectaccessreviews" \
                and method == "POST":
            review = json.loads(raw or b"{}")
            review["status"] = {"allowed": True, "reason": "the sandbox does not enforce RBAC"}
            handler._send_json(201, review)
            return True
        if len(parts) >= 2 and parts[1] == APISERVICES.group and method in ("POST", "PUT", "PATCH"):
            self.ensure_auth_configmap()
            return False
        if len(parts) >= 4 and parts[1] == APISERVICES.group and parts[3] == APISERVICES.plural and method == "GET":
            self.refresh(parts[4] if len(parts) > 4 else None)   # what `kubectl get apiservice` shows is current
            return False
        if len(parts) < 2 or any(key[0] == parts[1] for key in list(self.sandbox.registry.types)):
            return False  # a group the sandbox serves itself (the common case: no APIService lookup)
        if len(parts) == 2 and method == "GET":
            versions = self.groups().get(parts[1])
            if not versions:
                return False
            entries = [{"groupVersion": f"{parts[1]}/{v}", "version": v} for _, v in versions]
            handler._send_json(200, {"kind": "APIGroup", "apiVersion": "v1", "name": parts[1], "versions": entries,
                                     "preferredVersion": entries[0]})
            return True
        if len(parts) < 3:
            return False
        apiservice = self.find(parts[1], parts[2])
        if apiservice is None:
            return False
        self._proxy(handler, method, url, apiservice, raw)
        return True

    def _proxy(self, handler: Any, method: str, url: Any, apiservice: dict, raw: bytes) -> None:
        name = apiservice["metadata"]["name"]
        try:
            base = self.backend(apiservice)
        except Unavailable as exc:
            self.set_available(apiservice, "False", exc.reason, exc.message)
            raise ApiError(503, exc.message) from None
        headers = self.identity_headers(*self._user(handler))
        for k in _PASS_HEADERS:
            if handler.headers.get(k):
                headers[k] = handler.headers[k]
        target = base + url.path + (f"?{url.query}" if url.query else "")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
                resp = self.send(apiservice, method, target, headers, raw or None, 60.0)
        except Exception as exc:
            log.warning("aggregated API unreachable apiservice=%s url=%s err=%s", name, target, exc)
            self.set_available(apiservice, "False", "FailedDiscoveryCheck",
                               f"failing or missing response from {target}: {_reason(exc)}")
            raise ApiError(503, f"the server is currently unable to handle the request "
                                f"(APIService {name}: {base} unreachable: {type(exc).__name__})") from None
        if not _is_available(apiservice):
            self.refresh(name, force=True)   # it answers again: check it as the aggregator would
        body = resp.data
        handler.send_response(resp.status)
        handler.send_header("Content-Type", resp.headers.get("Content-Type", "application/json"))
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Cache-Control", "no-cache, private")
        handler.end_headers()
        handler.wfile.write(body)

    def _user(self, handler: Any) -> tuple[str, tuple[str, ...]]:
        """Who the proxied request is for: the token's user under RBAC, else the sandbox's admin."""
        sandbox = self.sandbox
        if getattr(sandbox, "authorization", "none") == "rbac":
            user = sandbox.authenticator.authenticate(handler.headers.get("Authorization"), sandbox.store)
            return user.name, tuple(user.groups)
        return USER, GROUPS


def _is_available(apiservice: dict) -> bool:
    return any(c.get("type") == AVAILABLE and c.get("status") == "True"
               for c in (apiservice.get("status") or {}).get("conditions") or [])


def _reason(exc: Exception) -> str:
    """The innermost readable reason of a urllib3 error."""
    reason: Any = exc
    for _ in range(4):
        inner = getattr(reason, "reason", None)
        if inner is None or inner is reason or isinstance(inner, str):
            break
        reason = inner
    text = str(reason)
    return text if len(text) < 300 else text[:300] + "..."
