"""The ``trace`` tree and the ``install --wait`` verdict from plain objects (commands.tree,
commands.progress, commands.approve).

Matrix for the tree: a Configuration whose dependency is a Provider with a runtime, drawn
as ``crossplane beta trace`` draws it (plain and wide, and as JSON); the condition each row
shows; a dependency nothing provides yet; a dependency cycle; a package that is not there.
For the wait: when it ends (healthy, inactive under Manual, failed for good, gone) and what
it says; the plain progress lines; the approval Event ``activate`` prints.
"""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.commands import rows
from lockwright.commands.approve import approval, current_revision
from lockwright.commands.common import PackageRef
from lockwright.commands.follow import Install
from lockwright.commands.progress import (
    PlainView,
    condition_message,
    conditions_line,
    plain_line,
    verdict,
)
from lockwright.commands.timeline import LOCAL, OK, Step, Timeline
from lockwright.commands.tree import Snapshot, as_json, build, package_row, render, revision_row

Obj = dict[str, Any]
REG = "registry.example.org/acme"


def cond(type_: str, status: str, reason: str, message: str = "") -> Obj:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def healthy_package(kind: str, name: str, ref: str, current: str = "") -> Obj:
    return {"kind": kind, "metadata": {"name": name}, "spec": {"package": ref},
            "status": {"currentRevision": current, "conditions": [
                cond("Installed", "True", "ActivePackageRevision"),
                cond("Healthy", "True", "HealthyPackageRevision")]}}


def revision(kind: str, package: str, name: str, image: str, state: str = "Active",
             number: int = 1, runtime: bool = False) -> Obj:
    conds = [cond("RevisionHealthy", "True", "HealthyPackageRevision")]
    conds += [cond("RuntimeHealthy", "True", "HealthyPackageRevision")] if runtime else []
    return {"kind": f"{kind}Revision",
            "metadata": {"name": name, "uid": f"uid-{name}",
                         "labels": {"pkg.crossplane.io/package": package}},
            "spec": {"image": image, "desiredState": state, "revision": number},
            "status": {"conditions": conds}}


def deployment(name: str, owner: str, available: bool = True) -> Obj:
    status = "True" if available else "False"
    return {"kind": "Deployment",
            "metadata": {"name": name, "namespace": "crossplane-system",
                         "ownerReferences": [{"uid": f"uid-{owner}"}]},
            "status": {"conditions": [{"type": "Available", "status": status,
                                       "message": "" if available else "no pods"}]}}


def entry(name: str, kind: str, source: str, version: str, deps: list[Obj]) -> Obj:
    return {"name": name, "type": kind, "source": source, "version": version,
            "dependencies": deps}


def requires(kind: str, package: str, constraint: str) -> Obj:
    return {"apiVersion": "pkg.crossplane.io/v1", "kind": kind, "package": package,
            "constraints": constraint}


def platform() -> Snapshot:
    """Configuration ``platform`` (v1.0.0, an older revision too) needing provider-x."""
    return Snapshot(
        packages=[healthy_package("Configuration", "platform", f"{REG}/platform:v1.0.0"),
                  healthy_package("Provider", "acme-provider-x", f"{REG}/provider-x:v2.1.0")],
        revisions=[revision("Configuration", "platform", "platform-000000000001",
                            f"{REG}/platform:v0.9.0", "Inactive", 1),
                   revision("Configuration", "platform", "platform-0123456789ab",
                            f"{REG}/platform:v1.0.0", "Active", 2),
                   revision("Provider", "acme-provider-x", "acme-provider-x-ba9876543210",
                            f"{REG}/provider-x:v2.1.0", runtime=True)],
        lock={"packages": [
            entry("platform-0123456789ab", "Configuration", f"{REG}/platform", "v1.0.0",
                  [requires("Provider", f"{REG}/provider-x", ">=v2.0.0")]),
            entry("acme-provider-x-ba9876543210", "Provider", f"{REG}/provider-x", "v2.1.0",
                  [])]},
        deployments=[deployment("acme-provider-x-ba9876543210", "acme-provider-x-ba9876543210"),
                     deployment("someone-else", "other")])


def test_trace_of_a_configuration_with_a_dependency() -> None:
    root = build(platform(), "Configuration", "platform")
    assert root is not None
    assert render(root).splitlines() == [
        ("NAME                                                                   VERSION   "
        "INSTALLED   HEALTHY   STATE      STATUS"),
        ("Configuration/platform                                                 v1.0.0    "
        "True        True      -          HealthyPackageRevision"),
        ("├─ ConfigurationRevision/platform-0123456789ab                         v1.0.0    "
        "-           True      Active     HealthyPackageRevision"),
        ("├─ ConfigurationRevision/platform-000000000001                         v0.9.0    "
        "-           True      Inactive   HealthyPackageRevision"),
        ("└─ Provider/acme-provider-x                                            v2.1.0    "
        "True        True      -          HealthyPackageRevision"),
        ("   └─ ProviderRevision/acme-provider-x-ba9876543210                    v2.1.0    "
        "-           True      Active     HealthyPackageRevision"),
        ("      └─ Deployment/acme-provider-x-ba9876543210 (crossplane-system)             "
        "-           True      -          Available")]


def test_wide_adds_the_package_and_keeps_messages_whole() -> None:
    snapshot = platform()
    long = "cannot resolve package dependencies: " + "x" * 80
    snapshot.revisions[1]["status"]["conditions"] = [
        cond("RevisionHealthy", "False", "UnhealthyPackageRevision", long)]
    root = build(snapshot, "Configuration", "platform")
    assert root is not None
    narrow, wide = render(root).splitlines(), render(root, wide=True).splitlines()
    assert narrow[2].endswith("UnhealthyPackageRevision: ..." + long[-64:])
    assert wide[0].split() == ["NAME", "PACKAGE", "VERSION", "INSTALLED", "HEALTHY", "STATE",
                               "STATUS"]
    assert f"{REG}/platform " in wide[1] and wide[2].endswith(long)


def test_json_is_the_tree() -> None:
    root = build(platform(), "Configuration", "platform")
    assert root is not None
    data = as_json(root)
    assert (data["kind"], data["name"], data["version"], data["package"]) == (
        "Configuration", "platform", "v1.0.0", f"{REG}/platform")
    provider = data["children"][2]
    runtime = provider["children"][0]["children"][0]
    assert (runtime["kind"], runtime["namespace"], runtime["healthy"]) == (
        "Deployment", "crossplane-system", "True")


def test_a_missing_dependency_says_so() -> None:
    snapshot = platform()
    del snapshot.packages[1]
    snapshot.lock["packages"].pop()
    root = build(snapshot, "Configuration", "platform")
    assert root is not None
    missing = root.children[-1]
    assert (missing.kind, missing.name, missing.version, missing.installed, missing.status) == (
        "Provider", f"{REG}/provider-x", ">=v2.0.0", "False", "MissingDependency")
    assert missing.message == f"no Provider of {REG}/provider-x is installed (wants >=v2.0.0)"


def test_a_cycle_is_drawn_once() -> None:
    """a needs b needs a: the second a is a row of its own, not expanded again."""
    snapshot = Snapshot(
        packages=[healthy_package("Configuration", "a", f"{REG}/a:v1"),
                  healthy_package("Configuration", "b", f"{REG}/b:v1")],
        revisions=[revision("Configuration", "a", "a-1", f"{REG}/a:v1"),
                   revision("Configuration", "b", "b-1", f"{REG}/b:v1")],
        lock={"packages": [
            entry("a-1", "Configuration", f"{REG}/a", "v1", [requires("Configuration",
                                                                      f"{REG}/b", ">=v1")]),
            entry("b-1", "Configuration", f"{REG}/b", "v1", [requires("Configuration",
                                                                      f"{REG}/a", ">=v1")])]})
    root = build(snapshot, "Configuration", "a")
    assert root is not None
    lines = render(root).splitlines()
    names = [line[:lines[0].index("VERSION")].rstrip() for line in lines[1:]]
    assert names == ["Configuration/a", "├─ ConfigurationRevision/a-1", "└─ Configuration/b",
                     "   ├─ ConfigurationRevision/b-1", "   └─ Configuration/a"]


def test_no_such_package() -> None:
    assert build(platform(), "Provider", "platform") is None


@pytest.mark.parametrize("installed, healthy, status, message", [
    (("True", "ActivePackageRevision", ""), ("True", "HealthyPackageRevision", ""),
     "HealthyPackageRevision", ""),
    (("False", "UnpackingPackage", "cannot unpack"), ("False", "UnhealthyPackageRevision",
                                                      "cannot unpack"),
     "UnpackingPackage", "cannot unpack"),
    (("True", "ActivePackageRevision", ""), ("False", "UnhealthyPackageRevision", "no pods"),
     "UnhealthyPackageRevision", "no pods"),
    (("Unknown", "", ""), ("Unknown", "", ""), "", ""),
])
def test_package_row_shows_the_condition_crossplane_would(
        installed: tuple[str, str, str], healthy: tuple[str, str, str], status: str,
        message: str) -> None:
    pkg = {"kind": "Provider", "metadata": {"name": "p"}, "spec": {"package": f"{REG}/p@sha256:"
                                                                   + "ab" * 32},
           "status": {"conditions": [cond("Installed", *installed),
                                     cond("Healthy", *healthy)]}}
    row = package_row(pkg)
    assert (row.status, row.message, row.version) == (status, message, "ab" * 6)


@pytest.mark.parametrize("conditions, healthy, status", [
    ([], "-", ""),
    ([cond("RevisionHealthy", "True", "HealthyPackageRevision")], "True",
     "HealthyPackageRevision"),
    ([cond("RevisionHealthy", "True", "HealthyPackageRevision"),
      cond("RuntimeHealthy", "False", "UnhealthyPackageRevision", "no pods")], "False",
     "UnhealthyPackageRevision"),
])
def test_revision_row_health(conditions: list[Obj], healthy: str, status: str) -> None:
    rev = {"kind": "ProviderRevision", "metadata": {"name": "p-1"},
           "spec": {"image": f"{REG}/p:v1", "desiredState": "Active"},
           "status": {"conditions": conditions}}
    row = revision_row(rev)
    assert (row.healthy, row.status, row.state) == (healthy, status, "Active")


# --- install --wait -----------------------------------------------------------------------
REF = PackageRef("provider", "p")


class Status:
    """The ``status`` query's answer, as far as the verdict reads it."""

    def __init__(self, phase: str, idle: bool = True) -> None:
        self.phase, self.idle = phase, idle


def package(installed: tuple[str, str, str], healthy: tuple[str, str, str]) -> Obj:
    return {"status": {"currentRevision": "p-1", "conditions": [
        cond("Installed", *installed), cond("Healthy", *healthy)]}}


UNPACKING = ("False", "UnpackingPackage", "cannot unpack package: lint failed")
INACTIVE = ("False", "InactivePackageRevision", "Package is inactive")
UNKNOWN = ("False", "UnhealthyPackageRevision", 'Package revision health is "Unknown"')
ACTIVE = ("True", "ActivePackageRevision", "")
HEALTHY = ("True", "HealthyPackageRevision", "")


@pytest.mark.parametrize("pkg, status, ok, message", [
    (package(ACTIVE, HEALTHY), None, True, "provider/p is installed and healthy (revision p-1)"),
    (package(ACTIVE, HEALTHY), Status("Healthy"), True,
     "provider/p is installed and healthy (revision p-1)"),
    (package(INACTIVE, UNKNOWN), Status("Inactive"), True,
     ("provider/p: revision p-1 is installed inactive; approve it with: "
     "lockwright approve provider/p p-1")),
    (package(UNPACKING, UNKNOWN), Status("Failed"), False,
     "provider/p failed: Installed=False UnpackingPackage: cannot unpack package: lint failed"),
    (None, None, False, "provider/p is gone (deleted while installing)"),
])
def test_the_wait_is_over(pkg: Obj | None, status: Any, ok: bool, message: str) -> None:
    found = verdict(pkg, status, REF)
    assert found is not None and (found.ok, found.message) == (ok, message)


@pytest.mark.parametrize("pkg, status", [
    ({}, None),  # no status yet
    (package(UNPACKING, UNKNOWN), Status("Retrying")),  # heals on its own: wait on
    (package(UNPACKING, UNKNOWN), Status("Failed", idle=False)),  # not settled yet
    (package(INACTIVE, UNKNOWN), Status("Installing")),
    (package(ACTIVE, UNKNOWN), Status("Unhealthy")),  # the runtime may still come up
    # Healthy from the install's child, its parent's pass not ended: its steps to come.
    (package(ACTIVE, HEALTHY), Status("Installing", idle=False)),
])
def test_the_wait_goes_on(pkg: Obj, status: Any) -> None:
    assert verdict(pkg, status, REF) is None


def test_condition_message_and_line() -> None:
    conds = {"Installed": {"status": "True", "reason": "ActivePackageRevision"},
             "Healthy": {"status": "False", "reason": "UnhealthyPackageRevision",
                         "message": "no\npods"}}
    assert condition_message(conds) == "Healthy=False UnhealthyPackageRevision: no\npods"
    assert condition_message({}) == "no conditions yet (is the watcher running?)"
    assert conditions_line(package(ACTIVE, UNKNOWN)) == (
        'Installed=True ActivePackageRevision; Healthy=False UnhealthyPackageRevision: '
        'Package revision health is "Unknown"')
    assert conditions_line(None) == "waiting for the package's first status"


def test_plain_view_prints_each_finished_step_once(capsys: pytest.CaptureFixture[str]) -> None:
    step = Step(LOCAL, "fetch_package", "fetch sha256:ab", 10.0, 10.25, 1, OK)
    running = Step(LOCAL, "take_lock", "lock", 10.3)
    view = PlainView()
    first = Install((Timeline("w", "r1", start=10.0, steps=(step, running)),))
    view.show(first, package(ACTIVE, UNKNOWN))
    view.show(first, package(ACTIVE, UNKNOWN))
    view.show(Install(), package(ACTIVE, HEALTHY))
    assert capsys.readouterr().out.splitlines() == [
        ("     +0ms  fetch_package (local)                   250ms    1  ok        "
        "fetch sha256:ab"),
        ('  Installed=True ActivePackageRevision; Healthy=False UnhealthyPackageRevision: '
        'Package revision health is "Unknown"'),
        "  Installed=True ActivePackageRevision; Healthy=True HealthyPackageRevision"]


def test_plain_line_of_a_nested_step() -> None:
    row = rows.Row("k", 1, ("+1.00s", "  check_health (local)", "5ms", "1", "ok", ""), True)
    assert plain_line(row) == "   +1.00s    check_health (local)                    5ms    1  ok"


# --- activate -----------------------------------------------------------------------------
def test_the_latest_approval_of_the_revision() -> None:
    def event(name: str, reason: str, at: str, message: str) -> Obj:
        return {"involvedObject": {"name": name}, "reason": reason, "lastTimestamp": at,
                "message": message}

    events = [event("p-1", "ApproveRevision", "2026-01-01T00:00:02Z", "second"),
              event("p-1", "ApproveRevision", "2026-01-01T00:00:01Z", "first"),
              event("p-2", "ApproveRevision", "2026-01-01T00:00:03Z", "other revision"),
              event("p-1", "SyncPackage", "2026-01-01T00:00:04Z", "not an approval")]
    assert approval(events, "p-1") == "second"
    assert approval(events, "p-9") == ""
    assert current_revision({"status": {"currentRevision": "p-1"}}) == "p-1"
    assert current_revision(None) == ""
