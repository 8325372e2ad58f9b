"""``lockwright history KIND/NAME``: the install timeline, read from Temporal.

The package workflow's current run, and under each ``InstallRevision`` child its steps:
activity names and summaries (local activities from their markers), how long each took,
how often it was tried and why it was retried, timers, and the signals and updates that
approved a revision with the identity that sent them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict
from typing import Any

from lockwright.commands import common

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.


def register(subparsers: Any) -> None:
    """Add ``history``."""
    parser = subparsers.add_parser(
        "history", help="an install's timeline from Temporal: steps, durations, retries, "
        "approvals and who gave them")
    parser.add_argument("package", type=common.package_ref, metavar="KIND/NAME",
                        help="e.g. provider/provider-nop")
    parser.add_argument("-o", "--output", choices=("wide", "json"),
                        help="wide: whole messages; json: the timelines as data")
    parser.add_argument("--runs", type=_positive, default=20, metavar="N",
                        help="read back this many runs of the package workflow, which "
                        "continues as new as its history grows (default 20)")
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(run))


def run(args: argparse.Namespace) -> int:
    """Read and print the timeline; exit 1 when the package never had a workflow."""
    return asyncio.run(_history(args))


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number")
    return int(value)


async def _history(args: argparse.Namespace) -> int:
    from lockwright.commands.follow import read_install

    ref: common.PackageRef = args.package
    from lockwright.contracts import package_workflow_id

    s = common.settings(args)
    client = await common.temporal(s)
    install = await read_install(client, ref, s.task_queue, max_runs=args.runs)
    if not install.runs:
        wid = package_workflow_id(ref.kind, ref.name, s.task_queue)
        return common.fail(f"{ref}: no workflow {wid} in Temporal "
                           "(is the package applied and the watcher running?)")
    show(install, args.output)
    return 0


def show(install: Any, output: str | None) -> None:
    """Print the timeline: JSON, rich tables on a terminal, else plain columns."""
    from lockwright.commands import rows, text

    runs, children, wide = install.runs, install.children, output == "wide"
    if output == "json":
        print(json.dumps({"runs": [asdict(r) for r in runs],
                          "children": {k: asdict(v) for k, v in children.items()}}, indent=2))
    elif common.is_terminal():
        origin = runs[0].start
        for run in runs:
            cells = [r.cells for r in rows.rows(run, children, origin, wide=wide)]
            text.print_rich(text.rich_table(rows.HEADER, cells, rows.heading(run),
                                            styled=(rows.RESULT_COLUMN,)))
        print("\n".join(([rows.EARLIER] if install.earlier else [])
                        + rows.footer(runs, children)))
    else:
        print(rows.history_text(runs, children, wide, install.earlier))
