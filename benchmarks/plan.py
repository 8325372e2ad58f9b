"""Benchmark upgrade plans on a provider-sized package, beside floors from the same run.

Generates a Provider of ``--crds`` CRDs shaped by ``benchmarks/crdgen.py`` (2,000 CRDs,
~100 MB of YAML by default) as v1, and a v2 in which ``--changed-percent`` of its CRDs
(spread evenly, the 1.7 MB one among them) changed: half gain an optional field, half lose
one (breaking), and the controller image moves. Starts Debian's docker-registry and
devcluster on free loopback ports, pushes both, fetches both into a package cache, creates
both ProviderRevisions and every v1 CRD in devcluster, and then runs the real
``plan_revision`` activity in this process (``activities.wire`` over a ``Kube``, in an
activity context as ``tests/integration/test_activities.py`` runs activities):

1. the plan with no custom resources, against the floor: decoding both package.yaml files
   as the fetch does (``lockwright.xpkg.parse.iter_objects``), in turns, best of
   ``--repeat``. Target: at most 1.5x the floor.
2. ``--resources`` custom resources of the changed CRDs (spread evenly over them; one in
   ``REMOVED_EVERY`` of those whose field goes sets it) created, then the plan again,
   beside its floor: the plan without them plus reading their pages bare (``Kube.pages``).
   Target: at most 10 s.
3. the peak memory of a fresh process that runs that plan (its VmHWM: a child's
   ru_maxrss would carry this process's peak across exec), beside a fresh process that
   only decodes both package.yaml files. Target: at most 300 MB.

Each plan is checked against what the benchmark changed (counts, breaking CRDs, the
rejected resources), so a fast wrong plan fails too.

    python benchmarks/plan.py [--quick] [--crds 2000] [--changed-percent 1]
                              [--resources 10000] [--repeat 3] [--keep DIR]

``--quick``: 200 CRDs (~10 MB), 1,000 resources. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml

from benchmarks.common import provider_meta, quiet_logs, workdir
from benchmarks.crdgen import make_crd
from benchmarks.install import _Dumper, big_sizes, push_root

Obj = dict[str, Any]
GROUP = "planbench.example.org"
PACKAGE = "plan-bench"
PKG = "pkg.crossplane.io/v1"
CRD_API = "apiextensions.k8s.io/v1"
#: Of the resources of a CRD that loses a field, one in this many set it.
REMOVED_EVERY = 20
PLAN_MAX = 1.5
RESOURCES_MAX_S = 10.0
MEMORY_MAX_MB = 300.0
#: Temporal refuses payloads over 2 MB by default.
PAYLOAD_MAX = 2 * 1024 * 1024


# --- the two versions -------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """A CRD v2 changes: ``field`` of ``block0`` in ``spec.forProvider`` added or removed."""

    index: int
    mode: str  # "add" or "remove"
    field: str


def changed_indices(count: int, percent: float) -> list[int]:
    """``percent`` of ``count`` CRD indices, spread evenly, index 0 (the 1.7 MB one) first."""
    n = max(1, round(count * percent / 100))
    return sorted({i * count // n for i in range(n)})


def block0(crd: Obj) -> Obj:
    """``spec.forProvider.block0`` of a crdgen CRD's only version."""
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return dict(schema["properties"]["spec"]["properties"]["forProvider"]["properties"]
                ["block0"])


def plan_changes(indices: list[int], size_of: Callable[[int], int]) -> list[Change]:
    """Every other changed CRD gains ``addedField``; the rest lose block0's first scalar."""
    out = []
    for n, index in enumerate(indices):
        if n % 2:
            out.append(Change(index, "add", "addedField"))
            continue
        props = block0(make_crd(index, size_of(index), GROUP))["properties"]
        out.append(Change(index, "remove", next(k for k, v in props.items()
                                                if v.get("type") not in ("object", "array"))))
    return out


def changed_crd(crd: Obj, change: Change) -> Obj:
    """``crd`` with ``change`` made (block0 copied: crdgen shares blocks between fields)."""
    crd = copy.deepcopy(crd)
    version = crd["spec"]["versions"][0]
    fp = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "forProvider"]["properties"]
    props = dict(fp["block0"]["properties"])
    if change.mode == "add":
        props[change.field] = {"type": "string", "description": "A field v2 adds."}
    else:
        del props[change.field]
    fp["block0"] = {**fp["block0"], "properties": props}
    return crd


def write_crd(path: Path, crd: Obj) -> int:
    with path.open("w") as f:
        yaml.dump(crd, f, Dumper=_Dumper, sort_keys=False)
    return path.stat().st_size


def write_versions(work: Path, sizes: list[int], changes: list[Change]
                   ) -> tuple[Path, Path, int]:
    """Both package roots (v2 shares v1's unchanged files by hard link); v1's YAML bytes."""
    v1, v2 = work / "src" / "v1", work / "src" / "v2"
    for root, tag in ((v1, "v1.0.0"), (v2, "v2.0.0")):
        (root / "crds").mkdir(parents=True)
        (root / "crossplane.yaml").write_text(provider_meta(PACKAGE, tag))
    total = 0
    for i, size in enumerate(sizes):
        total += write_crd(v1 / "crds" / f"crd{i:04d}.yaml", make_crd(i, size, GROUP))
        (v2 / "crds" / f"crd{i:04d}.yaml").hardlink_to(v1 / "crds" / f"crd{i:04d}.yaml")
    for ch in changes:
        path = v2 / "crds" / f"crd{ch.index:04d}.yaml"
        path.unlink()
        write_crd(path, changed_crd(make_crd(ch.index, sizes[ch.index], GROUP), ch))
    return v1, v2, total


# --- custom resources -------------------------------------------------------------------
def sample(schema: Obj, rng: random.Random) -> Any:
    """A value ``schema`` accepts (every property of an object set)."""
    kind = schema.get("type")
    if kind == "object":
        return {k: sample(v, rng) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [sample(schema.get("items") or {"type": "string"}, rng)
                for _ in range(rng.randrange(1, 3))]
    if kind == "number":
        return rng.randrange(10**4) / 8
    if kind == "boolean":
        return rng.random() < 0.5
    return f"value-{rng.randrange(10**6)}"


def custom_resource(crd: Obj, n: int, change: Change) -> Obj:
    """Resource ``n`` of a v1 CRD: block0 (and block1 if any) filled; the field v2 removes
    only in one of ``REMOVED_EVERY``."""
    rng = random.Random(n)
    fp = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["forProvider"]["properties"]
    spec = {name: sample(fp[name], rng) for name in ("block0", "block1") if name in fp}
    if change.mode == "remove" and n % REMOVED_EVERY:
        del spec["block0"][change.field]
    names = crd["spec"]["names"]
    return {"apiVersion": f"{GROUP}/v1beta1", "kind": names["kind"],
            "metadata": {"name": f"{names['singular']}-{n:05d}"},
            "spec": {"forProvider": spec, "deletionPolicy": "Delete"}}


def resources_of(sizes: list[int], changes: list[Change], total: int) -> Iterator[Obj]:
    """``total`` resources spread evenly over the changed CRDs."""
    for k, ch in enumerate(changes):
        crd = make_crd(ch.index, sizes[ch.index], GROUP)
        for n in range(total * k // len(changes), total * (k + 1) // len(changes)):
            yield custom_resource(crd, n, ch)


def expected_rejected(changes: list[Change], total: int) -> dict[str, int]:
    """Per CRD, how many of its resources hold a value at a field v2 removes."""
    out = {}
    for k, ch in enumerate(changes):
        span = range(total * k // len(changes), total * (k + 1) // len(changes))
        count = sum(1 for n in span if n % REMOVED_EVERY == 0)
        if ch.mode == "remove" and count:
            out[f"kind{ch.index}s.{GROUP}"] = count
    return out


# --- measuring --------------------------------------------------------------------------
@dataclass
class Setup:
    """What a plan needs: where the cluster and the cache are, and the revisions."""

    kubeconfig: str
    cache: str
    registry: str
    refs: tuple[str, str]
    digests: tuple[str, str]

    def revision(self, n: int) -> str:
        return f"{PACKAGE}-v{n + 1}"

    def argv(self) -> list[str]:
        return [self.kubeconfig, self.cache, self.registry, *self.refs, *self.digests]

    @classmethod
    def of(cls, argv: list[str]) -> Setup:
        return cls(argv[0], argv[1], argv[2], (argv[3], argv[4]), (argv[5], argv[6]))


def activities(setup: Setup) -> Any:
    from lockwright.k8s import Kube
    from lockwright.oci.cache import PackageCache
    from lockwright.settings import Settings
    from tests.activity_view import Activities

    settings = Settings(cache_dir=setup.cache, insecure_registries=(setup.registry,))
    return Activities(settings, Kube.connect(setup.kubeconfig), PackageCache(setup.cache))


def run_plan(acts: Any, setup: Setup) -> Any:
    """``plan_revision`` of v2 against v1, in an activity context, as the worker runs it."""
    from temporalio.testing import ActivityEnvironment

    from lockwright import contracts as c

    inp = c.PlanRevisionInput(c.PROVIDER, PACKAGE, setup.revision(1), setup.digests[1],
                              setup.revision(0), setup.digests[0])
    return ActivityEnvironment().run(acts.plan_revision, inp)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def decode_both(paths: list[Path]) -> int:
    """The floor: both package.yaml files decoded as the fetch decodes them."""
    from lockwright.xpkg.parse import iter_objects

    count = 0
    for path in paths:
        with path.open("rb") as f:
            count += sum(1 for _ in iter_objects(f))
    return count


def read_pages(acts: Any, changes: list[Change]) -> int:
    """The other floor: every resource of the changed CRDs read bare, page by page."""
    return sum(len(page) for ch in changes
               for page in acts.kube.pages(f"{GROUP}/v1beta1", f"Kind{ch.index}", limit=500))


def vm_hwm_mb() -> float:
    """This process's peak RSS in MB (``VmHWM``: its own address space since exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_child(argv: list[str]) -> None:
    """In a fresh process: one plan (or, with ``floor``, the decode); print peak RSS, MB."""
    quiet_logs()
    if argv[0] == "floor":
        decode_both([Path(p) for p in argv[1:]])
    else:
        setup = Setup.of(argv[1:])
        run_plan(activities(setup), setup)
    print(vm_hwm_mb())


def peak_rss(*args: str) -> float:
    """Peak RSS in MB of ``python benchmarks/plan.py --rss-child ARGS``, run fresh.

    Read as the child's VmHWM: Linux carries the parent's peak into a child's
    ``ru_maxrss`` across exec, so ru_maxrss would report this process's peak, not the
    child's.
    """
    out = subprocess.run([sys.executable, __file__, "--rss-child", *args], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    return float(out.strip().splitlines()[-1])


# --- checking what the plan says --------------------------------------------------------
def plan_problems(plan: Any, changes: list[Change], rejected: dict[str, int]) -> list[str]:
    """How ``plan`` differs from what the benchmark changed (empty: it is right)."""
    from lockwright.upgrade.plan import CRD_LIMIT

    removals = sorted(f"kind{ch.index}s.{GROUP}" for ch in changes if ch.mode == "remove")
    wanted = {"changed": len(changes), "added": 0, "removed": 0,
              "blocking CRDs": removals[:CRD_LIMIT], "rejected": rejected,
              "breaking": len(removals) + len(rejected), "runtime": 1}
    got = {"changed": plan.changed, "added": plan.added, "removed": plan.removed,
           "blocking CRDs": sorted(v.crd for v in plan.crds if v.blocking),
           "rejected": {r.crd: r.count for r in plan.rejected},
           "breaking": plan.breaking_count, "runtime": len(plan.runtime)}
    return [f"{k}: {got[k]} (want {wanted[k]})" for k in wanted if got[k] != wanted[k]]


# --- the run ----------------------------------------------------------------------------
@dataclass
class Report:
    rows: list[tuple[str, str, str, str, str, bool]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def row(self, measure: str, ours: str, floor: str, ratio: str, target: str,
            ok: bool) -> None:
        self.rows.append((measure, ours, floor, ratio, target, ok))

    def print(self, header: str) -> bool:
        heads = ("measure", "lockwright", "floor", "ratio", "target")
        widths = [max(len(str(r[i])) for r in [heads, *self.rows]) for i in range(5)]
        line = "  ".join(h.ljust(w) for h, w in zip(heads, widths)) + "  result"
        print(f"\n{header}\n{line}\n{'-' * len(line)}")
        for r in self.rows:
            print("  ".join(str(v).ljust(w) for v, w in zip(r[:5], widths))
                  + ("  PASS" if r[5] else "  FAIL"))
        for note in self.notes:
            print(f"  {note}")
        return all(r[5] for r in self.rows)


def step(what: str) -> Callable[[], None]:
    """Print ``what``, then its duration when the returned function is called."""
    print(f"{what} ...", end="", flush=True)
    t0 = time.perf_counter()

    def done() -> None:
        print(f" {time.perf_counter() - t0:.1f}s", flush=True)

    return done


def push_both(work: Path, host: str, roots: tuple[Path, Path]) -> tuple[str, str]:
    refs = [push_root(str(work), host, PACKAGE, root, tag)
            for root, tag in zip(roots, ("v1.0.0", "v2.0.0"))]
    return refs[0], refs[1]


def fetch_both(setup: Setup) -> tuple[list[Path], tuple[str, str]]:
    """Both packages into the plan's cache; their package.yaml paths and digests."""
    from lockwright.oci.cache import PackageCache
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.fetch import fetch_package

    client, cache = RegistryClient(insecure=[setup.registry]), PackageCache(setup.cache)
    fetched = [fetch_package(ref, client, cache, expected_kind="Provider")
               for ref in setup.refs]
    return [f.entry.path for f in fetched], (fetched[0].digest, fetched[1].digest)


def create_all(kube: Any, objs: Iterator[Obj], workers: int = 16) -> int:
    """Create every object (a pool of ``workers``); how many."""
    with ThreadPoolExecutor(workers) as pool:
        return sum(1 for _ in pool.map(kube.create, objs))


def establish_v1(acts: Any, setup: Setup, v1_documents: Path) -> int:
    """lockwright's CRDs, both revisions (v1 Active) and every v1 CRD, as v1 left them."""
    from lockwright.activities.base import stream_objects
    from lockwright.k8s.crds import load_crds

    create_all(acts.kube, iter(load_crds()))
    for n in (0, 1):
        acts.kube.create({"apiVersion": PKG, "kind": "ProviderRevision",
                          "metadata": {"name": setup.revision(n)},
                          "spec": {"image": setup.refs[n], "revision": n + 1,
                                   "desiredState": "Inactive" if n else "Active"}})
    crds = (d for d in stream_objects(v1_documents) if d.get("kind") ==
            "CustomResourceDefinition")
    return create_all(acts.kube, crds, 8)


@dataclass
class Bench:
    args: argparse.Namespace
    setup: Setup
    acts: Any
    changes: list[Change]
    yaml_paths: list[Path]
    report: Report = field(default_factory=Report)
    floor_out: Any = None

    def plans(self, rejected: dict[str, int], floor: Callable[[], Any]
              ) -> tuple[float, float, bool, Any]:
        """Best plan and best floor over ``--repeat`` turns; whether the plan was right."""
        ours, floors, plan = [], [], None
        for _ in range(self.args.repeat):
            took, self.floor_out = timed(floor)
            floors.append(took)
            took, plan = timed(lambda: run_plan(self.acts, self.setup))
            ours.append(took)
            print(f"  plan {took:.2f}s, floor {floors[-1]:.2f}s", flush=True)
        problems = plan_problems(plan, self.changes, rejected)
        self.report.notes += [f"plan wrong: {p}" for p in problems]
        return min(ours), min(floors), not problems, plan

    def without_resources(self) -> float:
        """The plan with no resources against decoding both packages; its best time."""
        ours, floor, right, _ = self.plans({}, lambda: decode_both(self.yaml_paths))
        self.report.row(f"plan, {len(self.changes)} changed CRDs, no resources",
                        f"{ours:.2f} s", f"{floor:.2f} s", f"{ours / floor:.2f}x",
                        f"<= {PLAN_MAX}x decode", right and ours <= PLAN_MAX * floor)
        self.report.notes.append(f"decode floor: iter_objects over both package.yaml files, "
                                 f"{self.floor_out} documents")
        return ours

    def with_resources(self, count: int, bare_plan: float) -> Any:
        """The plan with ``count`` resources against the bare plan plus reading them."""
        rejected = expected_rejected(self.changes, count)
        ours, pages, right, plan = self.plans(
            rejected, lambda: read_pages(self.acts, self.changes))
        floor = bare_plan + pages
        self.report.row(f"plan, {count:,} resources to check "
                        f"({sum(rejected.values())} rejected)",
                        f"{ours:.2f} s", f"{floor:.2f} s", f"{ours / floor:.2f}x",
                        f"<= {RESOURCES_MAX_S:.0f} s", right and ours <= RESOURCES_MAX_S)
        self.report.notes.append(f"resources floor: plan without them {bare_plan:.2f} s + "
                                 f"reading their pages bare {pages:.2f} s")
        return plan

    def memory(self) -> None:
        ours = peak_rss("plan", *self.setup.argv())
        floor = peak_rss("floor", *map(str, self.yaml_paths))
        self.report.row("plan process peak memory (VmHWM)", f"{ours:.0f} MB",
                        f"{floor:.0f} MB", f"{ours / floor:.2f}x",
                        f"<= {MEMORY_MAX_MB:.0f} MB", ours <= MEMORY_MAX_MB)

    def payload(self, plan: Any) -> None:
        size = len(json.dumps(asdict(plan)))
        self.report.row("plan payload (JSON)", f"{size / 1024:.1f} KB", "", "",
                        f"<= {PAYLOAD_MAX // 2**20} MB", size <= PAYLOAD_MAX)


def prepare(args: argparse.Namespace, work: Path, registry: str, kubeconfig: str
            ) -> tuple[Setup, list[Change], list[int], list[Path], int]:
    sizes = big_sizes(args.crds, args.total_mb)
    changes = plan_changes(changed_indices(args.crds, args.changed_percent),
                           lambda i: sizes[i])
    done = step(f"writing v1 and v2 ({args.crds} CRDs, {len(changes)} changed)")
    v1, v2, total = write_versions(work, sizes, changes)
    done()
    done = step("building and pushing both")
    refs = push_both(work, registry, (v1, v2))
    done()
    setup = Setup(kubeconfig, str(work / "cache"), registry, refs, ("", ""))
    done = step("fetching both into the cache")
    paths, setup.digests = fetch_both(setup)
    done()
    return setup, changes, sizes, paths, total


def measure(args: argparse.Namespace, work: Path, registry: str, kubeconfig: str) -> bool:
    setup, changes, sizes, paths, total = prepare(args, work, registry, kubeconfig)
    acts = activities(setup)
    done = step("creating both revisions and v1's CRDs in devcluster")
    crds = establish_v1(acts, setup, paths[0].with_name("documents.jsonl"))
    done()
    bench = Bench(args, setup, acts, changes, paths)
    bare = bench.without_resources()
    done = step(f"creating {args.resources:,} custom resources")
    made = create_all(acts.kube, resources_of(sizes, changes, args.resources))
    done()
    bench.payload(bench.with_resources(made, bare))
    bench.memory()
    return bench.report.print(
        f"lockwright plan benchmark ({'quick' if args.quick else 'full'} run): {crds} CRDs, "
        f"package.yaml {total / 1e6:.1f} MB each, {len(changes)} changed "
        f"({sum(c.mode == 'remove' for c in changes)} lose a field), {made:,} resources; "
        f"best of {args.repeat}, floors in turns")


def run(args: argparse.Namespace, work: Path) -> bool:
    from tests.fixtures.devcluster import start_devcluster
    from tests.fixtures.registry import start_registry, stop

    for sub in ("registry", "devcluster"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    proc, server = start_registry(work / "registry")
    try:
        cluster = start_devcluster(str(work / "devcluster"))
        try:
            return measure(args, work, server.host, cluster.kubeconfig)
        finally:
            cluster.stop()
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="200 CRDs (~10 MB), 1,000 resources")
    parser.add_argument("--crds", type=int, default=2000)
    parser.add_argument("--total-mb", type=float, default=100.0,
                        help="package.yaml size, MB (about)")
    parser.add_argument("--changed-percent", type=float, default=1.0)
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="turns of plan and floor")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    parser.add_argument("--rss-child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return
    if args.quick:
        args.crds, args.total_mb, args.resources = 200, 10.0, 1000
    quiet_logs()
    with workdir(args.keep, "plan") as work:
        met = run(args, work)
    if not met:
        sys.exit(1)


if __name__ == "__main__":
    main()
