"""The ``lockwright`` command: one entry point, each area registers its own subcommands.

Registration functions only build argparse parsers; heavy imports (Temporal, the
Kubernetes client) happen inside the handlers so ``lockwright --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules exposing ``register(subparsers)``; each adds one top-level subcommand.
_AREAS: tuple[str, ...] = (
    "devcluster.cli",
    "lockwright.xpkg.cli",
    "worker.cli",
)


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every area's subcommands registered."""
    parser = argparse.ArgumentParser(prog="lockwright", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _AREAS:
        importlib.import_module(name).register(sub)
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


if __name__ == "__main__":
    sys.exit(main())
