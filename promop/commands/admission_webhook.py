"""`promop admission-webhook`: upstream prometheus-operator's admission webhook, as a command of its own.

Serves /admission-prometheusrules/validate|mutate, /admission-alertmanagerconfigs/validate and
/convert over TLS (the certificate files are re-read when they change), with /healthz and /metrics.
Install it with `promop manifests --component admission-webhook` (docs/admission.md).
"""

from __future__ import annotations

import argparse

DEFAULT_LISTEN_ADDRESS = ":8443"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "admission-webhook", help="validate PrometheusRules/AlertmanagerConfigs and convert AlertmanagerConfig "
                                  "versions for the apiserver (upstream's admission webhook)",
        description="Serve upstream prometheus-operator's admission webhook: PrometheusRule validation and "
                    "mutation, AlertmanagerConfig validation, and the AlertmanagerConfig v1alpha1<->v1beta1 "
                    "conversion webhook.")
    from promop.host.flags import add_log_flags

    web = parser.add_argument_group("web")
    web.add_argument("--web.listen-address", dest="listen_address", default=DEFAULT_LISTEN_ADDRESS,
                     help=f"address to serve on (default {DEFAULT_LISTEN_ADDRESS})")
    web.add_argument("--web.enable-tls", dest="enable_tls", default="true", choices=("true", "false"),
                     help="serve HTTPS (default true; the apiserver calls webhooks only over HTTPS)")
    web.add_argument("--web.cert-file", dest="cert_file", default="",
                     help="serving certificate (PEM), re-read when it changes")
    web.add_argument("--web.key-file", dest="key_file", default="", help="serving key (PEM)")
    web.add_argument("--web.client-ca-file", dest="client_ca_file", default="",
                     help="CA that client certificates must chain to (default: no client certificates asked)")
    web.add_argument("--web.tls-min-version", dest="tls_min_version", default="VersionTLS12",
                     help="minimum TLS version: VersionTLS12 or VersionTLS13 (default VersionTLS12)")
    parser.add_argument("--name-validation-scheme", default="utf8", choices=("utf8", "legacy"),
                        help="label and metric names in rules: utf8 (Prometheus 3, default) or legacy "
                             "([a-zA-Z_][a-zA-Z0-9_]*, Prometheus 2)")
    parser.add_argument("--kubeconfig", default=None,
                        help="API access for KEDA's ScaledObject ownership rules (default: in-cluster when run in "
                             "a pod; without either, ownership is not checked and a warning says so)")
    add_log_flags(parser)
    parser.set_defaults(func=run)


def _tls(args: argparse.Namespace):
    from promop.admission.tls import TLS_MIN_VERSIONS, CertificateError, ReloadingContext
    from promop.host.flags import OptionsError

    if args.enable_tls == "false":
        return None
    if not args.cert_file or not args.key_file:
        raise OptionsError("--web.cert-file and --web.key-file are required with TLS (the default); "
                           "pass both, or --web.enable-tls=false behind a TLS-terminating proxy")
    if args.tls_min_version not in TLS_MIN_VERSIONS:
        raise OptionsError(f"--web.tls-min-version: {args.tls_min_version!r} is not one of "
                           f"{', '.join(TLS_MIN_VERSIONS)}")
    try:
        return ReloadingContext(args.cert_file, args.key_file, args.client_ca_file,
                                TLS_MIN_VERSIONS[args.tls_min_version])
    except CertificateError as exc:
        raise OptionsError(f"--web.cert-file/--web.key-file: {exc}") from None


def _keda_lister(kubeconfig: str | None):
    """A lister for the ScaledObject rules, or None without API access (in-cluster or --kubeconfig)."""
    import os

    from promop.admission.keda import kube_lister
    from promop.kube.client import KubeClient

    if kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    if kubeconfig is not None:
        from promop.host.kubeconfig import check_kubeconfig

        check_kubeconfig(kubeconfig, None)
    return kube_lister(KubeClient.from_config(kubeconfig, None))


def run(args: argparse.Namespace) -> int:
    import logging
    import threading

    from promop.admission.server import Options, WebhookServer
    from promop.host import logs
    from promop.host.flags import OptionsError, parse_listen_address
    from promop.host.signals import install_signal_handlers

    host, port = parse_listen_address(args.listen_address)
    tls = _tls(args)
    logs.setup(args.log_level, args.log_format)
    lister = _keda_lister(args.kubeconfig)
    try:
        server = WebhookServer(host, port, tls, Options(args.name_validation_scheme, lister))
    except OSError as exc:
        raise OptionsError(f"--web.listen-address: cannot listen on {args.listen_address}: "
                           f"{exc.strerror or exc}") from None
    stop = threading.Event()
    install_signal_handlers(stop)
    server.start()
    logging.getLogger("promop.admission").info(
        "admission webhook serving", **logs.fields(address=f"{host}:{server.port}", tls=tls is not None))
    stop.wait()
    server.stop()
    return 0
