"""Benchmark installs end to end, each beside a floor measured in the same run (a script).

Starts its own stack on free loopback ports with ``worker.devstack``'s steps (Temporal dev
server, Debian's docker-registry, devcluster, CRDs, ``lockwright worker`` and ``watcher``),
builds and pushes Providers whose CRDs come from ``benchmarks/crdgen.py``, then measures:

1. apply → Healthy of a 10-CRD Provider, p50/p95 over ``--installs`` installs, each a new
   Provider object, timed from the create call until Installed=True and Healthy=True are
   seen on a watch of the Provider;
2. the same for a 2,000-CRD (~100 MB) Provider, ``--big-runs`` times, and the worker's peak
   memory over those runs (``/proc/<pid>/status`` VmHWM, reset before them);
3. ``--concurrent`` Providers created at once: all Healthy, time until the last is, and no
   lost Lock update (the Lock holds exactly one entry per package);
4. the floor of each: the same registry fetch + parse and the same writes (revision, Lock
   compare-and-swap, TLS Secrets, CRDs, ClusterRoles + binding, ServiceAccount, Service,
   Deployment) done in a straight line with the same core functions and no Temporal, then
   the Deployment polled until Available as ``check_health`` polls it (every 50 ms). Floor
   and lockwright runs are interleaved so load on the machine hits both alike.

Every package is distinct (its own CRD group), so every install is a cold fetch and no two
packages want the same objects. ``LOCKWRIGHT_TUNING`` sets ``health_poll_s`` (printed).
After the table, the Temporal history of one install of each size shows where time went.

    python benchmarks/install.py [--quick] [--installs 20] [--big-crds 2000] [--workers N]
                                 [--control-plane devcluster|kube] [--keep DIR]
                                 [--temporal dev|cluster|dev,cluster]
                                 [--only small,big,concurrent] [--concurrent 50]

With ``--control-plane kube`` everything, floors included, runs on the real control plane
(kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok; see controlplane/),
and the table ends with the servers' resident memory after the big installs.

With ``--temporal cluster`` the stack's Temporal is the real cluster (PostgreSQL and
temporal-server's four services, as ``lockwright dev up --temporal cluster`` starts it)
instead of the dev server; ``--temporal dev,cluster`` measures on each in turn, a fresh
stack each, in one run. The floors never touch Temporal, so each table's ratios say what
that Temporal costs the installs.

With ``--workers N`` the concurrent installs run N times, on 1, 2, ... N worker processes
on one task queue (a worker is added before each round; any worker runs any step, the
caches being per worker and content-addressed); target: on N workers at most
SCALE_OUT_MAX (1.5x) their floor and faster than on one.

Targets: 10-CRD p50 < 2 s, and its fixed orchestration cost over the floor at most
SMALL_OVERHEAD_S (0.20 s) at p50 (a small install is judged by that cost, not by a ratio
to a 0.16 s floor); 2,000-CRD Healthy in at most BIG_MAX_S (10 s) and BIG_RATIO_MAX
(1.2x) its floor, with worker peak memory < 300 MB; concurrent installs all Healthy with
no lost Lock update, until the last is Healthy at most CONCURRENT_MAX (1.5x) their floor,
and the last one's ``take_lock`` under LAST_TAKE_LOCK_MAX_S (0.5 s; issue 33). After the
table of concurrent installs, the history of the last one to be Healthy shows where its
time went. ``--only concurrent --concurrent 20`` measures just the installs at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import shutil
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml

from benchmarks.common import provider_meta, quiet_logs, run_title, workdir
from benchmarks.crdgen import crd_sizes, make_crd
from tests.helpers import api_client, free_port
from lockwright.worker import devstack
from lockwright.worker.stack import Stack, StackError

G, V = "pkg.crossplane.io", "v1"
# crdgen sizes are JSON bytes; block-style YAML of the same CRD is about this much larger.
YAML_PER_JSON = 1.9
#: How often the wait for a settled control plane looks, between small measurements.
SMALL_SETTLE_POLL_S = 0.1
# The decided target for small installs: fixed orchestration cost over the floor, p50.
SMALL_OVERHEAD_S = 0.20
# With --workers N: the concurrent installs on N workers at most this over their floor.
SCALE_OUT_MAX = 1.5
# Installs applied at once (issue 33): until all are Healthy at most this over their floor,
# and the last one's take_lock under this.
CONCURRENT_MAX, LAST_TAKE_LOCK_MAX_S = 1.5, 0.5
# A 2,000-CRD install (issue 12): at most this long, and this over its floor.
BIG_MAX_S, BIG_RATIO_MAX = 10.0, 1.2
Obj = dict[str, Any]


# --- packages ---------------------------------------------------------------------------
class _Dumper(yaml.CSafeDumper):
    """Block-style YAML as packages ship it: crdgen shares sub-dicts; never emit anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def write_package_root(work: str, name: str, sizes: list[int]) -> tuple[Path, int]:
    """Write a Provider's source (crossplane.yaml, one CRD per size); (root, YAML bytes)."""
    root = Path(work) / "src" / name
    (root / "crds").mkdir(parents=True)
    (root / "crossplane.yaml").write_text(provider_meta(name))
    total = 0
    for i, size in enumerate(sizes):
        path = root / "crds" / f"crd{i:04d}.yaml"
        with path.open("w") as f:
            yaml.dump(make_crd(i, size, group=f"{name}.bench.example.org"), f, Dumper=_Dumper,
                      sort_keys=False)
        total += path.stat().st_size
    return root, total


def push_root(work: str, registry: str, name: str, root: Path, tag: str = "v1.0.0") -> str:
    """Build the package at ``root`` and push it as ``<registry>/bench/<name>:<tag>``."""
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.local import read_tarball
    from lockwright.oci.push import push_package
    from lockwright.xpkg.build import build_package

    xpkg = Path(work) / f"{name}.xpkg"
    with build_package(root) as built:
        built.write(xpkg)
    ref = f"{registry}/bench/{name}:{tag}"
    image = read_tarball(xpkg)
    try:
        push_package(RegistryClient(insecure=[registry]), ref, [image])
    finally:
        image.close()
    xpkg.unlink()
    return ref


def build_and_push(work: str, registry: str, name: str, sizes: list[int]) -> tuple[str, int]:
    """Write a Provider with one CRD per size, build it, push it; returns (ref, YAML bytes)."""
    root, total = write_package_root(work, name, sizes)
    ref = push_root(work, registry, name, root)
    shutil.rmtree(root)
    return ref, total


def small_sizes() -> list[int]:
    """Ten CRD sizes drawn from the provider-sized spread (without its forced 1.7 MB one)."""
    return [int(s / YAML_PER_JSON) for s in crd_sizes(2000)[1:11]]


def big_sizes(count: int, total_mb: float) -> list[int]:
    return [int(s / YAML_PER_JSON) for s in crd_sizes(count, int(total_mb * 1e6))]


# --- reading results back ---------------------------------------------------------------
def healthy(obj: Obj) -> bool:
    conds = {c["type"]: c.get("status") for c in (obj.get("status") or {}).get("conditions")
             or []}
    return conds.get("Installed") == "True" and conds.get("Healthy") == "True"


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile, interpolated between closest ranks (q=0.5 is the median)."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_hwm(pid: int) -> bool:
    """Reset the process's VmHWM to its current RSS (Linux ``clear_refs`` 5)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


# --- the floor: the same work in a straight line, no Temporal ---------------------------
#: Seconds the floor's client waits for each answer (the product's is 30 s, and it retries).
FLOOR_TIMEOUT_S = 180.0


class Floor:
    """Install a Provider the shortest way the same core functions allow."""

    def __init__(self, kubeconfig: str, registry: str, work: Path, namespace: str) -> None:
        from lockwright.k8s import Kube
        from lockwright.oci.client import RegistryClient

        # A straight line retries nothing, so it waits longer for an answer: with 4,000 big
        # CRDs stored, a CRD create on kube-apiserver outlasted the client's 30 s (the 50
        # floor installs beside three workers, 2026-11-30) and ended the whole run.
        self.kube = Kube.connect(kubeconfig, timeout=FLOOR_TIMEOUT_S)
        self.client = RegistryClient(insecure=[registry])
        self.work, self.ns = work, namespace
        self.drc = self.kube.get("pkg.crossplane.io/v1beta1", "DeploymentRuntimeConfig",
                                 "default")
        # Which MRDs are Active (benchmarks/activation.py); None: all, the worker's default.
        self.active: frozenset[str] | None = None

    def install(self, ref: str, name: str) -> float:
        """Seconds from start until the runtime Deployment is Available."""
        from lockwright.oci.cache import PackageCache
        from lockwright.oci.fetch import fetch_package

        t0 = time.perf_counter()
        fetched = fetch_package(ref, self.client, PackageCache(self.work / f"cache-{name}"),
                                expected_kind="Provider")
        rev = self.kube.create({"apiVersion": f"{G}/{V}", "kind": "ProviderRevision",
                                "metadata": {"name": f"{name}-floor"},
                                "spec": {"image": ref, "desiredState": "Active",
                                         "revision": 1}})
        rev_name, uid = rev["metadata"]["name"], rev["metadata"]["uid"]
        self.lock_add(rev_name, ref)
        ca = self.tls(name, rev_name)
        refs = self.establish(fetched.entry.documents, name, rev_name, uid, ca)
        self.record(rev_name, refs)
        self.rbac(rev_name, uid, refs)
        controller = getattr(fetched.summary.meta, "controller_image", None) if (
            fetched.summary) else None
        deployment = self.runtime(name, rev_name, uid, ref, controller)
        self.wait_available(deployment)
        return time.perf_counter() - t0

    def lock_add(self, rev_name: str, ref: str) -> None:
        from lockwright.objects import lock as lk

        entry = lk.lock_entry(rev_name, "Provider", ref, [])
        if not self._lock_cas(lambda current: lk.upsert_entry(current, entry)):
            raise RuntimeError("floor: Lock CAS kept failing")

    def lock_remove(self, rev_name: str) -> None:
        """Untimed clean-up, so floor entries never lengthen lockwright's Lock reads."""
        from lockwright.objects import lock as lk

        self._lock_cas(lambda current: lk.remove_entry(current, rev_name))

    def _lock_cas(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> bool:
        """Compare-and-swap the Lock as the take_lock activity does; False if it kept losing."""
        from lockwright.errors import KubeConflict
        from lockwright.objects import lock as lk

        for _ in range(100):
            current = self.kube.get("pkg.crossplane.io/v1beta1", "Lock",
                                    lk.LOCK_NAME) or lk.new_lock()
            wanted = change(current)
            if wanted is None:
                return True
            try:
                self.kube.update(wanted)
                return True
            except KubeConflict:
                time.sleep(random.uniform(0, 0.01))
        return False

    def tls(self, name: str, rev_name: str) -> bytes:
        from lockwright import names
        from lockwright.runtime import tls

        now = datetime.now(UTC)
        live = self.kube.get("v1", "Secret", tls.ROOT_CA_SECRET, self.ns)
        ca = tls.ensure_ca((live or {}).get("data"), now)
        if live is None:
            self.kube.create(tls.secret_manifest(tls.ROOT_CA_SECRET, self.ns, ca))
        server = tls.ensure_server_cert(None, ca, name, self.ns, now)
        self.kube.create(tls.secret_manifest(names.tls_server_secret_name(name), self.ns,
                                             server))
        client = tls.ensure_client_cert(None, ca, rev_name, now)
        self.kube.create(tls.secret_manifest(names.tls_client_secret_name(name), self.ns,
                                             client))
        return tls.ca_bundle(server)

    def establish(self, documents: Path, name: str, rev_name: str, uid: str,
                  ca: bytes) -> list[dict[str, str]]:
        from lockwright.activities.objects import batches
        from lockwright.managed.convert import Conversion
        from lockwright.objects import establish as est

        # The worker's default: CRDs as Active MRDs, each with its CRD (Crossplane v2).
        conversion = (Conversion(default_active=True) if self.active is None
                      else Conversion(default_active=False, active=self.active))
        revision = est.Revision(name=rev_name, uid=uid, kind="ProviderRevision",
                                package_kind="Provider", package_name=name, package_uid="",
                                active=True, conversion=conversion)
        refs: list[dict[str, str]] = []
        with ThreadPoolExecutor(8) as pool:  # as many as the activity's establish_workers
            for batch in batches(revision, documents):
                plan = est.plan_establish(revision, batch, {}, ca_bundle=ca,
                                          namespace=self.ns, service=name)
                objs = []
                for action in plan.actions:
                    # No Provider object exists for the floor: keep only the revision owner.
                    action.object["metadata"]["ownerReferences"] = [est.controller_ref(revision)]
                    objs.append(action.object)
                list(pool.map(self.kube.create, objs))
                refs.extend(plan.object_refs)
        return refs

    def record(self, rev_name: str, refs: list[dict[str, str]]) -> None:
        """The revision's count of Active MRDs, as establish_objects records it: until it
        is recorded the watcher leaves the revision's MRDs to its install, and once it is,
        the activation workflow's pass writes every MRD's conditions (2,000 status writes,
        beside the floor as beside the install)."""
        from lockwright import contracts as c
        from lockwright.objects import establish as est

        mrds, active = est.definition_counts(refs)
        if mrds:
            self.kube.patch(f"{G}/{V}", "ProviderRevision", rev_name, {"metadata": {
                "annotations": {c.ACTIVE_DEFINITIONS_ANNOTATION: str(active)}}})

    def rbac(self, rev_name: str, uid: str, refs: list[dict[str, str]]) -> None:
        from lockwright.runtime import rbac

        for role in rbac.render_cluster_roles(rev_name, uid, rbac.defined_resources(refs)):
            self.kube.create(role)
        self.kube.create(rbac.render_system_binding(rev_name, uid, [(self.ns, rev_name)]))

    def runtime(self, name: str, rev_name: str, uid: str, ref: str,
                controller: str | None) -> Obj:
        from lockwright import names
        from lockwright.runtime import manifests as runtime

        rin = runtime.RuntimeInput(
            kind="Provider", package_name=name, revision_name=rev_name, revision_uid=uid,
            namespace=self.ns, image=ref, controller_image=controller,
            tls_server_secret=names.tls_server_secret_name(name),
            tls_client_secret=names.tls_client_secret_name(name))
        deployment = runtime.render_deployment(rin, self.drc)
        for obj in (runtime.render_service_account(rin, self.drc, []),
                    runtime.render_service(rin, self.drc), deployment):
            self.kube.apply(obj, force=True)
        return deployment

    def wait_available(self, deployment: Obj, timeout: float = 120) -> None:
        from lockwright.activities.runtime import HEALTH_OBSERVE_POLL_S
        from lockwright.runtime import manifests as runtime

        deadline = time.monotonic() + timeout
        while True:
            live = self.kube.get("apps/v1", "Deployment", deployment["metadata"]["name"],
                                 self.ns)
            if runtime.deployment_health(live, "Provider")[0]:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"floor: {deployment['metadata']['name']} not Available")
            # As check_health does while the Deployment's controller catches up.
            time.sleep(HEALTH_OBSERVE_POLL_S)


# --- lockwright side --------------------------------------------------------------------
@dataclass
class Bench:
    """A running stack and what the measurements need from it."""

    args: argparse.Namespace
    work: Path
    settings: Any
    worker_pid: int
    loop: asyncio.AbstractEventLoop
    temporal: Any
    tuning: dict[str, float]
    custom: Any = None
    floor: Floor | None = None
    rows: list[tuple[str, str, str, str, str, bool]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from kubernetes import client

        self.custom = client.CustomObjectsApi(api_client(self.settings.kubeconfig))
        self.floor = Floor(self.settings.kubeconfig, self.settings.insecure_registries[0],
                           self.work / "floor", self.settings.system_namespace)

    def apply(self, name: str, ref: str) -> Obj:
        created: Obj = self.custom.create_cluster_custom_object(G, V, "providers", {
            "apiVersion": f"{G}/{V}", "kind": "Provider", "metadata": {"name": name},
            "spec": {"package": ref}})
        return created

    def get(self, name: str) -> Obj:
        obj: Obj = self.custom.get_cluster_custom_object(G, V, "providers", name)
        return obj

    def install(self, name: str, ref: str, timeout: float) -> tuple[float, float]:
        """(seconds from create until Installed and Healthy are seen, wall-clock start).

        Watched from the created object's resourceVersion, so the moment the status lands
        is seen, with no polling delay (the floor has none either).
        """
        from kubernetes import watch

        start_wall, t0 = time.time(), time.perf_counter()
        rv = self.apply(name, ref)["metadata"]["resourceVersion"]
        deadline = t0 + timeout
        while (remaining := deadline - time.perf_counter()) > 0:
            stream = watch.Watch().stream(
                self.custom.list_cluster_custom_object, G, V, "providers",
                field_selector=f"metadata.name={name}", resource_version=rv,
                timeout_seconds=max(1, int(remaining)))
            for event in stream:
                if event["type"] == "ERROR":  # e.g. 410 Gone: resume from the live object
                    rv = self.get(name)["metadata"]["resourceVersion"]
                    break
                rv = event["object"]["metadata"]["resourceVersion"]
                if healthy(event["object"]):
                    return time.perf_counter() - t0, start_wall
        obj = self.get(name)
        raise RuntimeError(f"Provider {name} not Healthy after {timeout:.0f}s: "
                           f"{json.dumps((obj.get('status') or {}).get('conditions'))}")

    def settle(self, timeout: float, poll: float = 1.0, passes: bool = False) -> float:
        """Seconds until every MRD has its Established condition: the activation pass an
        install starts (lockwright's or the floor's, which records its count too) runs on
        after the Provider is Healthy (10 status writes, or 2,000), and whatever is measured
        next would pay for it. Every measurement starts settled, so each pays for its own
        pass only (the part of it that overlaps its own install). A server unreachable
        meanwhile (kube-apiserver with 4,000 new CRDs refused connections for a minute) is
        not settled yet. With ``passes``, until the activation workflow is idle too: the
        passes deferred while kube-apiserver establishes the install's CRDs (a second after
        the last) have run, rather than starting in the next measurement.

        It does not wait for kube-apiserver to serve the new types: serving all 4,000 of the
        2,000-CRD switch-over's two providers took it past 22 GB of the machine's 24, and the
        machine thrashed (docs/benchmarks.md, "The watcher's unserved types, and a 2,000-CRD
        run that did not fit (2026-12-01)")."""
        from lockwright.managed.convert import MRD_PATH
        from lockwright.errors import KubeNotFound, KubernetesUnavailable
        from lockwright.k8s.watch import list_columns

        assert self.floor is not None
        floor, t0 = self.floor, time.perf_counter()

        def unsettled() -> bool:
            try:
                return any(not cells.get("ESTABLISHED")
                           for cells, _ in list_columns(floor.kube, MRD_PATH))
            except KubeNotFound:  # no MRDs served: nothing to wait for
                return False
            except KubernetesUnavailable:  # a server busy past its deadline: not settled
                return True

        while unsettled() or (passes and not self.activation_idle()):
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"MRDs without Established, or activation passes still "
                                   f"due, after {timeout:.0f}s")
            time.sleep(poll)  # between measurements, untimed: a poll with a deadline
        return time.perf_counter() - t0

    def activation_idle(self) -> bool:
        """Whether the activation workflow runs no pass and has none deferred (its status
        query's ``idle``); True when there is no such workflow."""
        from temporalio.service import RPCError, RPCStatusCode

        from lockwright import contracts as c

        handle = self.temporal.get_workflow_handle(
            c.activation_workflow_id(self.settings.task_queue))
        try:
            status = asyncio.run_coroutine_threadsafe(handle.query(
                c.QUERY_STATUS, result_type=c.ActivationStatusResult), self.loop).result(30)
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return True
            raise
        return bool(status.idle)

    def wait_all(self, names: set[str], t0: float, timeout: float) -> dict[str, float]:
        done: dict[str, float] = {}
        while len(done) < len(names):
            items = self.custom.list_cluster_custom_object(G, V, "providers")["items"]
            now = time.perf_counter()
            for obj in items:
                name = obj["metadata"]["name"]
                if name in names and name not in done and healthy(obj):
                    done[name] = now - t0
            if now - t0 > timeout:
                missing = sorted(names - set(done))
                raise RuntimeError(f"{len(missing)} not Healthy after {timeout:.0f}s: "
                                   f"{missing[:5]}")
            time.sleep(self.args.poll)
        return done

    def lock_entries(self) -> list[Obj]:
        lock = self.custom.get_cluster_custom_object(G, "v1beta1", "locks", "lock")
        return list(lock.get("packages") or [])

    def row(self, measure: str, ours: str, floor: str, ratio: str, target: str,
            ok: bool) -> None:
        self.rows.append((measure, ours, floor, ratio, target, ok))

    def history(self, name: str) -> dict[str, Any]:
        fut = asyncio.run_coroutine_threadsafe(
            breakdown(self.temporal, name, self.settings.task_queue), self.loop)
        return fut.result(120)


# --- where the time goes: Temporal history ------------------------------------------------
async def _events(client: Any, workflow_id: str) -> list[Any]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return list(history.events)


async def _histories(client: Any, name: str, task_queue: str
                     ) -> tuple[list[Any], list[Any]]:
    """The events of Provider ``name``'s package workflow and of its first InstallRevision
    child."""
    from temporalio.api.enums.v1 import EventType as E

    from lockwright import contracts as c

    pkg = await _events(client, c.package_workflow_id(c.PROVIDER, name, task_queue))
    rev_id = next(e.start_child_workflow_execution_initiated_event_attributes.workflow_id
                  for e in pkg if e.event_type
                  == E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)
    return pkg, await _events(client, rev_id)


async def breakdown(client: Any, name: str, task_queue: str) -> dict[str, Any]:
    """Per activity type: run time and schedule-to-start, from both workflows' histories.

    Local activities (markers) have no schedule event: each counts from the end of the
    step before it in the same workflow task (or the task's start) to its completion.
    """
    from temporalio.api.enums.v1 import EventType as E

    pkg, rev = await _histories(client, name, task_queue)
    acts: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    wft = [0.0, 0.0]
    timers, local = 0.0, 0
    for events in (pkg, rev):
        more_timers, more_local = tally(events, acts, wft)
        timers += more_timers
        local += more_local
    t_first = pkg[0].event_time.ToDatetime().timestamp()
    child_start = next(e.event_time.ToDatetime().timestamp() for e in pkg if e.event_type
                       == E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)
    child_done = next((e.event_time.ToDatetime().timestamp() for e in pkg if e.event_type
                       == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED), child_start)
    return {"started": t_first, "activities": dict(acts), "wft": wft, "timers": timers,
            "child": child_done - child_start, "rev_events": len(rev), "pkg_events": len(pkg),
            "local": local}


async def timeline(client: Any, name: str, task_queue: str) -> list[str]:
    """Every event of the package's and its InstallRevision child's histories in time
    order: milliseconds from the package workflow's start, which workflow, the event, and
    the activity, local step or child it concerns (``--timeline``)."""
    from temporalio.api.enums.v1 import EventType as E

    pkg, rev = await _histories(client, name, task_queue)
    t0 = pkg[0].event_time.ToDatetime().timestamp()
    rows = [(e.event_time.ToDatetime().timestamp(), who, e)
            for who, events in (("pkg", pkg), ("rev", rev)) for e in events]
    return [f"{(at - t0) * 1000:7.0f} ms  {who}  {E.Name(e.event_type)[11:]:<40} "
            f"{_what(e)}" for at, who, e in sorted(rows, key=lambda r: r[0])]


def _what(event: Any) -> str:
    """The activity type of a scheduled activity, or a local step's, else ''."""
    if event.HasField("activity_task_scheduled_event_attributes"):
        return str(event.activity_task_scheduled_event_attributes.activity_type.name)
    return _local_step(event)[0] if event.HasField("marker_recorded_event_attributes") else ""


def tally(events: list[Any], acts: dict[str, list[float]], wft: list[float]
          ) -> tuple[float, int]:
    """Add one workflow's activities to ``acts`` and its workflow tasks to ``wft``.

    ``acts[type]`` is [count, run seconds, schedule-to-start seconds]; ``wft`` is [run,
    schedule-to-start]. Returns (seconds on health timers, local activities seen).
    """
    from temporalio.api.enums.v1 import EventType as E

    timers, local = 0.0, 0
    at = {e.event_id: e for e in events}
    t = {e.event_id: e.event_time.ToDatetime().timestamp() for e in events}
    step_start, heartbeat = 0.0, False
    for e in events:
        if e.event_type not in _NOT_INPUTS:
            heartbeat = False
        if e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            sched = e.activity_task_completed_event_attributes.scheduled_event_id
            started = e.activity_task_completed_event_attributes.started_event_id
            kind = at[sched].activity_task_scheduled_event_attributes.activity_type.name
            entry = acts[kind]
            entry[0] += 1
            entry[1] += t[e.event_id] - t[started]
            entry[2] += t[started] - t[sched]
        elif e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_STARTED and not heartbeat:
            # A task with nothing new since the last is a long local step's heartbeat:
            # that step still runs from where it began.
            step_start = t[e.event_id]
        elif e.event_type == E.EVENT_TYPE_MARKER_RECORDED:
            kind, done = _local_step(e)
            if kind:
                local += 1
                acts[kind][0] += 1
                acts[kind][1] += max(0.0, done - step_start)
                step_start = max(step_start, done)
        elif e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            a = e.workflow_task_completed_event_attributes
            wft[0] += t[e.event_id] - t[a.started_event_id]
            wft[1] += t[a.started_event_id] - t[a.scheduled_event_id]
            heartbeat = True
        elif e.event_type == E.EVENT_TYPE_TIMER_FIRED:
            timers += t[e.event_id] - t[e.timer_fired_event_attributes.started_event_id]
    return timers, local


def _not_inputs() -> frozenset[int]:
    """History events a workflow writes itself (its tasks and commands): none of them is
    news that starts a step."""
    from temporalio.api.enums.v1 import EventType as E

    return frozenset({
        E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, E.EVENT_TYPE_MARKER_RECORDED,
        E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        E.EVENT_TYPE_ACTIVITY_TASK_STARTED, E.EVENT_TYPE_TIMER_STARTED,
        E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
        E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED})


_NOT_INPUTS = _not_inputs()


def _local_step(event: Any) -> tuple[str, float]:
    """(activity type, completion time) of a local-activity marker, else ("", 0)."""
    marker = event.marker_recorded_event_attributes
    if marker.marker_name != "core_local_activity" or "data" not in marker.details:
        return "", 0.0
    data = json.loads(marker.details["data"].payloads[0].data)
    done = data.get("complete_time") or {}
    return str(data.get("activity_type", "")), done.get("seconds", 0) + done.get("nanos", 0) / 1e9


def print_breakdown(title: str, created: float, latency: float, info: dict[str, Any]) -> None:
    acts = info["activities"]
    run = sum(v[1] for v in acts.values())
    queue = sum(v[2] for v in acts.values())
    print(f"\n{title}: apply→Healthy {latency:.2f}s; watcher→workflow start "
          f"{(info['started'] - created) * 1000:.0f} ms; InstallRevision child "
          f"{info['child']:.2f}s; activities ran {run:.2f}s ({info['local']} local; queued "
          f"+{queue:.2f}s schedule-to-start);"
          f" workflow tasks {info['wft'][0]:.2f}s with local steps (+{info['wft'][1]:.2f}s"
          " schedule-to-start);"
          f" health timers {info['timers']:.2f}s; events {info['pkg_events']}+"
          f"{info['rev_events']}")
    top = sorted(acts.items(), key=lambda kv: -kv[1][1])
    print("  " + "; ".join(f"{k} x{int(v[0])} {v[1] * 1000:.0f} ms" for k, v in top[:8]))


# --- the measurements -----------------------------------------------------------------
def fmt_s(v: float) -> str:
    return f"{v:.2f} s"


def ratio(ours: float, floor: float) -> float:
    return ours / floor if floor > 0 else float("inf")


def measure_small(b: Bench, pkgs: list[tuple[str, str]], floor_pkgs: list[tuple[str, str]]
                  ) -> tuple[str, float]:
    ours: list[float] = []
    floors: list[float] = []
    last: tuple[str, float, float] = ("", 0.0, 0.0)
    for (name, ref), (fname, fref) in zip(pkgs, floor_pkgs, strict=True):
        b.settle(60, SMALL_SETTLE_POLL_S, passes=True)
        took, wall = b.install(name, ref, 120)
        ours.append(took)
        last = (name, wall, took)
        assert b.floor is not None
        b.settle(60, SMALL_SETTLE_POLL_S, passes=True)
        floors.append(b.floor.install(fref, fname))
        b.floor.lock_remove(f"{fname}-floor")
        print(f"  10-CRD install {len(ours)}/{len(pkgs)}: {took:.2f}s (floor {floors[-1]:.2f}s)",
              flush=True)
    p50, p95, f50, f95 = pct(ours, .5), pct(ours, .95), pct(floors, .5), pct(floors, .95)
    n = len(ours)
    b.row(f"10-CRD apply→Healthy p50 (n={n})", fmt_s(p50), fmt_s(f50),
          f"{ratio(p50, f50):.2f}x", "< 2 s", p50 < 2.0)
    b.row(f"10-CRD apply→Healthy p95 (n={n})", fmt_s(p95), fmt_s(f95),
          f"{ratio(p95, f95):.2f}x", "", True)
    b.row("10-CRD fixed cost over the floor (p50)", fmt_s(p50 - f50), "", "",
          f"<= {SMALL_OVERHEAD_S:.2f} s", p50 - f50 <= SMALL_OVERHEAD_S)
    b.notes.append("10-CRD: " + ", ".join(f"{x:.2f}" for x in ours) + " s; floor: "
                   + ", ".join(f"{x:.2f}" for x in floors) + " s")
    print_breakdown(f"history of {last[0]}", last[1], last[2], b.history(last[0]))
    if getattr(b.args, "timeline", False):
        fut = asyncio.run_coroutine_threadsafe(
            timeline(b.temporal, last[0], b.settings.task_queue), b.loop)
        print("\n".join(fut.result(120)))
    return last[0], last[2]


def measure_big(b: Bench, pkgs: list[tuple[str, str]], floor_pkgs: list[tuple[str, str]],
                label: str) -> None:
    reset = reset_hwm(b.worker_pid)
    before = vm_hwm_mb(b.worker_pid)
    ours: list[float] = []
    floors: list[float] = []
    walls: list[float] = []
    settled: list[float] = []
    for (name, ref), (fname, fref) in zip(pkgs, floor_pkgs, strict=True):
        b.settle(600)  # the floor's pass before: its 2,000 status writes
        took, wall = b.install(name, ref, 900)
        ours.append(took)
        walls.append(wall)
        peak = vm_hwm_mb(b.worker_pid)
        settled.append(b.settle(600))
        assert b.floor is not None
        floors.append(b.floor.install(fref, fname))
        b.floor.lock_remove(f"{fname}-floor")
        print(f"  {label} install {len(ours)}/{len(pkgs)}: {took:.1f}s (floor "
              f"{floors[-1]:.1f}s), worker VmHWM {peak:.0f} MB", flush=True)
    peak = vm_hwm_mb(b.worker_pid)
    med, fmed = statistics.median(ours), statistics.median(floors)
    n = len(ours)
    b.row(f"{label} apply→Healthy median (n={n}, max {max(ours):.1f} s)", fmt_s(med),
          fmt_s(fmed), f"{ratio(med, fmed):.2f}x", f"<= {BIG_MAX_S:g} s", med <= BIG_MAX_S)
    b.row(f"{label} orchestration overhead", f"{ratio(med, fmed):.2f}x", "1.00x",
          f"{ratio(med, fmed):.2f}x", f"<= {BIG_RATIO_MAX}x", ratio(med, fmed) <= BIG_RATIO_MAX)
    b.row(f"{label} worker peak memory (VmHWM)", f"{peak:.0f} MB", "", "", "< 300 MB",
          peak < 300)
    b.notes.append(f"{label}: " + ", ".join(f"{x:.1f}" for x in ours) + " s; floor: "
                   + ", ".join(f"{x:.1f}" for x in floors) + " s; the activation pass after"
                   " Healthy (MRDs' Established written; the floor waits for it): "
                   + ", ".join(f"{x:.1f}" for x in settled) + " s; worker VmHWM "
                   + (f"reset to {before:.0f} MB before" if reset else
                      f"not resettable, {before:.0f} MB before"))
    print_breakdown(f"history of {pkgs[0][0]}", walls[0], ours[0], b.history(pkgs[0][0]))


def measure_concurrent(b: Bench, pkgs: list[tuple[str, str]],
                       floor_pkgs: list[tuple[str, str]], workers: int = 1) -> float:
    """``len(pkgs)`` Providers applied at once on ``workers`` workers; the time until all
    are Healthy."""
    n = len(pkgs)
    on = f" ({workers} worker{'s' if workers > 1 else ''})" if b.args.workers > 1 else ""
    b.settle(120, SMALL_SETTLE_POLL_S, passes=True)
    cpu0 = cpu_times()
    t0, wall0 = time.perf_counter(), time.time()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: b.apply(*p), pkgs))
    created = time.perf_counter() - t0
    done = b.wait_all({name for name, _ in pkgs}, t0, 600)
    total = max(done.values())
    busy = busy_share(cpu0, cpu_times())
    revisions = {b.get(name)["status"].get("currentRevision") for name, _ in pkgs}
    entries = [e for e in b.lock_entries() if e.get("name") in revisions]
    names = [e["name"] for e in entries]
    lost = len(revisions) - len(set(names))
    dupes = len(names) - len(set(names))

    assert b.floor is not None
    floor = b.floor
    # the 20 installs' passes, which the floor ran beside
    b.settle(120, SMALL_SETTLE_POLL_S, passes=True)
    f0 = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:  # the floor at the same concurrency
        floors = list(pool.map(lambda p: floor.install(p[1], p[0]), floor_pkgs))
    ftotal = time.perf_counter() - f0
    for fname, _ in floor_pkgs:
        floor.lock_remove(f"{fname}-floor")
    ok = len(done) == n and lost == 0 and dupes == 0 and len(revisions) == n
    b.row(f"{n} concurrent{on}: time until all Healthy", fmt_s(total), fmt_s(ftotal),
          f"{ratio(total, ftotal):.2f}x", f"all Healthy, <= {CONCURRENT_MAX}x",
          len(done) == n and ratio(total, ftotal) <= CONCURRENT_MAX)
    b.row(f"{n} concurrent{on}: Lock entries (want {n})", f"{len(set(names))}, lost {lost}",
          "", "", "no lost update", lost == 0 and dupes == 0)
    b.row(f"{n} concurrent{on}: per-install p50 / p95",
          f"{pct(list(done.values()), .5):.1f} / {pct(list(done.values()), .95):.1f} s",
          f"{pct(floors, .5):.1f} / {pct(floors, .95):.1f} s", "", "", True)
    b.notes.append(f"{n} concurrent{on}: creates took {created:.2f}s; ok={ok}; the "
                   f"machine's CPUs were {busy:.0%} busy until all were Healthy")
    slowest = max(done, key=lambda k: done[k])
    # The history's times are wall-clock: the breakdown counts from the wall time of the creates.
    info = b.history(slowest)
    print_breakdown(f"history of {slowest}, the last of {n}{on} to be Healthy", wall0,
                    done[slowest], info)
    took = info["activities"].get("take_lock", [0, 0.0])[1]
    b.row(f"{n} concurrent{on}: the last install's take_lock", fmt_s(took), "", "",
          f"< {LAST_TAKE_LOCK_MAX_S} s", took < LAST_TAKE_LOCK_MAX_S)
    return total / ftotal if ftotal else 0.0


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, sum(fields)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of CPU time spent busy between two ``cpu_times()``."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total else 0.0


def measure_scale_out(b: Bench, rounds: list[tuple[list[tuple[str, str]],
                                                   list[tuple[str, str]]]],
                      add_worker: Callable[[int], None]) -> None:
    """The concurrent installs again on 1, 2, ... workers (one more each round)."""
    ratios = []
    for workers, (pkgs, floor_pkgs) in enumerate(rounds, start=1):
        if workers > 1:
            add_worker(workers)
        ratios.append(measure_concurrent(b, pkgs, floor_pkgs, workers))
    if len(ratios) > 1:
        b.row(f"{len(rounds[0][0])} concurrent: {len(ratios)} workers vs 1 (ratio to floor)",
              f"{ratios[-1]:.2f}x", f"{ratios[0]:.2f}x", "", "<= 1.5x, below 1 worker's",
              ratios[-1] <= SCALE_OUT_MAX and ratios[-1] < ratios[0])


def report(b: Bench, header: str) -> None:
    widths = [max(len(str(r[i])) for r in [("measure", "lockwright", "floor", "ratio",
                                             "target"), *b.rows]) for i in range(5)]
    print("\n" + header)
    line = "  ".join(h.ljust(w) for h, w in zip(("measure", "lockwright", "floor", "ratio",
                                                  "target"), widths)) + "  result"
    print(line)
    print("-" * len(line))
    for r in b.rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r[:5], widths))
              + ("  PASS" if r[5] else "  FAIL"))
    for note in b.notes:
        print(f"  {note}")


# --- stack and main ---------------------------------------------------------------------
async def start_stack(stack: Stack, opts: devstack.UpOptions,
                      tuning: dict[str, float]) -> Any:
    from temporalio.client import Client

    from lockwright.k8s.bootstrap import bootstrap_at
    from lockwright.settings import Settings

    if opts.temporal == "cluster":
        # blocking, in this thread: its children die with the thread that started them
        address = devstack.start_temporal_cluster(stack, opts)
    else:
        address = await devstack.start_temporal(stack, opts)
    registry = await devstack.start_registry(stack, opts)
    if opts.control_plane == "kube":
        kubeconfig = devstack.start_kube(stack, opts)
    else:
        kubeconfig = await devstack.start_devcluster(stack, opts)
    settings = Settings(temporal_address=address, task_queue=opts.task_queue,
                        kubeconfig=kubeconfig, cache_dir=str(opts.state_dir / "cache"),
                        insecure_registries=(registry,), resync_seconds=600,
                        tuning=json.dumps(tuning))
    await asyncio.to_thread(bootstrap_at, settings.kubeconfig, settings.system_namespace,
                                    settings.default_activations)
    client = await Client.connect(address)
    await devstack.start_worker(stack, settings, client, opts.timeout)
    await devstack.start_watcher(stack, settings, opts.timeout)
    return settings, client


def build_all(work: Path, registry: str, jobs: list[tuple[str, list[int]]],
              parallel: int) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    with ProcessPoolExecutor(parallel) as pool:
        futures = {name: pool.submit(build_and_push, str(work), registry, name, sizes)
                   for name, sizes in jobs}
        for name, fut in futures.items():
            out[name] = fut.result()
    return out


@contextlib.asynccontextmanager
async def bench_stack(work: Path, tuning: dict[str, float], control_plane: str = "devcluster",
                      temporal: str = "dev") -> AsyncIterator[tuple[Any, Any, Any, Stack]]:
    """The product on its own loopback stack: (settings, client, worker, stack), always
    stopped."""
    tport, rport = free_port(gap=1000), free_port()  # Temporal's UI: port + 1000
    opts = devstack.UpOptions(state_dir=work / "state", example=False, temporal_port=tport,
                              registry_port=rport, timeout=120, task_queue="bench",
                              control_plane=control_plane, temporal=temporal)
    lock = devstack.preflight(opts)
    stack = Stack(opts.state_dir)
    try:
        t = time.perf_counter()
        settings, client = await start_stack(stack, opts, tuning)
        worker = next(c for c in stack.children if c.name == "worker")
        print(f"stack up in {time.perf_counter() - t:.1f}s (Temporal {settings.temporal_address},"
              f" registry {settings.insecure_registries[0]}, logs {opts.state_dir / 'logs'})",
              flush=True)
        yield settings, client, worker, stack
    finally:
        await stack.stop_all()
        stack.stop_control_plane()
        lock.close()


def server_memory(stack: Stack) -> Callable[[], str]:
    """A note of the real server's resident memory now (nothing on devcluster)."""
    def note() -> str:
        if stack.control_plane is None:
            return ""
        rss = stack.control_plane.resident_memory()
        parts = ", ".join(f"{name} {v / 1e6:.0f} MB" for name, v in rss.items())
        return f"resident memory after the big installs: {parts}"
    return note


def worker_adder(stack: Stack, settings: Any, client: Any,
                 loop: asyncio.AbstractEventLoop) -> Callable[[int], None]:
    """A function that starts worker number ``n`` on the stack's task queue (from a thread)."""
    def add(n: int) -> None:
        t = time.perf_counter()
        asyncio.run_coroutine_threadsafe(devstack.start_worker(
            stack, settings, client, 120, name=f"worker-{n}"), loop).result()
        print(f"worker {n} polling in {time.perf_counter() - t:.1f}s", flush=True)
    return add


async def measured(bench: Bench, body: Callable[[], None], header: str) -> int:
    """Run ``body`` off the event loop, print the table whatever happens; the exit code."""
    try:
        await asyncio.to_thread(body)
    finally:
        report(bench, header)
    return 0 if all(r[5] for r in bench.rows) else 1


async def on_stack(args: argparse.Namespace, work: Path,
                   measure: Callable[..., Awaitable[int]], temporal: str = "dev") -> int:
    """``measure(args, work, tuning, settings, client, worker)`` on a fresh stack whose
    Temporal is ``temporal`` (a key of :data:`TEMPORALS`); 2 if the stack cannot start."""
    tuning = {"health_poll_s": args.health_poll}
    try:
        async with bench_stack(work, tuning, args.control_plane,
                               temporal) as (settings, client, worker, stack):
            args.add_worker = worker_adder(stack, settings, client, asyncio.get_running_loop())
            args.server_memory = server_memory(stack)
            args.control_plane_memory = (stack.control_plane.resident_memory
                                         if stack.control_plane is not None else dict)
            return await measure(args, work, tuning, settings, client, worker)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


async def run(args: argparse.Namespace, work: Path) -> int:
    """Measure on each Temporal of ``--temporal`` in turn, each on a fresh stack in a
    folder of its own; the worst exit code."""
    codes = []
    for kind in args.temporal:
        (work / kind / "floor").mkdir(parents=True, exist_ok=True)
        codes.append(await on_stack(args, work / kind, partial(run_on, temporal=kind), kind))
    return max(codes)


async def run_on(args: argparse.Namespace, work: Path, tuning: dict[str, float],
                 settings: Any, client: Any, worker: Any, *, temporal: str) -> int:
    """Build the packages and measure, on a running stack."""
    registry = settings.insecure_registries[0]
    small = [(f"s{i:03d}", small_sizes()) for i in range(args.installs)]
    fsmall = [(f"fs{i:03d}", small_sizes()) for i in range(args.installs)]
    rounds = args.workers if "concurrent" in args.only else 0
    conc = [[(f"c{w}-{i:03d}", small_sizes()) for i in range(args.concurrent)]
            for w in range(1, rounds + 1)]
    fconc = [[(f"fc{w}-{i:03d}", small_sizes()) for i in range(args.concurrent)]
             for w in range(1, rounds + 1)]
    if "small" not in args.only:
        small, fsmall = [], []
    sizes = big_sizes(args.big_crds, args.big_mb)
    runs = args.big_runs if "big" in args.only else 0
    big = [(f"b{i}", sizes) for i in range(runs)]
    fbig = [(f"fb{i}", sizes) for i in range(runs)]
    jobs = [*small, *fsmall, *(j for c in conc for j in c), *(j for f in fconc for j in f)]
    t = time.perf_counter()
    built = await asyncio.to_thread(build_all, work, registry, jobs, 2)
    print(f"built and pushed {len(built)} 10-CRD packages in "
          f"{time.perf_counter() - t:.1f}s", flush=True)
    t = time.perf_counter()
    built.update(await asyncio.to_thread(build_all, work, registry, [*big, *fbig], 2))
    big_mb = built[big[0][0]][1] / 1e6 if big else 0.0
    print(f"built and pushed {len(big) + len(fbig)} {args.big_crds}-CRD packages "
          f"({big_mb:.1f} MB package.yaml each) in {time.perf_counter() - t:.1f}s",
          flush=True)

    def refs(jobs: list[tuple[str, list[int]]]) -> list[tuple[str, str]]:
        return [(f"bench-{n}", built[n][0]) for n, _ in jobs]

    bench = Bench(args, work, settings, worker.proc.pid, asyncio.get_running_loop(),
                  client, tuning)
    small_mb = built[small[0][0]][1] / 1e6 if small else 0.0

    def body() -> None:
        if small:
            measure_small(bench, refs(small), refs(fsmall))
        if big:
            measure_big(bench, refs(big), refs(fbig), f"{args.big_crds}-CRD")
            if note := args.server_memory():
                bench.notes.append(note)
        measure_scale_out(bench, [(refs(c), refs(f)) for c, f in zip(conc, fconc)],
                          args.add_worker)

    return await measured(bench, body, run_title(
        "install", args.quick, tuning,
        f"10-CRD package.yaml {small_mb * 1000:.0f} KB, {args.big_crds}-CRD "
        f"{big_mb:.1f} MB; poll {args.poll}s; on {args.control_plane}, "
        f"{TEMPORALS[temporal]}"))


#: The Temporals a run can measure on, as its tables name them.
TEMPORALS = {"dev": "Temporal dev server",
             "cluster": "Temporal cluster (PostgreSQL, temporal-server)"}


def temporal_kinds(value: str) -> list[str]:
    """``--temporal``: known kinds, comma-separated, each once, in the order given."""
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in TEMPORALS]
    if unknown or not kinds or len(set(kinds)) != len(kinds):
        raise argparse.ArgumentTypeError(
            f"{value!r}: name dev, cluster or both (dev,cluster), each once")
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small run: 5 installs, 200-CRD (10 MB) big package once, "
                             "10 concurrent")
    parser.add_argument("--installs", type=int, default=20)
    parser.add_argument("--big-crds", type=int, default=2000)
    parser.add_argument("--big-mb", type=float, default=100.0,
                        help="package.yaml size of the big package, MB (about)")
    parser.add_argument("--big-runs", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1,
                        help="measure the concurrent installs on 1, 2, ... N worker "
                             "processes on one task queue (a worker added per round)")
    parser.add_argument("--health-poll", type=float, default=0.2,
                        help="Tuning.health_poll_s given to the workflows (and the floor)")
    parser.add_argument("--poll", type=float, default=0.05,
                        help="how often the benchmark reads the Provider back, s")
    parser.add_argument("--control-plane", choices=("devcluster", "kube"), default="devcluster",
                        help="the Kubernetes API: devcluster, or the real kube-apiserver, "
                             "controller manager, scheduler and kwok (floors measured on the "
                             "same server)")
    parser.add_argument("--temporal", default=["dev"], type=temporal_kinds,
                        help="the Temporal to measure on: dev (the dev server), cluster "
                             "(PostgreSQL and temporal-server), or dev,cluster (each in turn)")
    parser.add_argument("--only", default="small,big,concurrent",
                        type=lambda v: set(v.split(",")),
                        help="which measures to run, comma-separated: small, big, "
                             "concurrent (all by default)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    parser.add_argument("--timeline", action="store_true",
                        help="print every event of the last small install's histories")
    args = parser.parse_args()
    if args.quick:
        args.installs, args.big_crds, args.big_mb = 5, 200, 10.0
        args.big_runs, args.concurrent = 1, 10
    quiet_logs(urllib3=True)
    with workdir(args.keep, "install") as work:
        return asyncio.run(run(args, work))


if __name__ == "__main__":
    sys.exit(main())
