"""``lockwright trace KIND/NAME [-o wide|json|yaml|dot] [-w [--exit-healthy]]``: package →
revisions → dependencies → runtime.

As ``crossplane beta trace`` shows a package: a tree with NAME, VERSION, INSTALLED,
HEALTHY, STATE and STATUS columns (``-o wide`` adds PACKAGE and keeps whole messages;
``-o json`` and ``-o yaml`` print the tree as data, ``-o dot`` as a Graphviz graph, see
:mod:`lockwright.commands.traceout`). Reads the cluster only: every package and revision,
the Lock and the system namespace's Deployments, a handful of list calls.

``--watch`` (``-w``) reads again every :data:`WATCH_INTERVAL_S` and draws the output again
when it changed: on a terminal the screen is cleared first, elsewhere each new output
follows the last (YAML as another document). It stops when the package is deleted (exit 0,
as Crossplane's), on Ctrl-C, or, with ``--exit-healthy`` (Crossplane has no such flag),
exit 0 once every package in the tree is Installed and Healthy.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import time
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
    parser.add_argument("-o", "--output", choices=("wide", "json", "yaml", "dot"),
                        help="wide: the package column and whole messages; json, yaml: the "
                             "tree as data; dot: a Graphviz graph")
    parser.add_argument("-w", "--watch", action="store_true",
                        help="draw again whenever it changes, until the package is deleted")
    parser.add_argument("--exit-healthy", action="store_true",
                        help="with --watch: exit 0 once every package in the tree is "
                             "Installed and Healthy")
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(run))


#: Seconds between a watch's reads (Crossplane's watch also re-reads every 2 s).
WATCH_INTERVAL_S = 1.0
#: Cursor home, then erase the screen: a terminal redraw.
CLEAR = "\x1b[H\x1b[2J"


def run(args: argparse.Namespace) -> int:
    """Print the tree (or keep drawing it); exit 1 when the package does not exist."""
    from lockwright.commands import tree

    if args.exit_healthy and not args.watch:
        print("lockwright trace: --exit-healthy needs --watch (-w)", file=sys.stderr)
        return 2
    ref: common.PackageRef = args.package
    s = common.settings(args)
    kube = common.kube(s)
    try:
        if args.watch:
            return watch(kube, s.system_namespace, ref, args.output, args.exit_healthy)
        root = tree.build(snapshot(kube, s.system_namespace), ref.title, ref.name)
    finally:
        kube.close()
    if root is None:
        return common.fail(f"{ref} not found")
    sys.stdout.write(rendered(root, args.output))
    return 0


def watch(kube: Any, namespace: str, ref: common.PackageRef, output: str | None,
          exit_healthy: bool) -> int:
    """Draw the tree whenever it changes; see the module for when it stops."""
    from lockwright.commands import traceout, tree

    last = ""
    try:
        while True:
            root = tree.build(snapshot(kube, namespace), ref.title, ref.name)
            if root is None and not last:
                return common.fail(f"{ref} not found")
            if root is None:
                print(f"{ref} was deleted", file=sys.stderr)
                return 0
            frame = rendered(root, output)
            if frame != last:
                draw(frame, output, first=not last)
                last = frame
            if exit_healthy and traceout.all_healthy(root):
                return 0
            time.sleep(WATCH_INTERVAL_S)  # polling the API between reads, not a test
    except KeyboardInterrupt:
        return 0


def draw(frame: str, output: str | None, first: bool) -> None:
    """Show one output of a watch: over the last on a terminal, after it elsewhere."""
    if common.is_terminal():
        frame = CLEAR + frame
    elif output == "yaml" and not first:
        frame = "---\n" + frame
    sys.stdout.write(frame)
    sys.stdout.flush()


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


def rendered(root: Any, output: str | None) -> str:
    """The output for ``-o``: JSON, YAML, DOT, a rich table on a terminal, else plain
    columns; each ends with a newline."""
    from lockwright.commands import text, traceout, tree

    wide = output == "wide"
    if output == "json":
        return json.dumps(tree.as_json(root), indent=2) + "\n"
    if output == "yaml":
        return traceout.as_yaml(root)
    if output == "dot":
        return traceout.as_dot(root)
    if common.is_terminal():
        header = tree.WIDE_HEADER if wide else tree.HEADER
        installed = len(header) - 4  # INSTALLED and HEALTHY are coloured by value
        return rich_text(text.rich_table(header, tree.table_rows(root, wide),
                                         styled=(installed, installed + 1)))
    return tree.render(root, wide) + "\n"


def rich_text(renderable: Any) -> str:
    """What ``rich`` would print on this terminal, as a string (colours included), so a
    watch can compare one drawing with the last."""
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, force_terminal=True, width=shutil.get_terminal_size().columns
            ).print(renderable)
    return out.getvalue()
