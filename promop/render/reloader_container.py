"""What the operator's flags set on every config reloader container: resources and probes.

Upstream's `--config-reloader-cpu-request`, `--config-reloader-cpu-limit`,
`--config-reloader-memory-request`, `--config-reloader-memory-limit` (10m, 10m, 50Mi, 50Mi; a zero
quantity means "none": no request or limit for that resource) and `--enable-config-reloader-probes`
(`pkg/operator/config.go` ContainerConfig, `pkg/operator/config_reloader.go`). One place for the
Prometheus, PrometheusAgent, Alertmanager and ThanosRuler reloaders, so they cannot drift.

Quantities are kept in Kubernetes' canonical form (`0.1` -> `100m`, `1024Mi` -> `1Gi`), which is
what upstream sends and what an apiserver stores: the StatefulSet then compares equal to what the
apiserver gives back.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from promop.quantity import QuantityError, format_bytes, parse_quantity

RELOADER_PORT = 8080  # the main reloader's --listen-address port (upstream's configReloaderPort)
HEALTH_PATH = "/healthz"

_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_SI = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def canonical_quantity(text: str) -> str:
    """`resource.MustParse(text).String()`: the canonical text of a quantity (QuantityError if it is none).

    Binary suffixes keep the largest binary suffix that leaves a whole number (`1536Mi` -> `1536Mi`,
    `1024Mi` -> `1Gi`), falling back to decimal below 1024 or for fractions of a byte; decimal ones use
    the largest power of 1000 that leaves a whole number (`1000` -> `1k`, `0.1` -> `100m`), rounding up
    to nano units as Go does; exponent forms keep an exponent that is a multiple of 3."""
    text = text.strip()
    value = parse_quantity(text)
    if value == 0:
        return "0"
    if text.endswith(_BINARY_SUFFIXES) and value.denominator == 1 and abs(value) >= 1024:
        return format_bytes(int(value))
    mantissa, exponent = _decimal(value)
    if "e" in text.lower() and not text.endswith(_BINARY_SUFFIXES):
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_SI[exponent]}"


def _decimal(value: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with exponent a multiple of 3 in [-9, 18] and the mantissa whole: the
    smallest exponent that makes it whole (rounded up at nano), then as large as it stays whole."""
    exponent = -9
    for exp in range(-9, 1, 3):
        if (value / Fraction(10) ** exp).denominator == 1:
            exponent = exp
            break
    scaled = value / Fraction(10) ** exponent
    mantissa = -((-scaled.numerator) // scaled.denominator) if scaled > 0 else scaled.numerator // scaled.denominator
    while exponent < 18 and mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    return mantissa, exponent


# Upstream's default CPU limit is 10m, sized for its Go reloader. promop's reloader is Python: at
# 10m its start-up (~80 ms of CPU in the reloader image: interpreter, imports, one render) takes
# ~8 s of wall time, the init container's before Prometheus can even start (45-61 s per pod on
# the real node before its imports were trimmed). 200m lets a pod be Ready in a few seconds and a
# first config change reach Prometheus well within 2 s of the sidecar starting (docs/reloader.md,
# "Resources"; bench/reloader_startup). It is only a ceiling: the sidecar idles at ~0 CPU, and the
# request, what the scheduler reserves, stays upstream's 10m.
DEFAULT_CPU_LIMIT = "200m"
UPSTREAM_CPU_LIMIT = "10m"


@dataclass(frozen=True)
class ReloaderSettings:
    """The reloader's resources (canonical quantities; "0" = none) and whether it gets probes."""

    cpu_request: str = "10m"
    cpu_limit: str = DEFAULT_CPU_LIMIT
    memory_request: str = "50Mi"
    memory_limit: str = "50Mi"
    enable_probes: bool = False

    def resources(self) -> dict[str, Any]:
        """`ContainerConfig.ResourceRequirements()`: requests and limits without the zero ones.
        Both maps are always there (upstream's empty ResourceLists serialise to nothing, as here)."""
        requests = {k: v for k, v in (("cpu", self.cpu_request), ("memory", self.memory_request)) if v != "0"}
        limits = {k: v for k, v in (("cpu", self.cpu_limit), ("memory", self.memory_limit)) if v != "0"}
        out: dict[str, Any] = {}
        if limits:
            out["limits"] = limits
        if requests:
            out["requests"] = requests
        return out

    def is_default(self) -> bool:
        """True for the defaults: the input hashes leave the settings out then, so upgrading
        promop does not roll every StatefulSet for them."""
        return self == ReloaderSettings()

    def hash_fields(self) -> dict[str, Any]:
        """What goes into an input hash when the settings differ from the defaults."""
        return {"cpu_request": self.cpu_request, "cpu_limit": self.cpu_limit, "memory_request": self.memory_request,
                "memory_limit": self.memory_limit, "enable_probes": self.enable_probes}


def probe_handler(listen_local: bool) -> dict[str, Any]:
    """Upstream's addProbes handler: GET /healthz on port 8080; when the reloader listens on localhost
    only (`listenLocal`), an exec probe running curl or wget inside the container instead."""
    if listen_local:
        url = f"http://localhost:{RELOADER_PORT}{HEALTH_PATH}"
        script = (f'if [ -x "$(command -v curl)" ]; then exec curl --fail {url}; '
                  f'elif [ -x "$(command -v wget)" ]; then exec wget -q -O /dev/null {url}; else exit 1; fi')
        return {"exec": {"command": ["sh", "-c", script]}}
    return {"httpGet": {"path": HEALTH_PATH, "port": RELOADER_PORT}}


def apply(container: dict, settings: ReloaderSettings, init: bool, listen_local: bool = False) -> dict:
    """Set the flags' resources on a reloader container, and with `--enable-config-reloader-probes` its
    liveness, readiness and startup probes (never on the init container: Kubernetes refuses probes
    on init containers, and it exits once the config is written). Returns `container`."""
    container["resources"] = settings.resources()
    if settings.enable_probes and not init:
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            container[probe] = probe_handler(listen_local)
    return container


def settings_from_flags(cpu_request: str, cpu_limit: str, memory_request: str, memory_limit: str,
                        enable_probes: bool) -> ReloaderSettings:
    """ReloaderSettings from the flags' text; ValueError with a one-line message naming the flag.

    An empty value keeps the default (upstream's Quantity.Set ignores ""). Refused, unlike upstream,
    where they would only fail later on every StatefulSet the apiserver validates: a negative
    quantity, and a request above its limit."""
    d = ReloaderSettings()
    values = {}
    for flag, text, default in (("--config-reloader-cpu-request", cpu_request, d.cpu_request),
                                ("--config-reloader-cpu-limit", cpu_limit, d.cpu_limit),
                                ("--config-reloader-memory-request", memory_request, d.memory_request),
                                ("--config-reloader-memory-limit", memory_limit, d.memory_limit)):
        values[flag] = _flag_quantity(flag, text, default)
    settings = ReloaderSettings(values["--config-reloader-cpu-request"], values["--config-reloader-cpu-limit"],
                                values["--config-reloader-memory-request"], values["--config-reloader-memory-limit"],
                                enable_probes)
    for resource, request, limit in (("cpu", settings.cpu_request, settings.cpu_limit),
                                     ("memory", settings.memory_request, settings.memory_limit)):
        if request != "0" and limit != "0" and parse_quantity(request) > parse_quantity(limit):
            raise ValueError(f"--config-reloader-{resource}-request {request} is above --config-reloader-{resource}-limit "
                             f"{limit}: Kubernetes would refuse every reloader container; raise the limit, lower "
                             f"the request, or pass 0 for no limit")
    return settings


def _flag_quantity(flag: str, text: str, default: str) -> str:
    if not text.strip():
        return default
    try:
        canonical = canonical_quantity(text)
    except QuantityError:
        raise ValueError(f"{flag}: {text!r} is not a quantity; pass e.g. {flag}={default}, or 0 for none") from None
    if canonical.startswith("-"):
        raise ValueError(f"{flag}: {text!r} is negative; pass a quantity of 0 or more (0 for none)")
    return canonical
