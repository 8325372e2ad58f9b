"""``lockwright trace KIND/NAME [-o wide|json]``: package → revisions → dependencies → runtime.

As ``crossplane beta trace`` shows a package: a tree with NAME, VERSION, INSTALLED,
HEALTHY, STATE and STATUS columns (``-o wide`` adds PACKAGE and keeps whole messages;
``-o json`` prints the tree as data). Reads the cluster only: every package and revision,
the Lock and the system namespace's Deployments, a handful of list calls.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lockwright.commands import common

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.


def register(subparsers: Any) -> None:
    """Add ``trace``."""
    parser = subparsers.add_parser(
        "trace", help="a package, its revisions, dependencies and runtime, with health")
    parser.add_argument("package", type=common.package_ref, metavar="KIND/NAME",
                        help="e.g. configuration/platform-ref-aws")
    parser.add_argument("-o", "--output", choices=("wide", "json"),
                        help="wide: the package column and whole messages; json: the tree")
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(run))


def run(args: argparse.Namespace) -> int:
    """Print the tree; exit 1 when the package does not exist."""
    from lockwright.commands import tree

    ref: common.PackageRef = args.package
    s = common.settings(args)
    kube = common.kube(s)
    try:
        root = tree.build(snapshot(kube, s.system_namespace), ref.title, ref.name)
    finally:
        kube.close()
    if root is None:
        return common.fail(f"{ref} not found")
    show(root, args.output)
    return 0


def snapshot(kube: Any, namespace: str) -> Any:
    """Read what a trace needs: packages, revisions, the Lock, the runtime Deployments."""
    from lockwright.commands.tree import Snapshot

    packages, revisions = [], []
    for kind in common.KINDS.values():
        packages += kube.list(common.PKG_API, kind)
        revisions += kube.list(common.PKG_API, f"{kind}Revision")
    lock = kube.get(common.LOCK_API, "Lock", "lock") or {}
    deployments = kube.list("apps/v1", "Deployment", namespace)
    return Snapshot(packages, revisions, lock, deployments)


def show(root: Any, output: str | None) -> None:
    """JSON, a rich table on a terminal, else plain columns."""
    from lockwright.commands import text, tree

    wide = output == "wide"
    if output == "json":
        print(json.dumps(tree.as_json(root), indent=2))
    elif common.is_terminal():
        header = tree.WIDE_HEADER if wide else tree.HEADER
        installed = len(header) - 4  # INSTALLED and HEALTHY are coloured by value
        text.print_rich(text.rich_table(header, tree.table_rows(root, wide),
                                        styled=(installed, installed + 1)))
    else:
        print(tree.render(root, wide))
