"""Pure planning of "establish objects" (docs/crossplane.md §10 step 14).

Given a revision, the objects its package ships and the live objects, decide per object
what to write. All or nothing: when any object is held by another package the plan has
conflicts and no actions, so the caller writes nothing. Only an active revision is a
controller; an inactive one a plain owner (docs/design.md invariant 5). Once an upgrade is finished,
the objects only the retired revision established are dropped (:func:`unshipped`) and
lose its and the package's references (:func:`without_owners`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from lockwright.identity.names import TYPE_DIGEST
from lockwright.managed.convert import ACTIVE, MRD_KIND, Conversion, mrd_active
from lockwright.objects import holders
from lockwright.objects.holders import Current, Hold, Stale
from lockwright.objects.lock import Conflict, ObjectKey, Owner
from lockwright.objects.webhooks import inject_webhooks

Obj = dict[str, Any]
#: An object as a revision's ``status.objectRefs`` names it: apiVersion, kind, name.
Ref = tuple[str, str, str]
#: An object's API group and kind: what a take's dry run speaks for (``to_dry_run``).
Kind = tuple[str, str]

PKG_API_VERSION = "pkg.crossplane.io/v1"
PACKAGE_KINDS = ("Provider", "Configuration", "Function")
# What each package kind may install; anything else in the package is silently dropped.
ESTABLISHABLE: dict[str, frozenset[tuple[str, str]]] = {
    "Provider": frozenset({
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiextensions.crossplane.io", "ManagedResourceDefinition"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    }),
    "Configuration": frozenset({
        ("apiextensions.crossplane.io", "CompositeResourceDefinition"),
        ("apiextensions.crossplane.io", "Composition"),
        ("apiextensions.crossplane.io", "ManagedResourceActivationPolicy"),
        ("ops.crossplane.io", "Operation"),
        ("ops.crossplane.io", "CronOperation"),
        ("ops.crossplane.io", "WatchOperation"),
    }),
    "Function": frozenset(),
}


class Op(str, Enum):
    """What to do with one object."""

    CREATE = "create"  # write the full object
    UPDATE = "update"  # replace the object (resourceVersion set from the live one)
    ADOPT = "adopt"  # replace it, taking control from nobody or from our own package
    OWN = "own"  # inactive revision: patch only metadata.ownerReferences
    TAKE = "take"  # take control of a definition as shipped: patch only ownerReferences
    SKIP = "skip"  # nothing to write


@dataclass(frozen=True)
class Revision:
    """The revision establishing objects, and its package."""

    name: str
    uid: str
    kind: str
    package_kind: str
    package_name: str
    package_uid: str
    active: bool
    common_labels: dict[str, str] = field(default_factory=dict)
    common_annotations: dict[str, str] = field(default_factory=dict)
    # Crossplane v2: its CRDs established as ManagedResourceDefinitions (None: as CRDs).
    conversion: Conversion | None = None


@dataclass(frozen=True)
class Action:
    """One planned write; ``expect``, for a write of owner references alone (own, take),
    the live metadata it was decided on, which the write tests (:func:`guard`)."""

    op: Op
    key: ObjectKey
    object: Obj
    expect: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> Kind:
        """The API group and kind of the object written."""
        return self.key.group, self.key.kind


#: What an owners-only write tests the live object for: the same object (uid), the same
#: body (generation), and the same owners, labels and annotations.
GUARDED = ("uid", "generation", "ownerReferences", "labels", "annotations")


def guard(op: Op, live: Obj | None) -> dict[str, Any]:
    """The metadata an own or take of ``live`` is decided on, None for a field it lacks
    (docs/design.md, "One dry run per switch-over"). A status written since does not move
    any of it, so it does not refuse the write, where a ``resourceVersion`` would. Without
    a ``generation`` (nothing counts its body's changes) the ``resourceVersion`` is tested."""
    if op not in (Op.OWN, Op.TAKE) or live is None:
        return {}
    meta = live.get("metadata") or {}
    fields = GUARDED if meta.get("generation") else (*GUARDED, "resourceVersion")
    return {f: meta.get(f) for f in fields}


@dataclass(frozen=True)
class Seen:
    """What checking decided for one object, and the little of the live object its write
    builds on (metadata only), so writing need not read the object again."""

    op: Op
    live: Obj | None
    drop: frozenset[str] = frozenset()  # stale owner UIDs the write leaves out


@dataclass(frozen=True)
class Plan:
    """Actions to take, or the conflicts that forbid taking any; ``stale`` lists the
    objects whose stale holder (see :mod:`lockwright.objects.holders`) the actions adopt."""

    actions: list[Action]
    conflicts: list[Conflict]
    object_refs: list[dict[str, str]]
    stale: list[Stale] = field(default_factory=list)
    drops: dict[ObjectKey, frozenset[str]] = field(default_factory=dict)

    @property
    def conflict_message(self) -> str:
        """Crossplane-style lines naming each conflicting object and its holder."""
        return "; ".join(c.message for c in self.conflicts)


def controller_ref(rev: Revision) -> dict[str, Any]:
    """The controller ownerReference an active revision puts on its objects."""
    return {"apiVersion": PKG_API_VERSION, "kind": rev.kind, "name": rev.name, "uid": rev.uid,
            "controller": True, "blockOwnerDeletion": True}


def _plain(api_kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": PKG_API_VERSION, "kind": api_kind, "name": name, "uid": uid}


def package_ref(rev: Revision) -> dict[str, Any]:
    """The plain ownerReference to the package every established object carries."""
    return _plain(rev.package_kind, rev.package_name, rev.package_uid)


def establishable(package_kind: str, objects: list[Obj]) -> list[Obj]:
    """Keep the objects a package of ``package_kind`` installs (docs/crossplane.md §7.3 table)."""
    allowed = ESTABLISHABLE.get(package_kind, frozenset())
    return [o for o in objects if (ObjectKey.of(o).group, o.get("kind")) in allowed]


def prepare(objects: list[Obj], rev: Revision, ca: bytes | None, namespace: str,
            service: str | None = None) -> list[Obj]:
    """Filter, merge commonLabels/Annotations (overwriting keys) and inject webhooks.

    A shipped ``status`` (controller-gen writes one into CRDs) is dropped: the server
    owns it. ``objects`` are not modified; the results share their unchanged parts (a
    deep copy of every CRD costs more than the rest of planning), so treat them as
    read-only.
    """
    out = []
    for obj in establishable(rev.package_kind, objects):
        obj = inject_webhooks(obj, package_kind=rev.package_kind,
                              package_name=rev.package_name, active=rev.active, ca=ca,
                              namespace=namespace, service=service)
        obj = {k: v for k, v in obj.items() if k != "status"}
        meta = obj["metadata"] = dict(obj.get("metadata") or {})
        if rev.common_labels:
            meta["labels"] = {**(meta.get("labels") or {}), **rev.common_labels}
        if rev.common_annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **rev.common_annotations}
        out.append(obj)
    return out


def _holder(refs: list[dict[str, Any]], controller: dict[str, Any]) -> Owner:
    kind = str(controller.get("kind", "")).removesuffix("Revision")
    pkg = next((r for r in refs if r.get("kind") == kind and kind in PACKAGE_KINDS), None)
    kind = str(pkg["kind"]) if pkg else str(controller.get("kind", ""))
    name = str(pkg["name"]) if pkg else str(controller.get("name", ""))
    return Owner(kind, name, str(controller.get("name", "")))


def holder_of(live: Obj) -> Owner | None:
    """Who controls ``live``: the package (from its plain owner ref) and revision, or None."""
    refs = (live.get("metadata") or {}).get("ownerReferences") or []
    controller = next((r for r in refs if r.get("controller")), None)
    return _holder(refs, controller) if controller else None


def conflict_of(key: ObjectKey, live: Obj, rev: Revision,
                current: Current | None = None) -> Conflict | None:
    """A conflict when ``live`` is controlled by something other than ``rev``'s package.

    Another revision of the same package is no conflict: a live one (the object also
    lists the package's UID as owner) hands over, an active revision takes over from it
    and an inactive one stays a plain owner; a stale one (gone, or re-created under
    another UID, per ``current``: see :func:`lockwright.objects.holders.hold_of`) is
    adopted.
    """
    if holders.hold_of(live, rev, current or {}) is not Hold.FOREIGN:
        return None
    refs = holders.refs_of(live)
    return Conflict(key, _holder(refs, holders.controller_of(refs) or {}))


def owner_references(current: list[dict[str, Any]], rev: Revision,
                     drop: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """``current`` plus the package as plain owner and ``rev`` as controller or plain owner.

    Existing entries keep their positions, so a re-run produces the same list. When
    ``rev`` is active every other controller flag is cleared (hand-off within the
    package; callers have ruled out other packages with :func:`conflict_of`). References
    to the UIDs in ``drop`` (a stale holder's) are left out.
    """
    mine = controller_ref(rev) if rev.active else _plain(rev.kind, rev.name, rev.uid)
    wanted = {rev.package_uid: package_ref(rev), rev.uid: mine}
    out = []
    for ref in current:
        if ref.get("uid") in drop and ref.get("uid") not in wanted:
            continue
        if ref.get("uid") in wanted:
            out.append(wanted.pop(str(ref["uid"])))
        elif rev.active and ref.get("controller"):
            out.append({**ref, "controller": False})
        else:
            out.append(dict(ref))
    return out + list(wanted.values())


def release_references(current: list[dict[str, Any]], rev: Revision) -> list[dict[str, Any]]:
    """Deactivation: our controller flag cleared, and ``rev`` added as plain owner if absent."""
    out = [{**r, "controller": False} if r.get("uid") == rev.uid and r.get("controller")
           else dict(r) for r in current]
    if not any(r.get("uid") == rev.uid for r in out):
        out.append(_plain(rev.kind, rev.name, rev.uid))
    return out



def established_refs(rev: Obj) -> set[Ref]:
    """The objects a revision established, from its ``status.objectRefs``."""
    return {(str(r["apiVersion"]), str(r["kind"]), str(r["name"]))
            for r in (rev.get("status") or {}).get("objectRefs") or []}


def unshipped(retired: Obj, revisions: list[Obj]) -> list[Ref]:
    """The objects only ``retired`` established, sorted: what a finished upgrade drops.

    Args:
        retired: the revision the switch retired.
        revisions: every revision of the package, ``retired`` itself included.
    """
    others = set().union(*(established_refs(r) for r in revisions if r is not retired))
    return sorted(established_refs(retired) - others)


def without_owners(current: list[dict[str, Any]], uids: set[str]) -> list[dict[str, Any]]:
    """``current`` owner references without those to ``uids`` (order kept).

    An object left with none is deleted by the caller: Kubernetes' garbage collector
    never deletes an object that has no owner references at all.
    """
    return [r for r in current if r.get("uid") not in uids]

def contains(live: Any, desired: Any) -> bool:
    """True when every field of ``desired`` is in ``live`` with the same value.

    Extra fields in ``live`` (server defaults, other writers' labels) do not count as a
    difference; lists must have the same length and match element by element.
    """
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(
            k in live and contains(live[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return (isinstance(live, list) and len(live) == len(desired)
                and all(contains(a, b) for a, b in zip(live, desired)))
    return bool(live == desired)


def _unchanged(desired: Obj, live: Obj) -> bool:
    refs = (live.get("metadata") or {}).get("ownerReferences")
    return refs == desired["metadata"].get("ownerReferences") and _as_shipped(desired, live)


def _taken_as_is(shipped: Obj, desired: Obj, live: Obj) -> bool:
    """Whether control of ``live`` passes by its owner references alone: a definition
    (CRD, MRD, XRD, webhook configuration) whose type digest, annotated as shipped
    (:mod:`lockwright.identity.record`), is the live one's, and which holds all else of
    ``desired``. Only a definition: containment alone would take over as it is an object
    holding a field the new version no longer ships, where the digest of all a definition
    ships changes with any such field."""
    # The shipped object's own: ``desired`` has the live annotations merged in.
    annotations = shipped["metadata"].get("annotations") or {}
    return TYPE_DIGEST in annotations and _as_shipped(desired, live)


def _as_shipped(desired: Obj, live: Obj) -> bool:
    """Whether ``live`` holds all of ``desired`` but its owner references: its labels,
    annotations and body (server defaults and other writers' additions aside)."""
    dmeta = desired["metadata"]
    meta = {k: dmeta[k] for k in ("labels", "annotations") if k in dmeta}
    body = {k: v for k, v in desired.items() if k not in ("metadata", "status")}
    return contains(live.get("metadata") or {}, meta) and contains(live, body)


def _decide(shipped: Obj, obj: Obj, live: Obj | None, rev: Revision) -> Op:
    if live is None:
        return Op.CREATE if rev.active else Op.SKIP
    refs = (live.get("metadata") or {}).get("ownerReferences") or []
    controller = next((r for r in refs if r.get("controller")), None)
    if not rev.active:
        return Op.SKIP if obj["metadata"]["ownerReferences"] == refs else Op.OWN
    if controller is None or controller.get("uid") != rev.uid:
        return Op.TAKE if _taken_as_is(shipped, obj, live) else Op.ADOPT
    return Op.SKIP if _unchanged(obj, live) else Op.UPDATE


def to_dry_run(actions: list[Action], passed: frozenset[Kind] = frozenset()
               ) -> list[Action]:
    """The writes of ``actions`` whose dry run can tell something the others' do not:
    every one but :attr:`Op.TAKE`, and of those the first of each kind not in ``passed``
    (the kinds whose take passed a dry run already, in an earlier batch of the check).

    A take writes only an object's owner references, so the API checks no content of its
    own: what can refuse it (the patch verb, a policy or webhook on the kind, the
    references themselves, built alike for all) is the same for every object of a kind
    (docs/design.md, "One dry run per switch-over").
    """
    kinds: set[Kind] = set(passed)
    checked = []
    for action in actions:
        if action.op is not Op.TAKE or action.kind not in kinds:
            checked.append(action)
        kinds.update([action.kind] if action.op is Op.TAKE else [])
    return checked


def takes_passed(dry_run: list[Action], passed: list[bool]) -> set[Kind]:
    """The kinds of the takes among ``dry_run`` whose dry run ``passed``."""
    return {a.kind for a, ok in zip(dry_run, passed, strict=True) if ok and a.op is Op.TAKE}


def _desired(obj: Obj, live: Obj | None, rev: Revision,
             drop: frozenset[str] = frozenset()) -> Obj:
    # Only metadata changes, so only it is copied; the rest is shared with ``obj``.
    meta = dict(obj["metadata"])
    out = {**obj, "metadata": meta}
    if live is None:
        meta["ownerReferences"] = [controller_ref(rev), package_ref(rev)]
        return out
    lmeta = live.get("metadata") or {}
    meta["ownerReferences"] = owner_references(lmeta.get("ownerReferences") or [], rev, drop)
    for key in ("labels", "annotations"):
        merged = {**(lmeta.get(key) or {}), **(meta.get(key) or {})}
        if merged:
            meta[key] = merged
    if lmeta.get("resourceVersion"):
        meta["resourceVersion"] = lmeta["resourceVersion"]
    return _kept_active(out, live)


def _kept_active(desired: Obj, live: Obj) -> Obj:
    """An MRD the package ships Inactive (or a revision converts Inactive) stays Active
    once it is live Active: activation is one way, and the MRD type refuses going back
    (Crossplane's establisher merges it so)."""
    if (desired.get("kind") != MRD_KIND or not mrd_active(live)
            or mrd_active(desired)):
        return desired
    return {**desired, "spec": {**(desired.get("spec") or {}), "state": ACTIVE}}


def object_ref(obj: Obj) -> dict[str, str]:
    """The TypedReference ``{apiVersion, kind, name}`` of an object."""
    return {"apiVersion": str(obj["apiVersion"]), "kind": str(obj["kind"]),
            "name": str(obj["metadata"]["name"])}


def definition_counts(refs: list[dict[str, str]]) -> tuple[int, int]:
    """How many MRDs ``refs`` name, and how many of them come with their CRD (Active)."""
    mrds = {r["name"] for r in refs if r.get("kind") == "ManagedResourceDefinition"}
    crds = {r["name"] for r in refs if r.get("kind") == "CustomResourceDefinition"}
    return len(mrds), len(mrds & crds)


def sort_object_refs(refs: list[dict[str, str]]) -> list[dict[str, str]]:
    """Sort by ``"<group>/<version>, Kind=<kind>/<name>"``, descending, as Crossplane does."""
    def gvk_name(ref: dict[str, str]) -> str:
        group, _, version = ref["apiVersion"].rpartition("/")
        return f"{group}/{version}, Kind={ref['kind']}/{ref['name']}"
    return sorted(refs, key=gvk_name, reverse=True)


def plan_establish(rev: Revision, objects: list[Obj], live: dict[ObjectKey, Obj], *,
                   ca_bundle: bytes | None, namespace: str, service: str | None = None,
                   current: Current | None = None) -> Plan:
    """Decide create / update / adopt / take / own / skip per object, or report conflicts.

    Args:
        rev: the revision and whether it is active.
        objects: every object of the package (the meta object and others are filtered).
        live: the current objects by key (metadata at least; the whole object lets
            unchanged ones be skipped).
        ca_bundle: PEM to inject into webhooks; required when the package has any.
        namespace: the system namespace of the package's Service.
        service: the Service name, by default the package name.
        current: the current UID (None: gone) of each revision
            :func:`lockwright.objects.holders.to_look_up` names for ``live``; a holder
            not in it counts as live.

    Returns:
        A plan whose ``actions`` are empty whenever ``conflicts`` is not.
    """
    prepared = prepare(objects, rev, ca_bundle, namespace, service)
    keyed = [(ObjectKey.of(o), o) for o in prepared]
    conflicts = sorted({c for k, _ in keyed if k in live
                        and (c := conflict_of(k, live[k], rev, current)) is not None},
                       key=lambda c: c.object)
    refs = sort_object_refs([object_ref(o) for _, o in keyed])
    if conflicts:
        return Plan([], conflicts, refs)
    stale = _stale(rev, [k for k, _ in keyed], live, current or {})
    drops = {s.object: holders.dead_uids(holders.refs_of(live[s.object]), rev) for s in stale}
    actions = []
    for key, obj in keyed:
        desired = _desired(obj, live.get(key), rev, drops.get(key, frozenset()))
        op = _decide(obj, desired, live.get(key), rev)
        actions.append(Action(op, key, desired, guard(op, live.get(key))))
    return Plan(actions, [], refs, stale, drops)


def _stale(rev: Revision, keys: list[ObjectKey], live: dict[ObjectKey, Obj],
           current: Current) -> list[Stale]:
    """The objects whose stale holder an active ``rev`` adopts (an inactive one only
    co-owns, so it adopts nothing)."""
    if not rev.active:
        return []
    return [holders.stale_of(k, live[k], current) for k in keys
            if k in live and holders.hold_of(live[k], rev, current) is Hold.STALE]


def _slim(live: Obj | None) -> Obj | None:
    if live is None:
        return None
    lmeta = live.get("metadata") or {}
    slim: Obj = {"metadata": {k: lmeta[k] for k in (*GUARDED, "resourceVersion")
                              if k in lmeta}}
    if live.get("kind") == MRD_KIND and mrd_active(live):  # what writes keep (_kept_active)
        slim["spec"] = {"state": ACTIVE}
    return slim


def seen(plan: Plan, live: dict[ObjectKey, Obj]) -> dict[ObjectKey, Seen]:
    """Per planned object, its decision and live metadata: small enough to keep for every
    object of a package between checking all of them and writing any."""
    return {a.key: Seen(a.op, _slim(live.get(a.key)), plan.drops.get(a.key, frozenset()))
            for a in plan.actions}


def replan(rev: Revision, objects: list[Obj], seen: dict[ObjectKey, Seen], *,
           ca_bundle: bytes | None, namespace: str, service: str | None = None
           ) -> list[Action]:
    """The actions :func:`plan_establish` decided, rebuilt from the objects and :func:`seen`.

    The result equals that plan's actions: the decisions are the ones taken then, and
    each desired object is built from the same object and the same live metadata (its
    ``resourceVersion`` included, so a write after a concurrent change fails).

    Raises:
        KeyError: an object was not in the plan ``seen`` came from.
    """
    actions = []
    for obj in prepare(objects, rev, ca_bundle, namespace, service):
        key = ObjectKey.of(obj)
        decided = seen[key]
        actions.append(Action(decided.op, key, _desired(obj, decided.live, rev, decided.drop),
                              guard(decided.op, decided.live)))
    return actions
