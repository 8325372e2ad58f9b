"""Resilience of the whole product (issue 4, "What it must show"), through the watcher.

* One winner (docs/design.md invariants 4, 5): two Providers sharing two CRDs, applied at the same
  moment, 20 rounds.
* Crash test (docs/design.md invariant 3): the worker SIGKILLed at a seeded random point,
  restarted, 10 rounds; every install Healthy with one revision and no duplicates.
* History hygiene (docs/design.md invariant 2): every workflow history of the session, decoded,
  holds no pull-secret value and no payload over 32 KiB. Last in the module on purpose, so
  it also covers the workflows the tests above started.

Packages are tiny (a few CRDs, no permission requests) so a round costs about one install.
Measured on the dev machine: one-winner ~50 s (1.3-5 s a round), crash ~85 s (recovery after
a SIGKILL is 10-75 s: sticky-queue and activity start-to-close timeouts; rounds overlap),
history ~15 s. ``LOCKWRIGHT_CRASH_SEED=<seed>`` replays a crash run's kill points.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, cast

import yaml
from google.protobuf.message import Message
from kubernetes import client
from temporalio.api.common.v1 import Payload
from temporalio.client import Client

from lockwright import contracts as c
from tests.e2e.packages import crd
from tests.fixtures.stack import Stack
from tests.helpers import unique, wait_for, wait_for_async

Obj = dict[str, Any]
CRD_API = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
SYSTEM_NS = "crossplane-system"
LOCK = ("pkg.crossplane.io", "v1beta1", "locks", "lock")
MAX_PAYLOAD = 32 * 1024
WINNER_ROUNDS = 20
CRASH_ROUNDS = 10


# --- packages -----------------------------------------------------------------------------
def provider_dir(parent: Path, crds: list[Obj]) -> Path:
    """A Provider package directory: crossplane.yaml and one file per CRD."""
    root = parent / uuid.uuid4().hex[:12]
    (root / "crds").mkdir(parents=True)
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": root.name},
            "spec": {"controller": {"image": f"example.org/controllers/{root.name}:v1"}}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    for obj in crds:
        (root / "crds" / f"{obj['metadata']['name']}.yaml").write_text(yaml.safe_dump(obj))
    return root


# --- reading the cluster --------------------------------------------------------------------
def conditions(stack: Stack, name: str) -> dict[str, Obj]:
    return stack.conditions("Provider", name)


def healthy(conds: dict[str, Obj]) -> bool:
    return (conds.get("Installed", {}).get("status") == "True"
            and conds.get("Healthy", {}).get("reason") == "HealthyPackageRevision"
            and conds.get("Healthy", {}).get("status") == "True")


def failed_message(conds: dict[str, Obj]) -> str | None:
    """The message of a package that lost: it names the holder while it retries."""
    for kind in ("Installed", "Healthy"):
        c = conds.get(kind, {})
        msg = str(c.get("message", ""))
        if c.get("status") == "False" and "controlled by" in msg:
            return msg
    return None


def get_crd(stack: Stack, name: str) -> Obj | None:
    from kubernetes.client.exceptions import ApiException
    try:
        return cast(Obj, stack.custom.get_cluster_custom_object(*CRD_API, name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def owner_refs(obj: Obj | None) -> list[Obj]:
    return list(((obj or {}).get("metadata") or {}).get("ownerReferences") or [])


def lock_entries(stack: Stack) -> list[Obj]:
    lock = cast(Obj, stack.custom.get_cluster_custom_object(*LOCK))
    return list(lock.get("packages") or [])


def everything(stack: Stack) -> list[Obj]:
    """Every object a package install can write, as plain dicts (kind set on each)."""
    api = stack.api
    rbac, core, apps = (client.RbacAuthorizationV1Api(api), client.CoreV1Api(api),
                        client.AppsV1Api(api))
    lists: dict[str, list[Any]] = {
        "ClusterRole": rbac.list_cluster_role().items,
        "ClusterRoleBinding": rbac.list_cluster_role_binding().items,
        "Deployment": apps.list_namespaced_deployment(SYSTEM_NS).items,
        "ServiceAccount": core.list_namespaced_service_account(SYSTEM_NS).items,
        "Service": core.list_namespaced_service(SYSTEM_NS).items,
        "Secret": core.list_namespaced_secret(SYSTEM_NS).items,
    }
    plain = cast(Any, api).sanitize_for_serialization
    out: list[Obj] = [{**plain(o), "kind": kind}
                      for kind, items in lists.items() for o in items]
    out += [{**o, "kind": "CustomResourceDefinition"}
            for o in cast(Obj, stack.custom.list_cluster_custom_object(*CRD_API))["items"]]
    return out


def mentions(obj: Obj, package: str, uids: set[str]) -> bool:
    """True when ``obj`` is named after, labelled with or owned by ``package``."""
    meta = obj.get("metadata") or {}
    if package in str(meta.get("name", "")) or package in (meta.get("labels") or {}).values():
        return True
    return any(r.get("uid") in uids for r in meta.get("ownerReferences") or [])


# --- 1. exactly one winner ------------------------------------------------------------------
def apply_together(stack: Stack, packages: dict[str, str]) -> None:
    """Create every Provider from its own thread, released by one barrier."""
    barrier = threading.Barrier(len(packages))
    errors: list[BaseException] = []

    def create(name: str, ref: str) -> None:
        try:
            barrier.wait(timeout=10)
            stack.apply_package("Provider", name, ref)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=create, args=item) for item in packages.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors


def settled(stack: Stack, a: str, b: str) -> tuple[str, str, str] | None:
    """(winner, loser, loser's message) once one is Healthy and the other failed for good."""
    ca, cb = conditions(stack, a), conditions(stack, b)
    if healthy(ca) and (msg := failed_message(cb)):
        return a, b, msg
    if healthy(cb) and (msg := failed_message(ca)):
        return b, a, msg
    return None


def test_exactly_one_winner_every_round(stack: Stack, tmp_path: Path) -> None:
    rounds = []
    for i in range(WINNER_ROUNDS):
        group = f"r{i}-{uuid.uuid4().hex[:8]}.example.org"
        shared = [crd(group, "Alpha"), crd(group, "Beta")]
        names = {unique(f"a{i}"): crd(group, "Gamma"), unique(f"b{i}"): crd(group, "Delta")}
        refs = {n: stack.push(provider_dir(tmp_path, [*shared, own])) for n, own in names.items()}
        rounds.append((group, names, refs))
    wins: dict[str, int] = {"a": 0, "b": 0}
    durations = []
    for i, (group, names, refs) in enumerate(rounds):
        started = time.monotonic()
        a, b = list(names)
        apply_together(stack, refs)
        try:
            found = wait_for(partial(settled, stack, a, b), timeout=60, interval=0.1,
                             what=f"round {i}: one winner")
        except AssertionError as exc:
            raise AssertionError(f"round {i}: {exc}; {a}: {conditions(stack, a)}; "
                                 f"{b}: {conditions(stack, b)}") from exc
        assert found is not None
        winner, loser, message = found
        durations.append(time.monotonic() - started)
        if i == 0:
            print(f"\nthe loser says: {message}")
        wins[winner[0]] += 1
        check_round(stack, i, group, winner, loser, message, own={n: o["metadata"]["name"]
                                                                 for n, o in names.items()})
        # A loser retries until the holder goes: delete both, the loser first.
        for name in (loser, winner):
            stack.kubectl("delete", "providers.pkg.crossplane.io", name, "--timeout=60s")
    print(f"\none-winner rounds: {len(rounds)}, wins {wins}, per round "
          f"{min(durations):.2f}-{max(durations):.2f}s (mean "
          f"{sum(durations) / len(durations):.2f}s)")


def check_round(stack: Stack, i: int, group: str, winner: str, loser: str, message: str,
                own: dict[str, str]) -> None:
    where = f"round {i} (winner {winner}, loser {loser})"
    shared = [f"alphas.{group}", f"betas.{group}"]
    # The loser says who won, and which objects that package holds.
    assert f"Provider {winner}" in message, f"{where}: {message}"
    for name in shared:
        assert name in message, f"{where}: {message}"
    assert own[winner] not in message, f"{where}: {message}"

    [win_rev] = stack.revisions("Provider", winner)
    [lose_rev] = stack.revisions("Provider", loser)
    win_uid, lose_uid = win_rev["metadata"]["uid"], lose_rev["metadata"]["uid"]
    lose_pkg_uid = (stack.get_package("Provider", loser) or {})["metadata"]["uid"]

    # The winner controls the shared CRDs and its own; the loser's own CRD was never made.
    for name in [*shared, own[winner]]:
        refs = owner_refs(get_crd(stack, name))
        controllers = [r["uid"] for r in refs if r.get("controller")]
        assert controllers == [win_uid], f"{where}: {name} owners {refs}"
    assert get_crd(stack, own[loser]) is None, f"{where}: the loser's own CRD exists"

    # Nothing anywhere is named after, labelled with or owned by the loser.
    objects = everything(stack)
    touched = [(o["kind"], o["metadata"]["name"]) for o in objects
               if mentions(o, loser, {lose_uid, lose_pkg_uid})]
    winners = {o["kind"] for o in objects if mentions(o, winner, {win_uid})}
    assert {"ClusterRole", "Deployment", "ServiceAccount"} <= winners, f"{where}: {winners}"
    assert not touched, f"{where}: the loser touched {touched}"
    assert not (lose_rev.get("status") or {}).get("objectRefs"), \
        f"{where}: the loser's claim was not withdrawn: {lose_rev['status']}"

    # The Lock holds the winner's entry, and none for the loser.
    entries = [e["name"] for e in lock_entries(stack)]
    assert entries.count(win_rev["metadata"]["name"]) == 1, f"{where}: Lock {entries}"
    assert lose_rev["metadata"]["name"] not in entries, f"{where}: Lock {entries}"


# --- 2. crash test --------------------------------------------------------------------------
def footprint(stack: Stack, name: str) -> dict[str, list[str]]:
    """Objects of each kind that belong to package ``name`` (by name, label or owner)."""
    revs = stack.revisions("Provider", name)
    pkg = stack.get_package("Provider", name) or {}
    uids = {r["metadata"]["uid"] for r in revs} | {pkg.get("metadata", {}).get("uid")}
    out: dict[str, list[str]] = {}
    for obj in everything(stack):
        if mentions(obj, name, uids):
            out.setdefault(obj["kind"], []).append(obj["metadata"]["name"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def check_single_install(stack: Stack, name: str, ref: str, crds: list[str],
                         baseline: dict[str, int], where: str) -> None:
    revs = stack.revisions("Provider", name)
    assert len(revs) == 1, f"{where}: revisions {[r['metadata']['name'] for r in revs]}"
    rev_name, rev_uid = revs[0]["metadata"]["name"], revs[0]["metadata"]["uid"]
    found = footprint(stack, name)
    counts = {k: len(v) for k, v in found.items()}
    assert counts == baseline, f"{where}: objects {found}, a clean install has {baseline}"
    for crd_name in crds:
        refs = owner_refs(get_crd(stack, crd_name))
        uids = [r["uid"] for r in refs]
        assert len(uids) == len(set(uids)), f"{where}: duplicate owner refs on {crd_name}"
        assert [r["uid"] for r in refs if r.get("controller")] == [rev_uid], \
            f"{where}: {crd_name} owners {refs}"
    source = ref.rsplit(":", 1)[0]
    mine = [e["name"] for e in lock_entries(stack) if e.get("source") == source]
    assert mine == [rev_name], f"{where}: Lock entries for {source}: {mine}"


def tiny_provider(stack: Stack, tmp_path: Path, tag: str) -> tuple[str, str, list[str]]:
    """Push a two-CRD provider of a fresh group; returns (package name, ref, CRD names)."""
    group = f"{tag}-{uuid.uuid4().hex[:8]}.example.org"
    crds = [crd(group, "Alpha"), crd(group, "Beta")]
    ref = stack.push(provider_dir(tmp_path, crds))
    return unique(tag), ref, [c["metadata"]["name"] for c in crds]


def test_worker_killed_at_a_random_point_loses_nothing(stack: Stack, tmp_path: Path) -> None:
    seed = int(os.environ.get("LOCKWRIGHT_CRASH_SEED", time.time_ns() % 2**32))
    rng = random.Random(seed)
    packages = [tiny_provider(stack, tmp_path, f"crash{i}") for i in range(CRASH_ROUNDS + 1)]

    # Round 0 runs undisturbed: it gives the typical install time and a clean footprint.
    name, ref, crds = packages[0]
    started = time.monotonic()
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name)
    typical = time.monotonic() - started
    baseline = {k: len(v) for k, v in footprint(stack, name).items()}
    check_single_install(stack, name, ref, crds, baseline, f"baseline (seed {seed})")

    # Rounds overlap: a killed activity is retried only after its start-to-close timeout
    # (up to 60 s) and a killed workflow task after the sticky-queue timeout (10 s), so
    # waiting for each round in turn would take minutes. Each kill still lands at a seeded
    # random point after its own install began; later kills may hit earlier recoveries too.
    kills = []
    try:
        for i, (name, ref, _) in enumerate(packages[1:], start=1):
            delay = rng.uniform(0, typical)
            stack.apply_package("Provider", name, ref)
            started = time.monotonic()
            time.sleep(delay)  # chaos injection at a random point, not a synchronisation
            stack.kill_worker()
            stack.start_worker()
            kills.append((delay, started))
    finally:
        if stack.worker is None or stack.worker.poll() is not None:
            stack.start_worker()  # the worker is shared by the session
    # Poll all rounds together so each one's time to Healthy is measured, not queued.
    first_healthy: dict[str, float] = {}

    def all_healthy() -> bool:
        for name, _, _ in packages[1:]:
            if name not in first_healthy and healthy(conditions(stack, name)):
                first_healthy[name] = time.monotonic()
        return len(first_healthy) == CRASH_ROUNDS

    try:
        wait_for(all_healthy, timeout=150, interval=0.2, what="every crashed install Healthy")
    except AssertionError as exc:
        late = [(i, n, conditions(stack, n)) for i, (n, _, _) in enumerate(packages[1:], 1)
                if n not in first_healthy]
        raise AssertionError(f"seed {seed}: {exc}; not Healthy (round, name, conditions): "
                             f"{late}; kills (delay s): {[round(d, 3) for d, _ in kills]}; "
                             f"worker log tail: {stack.log('worker')[-2000:]}") from exc
    for i, ((name, ref, crds), (delay, _)) in enumerate(zip(packages[1:], kills), start=1):
        where = f"crash round {i} (seed {seed}, killed {delay:.3f}s after apply)"
        check_single_install(stack, name, ref, crds, baseline, where)
    print(f"\ncrash test seed {seed}, typical install {typical:.2f}s, clean footprint "
          f"{baseline}; rounds (killed after s, Healthy after s): "
          + ", ".join(f"({d:.2f}, {first_healthy[n] - t:.1f})"
                      for (n, _, _), (d, t) in zip(packages[1:], kills)))


# --- 3. nothing secret, nothing large in any history (keep this test last) ------------------
def pull_secret(stack: Stack, registry: Any) -> tuple[str, list[bytes]]:
    """Create a dockerconfigjson Secret for ``registry``; returns its name and secret values."""
    auth = base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()
    config = json.dumps({"auths": {registry.host: {
        "username": registry.username, "password": registry.password, "auth": auth}}})
    encoded = base64.b64encode(config.encode()).decode()
    name = unique("pull")
    client.CoreV1Api(stack.api).create_namespaced_secret(SYSTEM_NS, client.V1Secret(
        metadata=client.V1ObjectMeta(name=name), type="kubernetes.io/dockerconfigjson",
        data={".dockerconfigjson": encoded}))
    return name, [registry.password.encode(), auth.encode(), encoded.encode()]


def big_provider(tmp_path: Path, count: int = 200, size: int = 25_000) -> Path:
    """``count`` CRDs of about ``size`` bytes each: ~5 MB of package.yaml."""
    rng = random.Random(count)
    group = f"big-{uuid.uuid4().hex[:8]}.example.org"
    crds = [crd(group, f"Big{i}", rng.randbytes(size // 2).hex()) for i in range(count)]
    return provider_dir(tmp_path, crds)


def walk_payloads(msg: Message) -> Iterator[Payload]:
    """Every ``Payload`` inside a history event (inputs, results, failures, memo, ...)."""
    if isinstance(msg, Payload):
        yield msg
        return
    for field, value in msg.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        if isinstance(value, Message):
            yield from walk_payloads(value)
        else:
            items = value.values() if hasattr(value, "values") else value
            for item in items:
                if isinstance(item, Message):
                    yield from walk_payloads(item)


async def scan_histories(address: str, secrets: list[bytes]
                         ) -> tuple[dict[str, int], list[str]]:
    """Read every history in the namespace; (workflow id -> largest payload, problems)."""
    temporal = await Client.connect(address)
    largest: dict[str, int] = {}
    problems: list[str] = []
    async for wf in temporal.list_workflows():
        history = await temporal.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
        biggest = 0
        for event in history.events:
            where = f"{wf.id} run {wf.run_id} event {event.event_id} ({event.event_type})"
            raw = event.SerializeToString()  # failure messages and details are not payloads
            problems += [f"{where}: a pull-secret value" for s in secrets if s in raw]
            for payload in walk_payloads(event):
                size = len(payload.data)
                biggest = max(biggest, size)
                if size > MAX_PAYLOAD:
                    problems.append(f"{where}: payload of {size} bytes")
        largest[f"{wf.id}/{wf.run_id}"] = biggest
    return largest, problems


def test_the_history_scan_sees_a_leak() -> None:
    """The scanner is not vacuous: a nested oversized payload and a secret are both found."""
    from temporalio.api.history.v1 import HistoryEvent

    event = HistoryEvent(event_id=5)
    scheduled = event.activity_task_scheduled_event_attributes
    scheduled.input.payloads.add(data=b'"' + b"x" * (MAX_PAYLOAD + 1) + b'"')
    scheduled.header.fields["k"].data = b'"s3cr3t"'
    sizes = sorted(len(p.data) for p in walk_payloads(event))
    assert sizes == [8, MAX_PAYLOAD + 3]
    assert b"s3cr3t" in event.SerializeToString()


async def test_no_secret_and_nothing_large_in_any_history(stack: Stack, auth_registry: Any,
                                                          tmp_path: Path) -> None:

    def install() -> tuple[list[str], list[bytes], float]:
        secret, values = pull_secret(stack, auth_registry)
        private = stack.push(provider_dir(tmp_path, [
            crd(f"private-{uuid.uuid4().hex[:8]}.example.org", "Vault")]),
            repo=unique("private"), to=auth_registry)
        big_root = big_provider(tmp_path)
        assert sum(p.stat().st_size for p in big_root.rglob("*.yaml")) > 5_000_000
        big = stack.push(big_root)
        signed, keys = signed_package(tmp_path)
        names = [unique("private"), unique("big"), unique("signed")]
        stack.apply_package("Provider", names[0], private,
                            packagePullSecrets=[{"name": secret}])
        stack.apply_package("Provider", names[1], big)
        stack.apply_package("Provider", names[2], signed)
        started = time.monotonic()
        stack.wait_healthy("Provider", names[0])
        stack.wait_healthy("Provider", names[1], timeout=150)
        stack.wait_healthy("Provider", names[2])
        return names, values + keys, time.monotonic() - started

    def signed_package(tmp: Path) -> tuple[str, list[bytes]]:
        """A package verified through an ImageConfig; its key's bytes, to look for."""
        from tests.e2e.test_verification import Keys, image_config, key_authority, key_secret
        from tests.e2e.test_verification import sign as sign_ref

        keys, repo = Keys(tmp), unique("signed")
        ref = stack.push(provider_dir(tmp / "signed", [
            crd(f"signed-{uuid.uuid4().hex[:8]}.example.org", "Seal")]), repo=repo)
        sign_ref(stack, keys, ref)
        image_config(stack, [], f"{stack.registry_host}/{repo}",
                     key_authority("release-key", key_secret(stack, keys)))
        body = b"".join(keys.public.splitlines()[1:-1])
        return ref, [body, base64.b64encode(keys.public), keys.private.read_bytes()]

    names, secrets, took = await asyncio.to_thread(install)
    revisions = [r["metadata"]["name"] for n in names for r in stack.revisions("Provider", n)]
    queue = stack.task_queue
    ours = ({c.package_workflow_id(c.PROVIDER, n, queue) for n in names}
            | {c.revision_workflow_id(c.PROVIDER, r, queue) for r in revisions})

    async def scanned() -> tuple[dict[str, int], list[str]] | None:
        largest, problems = await scan_histories(stack.temporal_address, secrets)
        seen = {key.split("/")[0] for key in largest}
        return (largest, problems) if ours <= seen else None

    found = await wait_for_async(scanned, timeout=30, interval=0.5,
                                 what=f"the workflows {sorted(ours)} listed")
    assert found is not None
    largest, problems = found
    assert not problems, "\n".join(problems[:50])
    assert all(largest[k] > 0 for k in largest if k.split("/")[0] in ours), largest
    top = max(largest.items(), key=lambda kv: kv[1])
    print(f"\nhistories scanned: {len(largest)}, largest payload {top[1]} bytes in {top[0]}; "
          f"private + 200-CRD installs Healthy in {took:.1f}s")
