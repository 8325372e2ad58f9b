"""Failure paths of an install, end to end (issues 4 and 14, docs/design.md invariant 6).

Each test drives the product as a user does (push, apply, read conditions) and checks
three things: the package's conditions name the cause with the reference's reasons
(docs/crossplane.md §4, §9, §10, §15); nothing is half-installed; the workflow classified the error:
a permanent one (lint, a Crossplane constraint, a refused permission request) fails once
and waits for a change (no Temporal retries, no timer); one that can heal (registry down,
tag not pushed yet, no pull Secret yet, an ImageConfig not there yet, a conflict with
another package) is shown on the status while the workflow retries it with capped
backoff, and heals without anyone touching the package.
"""

from __future__ import annotations

import base64
import json
import signal
import uuid
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus

from lockwright import contracts as c
from tests.e2e.packages import composition, crd
from tests.fixtures import registry as registry_fixture
from tests.fixtures.registry import RegistryServer
from tests.fixtures.stack import Stack
from tests.helpers import unique, wait_for, wait_for_async

SYSTEM_NAMESPACE = "crossplane-system"
DRC_MARK = "example.org/runtime-config"
Obj = dict[str, Any]


# --- packages ------------------------------------------------------------------------
def provider_dir(root: Path, group: str, spec: Obj | None = None,
                 extra: list[Obj] | None = None) -> Path:
    """A Provider package directory with one CRD in ``group`` (and ``extra`` objects)."""
    root.mkdir(parents=True)
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": f"provider-{group.split('.')[0]}"}, "spec": spec or {}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    objects = [crd(group, "Gadget"), *(extra or [])]
    (root / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return root


def unique_group() -> str:
    return f"{uuid.uuid4().hex[:8]}.failures.example.org"


def push_unlinted(stack: Stack, root: Path) -> str:
    """Push ``root`` as a package without the build's lint (to ship a lint failure)."""
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.push import push_package
    from lockwright.xpkg import build
    from lockwright.xpkg.tarball import Image, read_image_tarball, write_image_tarball

    work = stack.state / uuid.uuid4().hex
    work.mkdir()
    stream = work / build.STREAM_FILE
    build._concatenate(stream, [root / "crossplane.yaml", root / "objects.yaml"])
    layer = build._file_layer(stream, build.STREAM_FILE, work, build.BASE_ANNOTATION)
    out = work / "package.xpkg"
    write_image_tarball(out, Image(build._config(None, [layer]), (layer,)))
    ref = f"{stack.registry_host}/{unique('unlinted')}:v1.0.0"
    tarball = read_image_tarball(out)
    try:
        push_package(RegistryClient(insecure=[stack.registry_host]), ref, [tarball])
    finally:
        tarball.close()
    return ref


# --- cluster reads ---------------------------------------------------------------------
def revision_conditions(stack: Stack, name: str) -> dict[str, Obj]:
    revs = stack.revisions("Provider", name)
    assert len(revs) == 1, [r["metadata"]["name"] for r in revs]
    return {x["type"]: x for x in (revs[0].get("status") or {}).get("conditions") or []}


def wait_revision_condition(stack: Stack, name: str, type_: str, status: str,
                            contains: str) -> Obj:
    def met() -> Obj | None:
        found = revision_conditions(stack, name).get(type_) or {}
        ok = found.get("status") == status and contains in found.get("message", "")
        return found if ok else None

    return wait_for(met, timeout=60, interval=0.2,
                    what=f"revision of {name}: {type_}={status} with {contains!r}")


def wait_package_condition(stack: Stack, name: str, type_: str, status: str, reason: str,
                           contains: str) -> dict[str, Obj]:
    """Wait until the Provider's ``type_`` condition is (status, reason) and says ``contains``."""
    def met() -> dict[str, Obj] | None:
        conds = stack.conditions("Provider", name)
        found = conds.get(type_) or {}
        ok = ((found.get("status"), found.get("reason")) == (status, reason)
              and contains in found.get("message", ""))
        return conds if ok else None

    try:
        return wait_for(met, timeout=60, interval=0.2, what=f"{name}: {type_}={status}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; now {stack.conditions('Provider', name)}") from exc


def crd_exists(stack: Stack, name: str) -> Obj | None:
    try:
        return client.ApiextensionsV1Api(stack.api).read_custom_resource_definition(
            name).to_dict()
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def cluster_roles_of(stack: Stack, revision: str) -> list[str]:
    roles = client.RbacAuthorizationV1Api(stack.api).list_cluster_role().items
    return [r.metadata.name for r in roles
            if r.metadata.name.startswith(f"crossplane:provider:{revision}:")]


def deployments_of(stack: Stack, revision: Obj) -> list[str]:
    uid = revision["metadata"]["uid"]
    items = client.AppsV1Api(stack.api).list_namespaced_deployment(SYSTEM_NAMESPACE).items
    return [d.metadata.name for d in items
            if d.metadata.name == revision["metadata"]["name"]
            or any(o.uid == uid for o in d.metadata.owner_references or [])]


def lock_entries(stack: Stack) -> list[str]:
    lock = stack.custom.get_cluster_custom_object("pkg.crossplane.io", "v1beta1", "locks",
                                                  "lock")
    return [p["name"] for p in lock.get("packages") or []]


def assert_nothing_installed(stack: Stack, name: str, crd_name: str) -> None:
    """The revision (if any) is not in the Lock and has no CRD, roles or runtime."""
    for rev in stack.revisions("Provider", name):
        rname = rev["metadata"]["name"]
        assert rname not in lock_entries(stack)
        assert cluster_roles_of(stack, rname) == []
        assert deployments_of(stack, rev) == []
        assert not (rev.get("status") or {}).get("objectRefs")
    assert crd_exists(stack, crd_name) is None


# --- Temporal reads --------------------------------------------------------------------
async def temporal(stack: Stack) -> Client:
    return await Client.connect(stack.temporal_address)


async def package_status(tc: Client, queue: str, name: str, kind: str = c.PROVIDER
                         ) -> c.PackageStatusResult:
    """The status query of the package's workflow on the stack's task ``queue``."""
    handle = tc.get_workflow_handle(c.package_workflow_id(kind, name, queue))
    desc = await handle.describe()
    assert desc.status == WorkflowExecutionStatus.RUNNING, desc.status
    result: c.PackageStatusResult = await handle.query(
        c.QUERY_STATUS, result_type=c.PackageStatusResult)
    return result


async def settled(tc: Client, queue: str, name: str, phase: str = "Failed",
                  kind: str = c.PROVIDER) -> c.PackageStatusResult:
    """The package workflow's status once it waits after a pass that ended in ``phase``.

    ``Failed`` waits for a signal; ``Retrying`` waits on its backoff timer. ``Healthy``
    comes a workflow task after the package's Healthy condition: the install's child
    writes that as its runtime turns Available, and the parent settles once the child's
    end has come back (docs/design.md, "Health as it happens").
    """
    async def failed() -> c.PackageStatusResult | None:
        status = await package_status(tc, queue, name, kind)
        return status if status.phase == phase and status.idle else None

    return await wait_for_async(failed, timeout=60, interval=0.2, what=f"{name} {phase}, idle")


async def assert_retrying(tc: Client, queue: str, name: str, error_type: str,
                          kind: str = c.PROVIDER) -> c.PackageStatusResult:
    """The package workflow retries with backoff, saying when the next attempt comes."""
    status = await settled(tc, queue, name, "Retrying", kind)
    assert status.last_error_type == error_type and status.retry_attempt >= 1, status
    assert status.next_retry_at, status
    return status


async def assert_failed_permanently(tc: Client, queue: str, name: str, error_type: str,
                                    workflow_id: str, activity: str) -> None:
    """The package workflow runs on, idle with no retry timer; the activity ran once."""
    status = await settled(tc, queue, name)
    assert (status.last_error_type, status.retry_attempt) == (error_type, 0), status
    attempts = await failed_attempts(tc, workflow_id, activity)
    # Non-retryable: each failing schedule of the activity got exactly one attempt.
    assert attempts and set(attempts) == {1}, attempts


async def look_again_keeps_the_failure(stack: Stack, tc: Client, name: str,
                                      cause: str, phase: str = "Failed") -> None:
    """A signal re-runs the failed pass without first flipping the status to "installing".

    Read from a watch of the Provider from just before the signal: every status written by
    the new pass still carries ``cause`` (the bug was ``Package revision health is
    "Unknown"`` hiding it).
    """
    before = await settled(tc, stack.task_queue, name, phase)
    start = stack.get_package("Provider", name)
    assert start is not None
    handle = tc.get_workflow_handle(c.package_workflow_id(c.PROVIDER, name, stack.task_queue))
    await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(reason=unique("e2e-look-again")))

    async def passed_again() -> c.PackageStatusResult | None:
        status = await package_status(tc, stack.task_queue, name)
        return status if status.passes > before.passes and status.phase == phase \
            and status.idle else None

    await wait_for_async(passed_again, timeout=60, interval=0.2, what="another failed pass")
    # A pass that writes what is already there changes nothing (no event); the last state
    # counts too, so the check never passes vacuously.
    written = [{x["type"]: x.get("message", "") for x in conds}
               for conds in status_writes(stack, name, start["metadata"]["resourceVersion"])]
    written.append({t: x.get("message", "") for t, x in stack.conditions("Provider",
                                                                         name).items()})
    for conds in written:
        assert cause in conds["Healthy"], written


def status_writes(stack: Stack, name: str, since: str) -> list[list[Obj]]:
    """The Provider's conditions at each change after resourceVersion ``since``."""
    from kubernetes import watch

    stream = watch.Watch().stream(
        stack.custom.list_cluster_custom_object, "pkg.crossplane.io", "v1", "providers",
        field_selector=f"metadata.name={name}", resource_version=since, timeout_seconds=1)
    return [list((event["object"].get("status") or {}).get("conditions") or [])
            for event in stream if event["type"] == "MODIFIED"]


async def failed_attempts(tc: Client, workflow_id: str, activity: str) -> list[int]:
    """The attempt numbers of every failed run of ``activity`` in ``workflow_id``'s runs.

    Queued activities fail in ``ActivityTaskFailed`` events; local ones in their marker.
    """
    out: list[int] = []
    async for run in tc.list_workflows(f"WorkflowId = '{workflow_id}'"):
        history = await tc.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()
        scheduled: dict[int, str] = {}
        started: dict[int, int] = {}
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                scheduled[event.event_id] = (
                    event.activity_task_scheduled_event_attributes.activity_type.name)
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                attrs = event.activity_task_started_event_attributes
                started[attrs.scheduled_event_id] = attrs.attempt
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
                sid = event.activity_task_failed_event_attributes.scheduled_event_id
                if scheduled.get(sid) == activity:
                    out.append(started.get(sid, 0))
            elif event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
                out += local_failure_attempt(event, activity)
    return out


def local_failure_attempt(event: Any, activity: str) -> list[int]:
    """``[attempt]`` when ``event`` records a failed local run of ``activity``, else ``[]``."""
    marker = event.marker_recorded_event_attributes
    if marker.marker_name != "core_local_activity" or not marker.HasField("failure"):
        return []
    data = json.loads(marker.details["data"].payloads[0].data)
    return [int(data["attempt"])] if data.get("activity_type") == activity else []


async def histories_text(tc: Client, workflow_ids: list[str]) -> str:
    """Every run's history of ``workflow_ids``, as JSON text."""
    texts = []
    for wid in workflow_ids:
        # The latest run directly (visibility may lag), then every run listed.
        texts.append((await tc.get_workflow_handle(wid).fetch_history()).to_json())
        async for run in tc.list_workflows(f"WorkflowId = '{wid}'"):
            history = await tc.get_workflow_handle(wid, run_id=run.run_id).fetch_history()
            texts.append(history.to_json())
    return "\n".join(texts)


# --- 1. image not found, then pushed ---------------------------------------------------
async def test_provider_applied_before_its_tag_is_pushed_heals(stack: Stack,
                                                               tmp_path: Path) -> None:
    group = unique_group()
    root = provider_dir(tmp_path / "p", group)
    repo = unique("early")
    ref = stack.push(root, repo=repo)
    missing = ref.rsplit(":", 1)[0] + ":v9.9.9"
    name = unique("notfound")
    stack.apply_package("Provider", name, missing)

    def retried() -> dict[str, Obj] | None:
        conds = stack.conditions("Provider", name)
        return conds if "(retrying in" in conds.get("Installed", {}).get("message", "") \
            else None

    conds = wait_for(retried, timeout=60, interval=0.2, what="not found, retrying")
    assert (conds["Installed"]["status"], conds["Installed"]["reason"]) == (
        "False", "UnpackingPackage")
    message = conds["Installed"]["message"]
    assert message.startswith("cannot unpack package: ")
    assert "not found" in message and "v9.9.9" in message, message
    assert conds["Healthy"]["message"] == message
    assert stack.revisions("Provider", name) == []  # docs/crossplane.md §9 step 4: no revision
    assert_nothing_installed(stack, name, f"gadgets.{group}")
    tc = await temporal(stack)
    await assert_retrying(tc, stack.task_queue, name, "PackageNotFound")
    generation = (stack.get_package("Provider", name) or {})["metadata"]["generation"]

    # Pushing the tag changes nothing in Kubernetes: the backoff alone finds it.
    assert stack.push(root, repo=repo, tag="v9.9.9") == missing
    stack.wait_healthy("Provider", name)
    assert crd_exists(stack, f"gadgets.{group}") is not None
    assert (stack.get_package("Provider", name) or {})["metadata"]["generation"] == generation


# --- 2. a Configuration applied before its pull Secret ------------------------------------
def write_pull_secret(stack: Stack, name: str, server: RegistryServer, password: str) -> str:
    """Create or replace dockerconfigjson Secret ``name`` for ``server``; its stored value."""
    auth = base64.b64encode(f"{server.username}:{password}".encode()).decode()
    config = json.dumps({"auths": {server.host: {"auth": auth}}})
    value = base64.b64encode(config.encode()).decode()
    body = {"metadata": {"name": name}, "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": value}}
    core = client.CoreV1Api(stack.api)
    try:
        core.create_namespaced_secret(SYSTEM_NAMESPACE, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        core.replace_namespaced_secret(name, SYSTEM_NAMESPACE, body)
    return value


def installed_message(stack: Stack, name: str) -> str:
    conds = stack.conditions("Configuration", name)
    return str(conds.get("Installed", {}).get("message", ""))


async def signal_reasons(tc: Client, workflow_id: str) -> list[str]:
    """The reasons of every ``look_again`` the watcher sent to the package's workflow."""
    reasons = []
    async for run in tc.list_workflows(f"WorkflowId = '{workflow_id}'"):
        history = await tc.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                attrs = event.workflow_execution_signaled_event_attributes
                payload = json.loads(attrs.input.payloads[0].data)
                reasons.append(str(payload.get("reason", "")))
    return reasons


async def test_configuration_applied_before_its_pull_secret_heals(
        stack: Stack, auth_registry: RegistryServer, tmp_path: Path) -> None:
    from tests.e2e.test_install import configuration_root, ensure_crossplane_crds

    ensure_crossplane_crds(stack)
    group = f"{unique('p')}.example.org"
    root = configuration_root(stack, tmp_path, group)
    ref = stack.push(root, to=auth_registry)
    secret, name = unique("pull"), unique("private")
    # kubectl apply -f dir/ applies configuration.yaml before pull-secret.yaml.
    stack.apply_package("Configuration", name, ref, packagePullSecrets=[{"name": secret}])
    wid = c.package_workflow_id(c.CONFIGURATION, name, stack.task_queue)
    tc = await temporal(stack)

    wait_for(lambda: "not found" in installed_message(stack, name), timeout=60,
             interval=0.2, what="Installed names the missing pull Secret")
    message = installed_message(stack, name)
    assert "requires credentials and none are configured" in message, message
    assert f"pull secret {SYSTEM_NAMESPACE}/{secret} not found" in message, message
    await assert_retrying(tc, stack.task_queue, name, "Unauthorized", c.CONFIGURATION)

    # A wrong password first: refused, and still retried.
    wrong = "not-" + str(auth_registry.password)
    wrong_value = write_pull_secret(stack, secret, auth_registry, wrong)
    wait_for(lambda: "the configured credentials refused" in installed_message(stack, name),
             timeout=60, interval=0.2, what="the wrong credentials refused")
    assert "answered 401" in installed_message(stack, name)
    await assert_retrying(tc, stack.task_queue, name, "Unauthorized", c.CONFIGURATION)

    # The right one, in the same Secret: Healthy, and the package was never touched.
    right = str(auth_registry.password)
    right_value = write_pull_secret(stack, secret, auth_registry, right)
    stack.wait_healthy("Configuration", name)
    assert (stack.get_package("Configuration", name) or {})["metadata"]["generation"] == 1
    # The watcher followed the Secret: its changes were signalled by name.
    reasons = await signal_reasons(tc, wid)
    assert f"Secret {SYSTEM_NAMESPACE}/{secret} added" in reasons, reasons
    assert f"Secret {SYSTEM_NAMESPACE}/{secret} modified" in reasons, reasons

    revisions = [r["metadata"]["name"] for r in stack.revisions("Configuration", name)]
    text = await histories_text(tc, [wid] + [c.revision_workflow_id(c.CONFIGURATION, r,
                                                                    stack.task_queue)
                                             for r in revisions])
    assert revisions[0] in text  # the histories were read
    basic = base64.b64encode(f"{auth_registry.username}:{right}".encode()).decode()
    for value in (right, wrong, basic, right_value, wrong_value):
        assert value not in text


# --- 3. lint failure -------------------------------------------------------------------
async def test_provider_carrying_a_composition_fails_lint(stack: Stack, tmp_path: Path) -> None:
    group = unique_group()
    ref = push_unlinted(stack, provider_dir(tmp_path / "p", group, extra=[composition(group)]))
    name = unique("lint")
    stack.apply_package("Provider", name, ref)

    conds = stack.wait_conditions("Provider", name, {
        "Installed": ("False", "UnpackingPackage"),
        "Healthy": ("False", "UnhealthyPackageRevision")})
    message = conds["Installed"]["message"]
    assert "linting package contents failed" in message, message
    assert "Composition" in message and "object is not a CRD" in message, message
    rh = wait_revision_condition(stack, name, "RevisionHealthy", "False",
                                 "linting package contents failed")
    assert rh["reason"] == "UnhealthyPackageRevision"
    assert_nothing_installed(stack, name, f"gadgets.{group}")
    tc = await temporal(stack)
    rev = stack.revisions("Provider", name)[0]["metadata"]["name"]
    await assert_failed_permanently(tc, stack.task_queue, name, "LintError",
                                    c.revision_workflow_id(c.PROVIDER, rev, stack.task_queue),
                                    c.FETCH_PACKAGE)


# --- 4. wrong Crossplane version -------------------------------------------------------
async def test_crossplane_version_constraint_then_ignored(stack: Stack, tmp_path: Path) -> None:
    group = unique_group()
    ref = stack.push(provider_dir(tmp_path / "p", group,
                                  spec={"crossplane": {"version": ">=v9.0.0"}}))
    name = unique("version")
    stack.apply_package("Provider", name, ref)

    expected = ("incompatible Crossplane version: package is not compatible with Crossplane "
                f"version ({stack.crossplane_version})")
    conds = wait_package_condition(stack, name, "Healthy", "False",
                                   "UnhealthyPackageRevision", expected)
    assert conds["Healthy"]["message"] == (
        f'Package revision health is "False" with message: {expected}'), conds
    assert (conds["Installed"]["status"], conds["Installed"]["reason"]) == (
        "True", "ActivePackageRevision")
    rh = wait_revision_condition(stack, name, "RevisionHealthy", "False", expected)
    assert rh["message"] == expected
    assert_nothing_installed(stack, name, f"gadgets.{group}")
    tc = await temporal(stack)
    rev = stack.revisions("Provider", name)[0]["metadata"]["name"]
    await assert_failed_permanently(tc, stack.task_queue, name, "ConstraintError",
                                    c.revision_workflow_id(c.PROVIDER, rev, stack.task_queue),
                                    c.CHECK_CROSSPLANE_VERSION)

    stack.custom.patch_cluster_custom_object("pkg.crossplane.io", "v1", "providers", name,
                                             {"spec": {"ignoreCrossplaneConstraints": True}})
    # A spec change: a new revision (docs/design.md, "Revision names"), switched to.
    wait_for(lambda: _current(stack, name) not in ("", rev), timeout=60, interval=0.2,
             what="the revision of the new spec")
    stack.wait_healthy("Provider", name)
    new = next(r for r in stack.revisions("Provider", name)
               if r["metadata"]["name"] == _current(stack, name))
    assert new["spec"]["desiredState"] == "Active"
    assert {x["type"]: x["status"] for x in new["status"]["conditions"]}[
        "RevisionHealthy"] == "True"
    assert crd_exists(stack, f"gadgets.{group}") is not None


def _current(stack: Stack, name: str) -> str:
    """The Provider's ``status.currentRevision``."""
    return str(((stack.get_package("Provider", name) or {}).get("status") or {}).get(
        "currentRevision", ""))


# --- 5. disallowed permission request --------------------------------------------------
async def test_disallowed_permission_request_is_refused(stack: Stack, tmp_path: Path) -> None:
    group = unique_group()
    # Something no allow-list ClusterRole in this suite grants.
    resource = f"forbidden{uuid.uuid4().hex[:6]}"
    spec = {"controller": {"permissionRequests": [
        {"apiGroups": [group], "resources": [resource], "verbs": ["delete"]}]}}
    ref = stack.push(provider_dir(tmp_path / "p", group, spec=spec))
    name = unique("perms")
    stack.apply_package("Provider", name, ref)

    wanted = ("refusing to apply any RBAC roles due to request for disallowed permission "
              f'{{apiGroup: "{group}", resource: "{resource}", resourceName: "*", '
              'verb: "delete"}')
    rh = wait_revision_condition(stack, name, "RevisionHealthy", "False", wanted)
    assert rh["reason"] == "UnhealthyPackageRevision"
    conds = wait_package_condition(stack, name, "Healthy", "False",
                                   "UnhealthyPackageRevision", wanted)
    assert conds["Healthy"]["message"].startswith('Package revision health is "False"')
    assert (conds["Installed"]["status"], conds["Installed"]["reason"]) == (
        "True", "ActivePackageRevision")
    rev = stack.revisions("Provider", name)[0]
    assert cluster_roles_of(stack, rev["metadata"]["name"]) == []  # docs/crossplane.md §15
    assert deployments_of(stack, rev) == []
    tc = await temporal(stack)
    await assert_failed_permanently(
        tc, stack.task_queue, name, "PermissionRejected",
        c.revision_workflow_id(c.PROVIDER, rev["metadata"]["name"], stack.task_queue),
        c.ENSURE_RBAC)
    await look_again_keeps_the_failure(stack, tc, name, wanted)
    assert stack.conditions("Provider", name)["Healthy"]["message"] == conds["Healthy"]["message"]


# --- 6. object controlled by another package -------------------------------------------
async def test_second_provider_of_the_same_crd_waits_until_the_first_is_gone(
        stack: Stack, tmp_path: Path) -> None:
    group = unique_group()
    crd_name = f"gadgets.{group}"
    first_ref = stack.push(provider_dir(tmp_path / "a", group))
    second_ref = stack.push(provider_dir(tmp_path / "b", group, spec={
        "crossplane": {"version": ">=v1.0.0"}}))  # a different digest, the same CRD
    first, second = unique("holder"), unique("loser")
    stack.apply_package("Provider", first, first_ref)
    stack.wait_healthy("Provider", first)
    first_rev = stack.revisions("Provider", first)[0]
    stack.apply_package("Provider", second, second_ref)

    rh = wait_revision_condition(stack, second, "RevisionHealthy", "False",
                                 "is already controlled by")
    message = rh["message"]
    assert crd_name in message and first in message, message
    assert first_rev["metadata"]["name"] in message, message
    conds = wait_package_condition(stack, second, "Healthy", "False",
                                   "UnhealthyPackageRevision", "is already controlled by")
    assert crd_name in conds["Healthy"]["message"] and first in conds["Healthy"]["message"]

    loser = stack.revisions("Provider", second)[0]
    assert loser["metadata"]["name"] not in lock_entries(stack)
    assert cluster_roles_of(stack, loser["metadata"]["name"]) == []
    assert deployments_of(stack, loser) == []
    owners = (crd_exists(stack, crd_name) or {})["metadata"]["owner_references"]
    controller = [o for o in owners if o["controller"]]
    assert [o["uid"] for o in controller] == [first_rev["metadata"]["uid"]]
    loser_package = stack.get_package("Provider", second) or {}
    assert {loser["metadata"]["uid"], loser_package["metadata"]["uid"]}.isdisjoint(
        o["uid"] for o in owners), owners
    assert stack.conditions("Provider", first)["Healthy"]["status"] == "True"
    tc = await temporal(stack)
    await assert_retrying(tc, stack.task_queue, second, "ConflictError")
    await look_again_keeps_the_failure(stack, tc, second, crd_name, phase="Retrying")
    assert cluster_roles_of(stack, loser["metadata"]["name"]) == []

    # The holder goes; the waiting package takes the CRD over on its own.
    stack.kubectl("delete", "providers.pkg.crossplane.io", first, "--timeout=60s")
    stack.wait_healthy("Provider", second)
    owners = (crd_exists(stack, crd_name) or {})["metadata"]["owner_references"]
    assert [o["uid"] for o in owners if o["controller"]] == [loser["metadata"]["uid"]]
    assert loser["metadata"]["name"] in lock_entries(stack)


# --- 7. an ImageConfig created after the package ----------------------------------------
async def test_imageconfig_rewrite_created_after_the_package_heals(stack: Stack,
                                                                   tmp_path: Path) -> None:
    group = unique_group()
    ref = stack.push(provider_dir(tmp_path / "p", group))
    mirror = f"{stack.registry_host}/{unique('mirror')}"  # nothing was ever pushed here
    name = unique("rewrite")
    stack.apply_package("Provider", name, f"{mirror}:v1.0.0")
    tc = await temporal(stack)
    await assert_retrying(tc, stack.task_queue, name, "PackageNotFound")
    assert stack.revisions("Provider", name) == []

    config = unique("rewrite")
    stack.custom.create_cluster_custom_object("pkg.crossplane.io", "v1beta1", "imageconfigs", {
        "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
        "metadata": {"name": config},
        "spec": {"matchImages": [{"type": "Prefix", "prefix": mirror}],
                 "rewriteImage": {"prefix": ref.rsplit(":", 1)[0]}}})
    try:
        stack.wait_healthy("Provider", name)
        pkg = stack.get_package("Provider", name) or {}
        assert pkg["metadata"]["generation"] == 1  # healed without a touch
        assert pkg["status"]["resolvedPackage"] == ref
        assert {"name": config, "reason": "RewriteImage"} in pkg["status"][
            "appliedImageConfigRefs"]
        assert crd_exists(stack, f"gadgets.{group}") is not None
        # The watcher signalled it: the package's backoff retry would heal it too, later.
        reasons = await signal_reasons(tc, c.package_workflow_id(c.PROVIDER, name,
                                                                 stack.task_queue))
        assert f"ImageConfig {config} added" in reasons, reasons
    finally:
        stack.custom.delete_cluster_custom_object("pkg.crossplane.io", "v1beta1",
                                                  "imageconfigs", config)


def runtime_marks(stack: Stack, name: str) -> list[str]:
    """The DRC_MARK annotation of each runtime Deployment of the package ``name``."""
    items = client.AppsV1Api(stack.api).list_namespaced_deployment(SYSTEM_NAMESPACE).items
    return [(d.spec.template.metadata.annotations or {}).get(DRC_MARK, "") for d in items
            if d.metadata.name.startswith(f"{name}-")]


async def test_provider_applied_before_its_runtime_config_heals_and_follows_it(
        stack: Stack, tmp_path: Path) -> None:
    """A DeploymentRuntimeConfig created after the Provider naming it, then changed: each
    reaches the runtime because the watcher signalled the package by the config's name."""
    ref = stack.push(provider_dir(tmp_path / "p", unique_group()))
    drc, name = unique("drc"), unique("late-drc")
    stack.apply_package("Provider", name, ref, runtimeConfigRef={"name": drc})
    tc = await temporal(stack)
    await assert_retrying(tc, stack.task_queue, name, "KubeNotFound")
    body = {"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
            "metadata": {"name": drc}, "spec": {"deploymentTemplate": {"spec": {
                "selector": {}, "template": {"metadata": {"annotations": {DRC_MARK: "v1"}},
                                             "spec": {"containers": []}}}}}}
    stack.custom.create_cluster_custom_object("pkg.crossplane.io", "v1beta1",
                                              "deploymentruntimeconfigs", body)
    try:
        stack.wait_healthy("Provider", name)
        assert runtime_marks(stack, name) == ["v1"]
        body["spec"]["deploymentTemplate"]["spec"]["template"]["metadata"]["annotations"] = {
            DRC_MARK: "v2"}
        stack.custom.patch_cluster_custom_object("pkg.crossplane.io", "v1beta1",
                                                 "deploymentruntimeconfigs", drc, body)
        wait_for(lambda: runtime_marks(stack, name) == ["v2"], timeout=60, interval=0.2,
                 what="the changed config on the runtime")
        reasons = await signal_reasons(tc, c.package_workflow_id(c.PROVIDER, name,
                                                                 stack.task_queue))
        assert f"DeploymentRuntimeConfig {drc} added" in reasons, reasons
        assert f"DeploymentRuntimeConfig {drc} modified" in reasons, reasons
    finally:
        stack.custom.delete_cluster_custom_object("pkg.crossplane.io", "v1beta1",
                                                  "deploymentruntimeconfigs", drc)


# --- 8. registry down, then back -------------------------------------------------------
async def test_registry_down_then_back_ends_healthy(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "registry"
    root.mkdir()
    proc, server = registry_fixture.start_registry(root)
    try:
        if server.host not in stack.insecure_hosts:
            # The worker reads its plain-HTTP registries at start: restart it knowing this one.
            stack.insecure_hosts.append(server.host)
            stack.kill_worker(signal.SIGTERM)
            stack.start_worker()
        group = unique_group()
        ref = stack.push(provider_dir(tmp_path / "p", group), to=server)
        registry_fixture.stop(proc)
        name = unique("outage")
        stack.apply_package("Provider", name, ref)

        def retrying(attempt: int) -> Any:
            def shown() -> Obj | None:
                conds = stack.conditions("Provider", name)
                message = conds.get("Installed", {}).get("message", "")
                return conds if f"attempt {attempt})" in message else None
            return shown

        # The backoff doubles from backoff_initial_s to its cap, each wait on the status.
        tuning = c.Tuning(**stack.tuning)
        waits = [min(tuning.backoff_initial_s * 2 ** n, tuning.backoff_max_s) for n in range(3)]
        for attempt, wait in ((n + 1, f"{w:g}s") for n, w in enumerate(waits)):
            conds = wait_for(retrying(attempt), timeout=60, interval=0.05,
                             what=f"retry attempt {attempt} on the status")
            message = conds["Installed"]["message"]
            assert conds["Installed"]["reason"] == "UnpackingPackage", conds
            assert message.startswith("cannot unpack package: "), message
            assert f"{server.host} unreachable" in message and "refused" in message, message
            assert f"(retrying in {wait}, attempt {attempt})" in message, message
        tc = await temporal(stack)
        status = await package_status(tc, stack.task_queue, name)  # Running, not failed
        assert status.last_error_type == "RegistryUnavailable" and status.retry_attempt >= 3
        assert status.phase == "Retrying", status
        # Each pass spent Temporal's quick retries first (retry_attempts), then backed off.
        attempts = await failed_attempts(tc, c.package_workflow_id(c.PROVIDER, name,
                                                                   stack.task_queue),
                                         c.RESOLVE_DIGEST)
        assert len(attempts) >= 3 and set(attempts) == {tuning.retry_attempts}, attempts
        assert stack.revisions("Provider", name) == []

        # The same port, the same storage: the install finishes with no new apply.
        port = int(server.host.rsplit(":", 1)[1])
        proc = restart_registry(root, port)
        stack.wait_healthy("Provider", name, timeout=90)
        assert crd_exists(stack, f"gadgets.{group}") is not None
        status = await settled(tc, stack.task_queue, name, "Healthy")
        assert (status.retry_attempt, status.last_error) == (0, ""), status
    finally:
        registry_fixture.stop(proc)


def restart_registry(root: Path, port: int) -> Any:
    """Start ``docker-registry`` again on ``port`` with the config written the first time."""
    import subprocess

    config = root / "config.yml"
    assert f"127.0.0.1:{port}" in config.read_text()
    log = open(root / "registry.log", "ab")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen([registry_fixture.BINARY, "serve", str(config)], stdout=log,
                            stderr=log)

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError((root / "registry.log").read_text()[-2000:])
        return registry_fixture._answers(f"http://127.0.0.1:{port}")

    wait_for(up, timeout=60, interval=0.1, what="registry back")
    return proc
