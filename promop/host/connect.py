"""Connect to the apiserver, retrying with exponential backoff and jitter until it answers.

Every replica of every controller starts at once after an apiserver outage; the
jitter (each wait drawn from [delay/2, delay]) keeps them from retrying in step.
A kubeconfig mistake is not retried: callers run `check_kubeconfig` first.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Any, Callable

from promop.host.logs import fields
from promop.kube.client import KubeClient
from promop.kube.errors import ApiError

log = logging.getLogger("promop.host")


def backoff_waits(base_delay: float = 1.0, max_delay: float = 30.0,
                  rand: Callable[[], float] = random.random):
    """The waits between attempts: doubling from `base_delay` up to `max_delay`, each jittered down to half."""
    delay = base_delay
    while True:
        yield min(max_delay, delay) * (0.5 + rand() / 2)
        delay = min(max_delay, delay * 2)


def connect(factory: Callable[[], KubeClient], stop: threading.Event, *, base_delay: float = 1.0,
            max_delay: float = 30.0, logger: logging.Logger | None = None) -> KubeClient | None:
    """A client (from `factory`) that has answered one request; retries until `stop` (then None).

    The request is GET /version, which needs no RBAC grant: a probe that needs one (it listed
    namespaces) keeps a least-privilege component (autoscaler, recommender) retrying forever,
    403 after 403, and never Ready, as it did in real pods with their bundles' ClusterRoles.
    """
    logger = logger or log
    waits = backoff_waits(base_delay, max_delay)
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            client = factory()
            client.version()
            if attempt > 1:
                logger.info("apiserver reachable", **fields(attempt=attempt))
            return client
        except ApiError as exc:
            wait = next(waits)
            logger.warning("apiserver unreachable; retrying",
                           **fields(attempt=attempt, retry_in=round(wait, 2), error=str(exc)))
            stop.wait(wait)
    return None


def client_factory(kubeconfig: str | None, context: str | None, **kw: Any) -> Callable[[], KubeClient]:
    """`KubeClient.from_config` with these arguments, for `connect`."""
    return lambda: KubeClient.from_config(kubeconfig, context, **kw)
