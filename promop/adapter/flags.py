"""The flags of `promop adapter` (serve): prometheus-adapter's names and defaults, then promop's own.

Here rather than in the command so that the autoscaling demo builds the same
adapter from the same defaults.
"""

from __future__ import annotations

import argparse

from promop.host.flags import add_cluster_flags, add_log_flags


def add_serve_flags(p: argparse.ArgumentParser) -> None:
    """prometheus-adapter's flags (same names and defaults), then promop's own."""
    g = p.add_argument_group("prometheus-adapter flags")
    g.add_argument("--config", help="adapter config file (required to serve)")
    g.add_argument("--prometheus-url", default="https://localhost", help="Prometheus URL (default https://localhost)")
    g.add_argument("--prometheus-verb", default="GET", choices=("GET", "POST"), type=str.upper)
    g.add_argument("--prometheus-auth-config", help="kubeconfig-format file with the credentials for Prometheus")
    g.add_argument("--prometheus-token-file", help="bearer token file for Prometheus")
    g.add_argument("--prometheus-ca-file", help="CA to verify Prometheus")
    g.add_argument("--prometheus-client-tls-cert-file", help="client certificate for Prometheus")
    g.add_argument("--prometheus-client-tls-key-file", help="client key for Prometheus")
    g.add_argument("--prometheus-header", action="append", default=[], help="extra header, NAME=VALUE (repeatable)")
    g.add_argument("--prometheus-insecure-skip-verify", action="store_true")
    g.add_argument("--prometheus-basic-auth-file", help="file holding user:password for Prometheus")
    g.add_argument("--metrics-relist-interval", default="10m", help="series discovery period (default 10m)")
    g.add_argument("--metrics-max-age", default="", help="series seen within this long count (default: the relist "
                                                         "interval; must be >= it)")
    g.add_argument("--secure-port", type=int, default=6443, help="HTTPS port (default 6443; 0 disables)")
    g.add_argument("--bind-address", default="0.0.0.0")
    g.add_argument("--cert-dir", default="apiserver.local.config/certificates",
                   help="where self-signed serving certificates go when --tls-cert-file is not given")
    g.add_argument("--tls-cert-file")
    g.add_argument("--tls-private-key-file")
    add_cluster_flags(g, context=False)
    g.add_argument("--requestheader-client-ca-file",
                   help="CA of the front proxy (default: from kube-system/extension-apiserver-authentication)")
    g.add_argument("--client-ca-file",
                   help="CA whose client certificates are users: CN the name, O the groups (default: client-ca-file "
                        "from kube-system/extension-apiserver-authentication)")
    g.add_argument("--requestheader-allowed-names", default="", help="allowed front-proxy CNs, comma-separated")
    g.add_argument("--authorization-always-allow", action="store_true",
                   help="skip SubjectAccessReviews: every authenticated request is allowed")
    g.add_argument("--authentication-skip-lookup", action="store_true",
                   help="do not read the extension-apiserver-authentication ConfigMap")
    g.add_argument("--requestheader-refresh-interval", default="30s",
                   help="how often the ConfigMap is read again for a new front-proxy CA (default 30s)")
    o = p.add_argument_group("promop flags")
    o.add_argument("--insecure-port", type=int, default=0,
                   help="also serve plain HTTP without authentication on this port (local testing only; 0 = off)")
    o.add_argument("--no-kube", action="store_true",
                   help="run without an API server: no object listing (`*` requests, metrics.k8s.io lists)")
    o.add_argument("--prometheus-timeout", default="30s", help="per-query timeout (default 30s)")
    o.add_argument("--keda-metrics-url", default="",
                   help="the ScaledObject controller's metrics endpoint (`promop autoscaler "
                        "--keda-metrics-address`), e.g. http://promop-autoscaler.monitoring.svc:9666: external "
                        "metric requests selecting scaledobject.keda.sh/name go there (default: none, such "
                        "requests get an error saying so)")
    add_log_flags(o)
