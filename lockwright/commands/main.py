"""The ``lockwright`` command: one entry point, each area registers its own subcommands.

Registration only builds argparse parsers; heavy imports (Temporal, the Kubernetes client,
``rich``) happen inside the handlers so ``lockwright --help`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from lockwright.commands import api, approve, history, index, install, plan, processes, search, trace, xpkg
from lockwright.devcluster import cli as devcluster_cli

DESCRIPTION = ("A package manager for Kubernetes control planes: Crossplane-format packages "
               "installed by durable Temporal workflows.")
# Each exposes ``register(subparsers)``, adding its top-level subcommands in this order.
AREAS = (install, approve, plan, trace, history, search, api, xpkg, index, processes,
         devcluster_cli)


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every area's subcommands registered."""
    parser = argparse.ArgumentParser(prog="lockwright", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for area in AREAS:
        area.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return int(handler(args) or 0)


#: Loaded once a command has used a Temporal client (the SDK's Rust core).
TEMPORAL_CORE = "temporalio.bridge.temporal_sdk_bridge"


def run() -> NoReturn:
    """The process entry point: :func:`main`, then its exit code as the process's.

    After a Temporal client has run, the interpreter's teardown is skipped (``os._exit``,
    every stream flushed first): the SDK's Rust runtime keeps threads that may take the GIL
    while the interpreter finalizes, which aborts the process (SIGABRT, "PyGILState_Release:
    thread state ... must be current", temporalio/sdk-python#300) after the command has
    printed its output and decided its exit code. Seen once in CI, on ``lockwright plan``.
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_gone()
    if TEMPORAL_CORE not in sys.modules:
        sys.exit(code)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _reader_gone() -> int:
    """Stdout's reader went away (``lockwright history ... | head``): stop quietly, as
    shell tools do, with what is still buffered sent nowhere. Exit code 1."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 1


if __name__ == "__main__":
    run()
