"""Benchmark Apply → Healthy with production Tuning beside the same install with a 0.05 s
health poll (issue 33, "health as it happens"), a script.

Two stacks in turn (``benchmarks/install.py``'s ``bench_stack``: Temporal dev server,
registry, devcluster or ``--control-plane kube``, worker and watcher): the first with no
``LOCKWRIGHT_TUNING`` at all (production defaults: ``health_poll_s`` 2 s), the second with
``health_poll_s`` 0.05 (the floor: what a tight poll buys). On each, ``--installs``
10-CRD Providers are applied one after another and timed from the create until Installed
and Healthy are seen on a watch of the Provider; a watch of the system namespace's
Deployments notes when the Provider's runtime became Available, so each install also
gives Available → Healthy, the delay the health wait adds.

    python benchmarks/health.py [--installs 10] [--control-plane devcluster|kube] [--keep DIR]

Targets: with production Tuning, Apply → Healthy p50 within 0.3 s of the 0.05 s poll's,
and Available → Healthy p50 at most 0.3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import quiet_logs, workdir
from benchmarks.install import (
    Bench,
    bench_stack,
    build_all,
    fmt_s,
    pct,
    report,
    small_sizes,
)
from benchmarks.upgrade import Switchover

#: The targets: default p50 at most this over the tight poll's; Available → Healthy p50.
WITHIN_S = 0.3
TIGHT_POLL_S = 0.05


def available_at(watch: Switchover, since: float) -> float | None:
    """When the watch first saw one of the package's Deployments Available after ``since``."""
    with watch.cond:
        return next((t for t, up, _ in watch.timeline if t >= since and up), None)


def one_install(b: Bench, name: str, ref: str) -> tuple[float, float]:
    """(Apply → Healthy, Available → Healthy) of one Provider, seconds."""
    with Switchover(b.settings, name, runtimes_only=True) as watch:
        t0 = time.perf_counter()
        took, _ = b.install(name, ref, 120)
        healthy = t0 + took
        seen = watch.wait(lambda: available_at(watch, t0), healthy + 30)
    return took, healthy - seen


async def measure(args: argparse.Namespace, work: Path, tuning: dict[str, float],
                  label: str) -> tuple[list[float], list[float]]:
    """Every install on a fresh stack with ``tuning``: (Apply → Healthy, Available → Healthy)."""
    async with bench_stack(work, tuning, args.control_plane) as (settings, client, worker, _):
        prefix = "hd" if not tuning else "hp"
        jobs = [(f"{prefix}{i:03d}", small_sizes()) for i in range(args.installs)]
        built = await asyncio.to_thread(build_all, work, settings.insecure_registries[0],
                                        jobs, 2)
        b = Bench(args, work, settings, worker.proc.pid, asyncio.get_running_loop(), client,
                  tuning)

        def body() -> tuple[list[float], list[float]]:
            apply_s, gap_s = [], []
            for i, (name, _) in enumerate(jobs, 1):
                took, gap = one_install(b, f"bench-{name}", built[name][0])
                apply_s.append(took)
                gap_s.append(gap)
                print(f"  {label} install {i}/{len(jobs)}: {took:.2f}s, Available → Healthy "
                      f"{gap:.3f}s; load {os.getloadavg()[0]:.1f}", flush=True)
            return apply_s, gap_s

        return await asyncio.to_thread(body)


async def run(args: argparse.Namespace, work: Path) -> int:
    """Production Tuning, then the tight poll, each on a stack of its own; the table."""
    ours = await measure(args, work / "default", {}, "production Tuning")
    tight = await measure(args, work / "tight", {"health_poll_s": TIGHT_POLL_S},
                          f"health_poll_s {TIGHT_POLL_S}")
    rows = Rows()
    p50, fp50 = pct(ours[0], .5), pct(tight[0], .5)
    rows.row(f"Apply → Healthy p50 (n={len(ours[0])})", fmt_s(p50), fmt_s(fp50),
             f"+{p50 - fp50:.2f} s", f"<= +{WITHIN_S} s", p50 - fp50 <= WITHIN_S)
    gap, fgap = pct(ours[1], .5), pct(tight[1], .5)
    rows.row("Available → Healthy p50", f"{gap:.3f} s", f"{fgap:.3f} s", "",
             f"<= {WITHIN_S} s", gap <= WITHIN_S)
    rows.row("Available → Healthy max", f"{max(ours[1]):.3f} s", f"{max(tight[1]):.3f} s",
             "", "", True)
    rows.notes.append(f"load average at the end {os.getloadavg()[0]:.1f}; floor = the same "
                      f"installs with health_poll_s {TIGHT_POLL_S}")
    report(rows, f"lockwright health benchmark (production Tuning vs health_poll_s "
                 f"{TIGHT_POLL_S}; 10-CRD Providers; on {args.control_plane})")
    return 0 if all(r[5] for r in rows.rows) else 1


class Rows:
    """The table ``install.report`` prints: rows and notes."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, str, bool]] = []
        self.notes: list[str] = []

    def row(self, *cells: Any) -> None:
        self.rows.append(cells)  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--installs", type=int, default=10)
    parser.add_argument("--control-plane", choices=("devcluster", "kube"), default="devcluster")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    args = parser.parse_args()
    quiet_logs(urllib3=True)
    with workdir(args.keep, "health") as work:
        for sub in ("default", "tight"):
            (work / sub / "floor").mkdir(parents=True, exist_ok=True)
        return asyncio.run(run(args, work))


if __name__ == "__main__":
    sys.exit(main())
