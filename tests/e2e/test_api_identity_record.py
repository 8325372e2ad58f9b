"""API identity recorded at install, and an API pin (issue 23), end to end.

Every step goes through kubectl (or the API as an admin would) and the watcher. A Provider
ships a managed-resource CRD (an MRD and its CRD once installed) and a ProviderConfig CRD
(stays a CRD); its runtime image is pushed to the test registry by tag, so the worker
resolves its digest as it resolves packages'.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockwright.identity import names
from lockwright.identity.digest import api_digest, type_digest
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import parse
from tests.e2e.packages import crd
from tests.e2e.test_install import lock_entry
from tests.fixtures.stack import Stack
from tests.helpers import unique, wait_for
from tests.oci_images import Entry, Layer, push_image, tar_bytes

pytestmark = pytest.mark.kube_shows(
    "the identity recorded at install against the CRD as kube-apiserver stores it")

Obj = dict[str, Any]
MRDS = "managedresourcedefinitions.apiextensions.crossplane.io"
SCHEMA: Obj = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "size": {"type": "integer"}}}}}


def gadgets(group: str, *fields: str) -> Obj:
    """The managed resource's CRD; each of ``fields`` adds a string field to its spec."""
    schema = copy.deepcopy(SCHEMA)
    for field in fields:
        schema["properties"]["spec"]["properties"][field] = {"type": "string"}
    return crd(group, "Gadget", schema=schema)


def provider_config(group: str) -> Obj:
    return crd(group, "ProviderConfig")


def controller_image(stack: Stack, repo: str, tag: str) -> tuple[str, str]:
    """A runtime image pushed to the stack's registry: (reference by tag, its digest)."""
    layer = Layer(tar_bytes([Entry(f"bin/{tag}", uuid.uuid4().bytes)]), annotations={})
    digest = push_image(stack.registry_host, repo, tag, [layer])
    return f"{stack.registry_host}/{repo}:{tag}", digest


def push_provider(stack: Stack, tmp: Path, repo: str, tag: str, image: str,
                  objects: list[Obj]) -> str:
    root = tmp / unique(tag)
    root.mkdir(parents=True)
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": repo}, "spec": {"controller": {"image": image}}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return stack.push(root, repo=repo, tag=tag)


def base_layer(stack: Stack, ref: str) -> str:
    """The layer the registry's manifest of ``ref`` marks as the package's base."""
    manifest = RegistryClient(insecure=[stack.registry_host]).get_manifest(parse(ref))
    [base] = [layer.digest for layer in manifest.layers()
              if layer.annotations.get("io.crossplane.xpkg") == "base"]
    return base


def kubectl_json(stack: Stack, *args: str) -> Obj:
    return json.loads(stack.kubectl("get", *args, "-o", "json").stdout)  # type: ignore[no-any-return]


def active_revision(stack: Stack, name: str) -> Obj | None:
    active = [r for r in stack.revisions("Provider", name)
              if r["spec"]["desiredState"] == "Active"]
    return active[0] if len(active) == 1 else None


def lock_entries(stack: Stack) -> dict[str, Obj]:
    lock = kubectl_json(stack, "locks.pkg.crossplane.io", "lock")
    return {str(e["name"]): e for e in lock.get("packages") or []}


def annotation(obj: Obj, key: str) -> str:
    return str((obj["metadata"].get("annotations") or {}).get(key, ""))


def condition(obj: Obj, kind: str) -> Obj:
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c["type"] == kind), {})


class Release:
    """One provider repository and the releases pushed to it."""

    def __init__(self, stack: Stack, tmp: Path) -> None:
        self.stack, self.tmp = stack, tmp
        self.group = f"{uuid.uuid4().hex[:8]}.identity.example.org"
        self.repo = unique("ident")
        self.name = unique("ident")

    def push(self, tag: str, controller_tag: str, *fields: str) -> tuple[str, str, list[Obj]]:
        """Release ``tag`` running ``controller_tag``: (package ref, controller digest,
        the definitions it ships)."""
        image, digest = controller_image(self.stack, f"{self.repo}-controller", controller_tag)
        objects = [gadgets(self.group, *fields), provider_config(self.group)]
        return push_provider(self.stack, self.tmp, self.repo, tag, image, objects), digest, objects

    def install(self, ref: str) -> Obj:
        self.stack.apply_package("Provider", self.name, ref)
        self.stack.wait_healthy("Provider", self.name)
        rev = active_revision(self.stack, self.name)
        assert rev is not None
        return rev

    def upgrade(self, ref: str) -> None:
        self.stack.kubectl("patch", "provider", self.name, "--type", "merge", "-p",
                           json.dumps({"spec": {"package": ref}}))

    def switched(self, previous: Obj) -> tuple[Obj, Obj]:
        """The new active revision and its Lock entry, once the switch has finished (the
        old revision out of the Lock) and the package is Healthy on it."""
        def done() -> tuple[Obj, Obj] | None:
            rev = active_revision(self.stack, self.name)
            if rev is None or rev["metadata"]["name"] == previous["metadata"]["name"]:
                return None
            entries = lock_entries(self.stack)
            healthy = self.stack.conditions("Provider", self.name).get("Healthy", {})
            finished = previous["metadata"]["name"] not in entries
            entry = entries.get(rev["metadata"]["name"])
            return (rev, entry) if entry and finished and healthy.get("status") == "True" \
                else None
        return wait_for(done, timeout=90, interval=0.2, what=f"{self.name} switched")


def test_definitions_revision_and_lock_entry_carry_the_api_identity(
        stack: Stack, tmp_path: Path) -> None:
    release = Release(stack, tmp_path)
    ref, controller, shipped = release.push("v1.0.0", "v1")
    rev = release.install(ref)
    managed, config = shipped
    mrd = kubectl_json(stack, MRDS, f"gadgets.{release.group}")
    for obj, source in ((mrd, managed),
                        (kubectl_json(stack, "crd", f"gadgets.{release.group}"), managed),
                        (kubectl_json(stack, "crd", f"providerconfigs.{release.group}"),
                         config)):
        assert annotation(obj, names.TYPE_DIGEST) == type_digest(source), obj["metadata"]
    assert mrd["spec"]["state"] == "Active"
    want = {names.API_DIGEST: api_digest(shipped), names.BASE_LAYER: base_layer(stack, ref),
            names.CONTROLLER_DIGEST: controller}
    assert {k: annotation(rev, k) for k in want} == want
    entry = lock_entry(stack, rev["metadata"]["name"])
    assert {k: entry.get(k) for k in ("apiDigest", "baseLayer", "controllerDigest")} == {
        "apiDigest": want[names.API_DIGEST], "baseLayer": want[names.BASE_LAYER],
        "controllerDigest": controller}


def test_a_controller_only_release_keeps_the_api_digest(stack: Stack, tmp_path: Path) -> None:
    release = Release(stack, tmp_path)
    v1, controller_v1, _ = release.push("v1.0.0", "v1")
    old = release.install(v1)
    v101, controller_v2, _ = release.push("v1.0.1", "v2")
    release.upgrade(v101)
    new, entry = release.switched(old)
    assert annotation(new, names.API_DIGEST) == annotation(old, names.API_DIGEST)
    assert annotation(old, names.CONTROLLER_DIGEST) == controller_v1
    assert annotation(new, names.CONTROLLER_DIGEST) == controller_v2 != controller_v1
    assert (entry["apiDigest"], entry["controllerDigest"]) == (
        annotation(old, names.API_DIGEST), controller_v2)


def test_a_pinned_api_refuses_a_new_field_and_takes_a_controller_only_release(
        stack: Stack, tmp_path: Path) -> None:
    release = Release(stack, tmp_path)
    v1, _, _ = release.push("v1.0.0", "v1")
    old = release.install(v1)
    pinned = annotation(old, names.API_DIGEST)
    stack.kubectl("annotate", "provider", release.name, f"{names.PIN_API}={pinned}")
    crd_before = kubectl_json(stack, "crd", f"gadgets.{release.group}")
    v2, _, shipped_v2 = release.push("v2.0.0", "v2", "color")  # a field added
    release.upgrade(v2)

    def refused() -> str | None:
        message = stack.conditions("Provider", release.name).get("Healthy", {}).get(
            "message", "")
        return message if names.PIN_API in message else None

    message = wait_for(refused, timeout=60, interval=0.2, what="the pin's refusal")
    for part in (f"Provider {release.name}", f"pins API {pinned}",
                 f"has API {api_digest(shipped_v2)}", old["metadata"]["name"],
                 f"CustomResourceDefinition gadgets.{release.group} (changed)",
                 f"set the annotation to {api_digest(shipped_v2)}", "spec.package"):
        assert part in message, (part, message)
    assert f"providerconfigs.{release.group}" not in message  # unchanged types not listed
    still = active_revision(stack, release.name)
    assert still is not None and still["metadata"]["name"] == old["metadata"]["name"]
    assert condition(still, "RevisionHealthy").get("status") == "True", still["status"]
    assert condition(still, "RuntimeHealthy").get("status") == "True", still["status"]
    crd_after = kubectl_json(stack, "crd", f"gadgets.{release.group}")
    assert crd_after["metadata"]["resourceVersion"] == crd_before["metadata"]["resourceVersion"]
    assert "color" not in json.dumps(crd_after["spec"])
    refused_rev = next(r for r in stack.revisions("Provider", release.name)
                       if r["metadata"]["name"] != old["metadata"]["name"])
    assert refused_rev["spec"]["desiredState"] == "Inactive"
    assert condition(refused_rev, "RevisionHealthy").get("status") == "False"

    v101, controller, _ = release.push("v1.0.1", "v3")  # the same API, another controller
    release.upgrade(v101)
    new, entry = release.switched(old)
    assert annotation(new, names.API_DIGEST) == entry["apiDigest"] == pinned
    assert annotation(new, names.CONTROLLER_DIGEST) == entry["controllerDigest"] == controller


def test_the_controller_digest_is_the_image_the_runtime_runs(stack: Stack,
                                                             tmp_path: Path) -> None:
    """The package image itself, then the image a DeploymentRuntimeConfig names instead."""
    release = Release(stack, tmp_path)
    root = tmp_path / "own-runtime"
    root.mkdir()
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": release.repo}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(yaml.safe_dump_all([gadgets(release.group)]))
    ref = stack.push(root, repo=release.repo, tag="v1.0.0")
    rev = release.install(ref)
    package_digest = annotation(rev, "lockwright.dev/digest")
    assert annotation(rev, names.CONTROLLER_DIGEST) == package_digest.strip() != ""

    image, digest = controller_image(stack, f"{release.repo}-drc", "v9")
    drc = {"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
           "metadata": {"name": release.name}, "spec": {"deploymentTemplate": {"spec": {
               "selector": {}, "template": {"spec": {"containers": [
                   {"name": "package-runtime", "image": image}]}}}}}}
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(drc))
    # The full resource name: another test's CRD may claim the short name.
    stack.kubectl("patch", "providers.pkg.crossplane.io", release.name, "--type", "merge",
                  "-p", json.dumps({"spec": {"runtimeConfigRef": {"name": release.name}}}))

    def recorded() -> tuple[Obj, Obj] | None:
        now = active_revision(stack, release.name)
        entry = lock_entries(stack).get(now["metadata"]["name"], {}) if now else {}
        return (now, entry) if now and annotation(now, names.CONTROLLER_DIGEST) == digest \
            and entry.get("controllerDigest") == digest else None

    now, entry = wait_for(recorded, timeout=90, interval=0.2, what="the DRC image's digest")
    # A spec change rolls a new revision of the same package digest (docs/design.md,
    # "Revision names"): another name, the same API.
    assert now["metadata"]["name"] != rev["metadata"]["name"]
    assert annotation(now, "lockwright.dev/digest") == package_digest
    assert annotation(now, names.API_DIGEST) == entry["apiDigest"] == annotation(
        rev, names.API_DIGEST)

    def images() -> list[str]:
        deployment = kubectl_json(stack, "deployment", "-n", "crossplane-system",
                                  now["metadata"]["name"])
        return [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]]

    # What the digest was taken of is what runs. The digest is recorded when the package is
    # parsed, before the runtime is written in the same pass: wait for that write too.
    wait_for(lambda: image in images(), timeout=60, interval=0.2,
             what=f"the runtime Deployment running {image}")


def test_a_malformed_pin_is_refused_and_pinning_the_new_api_lets_the_upgrade_through(
        stack: Stack, tmp_path: Path) -> None:
    release = Release(stack, tmp_path)
    v1, _, _ = release.push("v1.0.0", "v1")
    old = release.install(v1)
    stack.kubectl("annotate", "provider", release.name, f"{names.PIN_API}=v1.0.0")
    v2, _, shipped_v2 = release.push("v2.0.0", "v2", "color")
    release.upgrade(v2)

    def says(part: str) -> str | None:
        message = stack.conditions("Provider", release.name).get("Healthy", {}).get(
            "message", "")
        return message if part in message else None

    message = wait_for(lambda: says("not an API digest"), timeout=60, interval=0.2,
                       what="the malformed pin's refusal")
    assert names.PIN_API in message and "'v1.0.0'" in message, message
    assert active_revision(stack, release.name)["metadata"]["name"] == (  # type: ignore[index]
        old["metadata"]["name"])
    stack.kubectl("annotate", "--overwrite", "provider", release.name,
                  f"{names.PIN_API}={api_digest(shipped_v2)}")  # the fix, no spec change
    new, entry = release.switched(old)
    assert annotation(new, names.API_DIGEST) == entry["apiDigest"] == api_digest(shipped_v2)
