"""Benchmark ``lockwright index build`` over 50 package versions of 2,000-CRD providers,
beside a floor measured in the same run (a script, not a test).

Pushes ``--providers`` Providers of ``--crds`` CRDs (``--mb`` of YAML each, sizes spread as
provider-aws's, seeded; ``benchmarks/install.py``'s generator) in ``--versions`` versions
each, every version its own base layer (the controller image tag in crossplane.yaml
moves), to Debian's docker-registry on loopback. Then, in turns (floor, build, floor):

- the floor: what any index builder must fetch: list each repository's tags, resolve
  each, read its manifest and download its base layer to a file, with the plain registry
  client (:class:`lockwright.oci.client.RegistryClient`), nothing parsed;
- build: :func:`lockwright.index.build.build`, what ``lockwright index build`` runs: the
  same fetches, the package.yaml extracted and streamed once (meta, served types, a type
  digest per definition, the API digest).

The best floor is kept. Printed: both times, the ratio, the index's size, and the time of
a rebuild with ``--previous`` after one more version is pushed. ``--decode`` adds a second
floor: the same fetches with each package.yaml extracted and decoded and nothing else
(the part of the cost any reader of the types pays).

    python benchmarks/index_build.py [--providers 5] [--versions 10] [--crds 2000] [--mb 100]
                                     [--decode] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import provider_meta, quiet_logs, workdir
from benchmarks.install import big_sizes, push_root, write_package_root


def push_versions(work: Path, registry: str, name: str, sizes: list[int],
                  versions: int, start: int = 0) -> str:
    """Push versions ``start`` to ``versions - 1`` of one Provider; return its repository."""
    root = work / "src" / name
    if not root.exists():
        root, _ = write_package_root(str(work), name, sizes)
    for v in range(start, versions):
        tag = f"v1.{v}.0"
        (root / "crossplane.yaml").write_text(provider_meta(name, tag))
        push_root(str(work), registry, name, root, tag)
    return f"{registry}/bench/{name}"


def floor(client: object, repositories: list[str], decode: bool = False
          ) -> tuple[float, int, int]:
    """Seconds to fetch every tag's base layer (with ``decode``: and to extract and decode
    its package.yaml, nothing else); (seconds, layers, bytes)."""
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.fetch import DEFAULT_LIMITS, layers_to_read, select_image
    from lockwright.oci.reference import parse

    assert isinstance(client, RegistryClient)
    start, count, size = time.perf_counter(), 0, 0
    with tempfile.TemporaryDirectory(prefix="lockwright-floor-") as scratch:
        for repository in repositories:
            ref = parse(repository)
            for tag in client.list_tags(ref):
                pinned = ref.with_tag(tag).with_digest(client.resolve(ref.with_tag(tag)))
                top = client.get_manifest(pinned, pinned.digest)
                layers, _ = layers_to_read(client, pinned, select_image(client, pinned, top),
                                           DEFAULT_LIMITS)
                for layer in layers:
                    with (Path(scratch) / "layer").open("wb") as out:
                        size += client.download_blob(pinned, layer.digest, out, 2**31)
                    count += 1
                if decode:
                    decoded(Path(scratch) / "layer")
    return time.perf_counter() - start, count, size


def decoded(layer: Path) -> int:
    """Extract the layer's package.yaml and decode every document; how many."""
    from lockwright.oci.extract import extract_package_yaml
    from lockwright.xpkg.parse import iter_objects

    out = layer.with_name("package.yaml")
    with out.open("wb") as f:
        extract_package_yaml([(layer, "layer")], f, 2**31, 2**31)
    with out.open("rb") as f:
        return sum(1 for _ in iter_objects(f, limit=2**31))


def ours(client: object, repositories: list[str], previous: object = None
         ) -> tuple[float, Any]:
    """Seconds of ``index build`` (with ``previous``: ``--previous``), and the index."""
    from lockwright.index.build import build
    from lockwright.oci.client import RegistryClient

    assert isinstance(client, RegistryClient)
    notes: list[str] = []
    start = time.perf_counter()
    index = build(client, repositories, notes.append, previous=previous)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    assert not notes, notes
    return elapsed, index


def run(args: argparse.Namespace, work: Path) -> None:
    from lockwright.oci.client import RegistryClient
    from tests.fixtures.registry import start_registry, stop

    (work / "registry").mkdir(exist_ok=True)
    proc, server = start_registry(work / "registry")
    try:
        started = time.perf_counter()
        sizes = big_sizes(args.crds, args.mb)
        repos = [push_versions(work, server.host, f"idx{p}", sizes, args.versions)
                 for p in range(args.providers)]
        print(f"pushed {args.providers} x {args.versions} versions of {args.crds} CRDs "
              f"({args.mb:g} MB of YAML each) in {time.perf_counter() - started:.0f} s",
              flush=True)
        client = RegistryClient(insecure=[server.host])
        first = floor(client, repos)
        built = ours(client, repos)
        second = floor(client, repos)
        report(min(first, second), built)
        if args.decode:
            seconds, _, _ = floor(client, repos, decode=True)
            print(f"decode floor (the same, and package.yaml extracted and decoded): "
                  f"{seconds:.2f} s; index build is {built[0] / seconds:.2f}x that", flush=True)
        push_versions(work, server.host, "idx0", sizes, args.versions + 1, start=args.versions)
        seconds, index = ours(client, repos, previous=built[1])
        print(f"index build --previous, after one more version was pushed: {seconds:.2f} s "
              f"({len(index.entries)} versions, 1 read)")
    finally:
        stop(proc)


def report(base: tuple[float, int, int], built: tuple[float, Any]) -> None:
    seconds, layers, size = base
    took, index = built
    count = len(index.entries)
    print(f"floor (list, resolve, manifest, download each base layer): {seconds:.2f} s for "
          f"{layers} layers, {size / 2**20:.0f} MiB ({seconds / layers:.3f} s per version)")
    print(f"index build: {took:.2f} s for {count} versions ({took / count:.3f} s per "
          f"version), index {len(index.to_bytes()) / 2**20:.1f} MiB")
    print(f"ratio: {took / seconds:.1f}x the floor", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", type=int, default=5)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--crds", type=int, default=2000)
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--decode", action="store_true", help="also time a second floor: "
                        "the same layers extracted and decoded, nothing else")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    args = parser.parse_args()
    quiet_logs()
    with workdir(args.keep, "index") as work:
        run(args, work)


if __name__ == "__main__":
    main()
