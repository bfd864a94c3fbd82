"""`promop render`: render Prometheus objects from YAML files, offline (no cluster).

Writes the Kubernetes objects the operator would create to stdout, or a
directory tree with the decoded config and rule files with --out. Rejected
objects and warnings go to stderr, one line each.
"""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_REJECTED, EXIT_INPUT = 0, 1, 2


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "render", help="render Prometheus objects from YAML files (offline)",
        description="Read Prometheus, ServiceMonitor, PodMonitor, PrometheusRule, Secret, ConfigMap and "
                    "Namespace objects from YAML files or directories (recursive, multi-document) and "
                    "print what the operator would create for every Prometheus found.")
    add_file_argument(parser)
    parser.add_argument("--out", metavar="DIR",
                        help="write DIR/<namespace>/<prometheus>/{prometheus.yaml,rules/,manifests.yaml} "
                             "instead of printing the objects")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any object was rejected")
    parser.set_defaults(func=run)


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", dest="files", action="append", required=True, metavar="PATH",
                        help="a YAML file or a directory (read recursively); repeatable")


def load_or_exit(files: list[str]):
    """The loaded objects, or None after printing the error (exit 2)."""
    from promop.render.loader import LoadError, load

    try:
        loaded = load(files)
    except LoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    if loaded.skipped:
        shown = "; ".join(loaded.skipped[:3]) + ("; ..." if len(loaded.skipped) > 3 else "")
        print(f"note: ignored {len(loaded.skipped)} document(s) that are not inputs: {shown}", file=sys.stderr)
    return loaded


def report(rendered) -> None:
    for problem in rendered.rejected:
        print(f"rejected {problem}", file=sys.stderr)
    for problem in rendered.warnings:
        print(f"warning {problem}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from promop.render.offline import dump_all, merge_services, render_loaded

    loaded = load_or_exit(args.files)
    if loaded is None:
        return EXIT_INPUT
    from promop.render.alertmanager import offline as am_offline  # Alertmanager objects (hook)

    if not loaded.of("Prometheus") and not loaded.of("Alertmanager"):
        print("error: no Prometheus object found in the given files (nor an Alertmanager); nothing to render", file=sys.stderr)
        return EXIT_INPUT
    rendered = render_loaded(loaded)
    am_rendered = am_offline.render_loaded(loaded)
    if args.out:
        write_tree(args.out, rendered)
        am_offline.write_tree(args.out, am_rendered, dump_all)
    else:
        objects = [obj for _, result in rendered.results for obj in result.objects()]
        sys.stdout.write(dump_all(merge_services(objects + am_offline.objects(am_rendered))))
    report(rendered)
    am_offline.report(am_rendered)
    bad = rendered.rejected or am_rendered.rejected or am_rendered.errors
    return EXIT_REJECTED if args.strict and bad else EXIT_OK


def write_tree(out: str, rendered) -> None:
    """DIR/<ns>/<prom>/prometheus.yaml, rules/<configmap>/<file>, manifests.yaml."""
    from pathlib import Path

    from promop.render.offline import dump_all

    for prometheus, result in rendered.results:
        md = prometheus["metadata"]
        base = Path(out) / md["namespace"] / md["name"]
        base.mkdir(parents=True, exist_ok=True)
        (base / "prometheus.yaml").write_text(decoded_config(result))
        for cm in result.rule_configmaps:
            rules_dir = base / "rules" / cm["metadata"]["name"]
            rules_dir.mkdir(parents=True, exist_ok=True)
            for key, content in (cm.get("data") or {}).items():
                (rules_dir / key).write_text(content)
        (base / "manifests.yaml").write_text(dump_all(result.objects()))
        print(f"rendered Prometheus {md['namespace']}/{md['name']} -> {base}", file=sys.stderr)


def decoded_config(result) -> str:
    """The config file exactly as Prometheus gets it (gunzipped from the Secret), `$(VAR)` left as is."""
    import base64
    import gzip

    from promop.render.offline import dump_all

    if getattr(result, "config_text", ""):
        return result.config_text
    data = (result.config_secret or {}).get("data") or {}
    if data.get("prometheus.yaml.gz"):
        return gzip.decompress(base64.b64decode(data["prometheus.yaml.gz"])).decode()
    return dump_all([result.config])
