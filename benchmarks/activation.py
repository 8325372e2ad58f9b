"""Benchmark a 2,000-CRD safe-start Provider with 10 resources activated against the same
Provider fully active (issue 22), each beside a floor measured in the same run (a script).

Crossplane v2's answer to an API server struggling under thousands of CRDs: a provider
that declares ``safe-start`` installs every CRD as an Inactive ManagedResourceDefinition,
and only the MRDs an activation policy names become CRDs. This measures what that saves
on the real control plane, where every CRD costs kube-apiserver memory and time:

1. safe-start: a policy naming 10 of the Provider's resources is applied, then the
   Provider; timed from the create until the Provider is Healthy and the API server
   serves exactly those 10 resources (its discovery document of the group), through the
   whole path: 2,000 MRDs established Inactive, the runtime at zero, the activation
   workflow's pass, the package installing again, the 10 CRDs, the runtime scaled up;
2. fully active: the same 2,000 CRDs without the capability (every MRD Active, every CRD
   made), timed until Healthy and all 2,000 resources are served;
3. kube-apiserver's resident memory (VmRSS) before and after each, and the floors: the same
   writes in a straight line with the same core functions, no Temporal
   (``benchmarks/install.py``'s ``Floor``, with the same MRD states), then the same wait
   for the resources to be served. The floors run after both measurements, so their CRDs
   are not in lockwright's memory numbers.

    python benchmarks/activation.py [--crds 2000] [--mb 100] [--activate 10]
                                    [--control-plane kube|devcluster] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml

from benchmarks.common import quiet_logs, run_title, workdir
from benchmarks.install import (
    Bench,
    big_sizes,
    build_all,
    fmt_s,
    measured,
    on_stack,
    push_root,
    ratio,
    write_package_root,
)
from tests.helpers import api_client

VERSION = "v1beta1"  # benchmarks/crdgen.py's CRDs serve this version
MRAP = ("apiextensions.crossplane.io/v1alpha1", "ManagedResourceActivationPolicy")
TIMEOUT_S = 900.0
POLL_S = 0.05


def safe_start_push(work: str, registry: str, name: str, sizes: list[int]) -> tuple[str, int]:
    """build_and_push with ``capabilities: [SafeStart]`` in the Provider's metadata."""
    root, total = write_package_root(work, name, sizes)
    meta = yaml.safe_load((root / "crossplane.yaml").read_text())
    meta["spec"]["capabilities"] = ["SafeStart"]
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    ref = push_root(work, registry, name, root)
    shutil.rmtree(root)
    return ref, total


def group_of(name: str) -> str:
    return f"{name}.bench.example.org"


def served(api: Any, group: str) -> int:
    """How many resources the API server serves in ``group`` (its discovery document)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        doc = client.CustomObjectsApi(api).get_api_resources(group, VERSION)
    except ApiException as exc:
        if exc.status == 404:  # until the group's first CRD is served
            return 0
        raise
    return sum(1 for r in doc.resources or [] if "/" not in r.name)


def wait_served(b: Bench, api: Any, name: str, group: str, want: int, t0: float) -> float:
    """Seconds from ``t0`` until the Provider is Healthy and ``want`` resources served."""
    from benchmarks.install import healthy

    deadline = t0 + TIMEOUT_S
    while time.perf_counter() < deadline:
        if served(api, group) == want and healthy(b.get(name)):
            return time.perf_counter() - t0
        time.sleep(POLL_S)
    raise RuntimeError(f"{name}: {served(api, group)} of {want} resources served, "
                       f"Healthy={healthy(b.get(name))} after {TIMEOUT_S:.0f}s")


def apiserver_mb(args: argparse.Namespace) -> float:
    """kube-apiserver's resident memory now, MB (0 on devcluster)."""
    rss = args.control_plane_memory()
    return float(rss.get("kube-apiserver", 0)) / 1e6


def activate(kube: Any, policy: str, names: list[str]) -> None:
    kube.create({"apiVersion": MRAP[0], "kind": MRAP[1], "metadata": {"name": policy},
                 "spec": {"activate": names}})


def measure(b: Bench, args: argparse.Namespace, kube: Any, pkgs: dict[str, str]) -> None:
    api = api_client(b.settings.kubeconfig)
    ten = [f"kind{i}s.{group_of('ss')}" for i in range(args.activate)]
    before = apiserver_mb(args)
    activate(kube, "bench-ten", ten)
    t0 = time.perf_counter()
    b.apply("bench-ss", pkgs["ss"])
    safe = wait_served(b, api, "bench-ss", group_of("ss"), args.activate, t0)
    after_safe = apiserver_mb(args)
    print(f"  safe-start: {safe:.1f}s, kube-apiserver {before:.0f} → {after_safe:.0f} MB",
          flush=True)
    t0 = time.perf_counter()
    b.apply("bench-full", pkgs["full"])
    full = wait_served(b, api, "bench-full", group_of("full"), args.crds, t0)
    after_full = apiserver_mb(args)
    print(f"  fully active: {full:.1f}s, kube-apiserver {after_safe:.0f} → {after_full:.0f} MB",
          flush=True)
    floors = floor_runs(b, api, args, pkgs)
    label = f"{args.crds}-CRD"
    b.row(f"{label} safe-start, {args.activate} activated: apply→Healthy+served",
          fmt_s(safe), fmt_s(floors[0]), f"{ratio(safe, floors[0]):.2f}x", "", True)
    b.row(f"{label} fully active: apply→Healthy+served", fmt_s(full), fmt_s(floors[1]),
          f"{ratio(full, floors[1]):.2f}x", "", True)
    if after_full:
        grew_safe, grew_full = after_safe - before, after_full - after_safe
        b.row("kube-apiserver memory grown by the safe-start install", f"{grew_safe:.0f} MB",
              "", "", f"< fully active ({grew_full:.0f} MB)", grew_safe < grew_full)
        b.row("kube-apiserver memory grown by the fully active install", f"{grew_full:.0f} MB",
              "", "", "", True)
        b.notes.append(f"kube-apiserver VmRSS: {before:.0f} MB at start, {after_safe:.0f} MB "
                       f"after safe-start, {after_full:.0f} MB after fully active")


def floor_runs(b: Bench, api: Any, args: argparse.Namespace,
               pkgs: dict[str, str]) -> tuple[float, float]:
    """The floors: the same writes in a straight line, then the same wait for serving."""
    assert b.floor is not None
    b.floor.active = frozenset(f"kind{i}s.{group_of('fss')}" for i in range(args.activate))
    t0 = time.perf_counter()
    b.floor.install(pkgs["fss"], "fss")
    safe = wait_floor(api, group_of("fss"), args.activate, t0)
    b.floor.active = None
    t0 = time.perf_counter()
    b.floor.install(pkgs["ffull"], "ffull")
    return safe, wait_floor(api, group_of("ffull"), args.crds, t0)


def wait_floor(api: Any, group: str, want: int, t0: float) -> float:
    while served(api, group) != want:
        if time.perf_counter() - t0 > TIMEOUT_S:
            raise RuntimeError(f"floor: {group} not served after {TIMEOUT_S:.0f}s")
        time.sleep(POLL_S)
    return time.perf_counter() - t0


async def run_on(args: argparse.Namespace, work: Path, tuning: dict[str, float],
                 settings: Any, client: Any, worker: Any) -> int:
    from lockwright.k8s import Kube

    kube = Kube.connect(settings.kubeconfig)
    # The stack's worker made the default policy (*): this benchmark chooses its own.
    kube.delete(*MRAP, "default")
    registry, sizes = settings.insecure_registries[0], big_sizes(args.crds, args.mb)
    t = time.perf_counter()
    built = await asyncio.to_thread(build_all, work, registry,
                                    [("full", sizes), ("ffull", sizes)], 2)
    for name in ("ss", "fss"):
        built[name] = await asyncio.to_thread(safe_start_push, str(work), registry, name,
                                              sizes)
    print(f"built and pushed 4 {args.crds}-CRD packages in {time.perf_counter() - t:.1f}s",
          flush=True)
    bench = Bench(args, work, settings, worker.proc.pid, asyncio.get_running_loop(), client,
                  tuning)
    pkgs = {name: ref for name, (ref, _) in built.items()}
    return await measured(bench, lambda: measure(bench, args, kube, pkgs), run_title(
        "activation", False, tuning, f"{args.crds} CRDs, {built['ss'][1] / 1e6:.1f} MB "
        f"package.yaml; on {args.control_plane}"))


async def run(args: argparse.Namespace, work: Path) -> int:
    return await on_stack(args, work, run_on)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crds", type=int, default=2000)
    parser.add_argument("--mb", type=float, default=100.0,
                        help="package.yaml size, MB (about)")
    parser.add_argument("--activate", type=int, default=10)
    parser.add_argument("--health-poll", type=float, default=0.2,
                        help="Tuning.health_poll_s given to the workflows")
    parser.add_argument("--control-plane", choices=("devcluster", "kube"), default="kube")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    args = parser.parse_args()
    quiet_logs(urllib3=True)
    with workdir(args.keep, "activation") as work:
        (work / "floor").mkdir(exist_ok=True)
        return asyncio.run(run(args, work))


if __name__ == "__main__":
    sys.exit(main())
