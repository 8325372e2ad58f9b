"""The upgrade gate's corpus report over public providers' release tags.

For each git repository given (a clone or bare mirror of, e.g.,
crossplane-contrib/provider-upjet-aws), takes its release tags (``vX.Y.Z``, pre-releases
left out) in version order and compares the CRDs of ``package/crds`` of every consecutive
pair with the plan's comparison (:mod:`lockwright.upgrade.corpus`). Only files git says
changed between the two tags are read, straight from the object store. Where a tag builds
its package with ``package/kustomize`` (the upjet providers), each CRD gets the conversion
webhook that build patches in, as the package ships it.

    python scripts/gate_corpus.py GITDIR... [--last N] [--every K] [--json OUT]

``--last N`` keeps each repository's last N pairs; ``--every K`` keeps one CRD file in K
(by a hash of its path, the same files in every pair) of repositories with more than
100 CRDs (the upjet providers); ``--sample`` writes the first CRD pairs showing each
verdict and change kind, cut to the fields that changed (what the unit test runs over).
Prints the pairs, the counts per verdict, the top change kinds of each verdict and an
example of each; ``--json`` writes the same with each repository's origin (tags, commits).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from lockwright.crdcompat import Change, name_of, schema_of, versions_of
from lockwright.upgrade.corpus import Tally, changes_of
from lockwright.upgrade.gate import VERDICTS, verdict_of

Obj = dict[str, Any]
CRDS = "package/crds"
KUSTOMIZE = "package/kustomize/webhook.yaml"
#: Repositories with more CRDs than this at their last tag are sampled (``--every``).
BIG = 100
SOURCE = ("CRD pairs from the release tags of the repositories named, package/crds, cut to "
          "the fields that changed by scripts/gate_corpus.py --sample")
_RELEASE = re.compile(r"v(\d+)\.(\d+)\.(\d+)")


def git(repo: Path, *args: str) -> str:
    """``git --git-dir=repo args...``'s output."""
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True,
                          capture_output=True, text=True).stdout


def releases(repo: Path) -> list[str]:
    """The release tags, oldest first, that have ``package/crds``."""
    tags = [t for t in git(repo, "tag").split() if _RELEASE.fullmatch(t)]
    tags.sort(key=lambda t: tuple(int(x) for x in _RELEASE.fullmatch(t).groups()))  # type: ignore[union-attr]
    return [t for t in tags if git(repo, "ls-tree", t, CRDS).strip()]


def sampled(path: str, every: int) -> bool:
    """Whether ``path`` is one of the one-in-``every`` files kept."""
    return every <= 1 or int(hashlib.sha256(path.encode()).hexdigest(), 16) % every == 0


def changed(repo: Path, old: str, new: str, every: int) -> list[tuple[str, str]]:
    """``(status, path)`` of each CRD file that differs between two tags (A, D or M)."""
    out = git(repo, "diff", "--no-renames", "--name-status", old, new, "--", CRDS)
    rows = [line.split("\t", 1) for line in out.splitlines() if line]
    return [(s[0], p) for s, p in rows if p.endswith(".yaml") and sampled(p, every)]


class Blobs:
    """``git cat-file --batch`` over one repository: file contents by ``tag:path``."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(["git", f"--git-dir={repo}", "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def crd(self, ref: str) -> Obj:
        """The CRD at ``ref``, parsed."""
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(ref.encode() + b"\n")
        self.proc.stdin.flush()
        size = int(self.proc.stdout.readline().split()[2])
        data = self.proc.stdout.read(size + 1)[:size]
        doc = yaml.load(data, Loader=yaml.CSafeLoader)
        return as_v1(doc) if isinstance(doc, dict) else {}

    def close(self) -> None:
        """Stop git."""
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


def as_v1(crd: Obj) -> Obj:
    """An ``apiextensions.k8s.io/v1beta1`` CRD as the API server serves it at v1: the
    CRD-wide ``validation`` schema and ``version`` moved into ``spec.versions``."""
    if crd.get("apiVersion") != "apiextensions.k8s.io/v1beta1":
        return crd
    spec = dict(crd.get("spec") or {})
    schema = (spec.pop("validation", None) or {}).get("openAPIV3Schema")
    versions = spec.get("versions") or [
        {"name": spec.get("version"), "served": True, "storage": True}]
    spec["versions"] = [{**v, "schema": v.get("schema") or {"openAPIV3Schema": schema or {}}}
                        for v in versions]
    spec.pop("version", None)
    return {**crd, "apiVersion": "apiextensions.k8s.io/v1", "spec": spec}


def conversion(repo: Path, tag: str) -> Obj | None:
    """The ``spec.conversion`` the tag's package build patches into every CRD.

    The upjet providers build their package with ``package/kustomize``: every CRD of
    ``package/crds`` gets ``webhook.yaml``'s conversion webhook, so the CRDs they ship
    convert between versions with the runtime's webhook, not ``None``.
    """
    try:
        text = git(repo, "show", f"{tag}:{KUSTOMIZE}")
    except subprocess.CalledProcessError:
        return None
    found = (yaml.safe_load(text) or {}).get("spec", {}).get("conversion")
    return found if isinstance(found, dict) else None


def patched(crd: Obj, conversion: Obj | None) -> Obj:
    """``crd`` with the package build's ``conversion``, if any."""
    if not conversion or not crd:
        return crd
    return {**crd, "spec": {**crd.get("spec", {}), "conversion": conversion}}


def pairs(repo: Path, tags: list[str], every: int
          ) -> Iterator[tuple[str, str, dict[str, Obj], dict[str, Obj]]]:
    """``(old tag, new tag, old CRDs, new CRDs)``: only the files that differ."""
    blobs = Blobs(repo)
    try:
        for old, new in zip(tags, tags[1:], strict=False):
            olds: dict[str, Obj] = {}
            news: dict[str, Obj] = {}
            patches = conversion(repo, old), conversion(repo, new)
            for status, path in changed(repo, old, new, every):
                if status != "A":
                    crd = patched(blobs.crd(f"{old}:{path}"), patches[0])
                    olds[name_of(crd)] = crd
                if status != "D":
                    crd = patched(blobs.crd(f"{new}:{path}"), patches[1])
                    news[name_of(crd)] = crd
            yield old, new, olds, news
    finally:
        blobs.close()


_STEP = re.compile(r'\.([^.\[]+)|\[\*\]|\[("(?:[^"\\]|\\.)*")\]')


def steps(path: str) -> tuple[str, ...]:
    """A change's path as schema steps: a property name, ``[*]`` (items) or ``*``
    (additionalProperties)."""
    out = []
    for m in _STEP.finditer(path):
        name = m.group(1) if m.group(1) is not None else json.loads(m.group(2)) \
            if m.group(2) else "[*]"
        out.append(name)
    return tuple(out)


def trim(node: Any, paths: set[tuple[str, ...]], at: tuple[str, ...] = ()) -> Any:
    """A schema cut to the nodes on ``paths``: their own keywords (descriptions dropped)
    and the children on the way to a path."""
    if not isinstance(node, dict):
        return node
    kept = {k: v for k, v in node.items() if k not in ("properties", "items",
                                                        "additionalProperties", "description")
            or (k in ("items", "additionalProperties") and not isinstance(v, dict))}
    near = [p for p in paths if p[:len(at)] == at and len(p) > len(at)]
    props = node.get("properties")
    if isinstance(props, dict):
        kept["properties"] = {k: trim(v, paths, (*at, k)) for k, v in props.items()
                              if any(p[len(at)] == k for p in near)}
    for key, step in (("items", "[*]"), ("additionalProperties", "*")):
        if isinstance(node.get(key), dict) and any(p[len(at)] == step for p in near):
            kept[key] = trim(node[key], paths, (*at, step))
    return kept


def trim_crd(crd: Obj, paths: set[tuple[str, ...]]) -> Obj:
    """The CRD with every version's schema cut to ``paths`` and no printer columns."""
    spec = {k: v for k, v in crd["spec"].items() if k in ("group", "names", "scope",
                                                           "conversion")}
    spec["versions"] = [{**{k: v for k, v in body.items() if k in ("name", "served",
                                                                  "storage")},
                         "schema": {"openAPIV3Schema": trim(schema_of(body), paths)}}
                        for body in versions_of(crd).values()]
    return {"apiVersion": crd["apiVersion"], "kind": crd["kind"],
            "metadata": {"name": name_of(crd)}, "spec": spec}


def found(changes: list[Change]) -> list[list[str]]:
    """Each change as ``[verdict, kind, version, path]``."""
    return [[verdict_of(c), c.kind, c.version, c.path] for c in changes]


class Sampler:
    """The first ``per_kind`` CRD pairs showing each verdict and kind, trimmed."""

    def __init__(self, per_kind: int, max_bytes: int = 20_000) -> None:
        self.per_kind, self.max_bytes = per_kind, max_bytes
        self.seen: Counter[str] = Counter()
        self.pairs: list[Obj] = []

    def offer(self, origin: Obj, old: Obj, new: Obj, changes: list[Change]) -> None:
        """Keep the pair if it shows a verdict and kind seen fewer than ``per_kind`` times
        and its trimmed CRDs find exactly the changes the whole ones did."""
        keys = {f"{verdict_of(c)}/{c.kind}" for c in changes}
        if not changes or all(self.seen[k] >= self.per_kind for k in keys):
            return
        paths = {steps(c.path) for c in changes}
        small = trim_crd(old, paths), trim_crd(new, paths)
        if found(changes_of(*small)) != found(changes) or \
                len(json.dumps(small)) > self.max_bytes:
            return
        self.seen.update(keys)
        self.pairs.append({**origin, "old": small[0], "new": small[1],
                           "changes": found(changes)})


def run_repo(repo: Path, last: int, every: int, per_kind: int
             ) -> tuple[Obj, Tally, list[Obj]]:
    """One repository's release pairs: its origin and counts, the tally, sampled pairs.

    ``every`` applies to repositories of more than :data:`BIG` CRDs at their last tag.
    """
    tags = releases(repo)
    tags = tags[-(last + 1):] if last else tags
    every = every if tags and crd_count(repo, tags[-1]) > BIG else 1
    tally, sampler, started = Tally(), Sampler(per_kind), time.monotonic()
    for old, new, olds, news in pairs(repo, tags, every):
        n = len(tally.examples)
        tally.add_pair(olds, news)
        for name in (n for n in sorted(news) if per_kind and n in olds and olds[n] != news[n]):
            sampler.offer({"repo": _origin(repo), "from": old, "to": new, "crd": name},
                          olds[name], news[name], changes_of(olds[name], news[name]))
        print(f"  {repo.parent.name} {old} -> {new}: {len(news)} changed CRD file(s)"
              + (" (new kinds seen)" if len(tally.examples) > n else ""), file=sys.stderr)
    origin = {"repo": _origin(repo), "tags": tags, "pairs": max(len(tags) - 1, 0),
              "commits": {t: git(repo, "rev-list", "-n1", t).strip() for t in tags},
              "every": every, "crds": tally.crds, "verdicts": dict(tally.verdicts),
              "seconds": round(time.monotonic() - started, 1)}
    return origin, tally, sampler.pairs


def crd_count(repo: Path, tag: str) -> int:
    """How many CRD files the tag has."""
    return len(git(repo, "ls-tree", "--name-only", f"{tag}:{CRDS}").split())


def _origin(repo: Path) -> str:
    # mirrors are stored as owner+name/repo; a clone names itself
    name = repo.parent.name if repo.name in ("repo", ".git") else repo.name
    return name.replace("+", "/")


def report(tally: Tally, repos: list[Obj]) -> str:
    """The report's text: pairs, counts per verdict, the top kinds of each verdict."""
    lines = [f"{tally.pairs} release pairs, {tally.crds} CRD changes compared "
             f"({tally.added} CRDs added, {tally.removed} removed)"]
    lines += [f"  {r['repo']}: {r['pairs']} pairs {r['tags'][0] if r['tags'] else ''}.."
              f"{r['tags'][-1] if r['tags'] else ''}"
              + (f", one CRD file in {r['every']}" if r["every"] > 1 else "")
              + f": {r['verdicts']}" for r in repos]
    for verdict in VERDICTS:
        lines.append(f"{verdict}: {tally.verdicts[verdict]}")
        lines += [f"  {n:6d} {kind}: {tally.examples[f'{verdict}/{kind}'][:160]}"
                  for kind, n in tally.top(verdict)]
    return "\n".join(lines)


def keep(per_kind: int, found: list[Obj]) -> list[Obj]:
    """The sampled pairs, at most ``per_kind`` a verdict and kind across repositories."""
    seen: Counter[str] = Counter()
    out = []
    for pair in found:
        keys = {f"{v}/{k}" for v, k, _, _ in pair["changes"]}
        if any(seen[k] < per_kind for k in keys):
            seen.update(keys)
            out.append(pair)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the report; exit 1 when a change is unclassified."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", type=Path, help="git directories")
    parser.add_argument("--last", type=int, default=0, help="last N pairs per repository")
    parser.add_argument("--every", type=int, default=1, help="one CRD file in K")
    parser.add_argument("--json", type=Path, help="write the counts and origins here")
    parser.add_argument("--sample", type=Path, help="write trimmed CRD pairs here")
    parser.add_argument("--per-kind", type=int, default=2, help="pairs kept per kind")
    parser.add_argument("--jobs", type=int, default=2, help="repositories run at once")
    args = parser.parse_args(argv)
    per_kind = args.per_kind if args.sample else 0
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            runs = list(pool.map(run_repo, args.repos, *zip(
                *[(args.last, args.every, per_kind)] * len(args.repos), strict=True)))
    else:
        runs = [run_repo(r, args.last, args.every, per_kind) for r in args.repos]
    tally = Tally()
    for _, part, _ in runs:
        tally.merge(part)
    repos = [origin for origin, _, _ in runs]
    print(report(tally, repos))
    if args.json:
        args.json.write_text(json.dumps({"repos": repos, **tally.to_dict()}, indent=1) + "\n")
    if args.sample:
        kept = keep(args.per_kind, [p for _, _, found in runs for p in found])
        args.sample.write_text(json.dumps({"source": SOURCE, "pairs": kept},
                                          indent=None, separators=(",", ":")) + "\n")
    return 1 if tally.verdicts["unclassified"] else 0


if __name__ == "__main__":
    sys.exit(main())
