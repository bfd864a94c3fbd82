"""Credentials for the Kubernetes API: the pod's ServiceAccount, or a kubeconfig.

The `kubernetes` package did this before, but it is 123 MB in an image and a large part of the
sidecar's start-up CPU, to read a token, a CA file and a server address. What a pod needs (the
in-cluster files, re-read as they rotate) and what the tests and a developer's kubeconfig use
(server, CA, bearer token or token file, client certificate, basic auth; inline `*-data` too)
is here. Only a kubeconfig user with an `exec` or `auth-provider` plugin is handed to the
`kubernetes` package, when it is installed (promop's full image has it; the reloader's own
image does not, and says so).
"""
from __future__ import annotations

import atexit
import base64
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
# client-go re-reads a projected token file at most this often (its cachingTokenSource).
TOKEN_REREAD_SECONDS = 60.0


class CredentialsError(Exception):
    """No usable credentials; the message says what is missing or wrong."""


class _TokenFile:
    """A bearer token read from a file, re-read once a minute (projected tokens rotate)."""

    def __init__(self, path: str):
        self.path = path
        self.lock = threading.Lock()
        self.token = ""
        self.read_at = -TOKEN_REREAD_SECONDS
        self.get()  # fail now, at start, if it cannot be read

    def get(self) -> str:
        with self.lock:
            now = time.monotonic()
            if now - self.read_at >= TOKEN_REREAD_SECONDS:
                try:
                    with open(self.path, encoding="utf-8") as f:
                        self.token = f.read().strip()
                except OSError as exc:
                    if not self.token:
                        raise CredentialsError(f"cannot read token file {self.path}: {exc.strerror or exc}") from exc
                self.read_at = now
            return self.token


@dataclass
class Credentials:
    host: str
    ca_file: str = ""
    verify: bool = True
    cert_file: str = ""
    key_file: str = ""
    header_source: Callable[[], dict[str, str]] = field(default=lambda: {})

    def headers(self) -> dict[str, str]:
        """The Authorization header for the next request (a rotated token is picked up here)."""
        return self.header_source()


def load(kubeconfig: str = "") -> Credentials:
    """The kubeconfig given; else in-cluster; else $KUBECONFIG or ~/.kube/config (kubectl's order)."""
    if kubeconfig:
        return from_kubeconfig(kubeconfig)
    pod = in_cluster()
    if pod is not None:
        return pod
    candidates = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    candidates.append(os.path.expanduser("~/.kube/config"))
    for path in candidates:
        if os.path.exists(path):
            return from_kubeconfig(path)
    raise CredentialsError("not in a pod (no KUBERNETES_SERVICE_HOST and service account token) and no kubeconfig "
                           "found; pass --kubeconfig")


def in_cluster(root: str = SERVICE_ACCOUNT) -> Credentials | None:
    """The pod's ServiceAccount: None outside a pod."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
    token_path = os.path.join(root, "token")
    if not host or not port or not os.path.exists(token_path):
        return None
    if ":" in host:
        host = f"[{host}]"
    token = _TokenFile(token_path)
    ca = os.path.join(root, "ca.crt")
    return Credentials(host=f"https://{host}:{port}", ca_file=ca if os.path.exists(ca) else "",
                       header_source=lambda: {"Authorization": f"Bearer {token.get()}"})


def from_kubeconfig(path: str) -> Credentials:
    """The current context of the kubeconfig at `path`."""
    import yaml

    try:
        with open(path, "rb") as f:
            config = yaml.safe_load(f) or {}
    except OSError as exc:
        raise CredentialsError(f"cannot read kubeconfig {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise CredentialsError(f"kubeconfig {path} is not valid YAML: {exc}") from exc
    if not isinstance(config, dict):
        raise CredentialsError(f"kubeconfig {path} is not a mapping")
    context = _named(config, "contexts", config.get("current-context") or "", "context", path)
    cluster = _named(config, "clusters", context.get("cluster") or "", "cluster", path)
    user = _named(config, "users", context.get("user") or "", "user", path) if context.get("user") else {}
    if not cluster.get("server"):
        raise CredentialsError(f"kubeconfig {path}: the current context's cluster has no server")
    if user.get("exec") or user.get("auth-provider"):
        return _with_kubernetes_package(path)
    base = os.path.dirname(os.path.abspath(path))
    creds = Credentials(host=str(cluster["server"]).rstrip("/"),
                        ca_file=_file(cluster, "certificate-authority", base),
                        verify=not cluster.get("insecure-skip-tls-verify", False),
                        cert_file=_file(user, "client-certificate", base), key_file=_file(user, "client-key", base))
    if user.get("token"):
        header = {"Authorization": f"Bearer {user['token']}"}
        creds.header_source = lambda: dict(header)
    elif user.get("tokenFile"):
        token = _TokenFile(os.path.join(base, str(user["tokenFile"])))
        creds.header_source = lambda: {"Authorization": f"Bearer {token.get()}"}
    elif user.get("username") or user.get("password"):
        basic = base64.b64encode(f"{user.get('username') or ''}:{user.get('password') or ''}".encode()).decode()
        creds.header_source = lambda: {"Authorization": f"Basic {basic}"}
    return creds


def _named(config: dict, section: str, name: str, key: str, path: str) -> dict:
    for item in config.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name:
            return item.get(key) or {}
    raise CredentialsError(f"kubeconfig {path}: no {key} named {name!r} (current-context "
                           f"{config.get('current-context')!r})")


def _file(section: dict, key: str, base: str) -> str:
    """A file path setting, or its inline `<key>-data` (base64) written to a private temp file."""
    data = section.get(f"{key}-data")
    if data:
        try:
            raw = base64.b64decode(data)
        except ValueError as exc:
            raise CredentialsError(f"{key}-data is not valid base64") from exc
        fd, tmp = tempfile.mkstemp(prefix="promop-reloader-", suffix=".pem")
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        atexit.register(_remove, tmp)
        return tmp
    value = section.get(key)
    return os.path.join(base, str(value)) if value else ""


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _with_kubernetes_package(path: str) -> Credentials:
    """exec / auth-provider users: the kubernetes package runs the plugin, when it is installed."""
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise CredentialsError(f"kubeconfig {path} uses an exec or auth-provider plugin, which needs the kubernetes "
                               f"Python package (not in the reloader's image); use a token or client "
                               f"certificate, or in-cluster credentials") from None
    cfg: Any = client.Configuration()
    try:
        config.load_kube_config(config_file=path, client_configuration=cfg)
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        raise CredentialsError(str(exc)) from exc

    def headers() -> dict[str, str]:
        if cfg.refresh_api_key_hook is not None:
            cfg.refresh_api_key_hook(cfg)
        return {s["key"]: s["value"] for s in cfg.auth_settings().values() if s.get("in") == "header" and s.get("value")}

    return Credentials(host=cfg.host, ca_file=cfg.ssl_ca_cert or "", verify=bool(cfg.verify_ssl),
                       cert_file=cfg.cert_file or "", key_file=cfg.key_file or "", header_source=headers)
