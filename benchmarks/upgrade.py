"""Benchmark a Provider's v1 → v2 switch-over end to end, beside a floor from the same run.

Starts its own stack with ``benchmarks/install.py``'s ``start_stack`` (Temporal dev server,
docker-registry, devcluster, ``lockwright worker`` and ``watcher`` on free loopback ports),
builds each Provider twice from one source, v1 and v2 (the same CRDs, install.py's sizes;
v2's ``crossplane.yaml`` has an extra annotation and controller image tag, so another
digest), pushes both, and measures each round:

1. lockwright: the Provider is applied at v1 and waited for until Healthy (untimed); then
   watches of the Provider, its revisions and its runtime Deployments start, and the
   switch-over is timed from the ``spec.package`` patch to v2 until, as seen on those
   watches, v2's revision is Active, the Provider says Installed=True and Healthy=True with
   v2 as ``currentRevision``, and v1's Deployment is gone. That is the whole upgrade:
   watcher → prepare v2 (fetch, parse, lint, Lock check, dry run of every object write,
   while v1 keeps control and keeps running) → switch (v2 Active, v1 Inactive, control of
   the CRDs handed over, v2's runtime applied and Available) → finish (v1's Deployment
   deleted, v1 out of the Lock) → status.
2. from the same Deployment watch, the seconds of that window during which none of the
   package's Deployments (``spec.selector.matchLabels["pkg.crossplane.io/provider"]``) was
   Available. Target: 0.
3. the floor: the same package moved from v1 to v2 in a straight line with install.py's
   ``Floor`` pieces and no Temporal. v1 is installed by ``Floor.install`` (untimed); then,
   timed: fetch + parse v2, create its revision (Active) and mark v1's Inactive, adopt
   every object (GET, then PUT with the controller reference moved from v1 to v2), v2's
   RBAC (TLS is already there), apply v2's ServiceAccount, Service and Deployment, poll it
   every 50 ms until Available as ``check_health`` does, then delete v1's Deployment and
   swap v1's Lock entry for v2's (one compare-and-swap). No dry run, no orchestration. The
   same Deployment watch measures its seconds without an Available runtime.

Every package is distinct (its own CRD group); lockwright and the floor alternate within
each round so load on the machine hits both alike. ``LOCKWRIGHT_TUNING`` sets
``health_poll_s`` (printed). After the table, the Temporal history of one switch-over of
each size shows where the time went: prepare, hand-off, switch, finish.

    python benchmarks/upgrade.py [--quick] [--rounds 20] [--big-crds 2000] [--big-runs 3]

Target: no second without an Available runtime.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import provider_meta, quiet_logs, run_title, workdir
from benchmarks.install import (
    SMALL_SETTLE_POLL_S,
    Bench,
    Floor,
    G,
    Obj,
    V,
    big_sizes,
    fmt_s,
    healthy,
    measured,
    on_stack,
    pct,
    push_root,
    ratio,
    small_sizes,
    tally,
    write_package_root,
)
from tests.helpers import api_client

if TYPE_CHECKING:
    from lockwright.objects.establish import Revision

PROVIDER_LABEL = "pkg.crossplane.io/provider"
PACKAGE_LABEL = "pkg.crossplane.io/package"
V2_ANNOTATION = "bench.lockwright.dev/version: v2"


# --- packages ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Pkg:
    """One Provider built twice: its name on the cluster and its v1 and v2 references."""

    name: str
    v1: str
    v2: str
    yaml_bytes: int


def v2_meta(name: str) -> str:
    """v2's ``crossplane.yaml``: v1's plus an annotation, controller image tag v2.0.0."""
    return provider_meta(name, "v2.0.0").replace(
        f"  name: {name}\n", f"  name: {name}\n  annotations:\n    {V2_ANNOTATION}\n", 1)


def build_versions(work: str, registry: str, name: str, sizes: list[int]
                   ) -> tuple[str, str, int]:
    """Write the CRDs once, build and push v1, then v2; (v1 ref, v2 ref, YAML bytes)."""
    root, total = write_package_root(work, name, sizes)
    v1 = push_root(work, registry, name, root, "v1.0.0")
    (root / "crossplane.yaml").write_text(v2_meta(name))
    v2 = push_root(work, registry, name, root, "v2.0.0")
    shutil.rmtree(root)
    return v1, v2, total


def build_all(work: Path, registry: str, jobs: list[tuple[str, list[int]]],
              parallel: int = 2) -> list[Pkg]:
    """Build and push v1 and v2 of every job, ``parallel`` at a time."""
    with ProcessPoolExecutor(parallel) as pool:
        futures = [(name, pool.submit(build_versions, str(work), registry, name, sizes))
                   for name, sizes in jobs]
        return [Pkg(f"bench-{name}", *fut.result()) for name, fut in futures]


# --- watching a switch-over -------------------------------------------------------------
class Stream:
    """One watch, kept open from a list's resourceVersion, in its own thread.

    ``on_list(items, t)`` gets the listed objects (again after a 410), ``on_event(type,
    obj, t)`` every event; ``t`` is ``time.perf_counter()`` when it arrived.
    """

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 on_list: Callable[[list[Obj], float], None],
                 on_event: Callable[[str, Obj, float], None]) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.on_list, self.on_event = on_list, on_event
        self.rv = ""
        self.error: BaseException | None = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        """List (synchronously, so the state before any change is known), then watch."""
        self._relist()
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)

    def _relist(self) -> None:
        resp = self.fn(*self.args, **self.kwargs, _preload_content=False)
        page = json.loads(resp.data)
        self.rv = page["metadata"]["resourceVersion"]
        self.on_list(list(page.get("items") or []), time.perf_counter())

    def _run(self) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            while not self.stopping.is_set():
                try:
                    self._follow()
                except ApiException as exc:
                    if exc.status != 410:
                        raise
                    self._relist()  # expired: start again from the current state
        except BaseException as exc:  # noqa: BLE001 - reported to the waiting thread
            self.error = exc
            self.on_event("ERROR", {}, time.perf_counter())

    def _follow(self) -> None:
        from kubernetes import watch

        for event in watch.Watch().stream(self.fn, *self.args, resource_version=self.rv,
                                          timeout_seconds=1, allow_watch_bookmarks=True,
                                          **self.kwargs):
            now, obj = time.perf_counter(), event["raw_object"]
            self.rv = obj["metadata"]["resourceVersion"]
            if event["type"] != "BOOKMARK":
                self.on_event(event["type"], obj, now)
            if self.stopping.is_set():
                return


def _entries(lock: Obj) -> set[str]:
    """The names of the Lock's entries."""
    return {str(e.get("name")) for e in lock.get("packages") or []}


def available(deployment: Obj) -> bool:
    """The Deployment's Available condition is True."""
    conditions = (deployment.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


@dataclass
class Goal:
    """When a switch-over is done: v2 Active and current, Healthy, v1's runtime gone, and
    the Lock swapped (v2's entry in, v1's out), as the floor's switch-over ends."""

    v1_revision: str
    v2_ref: str
    v1_deployments: frozenset[str]


class Switchover:
    """Watches of one package through an upgrade: its runtime Deployments and (unless
    ``runtimes_only``, as for the floor, which has no Provider object) its Provider and
    revisions. Keeps when each Deployment was Available and when the :class:`Goal` was met.
    """

    def __init__(self, settings: Any, name: str, runtimes_only: bool = False) -> None:
        from kubernetes import client

        self.name, self.api = name, api_client(settings.kubeconfig)
        self.cond = threading.Condition()
        self.deployments: dict[str, bool] = {}  # name → Available
        # (time, Deployments Available, Deployments) after each event
        self.timeline: list[tuple[float, int, int]] = []
        self.provider: Obj = {}
        self.revisions: dict[str, Obj] = {}
        self.locked: set[str] = set()  # the Lock's entries
        self.goal: Goal | None = None
        self.done_at: float | None = None
        apps, custom = client.AppsV1Api(self.api), client.CustomObjectsApi(self.api)
        self.streams = [Stream(apps.list_namespaced_deployment, (settings.system_namespace,),
                               {}, self._list_deployments, self._deployment)]
        if not runtimes_only:
            self.streams += [
                Stream(custom.list_cluster_custom_object, (G, V, "providers"),
                       {"field_selector": f"metadata.name={name}"}, self._list_provider,
                       self._provider),
                Stream(custom.list_cluster_custom_object, (G, V, "providerrevisions"),
                       {"label_selector": f"{PACKAGE_LABEL}={name}"}, self._list_revisions,
                       self._revision),
                Stream(custom.list_cluster_custom_object, (G, "v1beta1", "locks"),
                       {"field_selector": "metadata.name=lock"}, self._list_lock,
                       self._lock)]

    def __enter__(self) -> Self:
        for stream in self.streams:
            stream.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in self.streams:
            stream.stop()
        self.api.close()

    # --- events, each under the lock; every one re-checks the goal ----------------------
    def _ours(self, deployment: Obj) -> bool:
        selector = ((deployment.get("spec") or {}).get("selector") or {})
        return bool((selector.get("matchLabels") or {}).get(PROVIDER_LABEL) == self.name)

    def _list_deployments(self, items: list[Obj], now: float) -> None:
        with self.cond:
            self.deployments = {d["metadata"]["name"]: available(d) for d in items
                                if self._ours(d)}
            self._changed(now)

    def _deployment(self, type_: str, obj: Obj, now: float) -> None:
        with self.cond:
            if obj and self._ours(obj):
                if type_ == "DELETED":
                    self.deployments.pop(obj["metadata"]["name"], None)
                else:
                    self.deployments[obj["metadata"]["name"]] = available(obj)
            self._changed(now)

    def _list_provider(self, items: list[Obj], now: float) -> None:
        with self.cond:
            self.provider = items[0] if items else {}
            self._changed(now)

    def _provider(self, type_: str, obj: Obj, now: float) -> None:
        with self.cond:
            if obj:
                self.provider = {} if type_ == "DELETED" else obj
            self._changed(now)

    def _list_revisions(self, items: list[Obj], now: float) -> None:
        with self.cond:
            self.revisions = {r["metadata"]["name"]: r for r in items}
            self._changed(now)

    def _revision(self, type_: str, obj: Obj, now: float) -> None:
        with self.cond:
            if obj and type_ == "DELETED":
                self.revisions.pop(obj["metadata"]["name"], None)
            elif obj:
                self.revisions[obj["metadata"]["name"]] = obj
            self._changed(now)

    def _list_lock(self, items: list[Obj], now: float) -> None:
        with self.cond:
            self.locked = _entries(items[0] if items else {})
            self._changed(now)

    def _lock(self, type_: str, obj: Obj, now: float) -> None:
        with self.cond:
            if obj:
                self.locked = set() if type_ == "DELETED" else _entries(obj)
            self._changed(now)

    def _changed(self, now: float) -> None:
        self.timeline.append((now, sum(self.deployments.values()), len(self.deployments)))
        if self.done_at is None and self.goal is not None and self._reached(self.goal):
            self.done_at = now
        self.cond.notify_all()

    def _reached(self, goal: Goal) -> bool:
        current = (self.provider.get("status") or {}).get("currentRevision")
        rev = self.revisions.get(str(current)) or {}
        spec = rev.get("spec") or {}
        return (current != goal.v1_revision and spec.get("image") == goal.v2_ref
                and spec.get("desiredState") == "Active" and healthy(self.provider)
                and not goal.v1_deployments & set(self.deployments)
                and str(current) in self.locked and goal.v1_revision not in self.locked)

    # --- for the benchmark thread -------------------------------------------------------
    def expect(self, v1_revision: str, v2_ref: str) -> frozenset[str]:
        """Set the goal; v1's Deployments are the package's Deployments now (returned)."""
        with self.cond:
            self.goal = Goal(v1_revision, v2_ref, frozenset(self.deployments))
            return self.goal.v1_deployments

    def wait(self, ready: Callable[[], float | None], deadline: float) -> float:
        """Wait until ``ready()`` gives a time; raise on a failed watch or the deadline."""
        with self.cond:
            while (at := ready()) is None:
                failed = [s.error for s in self.streams if s.error is not None]
                if failed:
                    raise RuntimeError(f"watch of {self.name} failed: {failed[0]!r}")
                if not self.cond.wait(timeout=max(0.0, deadline - time.perf_counter())):
                    raise TimeoutError(f"{self.name}: switch-over not seen: {self.state()}")
            return at

    def wait_done(self, deadline: float) -> float:
        """When the goal was met."""
        return self.wait(lambda: self.done_at, deadline)

    def wait_gone(self, names: frozenset[str], deadline: float) -> float:
        """When the watch saw the last of ``names`` deleted (the floor's end)."""
        def gone() -> float | None:
            return self.timeline[-1][0] if not names & set(self.deployments) else None
        return self.wait(gone, deadline)

    def window(self, start: float, end: float) -> tuple[float, int, int]:
        """Over [start, end]: seconds during which none of the package's Deployments was
        Available (each event's arrival time bounds the change it reports), the fewest
        Available and the most Deployments at once."""
        with self.cond:
            timeline = list(self.timeline)
        before = [e for e in timeline if e[0] <= start][-1:]
        _, up, count = before[0] if before else (start, 1, 0)
        dark, since, fewest, most = 0.0, start, up, count
        for t, now_up, now_count in (e for e in timeline if start < e[0] <= end):
            if not up:
                dark += t - since
            up, since = now_up, t
            fewest, most = min(fewest, up), max(most, now_count)
        return dark + (end - since if not up else 0.0), fewest, most

    def state(self) -> str:
        conds = (self.provider.get("status") or {}).get("conditions")
        states = {n: (r.get("spec") or {}).get("desiredState")
                  for n, r in self.revisions.items()}
        return (f"deployments {self.deployments}; revisions {states}; "
                f"provider conditions {json.dumps(conds)}")


# --- the floor: the same switch in a straight line, no Temporal -----------------------
class UpgradeFloor(Floor):
    """Move a floor-installed Provider from v1 to v2 the shortest way the core allows."""

    def setup(self, name: str, v1: str) -> Obj:
        """Install v1 the floor's way (untimed); returns its revision."""
        self.install(v1, name)
        rev = self.kube.get(f"{G}/{V}", "ProviderRevision", f"{name}-floor")
        assert rev is not None
        return rev

    def upgrade(self, name: str, old: Obj, ref: str) -> float:
        """Seconds from start until v2 runs Available, v1's runtime is gone, Lock swapped."""
        from lockwright.oci.cache import PackageCache
        from lockwright.oci.fetch import fetch_package

        t0 = time.perf_counter()
        fetched = fetch_package(ref, self.client, PackageCache(self.work / f"cache-{name}"),
                                expected_kind="Provider")
        rev = self.revision(name, ref, str(old["metadata"]["name"]))
        refs = self.adopt(fetched.entry.documents, name, rev, self.ca_bundle(name))
        self.rbac(rev.name, rev.uid, refs)
        controller = getattr(fetched.summary.meta, "controller_image", None) if (
            fetched.summary) else None
        self.wait_available(self.runtime(name, rev.name, rev.uid, ref, controller))
        self.finish(str(old["metadata"]["name"]), rev.name, ref)
        return time.perf_counter() - t0

    def revision(self, name: str, ref: str, old: str) -> Revision:
        """Create v2's revision Active and mark v1's Inactive; v2 as establish sees it."""
        from lockwright.managed.convert import Conversion
        from lockwright.objects import establish as est

        rev = self.kube.create({"apiVersion": f"{G}/{V}", "kind": "ProviderRevision",
                                "metadata": {"name": f"{name}-floor2"},
                                "spec": {"image": ref, "desiredState": "Active",
                                         "revision": 2}})
        self.kube.patch(f"{G}/{V}", "ProviderRevision", old,
                        {"spec": {"desiredState": "Inactive"}})
        return est.Revision(name=rev["metadata"]["name"], uid=rev["metadata"]["uid"],
                            kind="ProviderRevision", package_kind="Provider",
                            package_name=name, package_uid="", active=True,
                            conversion=Conversion(default_active=True))  # as the worker

    def ca_bundle(self, name: str) -> bytes:
        """The CA bundle of the package's server Secret, made when v1 was installed."""
        from lockwright import names
        from lockwright.runtime import tls

        secret = self.kube.get("v1", "Secret", names.tls_server_secret_name(name), self.ns)
        return tls.ca_bundle((secret or {}).get("data") or {})

    def adopt(self, documents: Path, name: str, rev: Revision,
              ca: bytes) -> list[dict[str, str]]:
        """Every object: GET it, PUT v2's with the controller reference moved to ``rev``."""
        from lockwright.activities.objects import batches
        from lockwright.objects import establish as est

        refs: list[dict[str, str]] = []
        with ThreadPoolExecutor(8) as pool:  # as many as the activity's establish_workers
            for batch in batches(rev, documents):
                objs = est.prepare(batch, rev, ca, self.ns, name)
                list(pool.map(lambda obj: self.take(obj, rev), objs))
                refs.extend(est.object_ref(obj) for obj in objs)
        return est.sort_object_refs(refs)

    def take(self, obj: Obj, rev: Revision) -> None:
        """One adoption: v1 stays a plain owner, ``rev`` becomes the controller.

        Read again and retried on a conflict: kube-apiserver's CRD controller writes a new
        CRD's status moments after the floor's v1 created it (lockwright's establish is
        retried so too)."""
        from lockwright.errors import KubeConflict
        from lockwright.objects import establish as est

        for attempt in range(5):
            live = self.kube.get(str(obj["apiVersion"]), str(obj["kind"]),
                                 str(obj["metadata"]["name"]))
            lmeta = (live or {}).get("metadata") or {}
            owners = [{**r, "controller": False} for r in lmeta.get("ownerReferences") or []
                      if r.get("uid") != rev.uid]
            meta = {**obj["metadata"], "resourceVersion": lmeta.get("resourceVersion"),
                    "ownerReferences": [*owners, est.controller_ref(rev)]}
            try:
                self.kube.update({**obj, "metadata": meta})
                return
            except KubeConflict:
                if attempt == 4:
                    raise

    def finish(self, old: str, new: str, ref: str) -> None:
        """Delete v1's Deployment, then swap v1's Lock entry for v2's."""
        from lockwright.objects import lock as lk

        self.kube.delete("apps/v1", "Deployment", old, self.ns)
        entry = lk.lock_entry(new, "Provider", ref, [])

        def swap(current: Obj) -> Obj | None:
            removed = lk.remove_entry(current, old)
            return lk.upsert_entry(removed or current, entry) or removed

        if not self._lock_cas(swap):
            raise RuntimeError("floor: Lock CAS kept failing")


# --- the rounds -------------------------------------------------------------------------
@dataclass
class Switch:
    """One switch-over: seconds, seconds without an Available runtime, and its checks."""

    seconds: float
    dark: float
    fewest: int = 1  # fewest Available Deployments of the package at once
    most: int = 1  # most Deployments of the package at once
    wall: float = 0.0  # when the patch was sent (time.time()), for the history
    lock_ok: bool = True


@dataclass
class Results:
    """Every switch-over of the run, lockwright's and the floor's."""

    ours: list[Switch] = field(default_factory=list)
    floors: list[Switch] = field(default_factory=list)


def settle(b: Bench, timeout: float) -> None:
    """Wait for a settled control plane: between small switch-overs looking often, and
    until the activation passes deferred after the install have run; once a second while
    2,000 MRDs' conditions are written, and not for those passes (kube-apiserver
    establishes 2,000 CRDs for ten minutes)."""
    small = timeout <= 120
    b.settle(timeout, SMALL_SETTLE_POLL_S if small else 1.0, passes=small)


def lockwright_round(b: Bench, pkg: Pkg, timeout: float) -> Switch:
    """Install v1 and wait Healthy (untimed); time the patch to v2 until the goal is seen."""
    b.install(pkg.name, pkg.v1, timeout)
    settle(b, timeout)  # v1's activation passes: not the switch-over's
    v1_rev = str(b.get(pkg.name)["status"]["currentRevision"])
    with Switchover(b.settings, pkg.name) as watch:
        watch.expect(v1_rev, pkg.v2)
        wall, t0 = time.time(), time.perf_counter()
        b.custom.patch_cluster_custom_object(G, V, "providers", pkg.name,
                                             {"spec": {"package": pkg.v2}})
        end = watch.wait_done(t0 + timeout)
        seen = watch.window(t0, end)
    v2_rev = b.get(pkg.name)["status"]["currentRevision"]
    held = {e.get("name") for e in b.lock_entries()}
    return Switch(end - t0, *seen, wall=wall, lock_ok=v2_rev in held and v1_rev not in held)


def floor_round(b: Bench, floor: UpgradeFloor, pkg: Pkg, timeout: float) -> Switch:
    """The floor's v1 install (untimed), then its timed switch-over to v2."""
    old = floor.setup(pkg.name, pkg.v1)
    settle(b, timeout)
    with Switchover(b.settings, pkg.name, runtimes_only=True) as watch:
        v1_deployments = watch.expect(str(old["metadata"]["name"]), pkg.v2)
        t0 = time.perf_counter()
        took = floor.upgrade(pkg.name, old, pkg.v2)
        seen = watch.wait_gone(v1_deployments, time.perf_counter() + timeout)
        window = watch.window(t0, max(seen, t0 + took))
    floor.lock_remove(f"{pkg.name}-floor2")  # untimed: keep lockwright's Lock reads short
    return Switch(took, *window)


def run_rounds(b: Bench, floor: UpgradeFloor, pkgs: list[Pkg], fpkgs: list[Pkg],
               label: str, timeout: float) -> tuple[list[Switch], list[Switch]]:
    """Alternate lockwright and the floor, one round each per package pair."""
    ours: list[Switch] = []
    floors: list[Switch] = []
    for i, (pkg, fpkg) in enumerate(zip(pkgs, fpkgs, strict=True), 1):
        ours.append(lockwright_round(b, pkg, timeout))
        floors.append(floor_round(b, floor, fpkg, timeout))
        print(f"  {label} switch-over {i}/{len(pkgs)}: {ours[-1].seconds:.2f}s, "
              f"{ours[-1].dark:.3f}s without a runtime (floor {floors[-1].seconds:.2f}s, "
              f"{floors[-1].dark:.3f}s)", flush=True)
    return ours, floors


def measure_small(b: Bench, floor: UpgradeFloor, pkgs: list[Pkg], fpkgs: list[Pkg],
                  res: Results) -> None:
    """10-CRD switch-overs: p50 and p95 beside the floor's, and one history."""
    ours, floors = run_rounds(b, floor, pkgs, fpkgs, "10-CRD", 120)
    res.ours += ours
    res.floors += floors
    secs, fsecs = [s.seconds for s in ours], [s.seconds for s in floors]
    for q, name in ((.5, "p50"), (.95, "p95")):
        ours_q, floor_q = pct(secs, q), pct(fsecs, q)
        b.row(f"10-CRD switch-over {name} (n={len(secs)})", fmt_s(ours_q), fmt_s(floor_q),
              f"{ratio(ours_q, floor_q):.2f}x", "", True)
    b.notes.append("10-CRD: " + ", ".join(f"{x:.2f}" for x in secs) + " s; floor: "
                   + ", ".join(f"{x:.2f}" for x in fsecs) + " s")
    infos = [history_of(b, pkg.name, switch) for pkg, switch in zip(pkgs, ours, strict=True)]
    print_history(f"history of {pkgs[-1].name} (10-CRD)", ours[-1], infos[-1])
    print_phases("10-CRD", ours, infos)


def measure_big(b: Bench, floor: UpgradeFloor, pkgs: list[Pkg], fpkgs: list[Pkg],
                res: Results, label: str) -> None:
    """Big switch-overs: the median beside the floor's, and one history."""
    ours, floors = run_rounds(b, floor, pkgs, fpkgs, label, 900)
    res.ours += ours
    res.floors += floors
    secs, fsecs = [s.seconds for s in ours], [s.seconds for s in floors]
    med, fmed = statistics.median(secs), statistics.median(fsecs)
    b.row(f"{label} switch-over median (n={len(secs)}: "
          + ", ".join(f"{x:.1f}" for x in secs) + " s)", fmt_s(med), fmt_s(fmed),
          f"{ratio(med, fmed):.2f}x", "", True)
    b.notes.append(f"{label} floor: " + ", ".join(f"{x:.1f}" for x in fsecs) + " s")
    print_history(f"history of {pkgs[0].name} ({label})", ours[0],
                  history_of(b, pkgs[0].name, ours[0]))


def summary_rows(b: Bench, res: Results) -> None:
    """Seconds without an Available runtime over every switch-over; the Lock afterwards."""
    dark, fdark = sum(s.dark for s in res.ours), sum(s.dark for s in res.floors)
    worst = max((s.dark for s in res.ours), default=0.0)
    b.row(f"seconds with no Available runtime (sum of {len(res.ours)}, max {worst:.3f} s)",
          f"{dark:.3f} s", f"{fdark:.3f} s", "", "0", dark == 0)
    locked = sum(s.lock_ok for s in res.ours)
    fewest = min((s.fewest for s in res.ours), default=0)
    b.notes.append(f"runtimes on the Deployment watch: fewest Available at once {fewest}; "
                   f"v1's and v2's side by side in {sum(s.most >= 2 for s in res.ours)}/"
                   f"{len(res.ours)} switch-overs")
    b.row("Lock after each switch-over: v2 in, v1 out", f"{locked}/{len(res.ours)}", "", "",
          "all", locked == len(res.ours))


# --- where the time goes: Temporal history ------------------------------------------------
async def _history(client: Any, workflow_id: str, run_id: str | None = None) -> list[Any]:
    history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    return list(history.events)


def _t(event: Any) -> float:
    return float(event.event_time.ToDatetime().timestamp())


async def switch_history(client: Any, name: str, since: float,
                         task_queue: str) -> dict[str, Any]:
    """The switch-over begun at wall time ``since``, from the package's history and the
    prepare and switch runs of ``InstallRevision``: phase boundaries (wall times) and, per
    run, activities tallied as install.py's breakdown does."""
    from temporalio.api.enums.v1 import EventType as E

    from lockwright import contracts as c

    wid = c.package_workflow_id(c.PROVIDER, name, task_queue)
    pkg = [e for e in await _history(client, wid) if _t(e) >= since]
    signal = next(_t(e) for e in pkg
                  if e.event_type == E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    started = [e.child_workflow_execution_started_event_attributes for e in pkg
               if e.event_type == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED][:2]
    at = {e.event_id: e for e in pkg}
    runs = []
    for child in started:
        done = next(_t(e) for e in pkg
                    if e.event_type == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED
                    and e.child_workflow_execution_completed_event_attributes
                    .initiated_event_id == child.initiated_event_id)
        acts: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        events = await _history(client, child.workflow_execution.workflow_id,
                                child.workflow_execution.run_id)
        timers, _ = tally(events, acts, [0.0, 0.0])
        runs.append({"start": _t(at[child.initiated_event_id]), "done": done,
                     "acts": dict(acts), "timers": timers})
    return {"signal": signal, "runs": runs}


def history_of(b: Bench, name: str, switch: Switch) -> dict[str, Any]:
    """``switch_history`` of package ``name``'s switch-over ``switch``."""
    return asyncio.run_coroutine_threadsafe(switch_history(
        b.temporal, name, switch.wall, b.settings.task_queue), b.loop).result(120)


#: Each phase of a switch-over, as the one history printed names it.
PHASES = {"watcher→signal": "watcher→signal",
          "read/resolve/ensure": "read/resolve/ensure revision", "prepare": "prepare",
          "hand-off": "hand-off (v2 Active, v1 Inactive)",
          "switch": "switch", "finish→seen": "finish (v1 runtime deleted, Lock, status) → seen"}


def both_runs(info: dict[str, Any]) -> bool:
    """Whether a switch-over's history has its prepare run and its switch run."""
    return len(info["runs"]) == 2


def phases(info: dict[str, Any], switch: Switch) -> dict[str, float] | None:
    """A switch-over's phases in seconds (:data:`PHASES`), from ``switch_history``; None
    without a prepare and a switch run."""
    if not both_runs(info):
        return None
    prep, sw = info["runs"]
    return {"watcher→signal": info["signal"] - switch.wall,
            "read/resolve/ensure": prep["start"] - info["signal"],
            "prepare": prep["done"] - prep["start"], "hand-off": sw["start"] - prep["done"],
            "switch": sw["done"] - sw["start"],
            "finish→seen": switch.wall + switch.seconds - sw["done"]}


def print_phases(label: str, ours: list[Switch], infos: list[dict[str, Any]]) -> None:
    """Each phase's p50 over every round, and each activity's of the prepare and switch
    runs, from the rounds' histories."""
    seen = [p for switch, info in zip(ours, infos, strict=True)
            if (p := phases(info, switch)) is not None]
    if seen:
        print(f"{label} phases, p50 of {len(seen)} rounds: " + " + ".join(
            f"{k} {statistics.median(p[k] for p in seen) * 1000:.0f} ms" for k in PHASES))
    for i, run in enumerate(("prepare", "switch")):
        print(f"  {run}, each activity's p50 (from the end of the step before): " + "; ".join(
            f"{n} {t * 1000:.0f} ms" for n, t in activity_p50s(
                [info["runs"][i]["acts"] for info in infos if both_runs(info)])))


def activity_p50s(runs: list[dict[str, list[float]]]) -> list[tuple[str, float]]:
    """Each activity's p50 run time (seconds) over the runs that ran it, longest first. A
    local activity's is from the end of the step before it (its history has no start), so
    of steps side by side the first to end is given their common wait."""
    names = {n for acts in runs for n in acts}
    took = {n: statistics.median(acts[n][1] for acts in runs if n in acts) for n in names}
    return sorted(took.items(), key=lambda kv: -kv[1])


def print_history(title: str, switch: Switch, info: dict[str, Any]) -> None:
    """Prepare vs switch vs finish of one switch-over, and the slowest steps of each."""
    took = phases(info, switch)
    if took is None:
        print(f"\n{title}: expected a prepare and a switch run, found {len(info['runs'])}")
        return

    def ms(s: float) -> str:
        return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"

    print(f"\n{title}: patch→done {switch.seconds:.2f}s = "
          + " + ".join(f"{PHASES[k]} {ms(s)}" for k, s in took.items()))
    prep, sw = info["runs"]
    for label, run in (("prepare", prep), ("switch", sw)):
        top = sorted(run["acts"].items(), key=lambda kv: -kv[1][1])
        print(f"  {label}: " + "; ".join(f"{k} x{int(v[0])} {v[1] * 1000:.0f} ms"
                                         for k, v in top[:7])
              + f"; health timers {run['timers'] * 1000:.0f} ms")


# --- stack and main ---------------------------------------------------------------------
def jobs(prefix: str, count: int, sizes: list[int]) -> list[tuple[str, list[int]]]:
    return [(f"{prefix}{i:03d}", sizes) for i in range(count)]


async def build(args: argparse.Namespace, work: Path, registry: str
                ) -> tuple[list[Pkg], list[Pkg], list[Pkg], list[Pkg]]:
    """v1 and v2 of every package, lockwright's and the floor's, small and big."""
    t = time.perf_counter()
    small = await asyncio.to_thread(build_all, work, registry, [
        *jobs("u", args.rounds, small_sizes()), *jobs("fu", args.rounds, small_sizes())])
    print(f"built and pushed {2 * len(small)} 10-CRD packages (v1 and v2) in "
          f"{time.perf_counter() - t:.1f}s", flush=True)
    if args.big_runs <= 0:
        return small[:args.rounds], small[args.rounds:], [], []
    t = time.perf_counter()
    sizes = big_sizes(args.big_crds, args.big_mb)
    big = await asyncio.to_thread(build_all, work, registry, [
        *jobs("ub", args.big_runs, sizes), *jobs("fub", args.big_runs, sizes)])
    print(f"built and pushed {2 * len(big)} {args.big_crds}-CRD packages (v1 and v2, "
          f"{big[0].yaml_bytes / 1e6:.1f} MB package.yaml each) in "
          f"{time.perf_counter() - t:.1f}s", flush=True)
    return (small[:args.rounds], small[args.rounds:], big[:args.big_runs],
            big[args.big_runs:])


async def run(args: argparse.Namespace, work: Path) -> int:
    return await on_stack(args, work, run_on)


async def run_on(args: argparse.Namespace, work: Path, tuning: dict[str, float],
                 settings: Any, client: Any, worker: Any) -> int:
    """Build the packages and measure, on a running stack."""
    small, fsmall, big, fbig = await build(args, work, settings.insecure_registries[0])
    bench = Bench(args, work, settings, worker.proc.pid, asyncio.get_running_loop(),
                  client, tuning)
    floor = UpgradeFloor(settings.kubeconfig, settings.insecure_registries[0],
                         work / "floor", settings.system_namespace)
    res = Results()

    def body() -> None:
        try:
            measure_small(bench, floor, small, fsmall, res)
            if big:  # --big-runs 0: the 10-CRD switch-overs only
                measure_big(bench, floor, big, fbig, res, f"{args.big_crds:,}-CRD")
        finally:
            summary_rows(bench, res)

    return await measured(bench, body, run_title(
        "upgrade", args.quick, tuning,
        f"10-CRD package.yaml {small[0].yaml_bytes / 1000:.0f} KB"
        + (f", {args.big_crds:,}-CRD {big[0].yaml_bytes / 1e6:.1f} MB" if big else "")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small run: 5 rounds, a 200-CRD (10 MB) big package once")
    parser.add_argument("--rounds", type=int, default=20, help="10-CRD switch-overs")
    parser.add_argument("--big-crds", type=int, default=2000)
    parser.add_argument("--big-mb", type=float, default=100.0,
                        help="package.yaml size of the big package, MB (about)")
    parser.add_argument("--big-runs", type=int, default=3,
                        help="big switch-overs (0: the 10-CRD ones only)")
    parser.add_argument("--health-poll", type=float, default=0.2,
                        help="Tuning.health_poll_s given to the workflows")
    parser.add_argument("--control-plane", choices=("devcluster", "kube"), default="devcluster",
                        help="the Kubernetes API: devcluster, or the real kube-apiserver, "
                             "controller manager, scheduler and kwok (floors measured on the "
                             "same server)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.big_crds, args.big_mb, args.big_runs = 5, 200, 10.0, 1
    quiet_logs(urllib3=True)
    with workdir(args.keep, "upgrade") as work:
        (work / "floor").mkdir(exist_ok=True)
        return asyncio.run(run(args, work))


if __name__ == "__main__":
    sys.exit(main())
