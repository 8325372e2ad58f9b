"""API identity at install: the revision's digests, and the package's API pin.

Run by ``parse_package``, the step every install and every upgrade's preparation makes
before the Lock and before any object is written:

- :meth:`Identity.annotations` gives ``lockwright.dev/api-digest``, ``base-layer`` and
  ``controller-digest`` that moved, which the parse writes on the revision with the
  package's own labels and annotations, in one write (``lockwright.identity.record``).
  The API digest comes from the package's summary, which took each type digest in the
  parse's one pass over ``documents.jsonl``; the base layer from the cache entry (what the
  fetch read);
  the controller digest is the runtime image's: the package digest when the package image
  is the runtime, else the image a DeploymentRuntimeConfig or ``spec.controller.image``
  names, resolved through the registry with the package's ImageConfig rewrite and pull
  Secrets (or taken from the reference when it has one). A Configuration has none; an
  image that cannot be resolved records none, and a log line says why.
- :meth:`Identity.check_pin` refuses a revision whose API digest is not the one the
  package's ``lockwright.dev/pin-api-digest`` pins (``lockwright.identity.pin``), with
  ``PreflightError``: permanent, written on the revision's and the package's conditions.
  :meth:`Identity.pin_refusal` is the same check as words, for ``lockwright plan
  --package``, whose candidate is refused in its plan rather than failed.
"""

from __future__ import annotations

from lockwright import contracts as c
from lockwright.activities.base import kind_of, log, meta, secret_names, spec
from lockwright.activities.contents import Contents
from lockwright.activities.reads import PackageReader, Registries, RuntimeConfigs
from lockwright.errors import LockwrightError, PreflightError
from lockwright.identity import names, pin, record
from lockwright.k8s import Kube, Obj
from lockwright.names import LABEL_PACKAGE
from lockwright.oci.reference import parse
from lockwright.runtime.manifests import runtime_image
from lockwright.xpkg.parse import PackageSummary


class Identity:
    """Record a revision's API identity; hold it to its package's pin."""

    def __init__(self, kube: Kube, reader: PackageReader, contents: Contents,
                 registries: Registries, runtime_configs: RuntimeConfigs) -> None:
        self.kube = kube
        self.reader = reader
        self.contents = contents
        self.registries = registries
        self.runtime_configs = runtime_configs

    def annotations(self, kind: str, rev: Obj, digest: str,
                    summary: PackageSummary) -> dict[str, str | None]:
        """The revision's API, base-layer and controller digests that moved, as annotations
        to merge-patch (None removes one; {} when none moved); the caller writes them with
        the rest of the revision's metadata."""
        base = self.contents.base_layer(kind, rev, digest)
        body = record.revision_patch(meta(rev).get("annotations"), summary.api_digest, base,
                                     self.controller_digest(kind, rev, digest, summary))
        if body and not base:
            log(revision=meta(rev).get("name"), digest=digest).info(
                "identity.no_base_layer", reason="the package marks no base layer: its "
                "package.yaml was read from all its layers")
        return body

    def controller_digest(self, kind: str, rev: Obj, digest: str,
                          summary: PackageSummary) -> str:
        """The digest of the runtime image the revision runs; "" when it has none or the
        image cannot be resolved (a log line says why)."""
        if kind_of(kind) == "Configuration":
            return ""
        drc, _ = self.runtime_configs.runtime_config(rev, required=False)
        image = runtime_image(drc, getattr(summary.meta, "controller_image", None)
                              or getattr(summary.meta, "image", None))
        if image is None:
            return digest  # the package's own image is the runtime
        try:
            return self.resolve(rev, image)
        except LockwrightError as err:
            log(revision=meta(rev).get("name"), digest=digest).warning(
                "identity.controller_unresolved", image=image, reason=err.message)
            return ""

    def resolve(self, rev: Obj, image: str) -> str:
        """``image``'s digest: from the reference, else from its registry, as a package's
        (ImageConfig rewrite and pull Secret, the revision's pull Secrets). The ImageConfigs
        as the watch cache holds them, where the runtime's pull Secret is found too
        (docs/design.md, "Configuration read from the watch cache")."""
        named = parse(image)
        if named.digest:
            return named.digest
        resolution = self.registries.resolution(image, cached=True)
        secrets = secret_names(spec(rev).get("packagePullSecrets"))
        secrets += [resolution.pull_secret] if resolution.pull_secret else []
        with self.registries.naming_missing_secrets(secrets):
            return self.registries.registry(secrets).resolve(parse(resolution.resolved))

    def check_pin(self, kind: str, rev: Obj, summary: PackageSummary) -> None:
        """Refuse the revision when its package pins another API.

        Raises:
            PreflightError: the pin differs (naming both digests, the types that differ
                from the active revision and the fix), or is not a digest.
        """
        refused = self.pin_refusal(kind, _package_of(rev), rev, summary)
        if refused:
            raise PreflightError(refused)

    def pin_refusal(self, kind: str, package: str, rev: Obj, summary: PackageSummary) -> str:
        """Why package ``package``'s pin refuses ``rev`` (one of its revisions, or the one
        an apply would make); "" when it does not."""
        pkg = self.reader.package(kind, package) if package else {}
        pinned = str((meta(pkg).get("annotations") or {}).get(names.PIN_API, ""))
        verdict = pin.decide(pinned, summary.api_digest)
        what = f"{kind_of(kind)} {package}"
        if verdict is pin.Verdict.MALFORMED:
            return pin.malformed(what, pinned)
        if verdict is pin.Verdict.REFUSE:
            return self.refusal(kind, package, rev, summary, pinned).message
        return ""

    def refusal(self, kind: str, package: str, rev: Obj, summary: PackageSummary,
                pinned: str) -> pin.Refused:
        """The refusal, compared type by type with the package's active revision."""
        what = f"{kind_of(kind)} {package}"
        active = next((r for r in self.reader.revisions_of(kind, package)
                       if spec(r).get("desiredState") == c.ACTIVE), None)
        name, active_name = str(meta(rev)["name"]), str(meta(active).get("name", ""))
        refused = pin.Refused(what, name, pinned.strip(), summary.api_digest, active_name)
        active_digest = str((meta(active).get("annotations") or {}).get(
            c.DIGEST_ANNOTATION, ""))
        if active is None or active_name == name or not active_digest:
            return refused
        try:
            before = self.contents.summary(kind, active, active_digest).types
        except LockwrightError as err:  # the refusal stands; only the listing is lost
            log(revision=name).warning("identity.active_types_unread", reason=err.message)
            return refused
        return pin.Refused(what, name, pinned.strip(), summary.api_digest, active_name,
                           tuple(pin.differences(before, summary.types)))


def _package_of(rev: Obj) -> str:
    """The name of the revision's package (its ``pkg.crossplane.io/package`` label)."""
    return str((meta(rev).get("labels") or {}).get(LABEL_PACKAGE, ""))
