"""Compatibility of a CRD upgrade: the whole CRD, each version, each served pair.

The CRD-wide checks are the ones Kubernetes or every client cannot take (scope, stored
versions, served versions; ``lockwright.objects.crdcheck`` refuses them before any write). The
per-version checks are crdify's: each version in both CRDs, old schema against new. The
served-pair checks are crdify's served-version validator: with conversion ``None`` every
served version is the same objects under another schema, so what differs between two
served versions of the new CRD (older -> newer) must be compatible too, unless the old CRD
already had the same difference; skipped when a conversion webhook is set, as OLM does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from lockwright.crdcompat.model import BLOCKING, Change, FieldSummary, Kind, Report, Verdict
from lockwright.crdcompat.rules import Found
from lockwright.crdcompat.walk import Diff, diff_schemas

Obj = dict[str, Any]
SUMMARY_PATHS = 10
_KUBE_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def name_of(crd: Obj) -> str:
    """The CRD's ``metadata.name``."""
    return str((crd.get("metadata") or {}).get("name", ""))


def versions_of(crd: Obj) -> dict[str, Obj]:
    """The CRD's ``spec.versions`` by name, in order."""
    versions = (crd.get("spec") or {}).get("versions") or []
    return {str(v.get("name")): v for v in versions if v.get("name")}


def schema_of(version: Obj) -> Obj:
    """A version's ``openAPIV3Schema`` (``{}`` when it has none)."""
    return dict((version.get("schema") or {}).get("openAPIV3Schema") or {})


def _change(crd: str, version: str, f: Found) -> Change:
    blocking = f.kind in BLOCKING
    return Change(crd, version, f.path or ".", f.kind, blocking, f.detail,
                  f.fix if blocking else "")


def _scope(name: str, old: Obj, new: Obj) -> list[Change]:
    was = (old.get("spec") or {}).get("scope")
    now = (new.get("spec") or {}).get("scope")
    if not was or not now or was == now:
        return []
    return [Change(name, "", "", Kind.SCOPE_CHANGED, True,
                   f"scope cannot change from {was} to {now}",
                   "delete the CRD (and its resources) first or keep the scope")]


def _stored(name: str, new: dict[str, Obj], stored: Sequence[str]) -> list[Change]:
    return [Change(name, v, "", Kind.STORED_VERSION_REMOVED, True,
                   f"version {v} is still in status.storedVersions but the new package "
                   "drops it",
                   f"run a storage migration to the new storage version and remove {v} "
                   f"from status.storedVersions, or keep {v} in spec.versions")
            for v in map(str, stored) if v not in new]


def _served(name: str, new: dict[str, Obj], old: Obj) -> list[Change]:
    served = [v for v, body in versions_of(old).items() if body.get("served")]
    return [Change(name, v, "", Kind.SERVED_VERSION_REMOVED, True,
                   f"version {v} is served but the new package "
                   + ("drops it" if v not in new else "sets served: false"),
                   f"keep {v} served")
            for v in served if not (new.get(v) or {}).get("served")]


def crd_changes(old: Obj, new: Obj, stored: Sequence[str] | None = None) -> list[Change]:
    """The CRD-wide changes: scope, then stored versions dropped, then served ones.

    Args:
        old: the CRD as it is (live, with ``status.storedVersions``) or was packaged.
        new: the CRD as the new package ships it.
        stored: the stored versions, when ``old`` has no status of its own.

    Returns:
        Blocking changes only; empty when the CRD as a whole can be replaced.
    """
    name = name_of(new) or name_of(old)
    if stored is None:
        stored = (old.get("status") or {}).get("storedVersions") or []
    versions = versions_of(new)
    return _scope(name, old, new) + _stored(name, versions, stored) + \
        _served(name, versions, old)


def _kube_order(version: Obj) -> tuple[int, int, int, str]:
    # kube-aware version order, lowest first: alpha < beta < GA, then major, then minor
    name = str(version.get("name"))
    m = _KUBE_VERSION.fullmatch(name)
    if not m:
        return (0, 0, 0, name)
    tier = {"alpha": 1, "beta": 2}.get(m.group(2) or "", 3)
    return (tier, int(m.group(1)), int(m.group(3) or 0), name)


def _pair_changes(name: str, crd: Obj) -> list[Change]:
    served = sorted((v for v in versions_of(crd).values() if v.get("served")), key=_kube_order)
    return [c for i, a in enumerate(served) for b in served[i + 1:]
            for c in (_change(name, f"{a['name']} -> {b['name']}", f)
                      for f in diff_schemas(schema_of(a), schema_of(b)).found)
            if c.blocking]


def _webhook(crd: Obj) -> bool:
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    return bool(conversion.get("strategy") == "Webhook")


def served_pair_changes(old: Obj, new: Obj) -> list[Change]:
    """Blocking differences between served versions of ``new`` that ``old`` did not have."""
    if _webhook(new) or versions_of(old) == versions_of(new):
        return []
    name = name_of(new) or name_of(old)
    known = {(c.version, c.path, c.kind, c.detail) for c in _pair_changes(name, old)}
    return [c for c in _pair_changes(name, new)
            if (c.version, c.path, c.kind, c.detail) not in known]


def _summaries(olds: dict[str, Obj], news: dict[str, Obj], diffs: dict[str, Diff],
               limit: int) -> list[FieldSummary]:
    added = [FieldSummary(v, "added") for v in news if v not in olds]
    removed = [FieldSummary(v, "removed") for v in olds if v not in news]
    return added + [d.summary(v, limit) for v, d in diffs.items() if d] + removed


def compare(old: Obj, new: Obj, *, stored: Sequence[str] | None = None,
            limit: int = SUMMARY_PATHS) -> Verdict:
    """The compatibility of replacing the CRD ``old`` by ``new``.

    Args:
        old: the CRD in the cluster (its ``status.storedVersions`` is used) or as the
            active package ships it.
        new: the CRD as the new package ships it.
        stored: the stored versions, overriding ``old``'s status.
        limit: how many paths each field summary lists.

    Returns:
        Every change, CRD-wide first, then per version, then between served versions;
        and a field summary for each version added, removed or changed.
    """
    name = name_of(new) or name_of(old)
    olds, news = versions_of(old), versions_of(new)
    diffs = {v: diff_schemas(schema_of(olds[v]), schema_of(news[v]))
             for v in news if v in olds and olds[v] != news[v]}
    changes = crd_changes(old, new, stored) + \
        [_change(name, v, f) for v, d in diffs.items() for f in d.found] + \
        served_pair_changes(old, new)
    return Verdict(name, changes, _summaries(olds, news, diffs, limit))


def _is_crd(obj: Obj) -> bool:
    return obj.get("kind") == "CustomResourceDefinition" and \
        str(obj.get("apiVersion", "")).startswith("apiextensions.k8s.io/")


def compare_all(old: Iterable[Obj], new: Iterable[Obj], *,
                limit: int = SUMMARY_PATHS) -> Report:
    """Compare the CRDs of two packages by name (other objects are ignored).

    Args:
        old: the objects of the active package (or the live CRDs).
        new: the objects of the new package.
        limit: how many paths each field summary lists.

    Returns:
        A verdict for each CRD in both with something to report, the names of CRDs added
        and removed, and how many CRDs had nothing to report.
    """
    olds = {name_of(o): o for o in old if _is_crd(o)}
    news = {name_of(o): o for o in new if _is_crd(o)}
    verdicts = [compare(olds[n], news[n], limit=limit) for n in sorted(news) if n in olds]
    listed = [v for v in verdicts if v.changes or v.fields]
    return Report(listed, sorted(n for n in news if n not in olds),
                  sorted(n for n in olds if n not in news), len(verdicts) - len(listed))
