"""What a package's revision says: its spec, as created and as brought up to date.

Pure decisions over plain objects (reference §9 step 11): a revision is created Inactive
with a controller reference to its package and numbered one above the highest; an
existing one is renumbered when it is not the newest and gets the package's changed
fields. ``ensure_revision`` carries them out.
"""

from __future__ import annotations

from typing import Any

from lockwright import names

Obj = dict[str, Any]
PKG_V1 = "pkg.crossplane.io/v1"
INACTIVE = "Inactive"
#: The package's fields every revision copies.
COPIED = ("packagePullSecrets", "packagePullPolicy", "ignoreCrossplaneConstraints",
          "skipDependencyResolution", "commonLabels", "commonAnnotations")
#: The fields only a revision with a Deployment runtime has.
RUNTIME_FIELDS = ("runtimeConfigRef", "tlsServerSecretName", "tlsClientSecretName")
KINDS_WITH_RUNTIME = ("Provider", "Function")


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


def new_revision(revision_kind: str, name: str, metadata: Obj, owner: Obj, wanted: Obj,
                 number: int) -> Obj:
    """A new Inactive revision numbered ``number``, controlled by ``owner``.

    Args:
        metadata: its ``labels`` and ``annotations``.
    """
    return {"apiVersion": PKG_V1, "kind": revision_kind,
            "metadata": {"name": name, **metadata, "ownerReferences": [owner]},
            "spec": {**wanted, "desiredState": INACTIVE, "revision": number}}


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
    patch: Obj = {k: v for k, v in wanted.items() if current.get(k) != v}
    patch.update({k: None for k in (*COPIED, *RUNTIME_FIELDS)
                  if k not in wanted and k in current})
    if number != current.get("revision"):
        patch["revision"] = number
    body: Obj = {"spec": patch} if patch else {}
    changed = {key: values for key, values in metadata.items()
               if any((rev["metadata"].get(key) or {}).get(k) != v for k, v in values.items())}
    if changed:
        body["metadata"] = changed
    return body, number
