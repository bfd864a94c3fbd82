"""Command-line flags, compatible with upstream's prometheus-config-reloader."""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from gotime.duration import parse_seconds as parse_duration
from .logs import LEVELS

DEFAULT_RELOAD_URL = "http://127.0.0.1:9090/-/reload"
DEFAULT_RUNTIMEINFO_URL = "http://127.0.0.1:9090/api/v1/status/runtimeinfo"


@dataclass
class Options:
    config_file: str = ""
    config_envsubst_file: str = ""
    watched_dirs: list[str] = field(default_factory=list)
    watch_interval: float = 180.0
    delay_interval: float = 1.0
    retry_interval: float = 5.0
    reload_timeout: float = 30.0
    reload_url: str = DEFAULT_RELOAD_URL
    reload_method: str = "http"
    process_executable_name: str = "prometheus"
    runtimeinfo_url: str = DEFAULT_RUNTIMEINFO_URL
    listen_address: str = ""
    web_config_file: str = ""
    log_format: str = "logfmt"
    log_level: str = "info"
    statefulset_ordinal_from_envvar: str = "POD_NAME"
    watch_secret: str = ""
    watch_configmaps: list[str] = field(default_factory=list)
    kubeconfig: str = ""
    config_parts_dir: str = ""
    config_parts_out_dir: str = ""
    watch_secret_files: list[str] = field(default_factory=list)
    # With --watch-secret, config_file becomes the staged copy and this keeps the mounted one.
    mounted_config_file: str = ""

    @property
    def init_mode(self) -> bool:
        """--watch-interval=0: write the output once and exit (init container)."""
        return self.watch_interval == 0


def _duration(text: str) -> float:
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if value < 0:
        raise argparse.ArgumentTypeError(f"duration {text!r} must not be negative")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="promop-config-reloader",
        description="Renders Prometheus's config (gunzip + $(VAR) expansion), watches it and "
        "the rule directories, and triggers Prometheus reloads.",
    )
    add = p.add_argument
    add("--config-file", default="", help="input config file (optionally gzipped)")
    add("--config-envsubst-file", default="", help="output file with $(VAR) expanded")
    add("--watched-dir", dest="watched_dirs", action="append", default=[],
        help="directory to watch non-recursively (repeatable)")
    add("--watch-interval", type=_duration, default="3m",
        help="full check period; 0 writes the output once and exits (init container)")
    add("--delay-interval", type=_duration, default="1s", help="debounce delay after a watch event")
    add("--retry-interval", type=_duration, default="5s", help="wait between failed attempts")
    add("--reload-timeout", type=_duration, default="30s", help="timeout of one reload")
    add("--reload-url", default=DEFAULT_RELOAD_URL, help="URL POSTed to reload (http method)")
    add("--reload-method", choices=["http", "signal"], default="http", help="how to trigger a reload")
    add("--process-executable-name", default="prometheus",
        help="executable name of the process to SIGHUP (signal method)")
    add("--runtimeinfo-url", default=DEFAULT_RUNTIMEINFO_URL,
        help="Prometheus runtimeinfo URL polled after a SIGHUP (signal method)")
    add("--listen-address", default="", help="address for /metrics and /healthz; empty disables")
    add("--web-config-file", default="", help="exporter-toolkit web config (TLS, basic auth) for the sidecar's own /metrics and /healthz")
    add("--log-format", choices=["logfmt", "json"], default="logfmt")
    add("--log-level", choices=sorted(LEVELS), default="info")
    add("--statefulset-ordinal-from-envvar", default="POD_NAME",
        help="env var whose trailing number becomes STATEFULSET_ORDINAL_NUMBER")
    add("--watch-secret", default="", metavar="NAMESPACE/NAME[:KEY]",
        help="read the config from this Secret's KEY through the Kubernetes API (default KEY: the base name of "
             "--config-file, else prometheus.yaml.gz); --config-file stays the fallback while the API is unreachable")
    add("--watch-configmap", dest="watch_configmaps", action="append", default=[],
        metavar="NAMESPACE/NAME=DIR[,mount=MOUNTED_DIR]",
        help="write each key of this ConfigMap into DIR through the Kubernetes API (keys that went away are "
             "removed) and reload; MOUNTED_DIR, the ConfigMap's volume, is the fallback (repeatable)")
    add("--config-parts-dir", default="",
        help="directory of scrape config parts (*.yaml.gz or *.yaml, e.g. projected Secrets) to watch; each is "
             "written gunzipped and $(VAR)-expanded into --config-parts-out-dir, for scrape_config_files")
    add("--config-parts-out-dir", default="", help="where --config-parts-dir's parts are written as plain YAML")
    add("--watch-secret-file", dest="watch_secret_files", action="append", default=[],
        metavar="NAMESPACE/NAME:KEY=DIR[,mount=MOUNTED_DIR]",
        help="write this Secret's KEY as DIR/KEY through the Kubernetes API (removed when the Secret is deleted) "
             "and reload; MOUNTED_DIR/KEY is the fallback (repeatable; e.g. config parts for --config-parts-dir)")
    add("--kubeconfig", default="", help="kubeconfig for the API watches (default: in-cluster credentials)")
    add("--auto-gomemlimit-ratio", type=float, default=0.0, help=argparse.SUPPRESS)
    return p


def parse(argv: list[str] | None) -> Options:
    ns = build_parser().parse_args(argv)
    values = vars(ns)
    values.pop("auto_gomemlimit_ratio", None)
    return Options(**values)
