"""The flags every long-running command shares, and their parsers.

`--kubeconfig`/`--context`, `--log-level`/`--log-format`, `--web.listen-address`
and the leader-election group keep the same names, defaults and messages in
`promop run`, `promop autoscaler`, `promop recommender` and `promop adapter`.
"""

from __future__ import annotations

import argparse
import os
import socket
from dataclasses import dataclass

from promop.errors import UserError

LOG_LEVELS = ("debug", "info", "warn", "error")
LOG_FORMATS = ("logfmt", "json")
DEFAULT_LISTEN_ADDRESS = ":8080"
KUBECONFIG_HELP = "kubeconfig file (default: in-cluster config, else $KUBECONFIG)"


class OptionsError(UserError, ValueError):
    """A flag value that cannot be used; the message names the flag and says what to pass."""


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


def default_lease_namespace() -> str:
    """The pod's namespace when in a cluster (service account mount), else `default`."""
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or "default"
    except OSError:
        return os.environ.get("POD_NAMESPACE", "default")


def default_identity() -> str:
    """This replica's leader-election identity when none is given: `hostname_pid`."""
    return f"{socket.gethostname()}_{os.getpid()}"


def add_cluster_flags(group, *, context: bool = True) -> None:
    """`--kubeconfig` (and `--context`)."""
    group.add_argument("--kubeconfig", help=KUBECONFIG_HELP)
    if context:
        group.add_argument("--context", help="kubeconfig context to use")


def add_log_flags(group) -> None:
    """`--log-level` and `--log-format` (see promop.host.logs)."""
    group.add_argument("--log-level", choices=LOG_LEVELS, default="info")
    group.add_argument("--log-format", choices=LOG_FORMATS, default="logfmt")


def add_web_flag(group, default: str = DEFAULT_LISTEN_ADDRESS) -> None:
    """`--web.listen-address` of /metrics, /healthz and /readyz."""
    group.add_argument("--web.listen-address", dest="listen_address", default=default,
                       help=f"address of /metrics, /healthz and /readyz (default {default})")


def add_leader_election_flags(parser: argparse.ArgumentParser, lease_name: str) -> None:
    """The leader-election group of `promop run` and `promop autoscaler`."""
    le = parser.add_argument_group("leader election")
    le.add_argument("--leader-elect", action="store_true", help="run only while holding a Lease")
    le.add_argument("--leader-election-lease-name", dest="lease_name", default=lease_name)
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


def check_leader_election(args: argparse.Namespace) -> None:
    """OptionsError when `--leader-elect` comes with timings client-go would refuse."""
    if not getattr(args, "leader_elect", False):
        return
    from promop.kube.leader_election import LeaderElectionConfig, LeaderElectionConfigError

    try:
        LeaderElectionConfig("x", "x", "x", args.lease_duration, args.renew_deadline, args.retry_period)
    except LeaderElectionConfigError as exc:
        raise OptionsError(f"--leader-election-*: {exc}") from None


@dataclass(frozen=True)
class HostOptions:
    """The settings the host reads; every controller's Options extends these (and may change a default)."""

    kubeconfig: str | None = None
    context: str | None = None
    listen_address: str = DEFAULT_LISTEN_ADDRESS
    leader_elect: bool = False
    lease_name: str = "promop"
    lease_namespace: str = "default"
    identity: str = ""                # default: hostname_pid
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def listen_host_port(self) -> tuple[str, int]:
        return parse_listen_address(self.listen_address)

    def with_identity(self) -> str:
        return self.identity or default_identity()


def go_bool(flag: str, value: object) -> bool:
    """A Go flag's boolean value (strconv.ParseBool): `--flag`, `--flag=true`, `--flag=false`. Parsed
    after argparse (flags declared with nargs="?", const=True) so that a bad value is one line."""
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in ("1", "t", "true", "yes"):
        return True
    if low in ("0", "f", "false", "no"):
        return False
    raise OptionsError(f"{flag}: {value!r} is not true or false; pass {flag}=true or {flag}=false")


def add_web_tls_flags(group) -> None:
    """Upstream's web TLS flags (`pkg/server`); the `--web.tls-*-file` spellings are accepted as aliases."""
    from promop.host.webtls import DEFAULT_MIN_VERSION, WebTLS

    d = WebTLS()
    group.add_argument("--web.enable-tls", dest="web_enable_tls", nargs="?", const=True,
                       default=False, metavar="BOOL", help="serve /metrics, /healthz and /readyz over HTTPS")
    group.add_argument("--web.cert-file", "--web.tls-cert-file", dest="web_cert_file", default=d.cert_file,
                       help=f"serving certificate, reloaded when it changes (default {d.cert_file})")
    group.add_argument("--web.key-file", "--web.tls-private-key-file", dest="web_key_file", default=d.key_file,
                       help=f"private key of the serving certificate (default {d.key_file})")
    group.add_argument("--web.client-ca-file", "--web.tls-client-ca-file", dest="web_client_ca_file",
                       default=d.client_ca_file,
                       help="CA that client certificates must be signed by; required from clients when the file "
                            f"exists (default {d.client_ca_file})")
    group.add_argument("--web.tls-min-version", dest="web_tls_min_version", default=DEFAULT_MIN_VERSION,
                       help=f"VersionTLS12 or VersionTLS13 (default {DEFAULT_MIN_VERSION})")
    group.add_argument("--web.tls-cipher-suites", dest="web_tls_cipher_suites", default="",
                       help="comma-separated Go cipher suite names for TLS 1.2 (TLS 1.3 suites are not configurable)")


def web_tls_from_args(args: argparse.Namespace):
    """The WebTLS of the parsed flags; OptionsError for a value upstream refuses."""
    from promop.host.webtls import TLSConfigError, WebTLS, check

    tls = WebTLS(enabled=go_bool("--web.enable-tls", args.web_enable_tls), cert_file=args.web_cert_file,
                 key_file=args.web_key_file,
                 client_ca_file=args.web_client_ca_file, min_version=args.web_tls_min_version,
                 cipher_suites=parse_list(args.web_tls_cipher_suites))
    try:
        check(tls)
    except TLSConfigError as exc:
        raise OptionsError(str(exc)) from None
    return tls
