"""The operator's settings: command-line flags of `promop run`, parsed into one dataclass.

The flags follow upstream's names where upstream has them (`--namespaces`,
`--deny-namespaces`, `--labels`, `--annotations`, `--secret-field-selector`,
`--web.listen-address`, ...), so an existing Deployment's args carry over.
"""

from __future__ import annotations

import argparse
import os
import socket
from dataclasses import dataclass, field

from promop.errors import UserError
from promop.operator.alertmanager import flags as am_flags  # Alertmanager/kubelet/CRD flags (hook)
from promop.render.model import DEFAULT_PROMETHEUS_BASE_IMAGE, DEFAULT_RELOADER_IMAGE, RenderOptions

LOG_LEVELS = ("debug", "info", "warn", "error")
LOG_FORMATS = ("logfmt", "json")
DEFAULT_LEASE_NAME = "promop-operator"
DEFAULT_LISTEN_ADDRESS = ":8080"
DEFAULT_RESYNC_SECONDS = 300.0  # upstream's informer resync period (5 min)
# Client-side rate limit towards the apiserver. Feedback (status.bindings, Events) is written for
# every selected object: at 100 requests/s, 1,000 bindings take about 10 s and 5,000 about 50 s,
# on their own workers, never in front of a config write (which waits at most a few tokens).
DEFAULT_KUBE_API_QPS = 100.0
DEFAULT_KUBE_API_BURST = 200
DEFAULT_FEEDBACK_WORKERS = 4


class OptionsError(UserError, ValueError):
    """A flag value that cannot be used; the message names the flag and says what to pass."""


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
    listen_address: str = DEFAULT_LISTEN_ADDRESS
    resync_period: float = DEFAULT_RESYNC_SECONDS
    gc_freeze: bool = False  # gc.freeze() once the caches have synced (a process of its own: promop run, demo)
    fast_reload: bool = False  # reloaders read config through the API (promop/render/fast_reload.py)
    full_secret_informers: bool = False  # benchmark only: cache whole Secrets/ConfigMaps, as before upstream #5424
    alertmanager: am_flags.AMOptions = field(default_factory=am_flags.AMOptions)  # hook: see that module

    def render_options(self) -> RenderOptions:
        return RenderOptions(
            labels=dict(self.labels),
            annotations=dict(self.annotations),
            config_reloader_image=self.config_reloader_image,
            prometheus_default_base_image=self.prometheus_default_base_image,
            fast_reload=self.fast_reload,
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


def parse_map(value: str, flag: str) -> dict[str, str]:
    """`k1=v1,k2=v2` -> dict; the format upstream's `--labels`/`--annotations` use."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in (value or "").split(",")):
        if not part:
            continue
        key, sep, val = part.partition("=")
        if not sep or not key.strip():
            raise OptionsError(f"{flag}: {part!r} is not key=value; pass e.g. {flag}=team=infra,env=prod")
        out[key.strip()] = val.strip()
    return out


def parse_list(value: str) -> tuple[str, ...]:
    """`a,b` -> ("a", "b"), dropping blanks and duplicates, order kept."""
    seen: dict[str, None] = {}
    for part in (value or "").split(","):
        if part.strip():
            seen[part.strip()] = None
    return tuple(seen)


def parse_listen_address(value: str) -> tuple[str, int]:
    """`:8080` / `0.0.0.0:8080` / `127.0.0.1:0` -> (host, port); an empty host means all interfaces."""
    host, sep, port = (value or "").rpartition(":")
    if not sep:
        raise OptionsError(f"--web.listen-address: {value!r} has no port; pass e.g. :8080 or 127.0.0.1:8080")
    try:
        number = int(port)
    except ValueError:
        raise OptionsError(f"--web.listen-address: port {port!r} in {value!r} is not a number") from None
    if not 0 <= number <= 65535:
        raise OptionsError(f"--web.listen-address: port {number} in {value!r} is out of range 0-65535")
    return host.strip("[]") or "0.0.0.0", number


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the operator's flags to `parser` (shared by `promop run` and `promop demo`)."""
    kube = parser.add_argument_group("cluster")
    kube.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster config, else $KUBECONFIG)")
    kube.add_argument("--context", help="kubeconfig context to use")
    kube.add_argument("--namespaces", default="", help="comma-separated namespaces to watch (default: all)")
    kube.add_argument("--deny-namespaces", default="", help="comma-separated namespaces to ignore")
    kube.add_argument(
        "--secret-field-selector",
        default="",
        help="field selector for the Secrets the operator watches, e.g. type!=helm.sh/release.v1",
    )
    out = parser.add_argument_group("managed objects")
    out.add_argument("--labels", default="", help="k=v,... labels added to every object the operator creates")
    out.add_argument("--annotations", default="", help="k=v,... annotations added to every object created")
    out.add_argument("--config-reloader-image", default=DEFAULT_RELOADER_IMAGE, help="config reloader image")
    out.add_argument(
        "--prometheus-default-base-image",
        default=DEFAULT_PROMETHEUS_BASE_IMAGE,
        help="Prometheus image (without tag) when spec.image is not set",
    )
    out.add_argument("--fast-reload", action="store_true",
                     help="every Prometheus's config reloader reads its config Secret and rule ConfigMaps through "
                          "the API (changes in about a second, not after kubelet's sync); a Role per Prometheus "
                          'allows exactly that; opt one out with the annotation promop.dev/fast-reload: "false"')
    run = parser.add_argument_group("runtime")
    run.add_argument("--workers", type=int, default=2, help="concurrent syncs (default 2)")
    run.add_argument("--feedback-workers", type=int, default=DEFAULT_FEEDBACK_WORKERS,
                     help="concurrent status, status.bindings and Event writes, on their own queue "
                          f"(default {DEFAULT_FEEDBACK_WORKERS})")
    run.add_argument("--kube-api-qps", type=float, default=DEFAULT_KUBE_API_QPS,
                     help=f"requests per second to the apiserver, sustained (default {DEFAULT_KUBE_API_QPS:g})")
    run.add_argument("--kube-api-burst", type=int, default=DEFAULT_KUBE_API_BURST,
                     help=f"requests the client may send at once above --kube-api-qps (default {DEFAULT_KUBE_API_BURST})")
    run.add_argument("--log-level", choices=LOG_LEVELS, default="info")
    run.add_argument("--log-format", choices=LOG_FORMATS, default="logfmt")
    run.add_argument("--web.listen-address", dest="listen_address", default=DEFAULT_LISTEN_ADDRESS,
                     help="address of /metrics, /healthz and /readyz (default :8080)")
    run.add_argument("--resync-period", type=float, default=DEFAULT_RESYNC_SECONDS,
                     help="seconds between full resyncs of every Prometheus (default 300)")
    run.add_argument("--full-secret-informers", action="store_true", help=argparse.SUPPRESS)
    le = parser.add_argument_group("leader election")
    le.add_argument("--leader-elect", action="store_true", help="run only while holding a Lease")
    le.add_argument("--leader-election-lease-name", dest="lease_name", default=DEFAULT_LEASE_NAME)
    le.add_argument("--leader-election-namespace", dest="lease_namespace", default=None,
                    help="namespace of the Lease (default: the pod's namespace, else 'default')")
    le.add_argument("--leader-election-identity", dest="identity", default="",
                    help="this replica's identity (default: hostname_pid)")
    le.add_argument("--leader-election-lease-duration", dest="lease_duration", type=float, default=15.0,
                    help="seconds a standby waits after the last renewal before taking over (default 15)")
    le.add_argument("--leader-election-renew-deadline", dest="renew_deadline", type=float, default=10.0,
                    help="seconds the leader keeps retrying a renewal before giving up (default 10)")
    le.add_argument("--leader-election-retry-period", dest="retry_period", type=float, default=2.0,
                    help="seconds between lease attempts (default 2)")
    am_flags.add_flags(parser)


def default_lease_namespace() -> str:
    """The pod's namespace when in a cluster (service account mount), else `default`."""
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or "default"
    except OSError:
        return os.environ.get("POD_NAMESPACE", "default")


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
    if args.leader_elect:
        from promop.kube.leader_election import LeaderElectionConfig, LeaderElectionConfigError

        try:
            LeaderElectionConfig("x", "x", "x", args.lease_duration, args.renew_deadline, args.retry_period)
        except LeaderElectionConfigError as exc:
            raise OptionsError(f"--leader-election-*: {exc}") from None
    return Options(
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
        identity=args.identity or f"{socket.gethostname()}_{os.getpid()}",
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
        secret_field_selector=args.secret_field_selector,
        config_reloader_image=args.config_reloader_image,
        prometheus_default_base_image=args.prometheus_default_base_image,
        listen_address=args.listen_address,
        resync_period=args.resync_period,
        fast_reload=args.fast_reload,
        full_secret_informers=args.full_secret_informers,
        gc_freeze=True,
        alertmanager=alertmanager,
    )
