"""What a package's revision says: its spec, as created and as brought up to date.

Pure decisions over plain objects (docs/crossplane.md §9 step 11): a revision is created Inactive
(a package's first, Active when its workflow asks) with a controller reference to its
package and numbered one above the highest; an
existing one is renumbered when it is not the newest and gets the package's changed
fields. When one revision becomes active, which others retire, which old ones are
collected and which Lock entries a gone package leaves are decided here too; the
activities carry them out.
"""

from __future__ import annotations

from typing import Any

from lockwright import names
from lockwright.names import ACTIVE, INACTIVE
from lockwright.names import PKG_API_VERSION as PKG_V1

Obj = dict[str, Any]
#: The package's fields every revision copies.
COPIED = ("packagePullSecrets", "packagePullPolicy", "ignoreCrossplaneConstraints",
          "skipDependencyResolution", "commonLabels", "commonAnnotations")
#: The fields only a revision with a Deployment runtime has.
RUNTIME_FIELDS = ("runtimeConfigRef", "tlsServerSecretName", "tlsClientSecretName")
KINDS_WITH_RUNTIME = ("Provider", "Function")
#: How revisions are named (the worker's ``revision_names`` setting): by the digest and the
#: package's generation (Crossplane main), or by the digest alone (Crossplane ≤ v2.4).
BY_GENERATION, BY_DIGEST = "Generation", "Digest"
NAMINGS = (BY_GENERATION, BY_DIGEST)
#: A revision's annotations: the package generation and the package object (its UID) it
#: was made for, or kept at.
GENERATION_ANNOTATION = "lockwright.dev/package-generation"
PACKAGE_UID_ANNOTATION = "lockwright.dev/package-uid"
DIGEST_ANNOTATION = "lockwright.dev/digest"


def current_name(package: str, digest: str, generation: int, pkg: Obj, revs: list[Obj],
                 wanted: Obj, naming: str = BY_GENERATION,
                 adopted: frozenset[str] = frozenset()) -> str:
    """The name of ``pkg``'s revision for ``digest`` at ``generation``.

    By generation, an existing revision of ``digest`` under another name stays the
    package's revision until the package's next spec change (docs/design.md, "Revision
    names"), so neither upgrading lockwright nor re-creating a package switches it:
    :func:`kept` says which.

    Args:
        package: the package's name.
        digest: the digest the pass resolved.
        generation: the package's generation the pass resolved it at.
        pkg: the package object.
        revs: the package's revisions.
        wanted: the revision spec the package asks for (:func:`revision_spec`).
        naming: :data:`BY_GENERATION` or :data:`BY_DIGEST`.
        adopted: the revisions this pass adopted (another package object controlled them).
    """
    legacy = names.digest_revision_name(package, digest)
    if naming == BY_DIGEST:
        return legacy
    name = names.revision_name(package, digest, generation)
    if any(r["metadata"]["name"] == name for r in revs):
        return name
    current = str((pkg.get("status") or {}).get("currentRevision") or "")
    uid = str((pkg.get("metadata") or {}).get("uid") or "")
    for rev in revs:
        rname = str(rev["metadata"]["name"])
        ours = _annotations(rev).get(DIGEST_ANNOTATION) == digest or rname == legacy
        if ours and kept(rev, wanted, generation, uid, rname in adopted
                         or (rname == legacy and current == legacy)):
            return rname
    return name


def kept(rev: Obj, wanted: Obj, generation: int, uid: str, unrecorded_ok: bool) -> bool:
    """Whether ``rev``, a revision of the pass's digest under another name, stays the
    package's at ``generation``.

    Recorded for this package object (:data:`PACKAGE_UID_ANNOTATION`): only at the
    generation recorded. Recorded for another package object (the package was deleted
    with its revisions orphaned, or restored from a backup) and Active; or adopted from
    one, or named by its digest and the package's current revision, made before revisions
    were named by generation (``unrecorded_ok``): while its spec already says all
    ``wanted`` does.
    """
    notes = _annotations(rev)
    recorded, owner = notes.get(GENERATION_ANNOTATION), notes.get(PACKAGE_UID_ANNOTATION)
    if recorded is not None and owner in (None, uid):
        return str(recorded) == str(generation)
    elsewhere = owner is not None and owner != uid
    active = (rev.get("spec") or {}).get("desiredState") == ACTIVE
    return ((elsewhere and active) or unrecorded_ok) and not spec_changes(
        rev.get("spec") or {}, wanted)


def _annotations(rev: Obj) -> dict[str, str]:
    return dict((rev.get("metadata") or {}).get("annotations") or {})


def spec_changes(current: Obj, wanted: Obj) -> Obj:
    """The fields of a revision's spec ``current`` that ``wanted`` sets otherwise, with
    copied or runtime fields it no longer wants set to None (the number left out)."""
    patch: Obj = {k: v for k, v in wanted.items() if current.get(k) != v}
    patch.update({k: None for k in (*COPIED, *RUNTIME_FIELDS)
                  if k not in wanted and k in current})
    return patch


def revision_spec(package_kind: str, pkg: Obj, source: str, deployment_runtime: bool) -> Obj:
    """The spec of ``pkg``'s revision for ``source``: the image and the fields copied from
    the package, and under the Deployment runtime its runtime config and TLS Secrets.

    The image is ``source``, what the pass resolved the revision's digest from, not what
    the package says now: a spec changed since the pass read it must not relabel it.

    Args:
        package_kind: ``Provider``, ``Configuration`` or ``Function``.
        pkg: the package object.
        source: the reference the digest was resolved from ('' falls back to the spec's).
        deployment_runtime: the worker runs packages' runtimes as Deployments.
    """
    s, package = pkg.get("spec") or {}, str(pkg["metadata"]["name"])
    wanted: Obj = {"image": source or s.get("package")}
    wanted.update({k: s[k] for k in COPIED if s.get(k) is not None})
    if package_kind in KINDS_WITH_RUNTIME and deployment_runtime:
        wanted["runtimeConfigRef"] = s.get("runtimeConfigRef") or {"name": "default"}
        wanted["tlsServerSecretName"] = names.tls_server_secret_name(package)
        if package_kind == "Provider":
            wanted["tlsClientSecretName"] = names.tls_client_secret_name(package)
    return wanted


def package_owner(package_kind: str, pkg: Obj) -> Obj:
    """The controller reference a revision holds to its package (blocks its deletion)."""
    return {"apiVersion": PKG_V1, "kind": package_kind, "name": pkg["metadata"]["name"],
            "uid": pkg["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def adopted_owners(refs: list[Obj], package_kind: str, pkg: Obj) -> list[Obj] | None:
    """A revision's owner references once ``pkg`` adopts it, or None to leave it as is.

    A revision nobody controls (its package deleted with ``propagationPolicy: Orphan``, or
    restored by a tool that drops owner references, as Velero does) is adopted. So is one
    whose controller is this package's name under another UID: that package is gone
    (names are unique), as after a restore from a backup, and its reference is dropped.
    Any other controller keeps it.
    """
    controller = next((r for r in refs if r.get("controller")), None)
    name, uid = pkg["metadata"]["name"], pkg["metadata"]["uid"]
    if controller is not None and not (controller.get("kind") == package_kind
                                       and controller.get("name") == name
                                       and controller.get("uid") != uid):
        return None
    kept = [r for r in refs if not (r.get("kind") == package_kind and r.get("name") == name)]
    return [*kept, package_owner(package_kind, pkg)]


def new_revision(revision_kind: str, name: str, metadata: Obj, owner: Obj, wanted: Obj,
                 number: int, desired_state: str = INACTIVE) -> Obj:
    """A new revision numbered ``number``, controlled by ``owner``, Inactive unless told.

    Args:
        metadata: its ``labels`` and ``annotations``.
    """
    return {"apiVersion": PKG_V1, "kind": revision_kind,
            "metadata": {"name": name, **metadata, "ownerReferences": [owner]},
            "spec": {**wanted, "desiredState": desired_state, "revision": number}}


def refresh(rev: Obj, wanted: Obj, top: int, metadata: Obj) -> tuple[Obj, int]:
    """The patch bringing an existing revision up to date, and its number after it.

    A revision below the newest (``top``) is numbered one above it; fields of ``wanted``
    that differ are set, copied or runtime fields it no longer wants removed, and
    ``metadata``'s labels and annotations set where they differ. The patch is empty
    when the revision already says all that.

    Args:
        rev: the revision as read.
        wanted: its spec from :func:`revision_spec`.
        top: the highest revision number of the package.
        metadata: the ``labels`` and ``annotations`` it must carry.
    """
    current = rev.get("spec") or {}
    number = int(current.get("revision") or 0)
    number = top + 1 if number < top else number
    patch = spec_changes(current, wanted)
    if number != current.get("revision"):
        patch["revision"] = number
    body: Obj = {"spec": patch} if patch else {}
    changed = {key: values for key, values in metadata.items()
               if any((rev["metadata"].get(key) or {}).get(k) != v for k, v in values.items())}
    if changed:
        body["metadata"] = changed
    return body, number


def controls(obj: Obj, uid: str) -> bool:
    """True when ``obj``'s controller reference is to the object of ``uid``."""
    return any(r.get("uid") == uid and r.get("controller")
               for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


def retirable(rev: Obj, running: list[Obj], locked: set[str]) -> bool:
    """Active, or still running a runtime or holding a Lock entry (a switch's old one).

    Args:
        running: the runtime Deployments of the system namespace.
        locked: the revision names the Lock has entries for.
    """
    uid = str(rev["metadata"]["uid"])
    return ((rev.get("spec") or {}).get("desiredState") == ACTIVE
            or rev["metadata"]["name"] in locked or any(controls(d, uid) for d in running))


def collectable(others: list[Obj], keep: int) -> list[Obj]:
    """The oldest inactive revisions beyond the ``keep`` newest of ``others`` (lowest
    ``spec.revision`` first, the current revision left out)."""
    return [r for r in others[:max(0, len(others) - keep)]
            if (r.get("spec") or {}).get("desiredState") != ACTIVE]


def owned_by_package(rev: Obj, package_kind: str, package: str) -> bool:
    """True when ``rev`` names the package as an owner.

    Any UID: after the package is gone its revisions still name it until collected.
    """
    return any(r.get("kind") == package_kind and r.get("name") == package
               for r in (rev.get("metadata") or {}).get("ownerReferences") or [])


def gone_entries(lock: Obj, package_kind: str, package: str, staying: set[str]) -> list[str]:
    """The Lock entries of the package's revisions that are not ``staying``.

    An entry is the package's when its name is ``<package>-<12 hex>``, as both namings
    (by digest, by generation) form it.
    """
    return [str(e["name"]) for e in lock.get("packages") or []
            if (e.get("kind") or e.get("type")) == package_kind and e["name"] not in staying
            and names.is_revision_name_of(package, str(e["name"]))]
