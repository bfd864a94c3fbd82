"""`--prometheus-auth-config`: upstream's kubeconfig-format file for reaching Prometheus.

The current context's user gives the credentials (token, token file, client certificate, or
username/password) and its cluster the CA (or insecure-skip-tls-verify); the URL stays
`--prometheus-url`. Inline `*-data` fields are written to private temporary files, which is
what the HTTP library needs.
"""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

import yaml


class AuthConfigError(ValueError):
    pass


def _named(items: Any, name: str, what: str, path: str) -> dict:
    for item in items or ():
        if isinstance(item, dict) and item.get("name") == name:
            return item.get(what) or {}
    raise AuthConfigError(f"{path}: no {what} named {name!r}")


def _file_or_data(section: dict, key: str, workdir: list[str]) -> str | None:
    if section.get(key):
        return str(section[key])
    data = section.get(f"{key}-data")
    if not data:
        return None
    if not workdir:
        workdir.append(tempfile.mkdtemp(prefix="promop-prom-auth-"))
    path = os.path.join(workdir[0], key)
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
    os.chmod(path, 0o600)
    return path


def options_from_kubeconfig(path: str) -> dict[str, Any]:
    """ClientOptions keyword arguments from a kubeconfig-format file."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
    except OSError as exc:
        raise AuthConfigError(f"--prometheus-auth-config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise AuthConfigError(f"--prometheus-auth-config {path}: not YAML: {exc}") from None
    contexts = doc.get("contexts") or []
    current = doc.get("current-context") or (contexts[0].get("name") if contexts else None)
    if not current:
        raise AuthConfigError(f"{path}: no current-context and no contexts")
    ctx = _named(contexts, current, "context", path)
    cluster = _named(doc.get("clusters"), ctx.get("cluster", ""), "cluster", path) if ctx.get("cluster") else {}
    user = _named(doc.get("users"), ctx.get("user", ""), "user", path) if ctx.get("user") else {}
    workdir: list[str] = []
    out: dict[str, Any] = {}
    if cluster.get("insecure-skip-tls-verify"):
        out["insecure_skip_verify"] = True
    ca = _file_or_data(cluster, "certificate-authority", workdir)
    if ca:
        out["ca_file"] = ca
    if user.get("token"):
        out["bearer_token"] = str(user["token"])
    elif user.get("tokenFile"):
        out["bearer_token_file"] = str(user["tokenFile"])
    cert = _file_or_data(user, "client-certificate", workdir)
    key = _file_or_data(user, "client-key", workdir)
    if cert or key:
        out["cert_file"], out["key_file"] = cert, key
    if user.get("username") is not None and user.get("password") is not None:
        out["basic_auth"] = (str(user["username"]), str(user["password"]))
    return out
