"""spec.web.tlsConfig and spec.clusterTLS: the exporter-toolkit TLS sections and the volumes that carry the files.

As upstream (pkg/webconfig, pkg/alertmanager/clustertlsconfig): each referenced
Secret/ConfigMap is mounted read-only as its own volume
(`<prefix>-<secret|configmap>-<cert|key|client-ca|ca>-<name>-<hash>`) at
`<dir>/<secret|configmap>/<name>-<role>`, and the config file names
`<that dir>/<key>`; `certFile`/`keyFile`/`clientCAFile` are used verbatim.
The kubelet refreshes those volumes, so a renewed certificate needs no restart.

Every reference is read at render time: a missing Secret/ConfigMap or key, a
certificate that is not PEM, or a key that does not belong to the certificate
is a Fatal error for that Alertmanager (the operator reports it and writes
nothing), instead of a pod that crash-loops on a file that is not there.

A selector with `optional: true` follows Kubernetes' optional volume sources: a
missing Secret/ConfigMap or key is not an error, the config keeps the file path,
the volume is marked `optional: true` (so the pod is not held in
ContainerCreating) and the render carries a warning; the kubelet fills the file
in when the object appears. Nothing is dropped from the TLS section: leaving out
e.g. `client_ca_file` would silently weaken client authentication.

A present but empty section (`tlsConfig: {}`, `clusterTLS: {}`) is not "unset":
upstream's WebTLSConfig.Validate requires a certificate and a key source, so it
is rejected like any other incomplete TLS section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from promop.render.alertmanager.common import AMScope, Fatal, Reject
from promop.render.volume_names import unique_dns1123_label

WEB_TLS_SINCE = "0.22.0"
CLUSTER_TLS_SINCE = "0.24.0"
WEB_CONFIG_DIR = "/etc/alertmanager/web_config"
CLUSTER_TLS_DIR = "/etc/alertmanager/cluster_tls_config"
CLUSTER_TLS_FILE = f"{CLUSTER_TLS_DIR}/cluster-tls-config.yaml"
TLS_VERSIONS = ("TLS10", "TLS11", "TLS12", "TLS13")
CLIENT_AUTH_TYPES = ("NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
                     "RequireAndVerifyClientCert")


@dataclass
class TLSMounts:
    """A TLS section of a config file plus the volumes and mounts that put its files in place."""

    section: dict = field(default_factory=dict)
    volumes: list[dict] = field(default_factory=list)
    mounts: list[dict] = field(default_factory=list)

    def extend(self, other: "TLSMounts") -> None:
        self.volumes += other.volumes
        self.mounts += other.mounts


def _mounted(scope: AMScope, ref: Any, field_: str, role: str, directory: str, prefix: str,
             out: TLSMounts) -> tuple[str, str | None]:
    """(file path in the container, content) of a SecretOrConfigMap, adding its volume and mount to `out`."""
    kind, name, key, value = scope.read_secret_or_configmap(ref, field_)
    sel = ref.get("secret") if kind == "Secret" else ref.get("configMap")
    sub = "secret" if kind == "Secret" else "configMap"
    optional = _optional(scope, sel, value, kind, name, key, f"{field_}.{sub}")
    return _mount(kind, name, key, value, role, directory, prefix, out, optional), value


def _key_secret(scope: AMScope, sel: Any, field_: str, directory: str, prefix: str, out: TLSMounts) -> tuple[str, str | None]:
    """(file path, content) of a keySecret SecretKeySelector, adding its volume and mount to `out`."""
    value = scope.read("Secret", sel, field_)
    name, key = sel.get("name") or "", str(sel["key"])
    optional = _optional(scope, sel, value, "Secret", name, key, field_)
    return _mount("Secret", name, key, value, "key", directory, prefix, out, optional), value


def _optional(scope: AMScope, sel: Mapping[str, Any], value: str | None, kind: str, name: str, key: str,
              field_: str) -> bool:
    """Whether the volume is optional (the selector says so); warns when an optional reference is missing."""
    optional = bool(sel.get("optional"))
    if optional and value is None:
        scope.warn(field_, f"optional {kind} {scope.namespace}/{name} key {key!r} is missing: its volume is mounted "
                           f"as optional and {scope.kind} cannot serve TLS until it exists; create it or drop "
                           f"optional: true to be told at sync time")
    return optional


def _mount(kind: str, name: str, key: str, value: str | None, role: str, directory: str, prefix: str,
           out: TLSMounts, optional: bool = False) -> str:
    sub = "secret" if kind == "Secret" else "configmap"
    volume = unique_dns1123_label(f"{prefix}-{sub}-{role}-", name)
    mount_dir = f"{directory}/{sub}/{name}-{'ca' if role == 'client-ca' else role}"
    source = {"secret": {"secretName": name}} if kind == "Secret" else {"configMap": {"name": name}}
    if optional:
        next(iter(source.values()))["optional"] = True
    if not any(v["name"] == volume for v in out.volumes):
        out.volumes.append({"name": volume, **source})
        out.mounts.append({"mountPath": mount_dir, "name": volume, "readOnly": True})
    return f"{mount_dir}/{key}"


def check_pair(cert: str | None, key: str | None, field_: str) -> None:
    """Refuse a certificate that is not PEM, or a key that is not the certificate's (cheap: no I/O)."""
    if cert is None:
        return
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        certificate = x509.load_pem_x509_certificate(cert.encode())
    except ValueError:
        raise Reject(f"{field_}.cert", "is not a PEM certificate (expected -----BEGIN CERTIFICATE-----)") from None
    if key is None:
        return
    try:
        private = serialization.load_pem_private_key(key.encode(), password=None)
    except (ValueError, TypeError):
        raise Reject(f"{field_}.keySecret", "is not an unencrypted PEM private key") from None
    pem = serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    if certificate.public_key().public_bytes(*pem) != private.public_key().public_bytes(*pem):
        raise Reject(f"{field_}.keySecret", "the private key does not belong to the certificate in "
                     f"{field_}.cert; reference the key issued with that certificate")


def server_tls(scope: AMScope, tls: Any, field_: str, directory: str, prefix: str) -> TLSMounts:
    """A WebTLSConfig -> `tls_server_config` (exporter-toolkit) with its mounts. Raises Reject."""
    if not isinstance(tls, Mapping):
        raise Reject(field_, "must be a mapping")
    if not tls:
        raise Reject(field_, "is empty: set cert (or certFile) and keySecret (or keyFile), or remove the field "
                             "to serve plain HTTP")
    out = TLSMounts()
    has_cert, has_key, has_ca = bool(tls.get("cert")), bool(tls.get("keySecret")), bool(tls.get("client_ca"))
    for both, what in ((has_cert and tls.get("certFile"), "cert and certFile"),
                       (has_key and tls.get("keyFile"), "keySecret and keyFile"),
                       (has_ca and tls.get("clientCAFile"), "client_ca and clientCAFile")):
        if both:
            raise Reject(field_, f"{what} are mutually exclusive; set one")
    if not (has_cert or tls.get("certFile")):
        raise Reject(field_, "needs the server certificate: set cert (a Secret or ConfigMap key) or certFile")
    if not (has_key or tls.get("keyFile")):
        raise Reject(field_, "needs the private key: set keySecret or keyFile")
    section: dict = {}
    cert_value = key_value = None
    key_file = tls.get("keyFile")
    if has_cert:  # the certificate's problems are reported first
        scope.read_secret_or_configmap(tls["cert"], f"{field_}.cert")
    if has_key:  # upstream mounts the key first, then the certificate, then the client CA
        key_file, key_value = _key_secret(scope, tls["keySecret"], f"{field_}.keySecret", directory, prefix, out)
    if has_cert:
        section["cert_file"], cert_value = _mounted(scope, tls["cert"], f"{field_}.cert", "cert", directory, prefix, out)
    else:
        section["cert_file"] = tls["certFile"]
    section["key_file"] = key_file
    if tls.get("clientAuthType"):
        if tls["clientAuthType"] not in CLIENT_AUTH_TYPES:
            raise Reject(f"{field_}.clientAuthType", f"{tls['clientAuthType']!r} is not one of {', '.join(CLIENT_AUTH_TYPES)}")
        section["client_auth_type"] = tls["clientAuthType"]
    if has_ca:
        section["client_ca_file"], _ = _mounted(scope, tls["client_ca"], f"{field_}.client_ca", "client-ca",
                                                directory, prefix, out)
    elif tls.get("clientCAFile"):
        section["client_ca_file"] = tls["clientCAFile"]
    _versions(tls, field_, section)
    for crd, key in (("cipherSuites", "cipher_suites"), ("curvePreferences", "curve_preferences")):
        names = tls.get(crd)
        if names:
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise Reject(f"{field_}.{crd}", "must be a list of names, e.g. [TLS_AES_128_GCM_SHA256]")
            section[key] = list(names)
    if tls.get("preferServerCipherSuites") is not None:
        section["prefer_server_cipher_suites"] = bool(tls["preferServerCipherSuites"])
    check_pair(cert_value, key_value, field_)
    out.section = section
    return out


def _versions(tls: Mapping[str, Any], field_: str, section: dict) -> None:
    for name, key in (("minVersion", "min_version"), ("maxVersion", "max_version")):
        if tls.get(name):
            if tls[name] not in TLS_VERSIONS:
                raise Reject(f"{field_}.{name}", f"{tls[name]!r} is not one of {', '.join(TLS_VERSIONS)}")
            section[key] = tls[name]
    lo, hi = tls.get("minVersion"), tls.get("maxVersion")
    if lo and hi and TLS_VERSIONS.index(lo) > TLS_VERSIONS.index(hi):
        raise Reject(f"{field_}.minVersion", f"{lo} is above maxVersion {hi}")


def client_tls(scope: AMScope, tls: Any, field_: str, directory: str, prefix: str) -> TLSMounts:
    """A SafeTLSConfig -> `tls_client_config` (the gossip client side of clusterTLS). Raises Reject."""
    if not isinstance(tls, Mapping):
        raise Reject(field_, "must be a mapping")
    out = TLSMounts()
    section: dict = {}
    cert_value = key_value = None
    if tls.get("ca"):
        section["ca_file"], _ = _mounted(scope, tls["ca"], f"{field_}.ca", "ca", directory, prefix, out)
    if tls.get("cert"):
        section["cert_file"], cert_value = _mounted(scope, tls["cert"], f"{field_}.cert", "cert", directory, prefix, out)
    if tls.get("keySecret"):
        section["key_file"], key_value = _key_secret(scope, tls["keySecret"], f"{field_}.keySecret", directory,
                                                     prefix, out)
    if bool(tls.get("cert")) != bool(tls.get("keySecret")):
        raise Reject(field_, "cert and keySecret go together: set both for a client certificate, or neither")
    if tls.get("serverName"):
        section["server_name"] = tls["serverName"]
    if tls.get("insecureSkipVerify") is not None:
        section["insecure_skip_verify"] = bool(tls["insecureSkipVerify"])
    _versions(tls, field_, section)
    check_pair(cert_value, key_value, field_)
    out.section = section
    return out


def web_tls(scope: AMScope, spec: Mapping[str, Any]) -> TLSMounts | None:
    """spec.web.tlsConfig (Alertmanager >= 0.22), or None. Raises Fatal for the Alertmanager."""
    tls = (spec.get("web") or {}).get("tlsConfig")
    if tls is None or not scope.version.at_least(WEB_TLS_SINCE):
        return None
    try:
        return server_tls(scope, tls, "spec.web.tlsConfig", WEB_CONFIG_DIR, "web-config-tls")
    except Reject as exc:
        raise Fatal(exc.field, exc.message) from None


def cluster_tls(scope: AMScope, spec: Mapping[str, Any]) -> TLSMounts | None:
    """spec.clusterTLS (Alertmanager >= 0.24): `tls_server_config` + `tls_client_config`, or None."""
    cfg = spec.get("clusterTLS")
    if cfg is None or not scope.version.at_least(CLUSTER_TLS_SINCE):
        return None
    if not isinstance(cfg, Mapping) or not cfg.get("server") or not cfg.get("client"):
        raise Fatal("spec.clusterTLS", "needs both server and client (the gossip peers are each other's clients)")
    try:
        server = server_tls(scope, cfg["server"], "spec.clusterTLS.server", f"{CLUSTER_TLS_DIR}/server_tls",
                            "cluster-tls-server-config")
        client = client_tls(scope, cfg["client"], "spec.clusterTLS.client", f"{CLUSTER_TLS_DIR}/client_tls",
                            "cluster-tls-client-config")
    except Reject as exc:
        raise Fatal(exc.field, exc.message) from None
    out = TLSMounts(section={"tls_server_config": server.section, "tls_client_config": client.section})
    out.extend(server)
    out.extend(client)
    return out


def tls_references(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of every Secret/ConfigMap web.tlsConfig and clusterTLS reference (to fetch before render)."""
    out: list[tuple[str, str]] = []
    cluster = spec.get("clusterTLS") if isinstance(spec.get("clusterTLS"), Mapping) else {}
    for tls in ((spec.get("web") or {}).get("tlsConfig"), cluster.get("server"), cluster.get("client")):
        if not isinstance(tls, Mapping):
            continue
        for name in ("cert", "client_ca", "ca"):
            ref = tls.get(name)
            if isinstance(ref, Mapping):
                for sub, kind in (("secret", "Secret"), ("configMap", "ConfigMap")):
                    if isinstance(ref.get(sub), Mapping) and ref[sub].get("name"):
                        out.append((kind, ref[sub]["name"]))
        if isinstance(tls.get("keySecret"), Mapping) and tls["keySecret"].get("name"):
            out.append(("Secret", tls["keySecret"]["name"]))
    return out
