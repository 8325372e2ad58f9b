"""``lockwright plan KIND/NAME [--package REF]``: what an upgrade will change, and whether
it breaks anything.

Without ``--package``, the plan of the upgrade the package's spec asks for, as the
package workflow prepared it (its ``plan`` query). With ``--package REF``, the plan of
pointing the package at ``REF``, made by a ``PlanCandidate`` workflow on the worker,
without changing the package object or writing anything. Exit code 0 for a compatible
plan, 2 for a breaking one (so it can gate a pipeline), 1 when there is no plan.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import uuid
from typing import TYPE_CHECKING, Any

from lockwright.commands import common

if TYPE_CHECKING:
    from lockwright.upgrade.plan import Plan

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

BREAKING_EXIT = 2


def register(subparsers: Any) -> None:
    """Add ``plan``."""
    parser = subparsers.add_parser(
        "plan", help="show what an upgrade of a package changes and whether it breaks "
        "anything (exit 2 when it does)")
    parser.add_argument("package", type=common.package_ref, metavar="KIND/NAME",
                        help="e.g. provider/provider-aws-s3")
    parser.add_argument("--package", dest="candidate", metavar="REF",
                        help="plan this package reference instead of the prepared upgrade; "
                        "the package object is not changed")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--timeout", type=common.duration, default=300.0, metavar="DURATION",
                        help="how long to wait for a candidate's plan (default 5m)")
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(run))


def run(args: argparse.Namespace) -> int:
    """Print the plan; the exit code says whether it breaks."""
    ref: common.PackageRef = args.package
    found = asyncio.run(_plan(common.settings(args), ref, args.candidate, args.timeout))
    if found is None:
        return common.fail(f"{ref} has no prepared upgrade to plan (its spec.package is "
                           "the active revision's); give --package REF to plan another")
    print(json.dumps(dataclasses.asdict(found), indent=2) if args.output == "json"
          else render(ref, found))
    return 0 if found.compatible else BREAKING_EXIT


async def _plan(s: Any, ref: common.PackageRef, candidate: str | None,
                timeout: float) -> Plan | None:
    from temporalio.client import WorkflowFailureError

    from lockwright import contracts as c
    from lockwright.errors import LockwrightError
    from lockwright.upgrade.plan import Plan

    client = await common.temporal(s)
    if not candidate:
        handle = client.get_workflow_handle(c.package_workflow_id(ref.kind, ref.name,
                                                                  s.task_queue))
        shown: Plan | None = await handle.query(c.QUERY_PLAN, result_type=Plan)
        return shown
    try:
        return await asyncio.wait_for(client.execute_workflow(
            "PlanCandidate", c.PlanCandidateInput(kind=ref.kind, name=ref.name,
                                                  source=candidate),
            id=c.plan_workflow_id(ref.kind, ref.name, uuid.uuid4().hex[:8], s.task_queue),
            task_queue=s.task_queue, result_type=Plan), timeout)
    except WorkflowFailureError as exc:
        raise LockwrightError(f"cannot plan {candidate}: {common.root_cause(exc)}") from None
    except TimeoutError:
        raise LockwrightError(f"no plan within {timeout:g}s: is a worker running?") from None


def render(ref: common.PackageRef, plan: Plan) -> str:
    """The plan as text: one section per kind of change."""
    lines = [f"{ref}: {plan.revision} against {plan.against}",
             f"objects: {plan.added} added, {plan.changed} changed, {plan.removed} removed"]
    lines += [f"  + {n}" for n in plan.first_added] + [f"  ~ {n}" for n in plan.first_changed]
    lines += [f"  - {n}" for n in plan.first_removed]
    lines += _crds(plan)
    lines += _section("rbac", [f"+ {r}" for r in plan.rbac_added]
                      + [f"- {r}" for r in plan.rbac_removed])
    lines += _section("runtime", plan.runtime) + _section("dependencies", plan.dependencies)
    lines += _section("existing resources", [r.message for r in plan.rejected])
    lines += _section("inactive definitions (no CRD served, no resources to check)",
                      plan.inactive)
    verdict = ("compatible" if plan.compatible
               else f"BREAKING: {plan.breaking_count} change(s)")
    return "\n".join(lines + [f"verdict: {verdict}"] + [f"  ✗ {b}" for b in plan.breaking]
                     + _evidence(plan))


def _evidence(plan: Plan) -> list[str]:
    """What the evidence gate (lockwright.upgrade.gate) makes of a breaking plan."""
    if plan.compatible or not plan.weighed:
        return []
    if not plan.held_count:
        return ["evidence gate: no existing resource affected; an Automatic upgrade "
                "proceeds (a Strict gate holds it)"]
    return [f"evidence gate: holds on {plan.held_count} change(s)"] + [
        f"  ✗ {h}" for h in plan.held]


def _crds(plan: Plan) -> list[str]:
    out = []
    for verdict in plan.crds:
        for f in verdict.fields:
            paths = ", ".join(f.first_added + f.first_removed + f.first_changed)
            out.append(f"  {verdict.crd} {f.version} ({f.status}): +{f.added} -{f.removed} "
                       f"~{f.changed} {paths}".rstrip())
    return _section("crds", [line.strip() for line in out])


def _section(title: str, items: list[str]) -> list[str]:
    return [f"{title}:"] + [f"  {i}" for i in items] if items else []
