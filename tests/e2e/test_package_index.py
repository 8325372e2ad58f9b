"""The package index end to end (issue 23): build, push, sign, search, install by API.

Providers are pushed to the test registry in several versions; ``lockwright index build``
reads them (skipping the signature tags beside them), ``index push`` publishes the index
and ``xpkg sign`` signs it; the CLI reads it through ``LOCKWRIGHT_PACKAGE_INDEXES`` under an
ImageConfig that requires the signature. Installs go through the package object, the
watcher and the worker, as any install.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.packages import crd
from tests.e2e.test_failures import crd_exists, provider_dir
from tests.e2e.test_verification import (
    Keys,
    copy_signature,
    digest_of,
    image_config,
    key_authority,
    key_secret,
    sign,
    verifying,  # noqa: F401 - the fixture
)
from tests.fixtures.stack import ROOT, Stack
from tests.helpers import unique, wait_for

VERSION = "v1alpha1"


def lockwright(stack: Stack, *args: str, indexes: str = "",
               timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``python -m lockwright ARGS`` with the stack's settings and ``indexes``."""
    env = {**stack.env, "LOCKWRIGHT_PACKAGE_INDEXES": indexes, "COSIGN_PASSWORD": ""}
    return subprocess.run([sys.executable, "-m", "lockwright", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


def push_provider(stack: Stack, tmp: Path, repo: str, tag: str, group: str, kind: str,
                  shared: str) -> str:
    """A Provider serving ``<kind>s.<group>`` and ``gizmos.<shared>``, pushed at ``tag``."""
    extra = [crd(group, kind), crd(shared, "Gizmo")]
    return stack.push(provider_dir(tmp / unique(tag), unique("g") + ".index.example.org",
                                   extra=extra), repo=repo, tag=tag)


@dataclass
class Published:
    """Three providers in several versions, indexed, pushed and signed."""

    keys: Keys
    repos: dict[str, str]  # letter -> repository (registry/path)
    groups: dict[str, str]  # letter -> the group only it serves
    shared: str  # the group A and B both serve (gizmos)
    index: str  # the index reference
    build: subprocess.CompletedProcess[str]


VERSIONS = {"a": ("v1.0.0", "v1.1.0", "v1.2.0"), "b": ("v0.9.0", "v1.0.0"),
            "c": ("v2.0.0", "v2.1.0")}


def publish(stack: Stack, tmp: Path, keys: Keys, sign_index: bool = True) -> Published:
    shared = f"{unique('shared')}.index.example.org"
    repos = {k: unique(f"index-{k}") for k in VERSIONS}
    groups = {k: f"{unique(k)}.index.example.org" for k in VERSIONS}
    for letter, tags in VERSIONS.items():
        for tag in tags:
            ref = push_provider(stack, tmp, repos[letter], tag, groups[letter], "Widget",
                                shared if letter != "c" else groups["c"])
    sign(stack, keys, ref)  # a signature tag beside c's last version: build skips it
    full = {k: f"{stack.registry_host}/{r}" for k, r in repos.items()}
    out = tmp / f"{unique('index')}.json"
    build = lockwright(stack, "index", "build", *full.values(), "-o", str(out),
                       "--insecure-registry", stack.registry_host)
    assert build.returncode == 0, output(build)
    index = f"{stack.registry_host}/{unique('indexes')}/index:v1"
    pushed = lockwright(stack, "index", "push", str(out), index,
                        "--insecure-registry", stack.registry_host)
    assert pushed.returncode == 0, output(pushed)
    if sign_index:
        sign(stack, keys, index)
    return Published(keys, full, groups, shared, index, build)


def require_signature(stack: Stack, made: list[str], published: Published) -> str:
    """An ImageConfig requiring the index's signature by ``published.keys``."""
    prefix = published.index.rpartition(":")[0]
    return image_config(stack, made, prefix,
                        key_authority("index-key", key_secret(stack, published.keys)))


def test_build_skips_signatures_and_lists_every_version_with_its_types(
        stack: Stack, tmp_path: Path, verifying: list[str]) -> None:  # noqa: F811
    published = publish(stack, tmp_path, Keys(tmp_path))
    assert "skipped, a signature, attestation or referrers tag" in published.build.stderr
    assert "wrote" in published.build.stdout and "7 package versions of 3" in \
        published.build.stdout, output(published.build)
    require_signature(stack, verifying, published)
    found = lockwright(stack, "search", "--api", f"widgets.{published.groups['a']}/{VERSION}",
                       "-o", "json", indexes=published.index)
    assert found.returncode == 0, output(found)
    rows = json.loads(found.stdout)
    assert [(r["repository"], r["latest"], r["kind"], r["index"]) for r in rows] == [
        (published.repos["a"], "v1.2.0", "Provider", published.index)]
    assert rows[0]["types"] == [f"widgets.{published.groups['a']}/{VERSION}"]
    text = lockwright(stack, "search", "gizmo", indexes=published.index)
    assert text.returncode == 0, output(text)
    assert text.stdout.splitlines()[0].split() == ["REPOSITORY", "LATEST", "KIND", "TYPES",
                                                   "INDEX"]
    listed = {line.split()[0]: line.split()[1] for line in text.stdout.splitlines()[1:]}
    # every provider ships a Gizmo: a and b in the shared group, c in its own
    assert listed == {published.repos["a"]: "v1.2.0", published.repos["b"]: "v1.0.0",
                      published.repos["c"]: "v2.1.0"}


def test_install_by_api_picks_the_highest_version_and_ends_healthy(
        stack: Stack, tmp_path: Path, verifying: list[str]) -> None:  # noqa: F811
    published = publish(stack, tmp_path, Keys(tmp_path))
    require_signature(stack, verifying, published)
    api = f"Widget.{published.groups['c']}/{VERSION}"
    name = unique("by-api")
    done = lockwright(stack, "install", "--api", api, "--name", name, "--wait",
                      "--timeout", "120s", indexes=published.index)
    assert done.returncode == 0, output(done)
    listed = digest_of(stack, f"{published.repos['c']}:v2.1.0")
    assert f"{published.repos['c']}:v2.1.0" in done.stdout, output(done)
    assert f"digest {listed}" in done.stdout, output(done)
    stack.wait_healthy("Provider", name)
    pkg = stack.get_package("Provider", name) or {}
    # The version the index lists, fetched by the digest it lists.
    assert pkg["spec"]["package"] == f"{published.repos['c']}:v2.1.0@{listed}"
    assert pkg["metadata"]["annotations"] == {
        "lockwright.dev/installed-for-api": api,
        "lockwright.dev/installed-from-index": published.index}
    assert crd_exists(stack, f"widgets.{published.groups['c']}") is not None
    again = lockwright(stack, "install", "--api", api, indexes=published.index)
    assert again.returncode == 0, output(again)
    assert f"already served by widgets.{published.groups['c']} (provider/{name})" in \
        again.stdout, output(again)
    stack.kubectl("delete", "providers.pkg.crossplane.io", name, "--wait=false")


def test_ambiguous_and_unknown_apis_exit_1_naming_candidates_or_indexes(
        stack: Stack, tmp_path: Path, verifying: list[str]) -> None:  # noqa: F811
    published = publish(stack, tmp_path, Keys(tmp_path))
    require_signature(stack, verifying, published)
    ambiguous = lockwright(stack, "install", "--api", f"gizmos.{published.shared}/{VERSION}",
                           indexes=published.index)
    assert ambiguous.returncode == 1, output(ambiguous)
    assert "is served by 2 repositories" in ambiguous.stderr, output(ambiguous)
    assert published.repos["a"] in ambiguous.stderr and published.repos["b"] in \
        ambiguous.stderr and "--repository" in ambiguous.stderr
    unknown_api = f"nothings.{unique('none')}.index.example.org/{VERSION}"
    unknown = lockwright(stack, "install", "--api", unknown_api, indexes=published.index)
    assert unknown.returncode == 1, output(unknown)
    assert f"no package serves API {unknown_api}" in unknown.stderr, output(unknown)
    assert published.index in unknown.stderr
    assert stack.kubectl("get", "providers.pkg.crossplane.io", "-o", "name").stdout.count(
        "index-") == 0


def test_a_tag_pushed_again_after_the_index_was_signed_is_refused(
        stack: Stack, tmp_path: Path, verifying: list[str]) -> None:  # noqa: F811
    published = publish(stack, tmp_path, Keys(tmp_path))
    require_signature(stack, verifying, published)
    repo = published.repos["c"]
    listed = digest_of(stack, f"{repo}:v2.1.0")
    # The same tag pushed again with other content, after the index was built and signed.
    push_provider(stack, tmp_path, repo.split("/", 1)[1], "v2.1.0", published.groups["c"],
                  "Sprocket", published.groups["c"])
    current = digest_of(stack, f"{repo}:v2.1.0")
    assert current != listed
    api = f"Widget.{published.groups['c']}/{VERSION}"
    found = lockwright(stack, "search", "--api", api, indexes=published.index)
    assert found.returncode == 0, output(found)
    [warning] = [x for x in found.stdout.splitlines() if x.startswith("warning: ")]
    assert f"{repo}:v2.1.0 now points to {current}, but the index {published.index} lists " \
        f"{listed}" in warning, output(found)
    data = json.loads(lockwright(stack, "search", "--api", api, "-o", "json",
                                 indexes=published.index).stdout)
    assert [(r["digest"], r["tagDigest"]) for r in data] == [(listed, current)]
    name = unique("moved")
    refused = lockwright(stack, "install", "--api", api, "--name", name,
                         indexes=published.index)
    assert refused.returncode == 1, output(refused)
    assert f"error: refusing to install API {api}: {repo}:v2.1.0 now points to {current}, " \
        f"but the index {published.index} lists {listed}" in refused.stderr, output(refused)
    assert "lockwright index build" in refused.stderr and f"{repo}@{listed}" in \
        refused.stderr, output(refused)
    assert stack.get_package("Provider", name) is None


@pytest.mark.parametrize("case", ["unsigned", "re-pushed", "another index's signature"])
def test_an_index_failing_verification_is_refused(
        stack: Stack, tmp_path: Path, verifying: list[str], case: str) -> None:  # noqa: F811
    keys = Keys(tmp_path)
    published = publish(stack, tmp_path, keys, sign_index=case == "re-pushed")
    config = require_signature(stack, verifying, published)
    if case == "re-pushed":  # another document under the signed tag
        other = tmp_path / "other.json"
        other.write_bytes(b'{"apiVersion": "index.lockwright.dev/v1alpha1", '
                          b'"kind": "PackageIndex", "packages": []}')
        again = lockwright(stack, "index", "push", str(other), published.index,
                           "--insecure-registry", stack.registry_host)
        assert again.returncode == 0, output(again)
    if case == "another index's signature":
        signed = published.index.replace(":v1", ":signed")
        other = tmp_path / "empty.json"
        other.write_bytes(b'{"apiVersion": "index.lockwright.dev/v1alpha1", '
                          b'"kind": "PackageIndex", "packages": []}')
        copied = lockwright(stack, "index", "push", str(other), signed,
                            "--insecure-registry", stack.registry_host)
        assert copied.returncode == 0, output(copied)
        sign(stack, keys, signed)
        repo = published.index.split("/", 1)[1].rpartition(":")[0]
        copy_signature(stack, repo, digest_of(stack, signed), digest_of(stack, published.index))
    found = lockwright(stack, "search", "widget", indexes=published.index)
    assert found.returncode == 1, output(found)
    digest = digest_of(stack, published.index)
    assert f"package index {published.index}@{digest} refused: ImageConfig \"{config}\" " \
           "requires a valid signature: signature verification failed: authority " \
           "\"index-key\"" in found.stderr, output(found)
    assert found.stdout == ""


def test_install_by_api_served_by_an_inactive_mrd_activates_it(
        stack: Stack, tmp_path: Path) -> None:
    from tests.e2e.test_mrd_activation import (
        AWAITING,
        active_revision,
        crds_of,
        names,
        provider,
        states,
    )

    group, name = f"{unique('byapi')}.activation.example.org", unique("safe")
    ref = provider(stack, tmp_path, group, 3, capabilities=["SafeStart"])
    stack.apply_package("Provider", name, ref)
    stack.wait_conditions("Provider", name, {"Installed": ("True", "ActivePackageRevision"),
                                             "Healthy": ("True", AWAITING)}, timeout=120)
    assert states(stack, group)[f"thing01s.{group}"] == "Inactive"
    done = lockwright(stack, "install", "--api", f"Thing01.{group}/{VERSION}")  # no index
    assert done.returncode == 0, output(done)
    assert done.stdout.strip() == (
        f"API Thing01.{group}/{VERSION} is served by the Inactive ManagedResourceDefinition "
        f"thing01s.{group} (provider/{name}): made it Active"), output(done)
    assert states(stack, group) == {f"thing00s.{group}": "Inactive",
                                    f"thing01s.{group}": "Active",
                                    f"thing02s.{group}": "Inactive"}
    wait_for(lambda: names(group, 1) <= crds_of(stack, group), timeout=90,
             what="the activated MRD's CRD")
    stack.wait_healthy("Provider", name, timeout=120)
    assert active_revision(stack, name)["metadata"]["name"]
    again = lockwright(stack, "install", "--api", f"thing01s.{group}/{VERSION}")
    assert again.returncode == 0, output(again)
    assert f"is already served by thing01s.{group} (provider/{name})" in again.stdout
    stack.kubectl("delete", "providers.pkg.crossplane.io", name, "--wait=false")
