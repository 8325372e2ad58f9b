"""``lockwright xpkg``: build, push, inspect, lint, extract and cache-load packages; sign and
verify them with cosign keys.

Registration only builds parsers; handlers import the OCI client and the format code when
they run. Every handler turns a lockwright error into one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

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
    _register_cosign(sub, common)


def _register_cosign(sub: Any, common: argparse.ArgumentParser) -> None:
    sign = sub.add_parser("sign", parents=[common], help="sign a package image with a cosign "
                          "key (password from COSIGN_PASSWORD)")
    sign.add_argument("--key", required=True, type=Path, help="cosign or PEM private key")
    sign.add_argument("-a", "--annotations", action="append", default=[], metavar="KEY=VALUE",
                      help="a claim for the payload's optional section (repeatable)")
    sign.add_argument("ref", metavar="REF")
    sign.set_defaults(func=_guard(_signature_guard(_sign)))
    verify = sub.add_parser("verify", parents=[common], help="verify a package image's cosign "
                            "signature or attestations with a public key")
    verify.add_argument("--key", required=True, type=Path, help="PEM public key")
    verify.add_argument("--signature-digest-algorithm", default="sha256", metavar="HASH",
                        help="sha224, sha256, sha384 or sha512 (default sha256)")
    verify.add_argument("--attestation", action="append", default=[], metavar="TYPE",
                        help="require an attestation of this predicate type instead of a "
                        "signature (URI or cosign alias; repeatable)")
    verify.add_argument("ref", metavar="REF")
    verify.set_defaults(func=_guard(_signature_guard(_verify)))
    keys = sub.add_parser("generate-key-pair", help="write a cosign key pair (password from "
                          "COSIGN_PASSWORD)")
    keys.add_argument("--output-key-prefix", default="cosign", metavar="PREFIX")
    keys.set_defaults(func=_guard(_signature_guard(_generate_key_pair)))


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


def _signature_guard(handler: Handler) -> Handler:
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        from lockwright.images.cosign import SignatureError

        try:
            return handler(args)
        except SignatureError as exc:
            print(f"error: SignatureError: {exc.message}", file=sys.stderr)
            return 1
    return run


def registry_arguments() -> argparse.ArgumentParser:
    """The registry flags of ``xpkg`` (insecure hosts, credentials), for other groups."""
    return _common()


def guard(handler: Handler) -> Handler:
    """``xpkg``'s error handling (one line on stderr, exit 1), for other groups."""
    return _guard(handler)


def registry_client(args: argparse.Namespace) -> Any:
    """A registry client as ``xpkg push`` makes it (same auth, same insecure hosts)."""
    return _client(args)


def _client(args: argparse.Namespace) -> Any:
    from lockwright.oci.auth import DockerAuths
    from lockwright.oci.client import RegistryClient

    auths = DockerAuths.from_file(args.registry_auth) if args.registry_auth else None
    return RegistryClient(insecure=args.insecure_registry, auths=auths)


def _cache(args: argparse.Namespace) -> Any:
    """The package cache, for a command that fetches or keeps packages (a reference, ``cache
    load``); it says which directory it needs when that cannot be written."""
    from lockwright.oci.cache import PackageCache

    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lockwright/xpkg"
    return PackageCache(args.cache_dir or os.environ.get("LOCKWRIGHT_CACHE_DIR") or default)


@contextlib.contextmanager
def _scratch() -> Iterator[Any]:
    """A throwaway cache in the temporary directory, for reading a local file: such a
    command keeps nothing, so it must not need the package cache (a read-only home)."""
    from lockwright.oci.cache import CacheDirUnusable, PackageCache

    try:
        tmp = tempfile.TemporaryDirectory(prefix="lockwright-xpkg-")
    except OSError as exc:
        raise CacheDirUnusable(
            f"reading a package file needs a writable temporary directory ({exc}): set "
            "TMPDIR to one; in a container with a read-only root filesystem, mount a tmpfs "
            "at /tmp (docker run --tmpfs /tmp)") from exc
    with tmp as root:
        yield PackageCache(root)


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

    if _is_file(args.target):
        with _scratch() as scratch, open_tarball(args.target, scratch) as (_, local):
            return _summary_dict(local.digest, local.base_layer, local.summary)
    fetched = fetch_package(args.target, _client(args), _cache(args), policy="Always")
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
        with _open_file(target) as (_, local):
            warnings = list(local.summary.warnings)
    for warning in warnings:
        print(f"warning: {warning}")
    print("ok")
    return 0


@contextlib.contextmanager
def _open_file(target: Path) -> Iterator[Any]:
    """A package file's package.yaml and summary, read in a scratch directory."""
    from lockwright.oci.local import open_tarball

    with _scratch() as scratch, open_tarball(target, scratch) as opened:
        yield opened


def _extract(args: argparse.Namespace) -> int:
    from lockwright.oci.fetch import fetch_package
    from lockwright.oci.local import copy_out

    if _is_file(args.target):
        with _open_file(Path(args.target)) as (yaml_path, _):
            copy_out(yaml_path, args.output)
    else:
        copy_out(fetch_package(args.target, _client(args), _cache(args)).path, args.output)
    print(f"wrote {args.output}")
    return 0


def _cache_load(args: argparse.Namespace) -> int:
    from lockwright.oci.local import load_into_cache

    entry = load_into_cache(_cache(args), args.file, args.as_ref)
    print(f"{args.as_ref} -> {entry.digest}")
    return 0


def _password(confirm: bool = False) -> bytes | None:
    """COSIGN_PASSWORD as cosign reads it, else a prompt on a terminal, else none."""
    if "COSIGN_PASSWORD" in os.environ:
        return os.environ["COSIGN_PASSWORD"].encode()
    if not sys.stdin.isatty():
        return None
    import getpass

    first = getpass.getpass("Enter password for private key: ")
    if confirm and getpass.getpass("Enter password for private key again: ") != first:
        from lockwright.images.cosign import SignatureError

        raise SignatureError("the passwords do not match")
    return first.encode()


def _read_key(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        from lockwright.images.cosign import SignatureError

        raise SignatureError(f"cannot read key file {path}: {exc.strerror}") from None


def _reference(text: str) -> Any:
    from lockwright.oci.reference import parse

    return parse(text)


def _sign(args: argparse.Namespace) -> int:
    from lockwright.images.cosign import SignatureError, load_private_key, sign_image

    annotations = dict(a.partition("=")[::2] for a in args.annotations)
    if any(not k for k in annotations):
        raise SignatureError("an annotation must be KEY=VALUE")
    key = load_private_key(_read_key(args.key), _password())
    client, ref = _client(args), _reference(args.ref)
    print(sign_image(client, ref, client.resolve(ref), key, annotations))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from lockwright.images.cosign import Attestation, KeyAuthority, verify_image

    authority = KeyAuthority(str(args.key), _read_key(args.key),
                             args.signature_digest_algorithm,
                             tuple(Attestation(t, t) for t in args.attestation))
    client, ref = _client(args), _reference(args.ref)
    digest = client.resolve(ref)
    verified = verify_image(client, ref, digest, [authority])
    print(f"verified {ref.source}@{digest}: {verified.evidence} (key {verified.authority})")
    return 0


def _generate_key_pair(args: argparse.Namespace) -> int:
    from lockwright.images.cosign import SignatureError, generate_key_pair

    private, public = Path(f"{args.output_key_prefix}.key"), Path(f"{args.output_key_prefix}.pub")
    for path in (private, public):
        if path.exists():
            raise SignatureError(f"{path} exists; refusing to overwrite it")
    password = _password(confirm=True)
    if password is None:
        raise SignatureError("set COSIGN_PASSWORD (it may be empty) or run on a terminal")
    encrypted, pem = generate_key_pair(password)
    private.touch(mode=0o600)
    private.write_bytes(encrypted)
    public.write_bytes(pem)
    print(f"Private key written to {private}\nPublic key written to {public}")
    return 0
