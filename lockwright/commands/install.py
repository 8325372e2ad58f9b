"""``lockwright install provider|configuration|function REF``: create a package object.

The flags are ``crossplane xpkg install``'s: the name defaults to the repository path as a
DNS label (``xpkg.example.org/acme/provider-x:v1`` gives ``acme-provider-x``), and the
package is created through the Kubernetes API, which is all an install needs: the watcher
sees it and the package's workflow does the rest. ``--wait`` follows that workflow's steps
(:mod:`commands.progress`) until the package is healthy or has failed; unlike Crossplane's
``--wait DURATION`` it is a switch, and ``--timeout`` bounds it.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from lockwright.commands import common

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

DEFAULT_TIMEOUT_S = 300.0


def register(subparsers: Any) -> None:
    """Add ``install``."""
    parser = subparsers.add_parser(
        "install", help="install a package (as crossplane xpkg install); --wait follows "
        "its install step by step")
    parser.add_argument("kind", nargs="?", choices=tuple(common.KINDS),
                        help="the kind of package (not with --api)")
    parser.add_argument("reference", nargs="?", metavar="REF",
                        help="the package, fully qualified: REGISTRY/REPOSITORY:TAG")
    parser.add_argument("--api", metavar="API", help="install the package that serves this "
                        "API (plural.group/version or Kind.group/version), found in the "
                        "package indexes, instead of KIND REF")
    parser.add_argument("--repository", default="", metavar="REPO",
                        help="with --api: the repository to take it from when several serve it")
    parser.add_argument("--name", help="the package object's name (default: derived from "
                        "the repository, as Crossplane does)")
    parser.add_argument("-m", "--manual-approval", "--manual-activation", action="store_true",
                        help="revisionActivationPolicy Manual: approve revisions with "
                        "lockwright approve")
    parser.add_argument("--runtime-config", metavar="NAME",
                        help="a DeploymentRuntimeConfig (Providers and Functions)")
    parser.add_argument("--package-pull-secrets", type=_names, default=[], metavar="S1,S2",
                        help="comma-separated Secrets (system namespace) to pull with")
    parser.add_argument("-r", "--revision-history-limit", type=int, metavar="N",
                        help="inactive revisions to keep (0 keeps all)")
    parser.add_argument("--wait", action="store_true",
                        help="follow the install until Healthy or failed; exit 1 on failure")
    parser.add_argument("--timeout", type=common.duration, default=DEFAULT_TIMEOUT_S,
                        metavar="DURATION", help="how long --wait waits (default 5m)")
    common.add_index_arguments(parser)
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(run))


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def package_object(kind: str, reference: str, name: str, manual: bool = False,
                   runtime_config: str | None = None, pull_secrets: list[str] | None = None,
                   history_limit: int | None = None,
                   annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """The package object ``install`` creates (what ``kubectl apply`` of it would create).

    Args:
        kind: ``provider``, ``configuration`` or ``function``.
        reference: ``spec.package``.
        name: ``metadata.name``.
    """
    spec: dict[str, Any] = {"package": reference,
                            "revisionActivationPolicy": "Manual" if manual else "Automatic"}
    if pull_secrets:
        spec["packagePullSecrets"] = [{"name": s} for s in pull_secrets]
    if history_limit is not None:
        spec["revisionHistoryLimit"] = history_limit
    if runtime_config:
        spec["runtimeConfigRef"] = {"name": runtime_config}
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": common.PKG_API, "kind": common.KINDS[kind],
            "metadata": metadata, "spec": spec}


def problem(args: argparse.Namespace) -> str:
    """Why the arguments cannot make a package, or ""."""
    from lockwright.names import (
        FULLY_QUALIFIED_MESSAGE,
        is_dns_subdomain,
        is_fully_qualified,
        package_name_from_reference,
    )

    if args.api:
        return ("give either KIND REF or --api API, not both" if args.kind or args.reference
                else "")
    if args.repository:
        return "--repository goes with --api"
    if not args.kind or not args.reference:
        return "give KIND REF (provider, configuration or function, then the package) or --api"
    if not is_fully_qualified(args.reference):
        return f"{args.reference!r}: {FULLY_QUALIFIED_MESSAGE}"
    if args.runtime_config and args.kind == "configuration":
        return "a Configuration has no runtime, so no --runtime-config"
    name = args.name or package_name_from_reference(args.reference)
    return "" if is_dns_subdomain(name) else f"{name!r} is not a valid object name; give --name"


def run(args: argparse.Namespace) -> int:
    """Create the package; with ``--wait``, follow it and exit 1 unless it ends healthy."""
    from lockwright.names import package_name_from_reference

    if found := problem(args):
        return common.fail(found)
    if args.api:
        from lockwright.commands.install_api import run_api

        return run_api(args, create)
    ref = common.PackageRef(args.kind, args.name or package_name_from_reference(args.reference))
    s = common.settings(args)
    kube = common.kube(s)
    try:
        return create(args, s, kube, ref, args.reference)
    finally:
        kube.close()


def create(args: argparse.Namespace, s: Any, kube: Any, ref: common.PackageRef,
           reference: str, annotations: dict[str, str] | None = None) -> int:
    """Create the package object, then follow it with ``--wait``."""
    from lockwright.errors import KubeAlreadyExists

    try:
        kube.create(package_object(ref.kind, reference, ref.name, args.manual_approval,
                                   args.runtime_config, args.package_pull_secrets,
                                   args.revision_history_limit, annotations))
    except KubeAlreadyExists:
        return common.fail(f"{ref} already exists")
    print(f"{ref} created", flush=True)
    return asyncio.run(_wait(s, kube, ref, args.timeout)) if args.wait else 0


async def _wait(s: Any, kube: Any, ref: common.PackageRef, timeout: float) -> int:
    from lockwright.commands.progress import LiveView, PlainView, View, wait

    view: View = LiveView() if common.is_terminal() else PlainView()
    try:
        done = await wait(s, kube, ref, timeout, view)
    finally:
        view.close()
    if not done.ok:
        return common.fail(done.message)
    print(done.message)
    return 0
