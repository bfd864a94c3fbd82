"""The real Kubernetes kit (../shared/kube) as Python objects, for the real-cluster test tiers.

Why a module of its own (and not fixtures only): the real-node tier (tests/e2e_real), the
apiserver tier (tests/real_api) and ad-hoc scripts all start control planes, take the one node,
build the image from the working tree and talk to pods the same way. It imports no pytest.

Rules it keeps for a shared machine (see the kit's README):
- every control plane has its own KUBE_RUN_DIR (several may run at once);
- only one node runs per machine: `Node` holds an exclusive flock on /tmp/promop-node.lock from
  before start-node.sh until after stop-node.sh, and always stops what it started;
- images are tagged by a hash of the sources they are built from, so a rebuild happens only when
  the code changed and two worktrees never share a tag by accident.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

REPO = Path(__file__).resolve().parent.parent
NODE_LOCK = Path("/tmp/promop-node.lock")
NODE_OWNER = Path("/run/kube-node.owner")

# The images image-prometheus.sh makes (Debian trixie's Prometheus 2.53.3, Alertmanager 0.28.1).
PROMETHEUS_VERSION = "v2.53.3"
ALERTMANAGER_VERSION = "v0.28.1"
PROMETHEUS_IMAGE = f"quay.io/prometheus/prometheus:{PROMETHEUS_VERSION}"
ALERTMANAGER_IMAGE = f"quay.io/prometheus/alertmanager:{ALERTMANAGER_VERSION}"

# What the project image is built from: the Dockerfile's COPY lines.
IMAGE_SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md",
                 "promop", "reloader", "gotime", "crds", "examples")
# image-from-debian.sh's arguments for the project image, as the kit's README gives them (the
# Dockerfile's image: promop + promop-config-reloader, also at /usr/bin/prometheus-config-reloader).
IMAGE_ARGS = (
    "--busybox", "--env", "PYTHONUNBUFFERED=1", "--env", "PYTHONDONTWRITEBYTECODE=1",
    "--env", "LANG=C.UTF-8", "--user", "65534:65534", "--expose", "8080",
    "--cmd", "promop", "--cmd", "run",
    # Debian's packages are unpacked without their maintainer scripts, so the standard library has
    # no byte code: compile it, or every start of the read-only container compiles what it imports
    # (the reloader's start-up CPU, docs/reloader.md "Resources").
    "--hook", '/usr/bin/python3 -m compileall -q -j0 -s "$ROOTFS" -p / "$ROOTFS/usr/lib/python3.11" >/dev/null; '
              'ln -s /usr/local/bin/promop-config-reloader "$ROOTFS/usr/bin/prometheus-config-reloader"',
)
# The reloader's own image (tools/reloader-image.sh: reloader/ + gotime/ and four dependencies).
RELOADER_IMAGE_REPOSITORY = "promop.local/promop-config-reloader"
RELOADER_IMAGE_SOURCES = ("reloader", "gotime", "packaging/reloader", "tools/reloader-image.sh")
IMAGE_REPOSITORY = "promop.local/promop"
# Project image tarballs live here, not in $KUBE_KIT_HOME/images: start-node.sh imports everything
# in that folder that containerd lacks, and every helper's every build would land in every node.
KEEP_IMAGE_TARBALLS = 4

T = TypeVar("T")


class KitError(RuntimeError):
    """The kit could not do what was asked (a script failed, a wait ran out)."""


def log(message: str) -> None:
    """One line on stderr, shown by pytest on failure (and live with -s)."""
    print(f"realkube: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------- paths


def kit_dir() -> Path | None:
    """The kit: $PROMOP_KUBE_KIT, else ../shared/kube beside the repository; None if absent."""
    env = os.environ.get("PROMOP_KUBE_KIT")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "kube")
    # A git worktree under /work/wt/<name> has the shared folder two levels up.
    candidates.append(REPO.parent.parent / "shared" / "kube")
    for path in candidates:
        if (path / "start.sh").is_file():
            return path.resolve()
    return None


def require_kit() -> Path:
    kit = kit_dir()
    if kit is None:
        raise KitError("the kube kit is not there: set PROMOP_KUBE_KIT or check out ../shared/kube")
    return kit


def kit_home() -> Path:
    return Path(os.environ.get("KUBE_KIT_HOME") or Path.home() / ".cache" / "promop-kube")


def kit_bin() -> Path:
    return Path(os.environ.get("KUBE_BIN") or kit_home() / "bin")


def kubectl_path() -> str:
    return str(kit_bin() / "kubectl")


def kit_env(**extra: str) -> dict[str, str]:
    """The environment for the kit's scripts: KUBE_KIT_HOME set, the kit's bin first on PATH."""
    env = dict(os.environ)
    env.setdefault("KUBE_KIT_HOME", str(kit_home()))
    env["PATH"] = f"{kit_bin()}:{env.get('PATH', '')}"
    env.update(extra)
    return env


def run_script(name: str, *args: str, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """Run one of the kit's scripts; a failure raises KitError with its stderr's tail."""
    script = require_kit() / name
    started = time.monotonic()
    try:
        proc = subprocess.run(["bash", str(script), *args], env=env or kit_env(),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise KitError(f"{name} {' '.join(args)} did not finish in {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-25:])
        raise KitError(f"{name} {' '.join(args)} failed (exit {proc.returncode}):\n{tail}")
    log(f"{name} {' '.join(args)}: {time.monotonic() - started:.1f} s")
    return proc


_installed = threading.Lock()
_install_done = False


def install() -> None:
    """install.sh, once per process (it is idempotent; 1.5 s when there is nothing to do)."""
    global _install_done
    with _installed:
        if not _install_done:
            run_script("install.sh", timeout=600)
            _install_done = True


# ------------------------------------------------------------------------------- waiting


def wait_for(check: Callable[[], T], timeout: float, what: str, interval: float = 0.25) -> T:
    """Poll `check` until it returns something truthy; KitError naming `what` after `timeout`.

    Exceptions from `check` count as "not yet" (a pod not scheduled, a port not open); the last
    one is in the error message.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except Exception as exc:  # noqa: BLE001 - "not yet", reported if it never comes
            last = exc
        if time.monotonic() >= deadline:
            raise KitError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


# ------------------------------------------------------------------------------- control plane


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager on loopback, in a run dir of its own.

    `in_cluster=True` makes the apiserver reachable from pods through the `kubernetes` Service
    (what an operator pod and Prometheus' Kubernetes SD need).
    """

    def __init__(self, in_cluster: bool = False, kcm_args: str = "", apiserver_args: str = "",
                 with_kcm: bool = True) -> None:
        self.in_cluster = in_cluster
        self.kcm_args = kcm_args
        self.apiserver_args = apiserver_args
        self.with_kcm = with_kcm
        self.run_dir: Path | None = None
        self.kubeconfig: str = ""
        self._started = False

    def env(self) -> dict[str, str]:
        assert self.run_dir is not None
        extra = {"KUBE_RUN_DIR": str(self.run_dir), "IN_CLUSTER": "1" if self.in_cluster else "0",
                 "WITH_KCM": "1" if self.with_kcm else "0"}
        if self.kcm_args:
            extra["KCM_EXTRA_ARGS"] = self.kcm_args
        if self.apiserver_args:
            extra["APISERVER_EXTRA_ARGS"] = self.apiserver_args
        env = kit_env(**extra)
        if self.kubeconfig:
            env["KUBECONFIG"] = self.kubeconfig
        return env

    def start(self) -> "ControlPlane":
        install()
        for attempt in range(1, 4):
            self.run_dir = Path(tempfile.mkdtemp(prefix="promop-real-"))
            self._started = True
            try:
                proc = run_script("start.sh", env=self.env(), timeout=240)
                break
            except KitError as exc:
                self.stop()
                # start.sh picks free ports, then binds them: on a machine where other control
                # planes start at the same moment, one may take a port in between. A fresh run
                # dir picks new ports; any other failure is final.
                if "address already in use" not in str(exc) or attempt == 3:
                    raise
                log(f"start.sh lost a port race (attempt {attempt}); retrying with new ports")
            except BaseException:
                self.stop()
                raise
        self.kubeconfig = proc.stdout.strip().splitlines()[-1]
        if not Path(self.kubeconfig).is_file():
            self.stop()
            raise KitError(f"start.sh printed {self.kubeconfig!r}, not a kubeconfig path")
        return self

    def stop(self) -> None:
        """stop.sh (it also stops a node this run dir still runs), then remove the run dir."""
        if not self._started or self.run_dir is None:
            return
        self._started = False
        try:
            run_script("stop.sh", env=self.env(), timeout=120)
        except KitError as exc:
            log(f"stop.sh: {exc}")
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> "ControlPlane":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess:
        """kubectl with this control plane's kubeconfig; check=True raises KitError on failure."""
        cmd = [kubectl_path(), "--kubeconfig", self.kubeconfig, *args]
        try:
            proc = subprocess.run(cmd, input=input, capture_output=True, text=True,
                                  timeout=timeout, env=self.env())
        except subprocess.TimeoutExpired as exc:
            raise KitError(f"kubectl {' '.join(args)} did not finish in {timeout:.0f} s") from exc
        if check and proc.returncode != 0:
            raise KitError(f"kubectl {' '.join(args)} failed (exit {proc.returncode}): "
                           f"{proc.stderr.strip()}")
        return proc

    def apply(self, text_or_path: str | Path, *extra: str) -> subprocess.CompletedProcess:
        """`kubectl apply -f` a path, or YAML/JSON text given as a str (on stdin)."""
        if isinstance(text_or_path, Path) or (
                "\n" not in text_or_path and Path(text_or_path).exists()):
            return self.kubectl("apply", "-f", str(text_or_path), *extra, timeout=120)
        return self.kubectl("apply", "-f", "-", *extra, input=text_or_path, timeout=120)

    def get_json(self, *args: str, check: bool = True) -> Any:
        """`kubectl get ... -o json`, decoded; None when check=False and it failed (NotFound)."""
        proc = self.kubectl("get", *args, "-o", "json", check=check)
        if proc.returncode != 0:
            return None
        return json.loads(proc.stdout)

    def token_kubeconfig(self, namespace: str, service_account: str, path: Path) -> str:
        """A kubeconfig with the ServiceAccount's token (`kubectl create token`) and the admin's
        server and CA: a process run under it has exactly its bundle's RBAC."""
        import yaml  # noqa: PLC0415 - only this helper needs it

        token = self.kubectl("create", "token", service_account, "-n", namespace,
                             "--duration=1h").stdout.strip()
        cfg = yaml.safe_load(Path(self.kubeconfig).read_text())
        cfg["users"] = [{"name": "sa", "user": {"token": token}}]
        for ctx in cfg["contexts"]:
            ctx["context"]["user"] = "sa"
        path.write_text(yaml.safe_dump(cfg))
        return str(path)

    def logs(self, path: str = "kube-apiserver") -> Path:
        assert self.run_dir is not None
        return self.run_dir / "logs" / f"{path}.log"


# ------------------------------------------------------------------------------- node


class Node:
    """The machine's one node (containerd, kubelet, scheduler, kube-proxy) for `cp`.

    Holds the exclusive flock on /tmp/promop-node.lock for its whole life: waits for it (saying
    whose node runs meanwhile), starts the node, and on stop always runs stop-node.sh before
    letting the lock go.
    """

    def __init__(self, cp: ControlPlane, lock_timeout: float = 1800) -> None:
        self.cp = cp
        self.lock_timeout = lock_timeout
        self._lock_fd: int | None = None
        self._started = False

    def _take_lock(self) -> None:
        """A blocking flock (so this process queues like `flock` in a shell does), taken in a
        thread so the wait is bounded and says every minute whose node runs meanwhile."""
        fd = os.open(NODE_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
        taken, given_up, guard = threading.Event(), threading.Event(), threading.Lock()

        def take() -> None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with guard:
                if given_up.is_set():     # the waiter left (timeout, Ctrl-C): let the lock go
                    os.close(fd)
                else:
                    taken.set()
        threading.Thread(target=take, daemon=True, name="node-lock").start()
        deadline = time.monotonic() + self.lock_timeout
        try:
            while not taken.wait(timeout=max(0.1, min(60.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    raise KitError(f"the node lock {NODE_LOCK} stayed taken for "
                                   f"{self.lock_timeout:.0f} s (node of {_node_owner()})")
                log(f"waiting for the node lock {NODE_LOCK}: another node runs "
                    f"(run dir {_node_owner()})")
        except BaseException:
            with guard:
                if taken.is_set():
                    os.close(fd)
                else:
                    given_up.set()
            raise
        self._lock_fd = fd

    def start(self) -> "Node":
        self._take_lock()
        self._started = True
        try:
            run_script("start-node.sh", env=self.cp.env(), timeout=300)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            if self._started:
                self._started = False
                try:
                    run_script("stop-node.sh", env=self.cp.env(), timeout=180)
                except KitError as exc:
                    log(f"stop-node.sh: {exc}")
        finally:
            if self._lock_fd is not None:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> "Node":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def name(self) -> str:
        nodes = self.cp.get_json("nodes")["items"]
        return nodes[0]["metadata"]["name"]


def _node_owner() -> str:
    try:
        return NODE_OWNER.read_text().strip() or "?"
    except OSError:
        return "?"


# ------------------------------------------------------------------------------- images


def source_hash(repo: Path = REPO, sources: tuple[str, ...] = IMAGE_SOURCES) -> str:
    """SHA-256 of the files the image is built from (paths and contents) and of the build flags."""
    digest = hashlib.sha256(json.dumps(IMAGE_ARGS).encode())
    for rel in _image_files(repo, sources):
        digest.update(rel.encode() + b"\0")
        digest.update((repo / rel).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _image_files(repo: Path, sources: tuple[str, ...] = IMAGE_SOURCES) -> list[str]:
    files: list[str] = []
    for top in sources:
        path = repo / top
        if path.is_file():
            files.append(top)
        elif path.is_dir():
            for sub in path.rglob("*"):
                if sub.is_file() and "__pycache__" not in sub.parts and sub.suffix != ".pyc" \
                        and not any(p.endswith(".egg-info") for p in sub.parts):
                    files.append(str(sub.relative_to(repo)))
    return sorted(files)


def image_dir() -> Path:
    path = kit_home() / "promop-images"
    path.mkdir(parents=True, exist_ok=True)
    return path


_build_lock = threading.Lock()


def build_promop_image(repo: Path = REPO, import_now: bool = True) -> str:
    """The project image built from the working tree, tagged `promop.local/promop:dev-<hash>`.

    Built (image-from-debian.sh --pip, as the kit's README says) only when no tarball of that
    hash exists; the sources are copied to a temporary folder first, so the build leaves nothing
    in the worktree and builds exactly what was hashed. Imported into containerd when a node
    runs and containerd lacks it (`import_now`); returns the image reference.
    """
    pinned = os.environ.get("PROMOP_REAL_IMAGE")  # a developer's shortcut: an image built before
    tag = pinned.rsplit(":", 1)[1] if pinned else f"dev-{source_hash(repo)[:16]}"
    ref = f"{IMAGE_REPOSITORY}:{tag}"
    if pinned:
        log(f"image {ref}: PROMOP_REAL_IMAGE pins it; NOT the working tree's code")
    tarball = image_dir() / f"promop-{tag}.tar"
    with _build_lock:
        if not tarball.is_file():
            if pinned:
                raise KitError(f"PROMOP_REAL_IMAGE={pinned}: no tarball {tarball}")
            _build(repo, ref, tarball)
        else:
            log(f"image {ref}: {tarball} is there")
        os.utime(tarball)
        _prune_tarballs()
    if import_now and containerd_running():
        import_image(tarball, ref)
    return ref


def _build(repo: Path, ref: str, tarball: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="promop-image-src-") as src:
        for rel in _image_files(repo):
            dest = Path(src) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, dest)
        partial = tarball.with_suffix(".partial")
        run_script("image-from-debian.sh", "--pip", src, *IMAGE_ARGS, "--no-import",
                   "-o", str(partial), ref, "python3", timeout=900)
        partial.rename(tarball)
    log(f"image {ref}: built, {tarball.stat().st_size / 1e6:.0f} MB")


def _prune_tarballs() -> None:
    for pattern in ("promop-dev-*.tar", "promop-reloader-dev-*.tar"):
        tars = sorted(image_dir().glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in tars[KEEP_IMAGE_TARBALLS:]:
            old.unlink(missing_ok=True)


def reloader_image(promop_image: str) -> str:
    """The config-reloader sidecar image: the one place to choose it.

    The reloader's own image (build_reloader_image), as docs/reloader.md recommends: it is what
    every Prometheus and Alertmanager pod pulls. $PROMOP_REAL_RELOADER_IMAGE names another (the
    promop image holds `promop-config-reloader` too).
    """
    return os.environ.get("PROMOP_REAL_RELOADER_IMAGE") or build_reloader_image()


def build_reloader_image(repo: Path = REPO) -> str:
    """tools/reloader-image.sh's image of the working tree, tagged by a hash of its sources."""
    tag = f"reloader-dev-{source_hash(repo, RELOADER_IMAGE_SOURCES)[:16]}"
    ref = f"{RELOADER_IMAGE_REPOSITORY}:{tag}"
    tarball = image_dir() / f"promop-{tag}.tar"
    with _build_lock:
        if not tarball.is_file():
            partial = tarball.with_suffix(".partial")
            env = {**os.environ, "KIT": str(kit_dir() or "")}
            subprocess.run(["bash", str(repo / "tools" / "reloader-image.sh"), ref, "--", "--no-import",
                            "-o", str(partial)], check=True, env=env, timeout=900,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            partial.rename(tarball)
            log(f"image {ref}: built, {tarball.stat().st_size / 1e6:.0f} MB")
        os.utime(tarball)
    return ref


def prometheus_images() -> dict[str, str]:
    """image-prometheus.sh prometheus alertmanager (built once, kept); their references."""
    run_script("image-prometheus.sh", "prometheus", "alertmanager", timeout=600)
    return {"prometheus": PROMETHEUS_IMAGE, "alertmanager": ALERTMANAGER_IMAGE}


def containerd_running() -> bool:
    if not Path("/run/containerd/containerd.sock").exists():
        return False
    proc = subprocess.run(["ctr", "--timeout", "3s", "-n", "k8s.io", "version"],
                          capture_output=True, text=True)
    return proc.returncode == 0


def containerd_images() -> set[str]:
    proc = subprocess.run(["ctr", "-n", "k8s.io", "images", "ls", "-q"], capture_output=True,
                          text=True, timeout=60)
    return set(proc.stdout.split()) if proc.returncode == 0 else set()


def import_image(tarball: Path, ref: str) -> None:
    """`ctr -n k8s.io images import` unless containerd has `ref` already."""
    if ref in containerd_images():
        return
    started = time.monotonic()
    proc = subprocess.run(["ctr", "-n", "k8s.io", "images", "import", str(tarball)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise KitError(f"ctr images import {tarball} failed: {proc.stderr.strip()}")
    log(f"imported {ref} in {time.monotonic() - started:.1f} s")


def image_size_bytes(ref: str) -> int | None:
    """Uncompressed size of an image's tarball (the kit's images are one uncompressed layer)."""
    tag = ref.rsplit(":", 1)[-1]
    tarball = image_dir() / f"promop-{tag}.tar"
    return tarball.stat().st_size if tarball.is_file() else None


# ------------------------------------------------------------------------------- a cluster


class RealCluster:
    """A control plane with the node, the promop image and the Prometheus/Alertmanager images."""

    def __init__(self, cp: ControlPlane, node: Node, image: str, images: dict[str, str],
                 reloader: str | None = None) -> None:
        self.cp = cp
        self.node = node
        self.image = image
        self.reloader_image = reloader or image
        self.prometheus_image = images["prometheus"]
        self.alertmanager_image = images["alertmanager"]
        self.prometheus_version = PROMETHEUS_VERSION
        self.alertmanager_version = ALERTMANAGER_VERSION

    def kubectl(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
        return self.cp.kubectl(*args, **kwargs)

    def apply(self, text_or_path: str | Path, *extra: str) -> subprocess.CompletedProcess:
        return self.cp.apply(text_or_path, *extra)

    def get_json(self, *args: str, check: bool = True) -> Any:
        return self.cp.get_json(*args, check=check)

    @property
    def kubeconfig(self) -> str:
        return self.cp.kubeconfig


@contextlib.contextmanager
def real_cluster(kcm_args: str = "--horizontal-pod-autoscaler-sync-period=5s",
                 apiserver_args: str = "", repo: Path = REPO) -> Iterator[RealCluster]:
    """Everything the real-node tier needs, torn down in the right order whatever happens.

    The images are built before the node lock is taken (the build needs no node), then imported.
    """
    with ControlPlane(in_cluster=True, kcm_args=kcm_args, apiserver_args=apiserver_args) as cp:
        images = prometheus_images()
        image = build_promop_image(repo, import_now=False)
        reloader = reloader_image(image)
        with Node(cp) as node:
            for ref in dict.fromkeys((image, reloader)):
                tarball = image_dir() / f"promop-{ref.rsplit(':', 1)[1]}.tar"
                if tarball.is_file():  # a $PROMOP_REAL_RELOADER_IMAGE may be imported already
                    import_image(tarball, ref)
            for ref in (*images.values(), reloader):
                if ref not in containerd_images():
                    raise KitError(f"containerd lacks {ref} after start-node.sh")
            yield RealCluster(cp, node, image, images, reloader)


# ------------------------------------------------------------------------------- namespaces, pods


def create_namespace(cp: ControlPlane, prefix: str) -> str:
    """A fresh namespace `<prefix>-<random>`; the caller deletes it (delete_namespace)."""
    name = f"{prefix}-{os.urandom(3).hex()}"[:63]
    cp.kubectl("create", "namespace", name)
    # The ServiceAccount admission needs the namespace's `default` ServiceAccount for pods.
    wait_for(lambda: cp.kubectl("get", "serviceaccount", "default", "-n", name,
                                check=False).returncode == 0, 60, f"ServiceAccount {name}/default")
    return name


def delete_namespace(cp: ControlPlane, name: str, wait: bool = False) -> None:
    """Delete a namespace (and so everything in it); `wait` blocks until it is gone."""
    cp.kubectl("delete", "namespace", name, "--ignore-not-found", f"--wait={str(wait).lower()}",
               check=False, timeout=180)


def pod_ready_seconds(pod: dict) -> float | None:
    """Seconds from a pod's creationTimestamp to its Ready condition turning True, or None."""
    created = parse_time(pod["metadata"]["creationTimestamp"])
    for cond in pod.get("status", {}).get("conditions", []):
        if cond["type"] == "Ready" and cond["status"] == "True":
            return parse_time(cond["lastTransitionTime"]) - created
    return None


def pod_is_ready(pod: dict) -> bool:
    return pod.get("status", {}).get("phase") == "Running" and pod_ready_seconds(pod) is not None


def parse_time(text: str) -> float:
    """A Kubernetes timestamp (RFC 3339, seconds) as a Unix time."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def http_json(url: str, timeout: float = 5) -> Any:
    """GET a URL (a pod IP on the kn0 bridge is reachable from the host) and decode its JSON."""
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - test-only, local
        return json.loads(resp.read())


def http_text(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - test-only, local
        return resp.read().decode()


def http_status(url: str, timeout: float = 5) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
