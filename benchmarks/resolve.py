"""Benchmark dependency resolution on a 200-package graph, beside a registry floor (a script).

Starts Debian's docker-registry on a free loopback port, generates a layered graph of
``--packages`` repositories (200) with ``--versions`` tags each (20: v1.0.0 … v4.4.0) in
five layers, and pushes every tag (a small manifest per tag over one config and one layer
blob per repository). Each package depends on 0-3 packages of lower layers, with ranges
that follow each version's own major (``>=vM.m.0``, ``^M.0.0``, ``>=vM.0.0, <vM+1.0.0``,
``~M.m``), so newer parents need newer children. The installed state is one a cluster
reaches: every package nobody depends on is a root; half of those were resolved earlier
at v2.4.0 and everything they needed installed (Lock entries with recorded
dependencies); now every root is at its newest tag and two of them cap a widely shared
child below v3, so the search must back off parents and some roots have no solution
(``LOCKWRIGHT_DEPENDENCY_UPGRADES`` on). Then measures, median of ``--runs`` each:

1. ``resolve()`` with an in-memory catalog: one decision for the whole graph;
2. the same with one more root that cannot be satisfied, sharing the big component;
3. the floor: listing the 200 repositories' tags one after the other (as the resolver
   asks) from the registry with ``RegistryClient.list_tags``;
4. for scale, ``resolve()`` listing tags from the registry (dependencies from memory).

    python benchmarks/resolve.py [--quick] [--runs 9] [--keep DIR]

Target: resolution ≤ 1 s (rows 1 and 2).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests

from benchmarks.common import workdir
from lockwright.dependencies.graph import Graph, Node, Requirement
from lockwright.dependencies.resolver import CatalogError, Decision, Policy, resolve

TARGET_S = 1.0
LAYERS = 5
REPO = "bench/pkg-{layer}-{index:03d}"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


# --- the generated world ----------------------------------------------------------------
@dataclass
class World:
    """Repositories with their tags and per-version dependencies, and what is installed."""

    registry: str
    layers: list[list[str]] = field(default_factory=list)
    tags: dict[str, list[str]] = field(default_factory=dict)
    deps: dict[tuple[str, str], tuple[Requirement, ...]] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)

    def versions(self, source: str) -> list[str]:
        """The catalog: tags in the order a registry lists them (lexical)."""
        if source not in self.tags:
            raise CatalogError(f"repository {source} not found", transient=False)
        return sorted(self.tags[source])

    def dependencies(self, source: str, version: str) -> tuple[Requirement, ...]:
        """The catalog: what ``source`` at ``version`` depends on."""
        return self.deps[(source, version)]


def versions(count: int) -> list[str]:
    """``count`` tags, five minors per major: v1.0.0 … v1.4.0, v2.0.0 …"""
    return [f"v{1 + i // 5}.{i % 5}.0" for i in range(count)]


def constraint(rng: random.Random, major: int, minor: int) -> str:
    """A range that follows the parent's major: newer parents need newer children."""
    return rng.choice([f">=v{major}.{minor}.0", f"^{major}.0.0",
                       f">=v{major}.0.0, <v{major + 1}.0.0", f"~{major}.{rng.randrange(5)}"])


def generate(registry: str, packages: int, count: int, seed: int = 7) -> World:
    """The layered world (see the module docstring), the same for the same arguments."""
    rng = random.Random(seed)
    world = World(registry)
    per_layer = packages // LAYERS
    for layer in range(LAYERS):
        world.layers.append([f"{registry}/{REPO.format(layer=layer, index=i)}"
                             for i in range(per_layer)])
    for layer, sources in enumerate(world.layers):
        for source in sources:
            world.tags[source] = versions(count)
            _dependencies(world, rng, layer, source)
    _install(world)
    return world


def _dependencies(world: World, rng: random.Random, layer: int, source: str) -> None:
    lower = [s for sources in world.layers[:layer] for s in sources]
    children = rng.sample(lower, rng.randint(0, min(3, len(lower))))
    for tag in world.tags[source]:
        major, minor = (int(x) for x in tag[1:].split(".")[:2])
        world.deps[(source, tag)] = tuple(
            Requirement(child, "Provider", constraint(rng, major, minor),
                        parent=f"{source}@{tag}") for child in children)


def _install(world: World) -> None:
    """An earlier state, then today's Lock. Roots are the packages nobody depends on (so
    every package is reachable). Earlier, every other root was resolved at v2.4.0 and all
    it needed installed (Lock entries with recorded dependencies); now every root is at
    its newest tag, two of them capping a widely shared child below v3."""
    children = {r.package for deps in world.deps.values() for r in deps}
    roots = [s for layer in reversed(world.layers) for s in layer if s not in children]
    earlier = [_node(s, "v2.4.0", world.deps[(s, "v2.4.0")]) for s in roots[::2]]
    decision = resolve(Graph(tuple(earlier)), world, Policy())
    installed = [_node(c.source, c.version, world.deps[(c.source, c.version)])
                 for c in decision.changes]
    shared = world.layers[0][0]
    for i, source in enumerate(roots):
        tag = world.tags[source][-1]
        cap = (Requirement(shared, "Provider", "<v3.0.0"),) if i in (1, 3) else ()
        world.nodes.append(_node(source, tag, world.deps[(source, tag)] + cap))
    world.nodes += installed


def _node(source: str, tag: str, deps: tuple[Requirement, ...]) -> Node:
    name = source.rsplit("/", 1)[-1]
    return Node(source, "Provider", tag, name, f"{name}-rev",
                tuple(Requirement(d.package, d.kind, d.constraint, parent=f"{name}-rev")
                      for d in deps))


def broken(world: World) -> list[Node]:
    """The installed nodes plus a root no version can satisfy, sharing the big component."""
    shared = world.layers[0][0]
    return [*world.nodes, Node(f"{world.registry}/bench/broken", "Configuration", "v1.0.0",
                               "broken", "broken-rev",
                               (Requirement(shared, "Provider", ">=v9.0.0", parent="broken-rev"),))]


# --- the registry ----------------------------------------------------------------------
def push_repository(registry: str, source: str, tags: list[str]) -> None:
    """One config blob, one layer blob, then one small manifest per tag (each its own
    digest): what listing tags costs does not depend on what the images hold."""
    repo = source.removeprefix(registry + "/")
    with requests.Session() as http:
        config = _blob(http, registry, repo, b'{"architecture":"amd64","os":"linux"}')
        layer = _blob(http, registry, repo, b"lockwright benchmark layer")
        for tag in tags:
            body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                               "config": config, "layers": [layer],
                               "annotations": {"org.opencontainers.image.version": tag}})
            http.put(f"http://{registry}/v2/{repo}/manifests/{tag}", data=body,
                     headers={"Content-Type": OCI_MANIFEST}, timeout=30).raise_for_status()


def _blob(http: requests.Session, registry: str, repo: str, data: bytes) -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    started = http.post(f"http://{registry}/v2/{repo}/blobs/uploads/", timeout=30)
    started.raise_for_status()
    location = started.headers["Location"]
    location = location if location.startswith("http") else f"http://{registry}{location}"
    sep = "&" if "?" in location else "?"
    http.put(f"{location}{sep}digest={digest}", data=data, timeout=30,
             headers={"Content-Type": "application/octet-stream"}).raise_for_status()
    return {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": digest,
            "size": len(data)}


def push_world(world: World) -> None:
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda s: push_repository(world.registry, s, world.tags[s]), world.tags))


class RegistryTags:
    """A catalog listing tags from the registry (the floor's calls) with dependencies
    from memory: resolution as it would run against a registry, minus package fetches."""

    def __init__(self, world: World) -> None:
        from lockwright.oci.client import RegistryClient

        self.world = world
        self.client = RegistryClient(insecure=[world.registry])

    def versions(self, source: str) -> list[str]:
        from lockwright.oci.reference import parse

        return self.client.list_tags(parse(source + ":latest"))

    def dependencies(self, source: str, version: str) -> tuple[Requirement, ...]:
        return self.world.dependencies(source, version)


def list_every_repository(world: World) -> int:
    """The floor: every repository's tags, one repository after the other."""
    catalog = RegistryTags(world)
    return sum(len(catalog.versions(source)) for source in world.tags)


@contextlib.asynccontextmanager
async def registry_stack(work: Path) -> AsyncIterator[str]:
    """Debian's docker-registry on a free loopback port, always stopped."""
    from tests.helpers import free_port
    from lockwright.worker import devstack
    from lockwright.worker.stack import Stack

    opts = devstack.UpOptions(state_dir=work / "state", example=False,
                              registry_port=free_port(), timeout=60)
    for sub in ("logs", "registry"):
        (opts.state_dir / sub).mkdir(parents=True, exist_ok=True)
    stack = Stack(opts.state_dir)
    try:
        yield await devstack.start_registry(stack, opts)
    finally:
        await stack.stop_all()


# --- measuring --------------------------------------------------------------------------
Row = tuple[str, str, str, str, str, bool]


def median_of(runs: int, body: Callable[[], object]) -> tuple[float, object]:
    """The median seconds of ``runs`` calls of ``body``, and its last answer."""
    took, answer = [], None
    for _ in range(runs):
        t = time.perf_counter()
        answer = body()
        took.append(time.perf_counter() - t)
    return statistics.median(took), answer


def summary(decision: object) -> str:
    assert isinstance(decision, Decision)
    moved = sum(1 for c in decision.changes if not c.creates)
    return (f"{len(decision.changes) - moved} created, {moved} moved, "
            f"{len(decision.unresolved)} unresolved")


def measure(args: argparse.Namespace, world: World) -> tuple[list[Row], list[str]]:
    """Every row of the table, and the notes under it."""
    policy, graph = Policy(upgrades=True), Graph(tuple(world.nodes))
    floor, listed = median_of(args.runs, lambda: list_every_repository(world))
    ours, decision = median_of(args.runs, lambda: resolve(graph, world, policy))
    with_broken = Graph(tuple(broken(world)))
    worst, decision_b = median_of(args.runs, lambda: resolve(with_broken, world, policy))
    live, decision_r = median_of(args.runs, lambda: resolve(graph, RegistryTags(world), policy))
    rows: list[Row] = [
        ("resolve(), in-memory catalog", fmt(ours), fmt(floor), f"{ours / floor:.2f}x",
         f"<= {TARGET_S:.0f} s", ours <= TARGET_S),
        ("resolve(), plus one root with no solution", fmt(worst), fmt(floor),
         f"{worst / floor:.2f}x", f"<= {TARGET_S:.0f} s", worst <= TARGET_S),
        ("resolve(), tags listed from the registry", fmt(live), fmt(floor),
         f"{live / floor:.2f}x", "", True),
    ]
    floor_note = (f"floor: {len(world.tags)} repositories' tags listed one after the other "
                  f"({listed} tags) from docker-registry at {world.registry}")
    graph_note = (f"graph: {len(world.tags)} packages x {args.versions} tags, "
                  f"{len(world.nodes)} installed (Lock entries), "
                  "LOCKWRIGHT_DEPENDENCY_UPGRADES on")
    notes = [floor_note, graph_note,
             f"decision: {summary(decision)}; with the broken root: {summary(decision_b)}",
             f"median of {args.runs} runs each"]
    assert decision_r == decision, "the registry's tag order must not change the decision"
    return rows, notes


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def print_table(header: str, rows: list[Row], notes: list[str]) -> None:
    heads = ("measure", "lockwright", "floor", "ratio", "target")
    widths = [max(len(str(r[i])) for r in [heads, *rows]) for i in range(5)]
    print("\n" + header)
    line = "  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)) + "  result"
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r[:5], widths, strict=True))
              + ("  PASS" if r[5] else "  FAIL"))
    for note in notes:
        print(f"  {note}")


async def run(args: argparse.Namespace, work: Path) -> int:
    from lockwright.worker.stack import StackError

    try:
        async with registry_stack(work) as registry:
            world = generate(registry, args.packages, args.versions)
            t = time.perf_counter()
            await asyncio.to_thread(push_world, world)
            print(f"pushed {len(world.tags)} repositories x {args.versions} tags in "
                  f"{time.perf_counter() - t:.1f}s", flush=True)
            rows, notes = await asyncio.to_thread(measure, args, world)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_table(f"lockwright resolution benchmark ({'quick' if args.quick else 'full'} run)",
                rows, notes)
    return 0 if all(r[5] for r in rows) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs of each instead of 9")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--packages", type=int, default=200)
    parser.add_argument("--versions", type=int, default=20)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    args = parser.parse_args()
    if args.quick:
        args.runs = 3
    with workdir(args.keep, "resolve") as work:
        return asyncio.run(run(args, work))


if __name__ == "__main__":
    sys.exit(main())
