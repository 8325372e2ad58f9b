"""Benchmark ``lockwright api sum`` of a cluster serving 2,000 custom types (issue 23), beside
a floor measured in the same run: listing the CRDs (a script).

A 2,000-CRD Provider (benchmarks/crdgen.py's provider-aws-shaped CRDs, ``--mb`` of YAML) is
installed by the stack's worker, as a user's ``kubectl apply`` would; once every CRD is
Established:

1. ``lockwright api sum`` as an operator runs it (a process: start-up, the reads of CRDs,
   MRDs and revisions, a digest of each live definition, the sorted lines), beside
   ``kubectl get crd -o json`` (a process reading the same CRDs and printing them);
2. the same in one process: ``commands.api.read`` plus the rows and the sum text, beside
   one list of the CRDs through the same client (``Kube.list``), so the ratio is what the
   sum adds to the one read it cannot do without.

Each is run ``--rounds`` times, the four taking turns in an order rotated each round
(medians). Both ratios are printed beside a target.

    python benchmarks/api_sum.py [--crds 2000] [--mb 100] [--rounds 4]
                                 [--control-plane kube|devcluster] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import big_provider_arguments, quiet_logs, run_title, workdir
from benchmarks.install import Bench, big_sizes, build_and_push, fmt_s, on_stack, ratio, report

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
TIMEOUT_S = 900.0
#: Targets: what the sum may cost beside the read it cannot do without.
PROCESS_MAX, IN_PROCESS_MAX = 3.0, 2.5


def interleaved(calls: list[Callable[[], object]], rounds: int) -> list[float]:
    """The median seconds of each call, the calls taking turns, the order rotated each
    round: a big list leaves kube-apiserver collecting garbage, which the next call pays,
    so each call follows each of the others in turn."""
    times: list[list[float]] = [[] for _ in calls]
    for r in range(rounds):
        for i in (list(range(len(calls)))[r % len(calls):] + list(range(r % len(calls)))):
            t0 = time.perf_counter()
            calls[i]()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def run_process(argv: list[str], kubeconfig: str) -> str:
    """Run ``argv`` against the cluster; its stdout (exit 0 required)."""
    env = {**os.environ, "KUBECONFIG": kubeconfig, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def wait_established(kube: Any, group: str, want: int) -> None:
    """Until ``want`` CRDs of ``group`` are Established (untimed)."""
    from lockwright.identity.surface import established

    deadline = time.perf_counter() + TIMEOUT_S
    while time.perf_counter() < deadline:
        crds = kube.list(*CRD)
        if sum(1 for c in crds if c["spec"]["group"] == group and established(c)) >= want:
            return
        time.sleep(1.0)
    raise RuntimeError(f"{group}: fewer than {want} CRDs Established after {TIMEOUT_S:.0f}s")


def in_process_sum(kubeconfig: str) -> int:
    """``api sum`` without the process: the reads, the rows, the text; its line count."""
    from lockwright.commands.api import read
    from lockwright.identity.surface import sum_text
    from lockwright.k8s import Kube

    with Kube.connect(kubeconfig) as kube:
        return sum_text(read(kube).rows()).count("\n")


def in_process_floor(kubeconfig: str) -> int:
    """One list of the CRDs through the same client; how many."""
    from lockwright.k8s import Kube

    with Kube.connect(kubeconfig) as kube:
        return len(kube.list(*CRD))


def measure_all(args: argparse.Namespace, kubeconfig: str) -> Any:
    """The four timings and the table rows."""
    lines = run_process([sys.executable, "-m", "lockwright", "api", "sum"], kubeconfig)
    ours, floor, inner, inner_floor = interleaved([
        lambda: run_process([sys.executable, "-m", "lockwright", "api", "sum"], kubeconfig),
        lambda: run_process(["kubectl", "get", "crd", "-o", "json"], kubeconfig),
        lambda: in_process_sum(kubeconfig), lambda: in_process_floor(kubeconfig)],
        args.rounds)
    out = SimpleNamespace(rows=[], notes=[])
    label = f"lockwright api sum ({lines.count(chr(10))} lines) vs kubectl get crd -o json"
    out.rows.append((label, fmt_s(ours), fmt_s(floor), f"{ratio(ours, floor):.2f}x",
                     f"<= {PROCESS_MAX}x", ratio(ours, floor) <= PROCESS_MAX))
    out.rows.append(("in process: read + rows + sum vs one Kube.list of the CRDs",
                     fmt_s(inner), fmt_s(inner_floor), f"{ratio(inner, inner_floor):.2f}x",
                     f"<= {IN_PROCESS_MAX}x", ratio(inner, inner_floor) <= IN_PROCESS_MAX))
    out.notes.append(f"medians of {args.rounds} rounds, the four taking turns (rotated); "
                     f"{args.package_mb:.1f} MB of CRD YAML")
    return out


async def measure(args: argparse.Namespace, work: Path, tuning: dict[str, float],
                  settings: Any, client: Any, worker: Any) -> int:
    """Install the big provider through the stack, then time the sum and its floors."""
    from lockwright.k8s import Kube

    registry, name = settings.insecure_registries[0], "apisum"
    ref, total = await asyncio.to_thread(build_and_push, str(work), registry, name,
                                         big_sizes(args.crds, args.mb))
    args.package_mb = total / 1e6
    bench = Bench(args, work, settings, worker.proc.pid, asyncio.get_running_loop(), client,
                  tuning)
    took, _ = await asyncio.to_thread(bench.install, f"bench-{name}", ref, TIMEOUT_S)
    print(f"  installed {args.crds} CRDs in {took:.1f}s", flush=True)
    with Kube.connect(settings.kubeconfig) as kube:
        await asyncio.to_thread(wait_established, kube, f"{name}.bench.example.org", args.crds)
    out = await asyncio.to_thread(measure_all, args, settings.kubeconfig)
    report(out, run_title("api sum", False, tuning, f"{args.crds} CRDs, "
                          f"{args.package_mb:.1f} MB package.yaml; on {args.control_plane}"))
    return 0 if all(r[5] for r in out.rows) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    big_provider_arguments(parser)
    parser.add_argument("--rounds", type=int, default=4,
                        help="rounds; with 4 each measurement follows each other once")
    args = parser.parse_args()
    quiet_logs(urllib3=True)
    with workdir(args.keep, "api-sum") as work:
        (work / "floor").mkdir(parents=True, exist_ok=True)
        return asyncio.run(on_stack(args, work, measure))


if __name__ == "__main__":
    sys.exit(main())
