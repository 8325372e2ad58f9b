"""One fault: the work of issue 29 in flight, one component SIGKILLed and restarted on its
data, then everything checked. Shared by tests/e2e/test_faults.py (one kill of each) and
benchmarks/faults.py (N kills of each).

The work: 5 Configurations each depending on a Provider not yet installed (installs with
dependencies), 5 Providers v1 Healthy patched to v2 at once (health-gated switch-overs), and
one Provider whose v2 drops a field a resource uses (the Evidence gate holds it) that is
accepted once held. The stack runs Tuning's defaults (production timings).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.e2e.packages import crd
from tests.faults.runtimes import NS, PROVIDER_LABEL
from tests.fixtures.stack import PKG_GROUP, PLURALS, Stack
from tests.helpers import unique, wait_for

Obj = dict[str, Any]
META_API = "meta.pkg.crossplane.io/v1"
IMAGE = "registry.example.org/example/provider-faults:{tag}"
#: Every component a fault kills; the last two exist only on the real control plane.
COMPONENTS = ("worker", "watcher", "temporal-server", "postgres", "kube-apiserver", "etcd")
KUBE_ONLY = ("kube-apiserver", "etcd")
SIZE = 5
#: How long the work may take to converge after the component is back (the issue's target
#: is 60 s; the deadline leaves room to measure a miss instead of only failing).
CONVERGE_DEADLINE_S = 180.0
TARGET_S = 60.0


def components_for(kind: str) -> tuple[str, ...]:
    """The components a stack on ``kind`` (devcluster or kube) can have killed."""
    return COMPONENTS if kind == "kube" else COMPONENTS[:4]


# --- packages ---------------------------------------------------------------------------
def _push(stack: Stack, tmp: Path, repo: str, tag: str, kind: str = "Provider",
          crds: list[Obj] | None = None, depends_on: list[Obj] | None = None) -> str:
    root = tmp / unique(tag)
    root.mkdir(parents=True)
    spec: Obj = {"controller": {"image": IMAGE.format(tag=tag)}} if kind == "Provider" else {}
    spec |= {"dependsOn": depends_on} if depends_on else {}
    meta = {"apiVersion": META_API, "kind": kind,
            "metadata": {"name": repo.rsplit("/", 1)[-1],
                         "annotations": {"example.org/version": tag}}, "spec": spec}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    if crds:
        (root / "crds.yaml").write_text(yaml.safe_dump_all(crds))
    return stack.push(root, repo=repo, tag=tag)


def _widgets(group: str, props: Obj) -> Obj:
    return crd(group, "Widget", version="v1", schema={
        "type": "object", "properties": {"spec": {"type": "object", "properties": props}}})


SIZE_F, COLOR_F = {"size": {"type": "integer"}}, {"color": {"type": "string"}}


@dataclass
class Work:
    """The packages of one fault's work, prepared (pushed, v1s Healthy) before the kill."""

    stack: Stack
    ns: str = field(default_factory=lambda: unique("fault"))
    switch: dict[str, str] = field(default_factory=dict)  # Provider name -> v2 reference
    v1: dict[str, str] = field(default_factory=dict)  # Provider name -> v1 revision
    configs: dict[str, str] = field(default_factory=dict)  # Configuration -> reference
    dependency_repos: list[str] = field(default_factory=list)
    gated: str = ""
    gated_v2: str = ""
    accepted: bool = False

    def prepare(self, tmp: Path) -> None:
        """Push everything; install the 5 switch-over Providers and the gated one at v1."""
        s = self.stack
        for i in range(SIZE):
            repo = f"{self.ns}/prov-{i}"
            group = f"g{i}.{self.ns}.example.org"
            v1 = _push(s, tmp, repo, "v1.0.0", crds=[crd(group, "Gadget")])
            self.switch[f"{self.ns}-up-{i}"] = _push(s, tmp, repo, "v2.0.0",
                                                     crds=[crd(group, "Gadget")])
            s.apply_package("Provider", f"{self.ns}-up-{i}", v1)
            dep_repo = f"{self.ns}/dep-{i}"
            _push(s, tmp, dep_repo, "v1.0.0", crds=[crd(f"d{i}.{self.ns}.example.org", "Thing")])
            self.dependency_repos.append(f"{s.registry_host}/{dep_repo}")
            self.configs[f"{self.ns}-cfg-{i}"] = _push(
                s, tmp, f"{self.ns}/cfg-{i}", "v1.0.0", kind="Configuration", depends_on=[
                    {"apiVersion": f"{PKG_GROUP}/v1", "kind": "Provider",
                     "package": f"{s.registry_host}/{dep_repo}", "version": ">=v1.0.0"}])
        self._prepare_gated(tmp)
        for name in self.switch:
            s.wait_healthy("Provider", name, timeout=120)
            self.v1[name] = self.active(name)
        s.wait_healthy("Provider", self.gated, timeout=120)

    def _prepare_gated(self, tmp: Path) -> None:
        s, group, repo = self.stack, f"w.{self.ns}.example.org", f"{self.ns}/gated"
        self.gated = f"{self.ns}-gated"
        s.apply_package("Provider", self.gated, _push(
            s, tmp, repo, "v1.0.0", crds=[_widgets(group, {**SIZE_F, **COLOR_F})]))
        self.gated_v2 = _push(s, tmp, repo, "v2.0.0", crds=[_widgets(group, SIZE_F)])
        s.wait_healthy("Provider", self.gated, timeout=120)
        s.custom.create_cluster_custom_object(group, "v1", "widgets", {
            "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "painted"},
            "spec": {"color": "red"}})

    @property
    def running(self) -> list[str]:
        """The Providers running before the kill (their runtimes are watched)."""
        return [*self.switch, self.gated]

    def apply(self) -> None:
        """All the work at once: the installs, the switch-overs, the gated upgrade."""
        s = self.stack
        for name, ref in self.configs.items():
            s.apply_package("Configuration", name, ref)
        for name, ref in [*self.switch.items(), (self.gated, self.gated_v2)]:
            s.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name,
                                                 {"spec": {"package": ref}})

    def in_flight(self) -> bool:
        """A switch-over has a new revision and not every one is done: mid-change."""
        counts = [len(self.stack.revisions("Provider", n)) for n in self.switch]
        return any(c >= 2 for c in counts) and not self.switched_all()

    def active(self, name: str, kind: str = "Provider") -> str:
        revs = [r["metadata"]["name"] for r in self.stack.revisions(kind, name)
                if r["spec"]["desiredState"] == "Active"]
        return revs[0] if len(revs) == 1 else ""

    # --- convergence ------------------------------------------------------------------
    def switched(self, name: str) -> bool:
        """v2 Active and Healthy, v1 Inactive, and only v2's runtime left."""
        active = self.active(name)
        deps = [d.metadata.name for d in _deployments(self.stack)
                if (d.spec.selector.match_labels or {}).get(PROVIDER_LABEL) == name]
        return bool(active and active != self.v1[name] and deps == [active]
                    and _healthy(self.stack, "Provider", name))

    def switched_all(self) -> bool:
        return all(self.switched(n) for n in self.switch)

    def installed_all(self) -> bool:
        s = self.stack
        deps = [n for n in _packages(s, "Provider")
                if any(p.startswith(r + ":") or p.startswith(r + "@")
                       for r in self.dependency_repos for p in [n[1]])]
        return (len(deps) == SIZE and all(_healthy(s, "Provider", n) for n, _ in deps)
                and all(_healthy(s, "Configuration", c) for c in self.configs))

    def gated_held(self) -> str:
        """The held v2 revision once the gate holds it (empty until then)."""
        installed = self.stack.conditions("Provider", self.gated).get("Installed", {})
        pkg = self.stack.get_package("Provider", self.gated) or {}
        current = str((pkg.get("status") or {}).get("currentRevision") or "")
        held = installed.get("status") == "False" and "the upgrade plan breaks" in str(
            installed.get("message", ""))
        return current if held else ""

    def accept_when_held(self) -> bool:
        """Accept the gated upgrade once held (True once accepted or already switched)."""
        if self.accepted:
            return True
        v2 = self.gated_held()
        if v2:
            self.stack.custom.patch_cluster_custom_object(
                PKG_GROUP, "v1", "providers", self.gated,
                {"metadata": {"annotations": {"lockwright.io/accept-plan": v2}}})
            self.accepted = True
        return self.accepted

    def gated_done(self) -> bool:
        active = self.active(self.gated)
        return bool(self.accepted and active and active == _revision(self.stack, self.gated, self.gated_v2)
                    and _healthy(self.stack, "Provider", self.gated))

    def progress(self) -> str:
        """What is done and what is not (for a convergence timeout's message)."""
        s = self.stack
        return (f"not switched {[n for n in self.switch if not self.switched(n)]}; "
                f"configurations {[(c, s.conditions('Configuration', c)) for c in self.configs]}"
                f"; gated held {self.gated_held()!r} accepted {self.accepted} done "
                f"{self.gated_done()} conditions {s.conditions('Provider', self.gated)}; "
                f"revisions {[r['metadata']['name'] for r in s.revisions('Provider', self.gated)]}")

    def converged(self) -> bool:
        """Everything done (accepting the gated upgrade on the way)."""
        try:
            self.accept_when_held()
            return self.switched_all() and self.installed_all() and self.gated_done()
        except Exception:  # noqa: BLE001 - the API server may still be coming back
            return False


def _revision(stack: Stack, package: str, ref: str) -> str:
    """The Provider ``package``'s revision name for ``ref`` at its generation now."""
    from lockwright import names
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.reference import parse

    host = ref.split("/", 1)[0]
    digest = RegistryClient(insecure=[host]).resolve(parse(ref))
    pkg = stack.get_package("Provider", package) or {}
    return names.revision_name(package, digest, int(pkg["metadata"]["generation"]))


def _deployments(stack: Stack) -> list[Any]:
    return list(client.AppsV1Api(stack.api).list_namespaced_deployment(NS).items)


def _packages(stack: Stack, kind: str) -> list[tuple[str, str]]:
    items = stack.custom.list_cluster_custom_object(PKG_GROUP, "v1", PLURALS[kind])["items"]
    return [(p["metadata"]["name"], p["spec"]["package"]) for p in items]


def _healthy(stack: Stack, kind: str, name: str) -> bool:
    conds = stack.conditions(kind, name)
    return all(conds.get(t, {}).get("status") == "True" for t in ("Installed", "Healthy"))


def clean_up(stack: Stack, ns: str, timeout: float = 180) -> None:
    """Delete the packages of the work ``ns`` (the resolver's dependencies included) and
    wait until they are gone, so every kill of a benchmark starts from the same stack:
    left in place, each kill's sixteen packages made every later watcher start-up signal
    more of them, and a kill's convergence measured the stack's age. The gated
    Provider's Widget goes first (deletion protection refuses the Provider until its
    usage is gone), and a refused or re-created package is deleted again."""
    with contextlib.suppress(client.ApiException):
        stack.custom.delete_cluster_custom_object(f"w.{ns}.example.org", "v1", "widgets",
                                                  "painted")

    def gone() -> bool:
        left = [(kind, name) for kind in ("Configuration", "Provider")
                for name, _ in _packages(stack, kind) if name.startswith(f"{ns}-")]
        for kind, name in left:
            with contextlib.suppress(client.ApiException):  # refused until unused; 404
                stack.custom.delete_cluster_custom_object(PKG_GROUP, "v1", PLURALS[kind], name)
        return not left

    wait_for(gone, timeout=timeout, interval=1.0, what=f"the packages of {ns} deleted")
