"""API aggregation in the sandbox: `APIService` objects, and `/apis/<group>/<version>/...`
proxied to the registered service, as kube-apiserver's aggregator does.

So `kubectl get --raw /apis/custom.metrics.k8s.io/v1beta2/...`, `kubectl top pod` and
`kubectl top node` work against a sandbox with `promop adapter` registered.

- The backend's URL: the APIService's `sandbox.promop.dev/url` annotation if set, else its
  Service's `spec.clusterIP` (which the sandbox does not allocate: set it, e.g. 127.0.0.1)
  and `spec.service.port` (default 443), over HTTPS.
- Proxied requests carry the front proxy's client certificate and `X-Remote-User`/
  `X-Remote-Group` (the sandbox authenticates everyone as system:admin, group system:masters).
  The front proxy's CA is published in `kube-system/extension-apiserver-authentication`
  (created with the first APIService), so the backend can verify it as in a cluster.
- The backend's certificate is checked against `spec.caBundle`, or not at all with
  `spec.insecureSkipTLSVerify: true`.
- SubjectAccessReviews (how backends authorize) are answered `allowed`: the sandbox does not
  enforce RBAC.
- `/apis` lists the aggregated groups; `/apis/<group>` answers for them; everything below a
  registered group/version goes to the backend. A backend that cannot be reached gives 503.
"""

from __future__ import annotations

import base64
import json
import logging
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def install(sandbox: "Sandbox") -> None:
    """Serve APIService objects and attach the aggregator to `sandbox`."""
    sandbox.registry.add(APISERVICES)
    sandbox.aggregator = Aggregator(sandbox)  # type: ignore[attr-defined]


def handle(handler: Any, method: str, url: Any, parts: list[str], raw: bytes) -> bool:
    """The server's hook: True when the request was answered here."""
    aggregator: Aggregator | None = getattr(handler.server.sandbox, "aggregator", None)
    if aggregator is None or not parts or parts[0] != "apis":
        return False
    try:
        return aggregator.handle(handler, method, url, parts, raw)
    except ApiError as error:
        handler._send_json(error.code, error.status(), error.headers)
        return True


class Aggregator:
    def __init__(self, sandbox: "Sandbox") -> None:
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._pki: dict[str, Any] | None = None
        self._session: Any = None

    # -- the front proxy's identity ----------------------------------------------------------------

    def _front_proxy(self) -> dict[str, Any]:
        with self._lock:
            if self._pki is None:
                from promop.adapter.certs import CA

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

    def _apiservices(self) -> list[dict]:
        items = self.sandbox.api.list(APISERVICES, None, None).objects
        return [obj for obj in items if (obj.get("spec") or {}).get("group")]

    def groups(self) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = {}
        for obj in self._apiservices():
            spec = obj["spec"]
            out.setdefault(spec["group"], []).append((-int(spec.get("versionPriority") or 0), spec.get("version", "")))
        return {g: sorted(vs) for g, vs in out.items()}

    def find(self, group: str, version: str) -> dict | None:
        for obj in self._apiservices():
            spec = obj["spec"]
            if spec.get("group") == group and spec.get("version") == version:
                return obj
        return None

    def backend_url(self, apiservice: dict) -> str:
        annotations = (apiservice.get("metadata") or {}).get("annotations") or {}
        if annotations.get(URL_ANNOTATION):
            return annotations[URL_ANNOTATION].rstrip("/")
        ref = (apiservice.get("spec") or {}).get("service")
        name = apiservice["metadata"]["name"]
        if not ref:
            raise ApiError(503, f"the APIService {name} has no spec.service (a local APIService): "
                                "nothing to proxy to")
        rt = self.sandbox.registry.lookup("", "v1", "services")
        try:
            svc = self.sandbox.api.get(rt, ref.get("namespace", ""), ref.get("name", ""))
        except ApiError:
            raise ApiError(503, f"service {ref.get('namespace')}/{ref.get('name')} of APIService {name} does not "
                                "exist") from None
        ip = (svc.get("spec") or {}).get("clusterIP")
        if not ip or ip == "None":
            raise ApiError(503, f"service {ref.get('namespace')}/{ref.get('name')} has no spec.clusterIP: in the "
                                f"sandbox set it (e.g. 127.0.0.1) or annotate the APIService with {URL_ANNOTATION}")
        host = f"[{ip}]" if ":" in ip else ip
        return f"https://{host}:{int(ref.get('port') or 443)}"

    # -- requests ---------------------------------------------------------------------------------------

    def handle(self, handler: Any, method: str, url: Any, parts: list[str], raw: bytes) -> bool:
        if parts == ["apis"] and method == "GET":
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
        import requests

        base = self.backend_url(apiservice)
        spec = apiservice.get("spec") or {}
        verify: Any = True
        if spec.get("insecureSkipTLSVerify"):
            verify = False
        elif spec.get("caBundle"):
            ca = self._front_proxy()["dir"] / f"ca-{apiservice['metadata']['name']}.crt"
            ca.write_bytes(base64.b64decode(spec["caBundle"]))
            verify = str(ca)
        headers = {k: handler.headers[k] for k in _PASS_HEADERS if handler.headers.get(k)}
        headers["X-Remote-User"] = USER
        headers["X-Remote-Group"] = GROUPS[0]   # one header per group in kube-apiserver; the first decides here
        target = base + url.path + (f"?{url.query}" if url.query else "")
        with self._lock:
            if self._session is None:
                self._session = requests.Session()
                self._session.trust_env = False
            session = self._session
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # insecureSkipTLSVerify is the APIService's own choice
                resp = session.request(method, target, data=raw or None, verify=verify, timeout=60,
                                       cert=self._front_proxy()["cert"] if base.startswith("https") else None,
                                       headers=headers)
        except requests.RequestException as exc:
            log.warning("aggregated API unreachable apiservice=%s url=%s err=%s", apiservice["metadata"]["name"],
                        target, exc)
            raise ApiError(503, f"the server is currently unable to handle the request "
                                f"(APIService {apiservice['metadata']['name']}: {base} unreachable: "
                                f"{type(exc).__name__})") from None
        body = resp.content
        handler.send_response(resp.status_code)
        handler.send_header("Content-Type", resp.headers.get("Content-Type", "application/json"))
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Cache-Control", "no-cache, private")
        handler.end_headers()
        handler.wfile.write(body)

