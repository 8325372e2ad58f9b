"""One dry run per switch-over: what establish compares with its preparation's dry run.

An upgrade's preparation dry-runs every write of the new revision (as if active); its
switch, moments later, used to dry-run the same writes again before making them. Now the
preparation returns, per batch of objects, a fingerprint of what it dry-ran: every planned
write as it would be sent (the object, with the ``resourceVersion`` of the live object it
replaces) together with its basis (the package's digest, the package object's UID and
generation, and the Lock's entries but the revision's own). The switch's checking pass
fingerprints its own plan the same way and skips the dry run of a batch whose
fingerprint is the preparation's. Anything changed in between, an object written by
someone, the Lock, the package, gives another fingerprint, and that batch is dry-run
again (docs/design.md, "One dry run per switch-over").

An object written counts by what a write is checked against: the live object but its
``resourceVersion``, its ``managedFields`` and its status, of which only a CRD's
``storedVersions`` (which versions a CRD may drop) is kept. The API server's controllers
write a new CRD's status for minutes on a busy server (its ``Established`` and
``NamesAccepted`` conditions); counting those by ``resourceVersion`` had the switch of a
2,000-CRD provider dry-run 2,100 of its 4,000 writes again.

The worker that ran a preparation keeps what its checking pass found (:class:`Kept`), and
a switch of the same revision on that worker, over the same basis and fingerprints,
writes from it without reading every object again: each write still carries the
``resourceVersion`` the preparation read, so an object changed since is refused (409)
and read, planned, checked and dry-run again on its own (docs/design.md, "One dry run per
switch-over"). Another worker, or a retry, reads everything as before.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

import orjson

from lockwright.k8s import Obj
from lockwright.objects import establish as est
from lockwright.objects.lock import ObjectKey

#: Hex digits kept of each SHA-256: small in history, far beyond any collision by chance.
PRINT_HEX = 32
#: Preparations a worker keeps for their switch: upgrades in flight at once on one worker.
KEPT = 8

T = TypeVar("T")


class Kept(Generic[T]):
    """The last :data:`KEPT` preparations' checks, each under the key of its revision and
    the basis it was checked over; a switch takes its own once (thread-safe)."""

    def __init__(self, size: int = KEPT) -> None:
        self._size = size
        self._entries: OrderedDict[Hashable, tuple[object, T]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, key: Hashable, over: object, checked: T) -> None:
        """Keep ``checked``, found over ``over``, for ``key``'s switch."""
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (over, checked)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def take(self, key: Hashable, over: object) -> T | None:
        """``key``'s checks when they were found over ``over`` (equal), else None; either
        way they are dropped: a retry checks again."""
        with self._lock:
            kept = self._entries.pop(key, None)
        return kept[1] if kept is not None and kept[0] == over else None


def basis(package: Obj, lock: Obj, digest: str, revision: str) -> bytes:
    """What every batch's fingerprint starts from: the package and the Lock as they are.

    Args:
        package: the package object, as establish read it.
        lock: the Lock, as establish read it ({} when there is none).
        digest: the revision's package digest.
        revision: the revision's name; its own Lock entry is left out, since the switch
            writes it between the preparation and its establish.
    """
    meta = package.get("metadata") or {}
    others = sorted((e for e in lock.get("packages") or [] if e.get("name") != revision),
                    key=lambda e: str(e.get("name")))
    return orjson.dumps([digest, meta.get("uid"), meta.get("generation"), others],
                        option=orjson.OPT_SORT_KEYS)


def fingerprint(start: bytes, actions: list[est.Action],
                live: dict[ObjectKey, Obj] | None = None) -> str:
    """The fingerprint of one batch's planned writes over ``start`` (see :func:`basis`),
    each with the live object it replaces (``live``: by key; absent, none)."""
    digest = hashlib.sha256(start)
    found = live or {}
    for action in actions:
        digest.update(action.op.value.encode())
        digest.update(orjson.dumps(_unversioned(action.object), option=orjson.OPT_SORT_KEYS))
        digest.update(orjson.dumps(checked_against(found.get(action.key)),
                                   option=orjson.OPT_SORT_KEYS))
    return digest.hexdigest()[:PRINT_HEX]


def checked_against(live: Obj | None) -> Obj | None:
    """What of a live object the API checks a write against: all but its
    ``resourceVersion``, ``managedFields`` and status, save a CRD's ``storedVersions``."""
    if live is None:
        return None
    meta = {k: v for k, v in (live.get("metadata") or {}).items() if k not in _VOLATILE}
    stored = (live.get("status") or {}).get("storedVersions")
    return {**{k: v for k, v in live.items() if k not in ("metadata", "status")},
            "metadata": meta, **({"storedVersions": stored} if stored is not None else {})}


def _unversioned(obj: Obj) -> Obj:
    """A planned write without the ``resourceVersion`` it carries (the live one's)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


_VOLATILE = ("resourceVersion", "managedFields")
