"""Volume names as upstream's ResourceNamer.UniqueDNS1123Label builds them.

`<prefix>-<sanitized name, at most 54 chars>-<first 8 hex digits of XXH64(name)>`:
the hash is of the name alone (not the prefix), so the key, cert and client CA
volumes of one Secret share a suffix, and two long names cut to the same 54
characters still differ. Matching upstream's names keeps a StatefulSet rolled by
promop identical to one upstream would write.
"""

from __future__ import annotations

import re

from promop.xxhash64 import xxh64

_INVALID = re.compile(r"[^-a-z0-9]+")
_MAX = 63


def unique_dns1123_label(prefix: str, name: str) -> str:
    """A DNS-1123 label for `name` under `prefix`, unique per name (upstream's hash suffix)."""
    suffix = f"-{xxh64(name.encode()):x}"[:9]
    label = f"{prefix.rstrip('-')}-{name}" if prefix else name
    label = _INVALID.sub("-", label.lower()).strip("-")
    return label[:_MAX - 9] + suffix
