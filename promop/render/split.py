"""Configs larger than a Secret: the scrape jobs split over several part Secrets.

A Secret holds at most 1 MiB. When the gzipped config would pass `--config-secret-max-bytes`
(default 900 KiB), the jobs go into part Secrets `prometheus-<name>-config-part-<i>` (key
`scrape-configs-<i>.yaml.gz`, a gzipped `scrape_configs:` file each) and the main config keeps
global, rule_files, alerting, remote_write... plus `scrape_config_files: [<dir>/*.yaml]`
(Prometheus 2.43 and later). The reloader gunzips the mounted parts into that directory.

Stable assignment, so that an edit rewrites one Secret and not all: a monitor's jobs stay
together, and a group goes to bucket `sha256(group) mod N`, N a power of two. Hashing needs
no state (the render stays pure and a restarted operator makes the same choice), where a
sticky first-fit would have to read back every part's job list. N only doubles when a part
outgrows the limit (each part then splits in two: the one time many parts are rewritten) and
halves only when every part of N/2 would fill at most half the limit (hysteresis: a config
hovering at a boundary does not flap). The current count of part Secrets is the only state,
and the operator reads it from its Secret cache (RenderInputs.config_parts).
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

from promop.render.config import compress, dump
from promop.render.meta import managed_metadata, prefixed_name
from promop.render.model import RenderOptions
from promop.render.versions import Version

DEFAULT_MAX_BYTES = 900 * 1024
MIN_VERSION = "2.43.0"  # scrape_config_files
MAX_PARTS = 256
PARTS_MOUNT = "/etc/prometheus/config-parts"  # the part Secrets, projected (the reloader reads them)
PARTS_OUT = "/etc/prometheus/config_out/scrape-configs"  # plain YAML the reloader writes (Prometheus reads)
PARTS_STAGED = "/etc/prometheus/config_out/scrape-configs-staged"  # fast reload: the parts read through the API
VOLUME = "config-parts"
RELOADER_CONTAINERS = ("config-reloader", "init-config-reloader")
REASON = "ConfigTooLarge"
_PART = re.compile(r"-config-part-(\d+)$")


class ConfigTooLarge(ValueError):
    """The config cannot be written: too large for one Secret and not splittable here."""

    reason = REASON


@dataclass(frozen=True)
class Group:
    """Jobs that move together: one monitor's jobs (key `<kind>/<ns>/<name>`), or one additional job."""

    key: str
    texts: tuple[str, ...]


@dataclass
class Split:
    """The main config text and, per part, its gzipped data and its job texts."""

    main_text: str
    parts: list[bytes]
    part_groups: list[list[str]]


def part_name(prometheus: Mapping[str, Any], index: int) -> str:
    return f"{prefixed_name(prometheus)}-config-part-{index}"


def part_key(index: int) -> str:
    return f"scrape-configs-{index}.yaml.gz"


def part_index(prometheus: Mapping[str, Any], secret_name: str) -> int | None:
    """The index of a part Secret of this Prometheus, None for any other name."""
    m = _PART.search(secret_name)
    if not m or secret_name[: m.start()] != prefixed_name(prometheus):
        return None
    return int(m.group(1))


def bucket(key: str, count: int) -> int:
    """A stable bucket (not Python's salted hash()): the same in every process and release."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % count


def _buckets(groups: Sequence[Group], count: int) -> tuple[list[list[str]], list[list[str]]]:
    """Per bucket: its job texts and its group keys, in the groups' order."""
    texts: list[list[str]] = [[] for _ in range(count)]
    keys: list[list[str]] = [[] for _ in range(count)]
    for g in groups:
        i = bucket(g.key, count)
        texts[i].extend(g.texts)
        keys[i].append(g.key)
    return texts, keys


def part_text(texts: Sequence[str]) -> str:
    return "scrape_configs:\n" + "".join(texts) if texts else "scrape_configs: []\n"


def _compressed(groups: Sequence[Group], count: int) -> tuple[list[bytes], list[list[str]]]:
    texts, keys = _buckets(groups, count)
    return [compress(part_text(t)) for t in texts], keys


def _start_count(previous: int) -> int:
    n = 2
    while n < previous and n < MAX_PARTS:
        n *= 2
    return n


def split_groups(groups: Sequence[Group], limit: int, previous: int) -> tuple[list[bytes], list[list[str]]]:
    """Parts (gzipped) under `limit` bytes each, starting from the `previous` part count."""
    count = _start_count(previous)
    while count > 2:
        smaller, _ = _compressed(groups, count // 2)
        if max(len(p) for p in smaller) > limit // 2:
            break
        count //= 2
    while True:
        parts, keys = _compressed(groups, count)
        over = [i for i, p in enumerate(parts) if len(p) > limit]
        if not over:
            return parts, keys
        alone = next((i for i in over if len(keys[i]) == 1), None)
        if alone is not None:
            raise ConfigTooLarge(
                f"the scrape jobs of {keys[alone][0]} alone compress to {len(parts[alone])} bytes, over the config "
                f"Secret limit of {limit} bytes (--config-secret-max-bytes): split that object, or raise the limit "
                "(at most 1 MiB)")
        if count >= MAX_PARTS:
            raise ConfigTooLarge(f"the config does not fit {MAX_PARTS} part Secrets of {limit} bytes: shard it "
                                 "(spec.shards)")
        count *= 2


def needed(full_size: int, options: RenderOptions) -> bool:
    return full_size > options.config_secret_max_bytes


def check_version(prometheus: Mapping[str, Any], full_size: int, limit: int) -> None:
    """Older Prometheus has no scrape_config_files: refuse, saying the size, the limit and what to do."""
    version = Version((prometheus.get("spec") or {}).get("version"))
    if not version.at_least(MIN_VERSION):
        raise ConfigTooLarge(
            f"the generated config compresses to {full_size} bytes, over the config Secret limit of {limit} bytes "
            f"(--config-secret-max-bytes); splitting it over several Secrets needs Prometheus {MIN_VERSION} or "
            f"later (scrape_config_files), this one is {version}: upgrade spec.version, or shard (spec.shards) "
            "or select fewer monitors")


def main_text(head: Mapping[str, Any], tail: Mapping[str, Any]) -> str:
    """The main config: everything but the jobs, which it loads from the parts' directory."""
    return (dump(dict(head)) if head else "") + dump({"scrape_config_files": [f"{PARTS_OUT}/*.yaml"]}) + (
        dump(dict(tail)) if tail else "")


def split_config(prometheus: Mapping[str, Any], head: Mapping[str, Any], groups: Sequence[Group],
                 tail: Mapping[str, Any], full_size: int, options: RenderOptions, previous: int) -> Split:
    limit = options.config_secret_max_bytes
    check_version(prometheus, full_size, limit)
    parts, keys = split_groups(groups, limit, previous)
    return Split(main_text(head, tail), parts, keys)


def part_secrets(prometheus: Mapping[str, Any], options: RenderOptions, parts: Sequence[bytes]) -> list[dict]:
    return [{
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": managed_metadata(prometheus, part_name(prometheus, i), options),
        "data": {part_key(i): base64.b64encode(gz).decode("ascii")},
    } for i, gz in enumerate(parts)]


def input_hash(base: str, secret_names: Sequence[str]) -> str:
    """The StatefulSet's input-hash annotation with the part Secrets folded in: the operator updates a
    StatefulSet only when that annotation changes, and the parts volume lists them."""
    digest = hashlib.sha256(f"{base}|{','.join(secret_names)}".encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))


def adapt_statefulset(statefulset: dict, secret_names: Sequence[str], namespace: str, fast: bool) -> dict:
    """Mount the part Secrets (one projected volume) into the reloaders, and point them at it (in place).

    Prometheus already mounts config_out, where the reloader writes the gunzipped parts. In fast-reload
    mode the reloaders also read each part through the API into PARTS_STAGED (the mount is the fallback)."""
    pod = statefulset["spec"]["template"]["spec"]
    pod["volumes"].append({"name": VOLUME, "projected": {"sources": [
        {"secret": {"name": n}} for n in secret_names]}})
    if fast:
        args = [f"--config-parts-dir={PARTS_STAGED}"] + [
            f"--watch-secret-file={namespace}/{name}:{part_key(i)}={PARTS_STAGED},mount={PARTS_MOUNT}"
            for i, name in enumerate(secret_names)]
    else:
        args = [f"--config-parts-dir={PARTS_MOUNT}"]
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        if container.get("name") not in RELOADER_CONTAINERS:
            continue
        container.setdefault("volumeMounts", []).append({"mountPath": PARTS_MOUNT, "name": VOLUME, "readOnly": True})
        container["args"] = [*(container.get("args") or []), *args, f"--config-parts-out-dir={PARTS_OUT}"]
    return statefulset


def adapt_rbac(objects: list[dict], secret_names: Sequence[str]) -> list[dict]:
    """Fast reload's Role (promop.render.fast_reload) may also get and watch the part Secrets (in place)."""
    for obj in objects:
        if obj.get("kind") != "Role":
            continue
        for rule in obj.get("rules") or []:
            if rule.get("resources") == ["secrets"]:
                rule["resourceNames"] = [*rule["resourceNames"], *secret_names]
    return objects


@dataclass
class Planned:
    """What the pipeline needs of a split: the main config (text and gzipped), the part Secrets."""

    main_text: str
    main_gz: bytes
    secrets: list[dict]

    @property
    def names(self) -> list[str]:
        return [s["metadata"]["name"] for s in self.secrets]


def plan(prometheus: Mapping[str, Any], generated: Any, gz: bytes, options: RenderOptions,
         previous: int) -> Planned | None:
    """None when the gzipped config `gz` fits one Secret (then nothing changes), else the split.

    `generated` is a promop.render.generate.ConfigResult (head, tail, groups). Raises ConfigTooLarge."""
    if not needed(len(gz), options):
        return None
    groups = [Group(key, tuple(texts)) for key, texts in generated.groups]
    done = split_config(prometheus, generated.head, groups, generated.tail, len(gz), options, previous)
    return Planned(done.main_text, compress(done.main_text), part_secrets(prometheus, options, done.parts))
