"""``lockwright index build|push``: make a package index from registries, and publish it.

``build REPO... -o FILE`` lists each repository's tags and reads each package's base layer
(:mod:`lockwright.index.build`), noting on stderr every tag it skips; ``push FILE REF``
pushes the document as an OCI artifact. Sign it with ``lockwright xpkg sign REF``. Both take
``xpkg push``'s registry flags and credentials.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lockwright.commands import xpkg

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.


def register(subparsers: Any) -> None:
    """Add the ``index`` command group."""
    common = xpkg.registry_arguments()
    index = subparsers.add_parser("index", help="build and push package indexes")
    sub = index.add_subparsers(dest="index_command", metavar="SUBCOMMAND", required=True)
    build = sub.add_parser("build", parents=[common], help="index every package version of "
                           "the repositories, reading base layers only")
    build.add_argument("repositories", nargs="+", metavar="REPO",
                       help="a repository, e.g. registry.example.org/team/provider-x")
    build.add_argument("-o", "--output", required=True, type=Path, help="the index file")
    build.add_argument("--previous", type=Path, metavar="FILE", help="an index built before: "
                       "versions it lists under the same digest are not read again")
    build.set_defaults(func=xpkg.guard(_build))
    push = sub.add_parser("push", parents=[common], help="push an index file as an OCI "
                          "artifact (sign it with lockwright xpkg sign REF)")
    push.add_argument("file", type=Path, metavar="FILE")
    push.add_argument("ref", metavar="REF")
    push.set_defaults(func=xpkg.guard(_push))


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr, flush=True)


def _build(args: argparse.Namespace) -> int:
    from lockwright.index.build import build
    from lockwright.index.model import PackageIndex

    previous = (PackageIndex.from_bytes(_read(args.previous), str(args.previous))
                if args.previous else None)
    index = build(xpkg.registry_client(args), args.repositories, _note, previous=previous)
    args.output.write_bytes(index.to_bytes())
    repos = len({e.repository for e in index.entries})
    print(f"wrote {args.output} ({len(index.entries)} package versions of {repos} "
          "repositories)")
    return 0


def _push(args: argparse.Namespace) -> int:
    from lockwright.index.push import push_index

    digest = push_index(xpkg.registry_client(args), args.ref, _read(args.file))
    print(f"{args.ref}@{digest}")
    return 0


def _read(path: Path) -> bytes:
    from lockwright.errors import InvalidPackage

    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidPackage(f"cannot read {path}: {exc.strerror}") from None
