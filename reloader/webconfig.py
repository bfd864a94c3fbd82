"""--web-config-file: TLS and basic auth for /metrics and /healthz (exporter-toolkit format).

Supported: `tls_server_config` (cert_file, key_file, client_ca_file,
client_auth_type, min_version) and `basic_auth_users` (bcrypt hashes, checked
with the C library's crypt(3)). An empty file means plain HTTP, as upstream.
Anything that cannot be honoured is an error at start: the sidecar never
serves unprotected what the file asks to protect.
"""
from __future__ import annotations

import base64
import hmac
import os
import ssl
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable


_CLIENT_AUTH = {
    "": ssl.CERT_NONE,
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_NONE,
    "RequireAnyClientCert": ssl.CERT_REQUIRED,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
_KNOWN = {"tls_server_config", "basic_auth_users", "http_server_config"}


class WebConfigError(Exception):
    """The web config file cannot be used; the sidecar refuses to start."""


@dataclass
class WebConfig:
    tls: ssl.SSLContext | None = None
    users: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    check: Callable[[str, str], bool] | None = None

    def authorized(self, header: str | None) -> bool:
        """True when no users are configured or the Basic credentials match one."""
        if not self.users:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        hashed = self.users.get(user)
        return hashed is not None and self.check is not None and self.check(password, hashed)


def _bcrypt_checker() -> Callable[[str, str], bool]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt  # stdlib up to Python 3.12; crypt(3) from libxcrypt understands $2y$/$2b$
    except ImportError as exc:
        raise WebConfigError(
            "basic_auth_users needs the stdlib crypt module (Python <= 3.12); remove basic_auth_users "
            "or run the sidecar on Python 3.11/3.12"
        ) from exc

    def check(password: str, hashed: str) -> bool:
        result = crypt.crypt(password, hashed)
        return result is not None and hmac.compare_digest(result, hashed)

    probe = crypt.crypt("probe", "$2b$04$" + "a" * 22)
    if not probe or not probe.startswith("$2b$"):
        raise WebConfigError("this system's crypt(3) cannot check bcrypt hashes; basic_auth_users is unusable")
    return check


def _resolve(base: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(base, path)


def _tls_context(tls: dict[str, Any], base: str, where: str) -> ssl.SSLContext:
    cert, key = tls.get("cert_file"), tls.get("key_file")
    if not cert or not key:
        raise WebConfigError(f"{where}: tls_server_config needs cert_file and key_file (inline certs are not supported)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(_resolve(base, cert), _resolve(base, key))
    except (OSError, ssl.SSLError) as exc:
        raise WebConfigError(f"{where}: cannot load cert_file/key_file: {exc}") from exc
    version = tls.get("min_version") or "TLS12"
    if version not in _TLS_VERSIONS:
        raise WebConfigError(f"{where}: unknown min_version {version!r}; use one of {sorted(_TLS_VERSIONS)}")
    ctx.minimum_version = _TLS_VERSIONS[version]
    auth = tls.get("client_auth_type") or ""
    if auth not in _CLIENT_AUTH:
        raise WebConfigError(f"{where}: unknown client_auth_type {auth!r}; use one of {sorted(a for a in _CLIENT_AUTH if a)}")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    ca = tls.get("client_ca_file")
    if ca:
        try:
            ctx.load_verify_locations(_resolve(base, ca))
        except (OSError, ssl.SSLError) as exc:
            raise WebConfigError(f"{where}: cannot load client_ca_file: {exc}") from exc
    elif auth in ("VerifyClientCertIfGiven", "RequireAndVerifyClientCert"):
        raise WebConfigError(f"{where}: client_auth_type {auth} needs client_ca_file")
    return ctx


def load(path: str) -> WebConfig:
    """Parse the web config file; raise WebConfigError naming the file and the problem."""
    import yaml  # only with --web-config-file: most sidecars have none

    try:
        with open(path, "rb") as f:
            data = yaml.safe_load(f) or {}
    except OSError as exc:
        raise WebConfigError(f"cannot read --web-config-file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise WebConfigError(f"--web-config-file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise WebConfigError(f"--web-config-file {path} must be a YAML mapping")
    base = os.path.dirname(os.path.abspath(path))
    config = WebConfig(ignored=sorted(set(data) - _KNOWN))
    tls = data.get("tls_server_config")
    if tls:
        config.tls = _tls_context(tls, base, path)
    users = data.get("basic_auth_users") or {}
    if users:
        config.users = {str(k): str(v) for k, v in users.items()}
        config.check = _bcrypt_checker()
    return config
