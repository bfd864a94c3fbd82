"""Entry point of `promop-config-reloader`: flags, logging, signals, server, run loop.

Start-up CPU matters: in a pod the reloader runs under a small CPU limit, where every 10 ms of
CPU is a second of wall time at upstream's 10m. So each mode imports only what it uses: the init
container (gunzip, $(VAR) expansion, one atomic write) neither the metrics client, the HTTP
server, the file watcher nor the reload client; the Kubernetes API client only with the API
flags; the web config (YAML, TLS) only with --web-config-file.
"""
from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Sequence

from . import logs, specs
from .apply import Applier
from gotime.duration import format_seconds as format_duration
from .flags import Options, parse
from .runner import Runner

if TYPE_CHECKING:
    from .reloaders import Reloader
    from .webconfig import WebConfig

# After SIGTERM, how long the loop thread may take to notice before we exit anyway
# (it may be blocked in an HTTP reload with a long --reload-timeout).
SHUTDOWN_GRACE = 1.0


def _reloader(opts: Options) -> Reloader | None:
    if opts.init_mode:
        return None  # init mode writes the config and exits: it never reloads
    from .reloaders import HttpReloader, SignalReloader

    if opts.reload_method == "signal":
        return SignalReloader(opts.process_executable_name, opts.runtimeinfo_url, opts.reload_timeout)
    return HttpReloader(opts.reload_url, opts.reload_timeout)


def _usage_problem(opts: Options) -> str | None:
    if opts.config_envsubst_file and not opts.config_file and not opts.watch_secret:
        return "--config-envsubst-file needs --config-file or --watch-secret"
    if bool(opts.config_parts_dir) != bool(opts.config_parts_out_dir):
        return "--config-parts-dir and --config-parts-out-dir go together: give both or neither"
    if (not opts.config_file and not opts.watched_dirs and not opts.watch_secret and not opts.watch_configmaps
            and not opts.config_parts_dir):
        return ("nothing to do: give --config-file, --watch-secret, --watch-configmap, --config-parts-dir "
                "and/or --watched-dir")
    try:
        specs.parse_specs(opts.watch_secret, opts.watch_configmaps, opts.config_file, opts.config_envsubst_file)
        specs.parse_secret_files(opts.watch_secret_files)
    except ValueError as exc:
        return str(exc)
    if opts.listen_address:
        try:
            specs.split_address(opts.listen_address)
        except ValueError as exc:
            return str(exc)
    return None


def main(argv: Sequence[str] | None = None, early_signals: Sequence[int] = ()) -> int:
    """Run the reloader; `early_signals` are those `entry` caught before this module was imported."""
    opts = parse(list(argv) if argv is not None else None)
    log = logs.setup(opts.log_format, opts.log_level)
    problem = _usage_problem(opts)
    if problem:
        log.error("invalid flags", err=problem)
        return 2
    if opts.init_mode:
        from .metrics import unrecorded

        metrics = unrecorded()
    else:
        from .metrics import create

        metrics = create(opts.reload_method)
    secret, mirrors = specs.parse_specs(opts.watch_secret, opts.watch_configmaps, opts.config_file,
                                            opts.config_envsubst_file)
    if secret is not None:
        opts.mounted_config_file = opts.config_file
        opts.config_file = specs.stage_path(opts.config_envsubst_file)
    applier = Applier(opts, _reloader(opts), metrics, log)
    applier.hashed_dirs += [directory for _, directory, _ in mirrors if directory not in applier.hashed_dirs]
    secret_files = specs.parse_secret_files(opts.watch_secret_files)
    extra = [m for _, _, m in mirrors if m] + sorted({m for *_, m in secret_files if m})
    runner = Runner(opts, applier, metrics, log, extra_dirs=tuple(extra))
    inputs = None
    if secret is not None or mirrors or secret_files:
        from . import apiinputs, kubeapi

        try:
            api = kubeapi.load_api(opts.kubeconfig)
        except kubeapi.ApiConfigError as exc:
            log.error("invalid Kubernetes API configuration", err=str(exc))
            return 2
        inputs = apiinputs.build(
            api, secret, mirrors, opts.mounted_config_file, opts.config_envsubst_file, log, runner.request_pass,
            on_event=lambda kind: metrics.api_watch_events.labels(kind).inc(),
            on_error=lambda kind: metrics.api_watch_errors.labels(kind).inc(), secret_files=secret_files)
        applier.before_pass = inputs.refresh_from_mounts

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received signal; shutting down", signal=signal.Signals(signum).name)
        runner.stop.set()
        runner.wake.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    for signum in early_signals[:1]:  # a SIGTERM during start-up: stop now that we can
        on_signal(signum, None)
    try:
        log.info(
            "starting", cfg_in=opts.config_file, cfg_out=opts.config_envsubst_file,
            watched_dirs=",".join(opts.watched_dirs), watch_interval=format_duration(opts.watch_interval),
            delay_interval=format_duration(opts.delay_interval), method=opts.reload_method,
        )
        if opts.init_mode:
            if inputs is not None:
                inputs.fetch_once()
                applier.before_pass = None  # fetch_once already chose each input's source
            return runner.run_once()
        if opts.listen_address:
            from . import server
            from .webconfig import WebConfigError

            try:
                web = _web_config(opts, log)
                http = server.start(opts.listen_address, metrics.registry, web)
            except WebConfigError as exc:
                log.error("invalid web config", err=str(exc))
                return 1
            except OSError as exc:
                log.error("cannot listen", address=opts.listen_address, err=exc.strerror or str(exc))
                return 1
            log.info("listening", address=opts.listen_address, port=server.bound_port(http),
                     tls=web.tls is not None, basic_auth=bool(web.users))
        if inputs is not None:
            inputs.start()
        return _run_until_stopped(runner)
    finally:
        if inputs is not None:
            inputs.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _web_config(opts: Options, log: logs.Log) -> WebConfig:
    from . import webconfig

    if not opts.web_config_file:
        return webconfig.WebConfig()
    web = webconfig.load(opts.web_config_file)
    if web.ignored:
        log.warning("web config keys not supported; ignored", file=opts.web_config_file, keys=",".join(web.ignored))
    return web


def _run_until_stopped(runner: Runner) -> int:
    outcome: dict[str, int] = {}

    def work() -> None:
        try:
            outcome["rc"] = runner.run()
        except Exception as exc:  # a bug: say so and exit non-zero so kubelet restarts us
            runner.log.error("run loop crashed", err=repr(exc))
            outcome["rc"] = 1

    worker = threading.Thread(target=work, name="reloader", daemon=True)
    worker.start()
    while worker.is_alive() and not runner.stop.is_set():
        runner.stop.wait(0.5)
    worker.join(SHUTDOWN_GRACE)
    return outcome.get("rc", 0)
