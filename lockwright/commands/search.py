"""``lockwright search TEXT`` and ``lockwright search --api API``: find packages in indexes.

The indexes are ``LOCKWRIGHT_PACKAGE_INDEXES`` (or ``--package-indexes``), read through
the cluster's ImageConfigs (rewrite, pull Secrets, signature verification) exactly as the
worker reads them; an index that fails the verification asked of it is refused and the
command exits 1. Output: REPOSITORY, LATEST, KIND, TYPES, INDEX; ``-o json`` as data. The
tag of each row's latest version is looked up: one that now points to another digest than
the index lists is said after the table (``warning:``, both digests and the fix; in JSON,
``tagDigest`` beside ``digest``), since ``install --api`` refuses it
(:mod:`lockwright.index.vouch`).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from lockwright.commands import common

if TYPE_CHECKING:
    from lockwright.index.model import Entry, PackageIndex
    from lockwright.index.read import IndexReader
    from lockwright.k8s import Kube
    from lockwright.settings import Settings

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

HEADER = ("REPOSITORY", "LATEST", "KIND", "TYPES", "INDEX")


def register(subparsers: Any) -> None:
    """Add ``search``."""
    parser = subparsers.add_parser(
        "search", help="find packages in the package indexes by text or by the API they serve")
    parser.add_argument("text", nargs="?", default="", metavar="TEXT",
                        help="part of a repository, package name, kind or plural.group")
    parser.add_argument("--api", metavar="API", help="an API: plural.group/version or "
                        "Kind.group/version (the version may be left out)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    common.add_index_arguments(parser)
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(run))


def run(args: argparse.Namespace) -> int:
    """Print the matching repositories; exit 0 even when none matches (it says so)."""
    from lockwright.identity.apis import parse
    from lockwright.index.model import merged
    from lockwright.index.search import search

    if bool(args.text) == bool(args.api):
        return common.fail("give TEXT or --api API (one of them)")
    api = parse(args.api) if args.api else None
    s = common.settings(args)
    kube = common.kube(s)
    try:
        reader = index_reader(s, kube)
        entries = merged(reader.read())
        rows = search(entries, args.text, api)
        moved = _moved(reader, entries, rows)
    finally:
        kube.close()
    if args.output == "json":
        print(json.dumps([{**r.to_json(), "tagDigest": moved.get(r.repository, ("", ""))[0]
                           or r.digest} for r in rows], indent=2))
    elif not rows:
        print(f"no package matches {args.api or args.text!r} in {', '.join(s.package_indexes)}")
    else:
        from lockwright.commands.text import table

        print(table(HEADER, [(r.repository, r.latest, r.kind, ", ".join(r.types), r.index)
                             for r in rows]))
        for _, message in moved.values():
            print(f"warning: {message}")
    return 0


def _moved(reader: IndexReader, entries: list[Entry], rows: list[Any]
           ) -> dict[str, tuple[str, str]]:
    """Each row whose latest tag points elsewhere now: repository → (its digest, why)."""
    from lockwright.index.vouch import moved

    listed = {(e.repository, e.tag): e for e in entries}
    out: dict[str, tuple[str, str]] = {}
    for row in rows:
        entry = listed[(row.repository, row.latest)]
        current = reader.tag_digest(entry.reference)
        if message := moved(entry, current):
            out[row.repository] = (current, message)
    return out


def read_indexes(s: Settings, kube: Kube) -> list[PackageIndex]:
    """Every configured index, read as the worker reads them.

    Raises:
        LockwrightError: none is configured; an index is refused or cannot be read.
    """
    return index_reader(s, kube).read()


def index_reader(s: Settings, kube: Kube) -> IndexReader:
    """The reader of every configured index, under the cluster's ImageConfigs.

    Raises:
        LockwrightError: no index is configured.
    """
    from lockwright.errors import KubeNotFound, LockwrightError
    from lockwright.index.read import IndexReader
    from lockwright.log import configure
    from lockwright.oci.client import RegistryClient

    configure(level=os.environ.get("LOCKWRIGHT_LOG_LEVEL", "warning"))  # stdout is output

    if not s.package_indexes:
        raise LockwrightError("no package indexes to search: set LOCKWRIGHT_PACKAGE_INDEXES "
                              "or --package-indexes (comma-separated OCI references)")
    try:
        configs = kube.list("pkg.crossplane.io/v1beta1", "ImageConfig")
    except KubeNotFound:
        configs = []
    namespace = s.system_namespace
    return IndexReader(s, RegistryClient(insecure=s.insecure_registries), configs,
                       lambda name: kube.get("v1", "Secret", name, namespace))
