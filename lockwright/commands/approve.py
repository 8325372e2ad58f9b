"""``lockwright approve KIND/NAME [REVISION]``: approve a revision of a Manual package.

``lockwright activate`` is the same command, its older name (an alias). Sends the package
workflow's approval update (registered as ``activate_revision``), which returns once the revision
is active (or says why it cannot be: not Manual, not the current revision, failed). Then
prints who approved it and when, as the workflow put it on record: the revision's
``ApproveRevision`` Event names the Temporal identity of this command.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from lockwright.commands import common

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

APPROVE_REASON = "ApproveRevision"


class ApprovalError(Exception):
    """The update was refused or failed; the message says why."""


def register(subparsers: Any) -> None:
    """Add ``approve`` and its older name, ``activate``."""
    parser = subparsers.add_parser(
        "approve", aliases=["activate"], help="approve a revision of a package with "
        "revisionActivationPolicy Manual (the activate_revision update); prints who approved "
        "it and when")
    parser.add_argument("package", type=common.package_ref, metavar="KIND/NAME",
                        help="e.g. provider/provider-nop")
    parser.add_argument("revision", nargs="?", metavar="REVISION",
                        help="the revision to approve (default: the package's current one)")
    parser.add_argument("--accept-plan", action="store_true",
                        help="also accept this revision's breaking upgrade plan (see "
                        "lockwright plan); it accepts no other revision's")
    parser.add_argument("--timeout", type=common.duration, default=300.0, metavar="DURATION",
                        help="how long to wait for the approval to be carried out "
                        "(default 5m)")
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(run))


def run(args: argparse.Namespace) -> int:
    """Approve and report; exit 1 with the workflow's reason when it refuses."""
    ref: common.PackageRef = args.package
    s = common.settings(args)
    kube = common.kube(s)
    try:
        revision = args.revision or current_revision(kube.get(common.PKG_API, ref.title,
                                                              ref.name))
        if not revision:
            return common.fail(f"{ref} not found, or it has no current revision yet")
        message, identity = asyncio.run(_approve(s, ref, revision, args.timeout,
                                                 args.accept_plan))
        events = kube.list("v1", "Event", _events_namespace())
    except ApprovalError as exc:
        return common.fail(f"cannot activate {revision} of {ref}: {exc}")
    finally:
        kube.close()
    print(f"{ref}: {message}")
    print(approval(events, revision) or f"Activation of {revision} approved by {identity}")
    return 0


def current_revision(pkg: dict[str, Any] | None) -> str:
    """The revision the package's spec makes: ``status.currentRevision``."""
    return str(((pkg or {}).get("status") or {}).get("currentRevision") or "")


def approval(events: list[dict[str, Any]], revision: str) -> str:
    """The latest ``ApproveRevision`` Event's message about ``revision``, or ""."""
    mine = [e for e in events if e.get("reason") == APPROVE_REASON
            and (e.get("involvedObject") or {}).get("name") == revision]
    latest = max(mine, key=lambda e: str(e.get("lastTimestamp") or ""), default={})
    return str(latest.get("message") or "")


def _events_namespace() -> str:
    # Events about cluster-scoped objects go to "default", as client-go puts them.
    from lockwright.k8s.events import DEFAULT_NAMESPACE

    return DEFAULT_NAMESPACE


async def _approve(s: Any, ref: common.PackageRef, revision: str,
                   timeout: float, accept_plan: bool = False) -> tuple[str, str]:
    """The update's message and this client's identity; :class:`ApprovalError` if refused."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    from lockwright import contracts as c

    client = await common.temporal(s)
    handle = client.get_workflow_handle(c.package_workflow_id(ref.kind, ref.name,
                                                              s.task_queue))
    try:
        result = await asyncio.wait_for(handle.execute_update(
            c.UPDATE_APPROVE_REVISION, c.ApproveRevisionInput(revision=revision,
                                                               accept_plan=accept_plan),
            result_type=c.ApproveRevisionResult), timeout)
    except WorkflowUpdateFailedError as exc:
        raise ApprovalError(str(exc.cause or exc)) from None
    except RPCError as exc:
        raise ApprovalError(exc.message) from None
    except TimeoutError:
        raise ApprovalError(f"not carried out within {timeout:g}s") from None
    return result.message, client.identity
