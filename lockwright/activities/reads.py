"""Collaborators most activities share: the package objects, the registries, runtime configs.

Each is built once by :func:`activities.build` over the Kubernetes seam. Pull secrets are
read by :class:`Registries`, inside the activity that needs them, and go straight into a
registry client; they never reach a log line, an argument or a result (docs/design.md invariant 2).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from lockwright.activities.base import (
    PKG_V1,
    PKG_V1BETA1,
    kind_of,
    living,
    meta,
    revision_kind,
    spec,
)
from lockwright.errors import InvalidPackage, KubeNotFound, Unauthorized
from lockwright.images import imageconfig, secrets
from lockwright.k8s import Kube, Obj
from lockwright.names import LABEL_PACKAGE
from lockwright.oci.client import RegistryClient
from lockwright.runtime import external


class PackageReader:
    """Package objects and their revisions, read fresh (docs/design.md invariant 1), and Events."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def package(self, kind: str, name: str) -> Obj:
        """The package object.

        Raises:
            ObjectGone: it is gone or being deleted; nothing may be written for it.
        """
        return living(self.kube.get(PKG_V1, kind_of(kind), name), f"{kind_of(kind)} {name}")

    def revision(self, kind: str, name: str) -> Obj:
        """The revision object.

        Raises:
            ObjectGone: it is gone or being deleted; nothing may be written for it.
        """
        return living(self.kube.get(PKG_V1, revision_kind(kind), name),
                      f"{revision_kind(kind)} {name}")

    def revisions_of(self, kind: str, package: str, not_older_than: str = "") -> list[Obj]:
        """The package's revisions, lowest ``spec.revision`` first; consistent, or
        ``not_older_than`` a ``resourceVersion`` (``Kube.list``)."""
        items = self.kube.list(PKG_V1, revision_kind(kind),
                               label_selector=f"{LABEL_PACKAGE}={package}",
                               not_older_than=not_older_than)
        return sorted(items, key=lambda r: (int(spec(r).get("revision") or 0),
                                            meta(r).get("name", "")))

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record a Kubernetes Event about ``obj`` (never fails the activity)."""
        self.kube.create_event(obj, type_, reason, message)


class Registries:
    """Registry access as the ImageConfigs and the system namespace's pull Secrets say."""

    def __init__(self, kube: Kube, namespace: str, insecure: Iterable[str]) -> None:
        self.kube = kube
        self.namespace = namespace
        self.insecure = frozenset(insecure)

    def image_configs(self, *, cached: bool = False) -> list[Obj]:
        """Every ImageConfig, in list order (ties in matching go to the first).

        ``cached``: as the API server's watch cache holds them, for a runtime's
        configuration (docs/design.md, "Configuration read from the watch cache"); what
        decides a pull or a verification reads them consistently."""
        try:
            return self.kube.list(PKG_V1BETA1, "ImageConfig", cached=cached)
        except KubeNotFound:
            return []

    def resolution(self, image: str, *, cached: bool = False) -> imageconfig.Resolution:
        """What the ImageConfigs say about ``image`` (rewrite, pull secret, runtime);
        ``cached`` as for :meth:`image_configs`."""
        return imageconfig.resolve(self.image_configs(cached=cached), image)

    def for_pull(self, image: str) -> tuple[imageconfig.Resolution, list[Obj]]:
        """What the ImageConfigs say about ``image`` to be pulled, and the ImageConfigs,
        read once and consistently: its rewrite and its verification (:meth:`Verifier.verify`)
        are decided on one view of them."""
        configs = self.image_configs()
        return imageconfig.resolve(configs, image), configs

    def registry(self, pull_secrets: list[str]) -> RegistryClient:
        """A registry client holding the credentials of ``pull_secrets`` (system namespace)."""
        return secrets.registry_client(self.secret, self.namespace, pull_secrets, self.insecure)

    def secret(self, name: str) -> Obj | None:
        """A Secret of the system namespace, or None."""
        return self.kube.get("v1", "Secret", name, self.namespace)

    @contextlib.contextmanager
    def naming_missing_secrets(self, pull_secrets: list[str]) -> Iterator[None]:
        """When the registry refuses us, say which named pull Secrets do not exist.

        Checked only after a refusal, so a pull that needs no credentials costs nothing.
        """
        try:
            yield
        except Unauthorized as err:
            missing = [f"{self.namespace}/{n}" for n in dict.fromkeys(pull_secrets)
                       if self.kube.get("v1", "Secret", n, self.namespace) is None]
            if not missing:
                raise
            raise Unauthorized(f"{err.message}; pull secret {', '.join(missing)} not found: "
                               "create it and the package is retried at once") from err


class RuntimeConfigs:
    """Which DeploymentRuntimeConfig a revision's runtime uses (docs/crossplane.md §13.1 step 3)."""

    def __init__(self, kube: Kube, registries: Registries,
                 package_runtime: str = external.DEPLOYMENT) -> None:
        """Read DeploymentRuntimeConfigs for a ``Deployment`` ``package_runtime``; under
        ``External`` none is read (the runtime's controller has its own config)."""
        self.kube = kube
        self.registries = registries
        self.external = external.is_external(package_runtime)

    def runtime_config(self, rev: Obj, required: bool = True,
                       resolution: imageconfig.Resolution | None = None
                       ) -> tuple[Obj | None, dict[str, str] | None]:
        """The DRC and, when an ImageConfig chose it, that ImageConfig's applied ref.

        None and None under the External runtime: no DRC is read. A ref to another kind
        names no DRC (required, it is refused as Crossplane refuses it). ``resolution``:
        what the ImageConfigs say of the revision's image, when the caller has read them.

        Raises:
            KubeNotFound: ``required`` and the referenced DRC does not exist.
            InvalidPackage: ``required`` and the ref names another apiVersion and kind.
        """
        return self.for_image(str(spec(rev).get("image", "")),
                              spec(rev).get("runtimeConfigRef"), required, resolution)

    def for_image(self, image: str, own_ref: Obj | None, required: bool = True,
                  resolution: imageconfig.Resolution | None = None
                  ) -> tuple[Obj | None, dict[str, str] | None]:
        """:meth:`runtime_config` of a runtime for ``image`` whose package or revision
        names ``own_ref`` (``runtimeConfigRef``; an ImageConfig's for the image wins)."""
        if self.external:
            return None, None
        if resolution is None:
            resolution = self.registries.resolution(image, cached=True)
        chosen = next((r for r in resolution.applied
                       if r["reason"] == imageconfig.Reason.CONFIGURE_RUNTIME.value), None)
        ref = resolution.runtime_config_ref or own_ref or {"name": "default"}
        if not external.is_deployment_runtime_config(ref):
            if required:
                raise InvalidPackage(f"{external.MSG_UNKNOWN_KIND}: {ref.get('kind')} "
                                     f"{ref.get('name')!r} of {ref.get('apiVersion')} (the "
                                     "Deployment runtime reads DeploymentRuntimeConfigs; "
                                     "name one, or run the worker with "
                                     "LOCKWRIGHT_PACKAGE_RUNTIME=External)")
            return None, chosen
        drc = self.kube.get(PKG_V1BETA1, "DeploymentRuntimeConfig", str(ref["name"]))
        if drc is None and required:
            raise KubeNotFound("cannot get referenced deployment runtime config: "
                               f"DeploymentRuntimeConfig {ref['name']!r} not found")
        return drc, chosen
