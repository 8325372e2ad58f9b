"""What an install records of API identity: on definitions, on the revision, in the Lock.

- Each definition a revision establishes carries :data:`names.TYPE_DIGEST`, the digest of
  the definition as the package ships it (:func:`stamped`, applied before the CRD-to-MRD
  conversion and webhook injection, so an MRD and the CRD established with it carry the
  CRD's digest).
- The revision carries :data:`names.API_DIGEST`, :data:`names.BASE_LAYER` and
  :data:`names.CONTROLLER_DIGEST` (:func:`revision_patch`); one left unknown (no base
  layer marked, no controller, a controller image that could not be resolved) is absent.
- The revision's Lock entry repeats them as ``apiDigest``, ``baseLayer`` and
  ``controllerDigest`` (:func:`lock_fields`), fields lockwright adds to Crossplane's schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockwright.identity import names
from lockwright.identity.digest import is_definition, type_digest

Obj = dict[str, Any]

#: Revision annotation → Lock entry field.
LOCK_FIELDS = {names.API_DIGEST: "apiDigest", names.BASE_LAYER: "baseLayer",
               names.CONTROLLER_DIGEST: "controllerDigest"}


def stamped(obj: Obj) -> Obj:
    """``obj`` with its type digest annotated when it is a definition (as shipped: any
    value the package itself put there is replaced); other objects unchanged.

    ``obj`` is not modified; the result shares all but its metadata with it.
    """
    if not is_definition(obj):
        return obj
    meta = dict(obj.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}),
                           names.TYPE_DIGEST: type_digest(obj)}
    return {**obj, "metadata": meta}


def revision_patch(current: Mapping[str, str] | None, api: str, base_layer: str,
                   controller: str) -> dict[str, str | None]:
    """The annotations to merge-patch onto a revision so that it records ``api``,
    ``base_layer`` and ``controller`` ("" removes one): empty when it says so already."""
    wanted = {names.API_DIGEST: api, names.BASE_LAYER: base_layer,
              names.CONTROLLER_DIGEST: controller}
    current = current or {}
    return {k: (v or None) for k, v in wanted.items() if (current.get(k) or "") != v}


def lock_fields(annotations: Mapping[str, str] | None) -> dict[str, str]:
    """The Lock entry's identity fields, from the revision's annotations (those it has)."""
    found = annotations or {}
    return {field: str(found[key]) for key, field in LOCK_FIELDS.items() if found.get(key)}
