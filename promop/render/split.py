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
from itertools import compress
from operator import is_not
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

from promop.render import assembly
from promop.render.config import Piece, compress as gzip_text, compress_pieces, dump
from promop.render.listdiff import change_limit
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


Group = tuple  # (key, job texts): jobs that move together, one monitor's (`<kind>/<ns>/<name>`) or one additional job


@dataclass
class Split:
    """The main config text and, per part, its gzipped data."""

    main_text: str
    parts: list[bytes]


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
    return _key_hash(key) % count


def _key_hash(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


class PartMemo:
    """What one render's split may reuse from the last: each group key's hash and, for the last
    count of parts, each group's bucket and place in it, each bucket's pieces (cut as the main
    config's, promop.render.assembly) and gzip members, and the parts. An edit then replaces one
    group in one bucket and recompresses one member. Only an optimisation: the parts are the same
    bytes without it."""

    def __init__(self) -> None:
        self.hashes: dict[str, int] = {}
        self.count = 0
        self.groups: list[Group] = []
        self.keys: list[str] = []
        self.bucket_of: list[int] = []
        self.index_in: list[int] = []
        self.buckets: list[list[Group]] = []
        self.cuts: list[assembly.Pieces] = []
        self.members: list[dict[Piece, bytes]] = []
        self.parts: list[bytes] = []

    def hash_of(self, key: str) -> int:
        h = self.hashes.get(key)
        if h is None:
            if len(self.hashes) > 4 * MAX_GROUPS_REMEMBERED:  # deleted monitors' keys
                self.hashes.clear()
            h = self.hashes[key] = _key_hash(key)
        return h


MAX_GROUPS_REMEMBERED = 100_000


def _cut(groups: Sequence[Group], memo: assembly.Pieces | None = None) -> assembly.Pieces:
    """A part's text cut as the main config is: the header, then runs of groups (a run ends at a group
    whose key's CRC-32 is a multiple of MEMBER_GROUPS), so an edit changes one run. Joined, the
    strings are `scrape_configs:` and the groups' texts (`scrape_configs: []` for none)."""
    first = "scrape_configs:\n" if any(texts for _, texts in groups) else "scrape_configs: []\n"
    return assembly.cut(first, groups, None, memo)


def _compressed(groups: Sequence[Group], count: int, memo: PartMemo) -> tuple[list[bytes], list[list[Group]]]:
    """Each bucket's part, gzipped (several members for a large part), and its groups; `memo` is
    patched where the groups are the last call's with some replaced, else filled again."""
    if count == memo.count and len(groups) == len(memo.groups):
        changed = list(compress(range(len(groups)), map(is_not, groups, memo.groups)))
        if len(changed) <= change_limit(len(groups)) and all(groups[i][0] == memo.keys[i] for i in changed):
            _patch(groups, memo, changed)
            return memo.parts, memo.buckets
    _fill(groups, count, memo)
    return memo.parts, memo.buckets


def _patch(groups: Sequence[Group], memo: PartMemo, changed: list[int]) -> None:
    buckets, touched = list(memo.buckets), set()
    for i in changed:
        b = memo.bucket_of[i]
        if b not in touched:
            buckets[b] = list(buckets[b])
            touched.add(b)
        buckets[b][memo.index_in[i]] = groups[i]
    parts, cuts, members = list(memo.parts), list(memo.cuts), list(memo.members)
    for b in touched:
        cuts[b] = _cut(buckets[b], cuts[b])
        parts[b], members[b] = compress_pieces(cuts[b].pieces, members[b])
    memo.groups, memo.buckets, memo.parts, memo.cuts, memo.members = list(groups), buckets, parts, cuts, members


def _fill(groups: Sequence[Group], count: int, memo: PartMemo) -> None:
    buckets: list[list[Group]] = [[] for _ in range(count)]
    bucket_of, index_in = [], []
    hash_of = memo.hash_of
    for g in groups:  # once per monitor, when the count or the set of groups changed
        b = hash_of(g[0]) % count
        bucket_of.append(b)
        index_in.append(len(buckets[b]))
        buckets[b].append(g)
    known: dict[Piece, bytes] = {}
    for old in memo.members:
        known.update(old)
    cuts = [_cut(bucket) for bucket in buckets]
    done = [compress_pieces(cut.pieces, known) for cut in cuts]
    memo.count, memo.groups, memo.keys = count, list(groups), [g[0] for g in groups]
    memo.bucket_of, memo.index_in, memo.buckets, memo.cuts = bucket_of, index_in, buckets, cuts
    memo.parts, memo.members = [gz for gz, _ in done], [used for _, used in done]


def _estimated_halves(parts: Sequence[bytes]) -> int:
    """The largest part of half as many buckets, estimated: bucket i of N/2 holds the groups of
    buckets i and i + N/2 of N, so it is about their sizes added (exactly, for the text)."""
    half = len(parts) // 2
    return max(len(parts[i]) + len(parts[i + half]) for i in range(half))


def _start_count(previous: int) -> int:
    n = 2
    while n < previous and n < MAX_PARTS:
        n *= 2
    return n


def split_groups(groups: Sequence[Group], limit: int, previous: int,
                 memo: PartMemo | None = None) -> tuple[list[bytes], list[list[Group]]]:
    """Parts (gzipped) under `limit` bytes each, and each part's groups, starting from the
    `previous` part count: doubled while a part is over the limit, halved while every part of half
    as many would fill at most half the limit (estimated from the parts' sizes, so that an edit
    does not compress everything again)."""
    memo = memo if memo is not None else PartMemo()
    count, may_halve = _start_count(previous), True
    while True:
        parts, buckets = _compressed(groups, count, memo)
        over = [i for i, p in enumerate(parts) if len(p) > limit]
        if not over:
            if may_halve and count > 2 and _estimated_halves(parts) <= limit // 2:
                count //= 2
                continue
            return parts, buckets
        may_halve = False  # grown once: never back (no flapping between two counts)
        alone = next((i for i in over if len(buckets[i]) == 1), None)
        if alone is not None:
            raise ConfigTooLarge(
                f"the scrape jobs of {buckets[alone][0][0]} alone compress to {len(parts[alone])} bytes, over the "
                f"config Secret limit of {limit} bytes (--config-secret-max-bytes): split that object, or raise the "
                "limit (at most 1 MiB)")
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
                 tail: Mapping[str, Any], full_size: int, options: RenderOptions, previous: int,
                 memo: PartMemo | None = None) -> Split:
    limit = options.config_secret_max_bytes
    check_version(prometheus, full_size, limit)
    parts, _ = split_groups(groups, limit, previous, memo)
    return Split(main_text(head, tail), parts)


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
         previous: int, memo: PartMemo | None = None) -> Planned | None:
    """None when the gzipped config `gz` fits one Secret (then nothing changes), else the split.

    `generated` is a promop.render.generate.ConfigResult (head, tail, groups). `memo` (kept by the
    render cache) makes an edit recompress only the run of groups it falls in. Raises ConfigTooLarge."""
    if not needed(len(gz), options):
        return None
    done = split_config(prometheus, generated.head, generated.groups, generated.tail, len(gz), options, previous, memo)
    return Planned(done.main_text, gzip_text(done.main_text), part_secrets(prometheus, options, done.parts))
