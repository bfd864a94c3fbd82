"""Kubeconfig checking and loading, once for every command that talks to a cluster.

A kubeconfig mistake (missing, empty, a directory, not YAML, no such context)
is the user's: every command says so in one line and exits 2 (a `UserError`).
An apiserver that does not answer is not: long-running commands retry it
(`promop.host.connect`), one-shot commands report it.
"""

from __future__ import annotations

import os
from typing import Any

from promop.errors import UserError

IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def in_cluster(kubeconfig: str | None, context: str | None) -> bool:
    """True when the client would use the pod's service account (as KubeClient.from_config decides)."""
    return kubeconfig is None and context is None and bool(os.environ.get("KUBERNETES_SERVICE_HOST")) \
        and not os.environ.get("KUBECONFIG")


def describe(kubeconfig: str | None, flag: str = "--kubeconfig") -> str:
    """Where the configuration comes from, as the user would name it."""
    if kubeconfig:
        return f"{flag} {kubeconfig}"
    if os.environ.get("KUBECONFIG"):
        return f"KUBECONFIG={os.environ['KUBECONFIG']}"
    return "~/.kube/config"


def _paths(kubeconfig: str | None) -> list[str]:
    if kubeconfig:
        return [kubeconfig]
    if os.environ.get("KUBECONFIG"):
        return [p for p in os.environ["KUBECONFIG"].split(os.pathsep) if p]
    return [os.path.expanduser("~/.kube/config")]


def check_kubeconfig(kubeconfig: str | None, context: str | None, flag: str = "--kubeconfig") -> None:
    """Raise UserError when the configuration cannot be used at all (no network is touched): a
    kubeconfig path that does not exist or does not parse, an unknown context, no configuration.
    An apiserver that does not answer is not a user error: `connect` retries it."""
    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException, load_incluster_config, load_kube_config

    if in_cluster(kubeconfig, context):
        try:
            load_incluster_config(client_configuration=Configuration())
        except ConfigException as exc:
            raise UserError(f"in-cluster configuration cannot be used: {exc}; run in a pod with a "
                            f"service account token, or pass {flag}") from None
        return
    where = describe(kubeconfig, flag)
    for path in _paths(kubeconfig):
        if not os.path.exists(path):
            raise UserError(f"{where}: no such file; pass the path of a kubeconfig file "
                            f"(or run `promop demo` to try promop without a cluster)")
        if os.path.isdir(path):
            raise UserError(f"{where}: is a directory; pass the path of a kubeconfig file")
        _check_yaml(path, where)
    try:
        load_kube_config(config_file=kubeconfig, context=context, client_configuration=Configuration(),
                         persist_config=False)
    except ConfigException as exc:
        if context and "context" in str(exc).lower():
            raise UserError(f"--context {context}: not in {where} ({exc}); "
                            "`kubectl config get-contexts` lists the contexts") from None
        raise UserError(f"{where}: not a usable kubeconfig ({exc}); pass a kubeconfig with clusters, "
                        "users and contexts, such as the one your cluster's installer wrote") from None
    except Exception as exc:  # noqa: BLE001 - YAML syntax errors, wrong types: the file is broken
        raise UserError(f"{where}: cannot be read as a kubeconfig ({type(exc).__name__}: {exc}); "
                        "check the file's YAML, or pass another with --kubeconfig") from None


def _check_yaml(path: str, where: str) -> None:
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except OSError as exc:
        raise UserError(f"{where}: cannot be read ({exc.strerror}); check its permissions") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"{where}: is not valid YAML ({_one_line(exc)}); "
                        "fix the file or pass another kubeconfig") from None
    if not isinstance(doc, dict):
        raise UserError(f"{where}: is not a kubeconfig (expected a YAML mapping with clusters, users and "
                        "contexts); pass the kubeconfig your cluster's installer wrote")


def _one_line(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"line {mark.line + 1} column {mark.column + 1}: {problem}"
    return " ".join(str(exc).split())


def load_client(kubeconfig: str | None, context: str | None = None, *, flag: str = "--kubeconfig",
                **client_kwargs: Any) -> Any:
    """A KubeClient for the configuration, after `check_kubeconfig` (UserError on a kubeconfig mistake).

    No request is made: an unreachable apiserver shows up at the first call."""
    from promop.kube.client import KubeClient

    check_kubeconfig(kubeconfig, context, flag)
    return KubeClient.from_config(kubeconfig, context, **client_kwargs)
