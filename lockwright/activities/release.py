"""Deactivation's release of control: a retired revision stays an owner of each object it
established, and is no longer its controller (docs/design.md, "One dry run per
switch-over", on what the finish reads).

After a switch-over the new revision has already taken control of every object it ships,
so the release mostly finds nothing to write; what it costs is reading the owners. The
finish of a switch therefore skips the objects the new revision records
(``status.objectRefs``) as established under its control: only one owner reference may be
the controller, and the new revision's take set the old one's to false, so there is
nothing to read (a 10-CRD switch-over's finish read 20 objects for it, 40 ms). A kind
the revision holds many objects of is read with one metadata-only list (owners and
resourceVersions, never contents) instead of an object at a time: a switched 2,000-CRD
provider's old revision read its 4,000 objects one by one in 80 s on a busy
kube-apiserver (2026-12-01).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from lockwright.activities.base import beat, kind_of, meta, revision_kind
from lockwright.errors import KubeConflict
from lockwright.k8s import Kube, Obj
from lockwright.k8s.watch import list_all
from lockwright.objects import establish as est
from lockwright.objects.establish import Ref

#: A kind with at least this many of the revision's objects is read by one metadata-only
#: list; fewer are read one by one (a list would read the whole cluster's of that kind).
LIST_FROM = 64


class Release:
    """One revision's release, ``workers`` objects at a time, a heartbeat for each."""

    def __init__(self, kube: Kube, workers: int) -> None:
        self.kube = kube
        self.workers = workers

    def run(self, kind: str, rev: Obj, taken: frozenset[Ref] = frozenset()) -> int:
        """Drop ``rev``'s controller flag on each of its objects; how many it controlled.
        ``taken``: objects another revision has since established under its control,
        which ``rev`` cannot control; they are not read."""
        revision = est.Revision(name=str(meta(rev)["name"]), uid=str(meta(rev)["uid"]),
                                kind=revision_kind(kind), package_kind=kind_of(kind),
                                package_name="", package_uid="", active=False)
        refs = [ref for ref in object_refs(rev) if ref not in taken]
        listed = self.listed(refs)
        released = 0
        with ThreadPoolExecutor(self.workers) as pool:
            for done in pool.map(lambda ref: self.one(ref, revision, listed), refs):
                released += done
                beat()
        return released

    def listed(self, refs: list[Ref]) -> dict[Ref, Obj | None]:
        """The metadata of the objects of each kind ``refs`` names at least
        :data:`LIST_FROM` times, by one metadata-only list each (None: not there)."""
        out: dict[Ref, Obj | None] = {}
        for (api_version, kind), count in Counter(r[:2] for r in refs).items():
            if count < LIST_FROM:
                continue
            names = {r[2] for r in refs if r[:2] == (api_version, kind)}
            out.update({(api_version, kind, n): None for n in names})
            listing = list_all(self.kube, self.kube.resource(api_version, kind).path(None),
                               metadata_only=True, keep=meta)
            out.update({(api_version, kind, m["name"]): m for m in listing.items
                        if m.get("name") in names})
            beat()
        return out

    def one(self, ref: Ref, revision: est.Revision, listed: dict[Ref, Obj | None]) -> int:
        """1 when ``revision`` controlled the object and now only owns it. A listed
        object that changed since the list is read again."""
        if ref in listed:
            try:
                return self._release(ref, listed[ref], revision)
            except KubeConflict:
                pass
        return self._release(ref, meta(self.kube.get(*ref)) or None, revision)

    def _release(self, ref: Ref, live: Obj | None, revision: est.Revision) -> int:
        current = (live or {}).get("ownerReferences") or []
        wanted = est.release_references(current, revision)
        if live is None or wanted == current:
            return 0
        self.kube.set_owners(*ref, wanted, str(live["resourceVersion"]))
        return 1


def object_refs(rev: Obj) -> list[Ref]:
    """The objects a revision records (``status.objectRefs``) as (apiVersion, kind, name)."""
    return [(str(r["apiVersion"]), str(r["kind"]), str(r["name"]))
            for r in (rev.get("status") or {}).get("objectRefs") or []]
