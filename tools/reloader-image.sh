#!/usr/bin/env bash
# Build the config reloader's own image (python3 from Debian + reloader/ + gotime/ and their four
# runtime dependencies; no kubernetes, no operator) with the real-cluster kit, no registry or daemon.
#
#   tools/reloader-image.sh [NAME:TAG] [-- extra image-from-debian.sh options]
#   (default NAME:TAG ghcr.io/promop/promop-config-reloader:0.1.0; KIT=path of ../shared/kube)
#
# Also compiles the byte code of Debian's Python standard library into the image: the packages
# are unpacked without their maintainer scripts, so without this every start of the (read-only,
# non-root) container compiles each module it imports, about three times the CPU of the start-up
# itself. The tarball path is the last stdout line (image-from-debian.sh's).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIT="${KIT:-$HERE/../shared/kube}"
[ -d "$KIT" ] || KIT=/work/shared/kube
TAG="${1:-ghcr.io/promop/promop-config-reloader:0.1.0}"
shift || true
[ "${1:-}" = "--" ] && shift
SRC="$(mktemp -d /tmp/promop-reloader-src.XXXXXX)"
trap 'rm -rf "$SRC"' EXIT
cp "$HERE/packaging/reloader/pyproject.toml" "$SRC/"
cp -r "$HERE/reloader" "$HERE/gotime" "$SRC/"
find "$SRC" -name __pycache__ -prune -exec rm -rf {} +
bash "$KIT/image-from-debian.sh" --pip "$SRC" --busybox \
    --env PYTHONUNBUFFERED=1 --env PYTHONDONTWRITEBYTECODE=1 --env LANG=C.UTF-8 \
    --user 65534:65534 --expose 8080 --entrypoint /usr/local/bin/promop-config-reloader \
    --hook '/usr/bin/python3 -m compileall -q -j0 -s "$ROOTFS" -p / "$ROOTFS/usr/lib/python3.11" >/dev/null;
            ln -s /usr/local/bin/promop-config-reloader "$ROOTFS/usr/bin/prometheus-config-reloader"' \
    "$@" "$TAG" python3
