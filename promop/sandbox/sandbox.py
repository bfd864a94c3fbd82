"""The programmatic handle: start/stop/restart the server, kubeconfig, clients, faults and the
request log."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import TYPE_CHECKING

from promop.sandbox.api import Api
from promop.sandbox.auth import ADMIN_TOKEN, Authenticator
from promop.sandbox.background import Background
from promop.sandbox.discovery import Registry
from promop.sandbox.faults import Faults
from promop.sandbox.kubeconfig import write_kubeconfig
from promop.sandbox.server import RequestRecord, SandboxHTTPServer
from promop.sandbox.store import Store

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, Configuration

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public")


class Sandbox:
    """An in-process Kubernetes API server on 127.0.0.1.

    `history_size` bounds the watch event history (older resumes get 410);
    `bookmark_interval` is the seconds between BOOKMARK events on watches that allow them,
    sent only while the store changes (a real apiserver: about a minute; tests shorten it);
    `bookmark_before_timeout`: a last bookmark this many seconds before a watch's
    `timeoutSeconds` ends (the apiserver's 2 s);
    `simulate_statefulsets` makes every StatefulSet report all its replicas ready, written
    through /status `controller_delay` seconds after each write (as a controller would);
    `gc_delay`: how long after a DELETE the garbage collector and namespace controller act.
    `background.pause()`/`wait_idle()` hold or await that work in tests.
    `authorization="rbac"`: bearer tokens are checked (401) and RBAC decides (403); the
    sandbox's own token (kubeconfig, api_client()) is in system:masters."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", history_size: int = 10000,
                 bookmark_interval: float = 60.0, bookmark_before_timeout: float = 2.0,
                 simulate_statefulsets: bool = False,
                 default_watch_timeout: float = 1800.0, gc_delay: float = 0.05,
                 controller_delay: float = 0.05, authorization: str = "none",
                 publish_root_ca: bool = False) -> None:
        if authorization not in ("none", "rbac"):
            raise ValueError(f'authorization must be "none" or "rbac", not {authorization!r}')
        self.authorization = authorization
        self.authenticator = Authenticator()
        self.host = host
        self.port = port
        self.bookmark_interval = bookmark_interval
        self.bookmark_before_timeout = bookmark_before_timeout
        self.default_watch_timeout = default_watch_timeout
        self.store = Store(history_size)
        self.registry = Registry()
        self.background = Background()
        self.api = Api(self.store, self.registry, simulate_statefulsets, self.background,
                       gc_delay, controller_delay)
        self.faults = Faults(self.store)
        # extension points for other modules (aggregated APIs, more subresources):
        # request_hooks: hook(handler, method, path_parts, params, raw_body, record) -> True
        #   when it answered the request itself (it must set record.code and send a response);
        # subresources[(group, plural, name)] = handler(api, verb, route, params, body,
        #   content_type, manager) -> (code, object); the route is then served and dispatched
        self.request_hooks: list = []
        self.subresources: dict = {}
        self._requests: list[RequestRecord] = []
        self._requests_lock = threading.Lock()
        self._server: SandboxHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._reserved: socket.socket | None = None  # the port, held while stopped (stop(keep_port=True))
        for name in INITIAL_NAMESPACES:
            self.api.create(self.registry.lookup("", "v1", "namespaces"), "",
                            {"metadata": {"name": name}})
        from promop.sandbox import aggregation  # APIService objects and the aggregation proxy

        aggregation.install(self)
        from promop.sandbox import eviction  # pods/eviction, PodDisruptionBudget status

        eviction.install(self)
        if publish_root_ca:  # kube-root-ca.crt in every namespace, as kube-controller-manager (root_ca.py)
            from promop.sandbox.root_ca import RootCAPublisher

            RootCAPublisher(self).start()

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> "Sandbox":
        if self._server is not None:
            return self
        self._release_port()
        try:
            server = SandboxHTTPServer((self.host, self.port), self)
        except OSError as exc:
            raise OSError(exc.errno, f"the sandbox cannot listen on {self.host}:{self.port}: "
                                     f"{exc.strerror}; choose another port, or 0 for a free one"
                          ) from exc
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"promop-sandbox-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self, keep_port: bool = False) -> None:
        """Close the listener and every open connection and watch; state is kept.

        Watches end cleanly. Other requests still in flight (e.g. delayed by injected latency)
        lose their connection but may still be applied, as when an apiserver dies between
        committing a write and answering it. `keep_port`: the port stays bound (connections
        are refused) until start(), so that no other process takes it meanwhile: tests run in
        parallel, and a client of this sandbox must not reach another server on its port."""
        server, self._server = self._server, None
        if server is None:
            return
        server.stopping = True
        server.shutdown()
        server.server_close()
        if keep_port:
            self._reserve_port()
        for watcher in self.store.all_watchers():
            watcher.close()
        # let watches (also those whose handler has not registered yet) end their streams
        # cleanly before their connections are cut; generous for a loaded machine
        deadline = time.monotonic() + 5.0
        while server.watch_streams and time.monotonic() < deadline:
            time.sleep(0.005)
        server.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def restart(self) -> "Sandbox":
        """Stop, then serve the same state on the same port again."""
        self.stop(keep_port=True)
        return self.start()

    def _reserve_port(self) -> None:
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the closed connections' TIME_WAIT
        try:
            sock.bind((self.host, self.port))  # bound, never listening: connections are refused
        except OSError:  # taken in the instant since the listener closed: nothing left to hold
            sock.close()
            return
        self._reserved = sock

    def _release_port(self) -> None:
        reserved, self._reserved = self._reserved, None
        if reserved is not None:
            reserved.close()

    def __enter__(self) -> "Sandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        self._release_port()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- clients -------------------------------------------------------------------------------
    def write_kubeconfig(self, path: str | os.PathLike) -> str:
        return write_kubeconfig(path, self.url)

    def client_configuration(self, token: str | None = None) -> "Configuration":
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        configuration.api_key = {"BearerToken": token or ADMIN_TOKEN}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        return configuration

    def api_client(self, token: str | None = None) -> "ApiClient":
        """A new kubernetes ApiClient pointed at this sandbox (callers close it); with `token`
        (e.g. from service_account_token) it acts as that identity, else as the admin."""
        from kubernetes import client

        return client.ApiClient(self.client_configuration(token))

    # -- identities ----------------------------------------------------------------------------
    def service_account_token(self, namespace: str, name: str) -> str:
        """A bearer token for the ServiceAccount (which must exist), as the TokenRequest API
        gives one."""
        return self.request_token(namespace, name, {})["status"]["token"]

    def request_token(self, namespace: str, name: str, body: dict) -> dict:
        """The `serviceaccounts/<name>/token` subresource: a TokenRequest answered with a
        token valid while the ServiceAccount exists."""
        from promop.sandbox.errors import not_found

        with self.store.lock:
            account = self.store.get(("", "serviceaccounts"), namespace, name)
            if account is None:
                raise not_found("serviceaccounts", "", name)
            uid = account["metadata"]["uid"]
        spec = dict((body or {}).get("spec") or {})
        seconds = int(spec.get("expirationSeconds") or 3600)
        spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
        spec["expirationSeconds"] = seconds
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
                "spec": spec,
                "status": {"token": self.authenticator.issue(namespace, name, uid),
                           "expirationTimestamp": expires}}

    # -- request accounting --------------------------------------------------------------------
    def record(self, record: RequestRecord) -> None:
        with self._requests_lock:
            self._requests.append(record)

    @property
    def requests(self) -> list[RequestRecord]:
        with self._requests_lock:
            return list(self._requests)

    def reset_requests(self) -> None:
        with self._requests_lock:
            self._requests.clear()

    def count_requests(self, verb: str | None = None, resource: str | None = None,
                       write_only: bool = False) -> int:
        return sum(1 for r in self.requests
                   if (verb is None or r.verb == verb) and
                   (resource is None or r.resource == resource) and
                   (not write_only or r.is_write))
