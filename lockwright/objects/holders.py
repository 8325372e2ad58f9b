"""Who holds an object a revision wants: nobody, the revision's own package, or another.

An object's controller reference names a revision by name *and* UID. A restore from a
backup, or a revision deleted and created again, leaves references to UIDs that no
longer exist: the revision of that name is gone or is another object now. Such a holder
of the same package is stale and its object is adopted (with an Event naming the old
UID); Crossplane refuses it as a conflict and its users edit the references by hand
(crossplane#7656, #6761). A live holder of another package is always a conflict.

Everything here is pure: the caller reads the current UID of each revision
:func:`to_look_up` names and passes them in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from lockwright.objects.lock import ObjectKey

Ref = dict[str, Any]
#: A revision's UID now, by name; None when no revision of that name exists.
Current = Mapping[str, str | None]


class Revision(Protocol):
    """What deciding needs of the revision that wants an object
    (``lockwright.objects.establish.Revision`` is one)."""

    @property
    def uid(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def package_kind(self) -> str: ...
    @property
    def package_name(self) -> str: ...
    @property
    def package_uid(self) -> str: ...


class Hold(str, Enum):
    """Who holds an object, as far as taking it is concerned."""

    FREE = "free"  # no controller, or the revision itself
    SIBLING = "sibling"  # a live revision of the same package: a hand-off
    STALE = "stale"  # a revision of the same package that is gone or re-created
    FOREIGN = "foreign"  # anything else: a conflict


@dataclass(frozen=True)
class Stale:
    """An object whose controller reference names a revision that no longer exists."""

    object: ObjectKey
    kind: str
    revision: str
    uid: str
    now: str | None

    @property
    def message(self) -> str:
        """Which reference is stale, and why."""
        why = ("which no longer exists" if self.now is None
               else f"which now has UID {self.now}")
        return f"{self.kind} {self.revision} (UID {self.uid}), {why}"


def refs_of(live: Mapping[str, Any]) -> list[Ref]:
    """The ownerReferences of ``live``."""
    return list((live.get("metadata") or {}).get("ownerReferences") or [])


def controller_of(refs: list[Ref]) -> Ref | None:
    """The controller reference among ``refs``, if any."""
    return next((r for r in refs if r.get("controller")), None)


def controller_name(live: Mapping[str, Any]) -> str:
    """The name of the object controlling ``live`` ("" when none)."""
    found = controller_of(refs_of(live))
    return str(found.get("name", "")) if found else ""


def names_package(refs: list[Ref], rev: Revision) -> bool:
    """True when a plain reference names ``rev``'s package by kind and name (any UID)."""
    return any(r.get("kind") == rev.package_kind and r.get("name") == rev.package_name
               for r in refs)


def to_look_up(live: Mapping[str, Any], rev: Revision) -> str | None:
    """The revision whose current UID decides who holds ``live``, or None if none does.

    Only a controller that is a revision of ``rev``'s kind, of an object naming ``rev``'s
    package, and not already known to be ``rev`` or a live sibling, needs a look-up.
    """
    refs = refs_of(live)
    controller = controller_of(refs)
    if controller is None or _known(refs, controller, rev):
        return None
    if controller.get("kind") != rev.kind or not names_package(refs, rev):
        return None
    return str(controller.get("name", ""))


def _known(refs: list[Ref], controller: Ref, rev: Revision) -> bool:
    return (controller.get("uid") == rev.uid
            or any(r.get("uid") == rev.package_uid for r in refs))


def hold_of(live: Mapping[str, Any], rev: Revision, current: Current) -> Hold:
    """Who holds ``live`` for ``rev``, given the current UIDs :func:`to_look_up` named.

    A controller whose revision was not looked up counts as live (a conflict unless the
    object names the package's current UID): a check that cannot be made fails closed.
    """
    refs = refs_of(live)
    controller = controller_of(refs)
    if controller is None or controller.get("uid") == rev.uid:
        return Hold.FREE
    if any(r.get("uid") == rev.package_uid for r in refs):
        return Hold.SIBLING
    name = to_look_up(live, rev)
    if name is not None and name in current and current[name] != controller.get("uid"):
        return Hold.STALE
    return Hold.FOREIGN


def stale_of(key: ObjectKey, live: Mapping[str, Any], current: Current) -> Stale:
    """The :class:`Stale` record of ``live``, whose holder :func:`hold_of` found stale."""
    controller = controller_of(refs_of(live)) or {}
    name = str(controller.get("name", ""))
    return Stale(key, str(controller.get("kind", "")), name, str(controller.get("uid", "")),
                 current.get(name))


def dead_uids(refs: list[Ref], rev: Revision) -> frozenset[str]:
    """The UIDs among ``refs`` a stale adoption drops: the stale controller's, and any
    reference to ``rev``'s package by name under another UID (package names are unique,
    so that package is gone)."""
    controller = controller_of(refs) or {}
    dead = {str(r.get("uid")) for r in refs if r.get("kind") == rev.package_kind
            and r.get("name") == rev.package_name and r.get("uid") != rev.package_uid}
    return frozenset(dead | {str(controller.get("uid"))}) if controller else frozenset(dead)


#: How many objects an adoption Event names before it only counts them.
NAMED = 3


def adoption_messages(stale: list[Stale]) -> list[str]:
    """One Event message per stale holder: the objects taken from it (a few named, all
    counted) and its old UID, sorted, so that a retry writes the same Events."""
    by_holder: dict[tuple[str, str, str, str | None], list[ObjectKey]] = {}
    for s in stale:
        by_holder.setdefault((s.kind, s.revision, s.uid, s.now), []).append(s.object)
    out = []
    for (kind, revision, uid, now), keys in sorted(by_holder.items(), key=str):
        names = ", ".join(str(k) for k in sorted(keys)[:NAMED])
        more = f" and {len(keys) - NAMED} more" if len(keys) > NAMED else ""
        objects = "1 object" if len(keys) == 1 else f"{len(keys)} objects"
        out.append(f"took control of {objects} from a stale owner, "
                   f"{Stale(keys[0], kind, revision, uid, now).message}: {names}{more}")
    return out
