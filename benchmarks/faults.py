"""Every server killed mid-change, N times each (issue 29 part 3).

A stack on the Temporal cluster (PostgreSQL, temporal-server's four services) with 3 workers
and 1 watcher, on the real control plane (``--control-plane kube``, the default) or
devcluster, production timings. Each kill runs the work of tests/faults/scenario.py (5
installs with dependencies, 5 health-gated switch-overs, one gated upgrade then accepted),
SIGKILLs the component once a switch-over is in flight, restarts it on its data and checks
everything (tests/faults/checks.py). A baseline runs the same work with no kill.

    python benchmarks/faults.py [--kills 10] [--components worker,etcd] \
        [--control-plane kube|devcluster] [--keep DIR]

Exit 1 when a target is missed: 100% converged, 0 lost Lock entries, 0 s without an
Available runtime apart from API-server downtime, worst convergence <= 60 s after the
killed component is back.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `tests` and `benchmarks` importable

from benchmarks.common import quiet_logs  # noqa: E402
from lockwright.controlplane import temporalcluster  # noqa: E402
from tests.faults import fault  # noqa: E402
from tests.faults.scenario import TARGET_S, clean_up, components_for  # noqa: E402
from tests.fixtures import registry as registries  # noqa: E402
from tests.fixtures.stack import Stack, running_stack  # noqa: E402
from tests.fixtures.temporal import (  # noqa: E402
    CAN_SUGGESTED_AFTER_EVENTS,
    STACK_WORKERS,
    TemporalTarget,
    search_attribute_pairs,
)

HEADER = ("component", "kills", "converged", "worst converge s", "worst down s",
          "runtime gaps", "worst gap s", "API blind s", "lost Lock", "dup Lock", "orphans",
          "open wf", "failed wf", "retries")


@contextlib.contextmanager
def servers(work: Path, runner: asyncio.Runner, kind: str
            ) -> Iterator[tuple[Stack, temporalcluster.TemporalCluster, Client]]:
    """Registries, the Temporal cluster and a stack on them (3 workers, 1 watcher)."""
    reg_proc, reg = registries.start_registry(_mkdir(work / "registry"))
    auth_proc, auth = registries.start_registry(_mkdir(work / "registry2"))
    options = temporalcluster.Options(
        search_attributes=search_attribute_pairs(),
        dynamic_config={"limit.historyCount.suggestContinueAsNew": CAN_SUGGESTED_AFTER_EVENTS})
    tc = temporalcluster.start(work / "temporal", options)
    try:
        client = runner.run(Client.connect(tc.address, namespace=options.namespace))
        target = TemporalTarget("cluster", WorkflowEnvironment.from_client(client),
                                STACK_WORKERS["cluster"])
        with running_stack(reg, auth, target, kind=kind, production_timings=True) as s:
            yield s, tc, client
    finally:
        tc.stop()
        registries.stop(auth_proc)
        registries.stop(reg_proc)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def row(component: str, outcomes: list[fault.Outcome]) -> tuple[str, ...]:
    gaps = [g for o in outcomes for g in o.gaps.values() if g > 0]
    return (component, str(len(outcomes)), f"{sum(o.converged for o in outcomes)}",
            f"{max(o.converge_s for o in outcomes):.1f}",
            f"{max(o.down_s for o in outcomes):.1f}", str(len(gaps)),
            f"{max(gaps, default=0.0):.1f}", f"{max(o.blind_s for o in outcomes):.1f}",
            str(sum(len(o.lost) for o in outcomes)),
            str(sum(len(o.duplicated) for o in outcomes)),
            str(sum(len(o.orphans) for o in outcomes)),
            str(sum(len(o.open_workflows) for o in outcomes)),
            str(sum(len(o.failed_workflows) for o in outcomes)),
            str(sum(o.retries for o in outcomes)))


def missed(outcomes: list[fault.Outcome]) -> list[str]:
    """The targets these kills missed."""
    found = []
    for o in outcomes:
        found += [f"{o.component}: {p}" for p in o.problems()]
        if o.converged and o.converge_s > TARGET_S:
            found.append(f"{o.component}: converged {o.converge_s:.1f}s after it was back")
    return found


def table(rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10,
                        help="kills of each component (0: only the baseline, no kill)")
    parser.add_argument("--components", default="", help="comma-separated (default: all)")
    parser.add_argument("--control-plane", choices=("kube", "devcluster"), default="kube")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="save the logs and open or Failed workflows' histories of each "
                             "kill that missed a target to DIR/<component>-<n>")
    args = parser.parse_args()
    quiet_logs(urllib3=True)
    wanted = [c for c in args.components.split(",") if c] or list(
        components_for(args.control_plane))
    unknown = set(wanted) - set(components_for(args.control_plane))
    if unknown:
        parser.error(f"--components {','.join(sorted(unknown))}: not on "
                     f"{args.control_plane}; one of {', '.join(components_for(args.control_plane))}")
    rows, misses = [], []
    with tempfile.TemporaryDirectory(prefix="lockwright-bench-faults-") as tmp, \
            asyncio.Runner() as runner, servers(Path(tmp), runner, args.control_plane) as (
                stack, tc, client):
        for component in [None, *(wanted if args.kills else [])]:  # 0 kills: the baseline
            outcomes = []
            for i in range(1 if component is None else args.kills):
                o = fault.run(stack, tc, component, Path(tmp) / f"{component}-{i}")
                runner.run(fault.check_workflows(client, stack, o))
                if args.keep is not None and missed([o]):
                    runner.run(fault.keep_evidence(client, stack, o,
                                                   args.keep / f"{component}-{i + 1}"))
                outcomes.append(o)
                print(f"{o.component} #{i + 1}: converged {o.converged} in {o.converge_s:.1f}s"
                      f" (down {o.down_s:.1f}s); problems {o.problems()}", flush=True)
                clean_up(stack, o.scope)  # the next kill starts from the same stack
            rows.append(row(outcomes[0].component, outcomes))
            misses += missed(outcomes)
    print(f"\nfaults on the Temporal cluster, 3 workers, 1 watcher, {args.control_plane}; "
          f"production timings\n")
    print(table(rows))
    for miss in misses:
        print(f"MISSED {miss}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
