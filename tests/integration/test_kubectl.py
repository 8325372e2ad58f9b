"""Debian's kubectl 1.32 against devcluster, default flags, as an operator types it.

Matrix: version and api-resources (aggregated discovery); apply create/update/unchanged,
client-side and --server-side, for a ConfigMap, a Deployment, a CRD and a custom object;
get as table (header lines), -o wide, -o json, -o yaml; describe; patch (strategic, merge,
json); label and annotate; delete --wait; wait for Deployment Available and for a custom
condition set through the status subresource; get -w; explain of a custom field; strict
field validation on the server (kubectl skips client-side validation when OpenAPI v3
advertises fieldValidation).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import pytest
import yaml
from kubernetes import client

from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
Obj = dict[str, Any]


@dataclass
class Kubectl:
    """Runs kubectl with the devcluster kubeconfig and a private discovery cache."""

    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    def out(self, *args: str, stdin: str | None = None) -> str:
        return self.run(*args, stdin=stdin).stdout

    def json(self, *args: str) -> Obj:
        return json.loads(self.out(*args, "-o", "json"))  # type: ignore[no-any-return]

    def apply(self, manifest: Obj, *args: str) -> str:
        return self.out("apply", "-f", "-", *args, stdin=yaml.safe_dump(manifest)).strip()

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([KUBECTL, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env)


@pytest.fixture(scope="module")
def kubectl(devcluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    home = tmp_path_factory.mktemp("kubectl-home")
    return Kubectl({**os.environ, "KUBECONFIG": devcluster.kubeconfig, "HOME": str(home)})


@pytest.fixture(scope="module")
def ns(kubectl: Kubectl) -> Iterator[str]:
    name = unique("kubectl")
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    kubectl.run("delete", "namespace", name, "--wait=false", check=False)


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def row(output: str, name: str) -> list[str]:
    for line in output.splitlines()[1:]:
        if line.split()[:1] == [name]:
            return line.split()
    raise AssertionError(f"no row for {name} in:\n{output}")


def configmap(name: str, ns: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": data}


def deployment(name: str, ns: str, image: str = "nginx:1.27", replicas: int = 1) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                         {"name": "app", "image": image},
                         {"name": "sidecar", "image": "busybox:1.36"}]}}}}


# --- discovery ---------------------------------------------------------------------

def test_version_reports_the_server(kubectl: Kubectl) -> None:
    doc = json.loads(kubectl.out("version", "-o", "json"))
    assert doc["serverVersion"]["gitVersion"].startswith("v1.32")


def test_api_resources_lists_builtins(kubectl: Kubectl) -> None:
    out = kubectl.out("api-resources")
    assert header(out) == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert row(out, "configmaps") == ["configmaps", "cm", "v1", "true", "ConfigMap"]
    assert row(out, "deployments") == ["deployments", "deploy", "apps/v1", "true",
                                       "Deployment"]
    assert row(out, "customresourcedefinitions")[1:] == [
        "crd,crds", "apiextensions.k8s.io/v1", "false", "CustomResourceDefinition"]


def test_imperative_create_sends_protobuf_bodies(kubectl: Kubectl, ns: str) -> None:
    name = unique("imp")
    assert kubectl.out("create", "namespace", name).strip() == f"namespace/{name} created"
    assert kubectl.json("get", "namespace", name)["status"]["phase"] == "Active"
    kubectl.out("create", "configmap", name, "-n", ns, "--from-literal=a=b")
    assert kubectl.json("get", "cm", name, "-n", ns)["data"] == {"a": "b"}
    kubectl.out("create", "secret", "generic", name, "-n", ns, "--from-literal=k=v")
    assert kubectl.json("get", "secret", name, "-n", ns)["data"] == {"k": "dg=="}
    out = kubectl.out("create", "deployment", name, "-n", ns, "--image=nginx:1")
    assert out.strip() == f"deployment.apps/{name} created"
    kubectl.out("delete", "namespace", name, "--wait=false")


# --- ConfigMap -----------------------------------------------------------------------

def test_apply_configmap_create_update_unchanged(kubectl: Kubectl, ns: str) -> None:
    name = unique("cm")
    assert kubectl.apply(configmap(name, ns, a="1")) == f"configmap/{name} created"
    assert kubectl.apply(configmap(name, ns, a="2", b="3")) == f"configmap/{name} configured"
    assert kubectl.apply(configmap(name, ns, a="2", b="3")) == f"configmap/{name} unchanged"
    assert kubectl.apply(configmap(name, ns, b="3")) == f"configmap/{name} configured"
    got = kubectl.json("get", "configmap", name, "-n", ns)
    assert got["data"] == {"b": "3"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]


def test_get_configmap_table_wide_yaml(kubectl: Kubectl, ns: str) -> None:
    name = unique("cm")
    kubectl.apply(configmap(name, ns, a="1", b="2"))
    out = kubectl.out("get", "configmaps", "-n", ns)
    assert header(out) == ["NAME", "DATA", "AGE"]
    assert row(out, name)[1] == "2"
    assert header(kubectl.out("get", "cm", name, "-n", ns, "-o", "wide")) == [
        "NAME", "DATA", "AGE"]
    doc = yaml.safe_load(kubectl.out("get", "cm", name, "-n", ns, "-o", "yaml"))
    assert doc["kind"] == "ConfigMap" and doc["data"] == {"a": "1", "b": "2"}
    names = kubectl.out("get", "cm", "-n", ns, "-o", "name").split()
    assert f"configmap/{name}" in names


def test_server_side_apply_configmap(kubectl: Kubectl, ns: str) -> None:
    name = unique("cm")
    manifest = configmap(name, ns, a="1")
    assert kubectl.apply(manifest, "--server-side") == f"configmap/{name} serverside-applied"
    manifest["data"] = {"a": "2"}
    assert kubectl.apply(manifest, "--server-side") == f"configmap/{name} serverside-applied"
    got = kubectl.json("get", "cm", name, "-n", ns, "--show-managed-fields")
    assert got["data"] == {"a": "2"}
    managers = {(m["manager"], m["operation"]) for m in got["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers


def test_label_annotate_and_selectors(kubectl: Kubectl, ns: str) -> None:
    name = unique("cm")
    kubectl.apply(configmap(name, ns, a="1"))
    assert kubectl.out("label", "cm", name, "-n", ns, "team=blue").strip() == (
        f"configmap/{name} labeled")
    assert kubectl.out("annotate", "cm", name, "-n", ns, "note=hi").strip() == (
        f"configmap/{name} annotated")
    out = kubectl.out("get", "cm", "-n", ns, "-l", "team=blue", "-L", "team")
    assert header(out) == ["NAME", "DATA", "AGE", "TEAM"]
    assert row(out, name)[-1] == "blue"
    assert "team=blue" in kubectl.out("get", "cm", name, "-n", ns, "--show-labels")
    kubectl.out("label", "cm", name, "-n", ns, "team-")
    got = kubectl.json("get", "cm", name, "-n", ns)
    assert "team" not in got["metadata"].get("labels", {})
    assert got["metadata"]["annotations"]["note"] == "hi"


def test_patch_configmap_merge_and_json(kubectl: Kubectl, ns: str) -> None:
    name = unique("cm")
    kubectl.apply(configmap(name, ns, a="1"))
    out = kubectl.out("patch", "cm", name, "-n", ns, "--type", "merge",
                      "-p", '{"data":{"b":"2"}}')
    assert out.strip() == f"configmap/{name} patched"
    kubectl.out("patch", "cm", name, "-n", ns, "--type", "json",
                "-p", '[{"op":"remove","path":"/data/a"}]')
    assert kubectl.json("get", "cm", name, "-n", ns)["data"] == {"b": "2"}


def test_describe_configmap(kubectl: Kubectl, ns: str) -> None:
    name = unique("cm")
    kubectl.apply(configmap(name, ns, key="value"))
    out = kubectl.out("describe", "configmap", name, "-n", ns)
    assert f"Name:         {name}" in out
    assert f"Namespace:    {ns}" in out
    assert "key:" in out and "value" in out


def test_delete_wait_then_not_found(kubectl: Kubectl, ns: str) -> None:
    name = unique("cm")
    kubectl.apply(configmap(name, ns, a="1"))
    out = kubectl.out("delete", "cm", name, "-n", ns, "--wait")
    assert out.strip() == f'configmap "{name}" deleted'
    gone = kubectl.run("get", "cm", name, "-n", ns, check=False)
    assert gone.returncode == 1
    assert f'configmaps "{name}" not found' in gone.stderr


def test_get_watch_streams_new_objects(kubectl: Kubectl, ns: str) -> None:
    marker, name = unique("cm-listed"), unique("cm")
    kubectl.apply(configmap(marker, ns))
    watch = kubectl.popen("get", "configmaps", "-n", ns, "-w")
    try:
        assert watch.stdout is not None
        out = Lines(watch.stdout)
        # Ready once the list is printed: kubectl watches from the list's resourceVersion,
        # so an object created after it can only arrive through the watch.
        out.until(marker, timeout=20)
        kubectl.apply(configmap(name, ns, a="1"))
        line = out.until(name, timeout=20)
        assert line.split()[:2] == [name, "1"]
    finally:
        watch.kill()
        watch.wait()


class Lines:
    """The lines of a child's output, read by a thread (a pipe read has no deadline)."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.seen.append(line)

    def until(self, needle: str, timeout: float) -> str:
        """The first line with ``needle``, waiting for it at most ``timeout`` seconds."""
        def found() -> str | None:
            return next((line for line in list(self.seen) if needle in line), None)
        try:
            line = wait_for(found, timeout=timeout, interval=0.05, what=repr(needle))
        except AssertionError as exc:
            raise AssertionError(f"{exc}; got {self.seen!r}") from exc
        assert line is not None
        return line


# --- Deployment --------------------------------------------------------------------

def test_deployment_apply_wait_available_and_columns(kubectl: Kubectl, ns: str) -> None:
    name = unique("web")
    assert kubectl.apply(deployment(name, ns)) == f"deployment.apps/{name} created"
    out = kubectl.out("wait", "--for=condition=Available", f"deployment/{name}", "-n", ns,
                      "--timeout=30s")
    assert out.strip() == f"deployment.apps/{name} condition met"
    table = kubectl.out("get", "deployments", "-n", ns)
    assert header(table) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row(table, name)[1:4] == ["1/1", "1", "1"]
    wide = kubectl.out("get", "deploy", name, "-n", ns, "-o", "wide")
    assert header(wide) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS",
                            "IMAGES", "SELECTOR"]
    assert row(wide, name)[5:] == ["app,sidecar", "nginx:1.27,busybox:1.36", f"app={name}"]


def test_deployment_client_side_apply_update(kubectl: Kubectl, ns: str) -> None:
    name = unique("web")
    kubectl.apply(deployment(name, ns))
    out = kubectl.apply(deployment(name, ns, image="nginx:1.28", replicas=2))
    assert out == f"deployment.apps/{name} configured"
    got = kubectl.json("get", "deployment", name, "-n", ns)
    assert got["spec"]["replicas"] == 2
    assert [c["image"] for c in got["spec"]["template"]["spec"]["containers"]] == [
        "nginx:1.28", "busybox:1.36"]


def test_scale_deployment(kubectl: Kubectl, ns: str) -> None:
    name = unique("web")
    kubectl.apply(deployment(name, ns))
    out = kubectl.out("scale", f"deployment/{name}", "-n", ns, "--replicas=3")
    assert out.strip() == f"deployment.apps/{name} scaled"
    assert kubectl.json("get", "deployment", name, "-n", ns)["spec"]["replicas"] == 3


def test_deployment_strategic_patch_merges_containers_by_name(kubectl: Kubectl,
                                                              ns: str) -> None:
    name = unique("web")
    kubectl.apply(deployment(name, ns))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app",
                                                            "image": "nginx:2"}]}}}}
    out = kubectl.out("patch", "deployment", name, "-n", ns, "-p", json.dumps(patch))
    assert out.strip() == f"deployment.apps/{name} patched"
    got = kubectl.json("get", "deployment", name, "-n", ns)
    containers = {c["name"]: c["image"] for c in got["spec"]["template"]["spec"]["containers"]}
    assert containers == {"app": "nginx:2", "sidecar": "busybox:1.36"}


def test_deployment_server_side_apply_and_describe(kubectl: Kubectl, ns: str) -> None:
    name = unique("web")
    out = kubectl.apply(deployment(name, ns), "--server-side")
    assert out == f"deployment.apps/{name} serverside-applied"
    kubectl.out("wait", "--for=condition=Available", f"deployment/{name}", "-n", ns,
                "--timeout=30s")
    described = kubectl.out("describe", "deployment", name, "-n", ns)
    assert f"Name:                   {name}" in described
    assert "Replicas:" in described and "nginx:1.27" in described


# --- CRD and custom objects ----------------------------------------------------------

@dataclass
class Crd:
    group: str
    plural: str
    kind: str

    @property
    def resource(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def printed(self) -> str:
        """How kubectl names the kind in its messages: ``gadget.group``."""
        return f"{self.kind.lower()}.{self.group}"


def crd_manifest(crd: Crd, columns: list[Obj]) -> Obj:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "description": "Desired state of the gadget.",
                 "required": ["size"], "properties": {
                     "size": {"type": "integer", "description": "How big the gadget is."},
                     "color": {"type": "string", "description": "Paint colour."}}},
        "status": {"type": "object", "properties": {"conditions": {"type": "array", "items": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": crd.resource},
        "spec": {"group": crd.group, "scope": "Namespaced",
                 "names": {"plural": crd.plural, "singular": crd.kind.lower(),
                           "kind": crd.kind, "listKind": f"{crd.kind}List"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema},
                               "subresources": {"status": {}},
                               "additionalPrinterColumns": columns}]}}


def new_crd() -> Crd:
    suffix = uuid.uuid4().hex[:6]
    return Crd(f"kc{suffix}.example.org", f"gadget{suffix}s", f"Gadget{suffix}")


@pytest.fixture(scope="module")
def gadget(kubectl: Kubectl) -> Crd:
    crd = new_crd()
    manifest = crd_manifest(crd, [
        {"name": "Ready", "type": "string",
         "jsonPath": ".status.conditions[?(@.type=='Ready')].status"},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Color", "type": "string", "priority": 1, "jsonPath": ".spec.color"}])
    out = kubectl.apply(manifest)
    assert out == f"customresourcedefinition.apiextensions.k8s.io/{crd.resource} created"
    kubectl.out("wait", "--for=condition=Established", f"crd/{crd.resource}",
                "--timeout=30s")
    return crd


def gadget_obj(crd: Crd, name: str, ns: str, size: int = 1, **spec: Any) -> Obj:
    return {"apiVersion": f"{crd.group}/v1", "kind": crd.kind,
            "metadata": {"name": name, "namespace": ns}, "spec": {"size": size, **spec}}


def test_custom_object_apply_and_columns(kubectl: Kubectl, ns: str, gadget: Crd) -> None:
    name = unique("g")
    kind = gadget.printed
    assert kubectl.apply(gadget_obj(gadget, name, ns, 3)) == f"{kind}/{name} created"
    assert kubectl.apply(gadget_obj(gadget, name, ns, 4, color="red")) == (
        f"{kind}/{name} configured")
    assert kubectl.apply(gadget_obj(gadget, name, ns, 4, color="red")) == (
        f"{kind}/{name} unchanged")
    out = kubectl.out("get", gadget.plural, "-n", ns)
    assert header(out) == ["NAME", "READY", "SIZE", "AGE"]
    assert row(out, name)[1] == "4"  # READY is empty until a condition exists
    wide = kubectl.out("get", gadget.plural, name, "-n", ns, "-o", "wide")
    assert header(wide) == ["NAME", "READY", "SIZE", "AGE", "COLOR"]
    assert row(wide, name)[-1] == "red"


def test_custom_object_server_side_apply_and_merge_patch(kubectl: Kubectl, ns: str,
                                                         gadget: Crd) -> None:
    name = unique("g")
    assert kubectl.apply(gadget_obj(gadget, name, ns, 2), "--server-side") == (
        f"{gadget.printed}/{name} serverside-applied")
    kubectl.out("patch", gadget.plural, name, "-n", ns, "--type", "merge",
                "-p", '{"spec":{"color":"blue"}}')
    got = kubectl.json("get", gadget.plural, name, "-n", ns)
    assert got["spec"] == {"size": 2, "color": "blue"}
    described = kubectl.out("describe", gadget.plural, name, "-n", ns)
    assert "Color:" in described and "blue" in described


def test_wait_for_custom_condition_set_through_status(kubectl: Kubectl, ns: str,
                                                      gadget: Crd,
                                                      kube_client: client.ApiClient) -> None:
    name = unique("g")
    kubectl.apply(gadget_obj(gadget, name, ns))
    # -v=6 logs each request once its response begins: the watch's line says kubectl
    # waits on the watch, so the condition set next arrives through it.
    waiter = kubectl.popen("wait", "--for=condition=Ready", f"{gadget.plural}/{name}",
                           "-n", ns, "--timeout=30s", "-v=6")
    assert waiter.stdout is not None and waiter.stderr is not None
    log = Lines(waiter.stderr)
    log.until("watch=true", timeout=20)
    client.CustomObjectsApi(kube_client).patch_namespaced_custom_object_status(
        gadget.group, "v1", ns, gadget.plural, name,
        {"status": {"conditions": [{"type": "Ready", "status": "True",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    assert waiter.wait(timeout=40) == 0, "".join(log.seen)
    assert waiter.stdout.read().strip() == f"{gadget.printed}/{name} condition met"
    assert row(kubectl.out("get", gadget.plural, "-n", ns), name)[1] == "True"


def test_explain_custom_field(kubectl: Kubectl, gadget: Crd) -> None:
    out = kubectl.out("explain", f"{gadget.plural}.spec")
    assert f"KIND:       {gadget.kind}" in out
    assert "FIELD: spec <Object>" in out
    assert "size\t<integer> -required-" in out or "size <integer> -required-" in " ".join(
        out.split()) + " "
    assert "How big the gadget is." in out
    leaf = kubectl.out("explain", f"{gadget.plural}.spec.color")
    assert "FIELD: color <string>" in leaf and "Paint colour." in leaf


def test_explain_builtin_fields(kubectl: Kubectl) -> None:
    out = kubectl.out("explain", "deployment.spec.replicas")
    assert "GROUP:      apps" in out and "FIELD: replicas <integer>" in out
    assert "Number of desired pods." in out
    containers = kubectl.out("explain", "deploy.spec.template.spec.containers")
    assert "FIELD: containers <[]Container>" in containers
    assert "image\t<string>" in containers


def test_unknown_field_is_rejected_by_the_server(kubectl: Kubectl, ns: str,
                                                 gadget: Crd) -> None:
    bad = gadget_obj(gadget, unique("g"), ns, bogus="x")
    proc = kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(bad), check=False)
    assert proc.returncode != 0
    assert 'unknown field "spec.bogus"' in proc.stderr


def test_api_resources_lists_the_custom_type(kubectl: Kubectl, gadget: Crd) -> None:
    out = kubectl.out("api-resources", "--api-group", gadget.group)
    assert row(out, gadget.plural)[1:] == [f"{gadget.group}/v1", "true", gadget.kind]


def test_server_side_apply_crd_update_changes_columns(kubectl: Kubectl, ns: str) -> None:
    crd = new_crd()
    size = {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
    out = kubectl.apply(crd_manifest(crd, [size]), "--server-side")
    assert out == f"customresourcedefinition.apiextensions.k8s.io/{crd.resource} serverside-applied"
    kubectl.out("wait", "--for=condition=Established", f"crd/{crd.resource}", "--timeout=30s")
    kubectl.apply(gadget_obj(crd, "one", ns, 5, color="green"))
    assert header(kubectl.out("get", crd.plural, "-n", ns)) == ["NAME", "SIZE"]
    color = {"name": "Color", "type": "string", "jsonPath": ".spec.color"}
    kubectl.apply(crd_manifest(crd, [size, color]), "--server-side")
    table = kubectl.out("get", crd.plural, "-n", ns)
    assert header(table) == ["NAME", "SIZE", "COLOR"]
    assert row(table, "one") == ["one", "5", "green"]
    kubectl.out("delete", "crd", crd.resource, "--wait")


def test_get_crd_table(kubectl: Kubectl, gadget: Crd) -> None:
    out = kubectl.out("get", "crd", gadget.resource)
    assert header(out) == ["NAME", "CREATED", "AT"]
    assert row(out, gadget.resource)[1].endswith("Z")

