"""A type's identity: the digest of its definition as the package ships it.

Two clusters can serve different types under one group, version and kind (seed: verifiable
API compatibility). A digest of the definition says whether they are the same type. It is
taken over a canonical form, so that what does not change the type does not change it:

- key order and YAML style (the definition is read as data, written as JSON with sorted
  keys and no spaces);
- what lockwright injects when it establishes the object: owner references, the common
  labels and annotations (all metadata but the name goes), webhook client configurations'
  CA bundles and Service references (their ``path`` stays: the package chose it), the
  name of a webhook configuration (lockwright names it after the package), a shipped
  ``status`` (the server owns it);
- an MRD against its CRD: an MRD is taken as the CRD it serves (its ``state`` is whether
  the type is served, not what the type is; its ``connectionDetails`` document secrets,
  not the schema), so a type keeps its digest from Crossplane v1's CRD to v2's MRD.

Anything else, a description included, is part of the definition and changes the digest.
A revision's API digest is the digest of its sorted ``name type-digest`` lines: the API
surface, unchanged by a release that changes only the controller.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

Obj = dict[str, Any]

SHA256 = "sha256:"
CRD_KIND, MRD_KIND = "CustomResourceDefinition", "ManagedResourceDefinition"
XRD_KIND = "CompositeResourceDefinition"
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
DEFINITION_KINDS = (CRD_KIND, MRD_KIND, XRD_KIND, *WEBHOOK_KINDS)
_MRD_ONLY = ("state", "connectionDetails")
# YAML keys may be ints or booleans (a property named ``on`` or ``200``); they are written
# as JSON strings, as documents.jsonl writes them, so the YAML and the cached pass agree.
_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_INJECTED_SERVICE = ("name", "namespace", "port")


def is_definition(obj: Obj) -> bool:
    """Whether ``obj`` defines a type (or its admission): it gets a type digest."""
    return obj.get("kind") in DEFINITION_KINDS


def canonical(obj: Obj) -> Obj:
    """The definition as its digest sees it; see the module."""
    kind = str(obj.get("kind", ""))
    if kind in WEBHOOK_KINDS:
        return {"kind": kind, "webhooks": [_hook(h) for h in obj.get("webhooks") or []]}
    spec = dict(obj.get("spec") or {})
    if kind == MRD_KIND:
        kind, spec = CRD_KIND, {k: v for k, v in spec.items() if k not in _MRD_ONLY}
    if kind == CRD_KIND and isinstance(spec.get("conversion"), dict):
        spec["conversion"] = _conversion(spec["conversion"])
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    if kind == CRD_KIND:
        group = "apiextensions.k8s.io"
    return {"group": group, "kind": kind,
            "name": str((obj.get("metadata") or {}).get("name", "")), "spec": spec}


def type_digest(obj: Obj) -> str:
    """``sha256:<hex>`` of the canonical definition."""
    return SHA256 + raw_type_digest(obj).hex()


def raw_type_digest(obj: Obj) -> bytes:
    """:func:`type_digest` as the 32 bytes of the hash (for summaries kept by thousands)."""
    return hashlib.sha256(canonical_bytes(obj)).digest()


def canonical_bytes(obj: Obj) -> bytes:
    """The canonical definition as the JSON text its digest is taken over."""
    return orjson.dumps(canonical(obj), option=_CANONICAL)


def type_key(obj: Obj) -> str:
    """How a revision's API digest names a definition: ``Kind name`` (an MRD as the CRD
    it serves; a webhook configuration by its kind alone: lockwright names it)."""
    return key_of(str(obj.get("kind", "")), str((obj.get("metadata") or {}).get("name", "")))


def key_of(kind: str, name: str) -> str:
    """:func:`type_key` of a definition of ``kind`` named ``name``."""
    if kind in WEBHOOK_KINDS:
        return kind
    return f"{CRD_KIND if kind == MRD_KIND else kind} {name}".rstrip()


def api_digest(definitions: Iterable[Obj]) -> str:
    """``sha256:<hex>`` over the sorted ``key type-digest`` lines of ``definitions``."""
    return api_digest_of((type_key(d), type_digest(d)) for d in definitions if is_definition(d))


def api_digest_of(types: Iterable[tuple[str, str]]) -> str:
    """:func:`api_digest` from ``(type key, type digest)`` pairs already computed (a
    package summary keeps them, so a 2,000-CRD package is not read again for it)."""
    lines = sorted(f"{key} {digest}\n" for key, digest in types)
    return SHA256 + hashlib.sha256("".join(lines).encode()).hexdigest()


def _hook(hook: Obj) -> Obj:
    return {**hook, "clientConfig": _client_config(hook.get("clientConfig") or {})}


def _conversion(conversion: Obj) -> Obj:
    out = dict(conversion)
    if isinstance(out.get("webhook"), dict):
        webhook = out["webhook"] = dict(out["webhook"])
        webhook["clientConfig"] = _client_config(webhook.get("clientConfig") or {})
    if isinstance(out.get("webhookClientConfig"), dict):
        out["webhookClientConfig"] = _client_config(out["webhookClientConfig"])
    return out


def _client_config(config: Obj) -> Obj:
    """A client configuration without what lockwright injects (CA bundle, Service)."""
    out = {k: v for k, v in config.items() if k not in ("caBundle", "service")}
    service = {k: v for k, v in (config.get("service") or {}).items()
               if k not in _INJECTED_SERVICE}
    return {**out, "service": service} if service else out
