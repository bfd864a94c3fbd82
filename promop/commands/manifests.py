"""`promop manifests`: print (or write) the in-cluster install bundle for a namespace and image."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    from promop.render.model import DEFAULT_RELOADER_IMAGE

    p = sub.add_parser(
        "manifests",
        help="render the in-cluster install bundle (kubectl apply -f crds/ -f -)",
        description="Render the install bundle: Namespace, ServiceAccount, least-privilege ClusterRole and "
                    "binding, Deployment, Service, the operator's ServiceMonitor and an example Prometheus.",
    )
    p.add_argument("--namespace", default="promop", help="namespace to install into (default promop)")
    p.add_argument("--image", default=DEFAULT_RELOADER_IMAGE, help=f"the promop image, holding the operator and the reloader (default {DEFAULT_RELOADER_IMAGE}, "
                        "which is not published: build and push your own, see the README)")
    p.add_argument("--reloader-image", default="", metavar="IMAGE",
                   help="the config reloader's image in Prometheus, Alertmanager and ThanosRuler pods (the "
                        "operator's --config-reloader-image; default --image, which holds the reloader too). The "
                        "reloader's own image is ~5x smaller: see docs/reloader.md, \"Image\"")
    p.add_argument("--output-dir", type=Path, help="write one file per object kind here instead of stdout")
    p.add_argument("--component", default="operator",
                   help="which component's bundle: operator (default), or another promop component "
                        "(the subfolders of promop/templates); manifests/<component>/ holds each default rendering")
    p.add_argument("--manage-crds", action="store_true",
                   help="run the operator with --manage-crds (and grant it the CRD permissions that needs)")
    p.add_argument("--kubelet-service", default="", metavar="NAMESPACE/NAME",
                   help="run the kubelet endpoints sync for this Service (and grant what it needs)")
    p.add_argument("--repair-policy-for-statefulsets", default="none", choices=("none", "delete", "evict"),
                   help="run the operator with this repair policy (and grant the pod permissions it needs: "
                        "list and delete, or list and the eviction subresource)")
    p.add_argument("--ca-bundle", type=Path, metavar="FILE",
                   help="admission-webhook: PEM file of the CA that signed the webhook's serving certificate, "
                        "put into the webhook configurations and the CRD conversion (default: left to "
                        "cert-manager's cainjector; see docs/admission.md)")
    p.set_defaults(func=run)


def _ca_bundle(path: Path | None) -> str:
    """The base64 of a PEM CA file, as clientConfig.caBundle wants it ("" without --ca-bundle)."""
    import base64

    from promop.errors import UserError

    if path is None:
        return ""
    try:
        pem = path.read_bytes()
    except OSError as exc:
        raise UserError(f"--ca-bundle {path}: cannot read it ({exc.strerror}); pass the CA's PEM file") from None
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise UserError(f"--ca-bundle {path}: no PEM certificate in it; pass the CA certificate (ca.crt), "
                        "not its key or a base64 string")
    return base64.b64encode(pem).decode()


def run(args: argparse.Namespace) -> int:
    import re

    from promop.errors import UserError
    from promop.operator.bundle import as_stream, components, render_bundle

    if args.component not in components():
        raise UserError(f"--component {args.component}: unknown; choose one of: {', '.join(components())}")
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", args.namespace) or len(args.namespace) > 63:
        raise UserError(f"--namespace {args.namespace!r}: not a valid namespace name (lower-case letters, digits "
                        "and '-', at most 63, starting and ending with a letter or digit); pass e.g. --namespace promop")
    if not args.image.strip() or any(c.isspace() for c in args.image):
        raise UserError(f"--image {args.image!r}: not an image reference; pass e.g. "
                        "--image registry.example.com/promop:0.1.0 (build and push it first: see the README)")
    if any(c.isspace() for c in args.reloader_image):
        raise UserError(f"--reloader-image {args.reloader_image!r}: not an image reference; pass e.g. "
                        "--reloader-image registry.example.com/promop-config-reloader:0.1.0")
    files = render_bundle(args.namespace, args.image, args.component, manage_crds=args.manage_crds,
                          reloader_image=args.reloader_image.strip(),
                          kubelet_service=args.kubelet_service, ca_bundle=_ca_bundle(args.ca_bundle),
                          repair_policy=args.repair_policy_for_statefulsets)
    if args.output_dir is None:
        sys.stdout.write(as_stream(files))
        return 0
    if args.output_dir.exists() and not args.output_dir.is_dir():
        raise UserError(f"--output-dir {args.output_dir}: is a file; pass a directory (it is created if missing)")
    try:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        for f in files:
            (args.output_dir / f.name).write_text(f.text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"--output-dir {args.output_dir}: cannot write ({exc.strerror}); pass a writable directory") \
            from None
    print(f"wrote {len(files)} files to {args.output_dir}", file=sys.stderr)
    return 0
