"""``Definitions``: what the cluster says about ManagedResourceDefinitions, read cheaply.

MRDs carry whole CRD schemas (a 2,000-resource provider's are 100 MB), so they are listed
as the server prints them (the ``STATE`` and ``ESTABLISHED`` columns and the metadata),
and CRDs as metadata only. Used by establish_objects (which CRDs of a revision become MRDs,
in which state: a safe-start package's MRDs are Active when they are already, when their
type is served already, or when the activation policies in force name them, so those are
established with their CRDs in the install's one pass) and by the activation activity.
"""

from __future__ import annotations

from pathlib import Path

from lockwright import contracts as c
from lockwright.activities.base import meta, stream_objects
from lockwright.activities.contents import Contents
from lockwright.activities.reads import PackageReader
from lockwright.errors import KubeNotFound
from lockwright.k8s import WARNING, Kube, Obj
from lockwright.k8s.watch import list_all, list_columns
from lockwright.managed import convert, policy
from lockwright.managed.convert import MRD_PATH
from lockwright.managed.policy import Definition
from lockwright.objects.holders import controller_name

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PROVIDER_REVISIONS_PATH = "/apis/pkg.crossplane.io/v1/providerrevisions"


class Definitions:
    """Live MRDs and CRDs, and the conversion of a revision's CRDs."""

    def __init__(self, kube: Kube, reader: PackageReader, contents: Contents,
                 enabled: bool) -> None:
        self.kube = kube
        self.reader = reader
        self.contents = contents
        self.enabled = enabled  # Settings.managed_resource_definitions

    def conversion(self, kind: str, rev: Obj, digest: str,
                   documents: Path) -> convert.Conversion | None:
        """How this revision's CRDs are established; None: as plain CRDs (not a Provider,
        conversion off, or a CRD that cannot be an MRD: then a Warning Event says so)."""
        if not self.enabled or kind != c.PROVIDER:
            return None
        try:
            names = self._definition_names(documents)
        except convert.ConversionError as exc:
            self.reader.event(rev, WARNING, convert.REASON_CONVERT,
                              f"cannot convert CRDs to ManagedResourceDefinitions, installing "
                              f"them as CRDs: {exc}")
            return None
        capabilities = getattr(self.contents.summary(kind, rev, digest).meta,
                               "capabilities", ())
        if not convert.safe_start(capabilities):
            return convert.Conversion(default_active=True)
        live = self.active_names()
        by_policy = policy.at_install([policy.Policy.of(o) for o in self.policies()],
                                      names, live)
        return convert.Conversion(default_active=False, active=live | by_policy.keys(),
                                  activated=tuple(sorted(by_policy.items())))

    @staticmethod
    def _definition_names(documents: Path) -> list[str]:
        """The names of the package's CRDs that become MRDs, each checked.

        Raises:
            ConversionError: a CRD cannot be read as an MRD.
        """
        names = []
        for obj in stream_objects(documents):
            if convert.is_crd(obj) and convert.converts(obj):
                convert.check(obj)
                names.append(str((obj.get("metadata") or {}).get("name", "")))
        return names

    def policies(self) -> list[Obj]:
        """The activation policies in force: every one not being deleted (none while the
        policy CRD is not installed)."""
        try:
            listed = self.kube.list(convert.MRD_API_VERSION, convert.MRAP_KIND)
        except KubeNotFound:
            return []
        return [o for o in listed if not meta(o).get("deletionTimestamp")]

    def rows(self) -> list[Definition]:
        """Every MRD: name, state, controlling revision, Established status."""
        return [Definition(name=str(md.get("name", "")),
                           active=cells.get("STATE") == convert.ACTIVE,
                           controller=controller_name({"metadata": md}),
                           established=str(cells.get("ESTABLISHED") or ""))
                for cells, md in list_columns(self.kube, MRD_PATH)]

    def crd_names(self) -> set[str]:
        """The names of every CRD (metadata only)."""
        return set(self.crd_uids())

    def crd_uids(self) -> dict[str, str]:
        """Every CRD's UID by its name (metadata only)."""
        return {str(meta(o).get("name", "")): str(meta(o).get("uid", ""))
                for o in list_all(self.kube, CRD_PATH, metadata_only=True).items}

    def provider_revisions(self) -> list[Obj]:
        """Every Provider revision's metadata: its labels and annotations, not its status,
        which names every object it holds (4,000 for a 2,000-kind provider)."""
        return list_all(self.kube, PROVIDER_REVISIONS_PATH, metadata_only=True).items

    def active_names(self) -> frozenset[str]:
        """MRDs that are Active, and types already served as CRDs (a revision made before
        MRDs upgrading to one made after keeps serving them)."""
        return frozenset({d.name for d in self.rows() if d.active} | self.crd_names())
