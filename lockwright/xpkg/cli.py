"""``lockwright xpkg``: build, push, inspect, lint, extract and cache-load packages.

Registration only builds parsers; handlers import the OCI client and the format code when
they run. Every handler turns a lockwright error into one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Handler = Callable[[argparse.Namespace], int]


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--insecure-registry", action="append", default=[], metavar="HOST:PORT",
                        help="reach this registry over plain HTTP (repeatable)")
    common.add_argument("--registry-auth", metavar="FILE",
                        help="Docker config.json with credentials (default: $DOCKER_CONFIG)")
    common.add_argument("--cache-dir", metavar="DIR", help="package cache directory "
                        "(default: $LOCKWRIGHT_CACHE_DIR or ~/.cache/lockwright/xpkg)")
    return common


def register(subparsers: Any) -> None:
    """Add the ``xpkg`` command group to the top-level parser."""
    common = _common()
    xpkg = subparsers.add_parser("xpkg", help="build, push, inspect and fetch packages")
    sub = xpkg.add_subparsers(dest="xpkg_command", metavar="SUBCOMMAND", required=True)
    build = sub.add_parser("build", parents=[common], help="build a package image tarball")
    build.add_argument("--package-root", required=True, type=Path)
    build.add_argument("--examples-root", type=Path)
    build.add_argument("--embed-runtime-image-tarball", type=Path, metavar="TAR")
    build.add_argument("-o", "--output", required=True, type=Path)
    build.set_defaults(func=_guard(_build))
    push = sub.add_parser("push", parents=[common], help="push tarballs as one image or index")
    push.add_argument("-f", "--file", action="append", required=True, type=Path, dest="files")
    push.add_argument("ref")
    push.set_defaults(func=_guard(_push))
    inspect = sub.add_parser("inspect", parents=[common], help="describe a package")
    inspect.add_argument("target", metavar="REF|FILE")
    inspect.add_argument("-o", "--output", choices=("text", "json"), default="text")
    inspect.set_defaults(func=_guard(_inspect))
    lint = sub.add_parser("lint", parents=[common], help="lint a package root or tarball")
    lint.add_argument("target", metavar="DIR|FILE")
    lint.set_defaults(func=_guard(_lint))
    extract = sub.add_parser("extract", parents=[common], help="write a package's package.yaml")
    extract.add_argument("target", metavar="REF|FILE")
    extract.add_argument("-o", "--output", required=True, type=Path)
    extract.set_defaults(func=_guard(_extract))
    cache = sub.add_parser("cache", help="manage the package cache")
    cache_sub = cache.add_subparsers(dest="cache_command", metavar="SUBCOMMAND", required=True)
    load = cache_sub.add_parser("load", parents=[common], help="fill the cache from a tarball")
    load.add_argument("file", type=Path)
    load.add_argument("--as", dest="as_ref", required=True, metavar="REF")
    load.set_defaults(func=_guard(_cache_load))


def _guard(handler: Handler) -> Handler:
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        from lockwright.errors import LockwrightError
        from lockwright.log import configure

        configure(level=os.environ.get("LOCKWRIGHT_LOG_LEVEL", "warning"))
        try:
            return handler(args)
        except LockwrightError as exc:
            print(f"error: {type(exc).__name__}: {exc.message}", file=sys.stderr)
            return 1
    return run


def _client(args: argparse.Namespace) -> Any:
    from lockwright.oci.auth import DockerAuths
    from lockwright.oci.client import RegistryClient

    auths = DockerAuths.from_file(args.registry_auth) if args.registry_auth else None
    return RegistryClient(insecure=args.insecure_registry, auths=auths)


def _cache(args: argparse.Namespace) -> Any:
    from lockwright.oci.cache import PackageCache

    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lockwright/xpkg"
    return PackageCache(args.cache_dir or os.environ.get("LOCKWRIGHT_CACHE_DIR") or default)


def _is_file(target: str) -> bool:
    return os.path.exists(target)


def _build(args: argparse.Namespace) -> int:
    from lockwright.xpkg.build import build_package

    with build_package(args.package_root, examples_root=args.examples_root,
                       runtime_tarball=args.embed_runtime_image_tarball) as built:
        built.write(args.output)
        for warning in built.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print(f"wrote {args.output} ({built.meta.kind} {built.meta.name}, {built.digest})")
    return 0


def _push(args: argparse.Namespace) -> int:
    from lockwright.oci.local import read_tarball
    from lockwright.oci.push import push_package

    tarballs = [read_tarball(f) for f in args.files]
    try:
        digest = push_package(_client(args), args.ref, tarballs)
    finally:
        for tarball in tarballs:
            tarball.close()
    print(f"{args.ref}@{digest}")
    return 0


def _describe(args: argparse.Namespace) -> dict[str, Any]:
    from lockwright.oci.fetch import fetch_package
    from lockwright.oci.local import open_tarball
    from lockwright.oci.validate import validate_package

    cache = _cache(args)
    if _is_file(args.target):
        with open_tarball(args.target, cache) as (_, local):
            return _summary_dict(local.digest, local.base_layer, local.summary)
    fetched = fetch_package(args.target, _client(args), cache, policy="Always")
    summary = fetched.summary or validate_package(fetched.path)
    return _summary_dict(fetched.digest, fetched.entry.base_layer, summary)


def _summary_dict(digest: str, base_layer: str, summary: Any) -> dict[str, Any]:
    meta = summary.meta
    return {
        "digest": digest,
        "baseLayer": base_layer,
        "kind": meta.kind,
        "name": meta.name,
        "crossplane": meta.crossplane_version,
        "dependencies": [{"package": d.package, "kind": d.kind, "version": d.constraint}
                         for d in meta.depends_on],
        "objects": dict(sorted(summary.counts.items())),
        "warnings": list(summary.warnings),
    }


def _inspect(args: argparse.Namespace) -> int:
    info = _describe(args)
    if args.output == "json":
        print(json.dumps(info, indent=2))
        return 0
    print(f"Digest:      {info['digest']}\nBase layer:  {info['baseLayer'] or '(none)'}\n"
          f"Package:     {info['kind']} {info['name']}\n"
          f"Crossplane:  {info['crossplane'] or '(any)'}")
    for dep in info["dependencies"]:
        print(f"Depends on:  {dep['kind']} {dep['package']} {dep['version']}")
    for kind, count in info["objects"].items():
        print(f"Objects:     {count} {kind}")
    for warning in info["warnings"]:
        print(f"Warning:     {warning}")
    return 0


def _lint(args: argparse.Namespace) -> int:
    target = Path(args.target)
    if target.is_dir():
        from lockwright.xpkg.build import build_package

        with build_package(target) as built:
            warnings = list(built.warnings)
    else:
        with _open_any(args, target) as (_, local):
            warnings = list(local.summary.warnings)
    for warning in warnings:
        print(f"warning: {warning}")
    print("ok")
    return 0


def _open_any(args: argparse.Namespace, target: Path) -> Any:
    from lockwright.oci.local import open_tarball

    return open_tarball(target, _cache(args))


def _extract(args: argparse.Namespace) -> int:
    from lockwright.oci.fetch import fetch_package
    from lockwright.oci.local import copy_out

    if _is_file(args.target):
        with _open_any(args, Path(args.target)) as (yaml_path, _):
            copy_out(yaml_path, args.output)
    else:
        copy_out(fetch_package(args.target, _client(args), _cache(args)).path, args.output)
    print(f"wrote {args.output}")
    return 0


def _cache_load(args: argparse.Namespace) -> int:
    entry = _cache(args).load(args.file, args.as_ref)
    print(f"{args.as_ref} -> {entry.digest}")
    return 0
