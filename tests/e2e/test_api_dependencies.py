"""Dependencies on APIs (issue 23), end to end: a Configuration's ``lockwright.dev/requires-apis``.

Through the cluster only: packages applied and read back with the Kubernetes API, the
watcher signalling the workflows. The module runs on a stack of its own (the Lock is a
cluster-wide singleton), with the default activation policy ``*`` so a Provider's MRDs are
served as Crossplane v2 serves them, and ``LOCKWRIGHT_PACKAGE_INDEXES`` naming an index
this module pushes to the test registry.

- an API a Provider in the Lock serves: the Configuration depends on that Provider in the
  Lock, and is Healthy;
- an API nobody serves and no index lists: the Configuration waits, its Healthy condition
  naming the API and the index searched;
- through the index: the Provider serving the API is installed as the Configuration's
  dependency, pinned to the digest the signed index lists for the version serving it (in
  the Lock and on the package), even after its tag was pushed again.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockwright.identity.apis import ServedType
from lockwright.identity.names import REQUIRES_APIS
from lockwright.index.model import Entry, PackageIndex
from lockwright.index.push import push_index
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import parse
from tests.e2e.packages import crd
from tests.fixtures.stack import PKG_GROUP, Stack, running_stack
from tests.helpers import unique, wait_for

Obj = dict[str, Any]
META_API = "meta.pkg.crossplane.io/v1"
PKG = "pkg.crossplane.io/v1"
NS = f"apideps-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def apis_stack(registry: Any, auth_registry: Any, temporal_env: Any,
               cluster_kind: str) -> Iterator[Stack]:
    """A stack of its own: MRDs activated by default, one package index configured."""
    index = f"{registry.host}/{NS}/index:v1"
    publish(registry.host, index, PackageIndex())  # empty: the index test pushes its own
    env = {"LOCKWRIGHT_DEFAULT_ACTIVATIONS": "*", "LOCKWRIGHT_PACKAGE_INDEXES": index}
    with running_stack(registry, auth_registry, temporal_env, worker_env=env,
                       kind=cluster_kind) as s:
        yield s


# --- packages and the index ------------------------------------------------------------
def push(stack: Stack, kind: str, name: str, tag: str, annotations: dict[str, str] | None = None,
         group: str = "") -> str:
    """Build and push ``kind`` package ``name`` at ``tag`` to ``<registry>/<NS>/<name>``; a
    Provider ships one CRD, ``things.<group>``."""
    with tempfile.TemporaryDirectory(dir=stack.state) as tmp:
        root = Path(tmp)
        meta = {"apiVersion": META_API, "kind": kind,
                "metadata": {"name": name, "annotations": {"example.org/version": tag,
                                                           **(annotations or {})}},
                "spec": {}}
        (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
        if kind == "Provider":
            (root / "crds.yaml").write_text(yaml.safe_dump(crd(group, "Thing")))
        return stack.push(root, repo=f"{NS}/{name}", tag=tag)


def publish(host: str, ref: str, index: PackageIndex) -> None:
    """Push ``index`` to ``ref`` as ``lockwright index push`` does."""
    push_index(RegistryClient(insecure=[host]), ref, index.to_bytes())


def thing(group: str) -> ServedType:
    return ServedType(group, "Thing", "things", ("v1alpha1",))


# --- cluster reads ---------------------------------------------------------------------
def lock_entry(stack: Stack, revision: str) -> Obj:
    lock: Obj = stack.custom.get_cluster_custom_object(PKG_GROUP, "v1beta1", "locks", "lock")
    return next(e for e in lock.get("packages") or [] if e["name"] == revision)


def active_revision(stack: Stack, kind: str, name: str) -> Obj:
    [rev] = [r for r in stack.revisions(kind, name) if r["spec"]["desiredState"] == "Active"]
    return rev


def healthy_message(stack: Stack, kind: str, name: str, text: str, timeout: float = 90) -> str:
    """Wait until the package is Installed and not Healthy, ``text`` in the message."""
    return stack.wait_unhealthy_saying(kind, name, text, timeout)


def served(stack: Stack, group: str) -> None:
    """Wait until ``things.<group>`` answers kubectl."""
    wait_for(lambda: stack.kubectl("get", f"things.{group}", check=False).returncode == 0,
             timeout=90, interval=0.5, what=f"things.{group} served")


# --- the tests -------------------------------------------------------------------------
def test_an_api_a_provider_in_the_lock_serves_makes_it_a_dependency(apis_stack: Stack) -> None:
    s = apis_stack
    group = f"{unique('served')}.example.org"
    provider_ref = push(s, "Provider", unique("provider-served"), "v1.2.0", group=group)
    provider = unique("prov")
    s.apply_package("Provider", provider, provider_ref)
    s.wait_healthy("Provider", provider, timeout=120)
    served(s, group)
    config_ref = push(s, "Configuration", unique("config-served"), "v1.0.0",
                      {REQUIRES_APIS: f"Thing.{group}/v1alpha1"})
    config = unique("cfg")
    s.apply_package("Configuration", config, config_ref)
    s.wait_healthy("Configuration", config, timeout=120)
    rev = active_revision(s, "Configuration", config)
    assert lock_entry(s, rev["metadata"]["name"])["dependencies"] == [
        {"apiVersion": PKG, "kind": "Provider", "package": provider_ref.rsplit(":", 1)[0],
         "constraints": ">=v1.2.0"}]
    status = rev["status"]
    assert (status["foundDependencies"], status["installedDependencies"]) == (1, 1)


def test_an_api_nobody_serves_leaves_the_configuration_waiting_saying_why(
        apis_stack: Stack, registry: Any) -> None:
    s = apis_stack
    api = f"things.{unique('nowhere')}.example.org/v1alpha1"
    config_ref = push(s, "Configuration", unique("config-nowhere"), "v1.0.0",
                      {REQUIRES_APIS: api})
    config = unique("cfg")
    s.apply_package("Configuration", config, config_ref)
    searched = (f"no package in the package indexes serves API {api} (indexes searched: "
                f"{registry.host}/{NS}/index:v1)")
    healthy_message(s, "Configuration", config, "cannot resolve package dependencies: "
                    + searched)
    rev = active_revision(s, "Configuration", config)
    [health] = [x for x in rev["status"]["conditions"] if x["type"] == "RevisionHealthy"]
    assert health["message"] == "cannot resolve package dependencies: " + searched
    assert lock_entry(s, rev["metadata"]["name"])["dependencies"] == []
    described = s.kubectl("describe", "configuration", config).stdout
    assert api in described


def test_the_provider_an_index_lists_is_installed_as_a_dependency(
        apis_stack: Stack, registry: Any) -> None:
    s = apis_stack
    group = f"{unique('indexed')}.example.org"
    name = unique("provider-indexed")
    refs = [push(s, "Provider", name, tag, group=group) for tag in ("v0.9.0", "v1.0.0")]
    repo = refs[0].rsplit(":", 1)[0]
    client = RegistryClient(insecure=[registry.host])
    digests = [client.resolve(parse(ref)) for ref in refs]
    publish(registry.host, f"{registry.host}/{NS}/index:v1", PackageIndex((
        Entry(repo, "v0.9.0", digests[0], "Provider"),
        Entry(repo, "v1.0.0", digests[1], "Provider", types=(thing(group),)))))
    # v1.0.0 pushed again after the index: the index vouches for the first push only.
    push(s, "Provider", name, "v1.0.0", {"example.org/pushed": "again"}, group=group)
    assert client.resolve(parse(refs[1])) != digests[1]
    config_ref = push(s, "Configuration", unique("config-indexed"), "v1.0.0",
                      {REQUIRES_APIS: f"things.{group}/v1alpha1"})
    config = unique("cfg")
    s.apply_package("Configuration", config, config_ref)
    s.wait_healthy("Configuration", config, timeout=180)
    rev = active_revision(s, "Configuration", config)
    assert lock_entry(s, rev["metadata"]["name"])["dependencies"] == [
        {"apiVersion": PKG, "kind": "Provider", "package": repo, "constraints": digests[1]}]
    installed = [p for p in s.custom.list_cluster_custom_object(
        PKG_GROUP, "v1", "providers")["items"] if p["spec"]["package"].startswith(repo)]
    assert [p["spec"]["package"] for p in installed] == [f"{repo}@{digests[1]}"]
    s.wait_healthy("Provider", installed[0]["metadata"]["name"])
    provider = active_revision(s, "Provider", installed[0]["metadata"]["name"])
    assert lock_entry(s, provider["metadata"]["name"])["version"] == digests[1]
    served(s, group)
