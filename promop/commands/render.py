"""`promop render`: render Prometheus objects from YAML files, offline (no cluster).

Writes the Kubernetes objects the operator would create to stdout, or a
directory tree with the decoded config and rule files with --out. Rejected
objects and warnings go to stderr, one line each; one bad object or document
never stops the others.

Exit codes: 0 rendered; 1 no Prometheus could be rendered (or, with --strict or
--lint, something was rejected); 2 an unreadable path, a YAML syntax error or a
bad --out.
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
    parser.add_argument("--lint", action="store_true",
                        help="check ServiceMonitors, PodMonitors and PrometheusRules (no Prometheus needed) "
                             "against every rule the renderer applies; print only the rejections and "
                             "warnings; exit 1 if any object is rejected")
    from promop.featuregates import add_feature_gates_flag

    add_feature_gates_flag(parser)
    parser.add_argument("--kubernetes-version", default="", metavar="vX.Y.Z",
                        help="the Kubernetes version the operator would learn from the apiserver "
                             "(some outputs depend on it); default: a current one")
    parser.set_defaults(func=run)


def render_options_from(args: argparse.Namespace):
    """RenderOptions from --feature-gates/--kubernetes-version; FeatureGateError or ValueError when bad."""
    import re

    from promop.featuregates import SHARD_RETENTION_POLICY, parse_feature_gates
    from promop.render.model import RenderOptions

    gates = parse_feature_gates(args.feature_gates)
    version = args.kubernetes_version
    if version and not re.fullmatch(r"v?\d+\.\d+(\.\d+)?([-+].*)?", version):
        raise ValueError(f"--kubernetes-version {version!r}: not a version; write it as v1.31.0")
    return RenderOptions(shard_retention_policy=gates.enabled(SHARD_RETENTION_POLICY), feature_gates=gates,
                         kubernetes_version=version)


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", dest="files", action="append", required=True, metavar="PATH",
                        help="a YAML file or a directory (read recursively); repeatable")


def load_or_exit(files: list[str], exclude: list[str] | None = None):
    """The loaded objects, or None after printing the error (exit 2). Bad documents are
    printed as `rejected <Kind> <file>#<n>: <reason>` and left out."""
    from promop.render.loader import LoadError, load

    try:
        loaded = load(files, exclude=exclude or ())
    except LoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    for line in loaded.rejected:
        print(f"rejected {line}", file=sys.stderr)
    if loaded.skipped:
        shown = "; ".join(loaded.skipped[:3]) + ("; ..." if len(loaded.skipped) > 3 else "")
        print(f"note: ignored {len(loaded.skipped)} document(s) that are not inputs: {shown}", file=sys.stderr)
    return loaded


def report(rendered) -> None:
    for problem in rendered.rejected:
        print(f"rejected {problem}", file=sys.stderr)
    for problem in rendered.warnings:
        print(f"warning {problem}", file=sys.stderr)


def _check_out(out: str) -> str | None:
    """Why --out cannot be used, or None."""
    from pathlib import Path

    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"--out {out}: is a file; --out takes a directory (it gets <namespace>/<prometheus>/ inside)"
    for parent in [path, *path.parents]:
        if parent.exists():
            if not parent.is_dir():
                return f"--out {out}: {parent} is a file, so the directory cannot be created"
            break
    return None


def run(args: argparse.Namespace) -> int:
    """The command, with Python's cyclic garbage collector paused.

    Why: reading, rendering and writing leave no reference cycles (tests/render/test_cli_gc.py
    checks it), so reference counting frees everything as it goes and the collector frees
    nothing; but it would re-scan the whole growing input and output, 20-30% of a
    3,000-job render (bench.render). Peak memory is the same either way (131 MB for that render).
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        if was_enabled:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    from promop.render.offline import dump_all, lint_loaded, merge_services, render_loaded

    if args.out and not args.lint:
        problem = _check_out(args.out)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return EXIT_INPUT
    try:
        options = render_options_from(args)
    except ValueError as exc:  # FeatureGateError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    # the output tree is never read back as input, even when it lies inside an input directory
    loaded = load_or_exit(args.files, exclude=[args.out] if args.out else None)
    if loaded is None:
        return EXIT_INPUT
    if args.lint:
        lintable = ("Prometheus", "ServiceMonitor", "PodMonitor", "PrometheusRule", "Alertmanager", "AlertmanagerConfig")
        if not any(loaded.of(kind) for kind in lintable) and not loaded.rejected:
            print(f"error: nothing to lint in {', '.join(map(str, args.files))}: no Prometheus, monitor, rule or "
                  "Alertmanager object (an empty file, or only other kinds)", file=sys.stderr)
            return EXIT_REJECTED
        rendered = lint_loaded(loaded, options)
        report(rendered)
        return EXIT_REJECTED if rendered.rejected or loaded.rejected else EXIT_OK
    from promop.render.alertmanager import offline as am_offline  # Alertmanager objects
    from promop.render.thanos import offline as tr_offline  # ThanosRuler objects

    if not any(loaded.of(kind) for kind in ("Prometheus", "Alertmanager", "ThanosRuler", "PrometheusAgent")):
        print("error: no Prometheus object found in the given files (nor an Alertmanager); nothing to render "
              "(to check monitors and rules alone, use promop render --lint)", file=sys.stderr)
        return EXIT_REJECTED
    rendered = render_loaded(loaded, options)
    am_rendered = am_offline.render_loaded(loaded)
    tr_rendered = tr_offline.render_loaded(loaded, options)
    if args.out:
        try:
            write_tree(args.out, rendered)
            am_offline.write_tree(args.out, am_rendered, dump_all)
            tr_offline.write_tree(args.out, tr_rendered, dump_all)
        except OSError as exc:
            print(f"error: --out {args.out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_INPUT
    else:
        objects = [obj for _, result in rendered.results for obj in result.objects()]
        sys.stdout.write(dump_all(merge_services(objects + am_offline.objects(am_rendered)
                                                 + tr_offline.objects(tr_rendered))))
    report(rendered)
    am_offline.report(am_rendered)
    tr_offline.report(tr_rendered)
    if loaded.of("Prometheus") and not any(p.get("kind") != "PrometheusAgent" for p, _ in rendered.results):
        print(f"error: none of the {len(loaded.of('Prometheus'))} Prometheus object(s) could be rendered; "
              "see the rejected lines above", file=sys.stderr)
        return EXIT_REJECTED
    bad = (rendered.rejected or loaded.rejected or am_rendered.rejected or am_rendered.errors
           or tr_rendered.rejected)
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
        print(f"rendered {prometheus.get('kind') or 'Prometheus'} {md['namespace']}/{md['name']} -> {base}", file=sys.stderr)


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
