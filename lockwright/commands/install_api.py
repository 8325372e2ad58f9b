"""``lockwright install --api API``: install the package that serves an API.

First the cluster: a CRD serving the API means it is served already (exit 0 naming the
package whose revision owns it); an Inactive MRD serving it is made Active, as an
activation policy would make it (exit 0 naming it). Otherwise the package indexes are
read (:func:`commands.search.read_indexes`) and the highest semantic version of the one
repository serving the API is installed (:func:`lockwright.index.search.choose`: several
repositories need ``--repository``; none names the indexes searched; both exit 1), with the
package annotated with the API and the index it came from. It is installed by the digest the
index lists, as ``repository:tag@digest`` (:mod:`lockwright.index.vouch`); a tag that now
points to another digest is refused (exit 1, both digests and the fix named), and so is an
entry that lists no digest.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from lockwright.commands import common

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.


#: ``commands.install.create``: make the package object and follow it (passed in, as
#: ``install`` imports this module).
Create = Callable[..., int]


def run_api(args: argparse.Namespace, create: Create) -> int:
    """Install by API; see the module."""
    from lockwright.identity.apis import parse

    api = parse(args.api)
    s = common.settings(args)
    kube = common.kube(s)
    try:
        if (done := _already(kube, api)) is not None:
            print(done)
            return 0
        return _from_index(args, s, kube, api, create)
    finally:
        kube.close()


def _already(kube: Any, api: Any) -> str | None:
    """What the cluster does about ``api`` already, said, or None when nothing serves it."""
    from lockwright.index.cluster import INACTIVE, in_cluster
    from lockwright.managed.convert import (
        ACTIVE,
        CRD_API_VERSION,
        CRD_KIND,
        MRD_API_VERSION,
        MRD_KIND,
    )

    found = in_cluster(api, _definitions(kube, CRD_API_VERSION, CRD_KIND, api),
                       _definitions(kube, MRD_API_VERSION, MRD_KIND, api))
    if found is None:
        return None
    owner = _package_of(kube, found.revision)
    if found.state == INACTIVE:
        kube.patch(MRD_API_VERSION, MRD_KIND, found.definition, {"spec": {"state": ACTIVE}})
        return (f"API {api} is served by the Inactive ManagedResourceDefinition "
                f"{found.definition}{owner}: made it Active")
    return f"API {api} is already served by {found.definition}{owner}"


def _definitions(kube: Any, api_version: str, kind: str, api: Any) -> list[dict[str, Any]]:
    """The definitions that may serve ``api``: the one named by a plural form, else all."""
    from lockwright.errors import KubeNotFound
    from lockwright.index.cluster import definition_name

    name = definition_name(api)
    try:
        if name:
            found = kube.get(api_version, kind, name)
            return [found] if found else []
        return list(kube.list(api_version, kind))
    except KubeNotFound:  # no such API in this cluster (no MRDs before Crossplane v2)
        return []


def _package_of(kube: Any, revision: tuple[str, str] | None) -> str:
    """`` (provider/NAME)``: the package of the owning revision, or ""."""
    from lockwright.names import LABEL_PACKAGE

    if revision is None:
        return ""
    kind, name = revision
    obj = kube.get(common.PKG_API, kind, name) or {}
    package = ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_PACKAGE, "")
    short = kind.removesuffix("Revision").lower()
    return f" ({short}/{package})" if package else f" ({kind} {name})"


def _from_index(args: argparse.Namespace, s: Any, kube: Any, api: Any, create: Create) -> int:
    from lockwright.commands.search import index_reader
    from lockwright.identity.names import INSTALLED_FOR_API, INSTALLED_FROM_INDEX
    from lockwright.index.model import merged
    from lockwright.index.search import choose
    from lockwright.index.vouch import moved, pinned, unlisted
    from lockwright.names import package_name_from_reference

    reader = index_reader(s, kube)
    entry = choose(merged(reader.read()), api, s.package_indexes, args.repository)
    kind = entry.kind.lower()
    if kind not in common.KINDS:
        return common.fail(f"{entry.reference} is a {entry.kind!r}, not a package kind")
    if problem := unlisted(entry) or moved(entry, reader.tag_digest(entry.reference)):
        return common.fail(f"refusing to install API {api}: {problem}")
    ref = common.PackageRef(kind, args.name or package_name_from_reference(entry.reference))
    print(f"API {api} is served by {entry.reference} ({entry.kind} {entry.name}, from index "
          f"{entry.index}, digest {entry.digest})", flush=True)
    return create(args, s, kube, ref, pinned(entry),
                  {INSTALLED_FOR_API: str(api), INSTALLED_FROM_INDEX: entry.index})
