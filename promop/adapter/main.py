"""Wiring of `promop adapter` (serve): flags → Prometheus client, kube, TLS, auth, server."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys
import threading
from typing import Any

log = logging.getLogger("promop.adapter")


class StartupError(Exception):
    pass


def _prom_options(args: argparse.Namespace, timeout: float) -> Any:
    from promop.prom import ClientOptions

    headers = {}
    for h in args.prometheus_header:
        name, sep, value = h.partition("=")
        if not sep or not name:
            raise StartupError(f"--prometheus-header {h!r}: use NAME=VALUE")
        headers[name.strip()] = value
    basic = None
    if args.prometheus_basic_auth_file:
        try:
            text = open(args.prometheus_basic_auth_file, encoding="utf-8").read().strip()
        except OSError as exc:
            raise StartupError(f"--prometheus-basic-auth-file: {exc.strerror}") from None
        user, sep, password = text.partition(":")
        if not sep:
            raise StartupError("--prometheus-basic-auth-file must hold user:password")
        basic = (user, password)
    kw: dict[str, Any] = {}
    if args.prometheus_auth_config:
        from promop.adapter.promauth import AuthConfigError, options_from_kubeconfig

        try:
            kw = options_from_kubeconfig(args.prometheus_auth_config)
        except AuthConfigError as exc:
            raise StartupError(str(exc)) from None
    flags = {"bearer_token_file": args.prometheus_token_file, "basic_auth": basic,
             "ca_file": args.prometheus_ca_file, "cert_file": args.prometheus_client_tls_cert_file,
             "key_file": args.prometheus_client_tls_key_file}
    kw.update({k: v for k, v in flags.items() if v})   # explicit flags win over the auth config
    if "bearer_token_file" in kw and args.prometheus_token_file:
        kw.pop("bearer_token", None)
    if args.prometheus_insecure_skip_verify:
        kw["insecure_skip_verify"] = True
    try:
        return ClientOptions(url=args.prometheus_url, verb=args.prometheus_verb, timeout=timeout, headers=headers,
                             **kw)
    except ValueError as exc:
        raise StartupError(str(exc)) from None


def _kube(args: argparse.Namespace) -> Any:
    if args.no_kube:
        return None
    from promop.host.kubeconfig import load_client
    from promop.kube.errors import ApiError

    try:
        return load_client(args.kubeconfig)  # a kubeconfig mistake: UserError, one line, exit 2
    except ApiError as exc:
        raise StartupError(f"{exc}; or pass --no-kube to run without an API server") from None


def _auth_sources(args: argparse.Namespace, kube: Any) -> tuple[Any, str]:
    """(the front proxy's settings, the client CA PEM): flags win over the authentication ConfigMap."""
    from promop.adapter.auth import AUTH_CONFIGMAP, RequestHeaderConfig
    from promop.kube.resources import Resource

    rh = RequestHeaderConfig()
    client_ca = ""
    if kube is not None and not args.authentication_skip_lookup:
        try:
            cm = kube.get(Resource("", "v1", "configmaps", True, "ConfigMap"), AUTH_CONFIGMAP[1], AUTH_CONFIGMAP[0])
            data = cm.get("data") or {}
            rh = RequestHeaderConfig.from_configmap(data)
            client_ca = data.get("client-ca-file", "")
        except Exception as exc:
            log.warning("cannot read configmap %s/%s (front-proxy requests will be refused unless "
                        "--requestheader-client-ca-file is given): %s", *AUTH_CONFIGMAP, exc)
    if args.requestheader_client_ca_file:
        rh.client_ca = _read_pem("--requestheader-client-ca-file", args.requestheader_client_ca_file)
    if args.requestheader_allowed_names:
        rh.allowed_names = [n.strip() for n in args.requestheader_allowed_names.split(",") if n.strip()]
    if getattr(args, "client_ca_file", None):
        client_ca = _read_pem("--client-ca-file", args.client_ca_file)
    return rh, client_ca


def _read_pem(flag: str, path: str) -> str:
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as exc:
        raise StartupError(f"{flag}: {exc.strerror}") from None
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise StartupError(f"{flag}: {path} holds no PEM certificate")
    return text


def _tls_context(args: argparse.Namespace, *client_cas: str) -> ssl.SSLContext:
    """The serving context; client certificates are asked for, and verified against `client_cas`
    (the front proxy's CA, the client CA)."""
    from promop.certs import self_signed

    cert, key = args.tls_cert_file, args.tls_private_key_file
    if bool(cert) != bool(key):
        raise StartupError("give both --tls-cert-file and --tls-private-key-file")
    if not cert:
        import socket

        cert, key = self_signed(args.cert_dir, ["localhost", "127.0.0.1", socket.gethostname()])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise StartupError(f"cannot load the serving certificate {cert}: {exc}") from None
    for ca in client_cas:
        if ca:
            try:
                ctx.load_verify_locations(cadata=ca)
            except ssl.SSLError as exc:
                raise StartupError(f"cannot load a client CA: {exc}") from None
            ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


class RequestHeaderRefresher:
    """Re-reads the front proxy's settings every `interval` seconds: a CA published (or rotated) after
    the start is trusted for new connections, as upstream's dynamic CA bundle does."""

    def __init__(self, args: argparse.Namespace, kube: Any, ctx: ssl.SSLContext, authn: Any, ca: str,
                 interval: float = 30.0, client_ca: str = "") -> None:
        self.args, self.kube, self.ctx, self.authn, self.ca = args, kube, ctx, authn, ca
        self.client_ca = client_ca
        self.stop = threading.Event()
        self.interval = interval
        threading.Thread(target=self._run, name="adapter-requestheader", daemon=True).start()

    def refresh(self) -> bool:
        rh, client_ca = _auth_sources(self.args, self.kube)
        changed = False
        # load_verify_locations adds: an old CA stays trusted by TLS through a rotation (the authenticator
        # then decides with the current ones)
        if rh.client_ca and rh.client_ca != self.ca:
            self.ctx.load_verify_locations(cadata=rh.client_ca)
            self.ca = rh.client_ca
            if self.authn is not None:
                self.authn.rh = rh
            changed = True
            log.info("front-proxy CA loaded from %s/%s", "kube-system", "extension-apiserver-authentication")
        if client_ca and client_ca != self.client_ca:
            self.ctx.load_verify_locations(cadata=client_ca)
            self.client_ca = client_ca
            if self.authn is not None:
                self.authn.client_ca = client_ca
            changed = True
            log.info("client CA loaded from %s/%s", "kube-system", "extension-apiserver-authentication")
        if changed:
            self.ctx.verify_mode = ssl.CERT_OPTIONAL
        return changed

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            try:
                self.refresh()
            except Exception as exc:  # keep the current settings
                log.warning("cannot refresh the front-proxy settings: %s", exc)


def build(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    """(adapter, servers) from parsed flags; raises StartupError or ConfigError."""
    from promop.adapter.app import Adapter, Options
    from promop.adapter.auth import Authenticator, Authorizer
    from promop.adapter.config import load_config
    from promop.duration import parse_go_seconds
    from promop.adapter.lister import KubeLister, StaticLister, get_json
    from promop.adapter.provider import Provider
    from promop.adapter.resources import ResourceMapper, discover
    from promop.adapter.server import AdapterServer
    from promop.prom import PrometheusClient

    def flag(name: str, text: str) -> float:
        try:
            return parse_go_seconds(text)
        except ValueError as exc:
            raise StartupError(f"--{name}: {exc} (a Go duration such as 30s, 5m or 1h30m)") from None

    relist = flag("metrics-relist-interval", args.metrics_relist_interval)
    max_age = flag("metrics-max-age", args.metrics_max_age) if args.metrics_max_age else relist
    timeout = flag("prometheus-timeout", args.prometheus_timeout)
    if relist <= 0:
        raise StartupError("--metrics-relist-interval must be positive")
    if max_age < relist:
        raise StartupError(f"--metrics-max-age ({args.metrics_max_age}) must be >= --metrics-relist-interval "
                           f"({args.metrics_relist_interval})")
    cfg = load_config(args.config)
    prom = PrometheusClient(options=_prom_options(args, timeout))
    kube = _kube(args)
    mapper = ResourceMapper.from_discovery(lambda path: get_json(kube, path)) if kube else ResourceMapper()
    lister = KubeLister(kube) if kube else StaticLister()
    rediscover = (lambda: discover(lambda path: get_json(kube, path))) if kube else None
    adapter = Adapter(Options(args.config, relist, max_age), prom, mapper, cfg, discover_resources=rediscover)
    from promop.adapter.keda_forward import KedaForwarder

    keda_url = getattr(args, "keda_metrics_url", "") or ""
    if keda_url and not keda_url.startswith(("http://", "https://")):
        raise StartupError(f"--keda-metrics-url {keda_url!r}: give an http:// or https:// URL, "
                           "e.g. http://promop-autoscaler.monitoring.svc:9666")
    provider = Provider(prom, lister, query_timeout=timeout, keda=KedaForwarder(keda_url or None, timeout))
    servers = []
    if args.secure_port:
        rh, client_ca = _auth_sources(args, kube)
        authn = Authenticator(rh, kube, client_ca=client_ca) if (rh.client_ca or client_ca or kube) else None
        if args.authorization_always_allow:
            authz = None
        elif kube is None:
            raise StartupError("authorization needs an API server for SubjectAccessReviews: give --kubeconfig "
                               "(or run in-cluster), or pass --authorization-always-allow")
        else:
            authz = Authorizer(kube)
        ctx = _tls_context(args, rh.client_ca, client_ca)
        servers.append(AdapterServer((args.bind_address, args.secure_port), adapter, provider, authn, authz, ctx))
        if kube is not None and not args.authentication_skip_lookup and not (
                args.requestheader_client_ca_file and getattr(args, "client_ca_file", None)):
            try:
                every = parse_go_seconds(args.requestheader_refresh_interval)
            except ValueError as exc:
                raise StartupError(f"--requestheader-refresh-interval: {exc}") from None
            adapter.requestheader_refresher = RequestHeaderRefresher(  # type: ignore[attr-defined]
                args, kube, ctx, authn, rh.client_ca, every, client_ca)
    if args.insecure_port:
        servers.append(AdapterServer((args.bind_address, args.insecure_port), adapter, provider))
    if not servers:
        raise StartupError("nothing to serve: --secure-port and --insecure-port are both 0")
    adapter.lister = lister  # type: ignore[attr-defined]
    return adapter, servers


def serve(args: argparse.Namespace) -> int:
    from promop.adapter.config import ConfigError
    from promop.host import logs
    from promop.host.signals import install_signal_handlers

    logs.setup(args.log_level, args.log_format)
    try:
        adapter, servers = build(args)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (StartupError, OSError) as exc:
        print(f"promop adapter: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    install_signal_handlers(stop)
    adapter.start()
    for s in servers:
        s.serve_in_background()
        scheme = "https" if s.tls else "http"
        log.info("serving", **logs.fields(address=f"{scheme}://{s.server_address[0]}:{s.port}"))
        print(f"promop adapter: serving {scheme}://{s.server_address[0]}:{s.port}", file=sys.stderr, flush=True)
    stop.wait()
    for s in servers:
        s.shutdown()
        s.server_close()
    adapter.stop()
    stop_lister = getattr(getattr(adapter, "lister", None), "stop", None)
    if stop_lister:
        stop_lister()
    return 0

