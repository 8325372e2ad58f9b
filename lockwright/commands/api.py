"""``lockwright api list | sum | verify | diff``: the custom types a cluster serves, by digest.

A type is known by more than its group, version and kind: by the digest of its definition
and the digest of the controller behind it (lockwright.identity.surface). These commands
read the cluster's CRDs, ManagedResourceDefinitions and package revisions (three or four
list calls) and print, compare or check them; they write nothing. The decisions are pure
functions in ``lockwright.identity`` (surface, sums, diff, manifests); this module reads
and prints.

Exit codes: 0 the same / all fine; 1 something differs (or the cluster could not be
read); 2 a usage error or a file that cannot be read (the message names the line).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockwright.commands import common

if TYPE_CHECKING:
    from lockwright.identity.diff import TypeDiff
    from lockwright.identity.manifests import Lookup
    from lockwright.identity.surface import TypeRow
    from lockwright.k8s import Kube

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

DIFFERENT, USAGE = 1, 2
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
LISTS = ("every custom type the cluster defines, one row per served version: each CRD "
         "(an Active ManagedResourceDefinition's CRD among them, state Active) and each "
         "Inactive MRD's type (state Inactive: not served until activated). Built-in kinds "
         "are not listed.")
DESCRIPTION = ("The custom types a cluster serves, each known by the digest of its definition "
               "and of the controller behind it. Reads the cluster's CRDs, "
               "ManagedResourceDefinitions and package revisions; writes nothing. Exit 0: "
               "the same, all fine; 1: something differs (or the cluster could not be "
               "read); 2: a usage error or a file that cannot be read.")
HEADER = ("GROUP", "VERSION", "KIND", "PACKAGE", "REVISION", "TYPE-DIGEST", "LIVE-DIGEST",
          "CONTROLLER", "STATE")


@dataclass(frozen=True)
class Snapshot:
    """What the commands read of one cluster."""

    crds: list[dict[str, Any]]
    mrds: list[dict[str, Any]]
    revisions: list[dict[str, Any]]

    def rows(self) -> list[TypeRow]:
        from lockwright.identity.surface import type_rows

        return type_rows(self.crds, self.mrds, self.revisions)


def register(subparsers: Any) -> None:
    """Add the ``api`` command group."""
    api = subparsers.add_parser(
        "api", help="the custom types a cluster serves, with the digests of their definition "
        "and controller: list, sum, verify, diff", description=DESCRIPTION)
    sub = api.add_subparsers(dest="api_command", metavar="SUBCOMMAND", required=True)
    listing = sub.add_parser("list", help="list " + LISTS, description="List " + LISTS)
    listing.add_argument("-o", "--output", choices=("json",), help="json: the rows as data")
    _connect(listing, _list)
    summing = sub.add_parser("sum", help="print the served types as sum lines (stable, sorted)",
                             description=SUM_HELP)
    _connect(summing, _sum)
    _register_verify(sub)
    _register_diff(sub)


SUM_HELP = ("One line per served custom type version, sorted, like go.sum: 'group/version "
            "Kind TYPE-DIGEST CONTROLLER-DIGEST'. TYPE-DIGEST is the digest recorded at "
            "install (lockwright.dev/type-digest) while the live definition is still that "
            "one; 'edited:sha256:...', the live object's, for a definition edited after its "
            "install; 'live:sha256:...' computed from the live object when nothing recorded "
            "one. CONTROLLER-DIGEST is the revision's controller (else package) "
            "digest, '-' for a type no package serves. Inactive MRDs' types are not served "
            "and not listed.")


def _register_verify(sub: Any) -> None:
    verify = sub.add_parser(
        "verify", help="compare the cluster with a sum file, or check manifests' types",
        description="With FILE: compare the served types with a sum ('lockwright api sum' "
        "output); exit 1 listing each type version whose definition or controller differs, "
        "that is missing (in the file, not served), extra (served, not in the file; "
        "--ignore-extra leaves these out) or edited (its definition changed after its "
        "install, whatever the file says). With -f: for every object of the manifests, "
        "whether its type is served and, when it carries lockwright.dev/written-against, "
        "whether the served type's digest is that one; exit 1 listing each object that "
        "fails. Exit 2: a usage error or a file that cannot be read.")
    verify.add_argument("file", nargs="?", metavar="FILE", help="a sum file ('-': stdin)")
    verify.add_argument("-f", "--filename", action="append", dest="manifests", default=[],
                        metavar="PATH", help="manifest files or directories ('-': stdin); "
                        "repeatable")
    verify.add_argument("--ignore-extra", action="store_true",
                        help="served types missing from FILE do not count as differences")
    _connect(verify, _verify)


def _register_diff(sub: Any) -> None:
    diff = sub.add_parser(
        "diff", help="the types two clusters serve differently, definitions explained "
        "field by field", description="Compare the served types of two clusters, each a "
        "context of the kubeconfig or a kubeconfig file: each type version whose "
        "definition or controller differs or that only one serves. A definition "
        "difference is explained with the upgrade plans' compatibility verdicts, B read "
        "as an upgrade of A. Exit 0 the same, 1 different.")
    diff.add_argument("a", metavar="CONTEXT_A", help="a kubeconfig context or file")
    diff.add_argument("b", metavar="CONTEXT_B", help="a kubeconfig context or file")
    diff.add_argument("-o", "--output", choices=("json",), help="json: the differences")
    _connect(diff, _diff, context=False)


def _connect(parser: argparse.ArgumentParser, handler: common.Handler,
             context: bool = True) -> None:
    if context:
        parser.add_argument("--context", default="", metavar="NAME",
                            help="the kubeconfig context (default: its current one)")
    common.add_connection_arguments(parser)
    parser.set_defaults(func=common.guarded(_usage(handler)))


def _usage(handler: common.Handler) -> common.Handler:
    """``handler``, with a file that cannot be read ending in exit 2."""
    def run(args: argparse.Namespace) -> int:
        from lockwright.errors import InputError

        try:
            return handler(args)
        except InputError as exc:
            common.fail(exc.message)
            return USAGE
    return run


def read(kube: Kube) -> Snapshot:
    """The CRDs, MRDs and package revisions of the cluster (a kind not served: none)."""
    from lockwright.managed.convert import CRD_API_VERSION, CRD_KIND
    from lockwright.names import REVISION_KINDS

    revisions = [r for kind in REVISION_KINDS for r in _list_kind(kube, common.PKG_API, kind)]
    crds = _list_kind(kube, CRD_API_VERSION, CRD_KIND)
    return Snapshot(crds, _mrds(kube, {_name(c) for c in crds}), revisions)


def _mrds(kube: Kube, crds: set[str]) -> list[dict[str, Any]]:
    """The MRDs: as their printed columns and metadata while each has its CRD (the CRD
    is the type; an MRD holds a whole schema again, doubling the read), else in full."""
    from lockwright.errors import KubeNotFound
    from lockwright.k8s.watch import list_columns
    from lockwright.managed.convert import MRD_API_VERSION as MRD_API
    from lockwright.managed.convert import MRD_KIND

    try:
        path = kube.resource(MRD_API, MRD_KIND).path()
    except KubeNotFound:
        return []
    heads = [{"apiVersion": MRD_API, "kind": MRD_KIND, "metadata": meta,
              "spec": {"state": str(cells.get("STATE", ""))}}
             for cells, meta in list_columns(kube, path)]
    if all(_name(m) in crds for m in heads):
        return heads
    return _list_kind(kube, MRD_API, MRD_KIND)


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _list_kind(kube: Kube, api_version: str, kind: str) -> list[dict[str, Any]]:
    from lockwright.errors import KubeNotFound

    try:
        return kube.list(api_version, kind)
    except KubeNotFound:
        return []


def _read(args: argparse.Namespace, context: str = "") -> Snapshot:
    s = common.settings(args)
    if context and os.path.isfile(context):
        s, context = dataclasses.replace(s, kubeconfig=context), ""
    with common.kube(s, context or getattr(args, "context", "")) as kube:
        return read(kube)


def _list(args: argparse.Namespace) -> int:
    rows = _read(args).rows()
    if args.output == "json":
        print(json.dumps([r.to_json() for r in rows], indent=2))
        return 0
    from lockwright.commands import text

    print(text.table(HEADER, [_cells(r) for r in rows]))
    return 0


def _short(digest: str) -> str:
    """``sha256:`` and 12 hex (``live:`` kept): enough to tell types apart in a table."""
    head, _, hexes = digest.rpartition(":")
    return f"{head}:{hexes[:12]}" if head else digest or "-"


def _cells(row: TypeRow) -> list[str]:
    """TYPE-DIGEST: the recorded digest, else the live one; LIVE-DIGEST: the live object's
    when it is not the recorded definition (an edit: the state says so too), else '='."""
    live = _short(row.live) if row.edited or not row.recorded else "="
    state = f"{row.state},edited" if row.edited else row.state
    return [row.group, row.version, row.kind, row.package or "-", row.revision or "-",
            _short(row.recorded or row.digest), live, _short(row.controller), state]


def _sum(args: argparse.Namespace) -> int:
    from lockwright.identity.surface import sum_text

    sys.stdout.write(sum_text(_read(args).rows()))
    return 0


def _verify(args: argparse.Namespace) -> int:
    if bool(args.file) == bool(args.manifests):
        return _usage_error("give a sum FILE or -f MANIFESTS (one of the two)")
    if args.manifests:
        return _verify_manifests(args)
    from lockwright.identity import sums

    expected = sums.parse(_read_text(args.file), args.file)
    found = sums.compare(expected, sums.entries(_read(args).rows()),
                         extra=not args.ignore_extra)
    for difference in found:
        print(difference.message)
    if found:
        common.fail(f"{len(found)} type versions differ from {args.file}")
        return DIFFERENT
    print(f"{len(expected)} type versions match {args.file}")
    return 0


def _usage_error(message: str) -> int:
    common.fail(message)
    return USAGE


def _read_text(path: str) -> str:
    from lockwright.errors import InputError

    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it: {exc}") from None


def manifest_files(paths: list[str]) -> list[str]:
    """Each path, a directory as the YAML and JSON files under it (sorted)."""
    out: list[str] = []
    for path in paths:
        if path != "-" and Path(path).is_dir():
            out += sorted(str(p) for p in Path(path).rglob("*")
                          if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
        else:
            out.append(path)
    return out


def _verify_manifests(args: argparse.Namespace) -> int:
    from lockwright.identity.manifests import check, documents

    objects = [o for path in manifest_files(args.manifests)
               for o in documents(_read_text(path), path)]
    s = common.settings(args)
    with common.kube(s, args.context) as kube:
        lookup = _served(kube, read(kube))
        problems = check(objects, lookup)
    for problem in problems:
        print(problem.message)
    if problems:
        common.fail(f"{len(problems)} of {len(objects)} objects have types the cluster "
                    "does not serve as written")
        return DIFFERENT
    print(f"{len(objects)} objects: every type served as written")
    return 0


def _served(kube: Kube, snapshot: Snapshot) -> Lookup:
    """The manifests' lookup: custom types by their rows, other kinds by discovery."""
    from lockwright.errors import KubeNotFound
    from lockwright.identity.manifests import lookup

    custom = lookup(snapshot.rows())

    def served(api_version: str, kind: str) -> frozenset[str] | None:
        if (api_version, kind) in custom:
            return custom[(api_version, kind)]
        try:
            kube.resource(api_version, kind)
        except KubeNotFound:
            return None
        return frozenset()
    return served


def _diff(args: argparse.Namespace) -> int:
    from lockwright.identity.diff import diff

    a, b = _read(args, args.a), _read(args, args.b)
    found = diff(a.rows(), b.rows(), _by_name(a.crds), _by_name(b.crds))
    if args.output == "json":
        print(json.dumps([dataclasses.asdict(d) for d in found], indent=2))
    else:
        for line in diff_lines(found, args.a, args.b):
            print(line)
    if found:
        common.fail(f"{len(found)} differences between {args.a} and {args.b}")
        return DIFFERENT
    print(f"{args.a} and {args.b} serve the same types")
    return 0


def _by_name(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {_name(o): o for o in objs}


def diff_lines(found: list[TypeDiff], a: str, b: str) -> list[str]:
    """Each difference, a definition's fields indented under it."""
    from lockwright.identity.diff import ONLY_A, ONLY_B

    lines: list[str] = []
    for d in found:
        if d.how in (ONLY_A, ONLY_B):
            lines.append(f"{d.key}: served only by {a if d.how == ONLY_A else b}")
            continue
        verdict = f", {d.verdict}" if d.verdict else ""
        lines.append(f"{d.key}: {d.how} differs{verdict} ({a} {d.a}, {b} {d.b})")
        lines += [f"  {f}" for f in d.fields]
    return lines

