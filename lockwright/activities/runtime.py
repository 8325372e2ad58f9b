"""Runtime of Providers and Functions: TLS Secrets, ServiceAccount, Service, Deployment, health.

Manifests come from ``lockwright.runtime.manifests`` and ``lockwright.runtime.tls``; this module only reads
what they need and writes what they return. Runtime objects are server-side applied with
one field manager and ``force``, so a re-run changes nothing and a stale field is taken
back. With ``package_runtime=External`` nothing is deployed or issued (no TLS Secrets, no
ServiceAccount, Service or Deployment) and health is whatever the external controller
wrote as ``RuntimeHealthy`` (docs/crossplane.md §13, :mod:`lockwright.runtime.external`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from lockwright import contracts as c
from lockwright.activities.base import (
    DEPLOYMENT_RUNTIME,
    deployment_name,
    kind_of,
    log,
    meta,
    revision_kind,
    secret_names,
    service_name,
    spec,
)
from lockwright.activities.contents import Contents
from lockwright.activities import health
from lockwright.activities.errors import defn, edge
from lockwright.activities.reads import PackageReader, Registries, RuntimeConfigs
from lockwright import names
from lockwright.errors import KubeAlreadyExists, KubeConflict
from lockwright.images import imageconfig
from lockwright.k8s import Kube, Obj
from lockwright.runtime import external, tls
from lockwright.runtime import manifests as runtime

SecretData = dict[str, str]
HEALTH_OBSERVE_S = 2.0
HEALTH_OBSERVE_POLL_S = 0.05
#: Crossplane's ServiceAccount in the system namespace: runtimes get its pull Secrets.
CROSSPLANE_SERVICE_ACCOUNT = "crossplane"


class RuntimeActivities:
    """TLS, runtime objects and their health."""

    def __init__(self, kube: Kube, reader: PackageReader, contents: Contents,
                 registries: Registries, runtime_configs: RuntimeConfigs, namespace: str,
                 package_runtime: str,
                 crossplane_service_account: str = CROSSPLANE_SERVICE_ACCOUNT) -> None:
        """Run runtimes in ``namespace`` as ``package_runtime`` (``Deployment``/``External``)."""
        self.kube = kube
        self.reader = reader
        self.contents = contents
        self.runtime_configs = runtime_configs
        self.registries = registries
        self.namespace = namespace
        self.package_runtime = package_runtime
        self.crossplane_service_account = crossplane_service_account

    @defn(name=c.ENSURE_TLS)
    @edge
    def ensure_tls(self, inp: c.EnsureTlsInput) -> c.EnsureTlsResult:
        """Keep the root CA and the package's server (and provider client) Secrets valid.

        Not under the External runtime: its controller issues them and says so in the
        revision's status (Crossplane's contract), so lockwright writes neither.
        """
        if external.is_external(self.package_runtime):
            return c.EnsureTlsResult()
        rev = self.reader.revision(inp.kind, inp.revision)
        drc, _ = self.runtime_configs.runtime_config(rev, required=False)
        now = datetime.now(UTC)
        ca = self.ensure_secret(tls.ROOT_CA_SECRET, lambda d: tls.ensure_ca(d, now), [])
        owners = list(meta(rev).get("ownerReferences") or [])
        server = str(spec(rev).get("tlsServerSecretName")
                     or names.tls_server_secret_name(inp.package))
        svc = service_name(inp.package, drc)
        self.ensure_secret(server, lambda d: tls.ensure_server_cert(d, ca, svc, self.namespace,
                                                                    now), owners)
        client = ""
        if kind_of(inp.kind) == "Provider":
            client = str(spec(rev).get("tlsClientSecretName")
                         or names.tls_client_secret_name(inp.package))
            self.ensure_secret(client, lambda d: tls.ensure_client_cert(d, ca, inp.revision,
                                                                        now), owners)
        status = {"tlsServerSecretName": server, **({"tlsClientSecretName": client}
                                                    if client else {})}
        self.patch_status_if_changed(inp.kind, rev, status)
        return c.EnsureTlsResult(server_secret=server, client_secret=client)

    def ensure_secret(self, name: str, make: Callable[[SecretData | None], SecretData],
                      owners: list[Obj]) -> SecretData:
        """Create or refresh one TLS Secret with ``make(current data)``; keys stay inside."""
        for _ in range(3):
            live = self.kube.get("v1", "Secret", name, self.namespace)
            current = (live or {}).get("data")
            data = make(current)
            refs = tls.with_owners(meta(live).get("ownerReferences") or [], owners)
            if live is not None and data == current and refs == meta(live).get(
                    "ownerReferences", []):
                return data
            try:
                if live is None:
                    self.kube.create(tls.secret_manifest(name, self.namespace, data,
                                                         owners or None))
                else:
                    # Owners too: a Secret orphaned by its old package is adopted.
                    self.kube.update({**live, "type": tls.SECRET_TYPE, "data": data,
                                      "metadata": {**meta(live), "ownerReferences": refs}})
                return data
            except (KubeAlreadyExists, KubeConflict):
                continue  # another install wrote it first: use theirs if it is valid
        raise KubeConflict(f"Secret {name} kept changing while being written")

    def patch_status_if_changed(self, kind: str, rev: Obj, fields: Obj) -> None:
        """Merge ``fields`` into the revision's status unless they already read so."""
        status = rev.get("status") or {}
        if all(status.get(k) == v for k, v in fields.items()):
            return
        self.kube.patch("pkg.crossplane.io/v1", revision_kind(kind), str(meta(rev)["name"]),
                        {"status": fields}, subresource="status")

    @defn(name=c.ENSURE_RUNTIME)
    @edge
    def ensure_runtime(self, inp: c.EnsureRuntimeInput) -> c.EnsureRuntimeResult:
        """Apply the runtime's ServiceAccount, Service and Deployment (Deployment runtime)."""
        if self.package_runtime != DEPLOYMENT_RUNTIME:
            return c.EnsureRuntimeResult()
        rev = self.reader.revision(inp.kind, inp.revision)
        # One read of the ImageConfigs for both: the DRC one may choose, and the rendering.
        resolution = self.registries.resolution(str(spec(rev).get("image") or inp.source),
                                                cached=True)
        drc, chosen = self.runtime_configs.runtime_config(rev, resolution=resolution)
        rin = self.runtime_input(inp, rev, resolution)
        sa_live = self.kube.get("v1", "ServiceAccount", runtime.service_account_name(rin, drc),
                                self.namespace)
        sa = runtime.render_service_account(
            rin, drc, secret_names((sa_live or {}).get("imagePullSecrets")))
        # Safe-start: zero replicas until an MRD is Active, never back to zero after.
        zero = inp.awaiting_activation and not runtime.has_run(self.kube.get(
            "apps/v1", "Deployment", deployment_name(inp.revision, drc), self.namespace))
        deployment = runtime.render_deployment(rin, drc, awaiting_activation=zero)
        service = runtime.render_service(rin, drc)
        if runtime.manages_service_account(deployment, sa):
            self.kube.apply(sa, force=True)  # before the pods that run as it
        version = meta(self.apply_side_by_side([service, deployment])[1]).get("resourceVersion")
        self.runtime_status(inp, rev, service, chosen)
        log(package=inp.package, revision=inp.revision, digest=inp.digest).info(
            "runtime.applied", deployment=deployment["metadata"]["name"])
        return c.EnsureRuntimeResult(deployment=deployment["metadata"]["name"],
                                     service_account=sa["metadata"]["name"],
                                     service=service["metadata"]["name"], scaled_to_zero=zero,
                                     resource_version=str(version or ""))

    def apply_side_by_side(self, objs: list[Obj]) -> list[Obj]:
        """Server-side apply ``objs`` at once (none refers to another's existence), each
        awaited; their answers, in order."""
        with ThreadPoolExecutor(len(objs)) as pool:
            done = [pool.submit(self.kube.apply, obj, force=True) for obj in objs]
            return [d.result() for d in done]

    def runtime_input(self, inp: c.EnsureRuntimeInput, rev: Obj,
                      resolution: imageconfig.Resolution) -> runtime.RuntimeInput:
        """Everything ``lockwright.runtime.manifests`` renders from, read from the cluster and
        cache; ``resolution``: what the ImageConfigs say of the revision's image."""
        summary = self.contents.summary(inp.kind, rev, inp.digest)
        pkg_meta = summary.meta
        controller = getattr(pkg_meta, "controller_image", None) or getattr(
            pkg_meta, "image", None)
        crossplane_sa = self.kube.get("v1", "ServiceAccount",
                                      self.crossplane_service_account, self.namespace)
        kind = kind_of(inp.kind)
        return runtime.RuntimeInput(
            kind=kind, package_name=inp.package, revision_name=inp.revision,
            revision_uid=str(meta(rev)["uid"]), namespace=self.namespace,
            image=inp.source or resolution.resolved, controller_image=controller,
            pull_secrets=secret_names(spec(rev).get("packagePullSecrets")),
            pull_policy=str(spec(rev).get("packagePullPolicy") or "IfNotPresent"),
            tls_server_secret=str(spec(rev).get("tlsServerSecretName")
                                  or names.tls_server_secret_name(inp.package)),
            tls_client_secret=(str(spec(rev).get("tlsClientSecretName")
                                   or names.tls_client_secret_name(inp.package))
                               if kind == "Provider" else None),
            image_config_pull_secret=resolution.pull_secret,
            crossplane_sa_pull_secrets=secret_names((crossplane_sa or {}).get(
                "imagePullSecrets")))

    def runtime_status(self, inp: c.EnsureRuntimeInput, rev: Obj, service: Obj,
                       chosen: dict[str, str] | None) -> None:
        """Function endpoint and the ConfigureRuntime ImageConfig ref on the revision."""
        current = (rev.get("status") or {}).get("appliedImageConfigRefs")
        applied = imageconfig.merge_applied_refs(
            current, [chosen] if chosen else [], clear=(imageconfig.Reason.CONFIGURE_RUNTIME,))
        fields: Obj = {"appliedImageConfigRefs": applied} if applied or current else {}
        if kind_of(inp.kind) == "Function":
            fields["endpoint"] = runtime.function_endpoint(service["metadata"]["name"],
                                                           self.namespace)
        self.patch_status_if_changed(inp.kind, rev, fields)

    @defn(name=c.CHECK_HEALTH)
    @edge
    def check_health(self, inp: c.CheckHealthInput) -> c.CheckHealthResult:
        """The runtime's health: the Deployment's Available condition, or External's word.

        With ``watch_s`` the Deployment is watched until Available or the window ends
        (:mod:`lockwright.activities.health`); without, one look.
        """
        rev = self.reader.revision(inp.kind, inp.revision)
        if external.is_external(self.package_runtime):
            healthy, message = external.external_health(
                (rev.get("status") or {}).get("conditions"))
            return c.CheckHealthResult(healthy=healthy, message=message)
        name = inp.deployment or deployment_name(
            inp.revision, self.runtime_configs.runtime_config(rev, required=False)[0])
        if inp.watch_s > 0:
            seen = health.watch_health(self.kube, self.namespace, name, kind_of(inp.kind),
                                       inp.watch_s, inp.not_older_than)
            return c.CheckHealthResult(healthy=seen.healthy, message=seen.message,
                                       watched=seen.watched)
        deployment = self.observed_deployment(name)
        healthy, message = runtime.deployment_health(deployment, kind_of(inp.kind))
        return c.CheckHealthResult(healthy=healthy, message=message)

    def observed_deployment(self, name: str) -> Obj | None:
        """The Deployment, once its controller has observed the current spec (bounded).

        Right after ``ensure_runtime`` the status still describes the previous spec (or is
        empty); judging health from it costs the workflow a status write and a timer
        (which the Temporal server fires ~1 s late) for nothing. Waiting is bounded by
        ``HEALTH_OBSERVE_S``; a Deployment that is observed but unavailable returns at once.
        """
        deadline = time.monotonic() + HEALTH_OBSERVE_S
        while True:
            deployment = self.kube.get("apps/v1", "Deployment", name, self.namespace)
            if (deployment is None or runtime.deployment_observed(deployment)
                    or time.monotonic() > deadline):
                return deployment
            time.sleep(HEALTH_OBSERVE_POLL_S)  # poll with a deadline: no watch for one object

