"""Stable content keys: sha256 over length-prefixed parts (no ambiguity between
("ab", "c") and ("a", "bc")), hex encoded.

Keys of entries that hold a tenant's content (compressed documents) carry the tenant
twice: inside the hash (another tenant cannot reach the entry, not even by sending the
same document, so a memo hit never tells one tenant what another has sent) and as a
short tag in the name (`memo:<tag>:...`, so one tenant's entries can be listed and
deleted). Without tenancy (tenant "") the name has no tag."""

from __future__ import annotations

import hashlib


def content_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def tenant_tag(tenant: str) -> str:
    """A short, stable name for a tenant in store keys ("" without tenancy)."""
    return content_key("tenant", tenant)[:16] if tenant else ""


TAGGED = ("memo", "feat", "ana")  # tenant-tagged names: memo_key, feature_key, analysis_key


def owner_of(key: str) -> str:
    """The tenant tag in a key's name (`memo:<tag>:...`, `feat:<tag>:...`), "" for keys
    without one: the in-process caches share their bytes fairly by it (cache/lru.py)."""
    kind, _, rest = key.partition(":")
    if kind not in TAGGED:
        return ""
    tag, sep, _ = rest.partition(":")
    return tag if sep else ""


def memo_key(
    compressor_fingerprint: str, document: str, question: str | None, tenant: str = ""
) -> str:
    """Key of one compressed document; the question only for question-aware compressors."""
    parts = ("doc", tenant, compressor_fingerprint, document)
    if question is not None:
        parts += (question,)
    tag = tenant_tag(tenant)
    return f"memo:{tag + ':' if tag else ''}{content_key(*parts)}"
