"""A minimal Kubernetes API client for one object at a time: GET, then WATCH from its version.

The reloader stays independent of promop's runtime, so this is its own:
kubecreds.py loads credentials (in-cluster or a kubeconfig) without the
`kubernetes` package (123 MB in an image, for reading two files), `requests`
does the HTTP. It needs `get` and `watch` on the named object and
nothing else: the watch is a list request narrowed by `metadata.name`, which the
apiserver authorizes against a Role's `resourceNames`.
"""
from __future__ import annotations

import json
import random
import threading
from typing import Any, Callable, Iterator
from urllib.parse import quote

import requests

from . import kubecreds
from .logs import Log
from .specs import ObjectRef, parse_object_ref  # noqa: F401 (re-exported)

# Server-side watch timeout, drawn per watch as client-go does (5-10 minutes).
WATCH_TIMEOUT_RANGE = (300, 600)
# The read timeout is longer than the server's own: a quiet watch is not a dead one.
READ_MARGIN = 30.0
CONNECT_TIMEOUT = 5.0
BACKOFF_START = 0.2
BACKOFF_MAX = 5.0


class ApiConfigError(Exception):
    """The credentials for the Kubernetes API could not be loaded."""


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Api:
    """Base URL plus an authenticated requests session."""

    def __init__(self, host: str, session: requests.Session, auth_refresh: Callable[[], dict[str, str]] | None = None):
        self.host = host.rstrip("/")
        self.session = session
        self._auth_refresh = auth_refresh

    def _headers(self) -> dict[str, str]:
        return self._auth_refresh() if self._auth_refresh else {}

    def object_url(self, ref: ObjectRef) -> str:
        return f"{self.host}/api/v1/namespaces/{quote(ref.namespace)}/{ref.plural}/{quote(ref.name)}"

    def get(self, ref: ObjectRef, timeout: float = 10.0) -> dict | None:
        """The object, or None when it does not exist."""
        resp = self.session.get(self.object_url(ref), headers=self._headers(), timeout=(CONNECT_TIMEOUT, timeout))
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise ApiError(resp.status_code, _message(resp))
        return resp.json()

    def watch(self, ref: ObjectRef, resource_version: str, timeout_seconds: int) -> Iterator[dict]:
        """Events for the object from `resource_version` ("" = its current state first)."""
        params = {
            "watch": "1",
            "fieldSelector": f"metadata.name={ref.name}",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if resource_version:
            params["resourceVersion"] = resource_version
        url = f"{self.host}/api/v1/namespaces/{quote(ref.namespace)}/{ref.plural}"
        with self.session.get(url, params=params, headers=self._headers(), stream=True,
                              timeout=(CONNECT_TIMEOUT, timeout_seconds + READ_MARGIN)) as resp:
            if resp.status_code != 200:
                raise ApiError(resp.status_code, _message(resp))
            for line in resp.iter_lines(chunk_size=None):
                if line:
                    yield json.loads(line)


def _message(resp: requests.Response) -> str:
    try:
        return str(resp.json().get("message") or resp.reason)
    except ValueError:
        return resp.text[:200] or str(resp.reason)


def load_api(kubeconfig: str = "") -> Api:
    """In-cluster credentials, or the kubeconfig given (or $KUBECONFIG / ~/.kube/config)."""
    try:
        creds = kubecreds.load(kubeconfig)
    except kubecreds.CredentialsError as exc:
        where = kubeconfig or "in-cluster service account or default kubeconfig"
        raise ApiConfigError(f"cannot load Kubernetes API credentials ({where}): {exc}") from exc
    session = requests.Session()
    session.trust_env = False
    session.headers["User-Agent"] = "promop-config-reloader/0.1.0"
    session.verify = (creds.ca_file or True) if creds.verify else False
    if creds.cert_file and creds.key_file:
        session.cert = (creds.cert_file, creds.key_file)
    return Api(creds.host, session, creds.headers)


class ObjectWatch:
    """Follows one object through the API in a thread of its own.

    `on_object(obj)` gets every version (the current one first, then changes);
    `on_missing()` when it does not exist or is deleted. Errors back off and
    retry forever; an expired resourceVersion (410) starts over with a GET; a
    watch the server ends at its timeout resumes from the last version seen.
    """

    def __init__(self, api: Api, ref: ObjectRef, on_object: Callable[[dict], None],
                 on_missing: Callable[[], None], log: Log,
                 on_event: Callable[[], None] | None = None, on_error: Callable[[], None] | None = None):
        self.api = api
        self.ref = ref
        self.on_object = on_object
        self.on_missing = on_missing
        self.log = log
        self.on_event = on_event or (lambda: None)
        self.on_error = on_error or (lambda: None)
        self.stop = threading.Event()
        self.connected = threading.Event()  # set while a watch is open and caught up
        self._thread = threading.Thread(target=self._run, name=f"watch-{ref}", daemon=True)

    def start(self) -> "ObjectWatch":
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop.set()

    def fetch_once(self) -> bool:
        """One GET, for init mode; False when the API could not be reached."""
        try:
            self._deliver(self.api.get(self.ref))
            return True
        except (requests.RequestException, ApiError, ValueError) as exc:
            self.log.warning("cannot read through the API; using the mounted copy", object=str(self.ref),
                             err=str(exc))
            return False

    def _deliver(self, obj: dict | None) -> str:
        if obj is None:
            self.on_missing()
            return ""
        self.on_object(obj)
        return str((obj.get("metadata") or {}).get("resourceVersion") or "")

    def _run(self) -> None:
        backoff = BACKOFF_START
        rv: str | None = None  # None: GET first
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self._deliver(self.api.get(self.ref))
                rv = self._follow(rv)
                backoff = BACKOFF_START  # the server ended a healthy watch: resume at once
            except _Expired:
                self.log.info("watch version expired; reading the object again", object=str(self.ref))
                rv = None
            except (requests.RequestException, ApiError, ValueError) as exc:
                self.connected.clear()
                self.on_error()
                if isinstance(exc, ApiError) and exc.status == 410:
                    rv = None
                self.log.warning("API watch failed; the mounted copy stays in use meanwhile",
                                 object=str(self.ref), err=str(exc), retry_in=round(backoff, 2))
                if self.stop.wait(backoff * (0.5 + random.random() / 2)):
                    return
                backoff = min(backoff * 2, BACKOFF_MAX)
                rv = None  # after an outage, read the current state first
        self.connected.clear()

    def _follow(self, rv: str) -> str:
        """One watch request; returns the resourceVersion to resume from."""
        self.connected.set()
        for event in self.api.watch(self.ref, rv, random.randint(*WATCH_TIMEOUT_RANGE)):
            if self.stop.is_set():
                break
            kind = event.get("type")
            obj: dict[str, Any] = event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _Expired()
                raise ApiError(int(obj.get("code") or 500), str(obj.get("message") or "watch error"))
            self.on_event()
            new_rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
            if kind in ("ADDED", "MODIFIED"):
                self.on_object(obj)
            elif kind == "DELETED":
                self.on_missing()
            rv = new_rv
        return rv


class _Expired(Exception):
    pass


