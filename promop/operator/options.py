"""The operator's settings: command-line flags of `promop run`, parsed into one dataclass.

The flags follow upstream's names where upstream has them (`--namespaces`,
`--deny-namespaces`, `--labels`, `--annotations`, `--secret-field-selector`,
`--web.listen-address`, ...), so an existing Deployment's args carry over.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from promop.host.flags import (LOG_FORMATS, LOG_LEVELS, OptionsError, add_cluster_flags, add_leader_election_flags,
                               add_log_flags, add_web_flag, add_web_tls_flags, check_leader_election,
                               default_identity, default_lease_namespace, go_bool, parse_list, parse_listen_address,
                               parse_map, web_tls_from_args)
from promop.host.webtls import WebTLS
from promop.operator import ownership  # --controller-id, instance scopes, repair policy (hook)
from promop.featuregates import (SHARD_RETENTION_POLICY, FeatureGateError, FeatureGates, add_feature_gates_flag,
                                 parse_feature_gates)
from promop.operator.alertmanager import flags as am_flags  # Alertmanager/kubelet/CRD flags (hook)
from promop.render.model import DEFAULT_PROMETHEUS_BASE_IMAGE, DEFAULT_RELOADER_IMAGE, RenderOptions
from promop.render.reloader_container import ReloaderSettings, settings_from_flags
from promop.render.thanos.versions import DEFAULT_THANOS_BASE_IMAGE

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "Options", "OptionsError", "add_flags", "default_lease_namespace",
           "from_args", "parse_list", "parse_listen_address", "parse_map"]

DEFAULT_LEASE_NAME = "promop-operator"
DEFAULT_LISTEN_ADDRESS = ":8080"
DEFAULT_RESYNC_SECONDS = 300.0  # upstream's informer resync period (5 min)
# Client-side rate limit towards the apiserver. Feedback (status.bindings, Events) is written for
# every selected object: at 100 requests/s, 1,000 bindings take about 10 s and 5,000 about 50 s,
# on their own workers, never in front of a config write (which waits at most a few tokens).
DEFAULT_KUBE_API_QPS = 100.0
DEFAULT_KUBE_API_BURST = 200
DEFAULT_FEEDBACK_WORKERS = 4


@dataclass(frozen=True)
class Options:
    """Everything `promop run` was asked to do; defaults match `promop run` with no flags."""

    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()  # allow-list; empty = all namespaces
    deny_namespaces: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    workers: int = 2
    feedback_workers: int = DEFAULT_FEEDBACK_WORKERS
    kube_api_qps: float = DEFAULT_KUBE_API_QPS
    kube_api_burst: int = DEFAULT_KUBE_API_BURST
    log_level: str = "info"
    log_format: str = "logfmt"
    leader_elect: bool = False
    lease_name: str = DEFAULT_LEASE_NAME
    lease_namespace: str = "default"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    secret_field_selector: str = ""
    config_reloader_image: str = DEFAULT_RELOADER_IMAGE
    prometheus_default_base_image: str = DEFAULT_PROMETHEUS_BASE_IMAGE
    thanos_default_base_image: str = DEFAULT_THANOS_BASE_IMAGE  # Thanos sidecar and ThanosRuler, without a tag
    listen_address: str = DEFAULT_LISTEN_ADDRESS
    resync_period: float = DEFAULT_RESYNC_SECONDS
    gc_freeze: bool = False  # gc.freeze() once the caches have synced (a process of its own: promop run, demo)
    render_process: bool = False  # a second process for the first renders (promop run: promop.operator.render_pool)
    fast_reload: bool = False  # reloaders read config through the API (promop/render/fast_reload.py)
    config_secret_max_bytes: int = 900 * 1024  # split the config past this (promop/render/split.py)
    full_secret_informers: bool = False  # benchmark only: cache whole Secrets/ConfigMaps, as before upstream #5424
    alertmanager: am_flags.AMOptions = field(default_factory=am_flags.AMOptions)  # hook: see that module
    feature_gates: FeatureGates = field(default_factory=FeatureGates)  # --feature-gates
    # running beside other operators (promop/operator/ownership.py): which workload objects are ours
    controller_id: str = ""  # --controller-id: ownership.manages(obj, options.controller_id)
    prometheus_instance_namespaces: tuple[str, ...] = ()  # Prometheus/PrometheusAgent; replace --namespaces
    prometheus_instance_selector: str = ""  # label selector (string form) of the Prometheus informers
    thanos_ruler_instance_namespaces: tuple[str, ...] = ()
    thanos_ruler_instance_selector: str = ""
    repair_policy: str = "none"  # --repair-policy-for-statefulsets: none, evict or delete
    web_tls: WebTLS = field(default_factory=WebTLS)  # --web.enable-tls and friends
    # --config-reloader-{cpu,memory}-{request,limit} and --enable-config-reloader-probes
    config_reloader: ReloaderSettings = field(default_factory=ReloaderSettings)
    # Secrets/ConfigMaps watched in --namespaces too, not only in --prometheus-instance-namespaces
    watch_referenced_objects_in_all_namespaces: bool = False
    disable_unmanaged_prometheus_configuration: bool = False  # nil selectors: generate the config all the same
    configmap_field_selector: str = ""  # --configmap-field-selector, as --secret-field-selector for ConfigMaps
    web_enable_http2: bool = False  # --web.enable-http2: accepted; promop serves HTTP/1.1 only (a warning at start)
    web_tls_reload_interval: float = 60.0  # --web.tls-reload-interval: promop checks the files at every connection

    def render_options(self) -> RenderOptions:
        return RenderOptions(
            labels=dict(self.labels),
            annotations=dict(self.annotations),
            config_reloader_image=self.config_reloader_image,
            prometheus_default_base_image=self.prometheus_default_base_image,
            thanos_default_base_image=self.thanos_default_base_image,
            fast_reload=self.fast_reload,
            config_secret_max_bytes=self.config_secret_max_bytes,
            shard_retention_policy=self.feature_gates.enabled(SHARD_RETENTION_POLICY),
            feature_gates=self.feature_gates,
            config_reloader=self.config_reloader,
            unmanaged_configuration=not self.disable_unmanaged_prometheus_configuration,
        )

    def namespace_field_selector(self) -> str:
        """`metadata.namespace!=a,metadata.namespace!=b` for the deny-list (empty without one)."""
        return ",".join(f"metadata.namespace!={ns}" for ns in self.deny_namespaces)

    def namespace_allowed(self, namespace: str) -> bool:
        if self.namespaces:
            return namespace in self.namespaces
        return namespace not in self.deny_namespaces

    def listen_host_port(self) -> tuple[str, int]:
        return parse_listen_address(self.listen_address)

    def prometheus_namespace_allowed(self, namespace: str) -> bool:
        """May Prometheus objects of `namespace` be managed? (--prometheus-instance-namespaces wins)"""
        if self.prometheus_instance_namespaces:
            return namespace in self.prometheus_instance_namespaces
        return self.namespace_allowed(namespace)


def _image_base(text: str, flag: str, default: str) -> str:
    """An image name without a tag (`registry/repo`); the renderer appends `:<version>`. Empty means the
    default, as upstream's StringValOrDefault."""
    if not text:
        return default
    if any(c.isspace() for c in text):
        raise OptionsError(f"{flag} {text!r}: not an image name; pass e.g. {flag}=registry.example.com/thanos/thanos")
    return text


def _go_duration(flag: str, text: str) -> float:
    """A Go duration (`1m`, `1m30s`, `500ms`) of 0 or more, in seconds; OptionsError naming `flag`."""
    from promop.duration import GoDurationError, parse_go_seconds

    try:
        seconds = parse_go_seconds(text)
    except GoDurationError:
        raise OptionsError(f"{flag}: {text!r} is not a duration; pass e.g. {flag}=1m") from None
    if seconds < 0:
        raise OptionsError(f"{flag}: {text!r} is negative; pass e.g. {flag}=1m")
    return seconds


def _field_selector(flag: str, text: str) -> str:
    """`text` if it parses as a Kubernetes field selector, else OptionsError naming `flag`."""
    from promop.fieldselector import parse_field_selector
    from promop.labelselector import SelectorError

    try:
        parse_field_selector(text)
    except SelectorError as exc:
        raise OptionsError(f"{flag}: {exc}") from None
    return text


def _positive_bytes(text: str) -> int:
    """--config-secret-max-bytes: a byte count, above 0 and at most a Secret's 1 MiB."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes") from None
    if not 0 < value <= 1024 * 1024:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and 1048576 (a Secret holds at most 1 MiB)")
    return value


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the operator's flags to `parser` (shared by `promop run` and `promop demo`)."""
    kube = parser.add_argument_group("cluster")
    add_cluster_flags(kube)
    kube.add_argument("--namespaces", default="", help="comma-separated namespaces to watch (default: all)")
    kube.add_argument("--deny-namespaces", default="", help="comma-separated namespaces to ignore")
    kube.add_argument(
        "--secret-field-selector",
        default="",
        help="field selector for the Secrets the operator watches, e.g. type!=helm.sh/release.v1",
    )
    kube.add_argument("--configmap-field-selector", default="",
                      help="field selector for the ConfigMaps the Prometheus controller watches, "
                           "e.g. metadata.name!=kube-root-ca.crt")
    out = parser.add_argument_group("managed objects")
    out.add_argument("--labels", default="", help="k=v,... labels added to every object the operator creates")
    out.add_argument("--annotations", default="", help="k=v,... annotations added to every object created")
    out.add_argument("--config-reloader-image", default=DEFAULT_RELOADER_IMAGE, help="config reloader image")
    out.add_argument(
        "--prometheus-default-base-image",
        default=DEFAULT_PROMETHEUS_BASE_IMAGE,
        help="Prometheus image (without tag) when spec.image is not set",
    )
    out.add_argument(
        "--thanos-default-base-image",
        default=DEFAULT_THANOS_BASE_IMAGE,
        help="Thanos image (without tag) of the Thanos sidecar and ThanosRuler when neither spec.image nor "
             f"spec.thanos.image/baseImage is set (default {DEFAULT_THANOS_BASE_IMAGE})",
    )
    out.add_argument("--fast-reload", action="store_true",
                     help="every Prometheus's config reloader reads its config Secret and rule ConfigMaps through "
                          "the API (changes in about a second, not after kubelet's sync); a Role per Prometheus "
                          'allows exactly that; opt one out with the annotation promop.dev/fast-reload: "false"')
    out.add_argument("--config-secret-max-bytes", type=_positive_bytes, default=900 * 1024, metavar="BYTES",
                     help="when the gzipped config is larger, split its scrape jobs over several Secrets loaded with "
                          "scrape_config_files (Prometheus 2.43 and later; default 921600, 900 KiB; a Secret holds "
                          "at most 1 MiB)")
    run = parser.add_argument_group("runtime")
    run.add_argument("--workers", type=int, default=2, help="concurrent syncs (default 2)")
    run.add_argument("--feedback-workers", type=int, default=DEFAULT_FEEDBACK_WORKERS,
                     help="concurrent status, status.bindings and Event writes, on their own queue "
                          f"(default {DEFAULT_FEEDBACK_WORKERS})")
    run.add_argument("--kube-api-qps", type=float, default=DEFAULT_KUBE_API_QPS,
                     help=f"requests per second to the apiserver, sustained (default {DEFAULT_KUBE_API_QPS:g})")
    run.add_argument("--kube-api-burst", type=int, default=DEFAULT_KUBE_API_BURST,
                     help=f"requests the client may send at once above --kube-api-qps (default {DEFAULT_KUBE_API_BURST})")
    add_log_flags(run)
    add_web_flag(run, DEFAULT_LISTEN_ADDRESS)
    add_web_tls_flags(run)
    run.add_argument("--web.enable-http2", dest="web_enable_http2", nargs="?", const=True, default=False,
                     metavar="BOOL", help="accepted for upstream's command lines; promop serves HTTP/1.1 only "
                                          "(upstream's default too), true logs a warning")
    run.add_argument("--web.tls-reload-interval", dest="web_tls_reload_interval", default="1m", metavar="DURATION",
                     help="accepted for upstream's command lines (a Go duration); promop checks the certificate "
                          "files at every new connection, which is never later than any interval")
    run.add_argument("--resync-period", type=float, default=DEFAULT_RESYNC_SECONDS,
                     help="seconds between full resyncs of every Prometheus (default 300)")
    run.add_argument("--full-secret-informers", action="store_true", help=argparse.SUPPRESS)
    run.add_argument("--no-render-process", action="store_true", help=argparse.SUPPRESS)  # benchmark only: A/B
    add_feature_gates_flag(run)
    add_leader_election_flags(parser, DEFAULT_LEASE_NAME)
    _add_reloader_flags(parser)
    am_flags.add_flags(parser)
    ownership.add_flags(parser)


def _add_reloader_flags(parser: argparse.ArgumentParser) -> None:
    """Upstream's flags for the config reloader containers and for what a Prometheus's config covers
    (`cmd/operator/main.go`); Go booleans: the bare flag means true, `=false` turns it off."""
    g = parser.add_argument_group("config reloader and Prometheus configuration (upstream's flags)")
    d = ReloaderSettings()
    for what, kind, default in (("cpu", "request", d.cpu_request), ("cpu", "limit", d.cpu_limit),
                                ("memory", "request", d.memory_request), ("memory", "limit", d.memory_limit)):
        g.add_argument(f"--config-reloader-{what}-{kind}", default="", metavar="QUANTITY",
                       help=f"{what} {kind} of every config reloader container (Prometheus, PrometheusAgent, "
                            f"Alertmanager, ThanosRuler); 0 sets no {kind} (default {default})")
    g.add_argument("--enable-config-reloader-probes", nargs="?", const=True, default=False, metavar="BOOL",
                   help="give the config-reloader containers liveness, readiness and startup probes (GET /healthz "
                        "on port 8080; an exec probe when the reloader listens on localhost only)")
    g.add_argument("--watch-referenced-objects-in-all-namespaces", nargs="?", const=True, default=False,
                   metavar="BOOL",
                   help="with --prometheus-instance-namespaces, watch Secrets and ConfigMaps in the --namespaces "
                        "namespaces too (all of them without --namespaces), so a change of one that a monitor "
                        "references there triggers a sync")
    g.add_argument("--disable-unmanaged-prometheus-configuration", nargs="?", const=True, default=False,
                   metavar="BOOL",
                   help="a Prometheus with no serviceMonitorSelector, podMonitorSelector, probeSelector or "
                        "scrapeConfigSelector gets a generated config (without monitors) instead of a config "
                        "Secret left to the user")


def from_args(args: argparse.Namespace) -> Options:
    """Validate parsed flags into Options; raises OptionsError naming the bad flag."""
    namespaces = parse_list(args.namespaces)
    deny = parse_list(args.deny_namespaces)
    if namespaces and deny:
        raise OptionsError("--namespaces and --deny-namespaces are mutually exclusive; pass only one")
    if args.workers < 1:
        raise OptionsError(f"--workers must be at least 1, got {args.workers}")
    if args.feedback_workers < 1:
        raise OptionsError(f"--feedback-workers must be at least 1, got {args.feedback_workers}")
    if not args.kube_api_qps > 0:
        raise OptionsError(f"--kube-api-qps must be above 0, got {args.kube_api_qps:g}")
    if args.kube_api_burst < 1:
        raise OptionsError(f"--kube-api-burst must be at least 1, got {args.kube_api_burst}")
    if args.resync_period < 0:
        raise OptionsError(f"--resync-period must be >= 0 seconds, got {args.resync_period}")
    parse_listen_address(args.listen_address)
    try:
        alertmanager = am_flags.from_args(args)
    except am_flags.FlagError as exc:
        raise OptionsError(str(exc)) from None
    check_leader_election(args)
    try:
        gates = parse_feature_gates(args.feature_gates)
    except FeatureGateError as exc:
        raise OptionsError(str(exc)) from None
    beside = ownership.from_args(args)  # OptionsError naming the flag
    try:
        reloader = settings_from_flags(args.config_reloader_cpu_request, args.config_reloader_cpu_limit,
                                       args.config_reloader_memory_request, args.config_reloader_memory_limit,
                                       go_bool("--enable-config-reloader-probes", args.enable_config_reloader_probes))
    except ValueError as exc:
        raise OptionsError(str(exc)) from None
    return Options(
        **beside,
        web_tls=web_tls_from_args(args),
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespaces=namespaces,
        deny_namespaces=deny,
        labels=parse_map(args.labels, "--labels"),
        annotations=parse_map(args.annotations, "--annotations"),
        workers=args.workers,
        feedback_workers=args.feedback_workers,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        log_level=args.log_level,
        log_format=args.log_format,
        leader_elect=args.leader_elect,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace or default_lease_namespace(),
        identity=args.identity or default_identity(),
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
        secret_field_selector=args.secret_field_selector,
        config_reloader_image=args.config_reloader_image,
        prometheus_default_base_image=args.prometheus_default_base_image,
        thanos_default_base_image=_image_base(args.thanos_default_base_image, "--thanos-default-base-image",
                                              DEFAULT_THANOS_BASE_IMAGE),
        listen_address=args.listen_address,
        resync_period=args.resync_period,
        fast_reload=args.fast_reload,
        config_secret_max_bytes=args.config_secret_max_bytes,
        full_secret_informers=args.full_secret_informers,
        gc_freeze=True,
        render_process=not args.no_render_process,
        alertmanager=alertmanager,
        feature_gates=gates,
        config_reloader=reloader,
        watch_referenced_objects_in_all_namespaces=go_bool("--watch-referenced-objects-in-all-namespaces",
                                                           args.watch_referenced_objects_in_all_namespaces),
        disable_unmanaged_prometheus_configuration=go_bool("--disable-unmanaged-prometheus-configuration",
                                                           args.disable_unmanaged_prometheus_configuration),
        configmap_field_selector=_field_selector("--configmap-field-selector", args.configmap_field_selector),
        web_enable_http2=go_bool("--web.enable-http2", args.web_enable_http2),
        web_tls_reload_interval=_go_duration("--web.tls-reload-interval", args.web_tls_reload_interval),
    )
