"""Benchmark the xpkg path on a provider-sized package (a script, not a test).

Generates a Provider with 2,000 CRDs (~100 MB of YAML; sizes log-normally spread like
provider-aws's, the largest 1.7 MB; seeded), starts Debian's docker-registry on loopback,
then times build, push, fetch+extract and parse, each beside a bare floor measured in the
same run, and the peak memory (ru_maxrss) of a streaming install pass in a fresh process.

    python benchmarks/xpkg.py [--crds 2000] [--total-mb 100] [--keep DIR]

Targets: fetch+parse within 1.3x the floor; streaming pass peak memory under 300 MB; the
whole ``lockwright xpkg inspect`` process at most 0.40x a bare ``yaml.load_all``
(CSafeLoader) process on the same package.yaml, wall time, measured in turns in the same
run (exit status 1 when that one is missed).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import math
import os
import random
import resource
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import quiet_logs, workdir

MAX_CRD = int(1.7 * 1024 * 1024)
WORDS = ["the", "resource", "field", "value", "of", "for", "to", "is", "provider", "managed",
         "external", "name", "set", "when", "reference", "selector", "policy", "deletion",
         "connection", "secret", "tag", "region", "identifier", "configuration",
         "specifies", "whether", "this", "must", "be", "an", "optional", "list"]


def _property(rng: random.Random, depth: int) -> str:
    pad = "  " * (8 + depth)
    name = rng.choice(WORDS) + rng.choice(WORDS).capitalize() + str(rng.randrange(1000))
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(6, 30)))
    kind = rng.choice(("string", "string", "integer", "boolean", "number"))
    return f"{pad}{name}:\n{pad}  description: {text}\n{pad}  type: {kind}\n"


def crd_yaml(rng: random.Random, index: int, size: int) -> str:
    """One CRD of about ``size`` bytes with a nested openAPIV3Schema."""
    group = f"svc{index % 150}.aws.example.io"
    plural = f"resource{index}s"
    head = (f"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            f"metadata:\n  name: {plural}.{group}\nspec:\n  group: {group}\n"
            f"  names:\n    kind: Resource{index}\n    listKind: Resource{index}List\n"
            f"    plural: {plural}\n    singular: resource{index}\n  scope: Cluster\n"
            "  versions:\n  - name: v1beta1\n    served: true\n    storage: true\n"
            "    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n"
            "          spec:\n            type: object\n            properties:\n")
    parts, total = [head], len(head)
    while total < size:
        block = _property(rng, 0)
        parts.append(block)
        total += len(block)
    return "".join(parts)


def crd_sizes(rng: random.Random, count: int, total: int) -> list[int]:
    """Log-normal sizes scaled to ``total`` bytes, capped at 1.7 MB, one at the cap."""
    raw = [rng.lognormvariate(math.log(30_000), 1.0) for _ in range(count)]
    scale = total / sum(raw)
    sizes = [min(MAX_CRD, max(2_000, int(s * scale))) for s in raw]
    sizes[rng.randrange(count)] = MAX_CRD
    return sizes


def generate(root: Path, count: int, total: int, seed: int = 42) -> int:
    """Write the package root; return the total YAML bytes."""
    rng = random.Random(seed)
    (root / "crds").mkdir(parents=True, exist_ok=True)
    (root / "crossplane.yaml").write_text(
        "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n"
        "  name: provider-bench\nspec:\n  crossplane:\n    version: '>=v1.14.0-0'\n")
    written = 0
    for i, size in enumerate(crd_sizes(rng, count, total)):
        text = crd_yaml(rng, i, size)
        (root / "crds" / f"crd{i:04d}.yaml").write_text(text)
        written += len(text)
    return written


@dataclass(frozen=True)
class Sample:
    """Wall-clock and CPU seconds (this process) of one run."""

    wall: float
    cpu: float


def timed(fn: Callable[[], Any]) -> tuple[Sample, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return Sample(time.perf_counter() - wall, time.process_time() - cpu), result


def best(samples: list[Sample]) -> Sample:
    """The least disturbed run: other load on the machine only ever adds time."""
    return Sample(min(s.wall for s in samples), min(s.cpu for s in samples))


def plus(a: Sample, b: Sample) -> Sample:
    return Sample(a.wall + b.wall, a.cpu + b.cpu)


def yaml_floor(path: Path) -> Sample:
    """Bare parse: ``yaml.load_all`` with CSafeLoader, objects discarded as they come."""
    import yaml

    def run() -> None:
        with path.open("rb") as f:
            for _ in yaml.load_all(f, Loader=yaml.CSafeLoader):
                pass

    return timed(run)[0]


def blob_read_floor(url: str) -> Sample:
    """Bare read: GET the blob, gunzip and untar it, throw the bytes away."""
    import requests

    def run() -> None:
        with requests.get(url, stream=True, timeout=120) as resp:
            resp.raise_for_status()
            with tarfile.open(fileobj=resp.raw, mode="r|gz") as tar:
                for member in tar:
                    source = tar.extractfile(member)
                    while source is not None and source.read(1 << 20):
                        pass

    return timed(run)[0]


def upload_floor(host: str, repo: str, blob: Path) -> Sample:
    """Bare upload: one monolithic POST+PUT of the layer with requests."""
    import requests

    data = blob.read_bytes() + os.urandom(16)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()

    def run() -> None:
        r = requests.post(f"http://{host}/v2/{repo}/blobs/uploads/", timeout=60)
        location = r.headers["Location"]
        location = location if location.startswith("http") else f"http://{host}{location}"
        sep = "&" if "?" in location else "?"
        requests.put(f"{location}{sep}digest={digest}", data=data, timeout=120).raise_for_status()

    return timed(run)[0]


def build_floor(root: Path, work: Path) -> Sample:
    """Bare build: concatenate the YAML, gzip it (level 6), parse it once."""
    stream = work / "floor-package.yaml"

    def run() -> None:
        with stream.open("wb") as out:
            for path in [root / "crossplane.yaml", *sorted((root / "crds").iterdir())]:
                out.write(path.read_bytes())
                out.write(b"\n---\n")
        with stream.open("rb") as src, gzip.open(work / "floor.gz", "wb", 6) as gz:
            while chunk := src.read(1 << 20):
                gz.write(chunk)

    return plus(timed(run)[0], yaml_floor(stream))


#: The bare process the inspect target is measured against: libyaml through PyYAML.
FLOOR_PROCESS = ("import sys, yaml\n"
                 "with open(sys.argv[1], 'rb') as f:\n"
                 "    for _ in yaml.load_all(f, Loader=yaml.CSafeLoader):\n"
                 "        pass\n")
INSPECT_TARGET = 0.40


def process(command: list[str]) -> Sample:
    """Wall and CPU seconds of ``command`` run to completion from this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout, whatever is installed
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Sample(wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def peak_rss(*args: str) -> float:
    """Peak RSS in MB of ``python benchmarks/xpkg.py --rss-child ARGS`` run fresh."""
    out = subprocess.run([sys.executable, __file__, "--rss-child", *args], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    return float(out.strip().splitlines()[-1])


def rss_child(mode: str, *args: str) -> None:
    """In a fresh process: run one pass, print the peak RSS in MB."""
    if mode == "install":
        from lockwright.oci.auth import DockerAuths
        from lockwright.oci.cache import PackageCache
        from lockwright.oci.client import RegistryClient
        from lockwright.oci.fetch import fetch_package

        host, ref, cache = args
        fetch_package(ref, RegistryClient([host], DockerAuths()), PackageCache(cache))
    elif mode == "floor":
        yaml_floor(Path(args[0]))
    # VmHWM, not ru_maxrss: Linux carries the parent's resident size, copied at fork, into
    # a child's ru_maxrss across exec, so a fresh child would report the benchmark's own.
    hwm = next(line for line in Path("/proc/self/status").read_text().splitlines()
               if line.startswith("VmHWM:"))
    print(int(hwm.split()[1]) / 1024)


Row = tuple[str, Sample, Sample, str]


class Bench:
    """One benchmark run against a registry on ``host``, working in ``work``."""

    def __init__(self, root: Path, work: Path, host: str, repeat: int) -> None:
        from lockwright.oci.auth import DockerAuths
        from lockwright.oci.client import RegistryClient

        self.root, self.work, self.host, self.repeat = root, work, host, repeat
        self.client = RegistryClient([host], DockerAuths())
        self.ref = f"{host}/bench/provider:v1.0.0"
        self.out = work / "provider.xpkg"
        self.runs = 0

    def build(self) -> Row:
        from lockwright.xpkg.build import build_package

        def run() -> None:
            with build_package(self.root) as built:
                built.write(self.out)

        return "build", timed(run)[0], build_floor(self.root, self.work), \
            "cat + gzip -6 + CSafeLoader"

    def push(self) -> tuple[Row, str]:
        from lockwright.oci.local import read_tarball
        from lockwright.oci.push import push_package

        tarball = read_tarball(self.out)
        base = next(layer for layer in tarball.layers if layer.annotation == "base")
        blob = self.work / "base.tar.gz"
        with base.open() as src, blob.open("wb") as dst:
            dst.write(src.read())
        took = timed(lambda: push_package(self.client, self.ref, [tarball]))[0]
        tarball.close()
        return ("push", took, upload_floor(self.host, "bench/floor", blob),
                "one monolithic blob PUT"), base.digest

    def fetch(self, validate: bool = True) -> Sample:
        import lockwright.oci.fetch as fetch_mod
        from lockwright.oci.cache import PackageCache

        self.runs += 1
        real = fetch_mod.validate_package
        if not validate:
            fetch_mod.validate_package = lambda *_a, **_k: None  # type: ignore[assignment]
        try:
            cache = PackageCache(self.work / f"cache-{self.runs}")
            return timed(lambda: fetch_mod.fetch_package(self.ref, self.client, cache))[0]
        finally:
            fetch_mod.validate_package = real

    def inspect_process(self) -> Row:
        """``lockwright xpkg inspect`` of the pushed package, against a bare load_all of
        its package.yaml, in turns (so load on the machine hits both), best of each."""
        from lockwright.oci.cache import PackageCache
        from lockwright.oci.fetch import fetch_package

        package_yaml = fetch_package(self.ref, self.client,
                                     PackageCache(self.work / "cache-floor")).path
        inspect = [sys.executable, "-m", "lockwright", "xpkg", "inspect", "--insecure-registry",
                   self.host, "--cache-dir", str(self.work / "cache-inspect"), self.ref]
        floor = [sys.executable, "-c", FLOOR_PROCESS, str(package_yaml)]
        samples: tuple[list[Sample], list[Sample]] = ([], [])
        for _ in range(max(self.repeat, 3)):
            samples[0].append(process(inspect))
            samples[1].append(process(floor))
        return ("inspect process", best(samples[0]), best(samples[1]),
                "load_all CSafeLoader process")

    def fetch_and_parse(self, base_digest: str) -> list[Row]:
        from lockwright.xpkg.parse import scan_package

        url = f"http://{self.host}/v2/bench/provider/blobs/{base_digest}"
        package_yaml = self.work / "floor-package.yaml"
        samples: dict[str, list[Sample]] = {k: [] for k in ("read", "extract", "yaml",
                                                              "scan", "fetch")}
        for _ in range(self.repeat):  # interleaved, so load on the machine hits both sides
            samples["read"].append(blob_read_floor(url))
            samples["extract"].append(self.fetch(validate=False))
            samples["yaml"].append(yaml_floor(package_yaml))
            with package_yaml.open("rb") as f:
                samples["scan"].append(timed(lambda: scan_package(f))[0])
            samples["fetch"].append(self.fetch())
        b = {k: best(v) for k, v in samples.items()}
        return [("fetch+extract", b["extract"], b["read"], "GET blob + gunzip + untar"),
                ("parse (scan_package)", b["scan"], b["yaml"], "yaml.load_all CSafeLoader"),
                ("fetch+parse", b["fetch"], plus(b["read"], b["yaml"]),
                 "GET blob + untar + load_all")]


def report(rows: list[Row], rss: float, rss_floor: float, sizes: tuple[float, float],
           crds: int, repeat: int) -> bool:
    """Print the rows and the targets; whether the inspect target was met."""
    print(f"package: {crds} CRDs, package.yaml {sizes[0]:.1f} MB, base layer "
          f"{sizes[1]:.1f} MB gzip; fetch/parse rows: best of {repeat}")
    print(f"{'step':<22}{'wall':>8}{'floor':>8}{'ratio':>7}{'cpu':>9}{'floor':>8}{'ratio':>7}"
          "  floor is")
    for step, ours, floor, what in rows:
        print(f"{step:<22}{ours.wall:>7.2f}s{floor.wall:>7.2f}s{ours.wall / floor.wall:>6.2f}x"
              f"{ours.cpu:>8.2f}s{floor.cpu:>7.2f}s{ours.cpu / max(floor.cpu, 1e-3):>6.2f}x"
              f"  {what}")
    print(f"{'peak RSS, install pass':<22}{rss:>6.0f}MB{rss_floor:>6.0f}MB"
          f"{rss / rss_floor:>6.2f}x  fresh process each; floor: load_all alone")
    fetch_parse = next(r for r in rows if r[0] == "fetch+parse")
    ok_time = fetch_parse[1].wall <= 1.3 * fetch_parse[2].wall
    print(f"targets: fetch+parse <= 1.3x floor: {'met' if ok_time else 'MISSED'} "
          f"({fetch_parse[1].wall / fetch_parse[2].wall:.2f}x); peak memory < 300 MB: "
          f"{'met' if rss < 300 else 'MISSED'} ({rss:.0f} MB)")
    _, inspect, floor, _ = next(r for r in rows if r[0] == "inspect process")
    ratio = inspect.wall / floor.wall
    print(f"inspect process <= {INSPECT_TARGET:.2f}x load_all process: "
          f"{'PASS' if ratio <= INSPECT_TARGET else 'FAIL'} ({inspect.wall:.2f}s / "
          f"{floor.wall:.2f}s = {ratio:.2f}x)")
    return ratio <= INSPECT_TARGET


def run(args: argparse.Namespace, work: Path) -> bool:
    from tests.fixtures.registry import start_registry, stop

    yaml_bytes = generate(work / "pkg", args.crds, int(args.total_mb * 1024 * 1024))
    (work / "registry").mkdir(exist_ok=True)
    proc, server = start_registry(work / "registry")
    try:
        bench = Bench(work / "pkg", work, server.host, args.repeat)
        rows = [bench.build()]
        push_row, base_digest = bench.push()
        rows += [push_row, *bench.fetch_and_parse(base_digest), bench.inspect_process()]
        rss = peak_rss("install", server.host, bench.ref, str(work / "cache-rss"))
        rss_floor = peak_rss("floor", str(work / "floor-package.yaml"))
        sizes = (yaml_bytes / 2**20, (work / "base.tar.gz").stat().st_size / 2**20)
        return report(rows, rss, rss_floor, sizes, args.crds, args.repeat)
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crds", type=int, default=2000)
    parser.add_argument("--total-mb", type=float, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="runs of fetch/parse, best kept")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    parser.add_argument("--rss-child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    quiet_logs()
    if args.rss_child:
        rss_child(*args.rss_child)
        return
    with workdir(args.keep, "xpkg") as work:
        met = run(args, work)
    if not met:
        sys.exit(1)


if __name__ == "__main__":
    main()
