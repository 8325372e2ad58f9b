"""deploy/chart/lockwright, the Helm chart beside deploy/ (issue 29): it lints, renders with
its defaults exactly the objects ``kubectl apply -k deploy/`` applies, and renders what its
values say (Temporal TLS and API key, replicas, image, settings, RBAC, namespace).

The environment the chart renders is resolved by lockwright's own settings code, so a
variable the processes would not read, or read differently, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockwright import settings as lw_settings
from lockwright.k8s.crds import crd_files, load_crds
from tests.fixtures.deploy import ROOT, deploy_objects, system_namespace
from tests.fixtures.devcluster import start_devcluster
from tests.fixtures.helm import (
    CHART,
    Helm,
    by_key,
    chart_meta,
    container,
    env_of,
    one,
    write_values,
)

Obj = dict[str, Any]
WORKLOADS = ("lockwright-worker", "lockwright-watcher")
#: The one difference from deploy/: uninstalling the release keeps the system namespace,
#: which holds the packages' runtimes and Secrets (kubectl delete -k deletes it).
KEEP = {"helm.sh/resource-policy": "keep"}


def without_keep(objects: list[Obj]) -> list[Obj]:
    """``objects`` with the Namespace's keep annotation checked and taken off."""
    for obj in objects:
        if obj["kind"] == "Namespace":
            assert obj["metadata"].pop("annotations") == KEEP
    return objects


def resolved(objects: list[Obj], deployment: str) -> lw_settings.Settings:
    """The settings the container's process would run with (its namespace from its Pod)."""
    environ = {}
    for name, entry in env_of(objects, deployment).items():
        if "valueFrom" in entry:
            assert entry["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
            environ[name] = one(objects, "Deployment", deployment)["metadata"]["namespace"]
        else:
            environ[name] = entry["value"]
    return lw_settings.from_args(None, environ)


#: Every optional part of the chart turned on.
EVERYTHING = ("--set", "temporal.tls.enabled=true", "--set", "temporal.tls.clientCertSecret=c",
              "--set", "temporal.tls.caSecret=ca", "--set", "temporal.tls.serverName=t",
              "--set", "temporal.apiKey.secret=k", "--set", "temporal.taskQueue=q",
              "--set", "settings.LOCKWRIGHT_RESYNC_SECONDS=60", "--set", "labels.team=platform",
              "--set", "worker.podAnnotations.a=b", "--set", "image.pullSecrets={pull}",
              "--set", "worker.tolerations[0].operator=Exists")


@pytest.mark.parametrize("values", [(), EVERYTHING], ids=["defaults", "everything"])
def test_helm_lint_passes(helm: Helm, values: tuple[str, ...]) -> None:
    done = helm.run("lint", "--strict", str(CHART), *values)
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout, done.stdout


def test_the_chart_is_lockwrights_version_with_lockwrights_crds() -> None:
    project = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert project is not None
    meta = chart_meta()
    assert meta["version"] == meta["appVersion"] == project.group(1)
    shipped = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert shipped == crd_files()
    copies = [yaml.safe_load((CHART / "crds" / name).read_text()) for name in shipped]
    assert copies == load_crds(), "copy lockwright/data/crds/*.yaml to deploy/chart/lockwright/crds/"


def test_defaults_render_what_deploy_applies(helm: Helm) -> None:
    rendered = without_keep(helm.template())
    assert len(rendered) == len(deploy_objects()) == 23
    assert by_key(rendered) == by_key(deploy_objects())


def test_the_release_namespace_moves_nothing(helm: Helm) -> None:
    """Objects go to namespace.name, whatever namespace helm keeps the release in."""
    assert helm.template("--namespace", "elsewhere") == helm.template()


def test_tls_with_a_client_certificate_and_a_ca(helm: Helm, tmp_path: Path) -> None:
    values = {"temporal": {
        "address": "ns.acct.tmprl.cloud:7233", "namespace": "ns.acct", "taskQueue": "east",
        "tls": {"enabled": True, "serverName": "temporal.example.org",
                "clientCertSecret": "temporal-client", "caSecret": "temporal-ca",
                "caKey": "bundle.pem"}}}
    objects = helm.template("-f", write_values(tmp_path / "v.yaml", values))
    for deployment in WORKLOADS:
        s = resolved(objects, deployment)
        assert (s.temporal_address, s.temporal_namespace, s.task_queue) == (
            "ns.acct.tmprl.cloud:7233", "ns.acct", "east")
        assert (s.temporal_tls, s.temporal_tls_server_name) == (True, "temporal.example.org")
        files = mounted_files(objects, deployment)
        assert files[s.temporal_tls_cert] == ("temporal-client", "tls.crt")
        assert files[s.temporal_tls_key] == ("temporal-client", "tls.key")
        assert files[s.temporal_tls_ca] == ("temporal-ca", "bundle.pem")
        assert s.temporal_api_key_file == ""


def mounted_files(objects: list[Obj], deployment: str) -> dict[str, tuple[str, str]]:
    """Each file mounted read-only from a Secret: its path -> (Secret, key)."""
    pod = one(objects, "Deployment", deployment)["spec"]["template"]["spec"]
    volumes = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    out = {}
    for mount in container(objects, deployment)["volumeMounts"]:
        secret = volumes.get(mount["name"])
        if secret is not None:
            assert mount["readOnly"] is True
            for item in secret["items"]:
                out[f"{mount['mountPath']}/{item['path']}"] = (secret["secretName"], item["key"])
    return out


def test_an_api_key_secret(helm: Helm) -> None:
    objects = helm.template("--set", "temporal.apiKey.secret=temporal-cloud",
                            "--set", "temporal.apiKey.key=key")
    for deployment in WORKLOADS:
        s = resolved(objects, deployment)
        assert mounted_files(objects, deployment) == {
            s.temporal_api_key_file: ("temporal-cloud", "key")}
        assert (s.temporal_tls, s.temporal_tls_cert) == (False, "")  # the key implies TLS


def test_replicas_resources_image_and_settings(helm: Helm, tmp_path: Path) -> None:
    values = {
        "image": {"repository": "registry.example.org/lockwright", "tag": "v9.1.0",
                  "pullPolicy": "Always", "pullSecrets": ["pull"]},
        "settings": {"LOCKWRIGHT_INSECURE_REGISTRIES": "registry.local:5000"},
        "worker": {"replicas": 3, "resources": {"requests": {"cpu": "2"}, "limits": None},
                   "settings": {"LOCKWRIGHT_MAX_CONCURRENT_ACTIVITIES": "64",
                                "LOCKWRIGHT_INSECURE_REGISTRIES": "worker.local:5000"},
                   "nodeSelector": {"pool": "system"}},
        "watcher": {"replicas": 2, "settings": {"LOCKWRIGHT_RESYNC_SECONDS": "60"}}}
    objects = helm.template("-f", write_values(tmp_path / "v.yaml", values))
    worker, watcher = (one(objects, "Deployment", d) for d in WORKLOADS)
    assert (worker["spec"]["replicas"], watcher["spec"]["replicas"]) == (3, 2)
    for deployment in (worker, watcher):
        pod = deployment["spec"]["template"]["spec"]
        [c] = pod["containers"]
        assert (c["image"], c["imagePullPolicy"]) == ("registry.example.org/lockwright:v9.1.0",
                                                      "Always")
        assert pod["imagePullSecrets"] == [{"name": "pull"}]
    # Merged into the defaults, as helm merges maps; null takes a default away.
    assert container(objects, "lockwright-worker")["resources"] == {
        "requests": {"cpu": "2", "memory": "256Mi"}}
    assert worker["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "system"}
    w, r = resolved(objects, "lockwright-worker"), resolved(objects, "lockwright-watcher")
    assert (w.max_concurrent_activities, w.insecure_registries) == (64, ("worker.local:5000",))
    assert (r.resync_seconds, r.insecure_registries) == (60.0, ("registry.local:5000",))
    assert (w.metrics_address, w.cache_dir) == ("0.0.0.0:9090", "/var/cache/lockwright")


def test_a_setting_given_as_a_number_is_a_string(helm: Helm) -> None:
    objects = helm.template("--set", "worker.settings.LOCKWRIGHT_RESYNC_SECONDS=0")
    assert env_of(objects, "lockwright-worker")["LOCKWRIGHT_RESYNC_SECONDS"]["value"] == "0"


def test_rbac_create_false_leaves_the_rights_to_the_user(helm: Helm) -> None:
    objects = helm.template("--set", "rbac.create=false")
    kinds = {o["kind"] for o in objects}
    assert kinds.isdisjoint({"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"})
    assert {"ServiceAccount", "Deployment"} <= kinds
    assert len(objects) == 23 - 6


def test_rbac_and_service_account_names(helm: Helm) -> None:
    objects = helm.template("--set", "rbac.name=lw", "--set", "serviceAccount.name=lw-sa",
                            "--set", "serviceAccount.create=false")
    assert "ServiceAccount" not in {o["kind"] for o in objects}
    bindings = [o for o in objects if o["kind"].endswith("Binding")]
    assert sorted((b["metadata"]["name"], b["roleRef"]["name"]) for b in bindings) == [
        ("lw", "lw"), ("lw", "lw"), ("lw:provider-resources", "lw:provider-resources")]
    assert all(b["subjects"] == [{"kind": "ServiceAccount", "name": "lw-sa",
                                  "namespace": "crossplane-system"}] for b in bindings)
    for deployment in WORKLOADS:
        pod = one(objects, "Deployment", deployment)["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == "lw-sa"


def test_another_namespace_moves_everything(helm: Helm) -> None:
    objects = without_keep(helm.template("--set", "namespace.name=lw-system"))
    expected = [moved(o, "lw-system") for o in deploy_objects()]
    assert by_key(objects) == by_key(expected)
    assert resolved(objects, "lockwright-worker").system_namespace == "lw-system"
    made = helm.template("--set", "namespace.name=lw-system", "--set", "namespace.create=false")
    assert "Namespace" not in {o["kind"] for o in made} and len(made) == 22


def moved(obj: Obj, namespace: str) -> Obj:
    """A deploy/ object as an overlay with ``namespace: NAMESPACE`` has it."""
    text = yaml.safe_dump(obj)
    return dict(yaml.safe_load(text.replace("crossplane-system", namespace)))


def test_metrics_and_watcher_can_be_turned_off(helm: Helm) -> None:
    objects = helm.template("--set", "metrics.enabled=false", "--set", "watcher.enabled=false")
    assert [o["metadata"]["name"] for o in objects if o["kind"] in ("Deployment", "Service")] == [
        "lockwright-worker"]
    assert "ports" not in container(objects, "lockwright-worker")
    assert resolved(objects, "lockwright-worker").metrics_address == ""
    moved_port = helm.template("--set", "metrics.port=9100")
    service = one(moved_port, "Service", "lockwright-worker-metrics")
    assert service["metadata"]["annotations"]["prometheus.io/port"] == "9100"
    assert resolved(moved_port, "lockwright-worker").metrics_address == "0.0.0.0:9100"


def test_every_variable_the_chart_sets_is_a_lockwright_setting(helm: Helm) -> None:
    objects = helm.template(*EVERYTHING)
    known = {spec.env for spec in lw_settings.SPECS}
    for deployment in WORKLOADS:
        assert set(env_of(objects, deployment)) <= known
    assert all(o["metadata"]["labels"]["team"] == "platform" for o in objects
               if o["kind"] != "CustomResourceDefinition")


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "settings.LOCKWRIGHT_TEMPORAL_ADDRESS=x:1"],
     "settings.LOCKWRIGHT_TEMPORAL_ADDRESS: the chart sets this variable from its own values"),
    (["--set", "worker.settings.LOCKWRIGHT_CACHE_DIR=/c"],
     "worker.settings.LOCKWRIGHT_CACHE_DIR: the chart sets this variable"),
    (["--set", "temporal.address=no-port"],
     'temporal.address: "no-port" is not HOST:PORT; give the Temporal frontend, e.g. '),
    (["--set", "namespace.name=Crossplane_System"],
     'namespace.name: "Crossplane_System" is not a DNS-1123 label; use lower-case letters'),
    # values.schema.json: the field as a JSON pointer, and what it must be.
    (["--set", "worker.replicas=-1"], "at '/worker/replicas': minimum: got -1, want 0"),
    (["--set", "worker.replica=2"], "at '/worker': additional properties 'replica' not allowed"),
    (["--set", "image.pullPolicy=Sometimes"],
     "at '/image/pullPolicy': value must be one of '', 'Always', 'IfNotPresent', 'Never'"),
])
def test_bad_values_are_refused_naming_the_field(helm: Helm, args: list[str],
                                                 message: str) -> None:
    done = helm.run("template", "lockwright", str(CHART), *args, check=False)
    assert done.returncode == 1 and message in done.stderr, done.stderr


def test_install_and_uninstall_on_devcluster(helm: Helm, tmp_path: Path) -> None:
    """helm's typed client deletes its release Secret with a protobuf DeleteOptions body,
    which devcluster now reads as kube-apiserver does (it answered 415)."""
    dc = start_devcluster(str(tmp_path), "--authorization-mode", "RBAC")
    try:
        helm.run("install", "lockwright", str(CHART), "--namespace", "default",
                 kubeconfig=dc.kubeconfig)
        secrets = dc.get("/api/v1/namespaces/default/secrets")["items"]
        assert [s["metadata"]["name"] for s in secrets] == ["sh.helm.release.v1.lockwright.v1"]
        helm.run("uninstall", "lockwright", "--namespace", "default", kubeconfig=dc.kubeconfig)
        assert dc.get("/api/v1/namespaces/default/secrets")["items"] == []
        roles = dc.get("/apis/rbac.authorization.k8s.io/v1/clusterroles")["items"]
        assert "lockwright" not in {r["metadata"]["name"] for r in roles}
        assert dc.get(f"/api/v1/namespaces/{system_namespace()}")["status"]["phase"] == "Active"
    finally:
        dc.stop()
