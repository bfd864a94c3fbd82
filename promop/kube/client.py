"""An untyped Kubernetes API client: plain dicts in, plain dicts out.

It rides on the official client's `ApiClient` only for configuration, auth
(bearer tokens with refresh hooks, client certificates) and its urllib3
connection pool; every request goes through its auth hooks + `call_api`
and the raw bytes are decoded with orjson (about twice as fast as `json.loads`
on API pages, and it shares repeated dict keys). The generated pydantic models
are never built: an informer's initial sync through them takes about 7x the time
and 3.5x the memory (see bench/informer), and they cannot express PartialObjectMetadata.

One `KubeClient` is meant to be shared by every thread of the process. Size
its pool (`pool_size`) for every open watch plus every worker: urllib3
discards connections beyond it, which turns into reconnect churn.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import deque
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import quote, urlencode

import orjson
import urllib3
from urllib3.util.retry import Retry
from kubernetes.client import ApiClient, Configuration
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException

from promop.kube.client_metrics import ClientMetrics, client_metrics
from promop.kube import managed_fields_cut
from promop.kube.client_ratelimit import TokenBucket
from promop.kube.errors import ApiUnreachable, Gone, RequestTimeout, WatchIdleTimeout, error_from_response, error_from_status
from promop.kube.resources import Resource
from promop.kube.user_agent import default_component, is_generated_default, user_agent

JSON = "application/json"
_META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
_META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


class _NoTimeoutRetry(Retry):
    """urllib3's Retry, except that a timeout is final: repeating it would stretch a
    call's timeout (or a caller's deadline) to several times what was asked."""

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):  # type: ignore[override]
        if isinstance(error, urllib3.exceptions.TimeoutError):
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)


# Connection-level retries only (refused connects, stale pooled connections on idempotent
# requests); never on an HTTP status or a timeout, and never sleeping for Retry-After.
_RETRIES = _NoTimeoutRetry(total=3, connect=3, read=2, redirect=3, status=0, other=0,
                           respect_retry_after_header=False, raise_on_status=False)
_NO_RESPONSE = (urllib3.exceptions.HTTPError, OSError, ApiException)
# without timeoutSeconds an apiserver ends a watch after [min-request-timeout, 2x], 1800 s by default
_SERVER_MAX_WATCH_TIMEOUT = 3600
WATCH_IDLE_GRACE = 30.0  # seconds past a watch's timeoutSeconds before a silent stream counts as dead


def partial_metadata(obj: dict) -> dict:
    """`obj` reduced to a PartialObjectMetadata (what `as=PartialObjectMetadata` returns)."""
    if obj.get("kind") == "PartialObjectMetadata":
        return obj
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata") or {}}


def _fill_type(items: list[dict], list_kind: str, api_version: str) -> None:
    """List items come without apiVersion/kind on the wire; give them back."""
    kind = list_kind[:-4] if list_kind.endswith("List") else list_kind
    for item in items:
        if "kind" not in item:
            item["kind"] = kind
        if "apiVersion" not in item:
            item["apiVersion"] = api_version


def _decode_without_managed_fields(data: bytes) -> dict | None:
    """A List body decoded with its items' managedFields cut out first (`managed_fields_cut`),
    or None when they could not be (decode the body whole then)."""
    cut = managed_fields_cut.cut(data)
    if cut is None:
        return None
    body, cuts = cut
    try:
        page = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    items = page.get("items") if type(page) is dict else None
    if type(items) is not list or not managed_fields_cut.verify_and_drop(items, cuts):
        return None
    return page


def _list_query(label_selector: str | None, field_selector: str | None, limit: int | None,
                continue_token: str | None, resource_version: str | None) -> dict[str, Any]:
    query: dict[str, Any] = {}
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    if limit:
        query["limit"] = int(limit)
    if continue_token:
        query["continue"] = continue_token
    if resource_version is not None:
        query["resourceVersion"] = resource_version
    return query


def _timed_out(exc: BaseException) -> bool:
    """Whether a transport error is (or wraps) a timeout."""
    for _ in range(8):  # a chain of causes, never a loop
        if exc is None:
            return False
        if isinstance(exc, (urllib3.exceptions.TimeoutError, socket.timeout, TimeoutError)):
            return True
        if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
            exc = exc.reason
        else:
            exc = exc.__cause__ or exc.__context__
    return False


class KubeClient:
    """Raw-JSON get/list/watch/create/update/patch/delete of any resource.

    Every request except the streaming part of a watch passes a client-side
    token bucket (`qps`, `burst`), like client-go's rest.Config. Requests are
    counted in `prometheus_operator_kubernetes_client_http_requests_total` and
    timed per path template in `..._http_request_duration_seconds`.

    The given ApiClient's urllib3 pool is rebuilt: with `pool_size` connections
    when given, and with connection-level retries only (see `_RETRIES`).

    Requests carry the User-Agent `promop/<version> (<component>)`
    (`component` defaults to the program's name, see `user_agent`), unless
    the ApiClient already carries one its owner chose, which is kept (as
    client-go's rest.Config.UserAgent overrides its default).
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        qps: float = 50,
        burst: int = 100,
        pool_size: int | None = None,
        request_timeout: tuple[float, float] = (10.0, 60.0),
        registry: Any = None,
        component: str | None = None,
    ) -> None:
        self.api_client = api_client
        if is_generated_default(api_client.user_agent):
            api_client.user_agent = user_agent(component or default_component())
        cfg = api_client.configuration
        if pool_size is not None:
            cfg.connection_pool_maxsize = pool_size
        # urllib3 would silently sleep through 429/503 Retry-After; callers must see those.
        cfg.retries = _RETRIES
        if cfg.socket_options is None:
            # TCP keepalive (30 s idle, as client-go asks the kernel for): a watch on a quiet
            # resource carries no data for minutes, and only probes tell a half-open connection
            cfg.keep_alive = True
        api_client.rest_client = rest.RESTClientObject(cfg)
        self._host = cfg.host
        self.limiter = TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self.metrics: ClientMetrics = client_metrics(registry)

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def _configured(cls, load: Any, failure: str, pool_size: int, **kw: Any) -> "KubeClient":
        """A client on a fresh Configuration filled by `load(cfg)`; `failure` prefixes config errors."""
        from kubernetes.config.config_exception import ConfigException

        cfg = Configuration()
        try:
            load(cfg)
        except (ConfigException, OSError) as exc:
            raise ApiUnreachable(failure.replace("{error}", str(exc))) from exc
        cfg.connection_pool_maxsize = pool_size
        return cls(ApiClient(cfg), **kw)

    @classmethod
    def from_kubeconfig(
        cls, path: str | None = None, context: str | None = None, *, pool_size: int = 32, **kw: Any,
    ) -> "KubeClient":
        """A client for `context` (default: current) of the kubeconfig at `path` (default: $KUBECONFIG, ~/.kube/config).

        `qps`/`burst` (default 50/100) and the other keywords go to the constructor.
        """
        from kubernetes.config import load_kube_config

        path = path or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        where = f"context {context!r} of " if context else ""
        return cls._configured(
            lambda cfg: load_kube_config(config_file=path, context=context, client_configuration=cfg, persist_config=False),
            f"cannot load {where}kubeconfig {path}: {{error}}; pass --kubeconfig/--context or set KUBECONFIG",
            pool_size, **kw,
        )

    @classmethod
    def in_cluster(cls, *, pool_size: int = 32, **kw: Any) -> "KubeClient":
        """A client from the pod's service account (the token file is re-read as it rotates)."""
        from kubernetes.config import load_incluster_config

        return cls._configured(
            lambda cfg: load_incluster_config(client_configuration=cfg),
            "cannot load the in-cluster configuration: {error}; run in a pod with a service account, or pass a kubeconfig",
            pool_size, **kw,
        )

    @classmethod
    def from_config(cls, kubeconfig: str | None = None, context: str | None = None, **kw: Any) -> "KubeClient":
        """In-cluster when no kubeconfig is given and KUBERNETES_SERVICE_HOST is set, else the kubeconfig."""
        if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
            return cls.in_cluster(**kw)
        return cls.from_kubeconfig(kubeconfig, context, **kw)

    @property
    def host(self) -> str:
        return self.api_client.configuration.host

    def close(self) -> None:
        self.api_client.close()

    # ---- the one request path ---------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        endpoint: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
        timeout: tuple[float, float] | float | None = None,
        stream: bool = False,
        raw: bool = False,
    ) -> Any:
        """One request; a float `timeout` bounds the whole call, rate-limit wait included.

        Returns the decoded body, or with `raw` its bytes (checked for errors only).
        """
        deadline = time.monotonic() + timeout if isinstance(timeout, (int, float)) else None
        waited = self.limiter.wait(None if deadline is None else timeout)
        if waited is None:
            raise RequestTimeout(f"the client rate limit (qps={self.limiter.qps:g}) would delay the call "
                                 f"beyond its {timeout:g} s timeout", method=method, path=path)
        if waited:
            self.metrics.rate_limited.labels(endpoint).observe(waited)
        if deadline is not None:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise RequestTimeout(f"timed out waiting for the client rate limit ({waited:.2f} s)",
                                     method=method, path=path)
        target = path + ("?" + urlencode(query, quote_via=quote) if query else "")
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        url, headers = self._prepare(method, target, headers)
        started = time.monotonic()
        try:
            response = self.api_client.call_api(
                method, url, header_params=headers, body=body, _request_timeout=timeout or self.request_timeout
            ).response
        except _NO_RESPONSE as exc:
            self.metrics.observe(endpoint, None, time.monotonic() - started)
            if deadline is not None and _timed_out(exc):
                raise RequestTimeout(f"no response from {self.host} within the call's timeout: {exc}",
                                     method=method, path=path) from exc
            raise ApiUnreachable(f"no response from {self.host}: {exc}", method=method, path=path) from exc
        status = response.status
        if stream and 200 <= status < 300:
            self.metrics.observe(endpoint, status, time.monotonic() - started)
            return response
        try:
            data = response.data
        except _NO_RESPONSE as exc:
            response.close()
            self.metrics.observe(endpoint, None, time.monotonic() - started)
            if deadline is not None and _timed_out(exc):
                raise RequestTimeout(f"response from {self.host} not read within the call's timeout: {exc}",
                                     method=method, path=path) from exc
            raise ApiUnreachable(f"response from {self.host} cut short: {exc}", method=method, path=path) from exc
        finally:
            response.release_conn()
        self.metrics.observe(endpoint, status, time.monotonic() - started)
        if not 200 <= status < 300:
            raise error_from_response(status, data, headers=response.headers, method=method, path=path)
        if raw:
            return data
        return orjson.loads(data) if data else {}

    def _prepare(self, method: str, target: str, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
        """The URL and headers of a request: `param_serialize` without its per-call cost.

        Configuration.host re-reads the proxy environment on every access
        (~0.4 ms), so the host is read once; the auth hooks (token refresh,
        client certificates) still run on every request.
        """
        api = self.api_client
        headers.update(api.default_headers)
        if api.cookie:
            headers["Cookie"] = api.cookie
        api.update_params_for_auth(headers, None, ["BearerToken"], target, method, None)
        return self._host + target, headers

    # ---- reads ------------------------------------------------------------------------

    def version(self, *, timeout: float | None = None) -> dict:
        """GET /version: the request every authenticated identity may make (upstream's
        `system:public-info-viewer`), so it proves the apiserver answers and the credentials
        authenticate without needing any RBAC grant."""
        return self._request("GET", "/version", endpoint="/version", timeout=timeout)

    def get(
        self, res: Resource, name: str, namespace: str | None = None, *, subresource: str | None = None,
        metadata_only: bool = False, timeout: float | None = None,
    ) -> dict:
        """GET one object (or its subresource).

        `timeout` (seconds) bounds the whole call, rate-limit wait included, and
        raises `RequestTimeout` when it passes; by default the client's
        (connect, read) `request_timeout` applies. Same for create and update.
        """
        self._need_namespace(res, namespace, "get")
        obj = self._request(
            "GET", res.path(namespace, name, subresource), endpoint=res.endpoint(namespace, name, subresource),
            accept=f"{_META},{JSON}" if metadata_only else JSON, timeout=timeout,
        )
        return partial_metadata(obj) if metadata_only else obj

    def list(
        self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
        field_selector: str | None = None, limit: int | None = None, continue_token: str | None = None,
        resource_version: str | None = None, metadata_only: bool = False,
        transform: Callable[[dict], Any] | None = None,
    ) -> dict:
        """One LIST page as the raw List dict; all namespaces when `namespace` is None.

        `transform` replaces each item by what it returns.
        """
        data = self._list_data(res, namespace, label_selector=label_selector, field_selector=field_selector,
                               limit=limit, continue_token=continue_token, resource_version=resource_version,
                               metadata_only=metadata_only)
        return self._list_page(data, res, metadata_only, transform)

    def _list_data(
        self, res: Resource, namespace: str | None, *, label_selector: str | None = None,
        field_selector: str | None = None, limit: int | None = None, continue_token: str | None = None,
        resource_version: str | None = None, metadata_only: bool = False,
    ) -> bytes:
        query = _list_query(label_selector, field_selector, limit, continue_token, resource_version)
        return self._request(
            "GET", res.path(namespace), endpoint=res.endpoint(namespace), query=query,
            accept=f"{_META_LIST},{JSON}" if metadata_only else JSON, raw=True,
        )

    @staticmethod
    def _list_page(data: bytes, res: Resource, metadata_only: bool, transform: Callable[[dict], Any] | None,
                   page_transform: Callable[[list[dict]], list] | None = None,
                   drop_managed_fields: bool = False) -> dict:
        page = _decode_without_managed_fields(data) if drop_managed_fields else None
        if page is None:
            page = orjson.loads(data) if data else {}
        del data
        items = page.get("items")
        if items is None:
            page["items"] = items = []
        if metadata_only:
            page["items"] = items = [partial_metadata(o) for o in items]
        else:
            _fill_type(items, page.get("kind") or "", page.get("apiVersion") or res.api_version)
        if transform is not None:
            page["items"] = items = list(map(transform, items))
        if page_transform is not None:
            page["items"] = page_transform(items)
        return page

    def list_all(
        self, res: Resource, namespace: str | None = None, *, page_size: int = 500,
        transform: Callable[[dict], Any] | None = None, page_transform: Callable[[list[dict]], list] | None = None,
        drop_managed_fields: bool = False, **kw: Any
    ) -> tuple[list[Any], str]:
        """Every object, paging by `page_size`; returns (items, the list's resourceVersion).

        `transform` is applied to each item as its page arrives (so a
        slimming transform bounds the peak memory of a big LIST);
        `page_transform` then to the page's item list, and what it returns
        is what the page contributes to the result. If the continue token
        expires mid-way (410), falls back to one unpaginated LIST, as
        client-go's pager does with FullListIfExpired.

        `drop_managed_fields` promises that the caller discards each item's
        metadata.managedFields: they are then cut out of the bytes before
        decoding (see `managed_fields_cut`), and never reach `transform`.
        """
        items, rv, _ = self.list_paged(res, namespace, page_size=page_size, transform=transform,
                                       page_transform=page_transform, drop_managed_fields=drop_managed_fields, **kw)
        return items, rv

    def list_paged(
        self, res: Resource, namespace: str | None = None, *, page_size: int = 500,
        transform: Callable[[dict], Any] | None = None, page_transform: Callable[[list[dict]], list] | None = None,
        drop_managed_fields: bool = False, **kw: Any
    ) -> tuple[list[Any], str, bool]:
        """`list_all`, also saying whether the answer came in more than one page.

        client-go's pager: `page_size` 0 asks for everything at once; a
        `resource_version` goes on the first request only (the apiserver
        refuses one alongside a continue token, and the token carries the
        snapshot); an expired continue token falls back to one unpaginated
        consistent LIST. The reflector needs the flag: a paginated answer to
        an RV="0" LIST means no watch cache serves the resource.
        """
        metadata_only = bool(kw.get("metadata_only"))
        later = {k: v for k, v in kw.items() if k != "resource_version"}
        items: list[Any] = []
        token: str | None = None
        rv = ""
        while True:
            try:
                if token is None:
                    data = self._list_data(res, namespace, limit=page_size or None, **kw)
                else:
                    data = self._list_data(res, namespace, limit=page_size or None, continue_token=token, **later)
            except Gone:
                if token is None:
                    raise
                data = self._list_data(res, namespace, **later)  # one unpaginated LIST
                page = self._list_page(data, res, metadata_only, transform, page_transform, drop_managed_fields)
                return page["items"], (page.get("metadata") or {}).get("resourceVersion", ""), True
            page = self._list_page(data, res, metadata_only, transform, page_transform, drop_managed_fields)
            del data
            meta = page.get("metadata") or {}
            if token is None:
                rv = meta.get("resourceVersion", "")
            items.extend(page["items"])
            paginated = token is not None
            token = meta.get("continue") or None
            if not token:
                return items, rv, paginated

    def watch(
        self, res: Resource, namespace: str | None = None, *, resource_version: str | None = None,
        timeout_seconds: int | None = None, allow_bookmarks: bool = True, label_selector: str | None = None,
        field_selector: str | None = None, metadata_only: bool = False, idle_timeout: float | None = None,
        connect_timeout: float | None = None,
    ) -> "WatchStream":
        """Open a WATCH; iterate the returned stream for event dicts `{"type", "object"}`.

        `idle_timeout` is the socket read timeout, a guard against dead
        connections: a stream silent for longer raises `WatchIdleTimeout`
        instead of hanging. A real apiserver sends nothing on a quiet watch
        until `timeout_seconds` ends it, so the default is longer than that:
        `timeout_seconds` (or, without it, the longest a server picks) plus
        a grace. An ERROR event raises the mapped ApiError (`Gone` for 410).
        The stream ends when the server closes.
        """
        if idle_timeout is None:
            idle_timeout = (timeout_seconds or _SERVER_MAX_WATCH_TIMEOUT) + WATCH_IDLE_GRACE
        query: dict[str, Any] = {"watch": "true"}
        if resource_version is not None:
            query["resourceVersion"] = resource_version
        if timeout_seconds:
            query["timeoutSeconds"] = int(timeout_seconds)
        if allow_bookmarks:
            query["allowWatchBookmarks"] = "true"
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        path = res.path(namespace)
        response = self._request(
            "GET", path, endpoint=res.endpoint(namespace) + "?watch", query=query,
            accept=f"{_META},{JSON}" if metadata_only else JSON,
            timeout=(connect_timeout or self.request_timeout[0], idle_timeout), stream=True,
        )
        return WatchStream(response, metadata_only=metadata_only, path=path, idle_timeout=idle_timeout)

    # ---- writes -----------------------------------------------------------------------

    def create(self, res: Resource, body: dict, namespace: str | None = None, *, timeout: float | None = None) -> dict:
        """POST `body`; the namespace defaults to body.metadata.namespace. `timeout`: as for get."""
        namespace = namespace or (body.get("metadata") or {}).get("namespace")
        self._need_namespace(res, namespace, "create")
        return self._request(
            "POST", res.path(namespace), endpoint=res.endpoint(namespace), body=body, content_type=JSON,
            timeout=timeout,
        )

    def update(
        self, res: Resource, body: dict, namespace: str | None = None, *, subresource: str | None = None,
        timeout: float | None = None,
    ) -> dict:
        """PUT `body` (a full object; its metadata.resourceVersion makes it a compare-and-swap).
        `timeout`: as for get."""
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ValueError(f"update of {res.label}: body has no metadata.name")
        namespace = namespace or meta.get("namespace")
        self._need_namespace(res, namespace, "update")
        return self._request(
            "PUT", res.path(namespace, name, subresource), endpoint=res.endpoint(namespace, name, subresource),
            body=body, content_type=JSON, timeout=timeout,
        )

    def patch(
        self, res: Resource, name: str, patch: Any, namespace: str | None = None, *, patch_type: str = "merge",
        subresource: str | None = None, field_manager: str | None = None, force: bool = False,
    ) -> dict:
        """PATCH with `patch_type` "merge" (RFC 7386), "json" (RFC 6902 list), "strategic" or "apply"."""
        if patch_type not in PATCH_TYPES:
            raise ValueError(f"patch of {res.label}/{name}: patch_type {patch_type!r} is not one of {sorted(PATCH_TYPES)}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError(f"patch of {res.label}/{name}: a JSON patch is a list of operations, got {type(patch).__name__}")
        query: dict[str, Any] = {}
        if patch_type == "apply":
            if not field_manager:
                raise ValueError(f"server-side apply of {res.label}/{name} needs field_manager")
            if force:
                query["force"] = "true"
        if field_manager:
            query["fieldManager"] = field_manager
        self._need_namespace(res, namespace, "patch")
        return self._request(
            "PATCH", res.path(namespace, name, subresource), endpoint=res.endpoint(namespace, name, subresource),
            query=query, body=patch, content_type=PATCH_TYPES[patch_type],
        )

    def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict:
        """DELETE; returns the server's answer (the object, or a Status)."""
        body = None
        if propagation_policy or preconditions:
            body = {"kind": "DeleteOptions", "apiVersion": "v1"}
            if propagation_policy:
                body["propagationPolicy"] = propagation_policy
            if preconditions:
                body["preconditions"] = dict(preconditions)
        self._need_namespace(res, namespace, "delete")
        return self._request(
            "DELETE", res.path(namespace, name), endpoint=res.endpoint(namespace, name), body=body,
            content_type=JSON if body else None,
        )

    @staticmethod
    def _need_namespace(res: Resource, namespace: str | None, verb: str) -> None:
        if res.namespaced and not namespace:
            raise ValueError(f"{verb} of {res.label}: a namespaced resource needs a namespace")


class WatchStream:
    """The events of one open WATCH, decoded line by line.

    Iterating yields `{"type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": dict}`.
    `resource_version` is the RV of the last event seen (bookmarks included).
    `close()` may be called from another thread to unblock a reader.
    """

    def __init__(self, response: Any, *, metadata_only: bool, path: str, idle_timeout: float) -> None:
        self._response = response
        self._metadata_only = metadata_only
        self._path = path
        self._idle_timeout = idle_timeout
        self._lines: deque[bytes] = deque()
        self._partial = b""
        self._closed = False
        self._eof = False
        self._read_lock = threading.Lock()
        self.resource_version: str | None = None
        self.events = 0

    def __iter__(self) -> Iterator[dict]:
        return self

    def __enter__(self) -> "WatchStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __next__(self) -> dict:
        while True:
            line = self._next_line()
            if not line.strip():
                continue
            try:
                event = orjson.loads(line)
            except ValueError as exc:
                self.close()
                raise ApiUnreachable(f"undecodable watch event {line[:200]!r}: {exc}", method="WATCH", path=self._path) from exc
            obj = event.get("object") or {}
            if event.get("type") == "ERROR":
                self.close()
                raise error_from_status(obj, method="WATCH", path=self._path)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.resource_version = rv
            if self._metadata_only and event.get("type") != "BOOKMARK":
                event["object"] = partial_metadata(obj)
            self.events += 1
            return event

    def _next_line(self) -> bytes:
        while not self._lines:
            if self._eof or self._closed:
                raise StopIteration
            self._fill()
        return self._lines.popleft()

    def _fill(self) -> None:
        with self._read_lock:
            if self._closed:
                self._release()
                raise StopIteration
            try:
                chunk = self._response.read1(65536)
            except (urllib3.exceptions.ReadTimeoutError, socket.timeout, TimeoutError) as exc:
                closed_by_us = self._closed
                self._release()
                if closed_by_us:
                    raise StopIteration from None
                raise WatchIdleTimeout(
                    f"no data for {self._idle_timeout:g}s", method="WATCH", path=self._path
                ) from exc
            except _NO_RESPONSE as exc:
                closed_by_us = self._closed
                self._release()
                if closed_by_us:
                    raise StopIteration from None
                raise ApiUnreachable(f"watch stream broken: {exc}", method="WATCH", path=self._path) from exc
            if self._closed:
                self._release()
                raise StopIteration
        if not chunk:
            self._eof = True
            if self._partial:
                self._lines.append(self._partial)
                self._partial = b""
            self._release(clean=True)
            return
        parts = (self._partial + chunk).split(b"\n")
        self._partial = parts.pop()
        self._lines.extend(parts)

    def _release(self, clean: bool = False) -> None:
        try:
            if clean:
                self._response.release_conn()
            else:
                self._response.close()
        except Exception:  # noqa: BLE001 - best effort on a dead connection
            pass

    def close(self) -> None:
        """Stop the stream; safe from any thread, idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._read_lock.acquire(blocking=False):
            try:
                self._release()
            finally:
                self._read_lock.release()
        else:
            try:
                self._response.shutdown()  # wakes the reader blocked in recv()
            except Exception:  # noqa: BLE001 - already released or not shut-downable
                pass
