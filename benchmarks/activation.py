"""Benchmark a 2,000-CRD safe-start Provider with 10 resources activated against the same
Provider fully active (issue 22), each beside a floor measured in the same run (a script).

Crossplane v2's answer to an API server struggling under thousands of CRDs: a provider
that declares ``safe-start`` installs every CRD as an Inactive ManagedResourceDefinition,
and only the MRDs an activation policy names become CRDs. This measures what that saves
on the real control plane, where every CRD costs kube-apiserver memory and time:

1. safe-start: a policy naming 10 of the Provider's resources is applied, then the
   Provider; timed from the create until the Provider is Healthy and the API server
   serves exactly those 10 resources (its discovery document of the group), through the
   whole path: the policies in force read at install, the 1,990 other MRDs established
   Inactive and the 10 it names Active with their CRDs in the same pass (issue 33; before,
   all 2,000 Inactive, then the activation workflow's pass and a second install), the
   runtime running;
2. fully active: the same 2,000 CRDs without the capability (every MRD Active, every CRD
   made), timed until Healthy and all 2,000 resources are served;
3. kube-apiserver's resident memory (VmRSS) before and after each, and the floors: the same
   writes in a straight line with the same core functions, no Temporal
   (``benchmarks/install.py``'s ``Floor``, with the same MRD states), then the same wait
   for the resources to be served.

Each of the four runs on a control plane of its own: 2,000 CRDs grow kube-apiserver by
gigabytes, so two on one server would measure one against the other's memory (and may not
fit the machine).

    python benchmarks/activation.py [--crds 2000] [--mb 100] [--activate 10]
                                    [--control-plane kube|devcluster] [--keep DIR]
                                    [--only safe-start] [--rounds N]

``--only safe-start`` measures the first case and its floor alone (two control planes, not
four: the fully active case grows kube-apiserver by about 10 GB and takes minutes).
``--rounds N`` measures each N times, taking turns (the floor first every other round), and
reports medians: on a shared machine one pair of runs can differ by 2x on load alone.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml

from benchmarks.common import big_provider_arguments, quiet_logs, run_title, workdir
from benchmarks.install import (
    Bench,
    big_sizes,
    build_and_push,
    fmt_s,
    on_stack,
    push_root,
    ratio,
    report,
    write_package_root,
)
from tests.helpers import api_client

VERSION = "v1beta1"  # benchmarks/crdgen.py's CRDs serve this version
MRAP = ("apiextensions.crossplane.io/v1alpha1", "ManagedResourceActivationPolicy")
#: Issue 33's target for the safe-start case: one pass, so close to the floor's one.
SAFE_START_TARGET = 1.2
CASES = {"safe-start": (("ss", True, False), ("fss", True, True)),
         "fully-active": (("full", False, False), ("ffull", False, True))}
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


def install_and_serve(b: Bench, args: argparse.Namespace, name: str, ref: str,
                      want: int) -> tuple[float, float, float]:
    """Apply ``name``; (seconds until Healthy and ``want`` served, apiserver MB before,
    after)."""
    api = api_client(b.settings.kubeconfig)
    before = apiserver_mb(args)
    t0 = time.perf_counter()
    b.apply(f"bench-{name}", ref)
    took = wait_served(b, api, f"bench-{name}", group_of(name), want, t0)
    after = apiserver_mb(args)
    print(f"  {name}: {took:.1f}s, kube-apiserver {before:.0f} → {after:.0f} MB", flush=True)
    return took, before, after


def floor_install(b: Bench, args: argparse.Namespace, name: str, ref: str, want: int,
                  active: frozenset[str] | None) -> tuple[float, float, float]:
    """The floor of ``name``: the same writes in a straight line, the same wait."""
    assert b.floor is not None
    api = api_client(b.settings.kubeconfig)
    b.floor.active = active
    before = apiserver_mb(args)
    t0 = time.perf_counter()
    b.floor.install(ref, name)
    took = wait_floor(api, group_of(name), want, t0)
    after = apiserver_mb(args)
    print(f"  floor {name}: {took:.1f}s, kube-apiserver {before:.0f} → {after:.0f} MB",
          flush=True)
    return took, before, after


def wait_floor(api: Any, group: str, want: int, t0: float) -> float:
    while served(api, group) != want:
        if time.perf_counter() - t0 > TIMEOUT_S:
            raise RuntimeError(f"floor: {group} not served after {TIMEOUT_S:.0f}s")
        time.sleep(POLL_S)
    return time.perf_counter() - t0


def ten(args: argparse.Namespace, name: str) -> list[str]:
    return [f"kind{i}s.{group_of(name)}" for i in range(args.activate)]


async def prepared(args: argparse.Namespace, work: Path, tuning: dict[str, float],
                   settings: Any, client: Any, worker: Any, name: str,
                   safe: bool) -> tuple[Bench, str]:
    """A stack without the default policy, ``name`` pushed; (its Bench, the reference)."""
    from lockwright.k8s import Kube

    kube = Kube.connect(settings.kubeconfig)
    # The stack's worker made the default policy (*): this benchmark chooses its own.
    kube.delete(*MRAP, "default")
    if safe:
        activate(kube, f"bench-{name}", ten(args, name))
    registry, sizes = settings.insecure_registries[0], big_sizes(args.crds, args.mb)
    push = safe_start_push if safe else build_and_push
    ref, total = await asyncio.to_thread(push, str(work), registry, name, sizes)
    args.package_mb = total / 1e6
    return Bench(args, work, settings, worker.proc.pid, asyncio.get_running_loop(), client,
                 tuning), ref


#: One measurement: seconds, kube-apiserver MB before, after.
Run = tuple[float, float, float]


def phase(name: str, safe: bool, floor: bool, results: dict[str, list[Run]]) -> Any:
    """One measurement on a stack of its own: kube-apiserver's memory is its own too."""
    async def measure(args: argparse.Namespace, work: Path, tuning: dict[str, float],
                      settings: Any, client: Any, worker: Any) -> int:
        b, ref = await prepared(args, work, tuning, settings, client, worker, name, safe)
        want = args.activate if safe else args.crds
        if floor:
            active = frozenset(ten(args, name)) if safe else None
            got = await asyncio.to_thread(floor_install, b, args, name, ref, want, active)
        else:
            got = await asyncio.to_thread(install_and_serve, b, args, name, ref, want)
        results.setdefault(name, []).append(got)
        return 0
    return measure


def medians(runs: dict[str, list[Run]]) -> dict[str, Run]:
    """Each measurement's median over the rounds (seconds, and memory before and after)."""
    return {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
                statistics.median(r[2] for r in v)) for k, v in runs.items()}


def table(args: argparse.Namespace, runs: dict[str, list[Run]]) -> Any:
    """The rows: each case measured beside its floor (medians of the rounds), and what
    each grew kube-apiserver by."""
    results = medians(runs)
    out = SimpleNamespace(rows=[], notes=[])
    label = f"{args.crds}-CRD"
    for case, ours, floor in (("safe-start, {n} activated", "ss", "fss"),
                              ("fully active", "full", "ffull")):
        if ours not in results:
            continue
        took, fl = results[ours][0], results[floor][0]
        safe = ours == "ss"
        target = f"<= {SAFE_START_TARGET}x" if safe else ""
        out.rows.append((f"{label} {case.format(n=args.activate)}: apply→Healthy+served",
                         fmt_s(took), fmt_s(fl), f"{ratio(took, fl):.2f}x", target,
                         not safe or ratio(took, fl) <= SAFE_START_TARGET))
    grown = {k: v[2] - v[1] for k, v in results.items()}
    if grown.get("full"):
        out.rows.append(("kube-apiserver memory grown by the safe-start install",
                         f"{grown['ss']:.0f} MB", f"{grown['fss']:.0f} MB", "",
                         f"< fully active ({grown['full']:.0f} MB)",
                         grown["ss"] < grown["full"]))
        out.rows.append(("kube-apiserver memory grown by the fully active install",
                         f"{grown['full']:.0f} MB", f"{grown['ffull']:.0f} MB", "", "", True))
    elif grown.get("ss"):
        out.rows.append(("kube-apiserver memory grown by the safe-start install",
                         f"{grown['ss']:.0f} MB", f"{grown['fss']:.0f} MB", "", "", True))
    out.notes.append("kube-apiserver VmRSS before → after, MB (medians): " + "; ".join(
        f"{k} {v[1]:.0f} → {v[2]:.0f}" for k, v in results.items()))
    out.notes.append("seconds of each round: " + "; ".join(
        f"{k} " + ", ".join(f"{r[0]:.1f}" for r in v) for k, v in runs.items()))
    return out


async def run(args: argparse.Namespace, work: Path) -> int:
    """Each case and floor on a fresh control plane (a 2,000-CRD install grows
    kube-apiserver by gigabytes: two on one server would measure the second against the
    first's memory, and may not fit), ``--rounds`` times, the order of each pair turned
    every round (on a shared machine the load moves between two runs)."""
    runs: dict[str, list[Run]] = {}
    cases = [CASES[args.only]] if args.only else list(CASES.values())
    for round_ in range(args.rounds):
        order = [p for case in cases for p in (case if round_ % 2 == 0 else case[::-1])]
        for name, safe, floor in order:
            print(f"{name} (round {round_ + 1}) on a fresh {args.control_plane}:", flush=True)
            (work / f"{name}{round_}" / "floor").mkdir(parents=True, exist_ok=True)
            code = await on_stack(args, work / f"{name}{round_}",
                                  phase(name, safe, floor, runs))
            if code:
                return code
    out = table(args, runs)
    report(out, run_title("activation", False, {"health_poll_s": args.health_poll},
                          f"{args.crds} CRDs, {args.package_mb:.1f} MB package.yaml; on "
                          f"{args.control_plane}; medians of {args.rounds} rounds"))
    return 0 if all(r[5] for r in out.rows) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    big_provider_arguments(parser)
    parser.add_argument("--activate", type=int, default=10)
    parser.add_argument("--only", choices=sorted(CASES),
                        help="measure one case and its floor (default: both)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure each this many times, in turns; medians")
    args = parser.parse_args()
    quiet_logs(urllib3=True)
    with workdir(args.keep, "activation") as work:
        return asyncio.run(run(args, work))


if __name__ == "__main__":
    sys.exit(main())
